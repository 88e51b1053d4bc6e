// Checkpoint averaging (Vaswani et al. 2017, section 6.1): the parameters of the last K
// checkpoints of a run, averaged elementwise, as one flat buffer in the model's ParamTable layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/param_table.h"

namespace attnlab {

// Paths of the newest `count` checkpoints of run_dir (run_dir/ckpt/step_<n>.h5), oldest first.
// Error naming the directory when it holds fewer than `count` (or `count` < 1).
std::vector<std::string> last_checkpoints(const std::string& run_dir, int64_t count);

// Reads /params of one checkpoint into `out` (table.size() floats, table layout). Error naming
// the file and the tensor when a tensor is missing or has another shape than the table's.
void read_checkpoint_params(const std::string& path, const ParamTable& table, float* out);

// The elementwise mean of the /params of `paths` into `out` (table.size() floats); sums in
// double, so the order of the files does not change the result beyond float rounding.
void average_checkpoints(const std::vector<std::string>& paths, const ParamTable& table,
                         float* out);

// The step stored in a checkpoint file.
int64_t checkpoint_step(const std::string& path);

}  // namespace attnlab
