// End-to-end bench of one configuration in one process: training steps of Transformer<float> with
// Adam on random token batches (forward / backward / optimizer time, target tokens/s, peak RSS,
// MFU over a measured sgemm peak) and decoding speed (greedy with the KV cache, beam 4).
// Prints one JSON object on stdout; bench/run_bench.py runs it in a fresh process per row.
//
//   attnlab_train_bench --config tiny|small|base [--threads 1] [--steps 5] [--warmup 1]
//                       [--decode-repeats 3] [--beam 4] [--precision fp32|bf16]
//
// --precision bf16 runs every float product with bf16 operands and fp32 accumulation (as
// train.precision: bf16 does) and measures MFU over the bf16 peak of blas::gemm_bf16; on a CPU
// without native bf16 products it exits 2 with the reason, as attnlab train does.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_configs.h"
#include "core/decode/beam.h"
#include "core/decode/greedy.h"
#include "core/model/decode_buffers.h"
#include "core/model/param_count.h"
#include "core/model/transformer.h"
#include "core/optim/adam.h"
#include "core/tensor/blas.h"
#include "core/train/memory_estimate.h"
#include "core/util/rng.h"

namespace attnlab::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds of every thread of this process: on a shared machine the wall clock also counts the
// time other processes held the core, CPU time does not.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> values) {
  CHECK(!values.empty()) << "median of no values";
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// One flat JSON object, keys in insertion order.
class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value) {
    return raw(key, "\"" + value + "\"");
  }
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, double value) {
    char text[64];
    std::snprintf(text, sizeof(text), "%.6g", value);
    return raw(key, text);
  }
  JsonLine& add(const std::string& key, int64_t value) { return raw(key, std::to_string(value)); }
  JsonLine& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  JsonLine& raw(const std::string& key, const std::string& value) {
    body_ += (body_.empty() ? "\"" : ", \"") + key + "\": " + value;
    return *this;
  }
  std::string body_;
};

struct Options {
  std::string config;
  int threads = 1;
  int steps = 5;
  int warmup = 1;
  int decode_repeats = 3;
  int beam = 4;         // 0 skips beam search
  int new_tokens = 32;  // decoding: tokens produced per sentence
  int decode_batch = static_cast<int>(kDecodeBatch);
  int decode_source = 32;
  int peak_repeats = 8;  // at least this many products per MFU peak (sgemm; bf16 too at bf16),
                         // and at least kPeakMinSeconds of them; 0 skips them
  blas::Precision precision = blas::Precision::kFp32;
};

// Exit code of a run refused because the CPU cannot run the asked precision (attnlab train's
// code for a configuration error), distinct from 1 for a failed run.
constexpr int kUnsupportedExit = 2;

int parse_int(const std::string& flag, const char* value) {
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  CHECK(end != value && *end == '\0') << flag << " expects an integer, got '" << value << "'";
  return static_cast<int>(parsed);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    CHECK(i + 1 < argc) << "flag " << flag << " needs a value";
    const char* value = argv[++i];
    if (flag == "--config") {
      o.config = value;
    } else if (flag == "--threads") {
      o.threads = parse_int(flag, value);
    } else if (flag == "--steps") {
      o.steps = parse_int(flag, value);
    } else if (flag == "--warmup") {
      o.warmup = parse_int(flag, value);
    } else if (flag == "--decode-repeats") {
      o.decode_repeats = parse_int(flag, value);
    } else if (flag == "--beam") {
      o.beam = parse_int(flag, value);
    } else if (flag == "--peak-repeats") {
      o.peak_repeats = parse_int(flag, value);
    } else if (flag == "--precision") {
      const std::optional<blas::Precision> precision = blas::precision_names().find(value);
      CHECK(precision.has_value())
          << "--precision '" << value << "' must be one of " << blas::precision_names().choices();
      o.precision = *precision;
    } else {
      CHECK(false) << "unknown flag " << flag
                   << " (known: --config --threads --steps --warmup --decode-repeats --beam "
                      "--peak-repeats --precision)";
    }
  }
  CHECK(!o.config.empty()) << "--config tiny|small|base is required";
  CHECK(o.threads >= 1 && o.steps >= 1 && o.warmup >= 0 && o.decode_repeats >= 0 && o.beam >= 0 &&
        o.peak_repeats >= 0)
      << "need --threads >= 1, --steps >= 1 and --warmup, --decode-repeats, --beam, "
         "--peak-repeats >= 0";
  return o;
}

