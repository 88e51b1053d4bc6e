// load / validate / dump_yaml / flatten / option_reference: the public face of core/config.
#include "core/config/config.h"

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "core/config/builder.h"
#include "core/config/options.h"
#include "core/config/rules.h"

namespace attnlab {

const EnumNames<DataTask>& data_task_names() {
  static const EnumNames<DataTask> names("data.task", {{DataTask::kCopy, "copy"},
                                                       {DataTask::kReverse, "reverse"},
                                                       {DataTask::kSort, "sort"},
                                                       {DataTask::kCorpus, "corpus"}});
  return names;
}

const EnumNames<EvalCheckpoint>& eval_checkpoint_names() {
  static const EnumNames<EvalCheckpoint> names(
      "eval.checkpoint", {{EvalCheckpoint::kNewest, "newest"}, {EvalCheckpoint::kBest, "best"}});
  return names;
}

std::string to_string(DataTask task) { return data_task_names().name(task); }
DataTask parse_data_task(const std::string& text) { return data_task_names().parse(text); }

}  // namespace attnlab

namespace attnlab::config {

ExperimentConfig load(const std::vector<std::string>& files, const std::vector<std::string>& sets) {
  ConfigBuilder builder;
  for (const std::string& file : files) builder.add_file(file);
  for (const std::string& set : sets) builder.add_set(set);
  return builder.finish();
}

ExperimentConfig load(const std::string& file, const std::vector<std::string>& sets) {
  return load(std::vector<std::string>{file}, sets);
}

ExperimentConfig load_text(const std::string& yaml, const std::string& name) {
  ConfigBuilder builder;
  builder.add_text(yaml, name);
  return builder.finish();
}

void validate(const ExperimentConfig& config) {
  // Each key's own type and range: re-read its shown value through the same parser as a file.
  ExperimentConfig copy = config;
  for (const Option& option : options()) {
    const std::string shown = option.show(config);
    const YAML::Node node = YAML::Load(shown);
    RawValue value;
    if (node.IsSequence()) {
      value.kind = RawValue::Kind::kList;
      for (const YAML::Node& item : node) value.items.push_back(item.Scalar());
    } else if (node.IsScalar()) {
      value.kind = RawValue::Kind::kScalar;
      value.text = node.Scalar();
      value.quoted = is_text_scalar(node);
    }
    std::string problem = option.assign(copy, value);
    if (!problem.empty()) throw ConfigError(option.key + ": " + problem);
  }
  if (auto violation = check_rules(config)) throw ConfigError(violation->message);
  ExperimentConfig resolved = config;
  resolved.model.resolve_defaults();
  if (auto violation = check_model(resolved.model)) throw ConfigError(violation->message);
}

void make_paths_absolute(ExperimentConfig& config, const std::string& directory) {
  for (const Option& option : options()) {
    if (!option.file) continue;
    std::string& path = option.file(config);
    if (path.empty() || std::filesystem::path(path).is_absolute()) continue;
    path = (std::filesystem::path(directory) / path).lexically_normal().string();
  }
}

void check_data_files_exist(const ExperimentConfig& config) {
  if (config.data.task != DataTask::kCorpus) return;
  ExperimentConfig copy = config;
  for (const Option& option : options()) {
    if (!option.file || option.key.rfind("data.", 0) != 0 || option.key == "data.tokenizer.model") {
      continue;
    }
    const std::string& path = option.file(copy);
    std::error_code error;
    if (path.empty() || std::filesystem::is_regular_file(path, error)) continue;
    char host[256] = "?";
    gethostname(host, sizeof(host) - 1);
    throw ConfigError(
        option.key + ": " + path + " does not exist on host " + host +
        " (relative paths are taken from the directory the experiment was loaded "
        "in; a sweep records them absolute, so the file must be there on every node)");
  }
}

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::istringstream stream(key);
  for (std::string part; std::getline(stream, part, '.');) parts.push_back(part);
  return parts;
}

}  // namespace

std::string dump_yaml(const ExperimentConfig& config, bool with_help) {
  std::ostringstream out;
  if (with_help) {
    out << "# attnlab experiment, fully resolved (defaults < base files < file < --set).\n"
        << "# `attnlab config --reference` lists every key with its type.\n";
  }
  std::vector<std::string> open;  // the sections the previous key sat in
  for (const Option& option : options()) {
    std::vector<std::string> parts = split_key(option.key);
    const std::vector<std::string> sections(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < open.size() && common < sections.size() && open[common] == sections[common]) {
      ++common;
    }
    for (size_t depth = common; depth < sections.size(); ++depth) {
      out << std::string(2 * depth, ' ') << sections[depth] << ":\n";
    }
    open = sections;
    out << std::string(2 * sections.size(), ' ') << parts.back() << ": " << option.show(config);
    if (with_help) out << "  # " << option.help;
    out << "\n";
  }
  return out.str();
}

std::vector<std::pair<std::string, std::string>> flatten(const ExperimentConfig& config) {
  std::vector<std::pair<std::string, std::string>> flat;
  for (const Option& option : options()) flat.emplace_back(option.key, option.show(config));
  return flat;
}

std::string architecture_text(const ModelConfig& model) {
  ExperimentConfig config, defaults;
  config.model = model;
  defaults.model.resolve_defaults();
  std::ostringstream listed, unless_default;
  for (const Option& option : options()) {
    const std::string name = option.key.substr(option.key.find('.') + 1);
    const std::string value = option.show(config);
    if (option.architecture == InArchitecture::kListed) {
      // Checkpoints written before the table decided the text hold the depths on one line.
      if (option.key == "model.encoder_layers") {
        listed << "\nlayers: " << value;
      } else if (option.key == "model.decoder_layers") {
        listed << "+" << value;
      } else {
        listed << "\n" << name << ": " << value;
      }
    } else if (option.architecture == InArchitecture::kUnlessDefault &&
               value != option.show(defaults)) {
      unless_default << "\n" << name << ": " << value;
    }
  }
  return (listed.str() + unless_default.str()).substr(1);
}

std::string option_reference() {
  const ExperimentConfig defaults;
  std::ostringstream out;
  out << "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const Option& option : options()) {
    std::string type = option.type;
    for (size_t bar = type.find('|'); bar != std::string::npos; bar = type.find('|', bar + 2)) {
      type.replace(bar, 1, "\\|");
    }
    out << "| " << option.key << " | " << type << " | " << option.show(defaults) << " | "
        << option.help << " |\n";
  }
  return out.str();
}

bool has_sweep_section(const std::string& path) {
  const YAML::Node root = read_yaml(path, "");
  return root.IsMap() && root["sweep"];
}

}  // namespace attnlab::config
