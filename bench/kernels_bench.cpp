// Kernel microbenchmarks (Google Benchmark) over the shapes of the three bench configurations:
// the model's GEMMs through blas::gemm (and one decoder step's), attention forward/backward (and
// its growth with sequence length, the O(n^2) of the paper's Table 1), layer norm, softmax,
// dropout, label-smoothed cross entropy and Adam. `--threads=N` (default 1) sets the OpenBLAS and
// OpenMP thread counts. Where the CPU has native bf16 products, the same GEMMs also run through
// blas::gemm_bf16 (bf16 operands, fp32 accumulation): bf16_peak is the denominator of bf16 MFU, as
// sgemm_peak is of fp32's; elsewhere they are left out and the context's "bf16" says why.
//
// Legend: B sentences, L tokens per sentence, M = B*L rows, D d_model, H heads, K d_k, F d_ff,
// N vocabulary.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_configs.h"
#include "bench/threads_flag.h"
#include "core/model/param_count.h"
#include "core/model/transformer.h"
#include "core/ops/ops.h"
#include "core/optim/adam.h"
#include "core/tensor/blas.h"
#include "core/util/rng.h"

namespace attnlab::bench {
namespace {

std::vector<float> random_values(int64_t count, uint64_t seed, float low = -1.0f,
                                 float high = 1.0f) {
  Rng rng(seed);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& x : values) x = static_cast<float>(rng.uniform(low, high));
  return values;
}

std::vector<int32_t> random_tokens(int64_t count, int64_t vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (int32_t& t : tokens)
    t = static_cast<int32_t>(3 + rng.below(static_cast<uint64_t>(vocab - 3)));
  return tokens;
}

// C(M,N) = op(A) op(B): 2*M*N*K FLOPs per call, reported as FLOP/s. With `bf16`, through
// blas::gemm_bf16 (its operand rounding included, as the model pays it).
// The engine a float product runs on: gemm<float> as training runs it (OpenBLAS), bf16 operands,
// or gemm<float> under the oneDNN fp32 engine, as a decoder step runs it.
enum class GemmEngine { kTraining, kBf16, kDecoding, kDecodingPacked };

void register_gemm(const std::string& name, bool trans_a, bool trans_b, int64_t m, int64_t n,
                   int64_t k, GemmEngine engine = GemmEngine::kTraining) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    const std::vector<float> a = random_values(m * k, 1), b = random_values(k * n, 2);
    std::vector<float> c(static_cast<size_t>(m * n));
    const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
    const bool bf16 = engine == GemmEngine::kBf16;
    const bool decoding = engine == GemmEngine::kDecoding || engine == GemmEngine::kDecodingPacked;
    const blas::Fp32EngineScope scope(decoding ? blas::Fp32Engine::kOneDnn
                                               : blas::Fp32Engine::kOpenBlas);
    // A decoder step's products read weights packed once per state: here W = B as stored (n x k).
    blas::PackedWeights packed;
    if (engine == GemmEngine::kDecodingPacked) {
      CHECK(trans_b && !trans_a) << name << ": packed weights are for products x W^T";
      packed.add(b.data(), n, k);
    }
    const blas::PackedWeightsScope packed_scope(packed);
    for (auto _ : state) {
      if (bf16) {
        blas::gemm_bf16(trans_a, trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                        c.data(), n);
      } else {
        blas::gemm<float>(trans_a, trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                          c.data(), n);
      }
      benchmark::DoNotOptimize(c.data());
    }
    state.counters["FLOPS"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                                 benchmark::Counter::kIsIterationInvariantRate);
  });
}

