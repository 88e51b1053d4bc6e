// Adam and the learning-rate schedules against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "core/optim/adam.h"
#include "core/optim/lr_schedule.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

TEST(Adam, FirstStepMovesEachParameterByTheRateTimesTheGradientSign) {
  // After one step mhat = g and vhat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g).
  Adam adam(3, {0.9, 0.98, 1e-9});
  float params[3] = {1.0f, 1.0f, 1.0f};
  const float grads[3] = {0.5f, -2.0f, 0.0f};
  adam.step(params, grads, 0.1);
  EXPECT_NEAR(params[0], 0.9f, 1e-6);
  EXPECT_NEAR(params[1], 1.1f, 1e-6);
  EXPECT_FLOAT_EQ(params[2], 1.0f);
}

TEST(Adam, SecondStepMatchesTheTextbookFormula) {
  Adam adam(1, {0.9, 0.98, 1e-8});
  float p = 0.0f;
  float g1 = 1.0f, g2 = 3.0f;
  adam.step(&p, &g1, 0.01);
  adam.step(&p, &g2, 0.01);
  // m2 = 0.9*0.1*1 + 0.1*3 = 0.39; v2 = 0.98*0.02*1 + 0.02*9 = 0.1996
  // mhat = 0.39/0.19, vhat = 0.1996/0.0396; p = -0.01 - 0.01*mhat/sqrt(vhat)
  const double mhat = 0.39 / 0.19, vhat = 0.1996 / (1 - 0.98 * 0.98);
  EXPECT_NEAR(p, -0.01 - 0.01 * mhat / std::sqrt(vhat), 1e-6);
}

TEST(Clip, ScalesToTheMaximumNormOnlyWhenAbove) {
  float g[2] = {3.0f, 4.0f};
  EXPECT_DOUBLE_EQ(clip_global_norm(g, 2, 10.0), 5.0);
  EXPECT_FLOAT_EQ(g[0], 3.0f);
  EXPECT_DOUBLE_EQ(clip_global_norm(g, 2, 1.0), 5.0);
  EXPECT_NEAR(g[0], 0.6f, 1e-6);
  EXPECT_NEAR(g[1], 0.8f, 1e-6);
}

TEST(LrSchedule, NoamPeaksAtWarmupWithThePapersFormula) {
  LrSchedule s;  // d_model 512, warmup 4000
  const double peak = 1.0 / std::sqrt(512.0) / std::sqrt(4000.0);
  EXPECT_NEAR(s.rate(4000), peak, 1e-12);
  EXPECT_NEAR(s.rate(1), 1.0 / std::sqrt(512.0) * std::pow(4000.0, -1.5), 1e-15);
  EXPECT_NEAR(s.rate(16000), 1.0 / std::sqrt(512.0) / std::sqrt(16000.0), 1e-12);
  EXPECT_LT(s.rate(3999), peak);
  EXPECT_LT(s.rate(4001), peak);
}

TEST(LrSchedule, InverseSqrtAndConstant) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kInverseSqrt;
  s.peak = 1e-3;
  s.warmup = 100;
  EXPECT_NEAR(s.rate(50), 5e-4, 1e-12);
  EXPECT_NEAR(s.rate(100), 1e-3, 1e-12);
  EXPECT_NEAR(s.rate(400), 5e-4, 1e-12);
  s.kind = LrSchedule::Kind::kConstant;
  EXPECT_DOUBLE_EQ(s.rate(12345), 1e-3);
  EXPECT_THROW(LrSchedule::parse("linear"), Error);
}

// Values worked by hand: warmup 100 to a peak of 1e-3, the run ends at step 1100.
TEST(LrSchedule, CosineWarmsUpThenFollowsHalfACosineToZeroAtTheLastStep) {
  LrSchedule s;
  s.kind = LrSchedule::parse("cosine");
  EXPECT_EQ(LrSchedule::name(s.kind), "cosine");
  s.peak = 1e-3;
  s.warmup = 100;
  s.total = 1100;
  EXPECT_NEAR(s.rate(1), 1e-5, 1e-15);
  EXPECT_NEAR(s.rate(50), 5e-4, 1e-15);
  EXPECT_NEAR(s.rate(100), 1e-3, 1e-15);
  EXPECT_NEAR(s.rate(350), 1e-3 * (1 + std::sqrt(0.5)) / 2, 1e-15);  // a quarter: cos(pi/4)
  EXPECT_NEAR(s.rate(600), 5e-4, 1e-15);                             // half way: cos(pi/2) = 0
  EXPECT_NEAR(s.rate(850), 1e-3 * (1 - std::sqrt(0.5)) / 2, 1e-15);
  EXPECT_EQ(s.rate(1100), 0.0);
  EXPECT_TRUE(s.fixed_budget());
  s.kind = LrSchedule::Kind::kInverseSqrt;
  EXPECT_FALSE(s.fixed_budget());
}

TEST(LrSchedule, ACooldownTakesAnyScheduleLinearlyToZeroOverTheLastSteps) {
  LrSchedule noam;  // d_model 512, warmup 4000
  noam.total = 10000;
  LrSchedule cooled = noam;
  cooled.cooldown = 2000;
  EXPECT_TRUE(cooled.fixed_budget());
  for (int64_t step : {1, 4000, 7999, 8000}) {
    EXPECT_DOUBLE_EQ(cooled.rate(step), noam.rate(step)) << step;
  }
  EXPECT_NEAR(cooled.rate(9000), noam.rate(9000) * 0.5, 1e-18);
  EXPECT_NEAR(cooled.rate(9500), noam.rate(9500) * 0.25, 1e-18);
  EXPECT_EQ(cooled.rate(10000), 0.0);
}

}  // namespace
}  // namespace attnlab
