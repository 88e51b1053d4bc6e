// Shell quoting and the value checks for generated sbatch scripts.
#include "core/cluster/shell.h"

#include <regex>

#include "core/config/config.h"

namespace attnlab::cluster {

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char ch : text) {
    if (ch == '\'') {
      out += "'\\''";  // close the quote, an escaped quote, reopen
    } else {
      out += ch;
    }
  }
  return out + "'";
}

namespace {

bool has_control_character(const std::string& text) {
  for (char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

}  // namespace

void check_value(ValueKind kind, const std::string& value, const std::string& where) {
  // Each pattern admits only characters that mean nothing to sbatch's #SBATCH parser or to the
  // shell, so the value is safe unquoted.
  static const std::regex slurm_name("[A-Za-z0-9_.,-]+");
  static const std::regex slurm_time("([0-9]+-)?[0-9]+(:[0-9]+){0,2}");
  static const std::regex slurm_memory("[0-9]+[KMGT]?");
  static const std::regex sbatch_option(R"(--[a-z][a-z0-9-]*(=[A-Za-z0-9_.,:=+@%/\[\]-]+)?)");
  static const std::regex env_name("[A-Za-z_][A-Za-z0-9_]*");
  static const std::regex network_list("[A-Za-z0-9_.:/-]+(,[A-Za-z0-9_.:/-]+)*");
  const char* expected = nullptr;
  bool ok = false;
  switch (kind) {
    case ValueKind::kSlurmName:
      ok = std::regex_match(value, slurm_name);
      expected = "letters, digits and . _ - , only";
      break;
    case ValueKind::kSlurmTime:
      ok = std::regex_match(value, slurm_time);
      expected = "a Slurm time: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS";
      break;
    case ValueKind::kSlurmMemory:
      ok = std::regex_match(value, slurm_memory);
      expected = "a Slurm memory size: a number with an optional K, M, G or T";
      break;
    case ValueKind::kSbatchOption:
      ok = std::regex_match(value, sbatch_option);
      expected =
          "one long sbatch option, --name or --name=value, the value made of letters, digits and "
          "_ . , : = + @ % / [ ] -";
      break;
    case ValueKind::kEnvName:
      ok = std::regex_match(value, env_name);
      expected = "a variable name: letters, digits and _, not starting with a digit";
      break;
    case ValueKind::kNetworkList:
      ok = std::regex_match(value, network_list);
      expected =
          "network interfaces or CIDR networks separated by commas (eth0, 10.0.0.0/24): letters, "
          "digits and _ . : / - only";
      break;
    case ValueKind::kShellLine:
      ok = !has_control_character(value);
      expected = "one line without control characters (give each command its own list item)";
      break;
  }
  if (!ok) {
    std::string shown;
    for (char ch : value) shown += has_control_character(std::string(1, ch)) ? '?' : ch;
    throw ConfigError(where + ": '" + shown + "' is not allowed here; expected " + expected);
  }
}

}  // namespace attnlab::cluster
