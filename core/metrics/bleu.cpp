// Corpus BLEU: the 13a and intl tokenizers, lowercasing, clipped n-gram statistics and
// sacreBLEU's scoring rules.
#include "core/metrics/bleu.h"

#include <unicode/locid.h>
#include <unicode/stringpiece.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/metrics/python_text.h"
#include "core/util/check.h"

namespace attnlab {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// 13a's first rule splits off: { | } ~  [ \ ] ^ _ `  space ! " # $ % &  ( ) * +  : ; < = > ? @  /
bool is_13a_symbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// Unicode general category groups, as regex's \p{N}, \p{P} and \p{S} match them.
bool in_category(UChar32 c, uint32_t mask) {
  return c < kRawByte && (U_GET_GC_MASK(c) & mask) != 0;
}
bool is_number(UChar32 c) { return in_category(c, U_GC_N_MASK); }
bool is_punctuation(UChar32 c) { return in_category(c, U_GC_P_MASK); }
bool is_symbol(UChar32 c) { return in_category(c, U_GC_S_MASK); }

// Counts of every n-gram (n = 1..4) of `tokens`, keyed by the tokens joined with spaces.
std::unordered_map<std::string, int64_t> count_ngrams(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string, int64_t> counts;
  for (size_t start = 0; start < tokens.size(); ++start) {
    std::string key;
    for (size_t n = 0; n < static_cast<size_t>(kBleuMaxOrder) && start + n < tokens.size(); ++n) {
      if (n > 0) key.push_back(' ');
      key += tokens[start + n];
      ++counts[key];
    }
  }
  return counts;
}

int64_t ngram_order(const std::string& key) {
  int64_t spaces = 0;
  for (char c : key) spaces += c == ' ';
  return spaces + 1;
}

}  // namespace

std::vector<std::string> tokenize_13a(const std::string& line) {
  std::string text = line;
  replace_all(text, "<skipped>", "");
  replace_all(text, "-\n", "");
  replace_all(text, "\n", " ");
  replace_all(text, "&quot;", "\"");
  replace_all(text, "&amp;", "&");
  replace_all(text, "&lt;", "<");
  replace_all(text, "&gt;", ">");
  text = " " + text + " ";

  // Each rule is one left-to-right pass of non-overlapping matches, like Python's re.sub.
  std::string out;
  for (char c : text) {  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
    if (is_13a_symbol(c)) {
      out += ' ';
      out += c;
      out += ' ';
    } else {
      out += c;
    }
  }
  text.swap(out);
  out.clear();
  for (size_t i = 0; i < text.size();) {  // ([^0-9])([\.,]) -> "\1 \2 "
    if (i + 1 < text.size() && !is_digit(text[i]) && (text[i + 1] == '.' || text[i + 1] == ',')) {
      out += text[i];
      out += ' ';
      out += text[i + 1];
      out += ' ';
      i += 2;
    } else {
      out += text[i++];
    }
  }
  text.swap(out);
  out.clear();
  for (size_t i = 0; i < text.size();) {  // ([\.,])([^0-9]) -> " \1 \2"
    if (i + 1 < text.size() && (text[i] == '.' || text[i] == ',') && !is_digit(text[i + 1])) {
      out += ' ';
      out += text[i];
      out += ' ';
      out += text[i + 1];
      i += 2;
    } else {
      out += text[i++];
    }
  }
  text.swap(out);
  out.clear();
  for (size_t i = 0; i < text.size();) {  // ([0-9])(-) -> "\1 \2 "
    if (i + 1 < text.size() && is_digit(text[i]) && text[i + 1] == '-') {
      out += text[i];
      out += " - ";
      i += 2;
    } else {
      out += text[i++];
    }
  }
  return split_whitespace(out);
}

