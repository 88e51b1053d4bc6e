// yaml-cpp for core/config's own files (the only layer that includes it).
#pragma once

// GCC 12 reports -Wdangling-pointer inside yaml-cpp 0.7's inline node code, a false positive on
// its shared memory holder; the pragma covers only yaml-cpp's own lines.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <yaml-cpp/yaml.h>
#pragma GCC diagnostic pop
#else
#include <yaml-cpp/yaml.h>
#endif
