// What a data-parallel run costs on a cluster: compute from counted FLOPs and a per-core rate,
// communication from a ring allreduce of the gradient between nodes, per optimizer step.
//
//   compute(N) = step FLOPs / (N x cores per node x rate per core)
//   comm(N)    = 2 (N - 1) / N x gradient bytes / bandwidth + 2 (N - 1) x latency   (N > 1)
//   efficiency(N) = compute(1) / (N x (compute(N) + comm(N)))
//
// Ranks within a node exchange through shared memory, which the model takes as free; the ring
// runs between nodes (reduce-scatter then all-gather: 2 (N - 1) messages of G / N bytes each).
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::cluster {

struct CostModel {
  double flops_per_core = 0.0;  // sustained training FLOP/s of one core
  int64_t cores_per_node = 1;
  double bandwidth = 10e9;  // bytes/s between two nodes
  double latency = 5e-6;    // seconds per message
};

struct StepCost {
  double compute = 0.0;     // seconds
  double comm = 0.0;        // seconds
  double efficiency = 1.0;  // compute(1) / (N x step(N))
  double total() const { return compute + comm; }
};

StepCost step_cost(const CostModel& model, double step_flops, double gradient_bytes, int64_t nodes);

// The training a run's /train series measured: seconds and tokens between consecutive logged
// steps. wall_time counts from each launch's start, so a resumed run's series is cut where it
// falls back, and its pieces are summed: the time between launches, and a launch's start-up
// before its first logged step, do not count.
struct TrainedSpan {
  double seconds = 0.0;
  double tokens = 0.0;
};
TrainedSpan trained_span(const std::vector<double>& wall_time, const std::vector<double>& tokens);

}  // namespace attnlab::cluster
