// load_yaml_file: yaml-cpp behind limits on size, depth, expanded size and duplicate keys.
#include "core/config/yaml.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "core/config/config.h"
#include "core/util/utf8.h"

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

// Counts a stream's documents, up to two, without building them. yaml-cpp 0.7 reads some
// malformed text (a file holding only ",") as an endless stream of empty documents, so
// YAML::LoadAll never returns on it; the count stops at the second document, which is an error
// whatever it holds.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  int documents() const { return documents_; }
  const YAML::Mark& second() const { return second_; }

 private:
  int documents_ = 0;
  YAML::Mark second_ = YAML::Mark::null_mark();
};

// The key path ("model.norm", "sweep.rows[2].name") of the scalar a byte offset of the file falls
// in or after: the last key or value that starts at or before it.
struct KeyAtOffset {
  size_t offset = 0;
  size_t best = 0;
  bool found = false;
  std::string key;

  void visit(const YAML::Node& node, const std::string& path) {
    if (node.IsScalar() || node.IsNull()) {
      const YAML::Mark mark = node.Mark();
      if (mark.is_null() || mark.pos < 0) return;
      const auto pos = static_cast<size_t>(mark.pos);
      if (pos <= offset && (!found || pos >= best)) {
        best = pos;
        found = true;
        key = path;
      }
    } else if (node.IsSequence()) {
      size_t index = 0;
      for (const YAML::Node& item : node) {
        visit(item, path + "[" + std::to_string(index++) + "]");
      }
    } else if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key_node = it->first;
        const YAML::Node value = it->second;
        const std::string name = key_node.IsScalar() ? key_node.Scalar() : "?";
        std::string child = path;
        if (!child.empty()) child += '.';
        child += name;
        visit(key_node, child);
        visit(value, child);
      }
    }
  }
};

// YAML text is Unicode (YAML 1.2, 5.2); yaml-cpp passes other bytes through, and a string key
// holding them would reach the run log's UTF-8 attributes, which readers then cannot decode.
// The error names the file, the line and column, the byte offset and, when the text parsed
// (`root` is then its checked tree), the key the byte is in.
ConfigError utf8_error(const std::string& path, const std::string& text, size_t offset,
                       const YAML::Node& root) {
  const auto before = text.begin() + static_cast<std::ptrdiff_t>(offset);
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), before, '\n'));
  const size_t line_start = offset == 0 ? std::string::npos : text.rfind('\n', offset - 1);
  const size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
  std::string in_key;
  KeyAtOffset finder;
  finder.offset = offset;
  finder.visit(root, "");
  if (finder.found && !finder.key.empty()) in_key = " in key '" + finder.key + "'";
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02X", static_cast<unsigned char>(text[offset]));
  return ConfigError(path + ":" + std::to_string(line) + ":" + std::to_string(column) +
                     ": invalid UTF-8 at byte offset " + std::to_string(offset) + " (byte " + byte +
                     ")" + in_key + "; a YAML file must be UTF-8 text");
}

ConfigError syntax_error(const std::string& path, const YAML::Exception& error) {
  return ConfigError(path + ":" + std::to_string(error.mark.line + 1) + ":" +
                     std::to_string(error.mark.column + 1) + ": YAML syntax error: " + error.msg);
}

// One document, parsed and walked under the limits of load_yaml_file.
YAML::Node parse_checked(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    std::istringstream stream(text);
    YAML::Parser parser(stream);
    DocumentCounter counter;
    while (counter.documents() < 2 && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents() > 1) {
      const YAML::Mark& mark = counter.second();
      throw ConfigError(path + ":" + std::to_string(mark.line + 1) + ":" +
                        std::to_string(mark.column + 1) +
                        ": a second YAML document ('---', or text after the end of the first, "
                        "such as a stray ','); one file holds one document");
    }
    if (counter.documents() == 1) root = YAML::Load(text);
  } catch (const YAML::Exception& error) {
    throw syntax_error(path, error);
  }
  size_t nodes = 0;
  check_node(root, path, text, 0, nodes);
  return root;
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the file (no such file?)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return load_yaml_text(buffer.str(), path);
}

YAML::Node load_yaml_text(const std::string& text, const std::string& path) {
  if (text.size() > kMaxYamlBytes) {
    throw ConfigError(path + ": " + std::to_string(text.size()) + " bytes, more than the " +
                      std::to_string(kMaxYamlBytes) + " a YAML file of attnlab may hold");
  }
  if (text.find('\0') != std::string::npos) {
    throw ConfigError(path + ": holds a NUL byte: not a YAML text file");
  }
  const int64_t bad_utf8 = find_invalid_utf8(text);
  YAML::Node root;
  try {
    root = parse_checked(text, path);
  } catch (const ConfigError&) {
    if (bad_utf8 < 0) throw;  // otherwise the encoding is the error to report, without a key
  }
  if (bad_utf8 >= 0) throw utf8_error(path, text, static_cast<size_t>(bad_utf8), root);
  return root;
}

bool is_text_scalar(const YAML::Node& node) {
  // yaml-cpp tags quoted scalars "!" and plain ones "?"; an explicit !!str keeps its full tag.
  return node.IsScalar() && (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str");
}

}  // namespace attnlab::config
