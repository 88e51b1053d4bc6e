// Shell safety for generated scripts: quoting any text as one shell word, and the checks that
// keep values from YAML out of places where quoting is impossible (#SBATCH lines, variable names).
#pragma once

#include <string>

namespace attnlab::cluster {

// `text` as one single-quoted shell word that bash reads back unchanged, whatever it holds
// (spaces, quotes, $(...), ;, newlines): 'it'\''s' for it's.
std::string shell_quote(const std::string& text);

// What a value given for an #SBATCH option or an environment variable must look like. Each check
// throws ConfigError naming `where` (file and key), the value and what was expected.
enum class ValueKind {
  kSlurmName,     // partition, account, qos, job name: letters, digits, . _ - and , (lists)
  kSlurmTime,     // minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
  kSlurmMemory,   // 4096, 4096M, 8G, 1T
  kSbatchOption,  // one long option with an optional value: --constraint=avx2, --exclusive
  kEnvName,       // an environment variable name: [A-Za-z_][A-Za-z0-9_]*
  kShellLine,     // one line of shell (profile set-up): no newline or other control character
  kNetworkList,   // interfaces or CIDR networks, comma-separated: eth0, 10.0.0.0/24, ib0,eth1
};
void check_value(ValueKind kind, const std::string& value, const std::string& where);

}  // namespace attnlab::cluster
