// Reading YAML files (base chains, cycles, duplicates, unknown keys) and --set assignments into an
// ExperimentConfig, key by key through the option table.
#include "core/config/builder.h"

#include <filesystem>
#include <set>

#include "core/config/config.h"
#include "core/config/options.h"
#include "core/config/rules.h"
#include "core/config/suggest.h"
#include "core/util/utf8.h"

namespace attnlab::config {
namespace fs = std::filesystem;

std::string location(const std::string& file, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

void fail(const std::string& where, const std::string& message) {
  throw ConfigError(where + ": " + message);
}

YAML::Node read_yaml(const std::string& path, const std::string& included_from) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::is_regular_file(status)) {
    // A directory or a device is named as what it is: "not found" would send the user looking
    // for a file that exists.
    std::string problem = "not found";
    if (fs::is_directory(status)) {
      problem = "is a directory, not a YAML file";
    } else if (fs::exists(status)) {
      problem = "is not a regular file (a device, socket or pipe), not a YAML file";
    }
    if (included_from.empty()) fail(path, "config file " + problem);
    fail(included_from, "base file '" + path + "' " + problem);
  }
  return load_yaml_file(path);
}

std::string suggestion(const std::string& key) {
  // The words other tools use for inheritance (Hydra's defaults, Compose's extends, ...) are too
  // far from "base" for the edit distance, so they are named here.
  static const std::set<std::string> inheritance_words = {
      "inherit", "inherits", "extends", "extend",  "include", "includes",
      "import",  "imports",  "parent",  "parents", "defaults"};
  if (inheritance_words.count(key) > 0) {
    return " (to inherit from other files, write 'base: other.yaml' or a list of files)";
  }
  std::vector<std::string> candidates = {"base", "sweep"};
  std::set<std::string> sections;
  for (const Option& option : options()) {
    candidates.push_back(option.key);
    for (size_t dot = option.key.find('.'); dot != std::string::npos;
         dot = option.key.find('.', dot + 1)) {
      sections.insert(option.key.substr(0, dot));
    }
  }
  candidates.insert(candidates.end(), sections.begin(), sections.end());
  std::string best = closest(key, candidates);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

namespace {

RawValue raw_value(const YAML::Node& node) {
  RawValue value;
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: value.kind = RawValue::Kind::kNull; break;
    case YAML::NodeType::Scalar:
      value.kind = RawValue::Kind::kScalar;
      value.text = node.Scalar();
      value.quoted = is_text_scalar(node);
      break;
    case YAML::NodeType::Sequence:
      value.kind = RawValue::Kind::kList;
      for (const YAML::Node& item : node) {
        if (!item.IsScalar()) {
          value.kind = RawValue::Kind::kMap;  // a nested structure: reported as the wrong type
          break;
        }
        value.items.push_back(item.Scalar());
      }
      break;
    case YAML::NodeType::Map: value.kind = RawValue::Kind::kMap; break;
  }
  return value;
}

std::string display_path(const fs::path& path) { return path.lexically_normal().string(); }

}  // namespace

void ConfigBuilder::apply(const std::string& key, const YAML::Node& value,
                          const std::string& where) {
  const Option* option = find_option(key);
  if (option == nullptr) fail(where, "unknown key '" + key + "'" + suggestion(key));
  std::string problem = option->assign(config_, raw_value(value));
  if (!problem.empty()) fail(where, key + ": " + problem);
  origins_[key] = Origin{where, ++order_};
}

void ConfigBuilder::add_set(const std::string& assignment) {
  const std::string where = "--set " + assignment;
  size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) fail(where, "expected key=value");
  const std::string key = assignment.substr(0, equals);
  if (key == "base" || key == "sweep") {
    fail(where, "'" + key + ":' is read from a YAML file only (" +
                    (key == "base" ? "the files an experiment inherits from"
                                   : "a sweep's rows, grid and seeds") +
                    "); --set takes the experiment's keys, e.g. --set model.heads=4");
  }
  if (find_option(key) == nullptr) {
    std::string hint = is_section(key) ? " ('" + key + "' is a section; set one of its keys)" : "";
    fail(where, "unknown key '" + key + "'" + (hint.empty() ? suggestion(key) : hint));
  }
  const std::string text = assignment.substr(equals + 1);
  if (const int64_t bad = find_invalid_utf8(text); bad >= 0) {
    fail("--set " + key, "invalid UTF-8 at byte offset " + std::to_string(bad) +
                             " of the value; values must be UTF-8 text");
  }
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(where, "value is not valid YAML: " + e.msg);
  }
  apply(key, value, where);
}