// Every product of one decoder step of kDecodeBatch sentences as decoding runs it: the model's
// step_weights() (each decoder layer's own, then the vocabulary projection), packed as a decoding
// state packs them. The decode_gemm rows run one weight again and again, hot in the caches; a real
// step reads every weight once (base: 164 MB), so this row is the products' rate as decoding
// streams them.
void register_decode_step(const std::string& name, const BenchConfig& c) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    Transformer<float> model(model_config(c), 10);
    const blas::Fp32EngineScope scope(blas::Fp32Engine::kOneDnn);
    blas::PackedWeights packed;
    std::vector<TensorView<const float>> weights;
    double macs = 0.0;
    for (const int index : model.step_weights()) {
      const TensorView<const float> weight = model.param(index);  // (out, in)
      packed.add(weight.data(), weight.dim(0), weight.dim(1));
      weights.push_back(weight);
      macs += static_cast<double>(kDecodeBatch * weight.numel());
    }
    const blas::PackedWeightsScope packed_scope(packed);
    const std::vector<float> input = random_values(kDecodeBatch * c.d_ff, 1);
    std::vector<float> output(static_cast<size_t>(kDecodeBatch * c.vocab_size));
    for (auto _ : state) {
      for (const TensorView<const float>& weight : weights) {
        const int64_t n = weight.dim(0), k = weight.dim(1);
        blas::gemm<float>(false, true, kDecodeBatch, n, k, 1.0f, input.data(), k, weight.data(), k,
                          0.0f, output.data(), n);
      }
      benchmark::DoNotOptimize(output.data());
    }
    state.counters["FLOPS"] =
        benchmark::Counter(2.0 * macs, benchmark::Counter::kIsIterationInvariantRate);
  });
}

struct AttentionBuffers {
  std::vector<float> q, k, v, out, probs, dout, dq, dk, dv, scratch;
  AttentionBuffers(int64_t b, int64_t h, int64_t t, int64_t s, int64_t width)
      : q(random_values(b * h * t * width, 3)),
        k(random_values(b * h * s * width, 4)),
        v(random_values(b * h * s * width, 5)),
        out(static_cast<size_t>(b * h * t * width)),
        probs(static_cast<size_t>(b * h * t * s)),
        dout(random_values(b * h * t * width, 6)),
        dq(q.size()),
        dk(k.size()),
        dv(v.size()),
        scratch(probs.size()) {}
};

// Attention over (B,H,L,K) heads, self-attention (S = T = L); `backward` also times the backward
// pass after one forward outside the timed loop. Reports the bytes of the saved (B,H,T,S) probs.
void register_attention(const std::string& name, int64_t b, int64_t h, int64_t length,
                        int64_t width, bool causal, bool backward) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    AttentionBuffers buf(b, h, length, length, width);
    const Shape heads{b, h, length, width}, scores{b, h, length, length};
    ops::AttentionMask mask;
    mask.causal = causal;
    const float scale = 1.0f / std::sqrt(static_cast<float>(width));
    auto forward = [&] {
      ops::attention_forward<float>(TensorView<float>(buf.out.data(), heads),
                                    TensorView<float>(buf.probs.data(), scores),
                                    TensorView<const float>(buf.q.data(), heads),
                                    TensorView<const float>(buf.k.data(), heads),
                                    TensorView<const float>(buf.v.data(), heads), mask, scale);
    };
    forward();
    for (auto _ : state) {
      if (!backward) {
        forward();
      } else {
        ops::attention_backward<float>(TensorView<float>(buf.dq.data(), heads),
                                       TensorView<float>(buf.dk.data(), heads),
                                       TensorView<float>(buf.dv.data(), heads), nullptr,
                                       TensorView<const float>(buf.dout.data(), heads),
                                       TensorView<const float>(buf.q.data(), heads),
                                       TensorView<const float>(buf.k.data(), heads),
                                       TensorView<const float>(buf.v.data(), heads),
                                       TensorView<const float>(buf.probs.data(), scores),
                                       TensorView<float>(buf.scratch.data(), scores), scale);
      }
      benchmark::ClobberMemory();
    }
    // Two (B,H,L,L) x (L,K) products forward, four backward.
    const double macs = static_cast<double>(b * h * length * length * width);
    state.counters["FLOPS"] = benchmark::Counter(2.0 * macs * (backward ? 4 : 2),
                                                 benchmark::Counter::kIsIterationInvariantRate);
    state.counters["probs_MB"] = static_cast<double>(buf.probs.size()) * 4.0 / 1e6;
  });
}