std::vector<std::string> tokenize_intl(const std::string& line) {
  std::vector<UChar32> text = decode_utf8(line);
  std::vector<UChar32> out;
  out.reserve(2 * text.size());
  // (\P{N})(\p{P}) -> "\1 \2 ": one left-to-right pass of non-overlapping matches (re.sub).
  for (size_t i = 0; i < text.size();) {
    if (i + 1 < text.size() && !is_number(text[i]) && is_punctuation(text[i + 1])) {
      out.insert(out.end(), {text[i], ' ', text[i + 1], ' '});
      i += 2;
    } else {
      out.push_back(text[i++]);
    }
  }
  text.swap(out);
  out.clear();
  for (size_t i = 0; i < text.size();) {  // (\p{P})(\P{N}) -> " \1 \2"
    if (i + 1 < text.size() && is_punctuation(text[i]) && !is_number(text[i + 1])) {
      out.insert(out.end(), {' ', text[i], ' ', text[i + 1]});
      i += 2;
    } else {
      out.push_back(text[i++]);
    }
  }
  text.swap(out);
  out.clear();
  for (const UChar32 c : text) {  // (\p{S}) -> " \1 "
    if (is_symbol(c)) {
      out.insert(out.end(), {' ', c, ' '});
    } else {
      out.push_back(c);
    }
  }
  std::vector<std::string> words;  // ' '.join(line.split()), split again by BLEU
  std::string word;
  for (const UChar32 c : out) {
    if (is_python_space(c)) {
      if (!word.empty()) words.push_back(std::move(word));
      word.clear();
    } else {
      append_utf8(word, c);
    }
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string bleu_lowercase(const std::string& line) {
  CHECK(line.size() <= static_cast<size_t>(INT32_MAX)) << "a BLEU segment of over 2 GB";
  icu::UnicodeString text = icu::UnicodeString::fromUTF8(
      icu::StringPiece(line.data(), static_cast<int32_t>(line.size())));
  text.toLower(icu::Locale::getRoot());
  std::string lowered;
  text.toUTF8String(lowered);
  return lowered;
}

BleuStats& BleuStats::operator+=(const BleuStats& other) {
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
  hyp_length += other.hyp_length;
  ref_length += other.ref_length;
  return *this;
}

std::vector<int64_t> bleu_stats_row(const BleuStats& stats) {
  std::vector<int64_t> row = {stats.hyp_length, stats.ref_length};
  row.insert(row.end(), stats.matches.begin(), stats.matches.end());
  row.insert(row.end(), stats.totals.begin(), stats.totals.end());
  return row;
}

BleuStats bleu_stats_of_row(const std::vector<int64_t>& row) {
  CHECK(row.size() == kBleuStatsWidth) << "BLEU statistics of " << row.size() << " counts";
  BleuStats stats;
  stats.hyp_length = row[0];
  stats.ref_length = row[1];
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    stats.matches[n] = row[2 + n];
    stats.totals[n] = row[2 + kBleuMaxOrder + n];
  }
  return stats;
}

BleuTokenizer parse_bleu_tokenizer(const std::string& name) {
  if (name == "13a") return BleuTokenizer::k13a;
  if (name == "intl") return BleuTokenizer::kIntl;
  if (name == "char") return BleuTokenizer::kChar;
  if (name == "none") return BleuTokenizer::kNone;
  CHECK(false) << "unknown BLEU tokenizer '" << name << "' (13a, intl, char or none)";
  return BleuTokenizer::k13a;
}

const char* to_string(BleuTokenizer tokenizer) {
  switch (tokenizer) {
    case BleuTokenizer::k13a: return "13a";
    case BleuTokenizer::kIntl: return "intl";
    case BleuTokenizer::kChar: return "char";
    case BleuTokenizer::kNone: return "none";
  }
  return "?";
}

std::vector<std::string> bleu_tokenize(const std::string& line, BleuTokenizer tokenizer) {
  if (tokenizer == BleuTokenizer::k13a) return tokenize_13a(line);
  if (tokenizer == BleuTokenizer::kIntl) return tokenize_intl(line);
  if (tokenizer == BleuTokenizer::kNone) return split_whitespace(line);
  // char: one token per UTF-8 character, whitespace dropped (sacreBLEU joins the characters
  // with spaces and splits again).
  std::vector<std::string> tokens;
  for (size_t i = 0; i < line.size();) {
    if (const size_t space = whitespace_length(line, i); space > 0) {
      i += space;
      continue;
    }
    const auto lead = static_cast<unsigned char>(line[i]);
    const size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : 4;
    tokens.push_back(line.substr(i, length));
    i += length;
  }
  return tokens;
}

std::vector<std::string> bleu_tokenize(const std::string& line, const BleuOptions& options) {
  // sacreBLEU's BLEU._preprocess_segment: tokenizer(line.lower().rstrip()). Only intl sees the
  // difference: "2. " splits the period off, "2." does not.
  std::string text = options.lowercase ? bleu_lowercase(line) : line;
  rstrip_whitespace(text);
  return bleu_tokenize(text, options.tokenizer);
}

BleuStats sentence_bleu_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references,
                              const BleuOptions& options) {
  CHECK(!references.empty()) << "BLEU needs at least one reference";
  const std::vector<std::string> hyp = bleu_tokenize(hypothesis, options);
  BleuStats stats;
  stats.hyp_length = static_cast<int64_t>(hyp.size());
  std::unordered_map<std::string, int64_t> clip;  // n-gram -> its largest count in any reference
  int64_t closest = -1;
  for (const std::string& reference : references) {
    const std::vector<std::string> ref = bleu_tokenize(reference, options);
    const auto length = static_cast<int64_t>(ref.size());
    const int64_t difference = std::llabs(length - stats.hyp_length);
    const int64_t best = std::llabs(closest - stats.hyp_length);
    if (closest < 0 || difference < best || (difference == best && length < closest)) {
      closest = length;
    }
    for (const auto& [ngram, count] : count_ngrams(ref)) {
      int64_t& kept = clip[ngram];
      kept = std::max(kept, count);
    }
  }
  stats.ref_length = closest;
  for (const auto& [ngram, count] : count_ngrams(hyp)) {
    const int64_t n = ngram_order(ngram) - 1;
    stats.totals[n] += count;
    const auto found = clip.find(ngram);
    if (found != clip.end()) stats.matches[n] += std::min(count, found->second);
  }
  return stats;
}

