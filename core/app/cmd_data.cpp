// `attnlab data bible|text`: prepares a corpus by running its script under experiments/data/ with
// the project's Python (core/app/python.h). bible.py exports and aligns the WEB and Reina-Valera
// 1909 Bibles; text.py cleans and splits one's own parallel text. The command line is checked
// here; the cleaning rules and their defaults live in the scripts.
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/app/python.h"

namespace attnlab::cli {
namespace {

const char* const kBibleScript = "experiments/data/bible.py";
const char* const kTextScript = "experiments/data/text.py";

const char* const kUsage =
    "bible [--out DIR] [--slice]\n"
    "       attnlab data text --src FILE --tgt FILE --out DIR [--src-lang L --tgt-lang L]\n"
    "            [--dev-src FILE --dev-tgt FILE | --dev-size N]\n"
    "            [--test-src FILE --test-tgt FILE | --test-size N]\n"
    "            [--seed S] [--max-length N] [--max-ratio R] [--clean-held-out] [--force]";

po::options_description bible_options() {
  po::options_description options("data bible options");
  options.add_options()("slice",
                        "only the small slice: train = Genesis + Mark, dev = Jonah, test = Ruth");
  return options;
}

// The options text.py takes, by the same names; their defaults are text.py's.
po::options_description text_options() {
  po::options_description options("data text options");
  po::options_description_easy_init add = options.add_options();
  add("src", po::value<std::string>(), "training source text, one sentence a line");
  add("tgt", po::value<std::string>(), "training target text, line-aligned with --src");
  add("src-lang", po::value<std::string>(),
      "source language, the output files' suffix (default src)");
  add("tgt-lang", po::value<std::string>(), "target language (default tgt)");
  add("dev-src", po::value<std::string>(),
      "dev source text, kept as given (default: dev is drawn from the cleaned training pairs)");
  add("dev-tgt", po::value<std::string>(), "dev target text");
  add("test-src", po::value<std::string>(), "test source text (default: drawn as dev is)");
  add("test-tgt", po::value<std::string>(), "test target text");
  add("dev-size", po::value<int64_t>(),
      "pairs of a drawn dev split (default 5% of the cleaned training pairs, 1 to 1000)");
  add("test-size", po::value<int64_t>(), "pairs of a drawn test split (default as dev)");
  add("seed", po::value<int64_t>(),
      "seed of the drawn splits (default 1): the same seed draws the same pairs");
  add("max-length", po::value<int64_t>(),
      "drop a pair with more than N whitespace-separated words on a side (default 250; 0 = no "
      "limit)");
  add("max-ratio", po::value<double>(),
      "drop a pair whose longer side has more than R times the words of the shorter (default 3; "
      "0 = no limit)");
  add("clean-held-out",
      "drop pairs of given dev and test files by the training rules too (default: kept as "
      "given, so that scores on them stay comparable; DATA_CARD.md counts what each rule would "
      "have dropped)");
  add("force",
      "rewrite --out when it holds a corpus made from other inputs or options (refused "
      "otherwise; the same inputs and options again do nothing while DATA_CARD.md's checksums "
      "match)");
  return options;
}

// Throws UsageError when an option of the other corpus was given.
void refuse_options(const po::variables_map& values, const po::options_description& others,
                    const std::string& corpus) {
  for (const auto& option : others.options()) {
    const std::string& name = option->long_name();
    if (values.count(name)) {
      throw UsageError("--" + name + " is not an option of data " += corpus);
    }
  }
}

std::string text_of(const boost::any& value) {
  if (const auto* text = boost::any_cast<std::string>(&value)) return *text;
  if (const auto* integer = boost::any_cast<int64_t>(&value)) return std::to_string(*integer);
  std::ostringstream number;
  number << std::setprecision(17) << boost::any_cast<double>(value);
  return number.str();
}

// The scripts exit 0, 1 (bad data, missing tools) or 2 (bad command line, an --out they refuse).
int exit_code(int script_status) {
  return script_status == kExitOk || script_status == kExitUsage ? script_status : kExitFailure;
}

int run_bible(const po::variables_map& values) {
  const bool slice = values.count("slice") > 0;
  const std::string out = values.count("out") ? values["out"].as<std::string>()
                                              : (slice ? "data/bible-slice" : "data/bible");
  std::vector<std::string> command = {find_checkout(kBibleScript) + "/" + kBibleScript, "--out",
                                      out};
  if (slice) command.emplace_back("--slice");
  return exit_code(run_python(command));
}

int run_text(const po::variables_map& values, const po::options_description& options) {
  for (const char* required : {"src", "tgt", "out"}) {
    if (!values.count(required)) {
      throw UsageError(std::string("data text needs --") + required + " (see attnlab data --help)");
    }
  }
  std::vector<std::string> command = {find_checkout(kTextScript) + "/" + kTextScript, "--out",
                                      values["out"].as<std::string>()};
  for (const auto& option : options.options()) {
    const std::string& name = option->long_name();
    if (!values.count(name)) continue;
    command.push_back("--" + name);
    const bool flag = option->semantic()->max_tokens() == 0;  // --force, --clean-held-out
    if (!flag) command.push_back(text_of(values[name].value()));
  }
  return exit_code(run_python(command));
}

int run_data(const std::vector<std::string>& args) {
  const po::options_description bible = bible_options();
  const po::options_description text = text_options();
  po::options_description options("data options");
  options.add_options()(
      "corpus", po::value<std::string>(),
      "bible: the English WEB and Spanish Reina-Valera 1909 from Debian's SWORD packages "
      "(sword-text-web, sword-text-sparv), aligned by verse and split by book. text: one's own "
      "line-aligned parallel text, cleaned (each rule's count on the console and in "
      "DATA_CARD.md), split, and written as train, dev and test.<lang> with DATA_CARD.md "
      "(sha256 checksums) and experiment.yaml (experiments/small/base.yaml on this data)")(
      "out", po::value<std::string>(),
      "output directory (bible: default data/bible, data/bible-slice; text: required); nothing "
      "is redone while DATA_CARD.md's checksums match");
  options.add(bible).add(text);
  po::positional_options_description positional;
  positional.add("corpus", 1);
  po::variables_map values;
  if (!parse("data", kUsage, args, options, positional, values)) return kExitOk;
  const std::string corpus = values.count("corpus") ? values["corpus"].as<std::string>() : "";
  if (corpus == "bible") {
    refuse_options(values, text, corpus);
    return run_bible(values);
  }
  if (corpus == "text") {
    refuse_options(values, bible, corpus);
    return run_text(values, text);
  }
  throw UsageError(
      "which corpus? bible (attnlab data bible [--out DIR]) or text (attnlab data text --src "
      "FILE --tgt FILE --out DIR); see attnlab data --help");
}

const CommandRegistration kRegister{
    "data",
    "prepare a corpus: `data bible` (WEB <-> Reina-Valera 1909) or `data text` (your own "
    "parallel text)",
    &run_data};

}  // namespace
}  // namespace attnlab::cli
