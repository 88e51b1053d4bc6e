// Adaptive seeds (sweep.seeds: {min, max, until: resolved}): which seeds of which rows a sweep
// runs, decided from the results of the seeds already run, so a CPU budget goes to the rows whose
// difference from the base row is still unresolved.
//
// The rule, in rounds k = min, min+1, ..., max-1, once every still-open row and the base row have
// results for seeds 1..k: an open row compares its first k results with the base row's first k
// (Welch's interval on the difference of means at the sweep's confidence). It is resolved when
// the interval excludes 0 (a difference), or when it is narrower than `effect` x the base mean on
// each side of 0 (no difference of that size); otherwise it gets seed k+1. The base row gets seed
// k+1 when any row does. A row still open after seed max stops there, unresolved. The decisions
// depend only on the results, and runs are reproducible, so the plan is deterministic and a
// sweep resumes into the same plan.
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