void register_layernorm(const std::string& name, int64_t rows, int64_t width) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    const std::vector<float> inp = random_values(rows * width, 7),
                             dout = random_values(rows * width, 8);
    const std::vector<float> weight = random_values(width, 9, 0.5f, 1.5f),
                             bias = random_values(width, 10);
    std::vector<float> out(inp.size()), dinp(inp.size()), mean(static_cast<size_t>(rows)),
        rstd(static_cast<size_t>(rows)), dweight(static_cast<size_t>(width)),
        dbias(static_cast<size_t>(width));
    const Shape matrix{rows, width}, row{rows}, vec{width};
    for (auto _ : state) {
      ops::layernorm_forward<float>(
          TensorView<float>(out.data(), matrix), TensorView<float>(mean.data(), row),
          TensorView<float>(rstd.data(), row), TensorView<const float>(inp.data(), matrix),
          TensorView<const float>(weight.data(), vec), TensorView<const float>(bias.data(), vec));
      ops::layernorm_backward<float>(
          TensorView<float>(dinp.data(), matrix), TensorView<float>(dweight.data(), vec),
          TensorView<float>(dbias.data(), vec), TensorView<const float>(dout.data(), matrix),
          TensorView<const float>(inp.data(), matrix), TensorView<const float>(weight.data(), vec),
          TensorView<const float>(mean.data(), row), TensorView<const float>(rstd.data(), row));
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * rows * width * 4 * 5);
  });
}

// Softmax forward and backward over (rows, width): the attention-probability shape.
void register_softmax(const std::string& name, int64_t rows, int64_t width) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    const std::vector<float> inp = random_values(rows * width, 11),
                             dout = random_values(rows * width, 12);
    std::vector<float> out(inp.size()), dinp(inp.size());
    const Shape matrix{rows, width};
    for (auto _ : state) {
      ops::softmax_forward<float>(TensorView<float>(out.data(), matrix),
                                  TensorView<const float>(inp.data(), matrix));
      ops::softmax_backward<float>(TensorView<float>(dinp.data(), matrix),
                                   TensorView<const float>(dout.data(), matrix),
                                   TensorView<const float>(out.data(), matrix));
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * rows * width * 4 * 5);
  });
}

void register_dropout(const std::string& name, int64_t count) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    const std::vector<float> inp = random_values(count, 13);
    std::vector<float> out(inp.size());
    const Shape flat{count};
    uint64_t key = 1;
    for (auto _ : state) {
      ops::dropout_forward<float>(TensorView<float>(out.data(), flat),
                                  TensorView<const float>(inp.data(), flat), 0.1f, ++key);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * count * 8);
  });
}

// Label-smoothed cross entropy (eps 0.1) forward and backward over (M,N) logits.
void register_cross_entropy(const std::string& name, int64_t rows, int64_t vocab) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    const std::vector<float> logits = random_values(rows * vocab, 14, -4.0f, 4.0f);
    const std::vector<int32_t> targets = random_tokens(rows, vocab, 15);
    std::vector<float> log_probs(logits.size()), dlogits(logits.size());
    const Shape matrix{rows, vocab};
    for (auto _ : state) {
      ops::cross_entropy_forward<float>(TensorView<float>(log_probs.data(), matrix),
                                        TensorView<const float>(logits.data(), matrix),
                                        targets.data(), 0.1f, 0);
      ops::cross_entropy_backward<float>(TensorView<float>(dlogits.data(), matrix), 1.0f,
                                         TensorView<const float>(log_probs.data(), matrix),
                                         targets.data(), 0.1f, 0);
      benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(state.iterations() * rows);
  });
}

void register_adam(const std::string& name, int64_t size) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    std::vector<float> params = random_values(size, 16);
    const std::vector<float> grads = random_values(size, 17, -1e-3f, 1e-3f);
    Adam adam(size, AdamOptions{});
    for (auto _ : state) {
      adam.step(params.data(), grads.data(), 1e-4);
      benchmark::ClobberMemory();
    }
    // Reads p, g, m, v and writes p, m, v.
    state.SetBytesProcessed(state.iterations() * size * 4 * 7);
  });
}

