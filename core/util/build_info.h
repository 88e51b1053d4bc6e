// What this program was built from, for run logs, checkpoints and --version.
#pragma once

namespace attnlab {

// The project version (CMake's PROJECT_VERSION).
const char* attnlab_version();
// The source commit at build time: 12 hex digits, "-dirty" when tracked files had changes,
// "unknown" outside a git checkout.
const char* git_commit();
// SHA-256 (64 hex digits) of the uncommitted changes to tracked files at build time (`git diff
// HEAD --binary`), "" when the tree was clean or outside a git checkout.
const char* git_diff_sha256();

}  // namespace attnlab
