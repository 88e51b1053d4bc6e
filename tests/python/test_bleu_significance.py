"""`attnlab bleu --metrics chrf,chrf++` and `--paired-bs` / `--paired-ar` against sacreBLEU 2.x's
own code. Debian 12 has no python3-sacrebleu, so the parts of sacreBLEU these features follow are
copied here (sacrebleu/metrics/chrf.py and helpers.py, compute_bleu of metrics/bleu.py,
sum_of_lists of utils.py, and significance.py's tests) with their arithmetic and draws verbatim;
only logging, the smoothing methods other than 'exp', the seed's environment variable (a
parameter here) and the loop over several metrics are left out, and scores are returned as plain
numbers. They run with Debian's numpy; BLEU's segment statistics come from analysis/bleu.py's
independent 13a tokenizer.

sacreBLEU draws its resamples with numpy's default_rng(seed), and attnlab draws the same numbers
(core/metrics/numpy_generator.h), so the comparison is exact, not within Monte Carlo error: the
same seed resamples the same segments, and every score, count and p-value is equal. The
bootstrap's means and intervals agree to 1e-9 (numpy sums the resampled scores pairwise, attnlab
in order). One difference is by design: sacreBLEU's bootstrap sums resampled chrF statistics in
float32 and numpy 1.x then divides them in float32, so its resampled chrF scores differ from
attnlab's exact ones by ~1e-7 relative: the chrF means and intervals are compared to 1e-5. A
p-value could differ by one count only if a resample landed within that of the threshold; on this
corpus none does, and the chrF p-values are asserted equal as well."""

import json
import math
import random
import sys
from collections import Counter

import numpy as np
import pytest

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis import bleu as analysis_bleu  # noqa: E402

# ---- sacreBLEU 2.x ---------------------------------------------------------------------


def sum_of_lists(lists):
    """Aggregates list of numeric lists by summing."""
    if len(lists) == 1:
        return lists[0]

    # Preserve datatype
    size = len(lists[0])
    init_val = type(lists[0][0])(0.0)
    total = [init_val] * size
    for ll in lists:
        for i in range(size):
            total[i] += ll[i]
    return total


def my_log(num):
    if num == 0.0:
        return -9999999999
    return math.log(num)


def compute_bleu(correct, total, sys_len, ref_len, smooth_method='exp', smooth_value=None,
                 effective_order=False, max_ngram_order=4):
    # Compute brevity penalty
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0

    # n-gram precisions
    precisions = [0.0] * max_ngram_order

    # Early stop if there are no matches (#141)
    if not any(correct):
        return 0.0

    smooth_mteval = 1.
    eff_order = max_ngram_order
    for n in range(1, len(precisions) + 1):
        if total[n - 1] == 0:
            break

        if effective_order:
            eff_order = n

        if correct[n - 1] == 0:
            if smooth_method == 'exp':
                smooth_mteval *= 2
                precisions[n - 1] = 100. / (smooth_mteval * total[n - 1])
        else:
            precisions[n - 1] = 100. * correct[n - 1] / total[n - 1]

    # Compute BLEU score
    score = bp * math.exp(
        sum([my_log(p) for p in precisions[:eff_order]]) / eff_order)

    return score


def extract_word_ngrams(tokens, n):
    return Counter([' '.join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)])


def extract_all_char_ngrams(line, max_order, include_whitespace=False):
    counters = []

    if not include_whitespace:
        line = ''.join(line.split())

    for n in range(1, max_order + 1):
        ngrams = Counter([line[i:i + n] for i in range(len(line) - n + 1)])
        counters.append(ngrams)

    return counters


