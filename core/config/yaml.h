// yaml-cpp for core/config's own files (the only layer that includes it).
#pragma once

// GCC 12 reports -Wdangling-pointer inside yaml-cpp 0.7's inline node code, a false positive on
// its shared memory holder; the pragma covers only yaml-cpp's own lines.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop
#else
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>
#endif

#include <string>

namespace attnlab::config {

// Every YAML file the program reads goes through here (experiments, sweeps, cluster profiles,
// manifests, Slurm records), with limits a hostile or broken file cannot get past: at most
// kMaxYamlBytes, nesting at most kMaxYamlDepth, at most kMaxYamlNodes nodes once aliases are
// expanded (an alias loop or a "billion laughs" file stops here instead of exhausting the stack
// or the memory), one document, and no key twice in a mapping. Throws ConfigError naming
// path:line:column.
inline constexpr size_t kMaxYamlBytes = 4u << 20;
inline constexpr int kMaxYamlDepth = 64;
inline constexpr size_t kMaxYamlNodes = 200000;
// Quoted scalars are unterminated-quote-checked too: yaml-cpp reads `name: "abc` to the end of
// the file as a string.
// Text that is not valid UTF-8 is refused with the byte offset and the key it is in.
YAML::Node load_yaml_file(const std::string& path);
// The same checks on YAML text held in memory (a run log's stored config); `path` names where the
// text came from in messages ("runs/x/run.h5 (attribute config_yaml)").
YAML::Node load_yaml_text(const std::string& text, const std::string& path);

// True when `node` is a scalar the file marks as text: quoted ("4", '4') or tagged !!str 4.
// Such a value never becomes a number or a boolean.
bool is_text_scalar(const YAML::Node& node);

}  // namespace attnlab::config
