"""Corpus BLEU from per-sentence sufficient statistics, as sacreBLEU computes it (13a tokenizer
unless another `tokenize` function is given, one reference, exponential smoothing) and as
core/metrics/bleu.cpp does in C++.

Statistics per sentence: [hyp_len, ref_len, match_1..match_4, total_1..total_4]. Corpus BLEU of
any subset of sentences is BLEU of the summed rows, which is what the paired bootstrap needs.
"""

import collections
import math
import re

import numpy as np

MAX_ORDER = 4
STATS = 2 + 2 * MAX_ORDER

_RULES = [
    # Split off every symbol of 13a's first class: { | } ~ [ \ ] ^ _ ` space..& ( ) * + : ..@ /
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    # Period and comma unless preceded by a digit,
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    # unless followed by a digit,
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    # and a dash after a digit.
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line):
    """mteval-v13a tokenization (sacreBLEU's default)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                .replace("&gt;", ">"))
    line = f" {line} "
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def _ngrams(tokens):
    counts = collections.Counter()
    for n in range(1, MAX_ORDER + 1):
        for start in range(len(tokens) - n + 1):
            counts[tuple(tokens[start:start + n])] += 1
    return counts


def sentence_stats(hypothesis, reference, tokenize=tokenize_13a):
    """The sufficient statistics of one segment (see the module comment); `tokenize` maps a line
    to its list of tokens."""
    hyp = tokenize(hypothesis)
    ref = tokenize(reference)
    hyp_counts, ref_counts = _ngrams(hyp), _ngrams(ref)
    stats = np.zeros(STATS, dtype=np.int64)
    stats[0], stats[1] = len(hyp), len(ref)
    for gram, count in hyp_counts.items():
        stats[1 + len(gram)] += min(count, ref_counts.get(gram, 0))
    for n in range(1, MAX_ORDER + 1):
        stats[1 + MAX_ORDER + n] = max(0, len(hyp) - n + 1)
    return stats


def corpus_stats(hypotheses, references, tokenize=tokenize_13a):
    """(sentences, STATS) statistics; the two lists must be of equal length."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    if not hypotheses:
        return np.zeros((0, STATS), dtype=np.int64)
    return np.stack([sentence_stats(h, r, tokenize) for h, r in zip(hypotheses, references)])


def bleu_from_stats(totals):
    """BLEU (0-100) of summed statistics; `totals` may be (STATS,) or (samples, STATS)."""
    totals = np.asarray(totals, dtype=np.float64)
    if totals.ndim == 2:
        return np.array([bleu_from_stats(row) for row in totals])
    hyp_len, ref_len = totals[0], totals[1]
    matches = totals[2:2 + MAX_ORDER]
    counts = totals[2 + MAX_ORDER:]
    log_sum = 0.0
    smooth = 1.0
    for n in range(MAX_ORDER):
        if counts[n] == 0:
            return 0.0  # this order's precision stays 0: the geometric mean is 0
        if matches[n] == 0:
            smooth *= 2.0  # 'exp' smoothing: precision 100 / (2^k * total)
            log_sum += math.log(100.0 / (smooth * counts[n]))
        else:
            log_sum += math.log(100.0 * matches[n] / counts[n])
    if hyp_len < ref_len:
        brevity = math.exp(1.0 - ref_len / hyp_len)
    else:
        brevity = 1.0
    return brevity * math.exp(log_sum / MAX_ORDER)


def corpus_bleu(hypotheses, references):
    return bleu_from_stats(corpus_stats(hypotheses, references).sum(axis=0))