class CHRF:
    _PUNCTS = set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~')

    def __init__(self, char_order=6, word_order=0, beta=2, lowercase=False, whitespace=False,
                 eps_smoothing=False):
        self.beta = beta
        self.char_order = char_order
        self.word_order = word_order
        self.order = self.char_order + self.word_order
        self.lowercase = lowercase
        self.whitespace = whitespace
        self.eps_smoothing = eps_smoothing

    @staticmethod
    def _get_match_statistics(hyp_ngrams, ref_ngrams):
        # Counter's internal intersection is not that fast, count manually
        match_count, hyp_count = 0, 0
        for ng, count in hyp_ngrams.items():
            hyp_count += count
            if ng in ref_ngrams:
                match_count += min(count, ref_ngrams[ng])

        return [
            # Don't count hits if no reference exists for that n-gram
            hyp_count if ref_ngrams else 0,
            sum(ref_ngrams.values()),
            match_count,
        ]

    def _remove_punctuation(self, sent):
        tokenized = []
        for w in sent.split():
            if len(w) == 1:
                tokenized.append(w)
            else:
                # NOTE: This splits '(hi)' to '(hi' and ')' (issue #124)
                if w[-1] in self._PUNCTS:
                    tokenized += [w[:-1], w[-1]]
                elif w[0] in self._PUNCTS:
                    tokenized += [w[0], w[1:]]
                else:
                    tokenized.append(w)
        return tokenized

    def _preprocess_segment(self, sent):
        return sent.lower() if self.lowercase else sent

    def _compute_f_score(self, statistics):
        eps = 1e-16
        score = 0.0
        effective_order = 0
        factor = self.beta ** 2
        avg_prec, avg_rec = 0.0, 0.0

        for i in range(self.order):
            n_hyp, n_ref, n_match = statistics[3 * i: 3 * i + 3]

            # chrF++.py style EPS smoothing (also used by Moses and NLTK)
            prec = n_match / n_hyp if n_hyp > 0 else eps
            rec = n_match / n_ref if n_ref > 0 else eps

            denom = factor * prec + rec
            score += ((1 + factor) * prec * rec / denom) if denom > 0 else eps

            # sacreBLEU <2.0.0 style effective order smoothing
            if n_hyp > 0 and n_ref > 0:
                avg_prec += prec
                avg_rec += rec
                effective_order += 1

        if self.eps_smoothing:
            return 100 * score / self.order

        if effective_order == 0:
            avg_prec = avg_rec = 0.0
        else:
            avg_prec /= effective_order
            avg_rec /= effective_order

        if avg_prec + avg_rec:
            score = (1 + factor) * avg_prec * avg_rec
            score /= ((factor * avg_prec) + avg_rec)
            return 100 * score
        else:
            return 0.0

    def _extract_reference_info(self, refs):
        ngrams = []

        for ref in refs:
            # extract character n-grams
            stats = extract_all_char_ngrams(ref, self.char_order, self.whitespace)

            # Check chrF+ mode
            if self.word_order > 0:
                ref_words = self._remove_punctuation(ref)

                for n in range(self.word_order):
                    stats.append(extract_word_ngrams(ref_words, n + 1))

            ngrams.append(stats)

        return {'ref_ngrams': ngrams}

    def _compute_segment_statistics(self, hypothesis, ref_kwargs):
        best_stats = []
        best_f_score = -1.0

        # extract character n-grams
        all_hyp_ngrams = extract_all_char_ngrams(
            hypothesis, self.char_order, self.whitespace)

        # Check chrF+ mode to see if we'll add word n-grams as well
        if self.word_order > 0:
            # Primitive tokenization: separate out punctuations
            hwords = self._remove_punctuation(hypothesis)
            _range = range(1, self.word_order + 1)
            all_hyp_ngrams.extend([extract_word_ngrams(hwords, n) for n in _range])

        # Iterate over multiple references, pick the one with best F score
        for _ref_ngrams in ref_kwargs['ref_ngrams']:
            stats = []
            # Traverse all orders
            for h, r in zip(all_hyp_ngrams, _ref_ngrams):
                stats.extend(self._get_match_statistics(h, r))
            f_score = self._compute_f_score(stats)

            if f_score > best_f_score:
                best_f_score = f_score
                best_stats = stats

        return best_stats

    # Metric._extract_corpus_statistics with the references given (no cache), and the scores as
    # plain numbers.
    def _extract_corpus_statistics(self, hypotheses, references):
        ref_cache = []
        for refs in zip(*references):
            lines = [self._preprocess_segment(x) for x in refs]
            ref_cache.append(self._extract_reference_info(lines))
        return [self._compute_segment_statistics(self._preprocess_segment(hyp), ref_kwargs)
                for hyp, ref_kwargs in zip(hypotheses, ref_cache)]

    def _compute_score_from_stats(self, stats):
        return Score(self._compute_f_score(stats))

    def _aggregate_and_compute(self, stats):
        return self._compute_score_from_stats(sum_of_lists(stats))


