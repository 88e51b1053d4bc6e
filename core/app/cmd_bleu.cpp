// `attnlab bleu REF [HYP ...]`: sacreBLEU's corpus metrics of detokenized hypotheses against
// references, and its paired significance tests between systems.
//   one system (a file, or standard input), like `sacrebleu REF -i HYP -m bleu chrf`: each
//     metric's score and signature (--json for machines);
//   several, like `sacrebleu REF -i BASELINE SYS... --paired-bs` (or --paired-ar): a table of
//     every system's scores, with each system's p-value against the first (the baseline), the
//     bootstrap's mean and 95% interval, and the signatures, which name the test, its samples and
//     its seed. Without a test, several systems give the table of their scores.
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "core/app/cli.h"
#include "core/app/json_text.h"
#include "core/data/corpus.h"
#include "core/metrics/bleu.h"
#include "core/metrics/chrf.h"
#include "core/metrics/significance.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

std::string number(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

// One metric of --metrics: BLEU (with --tokenize and -lc) or chrF (with the --chrf-* options).
struct Metric {
  bool is_bleu = true;
  BleuOptions bleu;
  ChrfOptions chrf;

  std::string name() const { return is_bleu ? "BLEU" : chrf_name(chrf); }
  std::vector<int64_t> segment_stats(const std::string& hypothesis,
                                     const std::vector<std::string>& references) const {
    return is_bleu ? bleu_stats_row(sentence_bleu_stats(hypothesis, references, bleu))
                   : chrf_segment_stats(hypothesis, references, chrf);
  }
  double score(const std::vector<int64_t>& totals) const {
    return is_bleu ? compute_bleu(bleu_stats_of_row(totals)).score : chrf_score(totals, chrf);
  }
  std::string signature(size_t references, const std::string& test_fields = "") const {
    return is_bleu ? bleu_signature(references, bleu, test_fields)
                   : chrf_signature(references, chrf, test_fields);
  }
};

// references[k][i]: line i of reference file k.
SegmentStats system_stats(const Metric& metric, const std::vector<std::string>& hypotheses,
                          const std::vector<std::vector<std::string>>& references) {
  SegmentStats stats;
  stats.width = metric.is_bleu ? kBleuStatsWidth : 3 * static_cast<size_t>(metric.chrf.orders());
  stats.counts.reserve(stats.width * hypotheses.size());
  std::vector<std::string> line(references.size());
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (size_t k = 0; k < references.size(); ++k) line[k] = references[k][i];
    stats.append(metric.segment_stats(hypotheses[i], line));
  }
  return stats;
}

std::string single_text(const Metric& metric, const std::vector<int64_t>& totals) {
  if (metric.is_bleu) return compute_bleu(bleu_stats_of_row(totals)).format();
  return metric.name() + " = " + number(metric.score(totals), 2);
}

std::string single_json(const Metric& metric, const std::vector<int64_t>& totals,
                        const std::string& signature) {
  std::string out = "{\"name\": " + json_string(metric.name()) +
                    ", \"score\": " + number(metric.score(totals), 4) +
                    ", \"signature\": " + json_string(signature);
  if (metric.is_bleu) {
    const BleuScore bleu = compute_bleu(bleu_stats_of_row(totals));
    std::string precisions;
    for (size_t n = 0; n < bleu.precisions.size(); ++n) {
      precisions += (n ? ", " : "") + number(bleu.precisions[n], 4);
    }
    out += ", \"precisions\": [" + precisions + "], \"bp\": " + number(bleu.brevity_penalty, 4) +
           ", \"ratio\": " + number(bleu.ratio, 4) +
           ", \"hyp_len\": " + std::to_string(bleu.stats.hyp_length) +
           ", \"ref_len\": " + std::to_string(bleu.stats.ref_length);
  }
  return out + "}";
}

// Display width of UTF-8 text: its code points ("μ ± 95%" is 7 wide).
size_t text_width(const std::string& text) {
  size_t width = 0;
  for (const char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

// Columns left-aligned and two spaces apart, a rule under the header.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], text_width(row[c]));
  }
  std::string out;
  const auto add_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] + 2 - text_width(row[c]), ' ');
    }
    out += line + "\n";
  };
  add_row(rows[0]);
  std::vector<std::string> rule;
  rule.reserve(widths.size());
  for (const size_t width : widths) rule.emplace_back(width, '-');
  add_row(rule);
  for (size_t r = 1; r < rows.size(); ++r) add_row(rows[r]);
  return out;
}

// sacreBLEU's significance marker: "*" when p <= 0.05 (the null hypothesis is rejected).
constexpr double kSignificanceLevel = 0.05;

