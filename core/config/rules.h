// Cross-field rules of an experiment, beyond each key's own type and range.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/experiment.h"

namespace attnlab::config {

struct RuleViolation {
  std::vector<std::string> keys;  // the keys the rule involves (errors point at the last one set)
  std::string message;            // names the keys, their values and what was expected
};

// Rules on a config whose model.d_k/d_v may still be 0 (= d_model / heads, which must divide).
std::optional<RuleViolation> check_rules(const ExperimentConfig& unresolved);
// ModelConfig::validate on the resolved model, reported as a violation of the key it names.
std::optional<RuleViolation> check_model(const ModelConfig& resolved);

}  // namespace attnlab::config