class Score:
    def __init__(self, score):
        self.score = score


class BLEU:
    """sacreBLEU's BLEU (13a, one reference) over analysis/bleu.py's segment statistics."""

    def _extract_corpus_statistics(self, hypotheses, references):
        return [[int(x) for x in analysis_bleu.sentence_stats(hyp, ref)]
                for hyp, ref in zip(hypotheses, references[0])]

    def _compute_score_from_stats(self, stats):
        return Score(compute_bleu(correct=stats[2: 2 + 4], total=stats[2 + 4:],
                                  sys_len=int(stats[0]), ref_len=int(stats[1])))

    def _aggregate_and_compute(self, stats):
        return self._compute_score_from_stats(sum_of_lists(stats))


class Result:
    def __init__(self, score, p_value=None, mean=None, ci=None):
        self.score = score
        self.p_value = p_value
        self.mean = mean
        self.ci = ci


def estimate_ci(scores):
    # Sort the scores
    scores = np.sort(scores)
    n = len(scores)

    # Get CI bounds (95%, i.e. 1/40 from left)
    lower_idx = n // 40
    upper_idx = n - lower_idx - 1
    lower, upper = scores[lower_idx], scores[upper_idx]
    ci = 0.5 * (upper - lower)
    return (scores.mean(), ci)


def _bootstrap_resample(stats, metric, n_samples, seed):
    rng = np.random.default_rng(seed)
    idxs = rng.choice(len(stats), size=(n_samples, len(stats)), replace=True)
    stats_np = np.array(stats, dtype='float32')
    return [metric._compute_score_from_stats(_s.sum(0)) for _s in stats_np[idxs]]


def _compute_p_value(stats, real_difference):
    c = np.sum(stats > real_difference).item()
    p = (c + 1) / (len(stats) + 1)
    return p


def _paired_ar_test(baseline_info, hypotheses, references, metric, n_samples, seed):
    rng = np.random.default_rng(seed)
    pos_sel = rng.integers(2, size=(n_samples, len(hypotheses)), dtype=bool)
    neg_sel = ~pos_sel
    bl_stats, bl_result = baseline_info
    sys_stats = metric._extract_corpus_statistics(hypotheses, references)
    sys_score = metric._aggregate_and_compute(sys_stats)
    diff = abs(bl_result.score - sys_score.score)
    shuf_a = pos_sel @ bl_stats + neg_sel @ sys_stats
    shuf_b = neg_sel @ bl_stats + pos_sel @ sys_stats
    scores_a = np.array(
        [metric._aggregate_and_compute(x).score for x in shuf_a[:, None]])
    scores_b = np.array(
        [metric._aggregate_and_compute(x).score for x in shuf_b[:, None]])
    p = _compute_p_value(
        np.abs(np.array(scores_a) - np.array(scores_b)), diff)
    return Result(sys_score.score, p)


def _paired_bs_test(baseline_info, hypotheses, references, metric, n_samples, seed):
    rng = np.random.default_rng(seed)
    idxs = rng.choice(
        len(hypotheses), size=(n_samples, len(hypotheses)), replace=True)
    bl_stats, bl_result = baseline_info
    sys_stats = metric._extract_corpus_statistics(hypotheses, references)
    sys_score = metric._aggregate_and_compute(sys_stats)
    sys_stats = np.array(sys_stats, dtype='float32')
    bl_stats = np.array(bl_stats, dtype='float32')
    diff = abs(bl_result.score - sys_score.score)
    scores_bl = np.array(
        [metric._compute_score_from_stats(_s.sum(0)).score for _s in bl_stats[idxs]])
    scores_sys = np.array(
        [metric._compute_score_from_stats(_s.sum(0)).score for _s in sys_stats[idxs]])
    sys_mean, sys_ci = estimate_ci(scores_sys)
    sample_diffs = np.abs(scores_sys - scores_bl)
    stats = sample_diffs - sample_diffs.mean()
    p = _compute_p_value(stats, diff)
    return Result(sys_score.score, p, sys_mean, sys_ci)


