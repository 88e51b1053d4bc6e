// The refusal of a build from a working tree with uncommitted changes.
#include "core/cluster/provenance.h"

#include <gtest/gtest.h>

namespace attnlab::cluster {
namespace {

TEST(DirtyBuildRefusal, RefusesADirtyBuildUnlessAllowed) {
  const std::string refusal = dirty_build_refusal("0123456789ab-dirty", false);
  EXPECT_NE(refusal.find("uncommitted changes (commit 0123456789ab-dirty)"), std::string::npos)
      << refusal;
  EXPECT_NE(refusal.find("--allow-dirty"), std::string::npos) << refusal;
  EXPECT_EQ(dirty_build_refusal("0123456789ab-dirty", true), "");
}

TEST(DirtyBuildRefusal, AcceptsACleanOrUnknownBuild) {
  EXPECT_EQ(dirty_build_refusal("0123456789ab", false), "");
  EXPECT_EQ(dirty_build_refusal("unknown", false), "");
  EXPECT_EQ(dirty_build_refusal("dirty", false), "");  // no commit, not a "-dirty" suffix
}

}  // namespace
}  // namespace attnlab::cluster
