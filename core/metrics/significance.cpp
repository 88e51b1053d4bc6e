// Paired bootstrap resampling and approximate randomization over per-segment statistics.
#include "core/metrics/significance.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/metrics/numpy_generator.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

NumpyGenerator make_generator(const std::optional<uint64_t>& seed) {
  if (seed) return NumpyGenerator(*seed);
  // numpy's default_rng(None): a SeedSequence over 128 bits of operating-system entropy.
  std::random_device device;
  return NumpyGenerator(std::vector<uint32_t>{device(), device(), device(), device()});
}

// sacreBLEU's _compute_p_value: (#{statistic > actual} + 1) / (n + 1); "!=" would count a system
// compared with itself as a chance difference.
double p_value(int64_t exceeding, int64_t samples) {
  return static_cast<double>(exceeding + 1) / static_cast<double>(samples + 1);
}

std::vector<PairedResult> bootstrap(const std::vector<SegmentStats>& systems,
                                    const ScoreOfTotals& score, int64_t samples,
                                    NumpyGenerator& generator) {
  const size_t segments = systems[0].segments();
  const size_t width = systems[0].width;
  // resampled[k][s]: system k's score on resample s. Every system sees the same resamples, drawn
  // as numpy's choice(segments, size=(samples, segments)) fills its array, row after row.
  std::vector<std::vector<double>> resampled(systems.size(), std::vector<double>(samples));
  std::vector<uint32_t> picks(segments);
  std::vector<int64_t> totals(width);
  for (int64_t s = 0; s < samples; ++s) {
    for (uint32_t& pick : picks) pick = generator.below(static_cast<uint32_t>(segments));
    for (size_t k = 0; k < systems.size(); ++k) {
      std::fill(totals.begin(), totals.end(), 0);
      for (const uint32_t i : picks) {
        const int64_t* row = systems[k].counts.data() + i * width;
        for (size_t c = 0; c < width; ++c) totals[c] += row[c];
      }
      resampled[k][s] = score(totals);
    }
  }
  std::vector<PairedResult> results(systems.size());
  for (size_t k = 0; k < systems.size(); ++k) {
    results[k].score = score(systems[k].totals());
    const MeanAndInterval interval = estimate_ci(resampled[k]);
    results[k].mean = interval.mean;
    results[k].ci = interval.ci;
  }
  for (size_t k = 1; k < systems.size(); ++k) {
    const double actual = std::fabs(results[0].score - results[k].score);
    std::vector<double> deltas(samples);
    double delta_sum = 0.0;
    for (int64_t s = 0; s < samples; ++s) {
      deltas[s] = std::fabs(resampled[k][s] - resampled[0][s]);
      delta_sum += deltas[s];
    }
    // The deltas centred on their mean: their spread under "no difference".
    const double delta_mean = delta_sum / static_cast<double>(samples);
    int64_t exceeding = 0;
    for (const double delta : deltas) exceeding += delta - delta_mean > actual;
    results[k].p_value = p_value(exceeding, samples);
  }
  return results;
}

