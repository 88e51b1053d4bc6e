// Whether a sweep may launch runs from this build. A build from a working tree with uncommitted
// changes (core/util/build_info.h: a commit ending in "-dirty") trains code that no commit holds:
// its runs record the commit and a hash of the changes, but nobody can check the changes out
// again. `attnlab sweep` refuses such a build unless --allow-dirty says the runs are meant to
// be made anyway; the manifest then records `allow_dirty: true`.
#pragma once

#include <string>

namespace attnlab::cluster {

// "" when a build of `commit` may launch a sweep's runs, else the message that refuses it.
std::string dirty_build_refusal(const std::string& commit, bool allow_dirty);

}  // namespace attnlab::cluster
