// What is left of a sweep: how long its runs are expected to train (for the launcher's ETA and
// `attnlab plan`), the run time left (`attnlab status`), and the order to launch runs in.
//
// train.steps is only a cap when a stop rule (train.stop.patience, train.max_epochs) may end a run
// sooner, and in a sweep trained to a plateau it ends most runs well before the cap, so the cap
// would overstate what is left several times over. The estimate learns the length from the
// sweep's completed runs instead:
//   - a run without a stop rule trains to its cap;
//   - else it trains as long as the completed runs of its row did (the mean of their last steps);
//   - else, when its row has none, its cap x the mean fraction of their caps at which the sweep's
//     completed runs with stop rules ended;
//   - else (nothing completed yet) its cap.
// A run that has trained past its expected length is expected to stop at once: how much longer it
// goes, nothing here can tell.
#pragma once

#include <string>
#include <vector>

#include "core/cluster/run_progress.h"
#include "core/config/sweep.h"

namespace attnlab::cluster {

struct ExpectedLength {
  enum class Source { kCap, kRow, kSweep };
  double steps = 0.0;  // expected
  double cap = 0.0;    // train.steps
  Source source = Source::kCap;
};

// One estimate per run of `sweep`, in its order; `progress` holds each run's progress in the same
// order (completed runs' `step` is where they ended).
std::vector<ExpectedLength> expected_lengths(const config::Sweep& sweep,
                                             const std::vector<RunProgress>& progress);

// "12 run(s) as long as their row's completed runs, 2 run(s) at 0.52 of their cap, as the sweep's
// completed runs, 1 run(s) to their cap (train.steps)" over the runs at `indices` (none: "").
std::string describe_lengths(const std::vector<ExpectedLength>& lengths,
                             const std::vector<size_t>& indices);

// The order to launch runs in. Seed by seed (every row's first seed before any row's second), so
// a sweep stopped or still running halfway already has one run of every row for the table. Within
// a seed, runs stopped part-way resume first (their results come soonest, and their checkpoints
// stop travelling between machines), then the runs with the most expected work start first
// (longest processing time first): a seed's last runs are its short ones, so fewer cores idle
// while its longest run finishes, which matters most where the next seeds wait for this one's
// results (adaptive seeds). Ties keep the given order.
struct LaunchCandidate {
  size_t seed_rank = 0;  // the seed's position among the sweep's seeds
  bool started = false;  // stopped part-way: it resumes
  double work = 0.0;     // expected training work (any unit shared by all candidates)
};
// Indices into `candidates`, in launch order.
std::vector<size_t> launch_order(const std::vector<LaunchCandidate>& candidates);

// Run time left, as the sweep's completed runs measured it (/summary train_seconds, which counts
// every launch of a resumed run): a run that is not complete takes the mean time of its row's
// completed runs, less the part of their mean length (in steps) it has already trained. A run
// whose row has no completed run that records its training time is only counted.
struct TimeLeft {
  double seconds = 0.0;
  int64_t estimated = 0;    // runs not complete whose time is in `seconds`
  int64_t unestimated = 0;  // runs not complete in rows without a completed run
};
// `runs`: each run's row and progress.
TimeLeft time_left(const std::vector<std::pair<std::string, RunProgress>>& runs);

}  // namespace attnlab::cluster
