// sacreBLEU 2.x's paired significance tests between systems (sacrebleu/significance.py): paired
// bootstrap resampling (Koehn 2004, as Moses' bootstrap-hypothesis-difference-significance.pl)
// and approximate randomization (Riezler and Maxwell 2005, as MultEval), with sacreBLEU's
// defaults (1000 resamples, 10000 trials, seed 12345) and its random draws: numpy's
// default_rng(seed), drawn in the same order (numpy_generator.h), so that the same seed resamples
// the same segments and gives the same p-values.
//
// Both tests work on per-segment sufficient statistics (integer counts that add up over
// segments) and a metric's score of their sum, so they serve any such metric (BLEU, chrF).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// One system's statistics under one metric: `width` counts per segment, segment after segment.
struct SegmentStats {
  size_t width = 0;
  std::vector<int64_t> counts;  // counts[i * width + k]: count k of segment i
  size_t segments() const { return width == 0 ? 0 : counts.size() / width; }
  void append(const std::vector<int64_t>& row);  // the next segment's counts
  std::vector<int64_t> totals() const;           // summed over segments
};

// A metric's score of statistics summed over (resampled) segments.
using ScoreOfTotals = std::function<double(const std::vector<int64_t>& totals)>;

enum class PairedTest { kBootstrap, kApproximateRandomization };

// sacreBLEU's seed (its SACREBLEU_SEED default).
inline constexpr uint64_t kSacrebleuSeed = 12345;

struct PairedTestOptions {
  PairedTest test = PairedTest::kBootstrap;
  int64_t samples = 0;  // bootstrap resamples or AR trials; 0 = sacreBLEU's default
  // nullopt: fresh entropy from the operating system (sacreBLEU's seed "none").
  std::optional<uint64_t> seed = kSacrebleuSeed;
};

// sacreBLEU's defaults: 1000 bootstrap resamples, 10000 AR trials.
int64_t default_samples(PairedTest test);
// options.samples, or the default when it is 0.
int64_t samples_of(const PairedTestOptions& options);

struct PairedResult {
  double score = 0.0;
  std::optional<double> p_value;  // every system but the baseline
  std::optional<double> mean;     // bootstrap: mean score over the resamples
  std::optional<double> ci;       // bootstrap: half-width of the 95% interval of those scores
};

// Tests every system against systems[0], the baseline (all with the same segments and width):
//   bootstrap: S resamples of the segment indices (with replacement), the same for every system;
//     delta_s = |score_sys(s) - score_base(s)|; p = (#{delta_s - mean(delta) > delta} + 1) /
//     (S + 1), delta the actual absolute difference. Each system (the baseline too) also gets the
//     mean of its S resampled scores and the half-width of their 95% interval (estimate_ci).
//   approximate randomization: T trials that swap each segment's statistics between the two
//     systems with probability 1/2 (the same swaps for every system); p = (#{|score_a(t) -
//     score_b(t)| > delta} + 1) / (T + 1). No interval (sacreBLEU's command line has none).
std::vector<PairedResult> paired_test(const std::vector<SegmentStats>& systems,
                                      const ScoreOfTotals& score, const PairedTestOptions& options);

// sacreBLEU's estimate_ci: the mean of `scores` and half the distance between the sorted scores at
// n / 40 and n - n / 40 - 1 (a 95% interval).
struct MeanAndInterval {
  double mean = 0.0;
  double ci = 0.0;
};
MeanAndInterval estimate_ci(std::vector<double> scores);

// The fields a paired test adds to a metric's signature, as sacreBLEU writes them after nrefs:
// "bs:1000|seed:12345|" or "ar:10000|seed:none|".
std::string paired_test_fields(const PairedTestOptions& options);

}  // namespace attnlab