std::string result_cell(const PairedResult& result, int width) {
  std::string cell = number(result.score, width);
  if (result.mean)
    cell += " (" + number(*result.mean, width) + " ± " + number(*result.ci, width) + ")";
  if (result.p_value) {
    cell += " (p = " + number(*result.p_value, 4) + ")";
    if (*result.p_value <= kSignificanceLevel) cell += "*";
  }
  return cell;
}

std::string result_json(const PairedResult& result, const std::string& signature) {
  const auto optional = [](const std::optional<double>& value) {
    return value ? json_number(*value) : std::string("null");
  };
  return "{\"score\": " + json_number(result.score) + ", \"p_value\": " + optional(result.p_value) +
         ", \"mean\": " + optional(result.mean) + ", \"ci\": " + optional(result.ci) +
         ", \"signature\": " + json_string(signature) + "}";
}

void print_test_legend(const PairedTestOptions& test, const std::string& baseline) {
  const bool bootstrap = test.test == PairedTest::kBootstrap;
  const std::string title = std::string("Paired ") +
                            (bootstrap ? "bootstrap resampling" : "approximate randomization") +
                            " test with " + std::to_string(samples_of(test)) +
                            (bootstrap ? " resampling trials" : " trials");
  const std::string rule(title.size(), '-');
  std::cout << rule << "\n"
            << title << "\n"
            << rule << "\n"
            << " - Each system is pairwise compared to " << baseline << ".\n"
            << (bootstrap ? "   Actual system score / bootstrap estimated true mean / 95% CI are "
                            "provided for each metric.\n"
                          : "   Actual system score is provided for each metric.\n")
            << "\n"
            << " - Null hypothesis: the system and the baseline translations are essentially\n"
            << "   generated by the same underlying process. For a given system and the "
               "baseline,\n"
            << "   the p-value is roughly the probability of the absolute score difference "
               "(delta)\n"
            << "   or higher occurring due to chance, under the assumption that the null "
               "hypothesis is correct.\n\n"
            << " - Assuming a significance threshold of 0.05, the null hypothesis is rejected\n"
            << "   for p-values <= 0.05 (marked with \"*\"): the delta is unlikely to be due to\n"
            << "   chance, hence the system is significantly \"different\" than the baseline.\n\n"
            << " - NOTE: Significance does not tell whether a system is \"better\" than the "
               "baseline but rather\n"
            << "   emphasizes the \"difference\" of the systems in terms of the replicability of "
               "the delta.\n\n";
}

std::vector<Metric> parse_metrics(const po::variables_map& values, const BleuOptions& bleu) {
  ChrfOptions chrf;
  chrf.char_order = values["chrf-char-order"].as<int>();
  chrf.beta = values["chrf-beta"].as<int>();
  chrf.lowercase = values.count("chrf-lowercase") > 0;
  chrf.whitespace = values.count("chrf-whitespace") > 0;
  chrf.eps_smoothing = values.count("chrf-eps-smoothing") > 0;
  if (chrf.char_order < 0) throw UsageError("--chrf-char-order must be >= 0");
  if (chrf.beta < 0) throw UsageError("--chrf-beta must be >= 0");
  const bool word_order_given = values.count("chrf-word-order") > 0;
  const int word_order = word_order_given ? values["chrf-word-order"].as<int>() : 0;
  if (word_order < 0) throw UsageError("--chrf-word-order must be >= 0");

  std::vector<Metric> metrics;
  std::set<std::string> seen;
  bool plain_chrf = false;  // chrf itself, whose word order --chrf-word-order sets
  std::string list = values["metrics"].as<std::string>();
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    Metric metric;
    if (name == "bleu") {
      metric.bleu = bleu;
    } else if (name == "chrf" || name == "chrf++") {
      metric.is_bleu = false;
      metric.chrf = chrf;
      plain_chrf = plain_chrf || name == "chrf";
      metric.chrf.word_order = name == "chrf" ? word_order : 2;
      if (metric.chrf.orders() == 0) {
        throw UsageError("chrf with --chrf-char-order 0 needs --chrf-word-order above 0");
      }
    } else {
      throw UsageError("--metrics: unknown metric '" + name +
                       "' (a comma-separated list of bleu, chrf and chrf++)");
    }
    if (!seen.insert(metric.name()).second) {
      throw UsageError("--metrics names " + metric.name() + " twice");
    }
    metrics.push_back(metric);
  }
  const bool any_chrf = seen.size() > seen.count("BLEU");
  if (word_order_given && !plain_chrf) {
    throw UsageError(
        "--chrf-word-order sets the word order of --metrics chrf (chrf++ is word "
        "order 2); add chrf to --metrics");
  }
  const bool chrf_options_given = !values["chrf-char-order"].defaulted() ||
                                  !values["chrf-beta"].defaulted() || chrf.lowercase ||
                                  chrf.whitespace || chrf.eps_smoothing;
  if (chrf_options_given && !any_chrf) {
    throw UsageError("--chrf-* options need chrf or chrf++ in --metrics");
  }
  if (seen.count("BLEU") == 0 && (bleu.lowercase || !values["tokenize"].defaulted())) {
    throw UsageError("--tokenize and -lc are BLEU's options; add bleu to --metrics");
  }
  return metrics;
}

