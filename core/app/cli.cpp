// Command registry, shared options and error reporting for the attnlab executable.
#include "core/app/cli.h"

#include <cmath>
#include <exception>
#include <iostream>
#include <sstream>

#include "core/config/config.h"
#include "core/dist/abort.h"
#include "core/util/build_info.h"

namespace attnlab::cli {
namespace {

// Function-local so that registrations from other files' static initialisers find it built.
std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> commands;
  return commands;
}

// Where a failed check is in the source, on a line of its own when ATTNLAB_DEBUG is set.
void print_debug_line(const std::string& prefix, const std::exception& error) {
  const std::string line = debug_line(error);
  if (!line.empty()) std::cerr << prefix << line << "\n";
}

// A number option given as nan or inf (which Boost reads as numbers) would switch a rule off or
// make it meaningless in silence ("--max-ratio nan" drops nothing); a negative one is no count,
// ratio or rate either.
void check_numbers(const po::variables_map& values, const std::string& command) {
  for (const auto& [name, value] : values) {
    const auto* number = boost::any_cast<double>(&value.value());
    if (number == nullptr || (std::isfinite(*number) && *number >= 0)) continue;
    std::ostringstream message;
    message << "--" << name << " " << *number << ": expected a finite number >= 0 (see attnlab "
            << command << " --help)";
    throw UsageError(message.str());
  }
}

}  // namespace

const std::map<std::string, Command>& commands() { return registry(); }

CommandRegistration::CommandRegistration(const char* name, const char* summary,
                                         CommandFunction run) {
  registry()[name] = Command{name, summary, run};
}

std::string version_line() {
  return std::string("attnlab ") + attnlab_version() + " (git " + git_commit() + ")";
}

void add_config_options(po::options_description& options) {
  options.add_options()(
      "config,c", po::value<std::vector<std::string>>()->composing(),
      "experiment YAML file (repeatable: later files win over earlier ones and their bases)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one key, e.g. --set model.heads=4 or --set 'log.attention_probes=[a b, c]' "
      "(repeatable; wins over files)");
}

void add_out_option(po::options_description& options, const std::string& default_dir,
                    const std::string& meaning) {
  options.add_options()("out", po::value<std::string>()->default_value(default_dir),
                        meaning.c_str());
}

bool parse(const std::string& command, const std::string& usage,
           const std::vector<std::string>& args, po::options_description& options,
           const po::positional_options_description& positional, po::variables_map& values) {
  options.add_options()("help,h", "show this help");
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), values);
    if (values.count("help")) {
      std::cout << "usage: attnlab " << command << " " << usage << "\n\n" << options << "\n";
      return false;
    }
    po::notify(values);
    check_numbers(values, command);
  } catch (const po::error& error) {
    throw UsageError(std::string(error.what()) + " (see attnlab " + command + " --help)");
  }
  return true;
}

std::vector<std::string> strings(const po::variables_map& values, const std::string& name) {
  if (!values.count(name)) return {};
  return values[name].as<std::vector<std::string>>();
}

int run_reporting_errors(const Command& command, const std::vector<std::string>& args) {
  const std::string prefix = "attnlab " + command.name + ": ";
  try {
    return command.run(args);
  } catch (const UsageError& error) {
    std::cerr << prefix << error.what() << "\n";
    return kExitUsage;
  } catch (const ConfigError& error) {
    std::cerr << prefix << error.what() << "\n";
    print_debug_line(prefix, error);
    return kExitUsage;
  } catch (const std::exception& error) {
    std::cerr << prefix << dist::describe_current_exception() << "\n";  // names bad_alloc
    print_debug_line(prefix, error);
    return kExitFailure;
  }
}

}  // namespace attnlab::cli
