"""analysis statistics and readers against hand-computed values and independent references:
Welch's t-test, mean/std, Kendall tau, the paired bootstrap on a case with a known answer,
BLEU statistics, the flow-YAML reader and the manifest parser."""

import math
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis import bleu, stats  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.runfile import _config_value  # noqa: E402
from analysis.manifest import parse_manifest  # noqa: E402


def test_welch_matches_hand_computed_values_and_scipy():
    a, b = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]
    t, p = stats.welch_t_test(a, b)
    # va/na = 1/3, vb/nb = (5/3)/4 = 5/12; t = -3.5 / sqrt(3/4); df = (3/4)^2 / ((1/3)^2/2 +
    # (5/12)^2/3) = 0.5625 / (1/18 + 25/432).
    df = 0.5625 / (1 / 18 + 25 / 432)
    assert t == pytest.approx(-3.5 / math.sqrt(0.75), rel=1e-12)
    assert p == pytest.approx(2 * scipy_stats.t.sf(3.5 / math.sqrt(0.75), df), rel=1e-9)
    low, high = stats.welch_interval(a, b)
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(0.75)
    assert (low, high) == pytest.approx((-3.5 - half, -3.5 + half), rel=1e-9)


def test_welch_is_undefined_without_two_values_or_any_variance():
    assert all(math.isnan(v) for v in stats.welch_t_test([1.0], [2.0, 3.0]))
    assert all(math.isnan(v) for v in stats.welch_t_test([1.0, 1.0], [2.0, 2.0]))
    assert stats.welch_interval([1.0, 1.0], [2.0, 2.0]) == (-1.0, -1.0)


def test_the_exact_permutation_test_of_2_against_4_seeds_cannot_go_below_one_in_15():
    # C(6, 2) = 15 splits; the observed one (both high values on one side) is the only split as
    # extreme as itself, so p = 1/15, and no data of 2 against 4 seeds gives less.
    assert math.comb(6, 2) == 15
    assert stats.permutation_p([10.0, 11.0], [1.0, 2.0, 3.0, 4.0]) == pytest.approx(1 / 15)
    assert stats.smallest_permutation_p(2, 4) == pytest.approx(1 / 15)
    # 3 against 4: 1/35; 4 against 4: the split and its mirror image, 2/70.
    assert stats.permutation_p([10.0, 11.0, 12.0], [1.0, 2.0, 3.0, 4.0]) == pytest.approx(1 / 35)
    assert stats.permutation_p([10.0, 11.0, 12.0, 13.0], [1.0, 2.0, 3.0, 4.0]) == \
        pytest.approx(2 / 70)
    assert stats.smallest_permutation_p(3, 4) == pytest.approx(1 / 35)
    assert stats.smallest_permutation_p(4, 4) == pytest.approx(2 / 70)
    # Values that interleave: a = {1, 4} vs b = {2, 3, 5, 6}, |mean difference| 1.5. For a pair
    # of sum s out of {1..6} (total 21), |s/2 - (21 - s)/4| >= 1.5 when s <= 5 or s >= 9:
    # (1,2), (1,3), (1,4), (2,3) and (3,6), (4,5), (4,6), (5,6): 8 of the 15 pairs.
    assert stats.permutation_p([1.0, 4.0], [2.0, 3.0, 5.0, 6.0]) == pytest.approx(8 / 15)