std::optional<PairedTestOptions> parse_test(const po::variables_map& values) {
  const bool bootstrap = values.count("paired-bs") > 0;
  const bool randomization = values.count("paired-ar") > 0;
  if (bootstrap && randomization) {
    throw UsageError("--paired-bs and --paired-ar exclude each other");
  }
  if (!values["paired-bs-n"].defaulted() && !bootstrap) {
    throw UsageError("--paired-bs-n is the number of resamples of --paired-bs");
  }
  if (!values["paired-ar-n"].defaulted() && !randomization) {
    throw UsageError("--paired-ar-n is the number of trials of --paired-ar");
  }
  if (!values["seed"].defaulted() && !bootstrap && !randomization) {
    throw UsageError("--seed seeds --paired-bs or --paired-ar");
  }
  if (!bootstrap && !randomization) return std::nullopt;
  PairedTestOptions test;
  test.test = bootstrap ? PairedTest::kBootstrap : PairedTest::kApproximateRandomization;
  test.samples = values[bootstrap ? "paired-bs-n" : "paired-ar-n"].as<int64_t>();
  if (test.samples < 1) {
    throw UsageError(std::string(bootstrap ? "--paired-bs-n" : "--paired-ar-n") +
                     " must be >= 1, got " + std::to_string(test.samples));
  }
  const std::string seed = values["seed"].as<std::string>();
  if (seed == "none" || seed == "None") {
    test.seed = std::nullopt;
  } else {
    if (seed.empty() || seed.find_first_not_of("0123456789") != std::string::npos ||
        seed.size() > 19) {
      throw UsageError("--seed must be an integer in [0, 10^19) or none, got '" + seed + "'");
    }
    test.seed = std::stoull(seed);
  }
  return test;
}

po::options_description bleu_command_options() {
  po::options_description options("bleu options");
  options.add_options()("ref", po::value<std::string>(), "reference file, one segment a line")(
      "hyp", po::value<std::vector<std::string>>(),
      "hypothesis files: one system (default: standard input), or a baseline and the systems "
      "compared with it")(
      "more-refs,r", po::value<std::vector<std::string>>()->composing(),
      "another reference file, line-aligned with the first (repeatable: several references)")(
      "metrics", po::value<std::string>()->default_value("bleu"),
      "comma-separated: bleu, chrf (chrF2; chrF++ with --chrf-word-order 2) and chrf++")(
      "tokenize", po::value<std::string>()->default_value("13a"),
      "BLEU: 13a (sacreBLEU's default), intl (Unicode punctuation and symbols), char or none")(
      "lowercase",
      "or -lc: BLEU lowercases hypotheses and references before tokenizing, as Python's "
      "str.lower() does (case-insensitive BLEU)")(
      "chrf-char-order", po::value<int>()->default_value(6), "chrF: character n-gram order")(
      "chrf-word-order", po::value<int>(),
      "chrF: word n-gram order of --metrics chrf (default 0; 2 is chrF++)")(
      "chrf-beta", po::value<int>()->default_value(2), "chrF: weight of recall over precision")(
      "chrf-lowercase", "chrF: case-insensitive (Python's str.lower())")(
      "chrf-whitespace", "chrF: keep whitespace in character n-grams")(
      "chrf-eps-smoothing",
      "chrF: average the per-order F scores with 1e-16 for undefined ones (chrF++.py, NLTK, "
      "Moses) instead of sacreBLEU's effective order")(
      "paired-bs",
      "or -pbs: paired bootstrap resampling test of every system against the first (baseline)")(
      "paired-ar", "or -par: paired approximate randomization test against the first (baseline)")(
      "paired-bs-n", po::value<int64_t>()->default_value(1000),
      "resamples of --paired-bs (sacreBLEU's default)")(
      "paired-ar-n", po::value<int64_t>()->default_value(10000),
      "trials of --paired-ar (sacreBLEU's default)")(
      "seed", po::value<std::string>()->default_value("12345"),
      "seed of the paired tests' draws (numpy's default_rng, as sacreBLEU's SACREBLEU_SEED), or "
      "none for fresh entropy")("width", po::value<int>()->default_value(1),
                                "decimals of the scores in the table of several systems")(
      "json", "print JSON instead of text");
  return options;
}

