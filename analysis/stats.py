"""Statistics of the tables: mean +- std over seeds, Welch's t-test, the paired bootstrap over
test sentences (Koehn 2004) and Kendall's tau for trend checks against the paper."""

import dataclasses
import math

import numpy as np
from scipy import stats as scipy_stats


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


def welch_t_test(a, b):
    """Two-sided Welch's t-test (unequal variances) of mean(a) vs mean(b).

    t = (mean_a - mean_b) / sqrt(va/na + vb/nb), with the Welch-Satterthwaite degrees of freedom
    df = (va/na + vb/nb)^2 / ((va/na)^2/(na-1) + (vb/nb)^2/(nb-1)). Returns (t, df, p); all nan
    when either side has fewer than two values or both have zero variance.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan, math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return math.nan, math.nan, math.nan
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    p = 2.0 * scipy_stats.t.sf(abs(t), df)
    return float(t), float(df), float(p)


def welch_interval(a, b, confidence=0.95):
    """Welch's two-sided interval on mean(a) - mean(b) (the one core/cluster/adaptive_seeds.cpp
    decides seeds with): (low, high), nan when either side has fewer than two values."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    difference = a.mean() - b.mean()
    if va + vb == 0:
        return float(difference), float(difference)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = scipy_stats.t.ppf(1.0 - (1.0 - confidence) / 2.0, df) * math.sqrt(va + vb)
    return float(difference - half), float(difference + half)


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
