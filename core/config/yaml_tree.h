// A YAML file read into a plain tree with the line and column of every node: how layers other
// than core/config (cluster profiles, sweep records) read their small YAML files without
// depending on the YAML library themselves.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::config {

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;                                    // kScalar: the text as written
  std::optional<int64_t> integer;                        // kScalar: the YAML integer it reads as
  std::optional<bool> boolean;                           // kScalar: the YAML boolean it reads as
  std::vector<YamlNode> items;                           // kSequence
  std::vector<std::pair<std::string, YamlNode>> fields;  // kMap, in file order
  std::vector<YamlNode> keys;                            // kMap: the key nodes (their positions)
  int line = 0;                                          // 1-based; 0 when unknown
  int column = 0;

  bool is_null() const { return kind == Kind::kNull; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_map() const { return kind == Kind::kMap; }
  // The value of `key` in a mapping; nullptr when absent or when this is not a mapping.
  const YamlNode* find(const std::string& key) const;
  // The scalar text, or "" for anything else.
  std::string text() const { return is_scalar() ? scalar : std::string(); }
  // "file:line:column" (or "file" when the position is unknown).
  std::string where(const std::string& file) const;
};

// Reads `path`. Throws ConfigError "<path>: cannot read <what> (no such file?)" when it cannot be
// opened and "<path>:<line>:<column>: <parser message>" when it is not valid YAML.
YamlNode read_yaml_file(const std::string& path, const std::string& what);

// Reads YAML `text` given on a command line; a parse error is a ConfigError "<where>: <message>".
YamlNode read_yaml_text(const std::string& text, const std::string& where);

}  // namespace attnlab::config
