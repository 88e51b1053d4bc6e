// Loading and checking cluster profiles (strict: unknown keys and wrong types are errors).
#include "core/cluster/profile.h"

// GCC 12 reports -Wdangling-pointer inside yaml-cpp 0.7's inline node code, a false positive on
// its shared memory holder; the pragma covers only yaml-cpp's own lines.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop
#else
#include <yaml-cpp/yaml.h>
#endif

#include <set>

#include "core/cluster/shell.h"
#include "core/config/config.h"

namespace attnlab::cluster {
namespace {

std::string where(const std::string& file, const YAML::Node& node, const std::string& key) {
  const YAML::Mark mark = node.Mark();
  if (mark.line < 0) return file + ": " + key;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1) + ": " +
         key;
}

std::string read_string(const YAML::Node& node, const std::string& at) {
  if (!node.IsScalar()) throw ConfigError(at + ": expected a string");
  return node.Scalar();
}

int64_t read_integer(const YAML::Node& node, const std::string& at, int64_t minimum) {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) {
    throw ConfigError(at + ": expected an integer, got '" + (node.IsScalar() ? node.Scalar() : "") +
                      "'");
  }
  if (value < minimum) {
    throw ConfigError(at + ": expected an integer >= " + std::to_string(minimum) + ", got " +
                      std::to_string(value));
  }
  return value;
}

bool read_bool(const YAML::Node& node, const std::string& at) {
  bool value = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
    throw ConfigError(at + ": expected true or false");
  }
  return value;
}

std::vector<std::string> read_strings(const YAML::Node& node, const std::string& at) {
  if (node.IsNull()) return {};
  if (!node.IsSequence()) throw ConfigError(at + ": expected a list of strings");
  std::vector<std::string> out;
  for (const YAML::Node& item : node) out.push_back(read_string(item, at + "[]"));
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
  if (profile.ranks < 0 || profile.cpus_per_task < 0 || profile.max_running < 0 ||
      profile.signal_seconds < 0) {
    throw ConfigError(where + "ranks, cpus_per_task, max_running and signal_seconds must be >= 0");
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

SlurmProfile load_profile(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path + ": cannot read the cluster profile (no such file?)");
  } catch (const YAML::Exception& error) {
    throw ConfigError(path + ":" + std::to_string(error.mark.line + 1) + ":" +
                      std::to_string(error.mark.column + 1) + ": " + error.msg);
  }
  SlurmProfile profile;
  profile.source = path;
  if (root.IsNull()) return profile;
  if (!root.IsMap()) throw ConfigError(path + ": a cluster profile is a mapping of keys");
  static const std::set<std::string> known = {
      "partition",  "account",  "qos",         "time",           "mem",    "ranks", "cpus_per_task",
      "overcommit", "launcher", "max_running", "signal_seconds", "sbatch", "env",   "setup"};
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.Scalar();
    const YAML::Node value = it->second;  // a copy: the iterator's pair is a temporary
    const std::string at = where(path, it->first, key);
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
    if (key == "cpus_per_task") profile.cpus_per_task = read_integer(value, at, 0);
    if (key == "max_running") profile.max_running = read_integer(value, at, 0);
    if (key == "signal_seconds") profile.signal_seconds = read_integer(value, at, 0);
    if (key == "overcommit") profile.overcommit = read_bool(value, at);
    if (key == "sbatch") profile.sbatch = read_strings(value, at);
    if (key == "setup") profile.setup = read_strings(value, at);
    if (key == "env") {
      if (value.IsNull()) continue;
      if (!value.IsMap()) throw ConfigError(at + ": expected a mapping NAME: value");
      for (auto entry = value.begin(); entry != value.end(); ++entry) {
        const std::string name = entry->first.Scalar();
        profile.env.emplace_back(name, read_string(entry->second, at + "." += name));
      }
    }
  }
  validate(profile, path + ": ");
  return profile;
}

}  // namespace attnlab::cluster