def paired_test(systems, references, metric, test_type, n_samples, seed=12345):
    """PairedTest of significance.py for one metric: the baseline's statistics and (bootstrap)
    interval, then each system's test."""
    bl_stats = metric._extract_corpus_statistics(systems[0], references)
    bl_score = metric._aggregate_and_compute(bl_stats)
    bl_mean, bl_ci = None, None
    if test_type == 'bs':
        bl_scores = _bootstrap_resample(bl_stats, metric, n_samples, seed)
        bl_mean, bl_ci = estimate_ci(np.array([x.score for x in bl_scores]))
    results = [Result(bl_score.score, mean=bl_mean, ci=bl_ci)]
    for hyps in systems[1:]:
        if test_type == 'bs':
            results.append(_paired_bs_test((bl_stats, results[0]), hyps, references, metric,
                                           n_samples, seed))
        else:
            results.append(_paired_ar_test((bl_stats, results[0]), hyps, references, metric,
                                           n_samples, seed))
    return results

# ---- generated systems ---------------------------------------------------------------------


WORDS = ("the a cat dog sat ran on under mat house red green quickly slowly über café naïve "
         "Straße we they said , . ! ? ( ) \" 's don't 3 1,000 2.5").split()


def noisy_copy(line, rng, noise):
    """Each word kept, dropped, replaced or doubled; with probability `noise` it is changed."""
    out = []
    for word in line.split():
        roll = rng.random()
        if roll >= noise:
            out.append(word)
        elif roll < noise / 3:
            continue
        elif roll < 2 * noise / 3:
            out.append(rng.choice(WORDS))
        else:
            out.extend([word, rng.choice(WORDS)])
    return " ".join(out)


def glue_punctuation(line):
    """Detokenized text: punctuation attached to the word before it, as real output is."""
    for mark in (" ,", " .", " !", " ?", " )", " 's"):
        line = line.replace(mark, mark[1:])
    return line.replace("( ", "(")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """References and five systems of 160 segments: a baseline, two a little better (p-values
    between 0.05 and 0.65, where a wrong draw would show), one much better, and a copy of the
    baseline under another name."""
    rng = random.Random(20260601)
    references = [glue_punctuation(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 16))))
                  for _ in range(160)]
    second = [glue_punctuation(noisy_copy(line, rng, 0.2)) for line in references]
    noise = {"base": 0.45, "close": 0.435, "closer": 0.42, "better": 0.15}
    systems = {name: [glue_punctuation(noisy_copy(line, rng, level)) for line in references]
               for name, level in noise.items()}
    systems["same"] = list(systems["base"])
    directory = tmp_path_factory.mktemp("bleu-significance")
    paths = {}
    for name, lines in [("ref", references), ("ref2", second), *systems.items()]:
        paths[name] = directory / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths, references, second, systems


SYSTEM_ORDER = ["base", "close", "closer", "better", "same"]


def attnlab_json(attnlab, *args):
    return json.loads(run_attnlab(attnlab, "bleu", *args, "--json").stdout)


CHRF_VARIANTS = [
    ("chrf", [], {}),
    ("chrf++", [], {"word_order": 2}),
    ("chrf", ["--chrf-word-order", "1", "--chrf-lowercase"], {"word_order": 1, "lowercase": True}),
    ("chrf", ["--chrf-whitespace", "--chrf-beta", "3"], {"whitespace": True, "beta": 3}),
    ("chrf", ["--chrf-eps-smoothing", "--chrf-char-order", "4"],
     {"eps_smoothing": True, "char_order": 4}),
]


@pytest.mark.parametrize("metric,flags,options", CHRF_VARIANTS)
@pytest.mark.parametrize("two_references", [False, True])
def test_chrf_equals_sacrebleus(attnlab, corpus, metric, flags, options, two_references):
    """Every system's chrF, exactly (the table of several systems prints full precision)."""
    paths, references, second, systems = corpus
    refs = [references, second] if two_references else [references]
    more = ["-r", paths["ref2"]] if two_references else []
    got = attnlab_json(attnlab, paths["ref"], *[paths[name] for name in SYSTEM_ORDER], *more,
                       "--metrics", metric, *flags)
    reference = CHRF(**options)
    name = f"chrF{reference.beta}" + "+" * reference.word_order
    for row, system in zip(got, SYSTEM_ORDER):
        expected = reference._aggregate_and_compute(
            reference._extract_corpus_statistics(systems[system], refs)).score
        assert row[name]["score"] == expected, (system, row[name]["score"], expected)
    assert 20 < got[0][name]["score"] < got[3][name]["score"] < 95, "a corpus that tests"


