// The option table: every experiment key declared once (key, type, help, access to its field),
// used for loading, --set, dumping, flattening and the reference.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace attnlab::config {

// A YAML value reduced to what options accept: a scalar (with its quoting), a flat list of scalars,
// null, or a mapping (always an error for a leaf option).
struct RawValue {
  enum class Kind { kScalar, kList, kNull, kMap };
  Kind kind = Kind::kNull;
  std::string text;                // kScalar
  bool quoted = false;             // kScalar written in quotes (so never a number or a bool)
  std::vector<std::string> items;  // kList
};

// Whether a model key belongs to a checkpoint's architecture text (config::architecture_text),
// which a checkpoint must match to load: kListed keys always appear (the keys of every checkpoint
// written before the table decided the text), kUnlessDefault keys only when not at their default,
// so that adding one keeps every older checkpoint loadable (as run ids leave defaults out).
enum class InArchitecture { kNo, kListed, kUnlessDefault };

struct Option {
  std::string key;   // dotted path, equal to the struct member path: "model.heads"
  std::string type;  // what a value must be, in words: "integer >= 1", "post | pre"
  std::string help;  // one line
  // The value of this field in `config` as YAML flow text (a scalar or [a, b]).
  std::function<std::string(const ExperimentConfig& config)> show;
  // Stores `value` into the field; returns "" on success, else what was expected ("an integer >=
  // 1").
  std::function<std::string(ExperimentConfig& config, const RawValue& value)> assign;
  // For options that name a file (data files, tokenizer model, cluster profile): the field, so
  // that paths can be made absolute and checked in one place; empty for every other option.
  std::function<std::string&(ExperimentConfig& config)> file = nullptr;
  InArchitecture architecture = InArchitecture::kNo;
};

// All options, in declaration (and dump) order.
const std::vector<Option>& options();
// The option named `key`, or nullptr.
const Option* find_option(const std::string& key);
// True if `prefix` names a section ("model", "train.lr") that holds options.
bool is_section(const std::string& prefix);

// YAML text of scalars as the dump writes them: doubles round-trip exactly and always carry a '.'
// (so PyYAML also reads them as floats); strings are quoted only when plain text would be read
// as something else.
std::string format_number(double value);
std::string format_string(const std::string& value);

}  // namespace attnlab::config
