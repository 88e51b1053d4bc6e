// The architecture variants that every model-level suite runs: the whole-model gradient check
// (tests/model/model_gradcheck_test.cpp), tiled against standard attention
// (tests/model/model_tiled_attention_test.cpp), the parameter counts
// (tests/model/param_count_test.cpp) and the KV-cache equality (tests/decode/kv_cache_test.cpp).
// One list, so that a new value of a model knob is added here once and each suite covers it; a
// suite adds only the axes that are its subject (dropout, the attention kernel, head counts).
// The list is every combination of the axes below.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/model/model_config.h"

namespace attnlab::test {

struct ModelVariant {
  NormPlacement norm;
  NormType norm_type;
  PositionKind positions;
  std::string attention_scale;  // as model.attention_scale spells it
  bool tie_embeddings;          // untied embeddings come with an output bias
  FfnActivation activation;

  // config with this variant's fields set, the others kept.
  ModelConfig applied_to(ModelConfig config) const {
    config.norm = norm;
    config.norm_type = norm_type;
    config.positions = positions;
    config.attention_scale = AttentionScale::parse(attention_scale);
    config.tie_embeddings = tie_embeddings;
    config.output_bias = !tie_embeddings;
    config.activation = activation;
    return config;
  }
  // A test-name fragment: letters, digits and '_' only.
  std::string name() const {
    return to_string(norm) + "_" + to_string(norm_type) + "_" + to_string(positions) + "_" +
           attention_scale + (tie_embeddings ? "_tied" : "_untied") + "_" +
           activation_names().name(activation);
  }
};

// How GoogleTest prints a variant in a test's parameters.
inline void PrintTo(const ModelVariant& variant, std::ostream* out) { *out << variant.name(); }

inline std::vector<ModelVariant> model_variants() {
  std::vector<ModelVariant> variants;
  for (NormPlacement norm : {NormPlacement::kPost, NormPlacement::kPre}) {
    for (NormType norm_type : {NormType::kLayerNorm, NormType::kRmsNorm}) {
      for (PositionKind positions : {PositionKind::kSinusoidal, PositionKind::kLearned}) {
        for (const char* scale : {"rsqrt_dk", "none", "inv_dk", "learned"}) {
          for (bool tied : {true, false}) {
            for (FfnActivation activation : activation_names().values()) {
              variants.push_back({norm, norm_type, positions, scale, tied, activation});
            }
          }
        }
      }
    }
  }
  return variants;
}

// A suite's cases over every variant with and without dropout (the model's dropout and attention
// dropout at the given rate): the values and the test names.
using VariantAndDropout = std::tuple<ModelVariant, double>;
inline auto variants_with_dropout(double rate) {
  return ::testing::Combine(::testing::ValuesIn(model_variants()), ::testing::Values(0.0, rate));
}
inline std::string variant_and_dropout_name(
    const ::testing::TestParamInfo<VariantAndDropout>& info) {
  const auto& [variant, dropout] = info.param;
  return variant.name() + (dropout > 0 ? "_dropout" : "");
}

}  // namespace attnlab::test
