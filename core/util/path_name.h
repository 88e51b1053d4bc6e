// Names that become one level of a path (a run's name under log.dir, a sweep's directory under
// --out): checked once, where they turn into paths, so that no name walks out of the directory
// it was meant for ("..", "a/b") or lands on it ("." or a name that cleans to nothing).
#pragma once

#include <string>

namespace attnlab {

// Letters, digits and . _ - + = ; not empty, not starting with '.', at most kMaxPathNameLength
// bytes: half of NAME_MAX (255), so that files named after a name with a suffix fit too.
constexpr size_t kMaxPathNameLength = 128;

// Why `name` cannot be a single directory name ("" when it can), e.g. "'..' would leave the
// output directory".
std::string path_name_problem(const std::string& name);

}  // namespace attnlab