std::vector<PairedResult> approximate_randomization(const std::vector<SegmentStats>& systems,
                                                    const ScoreOfTotals& score, int64_t trials,
                                                    NumpyGenerator& generator) {
  const size_t segments = systems[0].segments();
  const size_t width = systems[0].width;
  const std::vector<int64_t> baseline_totals = systems[0].totals();
  std::vector<PairedResult> results(systems.size());
  results[0].score = score(baseline_totals);
  // A trial gives the baseline's statistics of the swapped segments to pseudo-system a and the
  // system's to b: a = sys + sum_swapped (base - sys), b = base - sum_swapped (base - sys).
  // Segments on which both agree change nothing, so only the others are summed.
  struct Difference {
    size_t segment;
    std::vector<int64_t> base_minus_system;
  };
  std::vector<std::vector<Difference>> differences(systems.size());
  std::vector<std::vector<int64_t>> system_totals(systems.size());
  std::vector<double> actual(systems.size());
  std::vector<int64_t> exceeding(systems.size(), 0);
  for (size_t k = 1; k < systems.size(); ++k) {
    system_totals[k] = systems[k].totals();
    results[k].score = score(system_totals[k]);
    actual[k] = std::fabs(results[0].score - results[k].score);
    for (size_t i = 0; i < segments; ++i) {
      std::vector<int64_t> difference(width);
      bool any = false;
      for (size_t c = 0; c < width; ++c) {
        difference[c] = systems[0].counts[i * width + c] - systems[k].counts[i * width + c];
        any = any || difference[c] != 0;
      }
      if (any) differences[k].push_back({i, std::move(difference)});
    }
  }
  // swapped: numpy's integers(2, size=(trials, segments), dtype=bool), row after row.
  std::vector<char> swapped(segments);
  std::vector<int64_t> moved(width);
  std::vector<int64_t> a(width);
  std::vector<int64_t> b(width);
  for (int64_t t = 0; t < trials; ++t) {
    for (char& swap : swapped) swap = generator.next_bool() ? 1 : 0;
    for (size_t k = 1; k < systems.size(); ++k) {
      std::fill(moved.begin(), moved.end(), 0);
      for (const Difference& d : differences[k]) {
        if (!swapped[d.segment]) continue;
        for (size_t c = 0; c < width; ++c) moved[c] += d.base_minus_system[c];
      }
      for (size_t c = 0; c < width; ++c) {
        a[c] = system_totals[k][c] + moved[c];
        b[c] = baseline_totals[c] - moved[c];
      }
      exceeding[k] += std::fabs(score(a) - score(b)) > actual[k];
    }
  }
  for (size_t k = 1; k < systems.size(); ++k) results[k].p_value = p_value(exceeding[k], trials);
  return results;
}

}  // namespace

void SegmentStats::append(const std::vector<int64_t>& row) {
  CHECK(row.size() == width) << "a segment of " << row.size() << " counts, expected " << width;
  counts.insert(counts.end(), row.begin(), row.end());
}

std::vector<int64_t> SegmentStats::totals() const {
  std::vector<int64_t> sums(width, 0);
  for (size_t i = 0; i < counts.size(); ++i) sums[i % width] += counts[i];
  return sums;
}

int64_t default_samples(PairedTest test) { return test == PairedTest::kBootstrap ? 1000 : 10000; }

int64_t samples_of(const PairedTestOptions& options) {
  return options.samples > 0 ? options.samples : default_samples(options.test);
}

MeanAndInterval estimate_ci(std::vector<double> scores) {
  CHECK(!scores.empty()) << "an interval of no scores";
  std::sort(scores.begin(), scores.end());
  const size_t lower = scores.size() / 40;
  const size_t upper = scores.size() - lower - 1;
  double sum = 0.0;
  for (const double score : scores) sum += score;
  return {sum / static_cast<double>(scores.size()), 0.5 * (scores[upper] - scores[lower])};
}

std::vector<PairedResult> paired_test(const std::vector<SegmentStats>& systems,
                                      const ScoreOfTotals& score,
                                      const PairedTestOptions& options) {
  CHECK(systems.size() >= 2) << "a paired test needs a baseline and at least one system";
  const size_t segments = systems[0].segments();
  CHECK(segments > 0) << "a paired test needs at least one segment";
  CHECK(segments < UINT32_MAX) << segments << " segments are more than a paired test draws from";
  for (const SegmentStats& system : systems) {
    CHECK(system.width == systems[0].width && system.segments() == segments)
        << "paired systems must have the same segments and statistics";
  }
  CHECK(options.samples >= 0) << "a paired test with " << options.samples << " samples";
  NumpyGenerator generator = make_generator(options.seed);
  const int64_t samples = samples_of(options);
  return options.test == PairedTest::kBootstrap
             ? bootstrap(systems, score, samples, generator)
             : approximate_randomization(systems, score, samples, generator);
}

std::string paired_test_fields(const PairedTestOptions& options) {
  const std::string test = options.test == PairedTest::kBootstrap ? "bs:" : "ar:";
  return test + std::to_string(samples_of(options)) +
         "|seed:" + (options.seed ? std::to_string(*options.seed) : std::string("none")) + "|";
}

}  // namespace attnlab
