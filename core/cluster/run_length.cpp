#include "core/cluster/run_length.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/util/check.h"

namespace attnlab::cluster {
namespace {

// What a row's completed runs trained: their last steps and, of those that record it, their
// training time.
struct RowTotals {
  double steps = 0.0;
  int64_t runs = 0;
  double seconds = 0.0;
  int64_t timed = 0;
};

// Adds `progress` to its row's totals when the run completed.
void add_completed(std::map<std::string, RowTotals>& totals, const std::string& row,
                   const RunProgress& progress) {
  if (progress.state != RunState::kCompleted || progress.step <= 0) return;
  RowTotals& total = totals[row];
  total.steps += static_cast<double>(progress.step);
  ++total.runs;
  if (progress.train_seconds) {
    total.seconds += *progress.train_seconds;
    ++total.timed;
  }
}

}  // namespace

std::vector<ExpectedLength> expected_lengths(const config::Sweep& sweep,
                                             const std::vector<RunProgress>& progress) {
  CHECK(progress.size() == sweep.runs.size()) << "one progress per run of the sweep";
  // Per row: the sum and count of the completed runs' last steps; over the sweep: of the
  // fractions of their caps, for the runs that had a stop rule.
  std::map<std::string, RowTotals> row_steps;
  double fraction_sum = 0.0;
  int64_t fraction_count = 0;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    if (progress[i].state != RunState::kCompleted || progress[i].step <= 0) continue;
    if (!run.config.train.may_stop_sooner()) continue;
    add_completed(row_steps, run.row, progress[i]);
    if (run.config.train.steps > 0) {
      fraction_sum +=
          static_cast<double>(progress[i].step) / static_cast<double>(run.config.train.steps);
      ++fraction_count;
    }
  }
  std::vector<ExpectedLength> lengths;
  for (const config::SweepRun& run : sweep.runs) {
    ExpectedLength length;
    length.cap = static_cast<double>(run.config.train.steps);
    length.steps = length.cap;
    if (run.config.train.may_stop_sooner()) {
      const auto row = row_steps.find(run.row);
      if (row != row_steps.end()) {
        length.steps = row->second.steps / static_cast<double>(row->second.runs);
        length.source = ExpectedLength::Source::kRow;
      } else if (fraction_count > 0) {
        length.steps = length.cap * fraction_sum / static_cast<double>(fraction_count);
        length.source = ExpectedLength::Source::kSweep;
      }
    }
    lengths.push_back(length);
  }
  return lengths;
}

std::string describe_lengths(const std::vector<ExpectedLength>& lengths,
                             const std::vector<size_t>& indices) {
  int64_t from_row = 0, from_sweep = 0, at_cap = 0;
  double sweep_fraction = 0.0;
  for (const size_t index : indices) {
    const ExpectedLength& length = lengths.at(index);
    switch (length.source) {
      case ExpectedLength::Source::kRow: ++from_row; break;
      case ExpectedLength::Source::kSweep:
        ++from_sweep;
        sweep_fraction = length.cap > 0 ? length.steps / length.cap : 0.0;
        break;
      case ExpectedLength::Source::kCap: ++at_cap; break;
    }
  }
  std::string text;
  auto add = [&](int64_t count, const std::string& what) {
    if (count == 0) return;
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " run(s) " + what;
  };
  add(from_row, "as long as their row's completed runs");
  char fraction[32];
  std::snprintf(fraction, sizeof(fraction), "%.2f", sweep_fraction);
  add(from_sweep, std::string("at ") + fraction + " of their cap, as the sweep's completed runs");
  add(at_cap, "to their cap (train.steps)");
  return text;
}

std::vector<size_t> launch_order(const std::vector<LaunchCandidate>& candidates) {
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const LaunchCandidate& x = candidates[a];
    const LaunchCandidate& y = candidates[b];
    if (x.seed_rank != y.seed_rank) return x.seed_rank < y.seed_rank;
    if (x.started != y.started) return x.started;
    return x.work > y.work;
  });
  return order;
}

TimeLeft time_left(const std::vector<std::pair<std::string, RunProgress>>& runs) {
  std::map<std::string, RowTotals> rows;
  for (const auto& [row, progress] : runs) add_completed(rows, row, progress);
  TimeLeft left;
  for (const auto& [row, progress] : runs) {
    if (progress.state == RunState::kCompleted) continue;
    const auto found = rows.find(row);
    if (found == rows.end() || found->second.timed == 0) {
      ++left.unestimated;
      continue;
    }
    const RowTotals& total = found->second;
    const double done = std::min(
        1.0, static_cast<double>(progress.step) * static_cast<double>(total.runs) / total.steps);
    left.seconds += total.seconds / static_cast<double>(total.timed) * (1.0 - done);
    ++left.estimated;
  }
  return left;
}

}  // namespace attnlab::cluster
