#include "core/train/memory_estimate.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/model/param_count.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// One std::vector<int32_t> holding n tokens: its header, the heap block's overhead, the tokens.
double vector_bytes(double tokens) { return 24.0 + 16.0 + 4.0 * tokens; }
// The default stack of a thread (glibc takes RLIMIT_STACK, 8 MiB on Debian).
constexpr double kThreadStack = 8.0 * 1024 * 1024;

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f GiB", bytes / kGiB);
  return text;
}

}  // namespace

TrainingMemory training_memory(const ModelConfig& model, int64_t batch, int64_t src_length,
                               int64_t tgt_length) {
  CHECK(batch >= 1 && src_length >= 1 && tgt_length >= 1)
      << "a batch needs sentences and tokens, got " << batch << " x " << src_length << "+"
      << tgt_length;
  Transformer<float> sized(model, 0);
  return training_memory(sized, batch, src_length, tgt_length);
}

TrainingMemory training_memory(Transformer<float>& model, int64_t batch, int64_t src_length,
                               int64_t tgt_length) {
  const WorkspaceParts parts = model.workspace_parts(batch, src_length, tgt_length);
  const double element = sizeof(float);
  TrainingMemory memory;
  memory.parameters = element * static_cast<double>(model.params().size());
  memory.gradients = element * static_cast<double>(model.grads().size());
  memory.adam_moments = 2 * memory.parameters;  // Adam's m and v, one float per parameter each
  memory.activations = element * static_cast<double>(parts.activations);
  memory.logits = element * static_cast<double>(parts.logits);
  memory.scratch = element * static_cast<double>(parts.scratch);
  return memory;
}

std::vector<MemoryPart> estimate_memory(const ExperimentConfig& config) {
  std::vector<MemoryPart> parts;
  if (config.data.task != DataTask::kCorpus) {
    const SyntheticTaskConfig& s = config.data.synthetic;
    const double mean_length = 0.5 * static_cast<double>(s.min_length + s.max_length);
    // A pair holds source and target (each a vector), and the batcher one int64 index.
    const double per_pair = 2.0 * vector_bytes(mean_length) + 8.0;
    parts.push_back({"data.synthetic.train_size", "synthetic training pairs",
                     per_pair * static_cast<double>(s.train_size)});
    parts.push_back({"data.synthetic.dev_size", "synthetic dev pairs",
                     per_pair * static_cast<double>(s.dev_size)});
  }
  double params = 0;
  for (const ComponentCount& count : parameter_counts(config.model)) {
    params += static_cast<double>(count.params);
  }
  // Parameters, gradients and the two Adam moments, in float.
  parts.push_back({"model.d_model", "parameters, gradients and Adam moments", 16.0 * params});
  parts.push_back({"cluster.threads_per_rank", "thread stacks",
                   kThreadStack * static_cast<double>(config.cluster.threads_per_rank)});
  return parts;
}

double memory_limit(std::string* source) {
  const double physical =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  *source = "the physical memory of this machine";
  struct rlimit limit {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      static_cast<double>(limit.rlim_cur) < physical) {
    *source = "this process's address-space limit (ulimit -v)";
    return static_cast<double>(limit.rlim_cur);
  }
  return physical;
}

void check_memory_fits(const ExperimentConfig& config) {
  const std::vector<MemoryPart> parts = estimate_memory(config);
  double total = 0;
  for (const MemoryPart& part : parts) total += part.bytes;
  std::string source;
  const double limit = memory_limit(&source);
  if (total <= limit) return;
  const MemoryPart& largest =
      *std::max_element(parts.begin(), parts.end(),
                        [](const MemoryPart& a, const MemoryPart& b) { return a.bytes < b.bytes; });
  throw Error("this run needs at least " + gib(total) + " of memory per process, more than the " +
              gib(limit) + " of " + source + "; the largest part is " + largest.what + " (" +
              gib(largest.bytes) + "): lower " + largest.key);
}

}  // namespace attnlab
