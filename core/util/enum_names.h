// The names of an enum's values, declared once: the parser of a config value, its printer and the
// option's type text ("post | pre") all read the same table, so adding a value (or a whole knob)
// names it in one place.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/util/check.h"

namespace attnlab {

template <typename Enum>
class EnumNames {
 public:
  // `key` names the config key in errors ("model.norm"); `names` lists every value once, in the
  // order the choices are printed.
  EnumNames(std::string key, std::initializer_list<std::pair<Enum, const char*>> names)
      : key_(std::move(key)), names_(names.begin(), names.end()) {
    for (const auto& [value, name] : names_) {
      choices_ += (choices_.empty() ? "" : " | ") + std::string(name);
    }
  }

  // The value named `text`, or none (for a caller that words its own error, as a command-line
  // flag does).
  std::optional<Enum> find(const std::string& text) const {
    for (const auto& [value, name] : names_) {
      if (text == name) return value;
    }
    return std::nullopt;
  }

  // The value named `text`; throws Error "<key> '<text>' must be one of a | b" otherwise.
  Enum parse(const std::string& text) const {
    const std::optional<Enum> value = find(text);
    CHECK(value.has_value()) << key_ << " '" << text << "' must be one of " << choices_;
    return *value;
  }

  // The name of `value` (every value of the enum is in the table; a missing one is a bug).
  std::string name(Enum value) const {
    for (const auto& [candidate, name] : names_) {
      if (candidate == value) return name;
    }
    CHECK(false) << key_ << ": a value without a name in its table";
    return "";
  }

  // Every value, in the table's order.
  std::vector<Enum> values() const {
    std::vector<Enum> out;
    for (const auto& [value, name] : names_) out.push_back(value);
    return out;
  }

  // "a | b | c": the option's type text.
  const std::string& choices() const { return choices_; }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
  std::vector<std::pair<Enum, const char*>> names_;
  std::string choices_;
};

}  // namespace attnlab