YAML::Node ConfigBuilder::add_file(const std::string& path, bool allow_sweep) {
  std::vector<std::string> chain;
  YAML::Node sweep;
  add_file_chain(display_path(path), "", chain, true, allow_sweep ? &sweep : nullptr);
  return sweep;
}

void ConfigBuilder::add_file_chain(const std::string& path, const std::string& included_from,
                                   std::vector<std::string>& chain, bool top, YAML::Node* sweep) {
  // Base files that name the same file several times multiply: 21 files each naming the next
  // twice would read 2^21 files.
  constexpr size_t kMaxFilesRead = 256;
  if (++files_read_ > kMaxFilesRead) {
    fail(included_from.empty() ? path : included_from,
         "the base: chains read more than " + std::to_string(kMaxFilesRead) +
             " files (a file named as a base several times?)");
  }
  const YAML::Node root = read_yaml(path, included_from);
  std::error_code error;
  const std::string canonical = fs::weakly_canonical(path, error).string();
  for (size_t i = 0; i < chain.size(); i += 2) {
    if (chain[i] != canonical) continue;
    std::string cycle = "base cycle: ";
    for (size_t j = i + 1; j < chain.size(); j += 2) cycle.append(chain[j]).append(" -> ");
    fail(included_from, cycle.append(path));
  }
  chain.push_back(canonical);
  chain.push_back(path);
  if (!root.IsNull() && !root.IsMap()) {
    fail(location(path, root), "expected a mapping of keys at the top of the file");
  }
  if (root.IsMap() && root["base"]) {
    const YAML::Node base = root["base"];
    std::vector<YAML::Node> bases;
    if (base.IsScalar()) {
      bases.push_back(base);
    } else if (base.IsSequence()) {
      for (const YAML::Node& item : base) bases.push_back(item);
    }
    if (bases.empty()) fail(location(path, base), "base: expected a file path or a list of them");
    for (const YAML::Node& item : bases) {
      if (!item.IsScalar()) fail(location(path, item), "base: expected a file path");
      fs::path base_path = fs::path(item.Scalar());
      if (base_path.is_relative()) base_path = fs::path(path).parent_path() / base_path;
      add_file_chain(display_path(base_path), location(path, item), chain, false, nullptr);
    }
  }
  chain.resize(chain.size() - 2);
  if (!root.IsMap()) return;
  std::map<std::string, std::string> seen;
  if (!top && root["sweep"]) {
    fail(location(path, root["sweep"]),
         "a sweep: section is only read from the file given on "
         "the command line, not from a base file");
  }
  walk(root, path, "", true, sweep, seen);
}

void ConfigBuilder::add_text(const std::string& text, const std::string& name) {
  const YAML::Node root = load_yaml_text(text, name);
  if (root.IsNull()) return;
  if (!root.IsMap()) fail(location(name, root), "expected a mapping of keys at the top");
  if (root["base"]) {
    fail(location(name, root["base"]),
         "base: names files relative to a file; a config held in memory (a run's stored "
         "config) is resolved and has no base");
  }
  std::map<std::string, std::string> seen;
  walk(root, name, "", true, nullptr, seen);
}

void ConfigBuilder::add_map(const YAML::Node& map, const std::string& file,
                            const std::string& prefix) {
  std::map<std::string, std::string> seen;
  walk(map, file, prefix, false, nullptr, seen);
}

