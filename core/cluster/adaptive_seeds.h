// Adaptive seeds (sweep.seeds: {min, max, until: sequential|resolved}): which seeds of which
// rows a sweep runs, decided from the results of the seeds already run, so a CPU budget goes to
// the rows whose difference from the base row is still unresolved.
//
// The rule, in rounds k = min, min+1, ..., max-1, once every still-open row and the base row have
// results for seeds 1..k: an open row compares its first k results with the base row's first k
// (Welch's interval on the difference of means). It is resolved when the interval excludes 0 (a
// difference) or is narrower than `effect` x the base mean on each side (no difference of that
// size); otherwise it gets seed k+1. The base row gets seed k+1 when any row does. A row still
// open after seed max stops there.
//
// Each round is a look at the data, and a row that stops at the first look that rejects has had
// several chances to reject. With `until: sequential` (the default) the rule spends the sweep's
// alpha = 1 - confidence evenly over the L = max - min + 1 possible looks (Bonferroni alpha
// spending): every interval is taken at confidence 1 - alpha / L, and the report tests a row of
// an adaptive sweep at the same alpha / L (its p-values multiplied by L). The row's false
// positives are then within alpha whatever the stopping: a rejection at the end implies one of
// the L looks rejected at alpha / L. tests/python/test_adaptive_seeds.py takes null rows
// through the whole procedure. `until: resolved` takes the intervals at the nominal confidence
// (a test at full alpha at every look: 5.4-7.7% false positives at a nominal 5% over 2 to 4
// seeds in the same simulation); it remains to reproduce sweeps that were run with it, and the
// report's multiplied p-values keep alpha for those too. The decisions depend only on the
// results, and runs are reproducible, so the plan is deterministic and a sweep resumes into the
// same plan.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/sweep.h"

namespace attnlab::cluster {

struct SeedPlan {
  std::vector<const config::SweepRun*> runs;  // the runs declared so far, in the sweep's order
  // Per row, in the sweep's order: "<n> seeds: <why>".
  std::vector<std::pair<std::string, std::string>> decisions;
  bool settled = false;  // no row waits for a result: the plan will not grow any more
};

// The row every other row is compared with: the row whose group or name is "base", else the
// first row that sets nothing, else the first row (as the report chooses it).
std::string base_row(const config::Sweep& sweep);

// `results`: run id -> the metric of completed runs (final dev perplexity); a run without an
// entry has no result yet. Requires sweep.adaptive.
SeedPlan plan_seeds(const config::Sweep& sweep, const std::map<std::string, double>& results);

// Welch's two-sided interval on mean(a) - mean(b) at `confidence` (each needs >= 2 values).
struct Interval {
  double low = 0.0, high = 0.0;
};
Interval welch_interval(const std::vector<double>& a, const std::vector<double>& b,
                        double confidence);

}  // namespace attnlab::cluster