def test_holm_and_benjamini_hochberg_match_hand_computed_values():
    p = [0.01, 0.04, 0.03, 0.2, math.nan]
    # Holm over the four tested: sorted 0.01, 0.03, 0.04, 0.2 times 4, 3, 2, 1 -> 0.04, 0.09,
    # 0.08 raised to the running maximum 0.09, 0.2; the untested stays NaN.
    holm = stats.adjust(p, "holm")
    assert list(holm[:4]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert math.isnan(holm[4])
    # BH: p * m / rank, then the running minimum from the top: 0.2*4/4 = 0.2, 0.04*4/3 = 0.0533,
    # 0.03*4/2 = 0.06 -> 0.0533, 0.01*4/1 = 0.04.
    bh = stats.adjust(p, "bh")
    assert list(bh[:4]) == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    with pytest.raises(ValueError):
        stats.adjust(p, "bonferroni")


def test_tost_matches_statsmodels_and_its_known_cases():
    from statsmodels.stats.weightstats import ttost_ind
    a, b = [3.00, 3.01, 2.99, 3.005], [3.002, 2.995, 3.008, 3.0]
    margin = math.log(1.02)
    assert stats.equivalence_p(a, b, margin) == pytest.approx(
        ttost_ind(a, b, -margin, margin, usevar="unequal")[0], rel=1e-12)
    # Means 0.001 apart with spread 0.006: well inside +-0.0198, equivalent.
    assert stats.equivalence_p(a, b, margin) < 0.01
    # The same spread around means 0.1 apart: outside the margin, not equivalent.
    assert stats.equivalence_p([v + 0.1 for v in a], b, margin) > 0.5
    # TOST's p is the larger of the two one-sided Welch p-values (by hand from scipy).
    upper = scipy_stats.ttest_ind(a, [v + margin for v in b], equal_var=False,
                                  alternative="less").pvalue
    lower = scipy_stats.ttest_ind(a, [v - margin for v in b], equal_var=False,
                                  alternative="greater").pvalue
    assert stats.equivalence_p(a, b, margin) == pytest.approx(max(upper, lower), rel=1e-9)


def test_summarize_uses_the_sample_standard_deviation():
    summary = stats.summarize([1.0, 2.0, 4.0, float("nan"), None])
    assert summary.n == 3
    assert summary.mean == pytest.approx(7 / 3)
    assert summary.std == pytest.approx(math.sqrt(7 / 3))  # sum of squares 42/9 over n-1 = 2
    single = stats.summarize([5.0])
    assert single.mean == 5.0 and math.isnan(single.std) and single.n == 1


def test_kendall_tau_counts_concordant_pairs():
    # Pairs (1,2) and (1,3) agree, (2,3) disagree: (2 - 1) / 3.
    assert stats.kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert stats.kendall_tau([4.9, 5.0, 5.3], [10.0, 9.0, 8.0]) == pytest.approx(-1.0)
    assert math.isnan(stats.kendall_tau([1.0], [2.0]))


def mean_metric(total):
    return total[0] / total[1]


def as_stats(values):
    return np.array([[v, 1.0] for v in values])


def test_paired_bootstrap_on_a_case_with_a_known_answer():
    # Two sentences with differences B - A of +1 and -3. Resampling two sentences with
    # replacement gives mean deltas +1 (prob 1/4), -1 (1/2), -3 (1/4): P(delta >= 0) = 1/4,
    # so the two-sided p = 2 * min(3/4, 1/4) = 1/2, and the observed delta is -1.
    delta, p = stats.paired_bootstrap([as_stats([0.0, 0.0])], [as_stats([1.0, -3.0])],
                                      mean_metric, samples=20000, seed=7)
    assert delta == pytest.approx(-1.0)
    assert p == pytest.approx(0.5, abs=0.03)


def test_paired_bootstrap_extremes():
    a = as_stats([0.1, 0.2, 0.3, 0.4])
    better = as_stats([0.5, 0.6, 0.7, 0.8])
    assert stats.paired_bootstrap([a], [better], mean_metric, samples=300)[1] == 0.0
    assert stats.paired_bootstrap([a], [a], mean_metric, samples=300)[1] == 1.0
    with pytest.raises(ValueError, match="different test sets"):
        stats.paired_bootstrap([a], [as_stats([1.0])], mean_metric)


def test_paired_bootstrap_averages_over_paired_seeds():
    # Seed 1 of B gains 1 on every sentence, seed 2 loses 1: the seed-mean delta is 0 in every
    # resample, which has both signs (>= 0 and <= 0), so p = 1.
    a = [as_stats([1.0, 2.0, 3.0]), as_stats([1.0, 2.0, 3.0])]
    b = [as_stats([2.0, 3.0, 4.0]), as_stats([0.0, 1.0, 2.0])]
    delta, p = stats.paired_bootstrap(a, b, mean_metric, samples=200)
    assert delta == pytest.approx(0.0) and p == 1.0


def test_bleu_statistics_by_hand():
    # hyp "the cat sat" vs ref "the cat sat down": unigrams 3/3, bigrams 2/2, trigrams 1/1, no
    # 4-gram in the hypothesis, so BLEU is 0 (a missing order); lengths 3 and 4.
    row = bleu.sentence_stats("the cat sat", "the cat sat down")
    assert list(row) == [3, 4, 3, 2, 1, 0, 3, 2, 1, 0]
    assert bleu.bleu_from_stats(row) == 0.0
    # Identical 4-word segments: every precision 100%, no brevity penalty.
    assert bleu.corpus_bleu(["a b c d"], ["a b c d"]) == pytest.approx(100.0)
    # 13a splits punctuation off words, but not a decimal point between digits.
    assert bleu.tokenize_13a("Hello, world! It costs 3.50.") == \
        ["Hello", ",", "world", "!", "It", "costs", "3.50", "."]


def test_config_attributes_read_as_yaml():
    # /config string attributes are YAML flow text as core/config/options.cpp writes it.
    assert _config_value('{model.heads: 1, norm: pre, tags: [a, "b c"], x: 1.5e-3}') == \
        {"model.heads": 1, "norm": "pre", "tags": ["a", "b c"], "x": 1.5e-3}
    assert _config_value('"0123\\"4\\n"') == '0123"4\n'
    assert _config_value("[]") == [] and _config_value("true") is True
    assert _config_value("{a: 1") == "{a: 1", "text that is not YAML stays text"


MANIFEST = """# attnlab sweep manifest
sweep: heads
source: "experiments/ablations/heads.yaml"
sets: ["train.steps=20"]
runs:
  - id: "012345678901"
    name: h-1.seed1
    group: A
    seed: 1
    overrides: {model.heads: 1}
    paper: {ppl: 5.29, bleu: 24.9}
  - id: abcdefabcdef
    name: h-1.seed2
    group: A
    seed: 2
    overrides: {model.heads: 1}
"""


def test_manifest_parse():
    manifest = parse_manifest(MANIFEST, "m.yaml")
    assert manifest.sweep == "heads" and manifest.sets == ["train.steps=20"]
    assert [r.id for r in manifest.runs] == ["012345678901", "abcdefabcdef"]
    first = manifest.runs[0]
    assert (first.row, first.group, first.seed) == ("h-1", "A", 1)
    assert first.overrides == {"model.heads": 1} and first.paper == {"ppl": 5.29, "bleu": 24.9}
    assert manifest.runs[1].paper == {}


def test_manifest_errors_name_the_line():
    broken = MANIFEST.replace("    seed: 2\n", "    seed: 2\n    colour: red\n")
    with pytest.raises(AnalysisError, match=r"m.yaml: runs\[1\]: unknown run key .colour."):
        parse_manifest(broken, "m.yaml")
    with pytest.raises(AnalysisError, match=r"m.yaml:1[01]:\d+: "):
        parse_manifest(MANIFEST.replace("{model.heads: 1}", "{model.heads: 1", 1), "m.yaml")
    with pytest.raises(AnalysisError, match="listed twice"):
        parse_manifest(MANIFEST.replace("abcdefabcdef", '"012345678901"'), "m.yaml")


def test_the_sentence_bootstrap_separates_two_seeds_of_one_configuration():
    # Why the report tests BLEU across seeds (analysis/README.md, "Significance"): on the
    # committed dev decodings of table3-plateau's base row, the paired bootstrap over sentences
    # calls its two seeds, one configuration, different at p < 0.001.
    references_file = ROOT / "data" / "bible" / "dev.es"
    if not references_file.is_file():
        pytest.skip("data/bible/dev.es is absent (`attnlab data bible --out data/bible` makes it)")
    runs = ROOT / "docs" / "results" / "table3-plateau" / "runs"
    references = references_file.read_text(encoding="utf-8").split("\n")[:-1]
    seeds = []
    for run_id in ("bfa1f731ef87", "14e8bfa5002b"):  # base.seed1, base.seed2 (manifest.yaml)
        hypotheses = (runs / run_id / "hyp.dev.txt").read_text(encoding="utf-8").split("\n")[:-1]
        seeds.append(bleu.corpus_stats(hypotheses, references))
    scores = [round(bleu.bleu_from_stats(s.sum(axis=0)), 2) for s in seeds]
    assert len(references) == seeds[0].shape[0] == 1021
    assert scores == [14.38, 15.61]
    delta, p = stats.paired_bootstrap([seeds[0]], [seeds[1]], bleu.bleu_from_stats,
                                      samples=1000)
    assert delta == pytest.approx(1.22, abs=0.005) and p < 0.001
    readme = (ROOT / "analysis" / "README.md").read_text(encoding="utf-8")
    assert "1,021 sentences" in readme and "(BLEU 14.38)" in readme and "(15.61)" in readme