void ConfigBuilder::walk(const YAML::Node& map, const std::string& file, const std::string& prefix,
                         bool top_level, YAML::Node* sweep,
                         std::map<std::string, std::string>& seen) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: yaml-cpp's iterator hands out a temporary pair, so references would dangle.
    const YAML::Node key_node = it->first;
    const YAML::Node value = it->second;
    const std::string key_where = location(file, key_node);
    if (!key_node.IsScalar()) fail(key_where, "expected a key name");
    const std::string& name = key_node.Scalar();
    const std::string key = prefix.empty() ? name : std::string(prefix).append(".").append(name);
    auto [previous, inserted] = seen.emplace(key, key_where);
    if (!inserted)
      fail(key_where, "duplicate key '" + key + "' (first at " + previous->second + ")");
    if (top_level && prefix.empty() && name == "base") continue;  // read before the walk
    if (top_level && prefix.empty() && name == "sweep") {
      if (sweep == nullptr) {
        fail(key_where,
             "this file is a sweep (it has a sweep: section); use `attnlab sweep` or "
             "`attnlab params`, or pick one run with its overrides");
      }
      *sweep = value;
      continue;
    }
    if (find_option(key) != nullptr) {
      apply(key, value, location(file, value));
    } else if (is_section(key)) {
      if (value.IsNull()) continue;  // "model:" with nothing below sets nothing
      if (!value.IsMap()) fail(location(file, value), key + ": expected a mapping of keys");
      walk(value, file, key, top_level, sweep, seen);
    } else {
      fail(key_where, "unknown key '" + key + "'" + suggestion(key));
    }
  }
}

std::string ConfigBuilder::where_set(const std::vector<std::string>& keys) const {
  const Origin* latest = nullptr;
  for (const std::string& key : keys) {
    auto it = origins_.find(key);
    if (it != origins_.end() && (latest == nullptr || it->second.order > latest->order)) {
      latest = &it->second;
    }
  }
  return latest == nullptr ? "defaults" : latest->where;
}

std::vector<std::string> ConfigBuilder::keys_set_since(int mark) const {
  std::vector<std::string> keys;
  for (const Option& option : options()) {
    auto it = origins_.find(option.key);
    if (it != origins_.end() && it->second.order > mark) keys.push_back(option.key);
  }
  return keys;
}

namespace {

// "file.yaml" of "file.yaml:12:3"; "--set k=v" stays as it is.
std::string source_of(const std::string& where) {
  if (where.rfind("--set ", 0) == 0) return where;
  std::string file = where;
  for (int part = 0; part < 2; ++part) {
    const size_t colon = file.rfind(':');
    if (colon == std::string::npos ||
        file.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      break;
    }
    file.resize(colon);
  }
  return file;
}

}  // namespace

void ConfigBuilder::check_inherited_eval_files() const {
  if (config_.data.task != DataTask::kCorpus) return;
  const auto train_src = origins_.find("data.train.src");
  const auto train_tgt = origins_.find("data.train.tgt");
  if (train_src == origins_.end() && train_tgt == origins_.end()) return;
  const Origin& train = train_src == origins_.end()                         ? train_tgt->second
                        : train_tgt == origins_.end()                       ? train_src->second
                        : train_src->second.order > train_tgt->second.order ? train_src->second
                                                                            : train_tgt->second;
  const fs::path train_dir = fs::path(config_.data.train.src).parent_path();
  const std::pair<const char*, const std::string*> evaluated[] = {
      {"data.dev.src", &config_.data.dev.src},
      {"data.dev.tgt", &config_.data.dev.tgt},
      {"data.test.src", &config_.data.test.src},
      {"data.test.tgt", &config_.data.test.tgt}};
  std::string inherited, from, directory;
  for (const auto& [key, value] : evaluated) {
    const auto origin = origins_.find(key);
    if (value->empty() || origin == origins_.end() || origin->second.order > train.order ||
        source_of(origin->second.where) == source_of(train.where) ||
        fs::path(*value).parent_path() == train_dir) {
      continue;
    }
    inherited += (inherited.empty() ? "" : ", ") + std::string(key);
    from = source_of(origin->second.where);
    directory = fs::path(*value).parent_path().string();
  }
  if (inherited.empty()) return;
  fail(train.where, "the training data changed here (" + train_dir.string() + "), but " +
                        inherited + " are inherited from " + from + " and name files in " +
                        directory +
                        ", another corpus's directory: set data.dev (and data.test) "
                        "for this corpus, or set them again to keep those files");
}

ExperimentConfig ConfigBuilder::finish() const {
  check_inherited_eval_files();
  if (auto violation = check_rules(config_)) fail(where_set(violation->keys), violation->message);
  ExperimentConfig resolved = config_;
  resolved.model.resolve_defaults();
  if (auto violation = check_model(resolved.model)) {
    fail(where_set(violation->keys), violation->message);
  }
  return resolved;
}

}  // namespace attnlab::config
