// The cost model against hand-worked numbers.
#include "core/cluster/cost_model.h"

#include <gtest/gtest.h>

namespace attnlab::cluster {
namespace {

TEST(CostModel, ComputeDividesOverNodesAndTheRingAddsItsTerms) {
  CostModel model;
  model.flops_per_core = 1e10;  // 10 GFLOP/s
  model.cores_per_node = 4;     // 40 GFLOP/s a node
  model.bandwidth = 1e9;        // 1 GB/s
  model.latency = 1e-5;
  // 80 GFLOP a step, 400 MB of gradient.
  const StepCost one = step_cost(model, 8e10, 4e8, 1);
  EXPECT_DOUBLE_EQ(one.compute, 2.0);
  EXPECT_DOUBLE_EQ(one.comm, 0.0);
  EXPECT_DOUBLE_EQ(one.efficiency, 1.0);
  // 4 nodes: compute 0.5 s; ring 2 * 3/4 * 0.4 s + 6 * 1e-5 s = 0.60006 s.
  const StepCost four = step_cost(model, 8e10, 4e8, 4);
  EXPECT_DOUBLE_EQ(four.compute, 0.5);
  EXPECT_NEAR(four.comm, 0.60006, 1e-12);
  EXPECT_NEAR(four.efficiency, 2.0 / (4 * 1.10006), 1e-12);
}

}  // namespace
}  // namespace attnlab::cluster
