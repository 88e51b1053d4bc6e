// Loading, validating, dumping and flattening experiment configs. Precedence: struct defaults <
// YAML files (each `base:` chain first, later files win) < `--set key=value`.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/config/experiment.h"
#include "core/util/check.h"

namespace attnlab {

// A config the user wrote is wrong (syntax, unknown key, type, range, cross-field rule, missing
// file). The message starts with where: "file.yaml:12:5: " or "--set model.heads=x: ".
// The command line reports these as usage errors (exit code 2).
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message) {}
};

namespace config {

// Loads `files` in order (each with its base chain) and then applies `sets` ("key=value", the
// value parsed as YAML), checks every rule, resolves d_k/d_v = 0 and returns the config.
// Throws ConfigError. A file holding a `sweep:` section is refused (see sweep.h).
ExperimentConfig load(const std::vector<std::string>& files,
                      const std::vector<std::string>& sets = {});
ExperimentConfig load(const std::string& file, const std::vector<std::string>& sets = {});
// The same for YAML text held in memory (a run's stored config_yaml); errors name `name`
// ("runs/x/run.h5 (attribute config_yaml):3:5: ...") in place of a file.
ExperimentConfig load_text(const std::string& yaml, const std::string& name);

// Checks the rules `load` checks on a config built in code; errors name the key, not a file.
void validate(const ExperimentConfig& config);

// The fully resolved YAML, every key in table order; with_help adds each key's help as a comment.
// load() of this text gives back an equal config.
std::string dump_yaml(const ExperimentConfig& config, bool with_help = true);

// (key, value) for every option in table order, values as YAML flow text ("8", "post", "[]"), so
// that `--set key=value` reproduces them. Used for the HDF5 /config attributes.
std::vector<std::pair<std::string, std::string>> flatten(const ExperimentConfig& config);

// The text a checkpoint stores for the model it was written for and must match to load: one
// "name: value" line per model key the option table tags (InArchitecture, options.h), the listed
// keys always and the others only when not at their default, so that a key added later leaves
// the text of every older checkpoint as it was. `model` is taken as resolved (d_k, d_v set).
std::string architecture_text(const ModelConfig& model);

// Markdown table of every option: key, type, default, help.
std::string option_reference();

// The one rule for paths in an experiment: `base:` is relative to the file that names it; every
// other file path (data files, tokenizer model, cluster profile) is relative to the working
// directory of the command that loads the experiment (train, sweep, config). These make them
// absolute against `directory` (empty paths stay empty), so that a run's recorded config means
// the same from any directory and on any node.
void make_paths_absolute(ExperimentConfig& config, const std::string& directory);
// ConfigError naming the key, the path and this host for the first data file the run reads
// (data.train/dev/test when set) that does not exist here.
void check_data_files_exist(const ExperimentConfig& config);

// True if the YAML file at `path` (not its bases) has a top-level `sweep:` key.
bool has_sweep_section(const std::string& path);

}  // namespace config
}  // namespace attnlab
