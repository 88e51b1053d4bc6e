// `attnlab data bible [--out DIR] [--slice]`: prepares the WEB <-> Reina-Valera 1909 corpus by
// running experiments/data/bible.py (found from the current directory or beside the executable).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "core/app/cli.h"
#include "core/util/check.h"

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

const char* const kScript = "experiments/data/bible.py";

// The script under the current directory, or under the executable's parent directories (the
// build directory usually sits inside the source tree).
fs::path find_script() {
  std::vector<fs::path> candidates = {fs::current_path() / kScript};
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (fs::path dir = executable.parent_path(); !dir.empty() && dir != dir.root_path();
         dir = dir.parent_path()) {
      if (dir / kScript != candidates.front()) candidates.push_back(dir / kScript);
      if (candidates.size() > 5) break;
    }
  }
  for (const fs::path& candidate : candidates) {
    if (fs::exists(candidate)) return candidate;
  }
  std::string tried;
  for (const fs::path& candidate : candidates) tried += "\n  " + candidate.string();
  throw Error(std::string("cannot find ") + kScript +
              "; run attnlab from the source tree. Tried:" + tried);
}

// Runs argv[0] (searched in PATH) and returns its exit status.
int run_process(const std::vector<std::string>& argv) {
  std::vector<char*> pointers;
  pointers.reserve(argv.size() + 1);
  for (const std::string& arg : argv) pointers.push_back(const_cast<char*>(arg.c_str()));
  pointers.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, argv[0].c_str(), nullptr, nullptr, pointers.data(), environ);
  CHECK(spawned == 0) << "cannot start " << argv[0] << " (is it installed?)";
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid) << "lost track of " << argv[0];
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return kExitFailure;
}

int run_data(const std::vector<std::string>& args) {
  po::options_description options("data options");
  options.add_options()("corpus", po::value<std::string>(),
                        "the corpus to prepare: bible (the English WEB and Spanish Reina-Valera "
                        "1909 from Debian's sword-text-web and sword-text-sparv packages, aligned "
                        "by verse; nothing is redone while DATA_CARD.md's checksums match)")(
      "out", po::value<std::string>(), "output directory (default data/bible, data/bible-slice)")(
      "slice", "only the small slice: train = Genesis + Mark, dev = Jonah, test = Ruth");
  po::positional_options_description positional;
  positional.add("corpus", 1);
  po::variables_map values;
  if (!parse("data", "bible [--out DIR] [--slice]", args, options, positional, values)) {
    return kExitOk;
  }
  if (!values.count("corpus") || values["corpus"].as<std::string>() != "bible") {
    throw UsageError("attnlab data knows one corpus: bible (attnlab data bible [--out DIR])");
  }
  const bool slice = values.count("slice") > 0;
  const std::string out = values.count("out") ? values["out"].as<std::string>()
                                              : (slice ? "data/bible-slice" : "data/bible");
  std::vector<std::string> command = {"python3", find_script().string(), "--out", out};
  if (slice) command.emplace_back("--slice");
  const int status = run_process(command);
  return status == 0 ? kExitOk : kExitFailure;
}

const CommandRegistration kRegister{
    "data", "prepare a corpus: `data bible` exports and aligns WEB <-> Reina-Valera 1909",
    &run_data};

}  // namespace
}  // namespace attnlab::cli
