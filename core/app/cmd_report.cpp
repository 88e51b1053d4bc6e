// `attnlab report runs/<sweep> [...]`: runs the Python analysis (python3 -m analysis.report) with
// the repository root on PYTHONPATH, passing every argument through.
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/app/python.h"

namespace attnlab::cli {
namespace {

int run_report(const std::vector<std::string>& args) {
  const std::string root = find_checkout("analysis/report.py");
  std::vector<std::string> words = {"-m", "analysis.report"};
  words.insert(words.end(), args.begin(), args.end());
  return run_python(words, root);
}

const CommandRegistration kRegister{
    "report", "tables, statistics and figures of a sweep directory (python3 -m analysis.report)",
    &run_report};

}  // namespace
}  // namespace attnlab::cli