def test_single_system_chrf_and_bleu(attnlab, corpus):
    paths, references, _, systems = corpus
    got = attnlab_json(attnlab, paths["ref"], paths["close"], "--metrics", "bleu,chrf,chrf++")
    assert [entry["name"] for entry in got] == ["BLEU", "chrF2", "chrF2++"]
    chrf = CHRF()
    expected = chrf._aggregate_and_compute(
        chrf._extract_corpus_statistics(systems["close"], [references])).score
    assert got[1]["score"] == pytest.approx(expected, abs=1e-4)
    assert got[1]["signature"] == ("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|"
                                   "version:2.x-attnlab")
    assert got[2]["signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:2|space:no|")
    text = run_attnlab(attnlab, "bleu", paths["ref"], paths["close"], "--metrics", "chrf").stdout
    assert text.splitlines()[0] == f"chrF2 = {expected:.2f}"


@pytest.mark.parametrize("test_type", ["bs", "ar"])
@pytest.mark.parametrize("metric", ["bleu", "chrf", "chrf++"])
def test_paired_tests_equal_sacrebleus(attnlab, corpus, test_type, metric):
    """The same scores, p-values, means and intervals at the seed 12345: the bootstrap with
    sacreBLEU's 1000 resamples; approximate randomization with 3000 trials, not 10000, to keep the
    Python reference quick (sacreBLEU's default is checked in test_paired_defaults)."""
    paths, references, _, systems = corpus
    samples = 1000 if test_type == "bs" else 3000
    count = [] if test_type == "bs" else ["--paired-ar-n", str(samples)]
    got = attnlab_json(attnlab, paths["ref"], *[paths[name] for name in SYSTEM_ORDER],
                       "--metrics", metric, f"--paired-{test_type}", *count)
    reference = BLEU() if metric == "bleu" else CHRF(word_order=2 if metric == "chrf++" else 0)
    name = "BLEU" if metric == "bleu" else "chrF2" + ("++" if metric == "chrf++" else "")
    expected = paired_test([systems[s] for s in SYSTEM_ORDER], [references], reference,
                           test_type, samples)
    assert got[0]["system"] == f"Baseline: {paths['base']}"
    p_values = []
    for row, want in zip(got, expected):
        result = row[name]
        assert result["score"] == want.score
        assert result["p_value"] == want.p_value
        if test_type == "bs":
            # sacreBLEU's float32 chrF in resamples: see the module's comment.
            tolerance = 1e-9 if metric == "bleu" else 1e-5
            assert result["mean"] == pytest.approx(want.mean, abs=tolerance)
            assert result["ci"] == pytest.approx(want.ci, abs=tolerance)
        else:
            assert result["mean"] is None and result["ci"] is None
        p_values.append(result["p_value"])
    assert p_values[0] is None
    # The corpus gives p-values across the range: two well inside (0, 1), the much better
    # system's below 0.01 and the baseline's copy at the floor 1 / (n + 1).
    floor = 1 / (samples + 1)
    assert all(0.02 < p < 0.9 for p in p_values[1:3]), p_values
    assert p_values[3] < 0.01 and p_values[4] == floor, p_values
    signature = got[0][name]["signature"]
    assert f"nrefs:1|{test_type}:{samples}|seed:12345|" in signature


def test_paired_defaults(attnlab, corpus):
    """sacreBLEU's 1000 resamples, 10000 trials and seed 12345 when no count or seed is given."""
    paths = corpus[0]
    for test_type, samples in (("bs", 1000), ("ar", 10000)):
        got = attnlab_json(attnlab, paths["ref"], paths["base"], paths["close"],
                           f"--paired-{test_type}")
        assert f"|{test_type}:{samples}|seed:12345|" in got[1]["BLEU"]["signature"]
        count = got[1]["BLEU"]["p_value"] * (samples + 1)
        assert abs(count - round(count)) < 1e-6


