// Does overlapping the gradient allreduce with backward pay on this machine? (not a test)
//
//   mpiexec -n 2 build/tests/dist/grad_sync_bench [--floats 10000000] [--layers 24]
//       [--compute-ms 200] [--reps 7] [--bucket-mb 1,4,16]
//
// A simulated backward walks `layers` equal slices of one flat gradient buffer from the last to
// the first: each slice costs a fixed amount of arithmetic (an in-cache multiply-add loop, like a
// GEMM) and then writes its gradients, then it is marked ready. Per repetition, all variants run
// back to back (so machine noise hits them alike) and the table reports medians:
//   compute only           no communication: the floor
//   blocking               backward, then one allreduce over the whole buffer
//   overlap B MiB          a non-blocking allreduce per bucket, progressed at each mark_ready
//   overlap+poll B MiB     the same, also polling every ~1 ms inside the compute
//   allreduce only         one blocking allreduce with no compute: the communication alone
// "exposed" is the median over repetitions of (variant - compute only) in the same repetition:
// the communication time that backward did not hide.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/dist/comm.h"
#include "core/dist/grad_sync.h"
#include "core/dist/mpi_comm.h"

namespace {

using Clock = std::chrono::steady_clock;
using attnlab::dist::Comm;
using attnlab::dist::GradSync;
using attnlab::dist::SyncMode;

struct Options {
  size_t floats = 10'000'000;
  size_t layers = 24;
  double compute_ms = 200.0;
  int reps = 7;
  std::vector<double> bucket_mb = {1.0, 4.0, 16.0};
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const char* value = argv[i + 1];
    if (key == "--floats") {
      options.floats = std::strtoull(value, nullptr, 10);
    } else if (key == "--layers") {
      options.layers = std::strtoull(value, nullptr, 10);
    } else if (key == "--compute-ms") {
      options.compute_ms = std::strtod(value, nullptr);
    } else if (key == "--reps") {
      options.reps = std::atoi(value);
    } else if (key == "--bucket-mb") {
      options.bucket_mb.clear();
      std::stringstream list(value);
      std::string item;
      while (std::getline(list, item, ','))
        options.bucket_mb.push_back(std::strtod(item.c_str(), nullptr));
    } else {
      std::fprintf(stderr, "grad_sync_bench: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  return options;
}

// A dependent multiply-add chain over 64 accumulators: compute-bound, in registers and L1.
float busy_work(size_t iterations, float seed) {
  float acc[64];
  for (int k = 0; k < 64; ++k) acc[k] = seed + 0.001f * k;
  for (size_t it = 0; it < iterations; ++it) {
    for (int k = 0; k < 64; ++k) acc[k] = acc[k] * 0.999999f + 1e-7f;
  }
  float sum = 0.0f;
  for (int k = 0; k < 64; ++k) sum += acc[k];
  return sum;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Iterations of busy_work that take `ms` milliseconds here (measured on rank 0, shared).
size_t calibrate(Comm& comm, double ms) {
  int64_t iterations = 0;
  if (comm.rank() == 0) {
    const size_t probe = 200'000;
    volatile float sink = 0.0f;
    double best = 1e9;
    for (int i = 0; i < 5; ++i) {
      const auto start = Clock::now();
      sink = sink + busy_work(probe, 1.0f);
      best = std::min(best, seconds_since(start));
    }
    iterations = static_cast<int64_t>(probe * (ms / 1000.0) / best);
  }
  comm.broadcast(&iterations, 1, 0);
  return static_cast<size_t>(iterations);
}

struct Variant {
  std::string name;
  bool communicate;
  SyncMode mode;
  size_t bucket_bytes;
  bool poll_inside_compute;
  bool compute;
};

// One simulated step; returns its wall time in seconds (the slowest rank's).
double run_step(Comm& comm, const Variant& variant, std::vector<float>& grads,
                size_t iterations_per_layer, size_t layers, volatile float& sink) {
  comm.barrier();
  const auto start = Clock::now();
  std::unique_ptr<GradSync> sync;
  if (variant.communicate) {
    sync = std::make_unique<GradSync>(
        comm, grads.data(), grads.size(),
        attnlab::dist::GradSyncOptions{variant.bucket_bytes, variant.mode});
  }
  const size_t per_layer = grads.size() / layers;
  const size_t poll_slices = variant.poll_inside_compute ? 16 : 1;
  for (size_t layer = layers; layer-- > 0;) {
    const size_t begin = layer * per_layer;
    const size_t end = layer + 1 == layers ? grads.size() : begin + per_layer;
    if (variant.compute) {
      for (size_t slice = 0; slice < poll_slices; ++slice) {
        sink = sink + busy_work(iterations_per_layer / poll_slices, static_cast<float>(layer));
        if (sync && variant.poll_inside_compute) sync->poll();
      }
    }
    const float value = 1.0f + static_cast<float>(comm.rank());
    std::fill(grads.begin() + static_cast<std::ptrdiff_t>(begin),
              grads.begin() + static_cast<std::ptrdiff_t>(end), value);
    if (sync) sync->mark_ready(begin, end);
  }
  if (sync) sync->finish();
  // The step takes as long as its slowest rank: the max via a sum over one-hot slots.
  std::vector<double> elapsed(static_cast<size_t>(comm.size()), 0.0);
  elapsed[static_cast<size_t>(comm.rank())] = seconds_since(start);
  comm.allreduce_sum(elapsed.data(), elapsed.size());
  const double slowest = *std::max_element(elapsed.begin(), elapsed.end());
  return slowest;
}

// The q-quantile (0 <= q <= 1) with linear interpolation between order statistics.
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const size_t below = static_cast<size_t>(position);
  const size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
}

double median(const std::vector<double>& values) { return quantile(values, 0.5); }

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  attnlab::dist::MpiComm comm;
  const size_t iterations = calibrate(comm, options.compute_ms);
  const size_t iterations_per_layer = iterations / options.layers;

  std::vector<Variant> variants;
  variants.push_back({"compute only", false, SyncMode::kBlocking, 0, false, true});
  variants.push_back({"allreduce only", true, SyncMode::kBlocking, 4 << 20, false, false});
  variants.push_back({"blocking", true, SyncMode::kBlocking, 4 << 20, false, true});
  for (double mb : options.bucket_mb) {
    const size_t bytes = static_cast<size_t>(mb * (1 << 20));
    char name[64];
    std::snprintf(name, sizeof(name), "overlap %g MiB", mb);
    variants.push_back({name, true, SyncMode::kOverlap, bytes, false, true});
    std::snprintf(name, sizeof(name), "overlap+poll %g MiB", mb);
    variants.push_back({name, true, SyncMode::kOverlap, bytes, true, true});
  }

  std::vector<float> grads(options.floats, 0.0f);
  volatile float sink = 0.0f;
  for (const Variant& variant : variants) {  // warm-up: page faults, MPI connections
    run_step(comm, variant, grads, iterations_per_layer, options.layers, sink);
  }
  std::vector<std::vector<double>> times(variants.size());
  for (int rep = 0; rep < options.reps; ++rep) {
    for (size_t v = 0; v < variants.size(); ++v) {
      times[v].push_back(
          run_step(comm, variants[v], grads, iterations_per_layer, options.layers, sink));
    }
  }
  // The sum over ranks of 1 + rank, in every element: a check that the timed sync did its job.
  const float expected = comm.size() * (comm.size() + 1) / 2.0f;
  const bool correct =
      std::all_of(grads.begin(), grads.end(), [&](float g) { return g == expected; });

  if (comm.rank() == 0) {
    std::printf(
        "grad_sync_bench: %d ranks, %zu floats (%.1f MiB), %zu layers, compute %.0f ms "
        "per step, %d reps (medians, slowest rank)\n",
        comm.size(), options.floats, options.floats * 4.0 / (1 << 20), options.layers,
        options.compute_ms, options.reps);
    std::printf("%-22s %10s %10s %10s %12s %18s\n", "variant", "median ms", "min ms", "max ms",
                "exposed ms", "exposed p25..p75");
    for (size_t v = 0; v < variants.size(); ++v) {
      // Paired within each repetition, so that load shared by the variants cancels.
      std::vector<double> exposed;
      for (int rep = 0; rep < options.reps; ++rep) {
        const double floor = variants[v].compute ? times[0][static_cast<size_t>(rep)] : 0.0;
        exposed.push_back(times[v][static_cast<size_t>(rep)] - floor);
      }
      const auto [lo, hi] = std::minmax_element(times[v].begin(), times[v].end());
      std::printf("%-22s %10.1f %10.1f %10.1f %12.1f %8.1f..%-8.1f\n", variants[v].name.c_str(),
                  median(times[v]) * 1e3, *lo * 1e3, *hi * 1e3, median(exposed) * 1e3,
                  quantile(exposed, 0.25) * 1e3, quantile(exposed, 0.75) * 1e3);
    }
    std::printf("result check: %s\n", correct ? "ok" : "WRONG SUM");
  }
  return correct ? 0 : 1;
}
