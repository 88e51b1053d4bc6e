// Loading and checking cluster profiles (strict: unknown keys and wrong types are errors).
#include "core/cluster/profile.h"

#include <cstdlib>
#include <set>

#include "core/cluster/shell.h"
#include "core/config/config.h"
#include "core/config/yaml_tree.h"

namespace attnlab::cluster {
namespace {

using config::YamlNode;

std::string read_string(const YamlNode& node, const std::string& at) {
  if (!node.is_scalar()) throw ConfigError(at + ": expected a string");
  return node.scalar;
}

int64_t read_integer(const YamlNode& node, const std::string& at, int64_t minimum) {
  if (!node.integer) {
    throw ConfigError(at + ": expected an integer, got '" + node.text() + "'");
  }
  if (*node.integer < minimum) {
    throw ConfigError(at + ": expected an integer >= " + std::to_string(minimum) + ", got " +
                      std::to_string(*node.integer));
  }
  return *node.integer;
}

double read_number(const YamlNode& node, const std::string& at, double minimum) {
  char* end = nullptr;
  const std::string text = node.text();
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value >= minimum)) {
    throw ConfigError(at + ": expected a number >= " + std::to_string(minimum) + ", got '" + text +
                      "'");
  }
  return value;
}

bool read_bool(const YamlNode& node, const std::string& at) {
  if (!node.boolean) throw ConfigError(at + ": expected true or false");
  return *node.boolean;
}

std::vector<std::string> read_strings(const YamlNode& node, const std::string& at) {
  if (node.is_null()) return {};
  if (!node.is_sequence()) throw ConfigError(at + ": expected a list of strings");
  std::vector<std::string> out;
  for (const YamlNode& item : node.items) out.push_back(read_string(item, at + "[]"));
  return out;
}

}  // namespace

void validate(const SlurmProfile& profile, const std::string& where) {
  if (!profile.partition.empty()) {
    check_value(ValueKind::kSlurmName, profile.partition, where + "partition");
  }
  if (!profile.account.empty()) {
    check_value(ValueKind::kSlurmName, profile.account, where + "account");
  }
  if (!profile.qos.empty()) check_value(ValueKind::kSlurmName, profile.qos, where + "qos");
  check_value(ValueKind::kSlurmTime, profile.time, where + "time");
  if (!profile.mem.empty()) check_value(ValueKind::kSlurmMemory, profile.mem, where + "mem");
  if (profile.launcher != "srun" && profile.launcher != "mpirun") {
    throw ConfigError(where + "launcher: expected srun or mpirun, got '" + profile.launcher + "'");
  }
  if (profile.ranks < 0 || profile.nodes < 0 || profile.ranks_per_node < 0 ||
      profile.cpus_per_task < 0 || profile.max_running < 0 || profile.signal_seconds < 0) {
    throw ConfigError(where +
                      "ranks, nodes, ranks_per_node, cpus_per_task, max_running and "
                      "signal_seconds must be >= 0");
  }
  if (profile.ranks > 0 && profile.nodes > 0 && profile.ranks_per_node > 0 &&
      profile.ranks != profile.nodes * profile.ranks_per_node) {
    throw ConfigError(where + "ranks (" + std::to_string(profile.ranks) +
                      ") must be nodes x ranks_per_node (" + std::to_string(profile.nodes) + " x " +
                      std::to_string(profile.ranks_per_node) + ")");
  }
  if (!profile.network_interface.empty()) {
    check_value(ValueKind::kNetworkList, profile.network_interface, where + "network_interface");
  }
  for (const std::string& option : profile.sbatch) {
    check_value(ValueKind::kSbatchOption, option, where + "sbatch[]");
  }
  for (const auto& [name, value] : profile.env) {
    check_value(ValueKind::kEnvName, name, where + "env");
    check_value(ValueKind::kShellLine, value, where + "env." += name);
  }
  for (const std::string& line : profile.setup) {
    check_value(ValueKind::kShellLine, line, where + "setup[]");
  }
}