def test_seed_changes_the_draws_as_in_sacrebleu(attnlab, corpus):
    paths, references, _, systems = corpus
    got = attnlab_json(attnlab, paths["ref"], paths["base"], paths["close"], "--paired-bs",
                       "--seed", "7", "--paired-bs-n", "300")
    want = paired_test([systems["base"], systems["close"]], [references], BLEU(), "bs", 300, seed=7)
    assert got[1]["BLEU"]["p_value"] == want[1].p_value
    assert got[1]["BLEU"]["mean"] == pytest.approx(want[1].mean, abs=1e-9)
    default = attnlab_json(attnlab, paths["ref"], paths["base"], paths["close"], "--paired-bs",
                           "--paired-bs-n", "300")
    assert default[1]["BLEU"]["mean"] != got[1]["BLEU"]["mean"]
    assert "|bs:300|seed:7|" in got[1]["BLEU"]["signature"]
    fresh = attnlab_json(attnlab, paths["ref"], paths["base"], paths["close"], "--paired-ar",
                         "--seed", "none", "--paired-ar-n", "200")
    assert "|ar:200|seed:none|" in fresh[1]["BLEU"]["signature"]
    assert 1 / 201 <= fresh[1]["BLEU"]["p_value"] <= 1


@pytest.mark.parametrize("test_type,flag", [("bs", "--paired-bs-n"), ("ar", "--paired-ar-n")])
def test_significance_marker_rule(attnlab, corpus, test_type, flag):
    """"*" marks p <= 0.05. A system against a copy of itself has p = 1 / (n + 1): 0.05 with 19
    samples (marked), 1/19 with 18 (not marked)."""
    paths = corpus[0]
    for samples, marked in ((19, True), (18, False)):
        text = run_attnlab(attnlab, "bleu", paths["ref"], paths["base"], paths["same"],
                           f"--paired-{test_type}", flag, str(samples)).stdout
        row = next(line for line in text.splitlines() if line.startswith(str(paths["same"])))
        p_text = f"(p = {1 / (samples + 1):.4f})"
        assert row.rstrip().endswith(p_text + ("*" if marked else "")), row


def test_paired_text_output(attnlab, corpus):
    paths = corpus[0]
    text = run_attnlab(attnlab, "bleu", paths["ref"], paths["base"], paths["better"],
                       "--metrics", "bleu,chrf", "--paired-bs").stdout
    lines = text.splitlines()
    assert lines[0].split("  ")[0] == "System"
    assert "BLEU (μ ± 95% CI)" in lines[0] and "chrF2 (μ ± 95% CI)" in lines[0]
    assert lines[2].startswith(f"Baseline: {paths['base']}")
    assert "(p = 0.0010)*" in lines[3]
    assert "Paired bootstrap resampling test with 1000 resampling trials" in text
    assert " - BLEU       nrefs:1|bs:1000|seed:12345|case:mixed|eff:no|tok:13a|smooth:exp|" in text
    assert " - chrF2      nrefs:1|bs:1000|seed:12345|case:mixed|eff:yes|nc:6|nw:0|space:no|" in text


@pytest.mark.parametrize("args,message", [
    (["close"], "line"),
    (["base", "--paired-bs"], "a paired test needs a baseline and at least one system"),
    (["base", "close", "--paired-bs", "--paired-ar"], "exclude each other"),
    (["base", "close", "--paired-bs-n", "5"], "--paired-bs-n is the number of resamples"),
    (["base", "close", "--paired-bs", "--seed", "x1"], "--seed must be an integer"),
    (["base", "--metrics", "chrf++", "--chrf-word-order", "3"], "--chrf-word-order sets"),
    (["base", "--metrics", "ter"], "unknown metric 'ter'"),
    (["base", "--chrf-beta", "1"], "--chrf-* options need chrf"),
    (["base", "--metrics", "chrf", "-lc"], "BLEU's options"),
    (["base", "base", "--paired-bs"], "given twice"),
])
def test_usage_errors(attnlab, corpus, tmp_path, args, message):
    paths = corpus[0]
    if args == ["close"]:
        short = tmp_path / "short.txt"
        short.write_text("one line\ntwo lines\n", encoding="utf-8")
        result = run_attnlab(attnlab, "bleu", paths["ref"], paths["close"], short, check=False)
        assert result.returncode == 2
        assert result.stderr.strip() == (
            f"attnlab bleu: {short} has 2 lines but {paths['ref']} has 160: the metrics need one "
            "hypothesis line per reference line")
        return
    result = run_attnlab(attnlab, "bleu", paths["ref"],
                         *[paths.get(arg, arg) if arg in ("base", "close") else arg
                           for arg in args], check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "check " not in result.stderr and result.stdout == ""
