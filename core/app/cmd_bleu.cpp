// `attnlab bleu REF [HYP]`: corpus BLEU of detokenized hypotheses (a file, or stdin) against a
// reference file, like `sacrebleu REF < HYP`: score, n-gram precisions, brevity penalty and the
// signature; --json for machines.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/app/cli.h"
#include "core/metrics/bleu.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

// Lines of a stream; empty lines are kept (an empty hypothesis is a valid, poor translation).
std::vector<std::string> read_lines(std::istream& in) {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good()) << "cannot open " << path << " (missing file or no permission)";
  return read_lines(in);
}

std::string number(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string json(const BleuScore& bleu) {
  std::string precisions;
  for (size_t n = 0; n < bleu.precisions.size(); ++n) {
    precisions += (n ? ", " : "") + number(bleu.precisions[n], 4);
  }
  return "{\"name\": \"BLEU\", \"score\": " + number(bleu.score, 4) + ", \"signature\": \"" +
         bleu_signature() + "\", \"precisions\": [" + precisions +
         "], \"bp\": " + number(bleu.brevity_penalty, 4) + ", \"ratio\": " + number(bleu.ratio, 4) +
         ", \"hyp_len\": " + std::to_string(bleu.stats.hyp_length) +
         ", \"ref_len\": " + std::to_string(bleu.stats.ref_length) + "}";
}

int run_bleu(const std::vector<std::string>& args) {
  po::options_description options("bleu options");
  options.add_options()("ref", po::value<std::string>(), "reference file, one segment a line")(
      "hyp", po::value<std::string>(), "hypothesis file (default: standard input)")(
      "json", "print one JSON object instead of text");
  po::positional_options_description positional;
  positional.add("ref", 1).add("hyp", 1);
  po::variables_map values;
  if (!parse("bleu", "REF [HYP] [--json]   (HYP defaults to standard input)", args, options,
             positional, values)) {
    return kExitOk;
  }
  if (!values.count("ref")) throw UsageError("attnlab bleu needs a reference file: bleu REF [HYP]");
  const std::string ref_path = values["ref"].as<std::string>();
  const std::vector<std::string> references = read_lines(ref_path);
  const bool from_file = values.count("hyp") > 0;
  const std::string hyp_name = from_file ? values["hyp"].as<std::string>() : "standard input";
  const std::vector<std::string> hypotheses =
      from_file ? read_lines(hyp_name) : read_lines(std::cin);
  CHECK(hypotheses.size() == references.size())
      << hyp_name << " has " << hypotheses.size() << " lines but " << ref_path << " has "
      << references.size() << ": BLEU needs one hypothesis per reference line";
  const BleuScore bleu = corpus_bleu(hypotheses, references);
  if (values.count("json")) {
    std::cout << json(bleu) << "\n";
  } else {
    std::cout << bleu.format() << "\n"
              << "signature: " << bleu_signature() << "\n";
  }
  return kExitOk;
}

const CommandRegistration kRegister{
    "bleu", "corpus BLEU of hypotheses (file or stdin) against a reference, sacreBLEU-compatible",
    &run_bleu};

}  // namespace
}  // namespace attnlab::cli
