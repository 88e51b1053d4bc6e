// Parameter counts by component, from the same name table the model allocates (so they cannot
// drift), and the analytic formula they are tested against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_config.h"

namespace attnlab {

struct ComponentCount {
  std::string component;  // embeddings | encoder.attention | encoder.ffn | decoder.self_attention |
                          // decoder.cross_attention | decoder.ffn | norms | positions | output
  int64_t params = 0;
};

// Counted from ParamTable's entries, grouped by component, in the order above (zeros omitted).
std::vector<ComponentCount> parameter_counts(const ModelConfig& config);
// The closed-form count as a sum of terms, each with the expression `attnlab params` prints for
// it: one description that both the count and its printed formula come from. Count is int64_t for
// the exact count, double for a magnitude that cannot overflow.
template <typename Count>
struct BasicParameterFormula {
  // A symbol the terms use: attn, ffn, LN.
  struct Definition {
    std::string symbol;
    std::string expression;  // in D, H, d_k, d_v, d_ff
    Count value = 0;
  };
  // What a term counts, as ParamTable groups tensors (ParamEntry::group).
  enum class Counts { kEncoderLayers, kDecoderLayers, kEmbeddings, kStackNorms };
  struct Term {
    std::string expression;  // in the definitions' symbols
    Count value = 0;
    Counts counts = Counts::kEmbeddings;
  };
  std::vector<Definition> definitions;
  std::vector<Term> terms;  // only the terms this architecture has
  Count total() const {
    Count sum = 0;
    for (const Term& term : terms) sum += term.value;
    return sum;
  }
};
using ParameterFormula = BasicParameterFormula<int64_t>;
ParameterFormula parameter_formula(const ModelConfig& config);
// Closed-form total for the same architecture: parameter_formula(config).total().
int64_t analytic_parameter_count(const ModelConfig& config);
// The same formula in double precision: the size of a configuration that may be too large for
// int64 arithmetic (checked before anything is allocated).
double approximate_parameter_count(const ModelConfig& config);
// The largest model attnlab accepts: every rank holds the parameters, their gradients and Adam's
// two moments (16 bytes per parameter in fp32), so 2^36 parameters already need 1 TiB per rank.
constexpr double kMaxParameters = 68719476736.0;  // 2^36
// Training FLOPs per target token (forward + backward = 3x forward matmul FLOPs), for source and
// target lengths src_length/tgt_length.
double training_flops_per_target_token(const ModelConfig& config, int64_t src_length,
                                       int64_t tgt_length);

}  // namespace attnlab
