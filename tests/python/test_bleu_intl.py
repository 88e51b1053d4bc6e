"""`attnlab bleu --tokenize intl` and `-lc` against sacreBLEU's own definitions: the intl tokenizer
(TokenizerV14International) copied here verbatim with the `regex` module, lowercasing with
Python's str.lower(), and corpus BLEU from analysis/bleu.py (sacreBLEU's 'exp' smoothing), on a
few hundred seeded random lines that mix scripts, digits, punctuation, symbols and Unicode
whitespace."""

import json
import random
import sys

import pytest
import regex

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis import bleu  # noqa: E402


class TokenizerV14International:
    """sacreBLEU 2.x's tokenizer_intl.py."""

    def __init__(self):
        self._re = [
            (regex.compile(r'(\P{N})(\p{P})'), r'\1 \2 '),
            (regex.compile(r'(\p{P})(\P{N})'), r' \1 \2'),
            (regex.compile(r'(\p{S})'), r' \1 '),
        ]

    def __call__(self, line):
        for (_re, repl) in self._re:
            line = _re.sub(repl, line)
        return ' '.join(line.split())


INTL = TokenizerV14International()


def preprocess(tokenizer, lowercase):
    """sacreBLEU's BLEU._preprocess_segment, then the split into tokens."""
    def tokenize(line):
        if lowercase:
            line = line.lower()
        return tokenizer(line.rstrip()).split()
    return tokenize


def bleu_13a_tokens(line):
    return ' '.join(bleu.tokenize_13a(line))


# Pieces the random lines are made of: words in several scripts and cases (Greek capital sigmas,
# the dotted capital I, German sharp s), ASCII and non-ASCII digits, ASCII and Unicode
# punctuation, symbols (currency, math, emoji: some outside the BMP) and a combining mark.
WORDS = ["the", "Cat", "SAT", "über", "ÉCOLE", "İstanbul", "ΣΑΣ", "Οδός", "straße", "Москва",
         "ДОМ", "你好", "世界", "東京", "مرحبا", "नमस्ते", "한국어", "ﬁne", "café", "e\u0301",
         "don't", "self-made", "U.S.A", "ǅemal", "\u0308"]
DIGITS = ["3", "14", "1,000", "2.5", "٣٤", "١٢٫٥", "４２", "½", "²", "Ⅻ"]
PUNCTUATION = list(".,;:!?\"'()[]{}-_/\\@#%&*") + [
    "«", "»", "“", "”", "„", "‘", "’", "—", "–", "…", "¿", "¡", "、", "。", "，", "！", "？", "「",
    "」", "·", "‰", "†", "§", "¶", "‹", "›", "⁂"]
SYMBOLS = list("$+<=>^`|~") + ["€", "£", "¥", "©", "®", "°", "±", "×", "÷", "→", "∑", "√", "∞",
                               "♥", "★", "❤", "☃", "😀", "🍕", "👍"]
SPACES = [" ", " ", " ", " ", "\t", "\u00a0", "\u3000", "\u2009", ""]


def random_line(rng):
    pieces = []
    for _ in range(rng.randint(0, 14)):
        kind = rng.random()
        if kind < 0.45:
            piece = rng.choice(WORDS)
        elif kind < 0.65:
            piece = rng.choice(DIGITS)
        elif kind < 0.85:
            piece = rng.choice(PUNCTUATION)
        else:
            piece = rng.choice(SYMBOLS)
        pieces.append(piece + rng.choice(SPACES))
    return "".join(pieces)


def hypothesis_of(reference, rng):
    """A noisy copy: characters dropped, duplicated or case-flipped, words swapped in."""
    out = []
    for char in reference:
        roll = rng.random()
        if roll < 0.04:
            continue
        if roll < 0.07:
            out.append(char + char)
        elif roll < 0.15:
            out.append(char.swapcase())
        elif roll < 0.17:
            out.append(" " + rng.choice(WORDS) + " ")
        else:
            out.append(char)
    return "".join(out)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(20240611)
    references = [random_line(rng) for _ in range(400)]
    hypotheses = [hypothesis_of(line, rng) for line in references]
    # A few lines to be sure of: the tricky cases of the C++ tests, trailing whitespace (stripped
    # before tokenizing: "2." stays one token) and an empty hypothesis.
    references += ["x..y 3.14 (1) $5", "ΣΑΣ İ", "1,000.5€", "你好，世界。", "in 2. \u3000", "a"]
    hypotheses += ["x..y 3.14 (1)$5", "σας i̇", "1,000.5 €", "你好,世界.", "in 2.", ""]
    directory = tmp_path_factory.mktemp("bleu-intl")
    ref, hyp = directory / "ref.txt", directory / "hyp.txt"
    for path, lines in ((ref, references), (hyp, hypotheses)):
        assert not any(set(line) & set("\r\n") for line in lines)
        path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return ref, hyp, hypotheses, references


def test_the_copied_tokenizer_is_sacrebleus():
    """The rules as sacreBLEU's tests and documentation show them."""
    assert INTL("Hello, world!") == "Hello , world !"
    assert INTL("3.14 x..y 1,000.5€") == "3.14 x . . y 1,000.5 €"


@pytest.mark.parametrize("tokenize,lowercase", [("intl", False), ("intl", True), ("13a", True),
                                                ("13a", False)])
def test_bleu_matches_sacrebleus_rules(attnlab, corpus, tokenize, lowercase):
    ref, hyp, hypotheses, references = corpus
    args = ["bleu", ref, hyp, "--tokenize", tokenize, "--json"] + (["-lc"] if lowercase else [])
    got = json.loads(run_attnlab(attnlab, *args).stdout)
    tokenizer = INTL if tokenize == "intl" else bleu_13a_tokens
    totals = bleu.corpus_stats(hypotheses, references,
                               tokenize=preprocess(tokenizer, lowercase)).sum(axis=0)
    assert (got["hyp_len"], got["ref_len"]) == (totals[0], totals[1])
    matches, counts = totals[2:2 + bleu.MAX_ORDER], totals[2 + bleu.MAX_ORDER:]
    assert all(matches > 0) and 10.0 < bleu.bleu_from_stats(totals) < 90.0, "a corpus that tests"
    assert got["score"] == pytest.approx(bleu.bleu_from_stats(totals), abs=1e-4)
    assert got["precisions"] == pytest.approx(list(100.0 * matches / counts), abs=1e-4)
    case = "lc" if lowercase else "mixed"
    assert got["signature"].startswith(f"nrefs:1|case:{case}|eff:no|tok:{tokenize}|smooth:exp|")


def test_lowercase_and_intl_change_what_matches(attnlab, corpus):
    """The options are not no-ops on this corpus, and --lowercase is -lc."""
    ref, hyp, _, _ = corpus
    scores = {}
    for args in ([], ["-lc"], ["--lowercase"], ["--tokenize", "intl"],
                 ["--tokenize", "intl", "-lc"]):
        scores[" ".join(args)] = json.loads(
            run_attnlab(attnlab, "bleu", ref, hyp, "--json", *args).stdout)["score"]
    assert scores["-lc"] == scores["--lowercase"]
    assert scores["-lc"] > scores[""]
    assert scores["--tokenize intl -lc"] > scores["--tokenize intl"]
    assert scores["--tokenize intl"] != scores[""]
    text = run_attnlab(attnlab, "bleu", ref, hyp, "-lc", "--tokenize", "intl").stdout
    assert "signature: nrefs:1|case:lc|eff:no|tok:intl|smooth:exp|version:" in text
