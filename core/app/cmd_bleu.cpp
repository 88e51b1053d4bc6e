// `attnlab bleu REF [HYP]`: corpus BLEU of detokenized hypotheses (a file, or stdin) against a
// reference file, like `sacrebleu REF < HYP`: score, n-gram precisions, brevity penalty and the
// signature; --json for machines.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/app/cli.h"
#include "core/data/corpus.h"
#include "core/metrics/bleu.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

// Lines of a stream, checked as sacreBLEU and our corpus reader check them: valid UTF-8 (an
// error names the input and the line), and at least one line. Empty lines are kept (an empty
// hypothesis is a valid, poor translation).
std::vector<std::string> read_lines(std::istream& in, const std::string& name) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int64_t bad = find_invalid_utf8(line);
    CHECK(bad < 0) << name << ":" << lines.size() + 1 << ": invalid UTF-8 at byte " << bad + 1
                   << " of the line";
    lines.push_back(std::move(line));
  }
  CHECK(!in.bad()) << "error while reading " << name;
  CHECK(!lines.empty()) << name << " is empty: BLEU needs at least one line";
  return lines;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::error_code error;
  CHECK(std::filesystem::is_regular_file(path, error))
      << path << " is not a regular file (a directory, a device or missing)";
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good()) << "cannot open " << path << " (no permission?)";
  return read_lines(in, path);
}

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
      "13a (sacreBLEU's default), char or none")("json", "print one JSON object instead of text");
  po::positional_options_description positional;
  positional.add("ref", 1).add("hyp", 1);
  po::variables_map values;
  if (!parse("bleu",
             "REF [HYP] [-r REF2 ...] [--tokenize 13a|char|none] [--json]   (HYP "
             "defaults to standard input)",
             args, options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("ref")) throw UsageError("attnlab bleu needs a reference file: bleu REF [HYP]");
  BleuTokenizer tokenizer = BleuTokenizer::k13a;
  try {
    tokenizer = parse_bleu_tokenizer(values["tokenize"].as<std::string>());
  } catch (const Error& error) {
    throw UsageError(std::string("--tokenize: ") + error.what());
  }
  std::vector<std::string> ref_paths = {values["ref"].as<std::string>()};
  for (const std::string& path : strings(values, "more-refs")) ref_paths.push_back(path);
  std::vector<std::vector<std::string>> references;
  references.reserve(ref_paths.size());
  for (const std::string& path : ref_paths) references.push_back(read_lines(path));
  const bool from_file = values.count("hyp") > 0;
  const std::string hyp_name = from_file ? values["hyp"].as<std::string>() : "standard input";
  const std::vector<std::string> hypotheses =
      from_file ? read_lines(hyp_name) : read_lines(std::cin, hyp_name);
  for (size_t k = 0; k < references.size(); ++k) {
    CHECK(hypotheses.size() == references[k].size())
        << hyp_name << " has " << hypotheses.size() << " lines but " << ref_paths[k] << " has "
        << references[k].size() << ": BLEU needs one hypothesis per reference line";
  }
  const BleuScore bleu = corpus_bleu(hypotheses, references, tokenizer);
  const std::string signature = bleu_signature(references.size(), tokenizer);
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
