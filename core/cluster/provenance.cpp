#include "core/cluster/provenance.h"

namespace attnlab::cluster {

std::string dirty_build_refusal(const std::string& commit, bool allow_dirty) {
  const std::string suffix = "-dirty";
  const bool dirty = commit.size() >= suffix.size() &&
                     commit.compare(commit.size() - suffix.size(), suffix.size(), suffix) == 0;
  if (!dirty || allow_dirty) return "";
  return "this attnlab was built from a working tree with uncommitted changes (commit " + commit +
         "): its runs could not be reproduced from any commit. Commit the changes and rebuild, "
         "or pass --allow-dirty to make the runs anyway (the manifest records it, and each run "
         "records the commit and a SHA-256 of the changes)";
}

}  // namespace attnlab::cluster
