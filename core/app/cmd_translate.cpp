// `attnlab translate RUN_DIR < src.txt > out.txt`: raw source text in, one translation a line out
// (tokenize, beam search, detokenize). Empty input lines give empty output lines, so the output
// stays line-aligned with the input.
#include <iostream>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/app/decoding_settings.h"
#include "core/data/corpus.h"
#include "core/train/corpus_source.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

int run_translate(const std::vector<std::string>& args) {
  po::options_description options("translate options");
  options.add_options()("run", po::value<std::string>(), "run directory (holds run.h5 and ckpt/)");
  add_decoding_options(options);
  po::positional_options_description positional;
  positional.add("run", 1);
  po::variables_map values;
  if (!parse("translate", "RUN_DIR [--beam 4 --alpha 0.6 --average K] < SOURCE > TRANSLATION", args,
             options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("run")) {
    throw UsageError("translate needs a run directory: attnlab translate RUN_DIR < src.txt");
  }
  const std::string run_dir = values["run"].as<std::string>();
  const ExperimentConfig stored = load_run_config(run_dir);
  const DecodingSettings settings = decoding_settings(values, stored);
  const int64_t average = settings.average;
  const BeamOptions& beam = settings.beam;

  // Read and check all input before any output: an invalid line produces no partial output.
  std::vector<std::string> lines;
  std::vector<size_t> nonempty;  // input line of each segment to translate
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const int64_t bad = find_invalid_utf8(line);
    CHECK(bad < 0) << "standard input:" << lines.size() + 1 << ": invalid UTF-8 at byte " << bad + 1
                   << " of the line";
    if (line.find_first_not_of(" \t\v\f") != std::string::npos) nonempty.push_back(lines.size());
    lines.push_back(line);
  }
  RunModel run = load_run_model(run_dir, average, settings.best);
  note_skipped_checkpoints("translate", run);
  std::vector<std::string> segments;
  segments.reserve(nonempty.size());
  for (size_t i : nonempty) segments.push_back(lines[i]);
  std::vector<std::string> output(lines.size());
  if (!segments.empty()) {
    const EvalSet set = make_source_set(segments, run.tokenizer, run.config.train.batch_tokens,
                                        run.config.data.max_length, run.config.model);
    note_truncation("translate", "input lines", set, run.config);
    const Translation translation = translate_set(*run.model, run.tokenizer, set, beam, false);
    for (size_t k = 0; k < nonempty.size(); ++k) output[nonempty[k]] = translation.hypotheses[k];
  }
  for (const std::string& text : output) std::cout << text << "\n";
  std::cout.flush();
  return kExitOk;
}

const CommandRegistration kRegister{
    "translate", "translate raw text from stdin with a corpus run (beam search)", &run_translate};

}  // namespace
}  // namespace attnlab::cli
