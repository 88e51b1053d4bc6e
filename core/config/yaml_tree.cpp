// read_yaml_file: yaml-cpp's node graph copied into config::YamlNode.
#include "core/config/yaml_tree.h"

#include <fstream>

#include "core/config/config.h"
#include "core/config/yaml.h"

namespace attnlab::config {
namespace {

YamlNode convert(const YAML::Node& node) {
  YamlNode out;
  const YAML::Mark mark = node.Mark();
  if (mark.line >= 0) {
    out.line = mark.line + 1;
    out.column = mark.column + 1;
  }
  if (node.IsScalar()) {
    out.kind = YamlNode::Kind::kScalar;
    out.scalar = node.Scalar();
    int64_t integer = 0;
    if (YAML::convert<int64_t>::decode(node, integer)) out.integer = integer;
    bool boolean = false;
    if (YAML::convert<bool>::decode(node, boolean)) out.boolean = boolean;
  } else if (node.IsSequence()) {
    out.kind = YamlNode::Kind::kSequence;
    for (const YAML::Node& item : node) out.items.push_back(convert(item));
  } else if (node.IsMap()) {
    out.kind = YamlNode::Kind::kMap;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies: the iterator's pair is a temporary whose nodes must not be kept by reference.
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      out.keys.push_back(convert(key));
      out.fields.emplace_back(key.IsScalar() ? key.Scalar() : std::string(), convert(value));
    }
  }
  return out;
}

}  // namespace

const YamlNode* YamlNode::find(const std::string& key) const {
  for (const auto& [name, value] : fields) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::string YamlNode::where(const std::string& file) const {
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

YamlNode read_yaml_text(const std::string& text, const std::string& where) {
  try {
    return convert(YAML::Load(text));
  } catch (const YAML::Exception& error) {
    throw ConfigError(where + ": '" + text + "' is not YAML (" + error.msg + ")");
  }
}

YamlNode read_yaml_file(const std::string& path, const std::string& what) {
  std::ifstream probe(path);
  if (!probe) throw ConfigError(path + ": cannot read " + what + " (no such file?)");
  return convert(load_yaml_file(path));
}

}  // namespace attnlab::config
