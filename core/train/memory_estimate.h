// What a run will hold in memory, estimated from its config before anything is allocated, so
// that sizes which cannot fit (data.synthetic.train_size = 2^31, a thousand threads under an
// address-space limit) are an error naming the key to change instead of an allocation that grows
// until the process is killed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/experiment.h"

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

// The memory one process may use: physical memory, or RLIMIT_AS when that is lower; `source`
// says which.
double memory_limit(std::string* source);

// An Error when the estimate exceeds the limit, naming the total, the limit and the largest part
// with its key.
void check_memory_fits(const ExperimentConfig& config);

}  // namespace attnlab
