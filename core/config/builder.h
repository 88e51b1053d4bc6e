// ConfigBuilder: applies YAML files, --set assignments and single values to an ExperimentConfig
// in precedence order, remembering where each key was last set so that errors can point there.
// Internal to core/config (it exposes yaml-cpp types).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/config/yaml.h"

namespace attnlab::config {

// "file.yaml:3:7" for a node read from `file` (yaml-cpp marks are 0-based; ours are 1-based).
std::string location(const std::string& file, const YAML::Node& node);
[[noreturn]] void fail(const std::string& where, const std::string& message);
// Parses `path` as YAML, turning I/O and syntax errors into ConfigError.
YAML::Node read_yaml(const std::string& path, const std::string& included_from);

class ConfigBuilder {
 public:
  // Applies the file at `path` after its base chain. Returns its top-level `sweep:` node, which is
  // accepted only when allow_sweep (otherwise it is an error); a null node if absent.
  YAML::Node add_file(const std::string& path, bool allow_sweep = false);
  // Applies YAML text held in memory, named `name` in messages (no base: chain, no sweep:).
  void add_text(const std::string& text, const std::string& name);
  // Applies "key=value" (value parsed as YAML).
  void add_set(const std::string& assignment);
  // Applies every key of `map` (nested sections or dotted keys) read from `file`, below `prefix`.
  void add_map(const YAML::Node& map, const std::string& file, const std::string& prefix = "");
  // Applies one value to option `key` (which must exist); `where` locates it for errors.
  void apply(const std::string& key, const YAML::Node& value, const std::string& where);

  // The config with every rule checked and d_k/d_v resolved; throws ConfigError at the location
  // of the most recently set key a broken rule involves.
  ExperimentConfig finish() const;
  // The config as applied so far (unchecked, d_k/d_v unresolved).
  const ExperimentConfig& current() const { return config_; }
  // A counter that grows with every applied value; keys_set_since(mark) lists (in table order) the
  // keys whose current value was applied after `mark` was taken.
  int mark() const { return order_; }
  std::vector<std::string> keys_set_since(int mark) const;

 private:
  void add_file_chain(const std::string& path, const std::string& included_from,
                      std::vector<std::string>& chain, bool top, YAML::Node* sweep);
  void walk(const YAML::Node& map, const std::string& file, const std::string& prefix,
            bool top_level, YAML::Node* sweep, std::map<std::string, std::string>& seen);
  std::string where_set(const std::vector<std::string>& keys) const;
  // A corpus whose training files a later layer changed to another directory while its dev/test
  // files still come from an earlier file is an error naming the inherited keys.
  void check_inherited_eval_files() const;

  ExperimentConfig config_;
  size_t files_read_ = 0;  // every file of every base chain so far (diamonds counted each time)
  struct Origin {
    std::string where;
    int order = 0;
  };
  std::map<std::string, Origin> origins_;
  int order_ = 0;
};

// What a key is suggested as when it is unknown: " (did you mean 'x'?)" or "".
std::string suggestion(const std::string& key);

}  // namespace attnlab::config
