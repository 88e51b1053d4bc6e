// StoppingRule against hand-worked sequences of dev losses: what counts as an improvement, when
// patience runs out, when the learning rate shrinks, and when the epoch limit is reached.
#include "core/train/stopping.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace attnlab {
namespace {

TrainConfig with_patience(int64_t patience, double min_delta) {
  TrainConfig train;
  train.stop.patience = patience;
  train.stop.min_delta = min_delta;
  return train;
}

TEST(StoppingRule, PatienceCountsFromTheLastGainWhileTheBestFollowsTheLowestLoss) {
  StoppingRule rule(with_patience(2, 0.05));
  const Observation first = rule.observe(100, 3.00);  // the first evaluation is both
  EXPECT_TRUE(first.best);
  EXPECT_TRUE(first.gain);
  EXPECT_TRUE(rule.observe(200, 2.90).gain);          // 0.10 below the mark: a gain
  const Observation small = rule.observe(300, 2.86);  // 0.04 below: a new best but no gain
  EXPECT_TRUE(small.best);
  EXPECT_FALSE(small.gain);
  EXPECT_EQ(rule.state().best_step, 300);
  EXPECT_FALSE(rule.patience_exhausted());
  // 0.06 below the mark (2.90, not the best 2.86): a gain again.
  EXPECT_TRUE(rule.observe(400, 2.84).gain);
  EXPECT_DOUBLE_EQ(rule.state().mark_loss, 2.84);
  EXPECT_FALSE(rule.observe(500, 2.85).best);
  EXPECT_FALSE(rule.patience_exhausted());
  const Observation last = rule.observe(600, 2.80);  // 0.04 below the mark: best, no gain
  EXPECT_TRUE(last.best);
  EXPECT_FALSE(last.gain);
  EXPECT_TRUE(rule.patience_exhausted());
  EXPECT_EQ(rule.state().evals_since_gain, 2);
  EXPECT_EQ(rule.state().best_step, 600);
  EXPECT_DOUBLE_EQ(rule.state().best_loss, 2.80);
  EXPECT_DOUBLE_EQ(rule.state().mark_loss, 2.84);
}

TEST(StoppingRule, NanNeverImprovesAndPatienceZeroNeverStops) {
  StoppingRule rule(with_patience(1, 0.0));
  EXPECT_FALSE(rule.observe(10, std::numeric_limits<double>::quiet_NaN()).best);
  EXPECT_TRUE(rule.patience_exhausted());
  StoppingRule off(with_patience(0, 0.0));
  for (int step = 1; step <= 50; ++step) off.observe(step, 5.0);
  EXPECT_EQ(off.state().evals_since_gain, 49);
  EXPECT_FALSE(off.patience_exhausted());
}

TEST(StoppingRule, RestoredStateContinuesWhereItWas) {
  StoppingRule first(with_patience(3, 0.0));
  first.observe(1, 2.0);
  first.observe(2, 2.5);
  StoppingRule second(with_patience(3, 0.0));
  second.restore(first.state());
  for (StoppingRule* rule : {&first, &second}) {
    EXPECT_FALSE(rule->observe(3, 2.1).best);
    EXPECT_FALSE(rule->patience_exhausted());
    EXPECT_FALSE(rule->observe(4, 2.0).best);  // equal to the best is no improvement
    EXPECT_TRUE(rule->patience_exhausted());
  }
}

TEST(StoppingRule, RateShrinksAfterShrinkPatienceStalledEvaluationsAndResetsOnABest) {
  TrainConfig train = with_patience(5, 0.0);
  train.lr.shrink = 0.5;
  train.lr.shrink_patience = 2;
  StoppingRule rule(train);
  EXPECT_TRUE(rule.observe(1, 3.0).best);
  EXPECT_FALSE(rule.observe(2, 3.1).lr_shrunk);     // one stalled evaluation
  const Observation second = rule.observe(3, 3.0);  // two: the rate shrinks
  EXPECT_FALSE(second.best);
  EXPECT_TRUE(second.lr_shrunk);
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 0.5);
  EXPECT_FALSE(rule.observe(4, 3.2).lr_shrunk);  // the count starts again after a shrink
  EXPECT_TRUE(rule.observe(5, 3.3).lr_shrunk);
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 0.25);
  EXPECT_EQ(rule.state().evals_since_gain, 4);  // patience counts from the gain, not the shrink
  EXPECT_TRUE(rule.observe(6, 2.9).best);       // a gain resets both counts...
  EXPECT_FALSE(rule.observe(7, 3.0).lr_shrunk);
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 0.25);  // ...but never raises the rate again
  EXPECT_TRUE(rule.observe(8, 3.0).lr_shrunk);
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 0.125);
  // Off (shrink_patience 0): the factor stays 1 however long the dev loss stalls.
  StoppingRule off(with_patience(0, 0.0));
  for (int step = 1; step <= 20; ++step) EXPECT_FALSE(off.observe(step, 5.0).lr_shrunk);
  EXPECT_DOUBLE_EQ(off.state().lr_factor, 1.0);
}

TEST(StoppingRule, NoShrinkBeforeShrinkAfterWhileTheCountGoesOn) {
  TrainConfig train = with_patience(0, 0.0);
  train.lr.shrink = 0.5;
  train.lr.shrink_patience = 2;
  train.lr.shrink_after = 500;
  StoppingRule rule(train);
  rule.observe(100, 3.0);
  EXPECT_FALSE(rule.observe(200, 3.1).lr_shrunk);
  EXPECT_FALSE(rule.observe(300, 3.1).lr_shrunk);  // the 2nd stalled evaluation, before 500
  EXPECT_FALSE(rule.observe(400, 3.1).lr_shrunk);  // the 3rd: not a multiple of 2
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 1.0);
  EXPECT_EQ(rule.state().evals_since_gain, 3);
  EXPECT_TRUE(rule.observe(500, 3.1).lr_shrunk);  // the 4th, at shrink_after: it shrinks
  EXPECT_FALSE(rule.observe(600, 3.1).lr_shrunk);
  EXPECT_TRUE(rule.observe(700, 3.1).lr_shrunk);
  EXPECT_DOUBLE_EQ(rule.state().lr_factor, 0.25);
  // Without shrink_after the same losses shrink at 300, 500 and 700.
  train.lr.shrink_after = 0;
  StoppingRule early(train);
  int shrinks = 0;
  for (int step = 100; step <= 700; step += 100) {
    shrinks += early.observe(step, step == 100 ? 3.0 : 3.1).lr_shrunk ? 1 : 0;
  }
  EXPECT_EQ(shrinks, 3);
  EXPECT_DOUBLE_EQ(early.state().lr_factor, 0.125);
}

TEST(StoppingRule, EpochLimit) {
  TrainConfig train;
  EXPECT_FALSE(StoppingRule(train).epochs_done(1000));  // 0 = no limit
  train.max_epochs = 3;
  StoppingRule rule(train);
  EXPECT_FALSE(rule.epochs_done(2));
  EXPECT_TRUE(rule.epochs_done(3));
}

}  // namespace
}  // namespace attnlab
