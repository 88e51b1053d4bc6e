#include "core/util/build_info.h"

#include "attnlab_git_commit.h"  // generated at every build by cmake/git_commit.cmake

namespace attnlab {

const char* attnlab_version() { return ATTNLAB_VERSION; }

const char* git_commit() { return ATTNLAB_GIT_COMMIT; }

const char* git_diff_sha256() { return ATTNLAB_GIT_DIFF_SHA256; }

}  // namespace attnlab
