// `attnlab bleu REF [HYP]`: corpus BLEU of detokenized hypotheses (a file, or stdin) against a
// reference file, like `sacrebleu REF < HYP`: score, n-gram precisions, brevity penalty and the
// signature; --json for machines.
#include <cstdio>
#include <iostream>

#include "core/app/cli.h"
#include "core/data/corpus.h"
#include "core/metrics/bleu.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

std::string number(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string json(const BleuScore& bleu, const std::string& signature) {
  std::string precisions;
  for (size_t n = 0; n < bleu.precisions.size(); ++n) {
    precisions += (n ? ", " : "") + number(bleu.precisions[n], 4);
  }
  return "{\"name\": \"BLEU\", \"score\": " + number(bleu.score, 4) + ", \"signature\": \"" +
         signature + "\", \"precisions\": [" + precisions +
         "], \"bp\": " + number(bleu.brevity_penalty, 4) + ", \"ratio\": " + number(bleu.ratio, 4) +
         ", \"hyp_len\": " + std::to_string(bleu.stats.hyp_length) +
         ", \"ref_len\": " + std::to_string(bleu.stats.ref_length) + "}";
}

int run_bleu(const std::vector<std::string>& args) {
  po::options_description options("bleu options");
  options.add_options()("ref", po::value<std::string>(), "reference file, one segment a line")(
      "hyp", po::value<std::string>(), "hypothesis file (default: standard input)")(
      "more-refs,r", po::value<std::vector<std::string>>()->composing(),
      "another reference file, line-aligned with the first (repeatable: several references)")(
      "tokenize", po::value<std::string>()->default_value("13a"),
      "13a (sacreBLEU's default), intl (Unicode punctuation and symbols), char or none")(
      "lowercase",
      "or -lc: lowercase hypotheses and references before tokenizing, as Python's "
      "str.lower() does (case-insensitive BLEU)")("json", "print one JSON object instead of text");
  po::positional_options_description positional;
  positional.add("ref", 1).add("hyp", 1);
  po::variables_map values;
  // sacreBLEU spells it -lc, which Boost would read as the short options -l -c.
  std::vector<std::string> arguments = args;
  for (std::string& arg : arguments) {
    if (arg == "--") break;
    if (arg == "-lc") arg = "--lowercase";
  }
  if (!parse("bleu",
             "REF [HYP] [-r REF2 ...] [--tokenize 13a|intl|char|none] [-lc] [--json]   (HYP "
             "defaults to standard input)",
             arguments, options, positional, values)) {
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
  std::vector<std::string> ref_paths = {values["ref"].as<std::string>()};
  for (const std::string& path : strings(values, "more-refs")) ref_paths.push_back(path);
  std::vector<std::vector<std::string>> references;
  references.reserve(ref_paths.size());
  for (const std::string& path : ref_paths) references.push_back(read_bleu_lines(path));
  const bool from_file = values.count("hyp") > 0;
  const std::string hyp_name = from_file ? values["hyp"].as<std::string>() : "standard input";
  const std::vector<std::string> hypotheses =
      from_file ? read_bleu_lines(hyp_name) : read_bleu_lines(std::cin, hyp_name);
  for (size_t k = 0; k < references.size(); ++k) {
    CHECK(hypotheses.size() == references[k].size())
        << hyp_name << " has " << hypotheses.size() << " lines but " << ref_paths[k] << " has "
        << references[k].size() << ": BLEU needs one hypothesis per reference line";
  }
  const BleuScore bleu = corpus_bleu(hypotheses, references, bleu_options);
  const std::string signature = bleu_signature(references.size(), bleu_options);
  if (values.count("json")) {
    std::cout << json(bleu, signature) << "\n";
  } else {
    std::cout << bleu.format() << "\n"
              << "signature: " << signature << "\n";
  }
  return kExitOk;
}

const CommandRegistration kRegister{
    "bleu", "corpus BLEU of hypotheses (file or stdin) against a reference, sacreBLEU-compatible",
    &run_bleu};

}  // namespace
}  // namespace attnlab::cli