// sacreBLEU spells --lowercase, --paired-bs and --paired-ar as -lc, -pbs and -par, which Boost
// would read as bundled short options.
std::vector<std::string> with_sacrebleu_spellings(std::vector<std::string> arguments) {
  for (std::string& arg : arguments) {
    if (arg == "--") break;
    if (arg == "-lc") arg = "--lowercase";
    if (arg == "-pbs") arg = "--paired-bs";
    if (arg == "-par") arg = "--paired-ar";
  }
  return arguments;
}

// The files scored: references (one or more, line-aligned) and systems (one, or a baseline and
// the systems compared with it), each system as long as every reference.
struct Inputs {
  std::vector<std::string> ref_paths;
  std::vector<std::string> hyp_paths;  // "standard input" for a system read from it
  std::vector<std::vector<std::string>> references;
  std::vector<std::vector<std::string>> systems;
};

Inputs read_inputs(const po::variables_map& values, bool paired_test) {
  Inputs in;
  in.hyp_paths = strings(values, "hyp");
  if (paired_test && in.hyp_paths.size() < 2) {
    throw UsageError(
        "a paired test needs a baseline and at least one system: bleu REF BASELINE "
        "SYS... --paired-bs");
  }
  if (in.hyp_paths.size() < 2 && !values["width"].defaulted()) {
    throw UsageError("--width formats the table of several systems");
  }
  std::set<std::string> distinct(in.hyp_paths.begin(), in.hyp_paths.end());
  if (distinct.size() != in.hyp_paths.size()) {
    throw UsageError("a hypothesis file is given twice; each system is one file");
  }
  in.ref_paths = {values["ref"].as<std::string>()};
  for (const std::string& path : strings(values, "more-refs")) in.ref_paths.push_back(path);
  in.references.reserve(in.ref_paths.size());
  for (const std::string& path : in.ref_paths) in.references.push_back(read_bleu_lines(path));
  if (in.hyp_paths.empty()) {
    in.hyp_paths.emplace_back("standard input");
    in.systems.push_back(read_bleu_lines(std::cin, in.hyp_paths[0]));
  } else {
    for (const std::string& path : in.hyp_paths) in.systems.push_back(read_bleu_lines(path));
  }
  for (size_t s = 0; s < in.systems.size(); ++s) {
    for (size_t k = 0; k < in.references.size(); ++k) {
      if (in.systems[s].size() != in.references[k].size()) {
        throw UsageError(in.hyp_paths[s] + " has " + std::to_string(in.systems[s].size()) +
                         " lines but " + in.ref_paths[k] + " has " +
                         std::to_string(in.references[k].size()) +
                         ": the metrics need one hypothesis line per reference line");
      }
    }
  }
  return in;
}

// One system: each metric's score and signature, as text or JSON (a list for several metrics).
void print_one_system(const std::vector<Metric>& metrics,
                      const std::vector<std::vector<SegmentStats>>& stats, size_t references,
                      bool json) {
  std::vector<std::string> outputs;
  for (size_t m = 0; m < metrics.size(); ++m) {
    const std::vector<int64_t> totals = stats[m][0].totals();
    const std::string signature = metrics[m].signature(references);
    outputs.push_back(json ? single_json(metrics[m], totals, signature)
                           : single_text(metrics[m], totals) + "\nsignature: " + signature);
  }
  if (json && outputs.size() > 1) {
    std::cout << "[\n";
    for (size_t m = 0; m < outputs.size(); ++m) {
      std::cout << outputs[m] << (m + 1 < outputs.size() ? ",\n" : "\n");
    }
    std::cout << "]\n";
  } else {
    for (const std::string& output : outputs) std::cout << output << "\n";
  }
}

// Several systems: results[m][s] of system s under metric m (with the paired test against the
// first when one is asked for) and each metric's signature.
struct SystemResults {
  std::vector<std::vector<PairedResult>> results;
  std::vector<std::string> signatures;
};

SystemResults score_systems(const std::vector<Metric>& metrics,
                            const std::vector<std::vector<SegmentStats>>& stats, size_t references,
                            const std::optional<PairedTestOptions>& test) {
  SystemResults out;
  out.results.resize(metrics.size());
  for (size_t m = 0; m < metrics.size(); ++m) {
    const Metric& metric = metrics[m];
    const ScoreOfTotals score = [&metric](const std::vector<int64_t>& totals) {
      return metric.score(totals);
    };
    if (test) {
      out.results[m] = paired_test(stats[m], score, *test);
      out.signatures.push_back(metric.signature(references, paired_test_fields(*test)));
    } else {
      for (const SegmentStats& system : stats[m]) {
        PairedResult result;
        result.score = score(system.totals());
        out.results[m].push_back(result);
      }
      out.signatures.push_back(metric.signature(references));
    }
  }
  return out;
}

