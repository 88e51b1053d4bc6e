// attnlab: dispatches `attnlab <command> [options]` to the commands registered by cmd_*.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "core/app/cli.h"
#include "core/cluster/environment.h"
#include "core/config/suggest.h"
#include "core/util/exit_code.h"

namespace {

void print_help(std::ostream& out) {
  out << "usage: attnlab <command> [options]      attnlab <command> --help\n"
      << "       attnlab --help | --version\n\ncommands:\n";
  size_t width = 0;
  for (const auto& [name, command] : attnlab::cli::commands()) width = std::max(width, name.size());
  for (const auto& [name, command] : attnlab::cli::commands()) {
    out << "  " << name << std::string(width + 2 - name.size(), ' ') << command.summary << "\n";
  }
  out << "\n" << attnlab::exit_code_help();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnlab;
  using namespace attnlab::cli;
  cluster::settle_thread_environment(argv);
  const std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) {
    print_help(std::cerr);
    return kExitUsage;
  }
  const std::string& first = words[0];
  if (first == "--help" || first == "-h" || first == "help") {
    print_help(std::cout);
    return kExitOk;
  }
  if (first == "--version" || first == "version") {
    std::cout << version_line() << "\n";
    return kExitOk;
  }
  auto it = commands().find(first);
  if (it == commands().end()) {
    std::vector<std::string> names;
    for (const auto& [name, command] : commands()) names.push_back(name);
    const std::string best = attnlab::config::closest(first, names);
    std::cerr << "attnlab: unknown command '" << first << "'"
              << (best.empty() ? "" : " (did you mean '" + best + "'?)")
              << "; attnlab --help lists the commands\n";
    return kExitUsage;
  }
  return run_reporting_errors(it->second, std::vector<std::string>(words.begin() + 1, words.end()));
}
