// The three benchmark configurations of issue 10 (tiny, small, base), shared by the kernel
// microbenchmarks and the end-to-end bench so that both measure the same shapes.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "core/model/model_config.h"
#include "core/util/check.h"

namespace attnlab::bench {

struct BenchConfig {
  const char* name;
  int64_t d_model, heads, d_ff, encoder_layers, decoder_layers, vocab_size;
  int64_t sentences;  // B
  int64_t length;     // S = T tokens per sentence
};

// tiny/small: 64 sentences x 32 tokens; base: 32 x 64 (about 2k target tokens per step each).
inline constexpr std::array<BenchConfig, 3> kBenchConfigs = {{
    {"tiny", 128, 4, 512, 2, 2, 8000, 64, 32},
    {"small", 256, 4, 1024, 3, 3, 8000, 64, 32},
    {"base", 512, 8, 2048, 6, 6, 37000, 32, 64},
}};

// Sentences decoded at once by the end-to-end bench: each decoder step's products have this
// many rows.
inline constexpr int64_t kDecodeBatch = 32;

inline const BenchConfig& find_bench_config(const std::string& name) {
  for (const BenchConfig& c : kBenchConfigs) {
    if (name == c.name) return c;
  }
  CHECK(false) << "unknown bench configuration '" << name << "' (expected tiny, small or base)";
  return kBenchConfigs[0];
}

// The paper's post-LN model with tied embeddings, sinusoidal positions, dropout 0.1 on sub-layer
// outputs and embedding sums, no attention dropout.
inline ModelConfig model_config(const BenchConfig& b) {
  ModelConfig c;
  c.encoder_layers = b.encoder_layers;
  c.decoder_layers = b.decoder_layers;
  c.d_model = b.d_model;
  c.d_ff = b.d_ff;
  c.heads = b.heads;
  c.d_k = b.d_model / b.heads;
  c.d_v = b.d_model / b.heads;
  c.dropout = 0.1;
  c.attention_dropout = 0.0;
  c.norm = NormPlacement::kPost;
  c.positions = PositionKind::kSinusoidal;
  c.tie_embeddings = true;
  c.vocab_size = b.vocab_size;
  c.max_positions = 256;
  c.validate();
  return c;
}

}  // namespace attnlab::bench
