#include "core/cluster/run_length.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/util/check.h"

namespace attnlab::cluster {
std::vector<ExpectedLength> expected_lengths(const config::Sweep& sweep,
                                             const std::vector<RunProgress>& progress) {
  CHECK(progress.size() == sweep.runs.size()) << "one progress per run of the sweep";
  // Per row: the sum and count of the completed runs' last steps; over the sweep: of the
  // fractions of their caps, for the runs that had a stop rule.
  std::map<std::string, std::pair<double, int64_t>> row_steps;
  double fraction_sum = 0.0;
  int64_t fraction_count = 0;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    if (progress[i].status != "completed" || progress[i].step <= 0) continue;
    if (!run.config.train.may_stop_sooner()) continue;
    auto& [sum, count] = row_steps[run.row];
    sum += static_cast<double>(progress[i].step);
    ++count;
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
        length.steps = row->second.first / static_cast<double>(row->second.second);
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
  struct RowTime {
    double seconds = 0.0, steps = 0.0;
    int64_t count = 0;
  };
  std::map<std::string, RowTime> rows;
  for (const auto& [row, progress] : runs) {
    if (progress.status != "completed" || !progress.train_seconds || progress.step <= 0) continue;
    RowTime& time = rows[row];
    time.seconds += *progress.train_seconds;
    time.steps += static_cast<double>(progress.step);
    ++time.count;
  }
  TimeLeft left;
  for (const auto& [row, progress] : runs) {
    if (progress.status == "completed") continue;
    const auto found = rows.find(row);
    if (found == rows.end()) {
      ++left.unestimated;
      continue;
    }
    const double count = static_cast<double>(found->second.count);
    const double done =
        std::min(1.0, static_cast<double>(progress.step) * count / found->second.steps);
    left.seconds += found->second.seconds / count * (1.0 - done);
    ++left.estimated;
  }
  return left;
}

}  // namespace attnlab::cluster