void register_all(bool bf16) {
  register_gemm("sgemm_peak/1024x1024x1024", false, true, 1024, 1024, 1024);
  if (bf16) {
    register_gemm("bf16_peak/1024x1024x1024", false, true, 1024, 1024, 1024, GemmEngine::kBf16);
  }
  for (const BenchConfig& c : kBenchConfigs) {
    const std::string p = std::string(c.name) + "/";
    const int64_t rows = c.sentences * c.length, width = c.d_model / c.heads;
    // Forward: out (M,O) = inp (M,I) W^T; backward: dinp = dout W, dW += dout^T inp.
    for (const bool low : {false, true}) {
      if (low && !bf16) continue;
      const std::string g = p + (low ? "gemm_bf16/" : "gemm/");
      const GemmEngine e = low ? GemmEngine::kBf16 : GemmEngine::kTraining;
      register_gemm(g + "projection_fwd", false, true, rows, c.d_model, c.d_model, e);
      register_gemm(g + "fc1_fwd", false, true, rows, c.d_ff, c.d_model, e);
      register_gemm(g + "fc2_fwd", false, true, rows, c.d_model, c.d_ff, e);
      register_gemm(g + "fc1_dweight", true, false, c.d_ff, c.d_model, rows, e);
      register_gemm(g + "logits_fwd", false, true, rows, c.vocab_size, c.d_model, e);
      register_gemm(g + "logits_dinp", false, false, rows, c.d_model, c.vocab_size, e);
      register_gemm(g + "logits_dweight", true, false, c.vocab_size, c.d_model, rows, e);
    }
    // One decoder step of kDecodeBatch sentences: every product has that many rows. decode_gemm
    // runs them as a step does (oneDNN's fp32 matmul, weights packed once per state),
    // decode_gemm_unpacked on the same engine without the packing, and decode_gemm_openblas on
    // training's engine; the vocabulary projection also from W^T stored, the layout OpenBLAS packs
    // faster.
    for (const GemmEngine e :
         {GemmEngine::kDecodingPacked, GemmEngine::kDecoding, GemmEngine::kTraining}) {
      const std::string d = p + (e == GemmEngine::kDecodingPacked ? "decode_gemm/"
                                 : e == GemmEngine::kDecoding     ? "decode_gemm_unpacked/"
                                                                  : "decode_gemm_openblas/");
      register_gemm(d + "projection", false, true, kDecodeBatch, c.d_model, c.d_model, e);
      register_gemm(d + "fc1", false, true, kDecodeBatch, c.d_ff, c.d_model, e);
      register_gemm(d + "fc2", false, true, kDecodeBatch, c.d_model, c.d_ff, e);
      register_gemm(d + "logits", false, true, kDecodeBatch, c.vocab_size, c.d_model, e);
      if (e != GemmEngine::kDecodingPacked) {
        register_gemm(d + "logits_from_Wt", false, false, kDecodeBatch, c.vocab_size, c.d_model, e);
      }
    }
    register_decode_step(p + "decode_step", c);
    register_attention(p + "attention_fwd/causal", c.sentences, c.heads, c.length, width, true,
                       false);
    register_attention(p + "attention_bwd/causal", c.sentences, c.heads, c.length, width, true,
                       true);
    register_layernorm(p + "layernorm_fwd_bwd", rows, c.d_model);
    register_softmax(p + "softmax_fwd_bwd", c.sentences * c.heads * c.length, c.length);
    register_dropout(p + "dropout_fwd", rows * c.d_model);
    register_cross_entropy(p + "cross_entropy_fwd_bwd", rows, c.vocab_size);
    register_adam(p + "adam", analytic_parameter_count(model_config(c)));
  }
  // Time and saved-probability memory as the sequence grows at fixed tokens per batch
  // (B*L = 2048): per-token cost grows with L, memory with B*L^2.
  for (int64_t length : {32, 64, 128, 256, 512}) {
    const std::string n = std::to_string(length);
    register_attention("attention_length/fwd/L=" + n, 2048 / length, 8, length, 64, false, false);
    register_attention("attention_length/bwd/L=" + n, 2048 / length, 8, length, 64, false, true);
  }
}

}  // namespace
}  // namespace attnlab::bench

int main(int argc, char** argv) {
  const int threads = attnlab::bench::take_threads_flag(argc, argv);
  if (threads < 1) {
    std::fprintf(stderr, "attnlab_kernels: --threads must be >= 1\n");
    return 2;
  }
  attnlab::blas::set_threads(threads);
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("openblas_core", attnlab::blas::core_name());
  const std::string bf16_reason = attnlab::blas::bf16_unsupported_reason();
  benchmark::AddCustomContext(
      "bf16", bf16_reason.empty() ? "oneDNN " + attnlab::blas::onednn_isa() : bf16_reason);
  attnlab::bench::register_all(bf16_reason.empty());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
