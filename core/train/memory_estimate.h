// What a run will hold in memory, estimated from its config before anything is allocated, so
// that sizes which cannot fit (data.synthetic.train_size = 2^31, a thousand threads under an
// address-space limit) are an error naming the key to change instead of an allocation that grows
// until the process is killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/model/transformer.h"

namespace attnlab {

struct MemoryPart {
  std::string key;  // the config key that sets its size, e.g. "data.synthetic.train_size"
  std::string what;
  double bytes = 0;
};

// The parts of one process's memory that grow with the config: synthetic examples (train and
// dev), parameters with their gradients and Adam moments, and thread stacks. A lower bound: the
// activations and the corpus text come on top.
std::vector<MemoryPart> estimate_memory(const ExperimentConfig& config);

// What one training process allocates for its model, Adam and a step's workspace, in bytes, for a
// batch of `batch` sentences of src_length source and tgt_length target tokens: the model's own
// carving (Transformer::workspace_parts), counted without allocating the workspace. Libraries,
// OpenBLAS's buffers, the corpus and the thread stacks come on top.
struct TrainingMemory {
  double parameters = 0, gradients = 0, adam_moments = 0;
  double activations = 0;  // saved for backward
  double logits = 0;       // (B*T, vocab): logits -> log-probabilities -> their gradient
  double scratch = 0;      // gradient streams and shared pools
  double total() const {
    return parameters + gradients + adam_moments + activations + logits + scratch;
  }
};
TrainingMemory training_memory(const ModelConfig& model, int64_t batch, int64_t src_length,
                               int64_t tgt_length);
// The same for a model that exists (nothing more is allocated).
TrainingMemory training_memory(Transformer<float>& model, int64_t batch, int64_t src_length,
                               int64_t tgt_length);

// The memory one process may use: physical memory, or RLIMIT_AS when that is lower; `source`
// says which.
double memory_limit(std::string* source);

// An Error when the estimate exceeds the limit, naming the total, the limit and the largest part
// with its key.
void check_memory_fits(const ExperimentConfig& config);

}  // namespace attnlab