// Random sentences of `length` tokens in [3, N) (no padding, so every position is a target):
// tgt_in = bos y_1..y_{T-1}, tgt_out = y_1..y_{T-1} eos.
Batch random_batch(const ModelConfig& c, int64_t sentences, int64_t length, uint64_t seed) {
  Rng rng(seed);
  auto token = [&] {
    return static_cast<int32_t>(3 + rng.below(static_cast<uint64_t>(c.vocab_size - 3)));
  };
  Batch b;
  b.size = sentences;
  b.src_length = length;
  b.tgt_length = length;
  b.src.resize(static_cast<size_t>(sentences * length));
  b.tgt_in.resize(b.src.size());
  b.tgt_out.resize(b.src.size());
  for (int32_t& id : b.src) id = token();
  for (int64_t s = 0; s < sentences; ++s) {
    int32_t* in = b.tgt_in.data() + s * length;
    int32_t* out = b.tgt_out.data() + s * length;
    in[0] = c.bos_id;
    for (int64_t t = 1; t < length; ++t) in[t] = out[t - 1] = token();
    out[length - 1] = c.eos_id;
  }
  b.src_tokens = sentences * length;
  b.tgt_tokens = sentences * length;
  return b;
}

// The process's peak resident set (VmHWM), in MiB.
double peak_rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream fields(line.substr(6));
      double kib = 0.0;
      fields >> kib;
      return kib / 1024.0;
    }
  }
  return -1.0;
}

// Best of several 1024^3 products, in GFLOP/s: the MFU denominator, per wall second and per CPU
// second (all threads). sgemm through blas::gemm at the precision set when it runs (fp32 here),
// bf16 through blas::gemm_bf16 (operand rounding included: the model's products pay it too).
struct Peak {
  double wall_gflops = 0.0, cpu_gflops = 0.0;
};
// The peak is the best of products run for at least this long (Google Benchmark's attnlab_kernels
// rows run 0.2 s or more): on a Zen 5 the first eight or nine 1024^3 bf16 products of random
// operands ran at 200 GFLOP/s and every one after them at 340, so a peak of eight products came
// out at 227 against attnlab_kernels' 339 and base's bf16 MFU at 114.5%.
constexpr double kPeakMinSeconds = 0.3;

