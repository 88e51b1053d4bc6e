#include "core/cluster/cost_model.h"

#include "core/util/check.h"

namespace attnlab::cluster {

StepCost step_cost(const CostModel& model, double step_flops, double gradient_bytes,
                   int64_t nodes) {
  CHECK(nodes >= 1 && model.cores_per_node >= 1 && model.flops_per_core > 0.0)
      << "the cost model needs nodes >= 1, cores per node >= 1 and a positive rate";
  const double n = static_cast<double>(nodes);
  const double node_rate = static_cast<double>(model.cores_per_node) * model.flops_per_core;
  StepCost cost;
  cost.compute = step_flops / (n * node_rate);
  if (nodes > 1) {
    cost.comm =
        2.0 * (n - 1.0) / n * gradient_bytes / model.bandwidth + 2.0 * (n - 1.0) * model.latency;
  }
  const double single = step_flops / node_rate;
  cost.efficiency = single / (n * cost.total());
  return cost;
}

TrainedSpan trained_span(const std::vector<double>& wall_time, const std::vector<double>& tokens) {
  TrainedSpan span;
  for (size_t i = 1; i < wall_time.size() && i < tokens.size(); ++i) {
    if (wall_time[i] < wall_time[i - 1]) continue;  // a new launch's clock
    span.seconds += wall_time[i] - wall_time[i - 1];
    span.tokens += tokens[i] - tokens[i - 1];
  }
  return span;
}

}  // namespace attnlab::cluster