namespace {

const std::set<std::string>& profile_keys() {
  static const std::set<std::string> known = {"partition",
                                              "account",
                                              "qos",
                                              "time",
                                              "mem",
                                              "ranks",
                                              "nodes",
                                              "ranks_per_node",
                                              "cpus_per_task",
                                              "overcommit",
                                              "launcher",
                                              "network_interface",
                                              "max_running",
                                              "signal_seconds",
                                              "sbatch",
                                              "env",
                                              "setup",
                                              "cores_per_node",
                                              "network_bandwidth",
                                              "network_latency_us"};
  return known;
}

// Sets one key of `profile` from `value`; `at` names where the value came from in errors.
void apply_key(SlurmProfile& profile, const std::string& key, const YamlNode& value,
               const std::string& at) {
  const std::set<std::string>& known = profile_keys();
  if (!known.count(key)) {
    std::string list;
    for (const std::string& name : known) list += (list.empty() ? "" : ", ") + name;
    throw ConfigError(at + ": unknown key; a profile has " += list);
  }
  if (key == "partition") profile.partition = read_string(value, at);
  if (key == "account") profile.account = read_string(value, at);
  if (key == "qos") profile.qos = read_string(value, at);
  if (key == "time") profile.time = read_string(value, at);
  if (key == "mem") profile.mem = read_string(value, at);
  if (key == "launcher") profile.launcher = read_string(value, at);
  if (key == "ranks") profile.ranks = read_integer(value, at, 0);
  if (key == "nodes") profile.nodes = read_integer(value, at, 0);
  if (key == "ranks_per_node") profile.ranks_per_node = read_integer(value, at, 0);
  if (key == "network_interface") profile.network_interface = read_string(value, at);
  if (key == "cpus_per_task") profile.cpus_per_task = read_integer(value, at, 0);
  if (key == "max_running") profile.max_running = read_integer(value, at, 0);
  if (key == "signal_seconds") profile.signal_seconds = read_integer(value, at, 0);
  if (key == "overcommit") profile.overcommit = read_bool(value, at);
  if (key == "cores_per_node") profile.cores_per_node = read_integer(value, at, 0);
  if (key == "network_bandwidth") profile.network_bandwidth = read_number(value, at, 1e-6);
  if (key == "network_latency_us") profile.network_latency_us = read_number(value, at, 0.0);
  if (key == "sbatch") profile.sbatch = read_strings(value, at);
  if (key == "setup") profile.setup = read_strings(value, at);
  if (key == "env") {
    profile.env.clear();
    if (value.is_null()) return;
    if (!value.is_map()) throw ConfigError(at + ": expected a mapping NAME: value");
    for (const auto& [name, entry] : value.fields) {
      profile.env.emplace_back(name, read_string(entry, at + "." += name));
    }
  }
}

}  // namespace

SlurmProfile load_profile(const std::string& path) { return load_profile(path, {}); }

SlurmProfile load_profile(const std::string& path, const std::vector<std::string>& overrides) {
  SlurmProfile profile;
  profile.source = path;
  if (!path.empty()) {
    const YamlNode root = config::read_yaml_file(path, "the cluster profile");
    if (!root.is_null() && !root.is_map()) {
      throw ConfigError(path + ": a cluster profile is a mapping of keys");
    }
    for (size_t i = 0; i < root.fields.size(); ++i) {
      const auto& [key, value] = root.fields[i];
      apply_key(profile, key, value, root.keys[i].where(path) + ": " + key);
    }
    validate(profile, path + ": ");
  }
  // Each override is checked as it lands, so that an error names the option, not the file.
  for (const std::string& override_text : overrides) {
    const size_t equals = override_text.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw ConfigError("--profile-set " + override_text + ": expected KEY=VALUE");
    }
    const std::string key = override_text.substr(0, equals);
    const std::string at = "--profile-set " + key;
    apply_key(profile, key, config::read_yaml_text(override_text.substr(equals + 1), at), at);
    validate(profile, "--profile-set ");
    profile.source += (profile.source.empty() ? "" : " ") + std::string("--profile-set ") + key;
  }
  return profile;
}

}  // namespace attnlab::cluster