Peak gemm_peak_gflops(int repeats, bool bf16) {
  if (repeats == 0) return Peak{};
  constexpr int64_t n = 1024;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  Rng rng(7);
  for (float& x : a) x = static_cast<float>(rng.uniform(-1, 1));
  for (float& x : b) x = static_cast<float>(rng.uniform(-1, 1));
  Peak peak;
  double best_wall = 1e30, best_cpu = 1e30;
  const auto first = Clock::now();
  for (int rep = 0; rep < repeats || seconds_since(first) < kPeakMinSeconds; ++rep) {
    const auto start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    if (bf16) {
      blas::gemm_bf16(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    } else {
      blas::gemm<float>(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    }
    best_cpu = std::min(best_cpu, process_cpu_seconds() - cpu_start);
    best_wall = std::min(best_wall, seconds_since(start));
  }
  const double flops = 2.0 * static_cast<double>(n * n * n);
  return Peak{flops / best_wall / 1e9, flops / best_cpu / 1e9};
}

struct DecodeResult {
  double seconds = 0.0;      // median over repeats, encoder included
  double cpu_seconds = 0.0;  // the same in process CPU time
  int64_t tokens = 0;        // tokens produced in the last repeat (all sentences)
};

// With `warmup`, one untimed run first (first touch of the workspace); beam search reuses the
// greedy warm-up, as the PyTorch reference does.
template <typename Run>
DecodeResult time_decode(int repeats, bool warmup, Run run) {
  DecodeResult result;
  if (warmup) result.tokens = run();
  std::vector<double> times, cpu_times;
  for (int r = 0; r < repeats; ++r) {
    const double cpu_start = process_cpu_seconds();
    const auto start = Clock::now();
    result.tokens = run();
    times.push_back(seconds_since(start));
    cpu_times.push_back(process_cpu_seconds() - cpu_start);
  }
  result.seconds = median(times);
  result.cpu_seconds = median(cpu_times);
  return result;
}

int run(const Options& o) {
  blas::set_threads(o.threads);
  const BenchConfig& bc = find_bench_config(o.config);
  const ModelConfig config = model_config(bc);

  const bool bf16 = o.precision == blas::Precision::kBf16;
  if (bf16) {
    const std::string reason = blas::bf16_unsupported_reason();
    if (!reason.empty()) {
      std::fprintf(stderr, "attnlab_train_bench: --precision bf16 but %s; use --precision fp32\n",
                   reason.c_str());
      return kUnsupportedExit;
    }
  }
  // Both peaks before the precision is set, so that the sgemm one stays an fp32 product; an fp32
  // run never touches oneDNN (its RSS and timings stay those of the fp32 code path).
  const Peak sgemm_peak = gemm_peak_gflops(o.peak_repeats, false);
  const Peak bf16_peak = bf16 ? gemm_peak_gflops(o.peak_repeats, true) : Peak{};
  const Peak& peak = bf16 ? bf16_peak : sgemm_peak;
  blas::set_precision(o.precision);
  Transformer<float> model(config, 1);
  Adam adam(model.table().size(), AdamOptions{0.9, 0.98, 1e-9});

  std::vector<double> forward, backward, optimizer, total, cpu;
  double loss = 0.0;
  for (int step = 0; step < o.warmup + o.steps; ++step) {
    const Batch batch = random_batch(config, bc.sentences, bc.length, 100 + step);
    const double cpu0 = process_cpu_seconds();
    const auto t0 = Clock::now();
    const ops::LossSums sums = model.forward(batch, 0.1f, true, rng_key(1, step));
    const auto t1 = Clock::now();
    model.backward();
    model.scale_grads(1.0f / static_cast<float>(sums.tokens));
    const auto t2 = Clock::now();
    adam.step(model.params().data(), model.grads().data(), 1e-4);
    model.zero_grads();
    const auto t3 = Clock::now();
    const double cpu_seconds = process_cpu_seconds() - cpu0;
    loss = sums.loss / static_cast<double>(sums.tokens);
    if (step < o.warmup) continue;
    auto span = [](Clock::time_point a, Clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    forward.push_back(span(t0, t1));
    backward.push_back(span(t1, t2));
    optimizer.push_back(span(t2, t3));
    total.push_back(span(t0, t3));
    cpu.push_back(cpu_seconds);
  }
  const double rss = peak_rss_mib();
  // What the model, Adam and the step's workspace hold (the rest of the RSS: libraries, buffers).
  const TrainingMemory memory = training_memory(model, bc.sentences, bc.length, bc.length);
  const double tokens_per_step = static_cast<double>(bc.sentences * bc.length);
  const double step_seconds = median(total);
  const double tokens_per_second = tokens_per_step / step_seconds;
  const double flops_per_token = training_flops_per_target_token(config, bc.length, bc.length);
  const double step_cpu_seconds = median(cpu);
  const double mfu =
      peak.wall_gflops > 0 ? tokens_per_second * flops_per_token / (peak.wall_gflops * 1e9) : 0.0;
  const double mfu_cpu = peak.cpu_gflops > 0 ? tokens_per_step * flops_per_token /
                                                   step_cpu_seconds / (peak.cpu_gflops * 1e9)
                                             : 0.0;

  DecodeResult greedy, beam;
  if (o.decode_repeats > 0) {
    // The repeats decode batch after batch as an evaluation does, which reuses pack and KV
    // cache buffers.
    const DecodeBufferReuse reuse_buffers;
    Batch source = random_batch(config, o.decode_batch, o.decode_source, 7);
    // Random weights can make eos the most likely token and end decoding at once; a zero output
    // row gives eos logit 0, below the best of N random logits, so every sentence runs the full
    // new_tokens steps, as in the PyTorch loop (which does the same).
    TensorView<float> output = model.param(model.output_weight_index());
    std::fill_n(output.data() + config.eos_id * config.d_model, config.d_model, 0.0f);
    // No sentence ends early (see above), so greedy_decode stops once each has max_length tokens:
    // new_tokens decoder steps and tokens, as the PyTorch loop.
    greedy = time_decode(o.decode_repeats, true, [&] {
      int64_t produced = 0;
      for (const auto& out : greedy_decode(model, source, o.new_tokens)) produced += out.size();
      return produced;
    });
    if (o.beam > 0) {
      // Up to source words + offset tokens: with offset new_tokens - source, new_tokens of them.
      BeamOptions options;
      options.beam = o.beam;
      options.alpha = 0.6;
      options.max_len_offset = std::max(0, o.new_tokens - o.decode_source);
      beam = time_decode(o.decode_repeats, false, [&] {
        int64_t produced = 0;
        for (const auto& h : beam_decode(model, source, options)) produced += h.tokens.size();
        return produced;
      });
    }
  }

  JsonLine out;
  out.add("impl", "attnlab").add("config", o.config).add("threads", o.threads);
  out.add("precision", blas::precision_names().name(o.precision));
  out.add("steps", o.steps).add("warmup", o.warmup).add("params", model.table().size());
  out.add("tokens_per_step", tokens_per_step).add("loss", loss);
  out.add("forward_s", median(forward)).add("backward_s", median(backward));
  out.add("optimizer_s", median(optimizer)).add("step_s", step_seconds);
  out.add("step_cpu_s", step_cpu_seconds).add("tokens_per_s", tokens_per_second);
  out.add("tokens_per_cpu_s", tokens_per_step / step_cpu_seconds).add("peak_rss_mib", rss);
  constexpr double kMiB = 1024.0 * 1024.0;
  out.add("memory_parameters_mib", memory.parameters / kMiB)
      .add("memory_gradients_mib", memory.gradients / kMiB)
      .add("memory_adam_mib", memory.adam_moments / kMiB)
      .add("memory_activations_mib", memory.activations / kMiB)
      .add("memory_logits_mib", memory.logits / kMiB)
      .add("memory_scratch_mib", memory.scratch / kMiB);
  out.add("sgemm_peak_gflops", sgemm_peak.wall_gflops);
  out.add("sgemm_peak_cpu_gflops", sgemm_peak.cpu_gflops);
  // mfu and mfu_cpu are over the peak of the run's precision: bf16_peak_* in a bf16 run.
  out.add("bf16_peak_gflops", bf16_peak.wall_gflops);
  out.add("bf16_peak_cpu_gflops", bf16_peak.cpu_gflops);
  out.add("flops_per_token", flops_per_token).add("mfu", mfu).add("mfu_cpu", mfu_cpu);
  out.add("greedy_s", greedy.seconds).add("greedy_cpu_s", greedy.cpu_seconds);
  out.add("greedy_tokens", greedy.tokens).add("beam", o.beam).add("beam_s", beam.seconds);
  out.add("beam_cpu_s", beam.cpu_seconds).add("beam_tokens", beam.tokens);
  out.add("decode_batch", o.decode_batch).add("openblas_core", blas::core_name());
  out.add("onednn_isa", bf16 ? blas::onednn_isa() : std::string());
  std::printf("%s\n", out.str().c_str());
  return 0;
}

}  // namespace
}  // namespace attnlab::bench

int main(int argc, char** argv) {
  try {
    return attnlab::bench::run(attnlab::bench::parse_options(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnlab_train_bench: %s\n", e.what());
    return 1;
  }
}
