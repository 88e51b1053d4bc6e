#include "core/cluster/adaptive_seeds.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "core/util/check.h"

namespace attnlab::cluster {
namespace {

double mean(const std::vector<double>& x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

double sample_variance(const std::vector<double>& x) {
  const double m = mean(x);
  double sum = 0.0;
  for (double v : x) sum += (v - m) * (v - m);
  return sum / static_cast<double>(x.size() - 1);
}

std::string format(const char* pattern, double a, double b) {
  char text[96];
  std::snprintf(text, sizeof(text), pattern, a, b);
  return text;
}

struct RowRuns {
  std::string row;
  std::vector<const config::SweepRun*> by_seed;  // seeds in the sweep's order (1..max)
};

}  // namespace

std::string base_row(const config::Sweep& sweep) {
  CHECK(!sweep.runs.empty()) << "sweep " << sweep.name << " has no runs";
  auto lower = [](std::string text) {
    for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return text;
  };
  for (const config::SweepRun& run : sweep.runs) {
    if (lower(run.group) == "base" || lower(run.row) == "base") return run.row;
  }
  for (const config::SweepRun& run : sweep.runs) {
    if (run.overrides.empty()) return run.row;
  }
  return sweep.runs.front().row;
}

Interval welch_interval(const std::vector<double>& a, const std::vector<double>& b,
                        double confidence) {
  CHECK(a.size() >= 2 && b.size() >= 2) << "Welch's interval needs two values on each side";
  const double difference = mean(a) - mean(b);
  const double va = sample_variance(a) / static_cast<double>(a.size());
  const double vb = sample_variance(b) / static_cast<double>(b.size());
  const double se = std::sqrt(va + vb);
  if (se == 0.0) return {difference, difference};
  // Welch-Satterthwaite degrees of freedom.
  const double df =
      (va + vb) * (va + vb) /
      (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  const boost::math::students_t t(df);
  const double q = boost::math::quantile(boost::math::complement(t, (1.0 - confidence) / 2.0));
  return {difference - q * se, difference + q * se};
}

SeedPlan plan_seeds(const config::Sweep& sweep, const std::map<std::string, double>& results) {
  CHECK(sweep.adaptive.has_value()) << "sweep " << sweep.name << " has no adaptive seeds";
  const config::AdaptiveSeeds& rule = *sweep.adaptive;
  std::vector<RowRuns> rows;
  for (const config::SweepRun& run : sweep.runs) {
    auto it =
        std::find_if(rows.begin(), rows.end(), [&](const RowRuns& r) { return r.row == run.row; });
    if (it == rows.end()) it = rows.insert(rows.end(), RowRuns{run.row, {}});
    it->by_seed.push_back(&run);
  }
  const std::string base = base_row(sweep);
  const auto base_it =
      std::find_if(rows.begin(), rows.end(), [&](const RowRuns& r) { return r.row == base; });
  // Results of the first k seeds of a row, or fewer when some are missing.
  auto first = [&](const RowRuns& r, int64_t k) {
    std::vector<double> values;
    for (int64_t s = 0; s < k; ++s) {
      const auto found = results.find(r.by_seed[static_cast<size_t>(s)]->id);
      if (found == results.end()) break;
      values.push_back(found->second);
    }
    return values;
  };

  std::map<std::string, int64_t> seeds;
  std::map<std::string, std::string> why;
  std::vector<const RowRuns*> open;
  for (const RowRuns& r : rows) {
    seeds[r.row] = rule.min;
    if (r.row != base) open.push_back(&r);
  }
  bool settled = true;
  for (int64_t k = rule.min; k < rule.max && !open.empty(); ++k) {
    const std::vector<double> base_values = first(*base_it, k);
    bool complete = static_cast<int64_t>(base_values.size()) == k;
    for (const RowRuns* r : open) {
      complete = complete && static_cast<int64_t>(first(*r, k).size()) == k;
    }
    if (!complete) {
      // Rows are decided together, on the same base seeds, so that the plan depends on the
      // results alone and not on the order in which runs finished.
      settled = false;
      size_t to_go = static_cast<size_t>(k) - base_values.size();
      for (const RowRuns* r : open) to_go += static_cast<size_t>(k) - first(*r, k).size();
      for (const RowRuns* r : open) {
        std::string& text = why[r->row];
        text += (text.empty() ? "" : "; ") + std::string("waiting until every row has seeds 1-") +
                std::to_string(k) + " (" + std::to_string(to_go) + " run(s) to go)";
      }
      break;
    }
    const double margin = rule.effect * std::fabs(mean(base_values));
    // Sequential: alpha spent evenly over the max - min + 1 looks (see the header).
    const double looks = static_cast<double>(rule.max - rule.min + 1);
    const double confidence = rule.until == config::SeedRule::sequential
                                  ? 1.0 - (1.0 - rule.confidence) / looks
                                  : rule.confidence;
    std::vector<const RowRuns*> still_open;
    for (const RowRuns* r : open) {
      const Interval ci = welch_interval(first(*r, k), base_values, confidence);
      const std::string interval = format("interval [%+.3g, %+.3g]", ci.low, ci.high);
      const std::string at_confidence = format(" at %.4g%% confidence", 100.0 * confidence, 0.0);
      const std::string width = format("+-%.3g (%.3g%% of base)", margin, 100.0 * rule.effect);
      std::string& text = why[r->row];
      if (ci.low > 0.0 || ci.high < 0.0) {
        text = "resolved, a difference: ";
        text.append(interval).append(" excludes 0").append(at_confidence);
      } else if (ci.high - ci.low < 2.0 * margin) {
        text = "resolved, narrower than ";
        text.append(width).append(": ").append(interval);
      } else {
        text = "unresolved at " + std::to_string(k);
        text.append(" seeds: ").append(interval).append(" wider than ").append(width);
        seeds[r->row] = k + 1;
        still_open.push_back(r);
      }
    }
    if (!still_open.empty()) seeds[base] = k + 1;
    open = still_open;
  }
  if (settled) {
    for (const RowRuns* r : open) {
      why[r->row] = "unresolved at the maximum of " + std::to_string(rule.max) + " seeds";
    }
  }
  SeedPlan plan;
  plan.settled = settled;
  for (const RowRuns& r : rows) {
    if (r.row == base) {
      plan.decisions.emplace_back(r.row, std::to_string(seeds[r.row]) + " seeds: the base row");
    } else {
      plan.decisions.emplace_back(r.row, std::to_string(seeds[r.row]) + " seeds: " + why[r.row]);
    }
  }
  for (const config::SweepRun& run : sweep.runs) {
    const auto& row =
        *std::find_if(rows.begin(), rows.end(), [&](const RowRuns& r) { return r.row == run.row; });
    const auto position = std::find(row.by_seed.begin(), row.by_seed.end(), &run);
    if (position - row.by_seed.begin() < seeds[run.row]) plan.runs.push_back(&run);
  }
  return plan;
}

}  // namespace attnlab::cluster
