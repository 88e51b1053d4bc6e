// Corpus BLEU against values worked out by hand from sacreBLEU's rules (see bleu.h).
#include "core/metrics/bleu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/util/check.h"

namespace attnlab {
namespace {

using Tokens = std::vector<std::string>;

TEST(Tokenize13a, SplitsPunctuationAndSymbols) {
  EXPECT_EQ(tokenize_13a("Hello, world!"), (Tokens{"Hello", ",", "world", "!"}));
  EXPECT_EQ(tokenize_13a("  He said: \"no\"  "), (Tokens{"He", "said", ":", "\"", "no", "\""}));
  // Apostrophes and hyphens between letters stay inside words.
  EXPECT_EQ(tokenize_13a("don't self-made"), (Tokens{"don't", "self-made"}));
  // Period and comma stay inside numbers; a dash after a digit is split off.
  EXPECT_EQ(tokenize_13a("It costs $3.50, ok."),
            (Tokens{"It", "costs", "$", "3.50", ",", "ok", "."}));
  EXPECT_EQ(tokenize_13a("1,000 pages 1-2"), (Tokens{"1,000", "pages", "1", "-", "2"}));
  EXPECT_EQ(tokenize_13a("(a/b) [c]"), (Tokens{"(", "a", "/", "b", ")", "[", "c", "]"}));
  // Entities are unescaped first; non-ASCII text passes through.
  EXPECT_EQ(tokenize_13a("&quot;sí&quot; &amp; ¿qué?"),
            (Tokens{"\"", "sí", "\"", "&", "¿qué", "?"}));
  // A period directly before a letter: "e.g." -> e . g .
  EXPECT_EQ(tokenize_13a("e.g."), (Tokens{"e", ".", "g", "."}));
  // Unicode whitespace separates words, as Python's str.split() does (U+00A0, U+3000).
  EXPECT_EQ(tokenize_13a("a\xC2\xA0"
                         "b\xE3\x80\x80"
                         "c"),
            (Tokens{"a", "b", "c"}));
  EXPECT_EQ(tokenize_13a(""), Tokens{});
}

TEST(Bleu, IdenticalTextScoresHundred) {
  const BleuScore bleu = corpus_bleu({"the cat sat on the mat ."}, {"the cat sat on the mat ."});
  EXPECT_DOUBLE_EQ(bleu.score, 100.0);
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, 1.0);
  for (double p : bleu.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
}

TEST(Bleu, NoMatchScoresZeroWithoutSmoothing) {
  // No n-gram of any order matches: sacreBLEU stops early, every precision stays 0.
  const BleuScore bleu = corpus_bleu({"x y z"}, {"a b c d e f"});
  EXPECT_EQ(bleu.score, 0.0);
  for (double p : bleu.precisions) EXPECT_EQ(p, 0.0);
  // BP is still reported: c = 3, r = 6 -> exp(1 - 6/3) = exp(-1).
  EXPECT_NEAR(bleu.brevity_penalty, std::exp(-1.0), 1e-12);
  EXPECT_EQ(bleu.stats.totals[0], 3);
  EXPECT_EQ(bleu.stats.totals[3], 0);
}

TEST(Bleu, ShortHypothesisPaysTheBrevityPenalty) {
  // hyp: the cat sat on the (c = 5), ref: the cat sat on the mat (r = 6).
  // Every hypothesis n-gram matches: 5/5, 4/4, 3/3, 2/2, so the precisions are all 100 and
  // BLEU = BP * 100 = exp(1 - 6/5) * 100 = exp(-0.2) * 100 = 81.873075...
  const BleuScore bleu = corpus_bleu({"the cat sat on the"}, {"the cat sat on the mat"});
  EXPECT_NEAR(bleu.brevity_penalty, std::exp(-0.2), 1e-12);
  EXPECT_NEAR(bleu.score, 81.87307530779819, 1e-9);
  EXPECT_NEAR(bleu.ratio, 5.0 / 6.0, 1e-12);
}

TEST(Bleu, LongerHypothesisHasNoPenalty) {
  // c = 7 > r = 6: BP = 1; matches 6/7, 5/6, 4/5, 3/4.
  // BLEU = (6/7 * 5/6 * 4/5 * 3/4)^(1/4) * 100 = (3/7)^(1/4) * 100 = 80.9107...
  const BleuScore bleu = corpus_bleu({"the cat sat on the mat too"}, {"the cat sat on the mat"});
  EXPECT_DOUBLE_EQ(bleu.brevity_penalty, 1.0);
  EXPECT_NEAR(bleu.score, std::pow(3.0 / 7.0, 0.25) * 100.0, 1e-9);
}

TEST(Bleu, ExpSmoothingOnlyForOrdersWithoutMatches) {
  // hyp a b c d, ref a b c e: 1-grams 3/4, 2-grams 2/3, 3-grams 1/2, 4-grams 0/1.
  // The first order without a match is smoothed to 100 / (2 * total) = 100 / 2 = 50.
  // BLEU = (75 * 66.667 * 50 * 50)^(1/4) = 12,500,000^(1/4) = 59.46035575...
  const BleuScore bleu = corpus_bleu({"a b c d"}, {"a b c e"});
  EXPECT_NEAR(bleu.precisions[0], 75.0, 1e-12);
  EXPECT_NEAR(bleu.precisions[1], 200.0 / 3.0, 1e-12);
  EXPECT_NEAR(bleu.precisions[2], 50.0, 1e-12);
  EXPECT_NEAR(bleu.precisions[3], 50.0, 1e-12);
  EXPECT_NEAR(bleu.score, 59.46035575013605, 1e-9);
}

TEST(Bleu, SecondUnmatchedOrderIsSmoothedTwiceAsHard) {
  // hyp a b x c d, ref a b y c d: 1-grams 4/5, 2-grams "a b","c d" 2/4, 3-grams 0/3, 4-grams 0/2.
  // Smoothed: p3 = 100 / (2 * 3) = 16.667, p4 = 100 / (4 * 2) = 12.5.
  const BleuScore bleu = corpus_bleu({"a b x c d"}, {"a b y c d"});
  EXPECT_NEAR(bleu.precisions[2], 100.0 / 6.0, 1e-12);
  EXPECT_NEAR(bleu.precisions[3], 12.5, 1e-12);
  EXPECT_NEAR(bleu.score, std::pow(80.0 * 50.0 * (100.0 / 6.0) * 12.5, 0.25), 1e-9);
}

TEST(Bleu, HypothesisShorterThanFourTokensScoresZero) {
  // hyp "a b" has no 3-grams: sacreBLEU breaks there and log(0) sends the score to 0 even
  // though the 1- and 2-gram precisions are 100 (effective order is off).
  const BleuScore bleu = corpus_bleu({"a b"}, {"a b c"});
  EXPECT_DOUBLE_EQ(bleu.precisions[0], 100.0);
  EXPECT_DOUBLE_EQ(bleu.precisions[1], 100.0);
  EXPECT_EQ(bleu.precisions[2], 0.0);
  EXPECT_EQ(bleu.score, 0.0);
}

TEST(Bleu, ClipsRepeatedWords) {
  // hyp "the the the the" vs ref "the cat": unigram matches clipped to 1 of 4.
  const BleuStats stats = sentence_bleu_stats("the the the the", "the cat");
  EXPECT_EQ(stats.matches[0], 1);
  EXPECT_EQ(stats.totals[0], 4);
  EXPECT_EQ(stats.matches[1], 0);
  EXPECT_EQ(stats.totals[1], 3);
}

TEST(Bleu, MultiSentenceCorpusByHand) {
  // Sentence 1: hyp "the cat is on the mat" (6 tokens), ref "the cat sat on the mat" (6).
  //   1-grams: the x2, cat, on, mat match (is does not)        5/6
  //   2-grams: "the cat", "on the", "the mat" match            3/5
  //   3-grams: "on the mat" matches                            1/4
  //   4-grams: none                                            0/3
  // Sentence 2: hyp "a dog." -> a dog . (3), ref "a dog barked." -> a dog barked . (4).
  //   1-grams 3/3, 2-grams "a dog" 1/2, 3-grams 0/1, 4-grams 0/0.
  // Corpus: matches 8, 4, 1, 0; totals 9, 7, 5, 3; c = 9, r = 10.
  //   p1 = 800/9 = 88.889, p2 = 400/7 = 57.143, p3 = 100/5 = 20,
  //   p4 = 100 / (2 * 3) = 16.667 (exp smoothing; the corpus has 3-gram matches).
  //   product = 1,693,121.69; fourth root = 36.072151; BP = exp(1 - 10/9) = 0.894839
  //   BLEU = 0.894839 * 36.072151 = 32.278779
  const BleuScore bleu =
      corpus_bleu({"the cat is on the mat", "a dog."}, {"the cat sat on the mat", "a dog barked."});
  EXPECT_EQ(bleu.stats.matches, (std::array<int64_t, 4>{8, 4, 1, 0}));
  EXPECT_EQ(bleu.stats.totals, (std::array<int64_t, 4>{9, 7, 5, 3}));
  EXPECT_EQ(bleu.stats.hyp_length, 9);
  EXPECT_EQ(bleu.stats.ref_length, 10);
  EXPECT_NEAR(bleu.precisions[3], 100.0 / 6.0, 1e-12);
  EXPECT_NEAR(bleu.brevity_penalty, 0.8948393168143697, 1e-12);
  EXPECT_NEAR(bleu.score, 32.278779198706424, 1e-9);
  EXPECT_EQ(bleu.format(),
            "BLEU = 32.28 88.9/57.1/20.0/16.7 (BP = 0.895 ratio = 0.900 hyp_len = 9 ref_len = 10)");
}

TEST(Bleu, StatsAddUpAcrossSentences) {
  BleuStats sum = sentence_bleu_stats("the cat is on the mat", "the cat sat on the mat");
  sum += sentence_bleu_stats("a dog.", "a dog barked.");
  const BleuScore merged = compute_bleu(sum);
  const BleuScore whole =
      corpus_bleu({"the cat is on the mat", "a dog."}, {"the cat sat on the mat", "a dog barked."});
  EXPECT_DOUBLE_EQ(merged.score, whole.score);
}

TEST(Bleu, CountMismatchIsAnError) { EXPECT_THROW(corpus_bleu({"a", "b"}, {"a"}), Error); }

TEST(Bleu, SignatureNamesTheSacreBleuDefaults) {
  EXPECT_EQ(bleu_signature().rfind("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:", 0), 0u);
}

TEST(Bleu, CharAndNoneTokenizers) {
  EXPECT_EQ(bleu_tokenize("ab c\u00e9", BleuTokenizer::kChar),
            (std::vector<std::string>{"a", "b", "c", "\u00e9"}));
  EXPECT_EQ(bleu_tokenize(" a,b  c. ", BleuTokenizer::kNone),
            (std::vector<std::string>{"a,b", "c."}));
  EXPECT_EQ(bleu_tokenize("a,b", BleuTokenizer::k13a), (std::vector<std::string>{"a", ",", "b"}));
  EXPECT_THROW(parse_bleu_tokenizer("intl-x"), Error);
  EXPECT_EQ(bleu_signature(2, BleuTokenizer::kChar).rfind("nrefs:2|case:mixed|eff:no|tok:char|", 0),
            0u);
}

// sacreBLEU's intl tokenizer, worked by hand from its three rules (each a left-to-right pass of
// non-overlapping matches): (\P{N})(\p{P}) -> "\1 \2 ", (\p{P})(\P{N}) -> " \1 \2",
// (\p{S}) -> " \1 ", then whitespace splits. The same expectations come out of the rules run
// with Python's `regex` module.
TEST(TokenizeIntl, SplitsUnicodePunctuationAndSymbolsButNotInsideNumbers) {
  EXPECT_EQ(tokenize_intl("Hello, world!"), (Tokens{"Hello", ",", "world", "!"}));
  // Punctuation with a digit on both sides stays: neither rule matches.
  EXPECT_EQ(tokenize_intl("3.14"), Tokens{"3.14"});
  EXPECT_EQ(tokenize_intl("1,000.5\u20ac"), (Tokens{"1,000.5", "\u20ac"}));  // € is a symbol
  EXPECT_EQ(tokenize_intl("a.b"), (Tokens{"a", ".", "b"}));
  EXPECT_EQ(tokenize_intl("$5"), (Tokens{"$", "5"}));
  // "(1)": '(' is followed by a digit and ')' preceded by one, so nothing is split.
  EXPECT_EQ(tokenize_intl("(1)"), Tokens{"(1)"});
  EXPECT_EQ(tokenize_intl("5%"), Tokens{"5%"});
  // "x..y": rule 1 takes "x." and leaves ".y" (the second '.' was not preceded by an unconsumed
  // character); rule 2 splits both periods off.
  EXPECT_EQ(tokenize_intl("x..y"), (Tokens{"x", ".", ".", "y"}));
  EXPECT_EQ(tokenize_intl("U.S.A."), (Tokens{"U", ".", "S", ".", "A", "."}));
  EXPECT_EQ(tokenize_intl("don't stop\u2014now"),
            (Tokens{"don", "'", "t", "stop", "\u2014", "now"}));
  EXPECT_EQ(tokenize_intl("\u00abHola\u00bb, dijo."),
            (Tokens{"\u00ab", "Hola", "\u00bb", ",", "dijo", "."}));
  // CJK with ideographic comma and full stop: 你好，世界。
  EXPECT_EQ(tokenize_intl("\u4f60\u597d\uff0c\u4e16\u754c\u3002"),
            (Tokens{"\u4f60\u597d", "\uff0c", "\u4e16\u754c", "\u3002"}));
  // Arabic-Indic digits are numbers (N), the Arabic decimal separator punctuation: one token.
  EXPECT_EQ(tokenize_intl("\u0661\u0662\u066b\u0665"), Tokens{"\u0661\u0662\u066b\u0665"});
  // Emoji are symbols (So); the variation selector U+FE0F after the heart is not, so it is left
  // as a token of its own. U+1F355 is a four-byte character.
  EXPECT_EQ(tokenize_intl("I \u2764\ufe0f \U0001f355 & 2+2=4"),
            (Tokens{"I", "\u2764", "\ufe0f", "\U0001f355", "&", "2", "+", "2", "=", "4"}));
  // Unicode whitespace (U+00A0, U+3000) separates tokens; nothing but whitespace gives none.
  EXPECT_EQ(tokenize_intl("x\u00a0\u3000y"), (Tokens{"x", "y"}));
  EXPECT_EQ(tokenize_intl(" \t "), Tokens{});
  // Bytes that are not UTF-8 (the readers reject them; the functions still must not) are kept
  // as they are and belong to no category.
  EXPECT_EQ(tokenize_intl("a\xff."), (Tokens{"a\xff", "."}));
  EXPECT_EQ(tokenize_intl(""), Tokens{});
  // Reached through the tokenizer choice too.
  EXPECT_EQ(bleu_tokenize("e.g.,", BleuTokenizer::kIntl), (Tokens{"e", ".", "g", ".", ","}));
  // sacreBLEU strips trailing whitespace off a segment before tokenizing it, which only intl
  // notices: "2. " splits the period off (followed by a space), "2." keeps it.
  EXPECT_EQ(tokenize_intl("2. "), (Tokens{"2", "."}));
  EXPECT_EQ(bleu_tokenize("2. \t\u3000", BleuOptions{BleuTokenizer::kIntl, false}), Tokens{"2."});
  EXPECT_EQ(bleu_tokenize("a 2.\u00a0", BleuOptions{BleuTokenizer::kIntl, false}),
            (Tokens{"a", "2."}));
  EXPECT_EQ(parse_bleu_tokenizer("intl"), BleuTokenizer::kIntl);
  EXPECT_STREQ(to_string(BleuTokenizer::kIntl), "intl");
}

// The expected strings are what /usr/bin/python3 prints for "ÉCOLE İstanbul ΣΑΣ".lower() and
// "ΣΑΣ ΟΔΟΣ. Σ".lower(): İ becomes i + U+0307 (combining dot above), a capital sigma at the end
// of a word the final ς, a sigma standing alone σ.
TEST(BleuLowercase, IsPythonsStrLower) {
  EXPECT_EQ(bleu_lowercase("\u00c9COLE \u0130stanbul \u03a3\u0391\u03a3"),
            "\u00e9cole i\u0307stanbul \u03c3\u03b1\u03c2");
  EXPECT_EQ(bleu_lowercase("\u03a3\u0391\u03a3 \u039f\u0394\u039f\u03a3. \u03a3"),
            "\u03c3\u03b1\u03c2 \u03bf\u03b4\u03bf\u03c2. \u03c3");
  EXPECT_EQ(bleu_lowercase("Hello, WORLD 42"), "hello, world 42");
  EXPECT_EQ(bleu_lowercase(""), "");
  EXPECT_EQ(bleu_lowercase("A\xff"), "a\ufffd");
}

TEST(Bleu, LowercasingMakesBleuCaseInsensitiveAndSaysSoInTheSignature) {
  const std::vector<std::string> hyp = {"The Cat SAT on the mat."};
  const std::vector<std::vector<std::string>> ref = {{"the cat sat on the mat."}};
  EXPECT_LT(corpus_bleu(hyp, ref, BleuOptions{BleuTokenizer::k13a, false}).score, 100.0);
  EXPECT_DOUBLE_EQ(corpus_bleu(hyp, ref, BleuOptions{BleuTokenizer::k13a, true}).score, 100.0);
  EXPECT_DOUBLE_EQ(corpus_bleu(hyp, ref, BleuOptions{BleuTokenizer::kIntl, true}).score, 100.0);
  EXPECT_EQ(bleu_tokenize("\u00c9T\u00c9!", BleuOptions{BleuTokenizer::kIntl, true}),
            (Tokens{"\u00e9t\u00e9", "!"}));
  EXPECT_EQ(bleu_signature(1, BleuOptions{BleuTokenizer::kIntl, true})
                .rfind("nrefs:1|case:lc|eff:no|tok:intl|smooth:exp|version:", 0),
            0u);
  EXPECT_EQ(bleu_signature(1, BleuOptions{}), bleu_signature());
}

// Worked by hand: hypothesis "the cat sat" (3 tokens) against "the cat" (2) and "a cat sat on"
// (4): both lengths are 1 away, the shorter (2) is the reference length; every unigram and
// bigram occurs in some reference (the 1, cat 1, sat 1; "the cat" in the first, "cat sat" in the
// second), the trigram in neither.
TEST(Bleu, SeveralReferencesClipByTheLargestCountAndTakeTheClosestLength) {
  const BleuStats stats =
      sentence_bleu_stats("the cat sat", {"the cat", "a cat sat on"}, BleuTokenizer::k13a);
  EXPECT_EQ(stats.hyp_length, 3);
  EXPECT_EQ(stats.ref_length, 2);
  EXPECT_EQ(stats.matches, (std::array<int64_t, kBleuMaxOrder>{3, 2, 0, 0}));
  EXPECT_EQ(stats.totals, (std::array<int64_t, kBleuMaxOrder>{3, 2, 1, 0}));
  // "cat cat" against "cat" and "cat cat cat": clipped at 2 (the second), length 1 vs 3 -> 1.
  const BleuStats repeated =
      sentence_bleu_stats("cat cat", {"cat", "cat cat cat"}, BleuTokenizer::k13a);
  EXPECT_EQ(repeated.matches[0], 2);
  EXPECT_EQ(repeated.ref_length, 1);
  // One reference set through the multi-reference path is the single-reference BLEU.
  const std::vector<std::string> hyp = {"the cat is on the mat", "a dog."};
  const std::vector<std::string> ref = {"the cat sat on the mat", "a dog barked."};
  EXPECT_DOUBLE_EQ(corpus_bleu(hyp, {ref}, BleuTokenizer::k13a).score, corpus_bleu(hyp, ref).score);
}

}  // namespace
}  // namespace attnlab