void print_systems_json(const std::vector<Metric>& metrics, const std::vector<std::string>& names,
                        const SystemResults& scored) {
  std::cout << "[\n";
  for (size_t s = 0; s < names.size(); ++s) {
    std::cout << "  {\"system\": " << json_string(names[s]);
    for (size_t m = 0; m < metrics.size(); ++m) {
      std::cout << ", " << json_string(metrics[m].name()) << ": "
                << result_json(scored.results[m][s], scored.signatures[m]);
    }
    std::cout << "}" << (s + 1 < names.size() ? ",\n" : "\n");
  }
  std::cout << "]\n";
}

// sacreBLEU's table of systems, the test's legend, and the metrics' signatures.
void print_systems_table(const std::vector<Metric>& metrics, const std::vector<std::string>& names,
                         const SystemResults& scored, const std::optional<PairedTestOptions>& test,
                         int width) {
  std::vector<std::vector<std::string>> rows(names.size() + 1);
  rows[0].emplace_back("System");
  for (const Metric& metric : metrics) {
    const bool bootstrap = test && test->test == PairedTest::kBootstrap;
    rows[0].push_back(metric.name() + (bootstrap ? " (μ ± 95% CI)" : ""));
  }
  for (size_t s = 0; s < names.size(); ++s) {
    rows[s + 1].push_back(names[s]);
    for (size_t m = 0; m < metrics.size(); ++m) {
      rows[s + 1].push_back(result_cell(scored.results[m][s], width));
    }
  }
  std::cout << table(rows) << "\n";
  if (test) print_test_legend(*test, names[0]);
  std::cout << "-----------------\nMetric signatures\n-----------------\n";
  for (size_t m = 0; m < metrics.size(); ++m) {
    std::string name = metrics[m].name();
    name.resize(std::max<size_t>(name.size(), 10), ' ');
    std::cout << " - " << name << " " << scored.signatures[m] << "\n";
  }
}

int run_bleu(const std::vector<std::string>& args) {
  po::options_description options = bleu_command_options();
  po::positional_options_description positional;
  positional.add("ref", 1).add("hyp", -1);
  po::variables_map values;
  if (!parse("bleu",
             "REF [HYP | BASELINE SYS...] [-r REF2 ...] [--metrics bleu,chrf,chrf++] [--tokenize "
             "13a|intl|char|none] [-lc] [--paired-bs | --paired-ar] [--json]   (one HYP "
             "defaults to standard input)",
             with_sacrebleu_spellings(args), options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("ref")) throw UsageError("attnlab bleu needs a reference file: bleu REF [HYP]");
  BleuOptions bleu_options;
  bleu_options.lowercase = values.count("lowercase") > 0;
  try {
    bleu_options.tokenizer = parse_bleu_tokenizer(values["tokenize"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--tokenize: ") + error.what());
  }
  const std::vector<Metric> metrics = parse_metrics(values, bleu_options);
  const std::optional<PairedTestOptions> test = parse_test(values);
  const int width = values["width"].as<int>();
  if (width < 0 || width > 10) throw UsageError("--width must be in [0, 10]");
  const Inputs in = read_inputs(values, test.has_value());

  // stats[m][s]: system s under metric m.
  std::vector<std::vector<SegmentStats>> stats(metrics.size());
  for (size_t m = 0; m < metrics.size(); ++m) {
    for (const std::vector<std::string>& system : in.systems) {
      stats[m].push_back(system_stats(metrics[m], system, in.references));
    }
  }
  const bool json = values.count("json") > 0;
  if (in.systems.size() == 1) {
    print_one_system(metrics, stats, in.references.size(), json);
    return kExitOk;
  }
  const SystemResults scored = score_systems(metrics, stats, in.references.size(), test);
  std::vector<std::string> names = in.hyp_paths;
  if (test) names[0] = "Baseline: " + names[0];
  if (json) {
    print_systems_json(metrics, names, scored);
  } else {
    print_systems_table(metrics, names, scored, test, width);
  }
  return kExitOk;
}

const CommandRegistration kRegister{
    "bleu", "sacreBLEU's BLEU and chrF, and its paired significance tests between systems",
    &run_bleu};

}  // namespace
}  // namespace attnlab::cli
