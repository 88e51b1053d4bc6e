// load_yaml_file: yaml-cpp behind limits on size, depth, expanded size and duplicate keys.
#include "core/config/yaml.h"

#include <fstream>
#include <set>
#include <sstream>

#include "core/config/config.h"
#include "core/util/isolated.h"

namespace attnlab::config {
namespace {

std::string at(const std::string& path, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return path;
  return path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// Whether the quoted scalar opening at `pos` ('"' or '\'') has its closing quote in `text`.
bool quote_closes(const std::string& text, size_t pos) {
  if (pos >= text.size()) return true;  // no source position to check
  const char quote = text[pos];
  if (quote != '"' && quote != '\'') return true;  // a block or flow scalar yaml-cpp tags "!"
  for (size_t i = pos + 1; i < text.size(); ++i) {
    if (quote == '"' && text[i] == '\\') {
      ++i;  // an escape: the next character is not a quote
    } else if (text[i] == quote) {
      if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
        ++i;  // '' inside single quotes is one quote
      } else {
        return true;
      }
    }
  }
  return false;
}

// Walks the node graph as a reader would see it (aliases expanded), counting nodes.
void check_node(const YAML::Node& node, const std::string& path, const std::string& text, int depth,
                size_t& nodes) {
  if (++nodes > kMaxYamlNodes) {
    throw ConfigError(at(path, node) + ": more than " + std::to_string(kMaxYamlNodes) +
                      " YAML nodes once aliases are expanded (an alias loop or an alias bomb?)");
  }
  if (depth > kMaxYamlDepth) {
    throw ConfigError(at(path, node) + ": YAML nested deeper than " +
                      std::to_string(kMaxYamlDepth) + " levels (an alias that contains itself?)");
  }
  if (node.IsScalar() && node.Tag() == "!" && !node.Mark().is_null() &&
      !quote_closes(text, static_cast<size_t>(node.Mark().pos))) {
    throw ConfigError(at(path, node) + ": a quoted string that is never closed (a missing " +
                      text[static_cast<size_t>(node.Mark().pos)] + ")");
  }
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) check_node(item, path, text, depth + 1, nodes);
  } else if (node.IsMap()) {
    std::set<std::string> keys;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      if (key.IsScalar() && !keys.insert(key.Scalar()).second) {
        throw ConfigError(at(path, key) + ": key '" + key.Scalar() +
                          "' appears twice in one mapping");
      }
      check_node(key, path, text, depth + 1, nodes);
      check_node(value, path, text, depth + 1, nodes);
    }
  }
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the file (no such file?)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (text.size() > kMaxYamlBytes) {
    throw ConfigError(path + ": " + std::to_string(text.size()) + " bytes, more than the " +
                      std::to_string(kMaxYamlBytes) + " a YAML file of attnlab may hold");
  }
  if (text.find('\0') != std::string::npos) {
    throw ConfigError(path + ": holds a NUL byte: not a YAML text file");
  }
  // yaml-cpp 0.7 loops forever on some malformed files (a file holding only "," is one, found by
  // fuzzing): the text is parsed first in a child process that is stopped after a few seconds.
  // Its syntax errors are left to the parse below, which reports them with their location.
  try {
    run_in_child(
        [&] {
          try {
            YAML::LoadAll(text);
          } catch (const YAML::Exception&) {
          }
        },
        path, kYamlParseSeconds);
  } catch (const Error& error) {
    std::string reason = error.what();
    if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);
    throw ConfigError(path + ": yaml-cpp failed on this file: " + reason +
                      "; check its syntax (e.g. a stray ',' or bracket)");
  }
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(text);
  } catch (const YAML::Exception& error) {
    throw ConfigError(path + ":" + std::to_string(error.mark.line + 1) + ":" +
                      std::to_string(error.mark.column + 1) + ": YAML syntax error: " + error.msg);
  }
  if (documents.size() > 1) {
    throw ConfigError(at(path, documents[1]) +
                      ": a second YAML document ('---'); one file holds "
                      "one document");
  }
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  size_t nodes = 0;
  check_node(root, path, text, 0, nodes);
  return root;
}

bool is_text_scalar(const YAML::Node& node) {
  // yaml-cpp tags quoted scalars "!" and plain ones "?"; an explicit !!str keeps its full tag.
  return node.IsScalar() && (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str");
}

}  // namespace attnlab::config
