"""Statistics of the tables: mean +- std over seeds, Welch's t-test and interval, the exact
permutation test, multiplicity adjustment (Holm, Benjamini-Hochberg), equivalence by TOST, the
paired bootstrap over test sentences (Koehn 2004) and Kendall's tau for trend checks against the
paper. Every test is scipy's or statsmodels'."""

import dataclasses
import math

import numpy as np
from scipy import stats as scipy_stats
from statsmodels.stats import multitest, weightstats


@dataclasses.dataclass
class Summary:
    mean: float
    std: float  # sample standard deviation (ddof 1); nan for fewer than two values
    n: int


def summarize(values):
    """Mean, sample std and count of the finite values."""
    values = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if values.size == 0:
        return Summary(math.nan, math.nan, 0)
    std = float(values.std(ddof=1)) if values.size > 1 else math.nan
    return Summary(float(values.mean()), std, int(values.size))


def _two_sided(a, b):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    return a, b, a.size >= 2 and b.size >= 2


def welch_t_test(a, b):
    """Two-sided Welch's t-test (unequal variances) of mean(a) vs mean(b), by
    scipy.stats.ttest_ind(equal_var=False). Returns (t, p); both nan when either side has fewer
    than two values or both have zero variance."""
    a, b, testable = _two_sided(a, b)
    if not testable or a.var(ddof=1) + b.var(ddof=1) == 0:
        return math.nan, math.nan
    result = scipy_stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.pvalue)


def welch_interval(a, b, confidence=0.95):
    """Welch's two-sided interval on mean(a) - mean(b) (statsmodels' CompareMeans with unequal
    variances; the one core/cluster/adaptive_seeds.cpp decides seeds with): (low, high), nan when
    either side has fewer than two values, the difference itself when both have zero variance."""
    a, b, testable = _two_sided(a, b)
    if not testable:
        return math.nan, math.nan
    if a.var(ddof=1) + b.var(ddof=1) == 0:
        difference = float(a.mean() - b.mean())
        return difference, difference
    compare = weightstats.CompareMeans(weightstats.DescrStatsW(a), weightstats.DescrStatsW(b))
    low, high = compare.tconfint_diff(alpha=1.0 - confidence, usevar="unequal")
    return float(low), float(high)


def _absolute_mean_difference(a, b, axis):
    return np.abs(np.mean(a, axis=axis) - np.mean(b, axis=axis))


def permutation_p(a, b):
    """Exact two-sided permutation test of mean(a) vs mean(b) on the values themselves (no
    normality assumed): the fraction of the C(na + nb, na) splits of the pooled values into
    groups of na and nb whose |mean difference| is at least the observed one
    (scipy.stats.permutation_test over every split). nan when a side has fewer than two values
    (scipy's requirement)."""
    a, b, testable = _two_sided(a, b)
    if not testable:
        return math.nan
    result = scipy_stats.permutation_test((a, b), _absolute_mean_difference,
                                          permutation_type="independent", vectorized=True,
                                          n_resamples=np.inf, alternative="greater")
    return float(result.pvalue)


def smallest_permutation_p(na, nb):
    """The smallest p permutation_p can give for na against nb distinct values: the observed
    split alone in C(na + nb, na) (every value of one side beyond every value of the other), or
    with its mirror image when na == nb (swapping the two groups keeps |mean difference|)."""
    return (2.0 if na == nb else 1.0) / math.comb(na + nb, na)


MULTIPLICITY = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def adjust(pvalues, method="holm"):
    """p-values adjusted for multiplicity over one family of comparisons by
    statsmodels.stats.multitest.multipletests (method holm: family-wise error; bh: false
    discovery rate, 'fdr_bh'). NaN entries (comparisons not made) stay NaN and are not counted
    in the family."""
    if method not in MULTIPLICITY:
        raise ValueError(f"multiplicity must be one of {', '.join(MULTIPLICITY)}, not {method!r}")
    pvalues = np.asarray(pvalues, dtype=float)
    adjusted = np.full(pvalues.shape, math.nan)
    tested = np.isfinite(pvalues)
    if tested.any():
        adjusted[tested] = multitest.multipletests(
            pvalues[tested], method={"holm": "holm", "bh": "fdr_bh"}[method])[1]
    return adjusted


def equivalence_p(a, b, margin):
    """Two one-sided Welch tests (TOST, statsmodels ttost_ind with unequal variances) that
    mean(a) - mean(b) lies inside (-margin, +margin): small p = equivalent within the margin.
    nan when a side has fewer than two values or both have zero variance."""
    a, b, testable = _two_sided(a, b)
    if not testable or a.var(ddof=1) + b.var(ddof=1) == 0:
        return math.nan
    return float(weightstats.ttost_ind(a, b, -margin, margin, usevar="unequal")[0])


def paired_bootstrap(stats_a, stats_b, metric, samples=1000, seed=12345):
    """Paired bootstrap resampling over sentences (Koehn 2004).

    It resamples the test set only: it says whether these trained models differ on sentences
    like these, not whether their configurations do (two seeds of one configuration can differ
    at p < 0.001), which is why the report's table tests across seeds instead.

    stats_a, stats_b: lists of (sentences, k) per-sentence statistics, one array per seed of
    system A and of system B (paired by position; every array has the same sentences). metric:
    summed statistics (k,) -> score. Each sample draws the sentence indices once with replacement
    and scores every system on it; the statistic is mean(B scores) - mean(A scores).

    Returns (observed delta, p): p is the two-sided fraction of samples whose delta does not
    have the observed sign, 2 * min(P(delta <= 0), P(delta >= 0)), at most 1.
    """
    stats_a = [np.asarray(s) for s in stats_a]
    stats_b = [np.asarray(s) for s in stats_b]
    if not stats_a or not stats_b:
        raise ValueError("paired_bootstrap needs statistics of both systems")
    sentences = stats_a[0].shape[0]
    for s in stats_a + stats_b:
        if s.shape[0] != sentences:
            raise ValueError(f"paired bootstrap over different test sets: {s.shape[0]} vs "
                             f"{sentences} sentences")
    if sentences == 0:
        raise ValueError("paired bootstrap over an empty test set")

    def delta(indices):
        score_b = np.mean([metric(s[indices].sum(axis=0)) for s in stats_b])
        score_a = np.mean([metric(s[indices].sum(axis=0)) for s in stats_a])
        return score_b - score_a

    observed = delta(np.arange(sentences))
    generator = np.random.default_rng(seed)
    deltas = np.array([delta(generator.integers(0, sentences, sentences))
                       for _ in range(samples)])
    p = 2.0 * min(np.mean(deltas <= 0), np.mean(deltas >= 0))
    return float(observed), float(min(1.0, p))


def kendall_tau(ours, paper):
    """Kendall's tau-b between two orderings of the same items (nan for fewer than 2 items or
    a constant side)."""
    ours = np.asarray(ours, dtype=float)
    paper = np.asarray(paper, dtype=float)
    if ours.size < 2 or len(set(ours)) < 2 or len(set(paper)) < 2:
        return math.nan
    return float(scipy_stats.kendalltau(ours, paper)[0])


def significance_mark(p):
    if p is None or not np.isfinite(p):
        return ""
    if p < 0.01:
        return "**"
    if p < 0.05:
        return "*"
    return ""
