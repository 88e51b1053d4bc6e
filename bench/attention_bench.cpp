// Attention forward + backward, standard (stored probabilities) against tiled (online softmax,
// recomputed backward), as the sequence length grows: the time and memory side of the paper's
// Table 1 (self-attention costs O(n^2 d) per layer). Self-attention shapes: T = S = n, 8 heads,
// d_k = d_v = 64, causal off, no dropout.
//
// Counters per run: extra_bytes, the bytes each kernel needs beyond its inputs, outputs and
// gradients (standard: the saved (B,H,T,S) probabilities and the (B,H,T,S) backward scratch;
// tiled: the saved (B,H,T) logsumexp and the per-worker tiles), computed from the buffers; and
// rss_delta_bytes, the growth of the resident set measured around allocating and first using
// those buffers (/proc/self/statm). `--threads=N` (default 1) sets OpenBLAS and OpenMP threads.
// bench/attention_scaling.py runs this binary and writes docs/results/attention-scaling.md.
//
// Legend: B batch, H heads, T queries, S keys, K d_k, V d_v.
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/threads_flag.h"
#include "core/ops/attention_tiled.h"
#include "core/ops/ops.h"
#include "core/tensor/blas.h"
#include "core/util/rng.h"

namespace attnlab::bench {
namespace {

constexpr int64_t kHeads = 8, kWidth = 64;

std::vector<float> random_values(int64_t count, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& x : values) x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return values;
}

// Resident set size now, in bytes (second field of /proc/self/statm, in pages).
double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Inputs, outputs and gradients both kernels need (not counted as extra).
struct Problem {
  int64_t batch, length;
  Shape qkv, lse, scores;
  std::vector<float> q, k, v, dout, out, dq, dk, dv;
  Problem(int64_t b, int64_t n)
      : batch(b),
        length(n),
        qkv({b, kHeads, n, kWidth}),
        lse({b, kHeads, n}),
        scores({b, kHeads, n, n}),
        q(random_values(qkv.numel(), 1)),
        k(random_values(qkv.numel(), 2)),
        v(random_values(qkv.numel(), 3)),
        dout(random_values(qkv.numel(), 4)),
        out(q.size()),
        dq(q.size()),
        dk(q.size()),
        dv(q.size()) {}
  TensorView<const float> in(const std::vector<float>& x) const {
    return TensorView<const float>(x.data(), qkv);
  }
  TensorView<float> mut(std::vector<float>& x) const { return TensorView<float>(x.data(), qkv); }
};

const float kScale = 0.125f;  // 1/sqrt(64)

void standard_attention(benchmark::State& state) {
  Problem p(state.range(1), state.range(0));
  const double rss_before = resident_bytes();
  std::vector<float> probs(static_cast<size_t>(p.scores.numel())), scratch(probs.size());
  bool first = true;
  double rss_delta = 0.0;
  for (auto _ : state) {
    ops::attention_forward<float>(p.mut(p.out), TensorView<float>(probs.data(), p.scores),
                                  p.in(p.q), p.in(p.k), p.in(p.v), ops::AttentionMask{}, kScale);
    ops::attention_backward<float>(p.mut(p.dq), p.mut(p.dk), p.mut(p.dv), nullptr, p.in(p.dout),
                                   p.in(p.q), p.in(p.k), p.in(p.v),
                                   TensorView<const float>(probs.data(), p.scores),
                                   TensorView<float>(scratch.data(), p.scores), kScale);
    benchmark::DoNotOptimize(p.dq.data());
    if (first) rss_delta = resident_bytes() - rss_before;
    first = false;
  }
  state.counters["extra_bytes"] =
      static_cast<double>(probs.size() + scratch.size()) * sizeof(float);
  state.counters["rss_delta_bytes"] = rss_delta;
}

void tiled_attention(benchmark::State& state) {
  Problem p(state.range(1), state.range(0));
  const double rss_before = resident_bytes();
  std::vector<float> logsumexp(static_cast<size_t>(p.lse.numel()));
  const int64_t scratch_size =
      ops::attention_tiled_scratch_elements(ops::attention_tiled_workers());
  std::vector<float> scratch(static_cast<size_t>(scratch_size));
  bool first = true;
  double rss_delta = 0.0;
  for (auto _ : state) {
    ops::attention_tiled_forward<float>(p.mut(p.out), TensorView<float>(logsumexp.data(), p.lse),
                                        TensorView<float>(scratch.data(), {scratch_size}),
                                        p.in(p.q), p.in(p.k), p.in(p.v), ops::AttentionMask{},
                                        kScale);
    ops::attention_tiled_backward<float>(
        p.mut(p.dq), p.mut(p.dk), p.mut(p.dv), nullptr, p.in(p.dout), p.in(p.q), p.in(p.k),
        p.in(p.v), p.in(p.out), TensorView<const float>(logsumexp.data(), p.lse),
        TensorView<float>(scratch.data(), {scratch_size}), ops::AttentionMask{}, kScale);
    benchmark::DoNotOptimize(p.dq.data());
    if (first) rss_delta = resident_bytes() - rss_before;
    first = false;
  }
  state.counters["extra_bytes"] =
      static_cast<double>(logsumexp.size() + scratch.size()) * sizeof(float);
  state.counters["rss_delta_bytes"] = rss_delta;
}

// Sequence lengths 64..2048 (doubling) at batch 1 and 4.
void lengths(benchmark::internal::Benchmark* b) {
  for (int64_t batch : {1, 4}) {
    for (int64_t n = 64; n <= 2048; n *= 2) b->Args({n, batch});
  }
  b->ArgNames({"n", "B"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(standard_attention)->Apply(lengths);
BENCHMARK(tiled_attention)->Apply(lengths);

}  // namespace
}  // namespace attnlab::bench

int main(int argc, char** argv) {
  const int threads = attnlab::bench::take_threads_flag(argc, argv);
  if (threads < 1) {
    std::fprintf(stderr, "attnlab_attention_bench: --threads must be >= 1\n");
    return 2;
  }
  // Every buffer above 64 KiB gets fresh pages from mmap and returns them when freed (glibc would
  // otherwise raise its threshold and recycle resident heap), so rss_delta_bytes sees each run's
  // own buffers.
  mallopt(M_MMAP_THRESHOLD, 1 << 16);
  attnlab::blas::set_threads(threads);
  benchmark::AddCustomContext("threads", std::to_string(threads));
  benchmark::AddCustomContext("openblas_core", attnlab::blas::core_name());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
