// The attnlab command line: the command registry, options shared by commands (-c, --set, --out),
// error reporting (exit codes: core/util/exit_code.h). Each command lives in cmd_<name>.cpp and
// registers itself:
//   const CommandRegistration kRegister{"params", "parameter counts by component", &run_params};
#pragma once

#include <boost/program_options.hpp>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/util/exit_code.h"

namespace attnlab::cli {

namespace po = boost::program_options;

// A command-line mistake (unknown option, missing argument); reported with exit code 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// A command gets the words after its name ("attnlab params -c x.yaml" -> {"-c", "x.yaml"}) and
// returns an exit code; it may throw UsageError, ConfigError or Error.
using CommandFunction = int (*)(const std::vector<std::string>& args);

struct Command {
  std::string name;
  std::string summary;  // one line for `attnlab --help`
  CommandFunction run = nullptr;
};

// The commands linked into this binary, by name.
const std::map<std::string, Command>& commands();

// Adds a command at static-initialisation time; one per cmd_<name>.cpp.
struct CommandRegistration {
  CommandRegistration(const char* name, const char* summary, CommandFunction run);
};

// "attnlab <version> (git <commit>)".
std::string version_line();

// -c/--config FILE (repeatable; later files win), --set KEY=VALUE (repeatable; wins over files).
void add_config_options(po::options_description& options);
// --out DIR with the given default and meaning.
void add_out_option(po::options_description& options, const std::string& default_dir,
                    const std::string& meaning);

// Parses `args` for `command` against `options` (plus -h/--help, added here) and `positional`.
// Returns false after printing the help when --help was given; throws UsageError otherwise.
bool parse(const std::string& command, const std::string& usage,
           const std::vector<std::string>& args, po::options_description& options,
           const po::positional_options_description& positional, po::variables_map& values);

// Values of a repeatable string option ({} when absent).
std::vector<std::string> strings(const po::variables_map& values, const std::string& name);

// Runs `command` and turns what it throws into one line on stderr ("attnlab <command>: <what>")
// and an exit code: UsageError and ConfigError -> 2, anything else -> 1.
int run_reporting_errors(const Command& command, const std::vector<std::string>& args);

}  // namespace attnlab::cli