BleuStats sentence_bleu_stats(const std::string& hypothesis,
                              const std::vector<std::string>& references, BleuTokenizer tokenizer) {
  return sentence_bleu_stats(hypothesis, references, BleuOptions{tokenizer, false});
}

BleuStats sentence_bleu_stats(const std::string& hypothesis, const std::string& reference) {
  return sentence_bleu_stats(hypothesis, std::vector<std::string>{reference}, BleuTokenizer::k13a);
}

BleuScore compute_bleu(const BleuStats& stats) {
  BleuScore result;
  result.stats = stats;
  const double c = static_cast<double>(stats.hyp_length);
  const double r = static_cast<double>(stats.ref_length);
  result.ratio = r > 0 ? c / r : 0.0;
  if (c < r) {
    result.brevity_penalty = c > 0 ? std::exp(1.0 - r / c) : 0.0;
  } else {
    result.brevity_penalty = 1.0;
  }
  bool any_match = false;
  for (int64_t m : stats.matches) any_match = any_match || m > 0;
  if (!any_match) return result;  // score 0, precisions 0

  double smooth = 1.0;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    if (stats.totals[n] == 0) break;  // this order and higher stay at precision 0
    const double total = static_cast<double>(stats.totals[n]);
    if (stats.matches[n] == 0) {
      smooth *= 2.0;
      result.precisions[n] = 100.0 / (smooth * total);
    } else {
      result.precisions[n] = 100.0 * static_cast<double>(stats.matches[n]) / total;
    }
  }
  // sacreBLEU's my_log: log(0) is -9999999999, which sends the score to exactly 0.
  double log_sum = 0.0;
  for (double p : result.precisions) log_sum += p == 0.0 ? -9999999999.0 : std::log(p);
  result.score = result.brevity_penalty * std::exp(log_sum / kBleuMaxOrder);
  return result;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      const BleuOptions& options) {
  CHECK(!references.empty()) << "BLEU needs at least one reference set";
  for (const std::vector<std::string>& set : references) {
    CHECK(hypotheses.size() == set.size())
        << "BLEU needs one hypothesis per reference: got " << hypotheses.size()
        << " hypotheses and " << set.size() << " references";
  }
  BleuStats stats;
  std::vector<std::string> line(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t k = 0; k < references.size(); ++k) line[k] = references[k][i];
    stats += sentence_bleu_stats(hypotheses[i], line, options);
  }
  return compute_bleu(stats);
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references,
                      BleuTokenizer tokenizer) {
  return corpus_bleu(hypotheses, references, BleuOptions{tokenizer, false});
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::string>& references) {
  return corpus_bleu(hypotheses, std::vector<std::vector<std::string>>{references},
                     BleuTokenizer::k13a);
}

std::string BleuScore::format() const {
  char text[256];
  std::snprintf(text, sizeof(text),
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f hyp_len = %lld "
                "ref_len = %lld)",
                score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty,
                ratio, static_cast<long long>(stats.hyp_length),
                static_cast<long long>(stats.ref_length));
  return text;
}

std::string bleu_signature(size_t references, const BleuOptions& options,
                           const std::string& test_fields) {
  // sacreBLEU's fields; the version names this implementation of sacreBLEU 2.x's rules.
  return "nrefs:" + std::to_string(references) + "|" + test_fields +
         "case:" + (options.lowercase ? "lc" : "mixed") +
         "|eff:no|tok:" + to_string(options.tokenizer) + "|smooth:exp|version:" + kSignatureVersion;
}

std::string bleu_signature(size_t references, BleuTokenizer tokenizer) {
  return bleu_signature(references, BleuOptions{tokenizer, false});
}

std::string bleu_signature() { return bleu_signature(1, BleuTokenizer::k13a); }

}  // namespace attnlab
