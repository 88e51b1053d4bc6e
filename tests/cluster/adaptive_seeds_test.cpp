// Adaptive seeds: Welch's interval against SciPy's numbers, and the seed plan against rounds
// worked by hand.
#include "core/cluster/adaptive_seeds.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace attnlab::cluster {
namespace {

TEST(WelchInterval, MatchesScipy) {
  // scipy.stats: d = mean(a) - mean(b), se = sqrt(var_a/3 + var_b/3) (ddof 1), Welch df 2.9363,
  // d -/+ t.ppf(0.975, df) * se = [-12.752876950481564, -3.3804563828517624].
  const Interval ci = welch_interval({101.0, 103.5, 99.0}, {108.0, 109.5, 110.2}, 0.95);
  EXPECT_NEAR(ci.low, -12.752876950481564, 1e-9);
  EXPECT_NEAR(ci.high, -3.3804563828517624, 1e-9);
}

// Rows base, "far" (clearly worse), "same" (identical to base up to noise far below the effect)
// and "noisy" (overlapping, wide), seeds 1..4, min 2.
config::Sweep three_rows(config::SeedRule rule = config::SeedRule::sequential) {
  config::Sweep sweep;
  sweep.name = "s";
  sweep.adaptive = config::AdaptiveSeeds{2, 4, 0.02, 0.95, rule};
  for (const char* row : {"base", "far", "same", "noisy"}) {
    for (int seed = 1; seed <= 4; ++seed) {
      config::SweepRun run;
      run.row = row;
      run.group = std::string(row) == "base" ? "base" : "X";
      run.seed = static_cast<uint64_t>(seed);
      run.name = std::string(row) + ".seed" + std::to_string(seed);
      run.id = run.name;
      if (std::string(row) != "base") run.overrides = {{"model.heads", "1"}};
      sweep.runs.push_back(run);
    }
  }
  return sweep;
}

std::map<std::string, std::string> decisions(const SeedPlan& plan) {
  return {plan.decisions.begin(), plan.decisions.end()};
}

TEST(PlanSeeds, StartsWithMinSeedsAndWaitsForTheirResults) {
  const config::Sweep sweep = three_rows();
  const SeedPlan plan = plan_seeds(sweep, {});
  EXPECT_EQ(plan.runs.size(), 8u);  // 4 rows x 2 seeds
  EXPECT_FALSE(plan.settled);
  EXPECT_EQ(decisions(plan)["far"],
            "2 seeds: waiting until every row has seeds 1-2 (8 run(s) to go)");
  // A row with both seeds still waits for the others: 8 runs minus the 3 that finished.
  const SeedPlan partial =
      plan_seeds(sweep, {{"base.seed1", 100.0}, {"base.seed2", 101.0}, {"far.seed1", 130.0}});
  EXPECT_FALSE(partial.settled);
  EXPECT_EQ(decisions(partial)["same"],
            "2 seeds: waiting until every row has seeds 1-2 (5 run(s) to go)");
}

TEST(PlanSeeds, TheResolvedRuleAlsoStopsARowWhoseIntervalExcludesZero) {
  const config::Sweep sweep = three_rows(config::SeedRule::resolved);
  std::map<std::string, double> results = {
      {"base.seed1", 100.0}, {"base.seed2", 101.0}, {"far.seed1", 130.0},  {"far.seed2", 131.0},
      {"same.seed1", 100.4}, {"same.seed2", 100.6}, {"noisy.seed1", 90.0}, {"noisy.seed2", 115.0}};
  SeedPlan plan = plan_seeds(sweep, results);
  auto d = decisions(plan);
  // far: [+28.6, +31.4] or so, excludes 0. same: difference 0, interval about +-5.4, which is
  // wider than 2% of 100.5 = 2.01 on each side, so it is NOT resolved at two seeds.
  EXPECT_EQ(d["far"].rfind("2 seeds: resolved, a difference", 0), 0u) << d["far"];
  EXPECT_EQ(d["noisy"].rfind("3 seeds: unresolved at 2 seeds", 0), 0u) << d["noisy"];
  EXPECT_EQ(d["same"].rfind("3 seeds: unresolved at 2 seeds", 0), 0u) << d["same"];
  EXPECT_EQ(d["base"], "3 seeds: the base row");
  EXPECT_EQ(plan.runs.size(), 3u + 2u + 3u + 3u);  // base, far, same, noisy
  EXPECT_FALSE(plan.settled);

  // Round 3: same has an interval of +-1.2 (narrower than +-2.01: resolved without a difference);
  // noisy stays wide and goes on to the maximum.
  results.insert({{"base.seed3", 100.5}, {"same.seed3", 100.5}, {"noisy.seed3", 100.0}});
  plan = plan_seeds(sweep, results);
  d = decisions(plan);
  EXPECT_EQ(d["same"].rfind("3 seeds: resolved, narrower than +-2.01 (2% of base)", 0), 0u)
      << d["same"];
  EXPECT_EQ(d["noisy"], "4 seeds: unresolved at the maximum of 4 seeds");
  EXPECT_EQ(d["base"], "4 seeds: the base row");
  EXPECT_TRUE(plan.settled);
  EXPECT_EQ(plan.runs.size(), 4u + 2u + 3u + 4u);  // base, far, same, noisy
  // The declared runs keep the sweep's order.
  EXPECT_EQ(plan.runs.front()->name, "base.seed1");
  EXPECT_EQ(plan.runs.back()->name, "noisy.seed4");
}

TEST(PlanSeeds, TheSequentialRuleTakesEveryIntervalAtTheAlphaLeftPerLook) {
  // min 2, max 4: three looks, each at 1 - 0.05 / 3 = 98.33%. far: 104, 105 against base's 100,
  // 101: difference +4, se = sqrt(0.5/2 + 0.5/2) = 0.707, df 2. At 95% (t = 4.303) the interval
  // [+0.96, +7.04] excludes 0 (the resolved rule stops here); at 98.33% (scipy: t.ppf(1 - 0.05/6,
  // 2) = 7.6488) it is [-1.41, +9.41]: another seed.
  const config::Sweep sweep = three_rows();
  std::map<std::string, double> results = {
      {"base.seed1", 100.0}, {"base.seed2", 101.0}, {"far.seed1", 104.0},  {"far.seed2", 105.0},
      {"same.seed1", 100.4}, {"same.seed2", 100.6}, {"noisy.seed1", 90.0}, {"noisy.seed2", 115.0}};
  SeedPlan plan = plan_seeds(sweep, results);
  auto d = decisions(plan);
  EXPECT_EQ(d["far"].rfind("3 seeds: unresolved at 2 seeds: interval [-1.41, +9.41] wider than "
                           "+-2.01 (2% of base); waiting",
                           0),
            0u)
      << d["far"];
  EXPECT_EQ(d["base"], "3 seeds: the base row");
  config::Sweep resolved = three_rows(config::SeedRule::resolved);
  EXPECT_EQ(decisions(plan_seeds(resolved, results))["far"],
            "2 seeds: resolved, a difference: interval [+0.958, +7.04] excludes 0 at 95% "
            "confidence");
  // Round 3: far 104, 105, 104.5 against 100, 101, 100.5: se = sqrt(0.25/3 x 2) = 0.408, df 4,
  // t.ppf(1 - 0.05/6, 4) = 3.9608: [+2.38, +5.62] excludes 0 at the spent confidence.
  results.insert(
      {{"base.seed3", 100.5}, {"far.seed3", 104.5}, {"same.seed3", 100.5}, {"noisy.seed3", 100.0}});
  plan = plan_seeds(sweep, results);
  d = decisions(plan);
  EXPECT_EQ(d["far"],
            "3 seeds: resolved, a difference: interval [+2.38, +5.62] excludes 0 at "
            "98.33% confidence");
  EXPECT_EQ(d["noisy"], "4 seeds: unresolved at the maximum of 4 seeds");
}

TEST(PlanSeeds, TheBaseRowIsTheOneNamedBaseWhereverItStands) {
  config::Sweep sweep = three_rows();
  std::rotate(sweep.runs.begin(), sweep.runs.begin() + 4, sweep.runs.end());
  EXPECT_EQ(base_row(sweep), "base");
}

}  // namespace
}  // namespace attnlab::cluster
