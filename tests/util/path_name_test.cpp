// core/util/path_name: which names may be one directory level, and what is said about the others.
#include "core/util/path_name.h"

#include <gtest/gtest.h>

#include <string>

namespace attnlab {
namespace {

TEST(PathName, OrdinaryNamesPass) {
  for (const char* name : {"base", "table3-plateau", "A_h=1", "big.seed2", "x+y", "a..b"}) {
    EXPECT_EQ(path_name_problem(name), "") << name;
  }
  EXPECT_EQ(path_name_problem(std::string(kMaxPathNameLength, 'a')), "");
}

TEST(PathName, NamesThatLeaveOrHitTheOutputDirectoryAreRefusedWithTheReason) {
  EXPECT_NE(path_name_problem("..").find("the parent of the output directory"), std::string::npos);
  EXPECT_NE(path_name_problem(".").find("the output directory itself"), std::string::npos);
  EXPECT_NE(path_name_problem("").find("a name is needed"), std::string::npos);
  EXPECT_NE(path_name_problem("../../escaped_run").find("has '/'"), std::string::npos);
  EXPECT_NE(path_name_problem("a/b").find("has '/'"), std::string::npos);
  EXPECT_NE(path_name_problem(".hidden").find("starts with '.'"), std::string::npos);
  EXPECT_NE(path_name_problem("$$$").find("has '$'"), std::string::npos);
  EXPECT_NE(path_name_problem("a\rb").find("has byte 13"), std::string::npos);
  EXPECT_NE(path_name_problem(std::string(kMaxPathNameLength + 1, 'a')).find("longer than 128"),
            std::string::npos);
}

}  // namespace
}  // namespace attnlab
