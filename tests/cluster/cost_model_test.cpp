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

// A run resumed once: its second launch's clock starts again at 0.5 s, at its first logged step
// after the checkpoint; the tokens between the two launches' rows are not timed, so they do not
// count either.
TEST(CostModel, TrainedSpanSumsTheLaunchesOfAResumedRun) {
  const TrainedSpan span =
      trained_span({1.0, 2.0, 4.0, 0.5, 1.5, 3.5}, {100, 200, 400, 450, 550, 750});
  EXPECT_DOUBLE_EQ(span.seconds, (4.0 - 1.0) + (3.5 - 0.5));
  EXPECT_DOUBLE_EQ(span.tokens, (400 - 100) + (750 - 450));
  const TrainedSpan once = trained_span({1.0, 2.0, 4.0}, {100, 200, 400});
  EXPECT_DOUBLE_EQ(once.seconds, 3.0);
  EXPECT_DOUBLE_EQ(once.tokens, 300.0);
  EXPECT_DOUBLE_EQ(trained_span({}, {}).seconds, 0.0);
}

}  // namespace
}  // namespace attnlab::cluster
