#include "core/app/step_flops.h"

#include <algorithm>

#include "core/model/param_count.h"

namespace attnlab::cli {

double counted_step_flops(const ExperimentConfig& c) {
  const int64_t longest =
      c.data.task == DataTask::kCorpus ? c.data.max_length : c.data.synthetic.max_length + 1;
  const int64_t length = std::max<int64_t>(1, longest / 2);
  const double target_tokens = static_cast<double>(c.train.batch_tokens * c.train.accumulate) / 2.0;
  return target_tokens * training_flops_per_target_token(c.model, length, length);
}

}  // namespace attnlab::cli
