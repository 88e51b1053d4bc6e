// CHECK: the user's message holds what went wrong, never the source location; the location is
// the Error's origin, printed on a debug line only when ATTNLAB_DEBUG is set.
#include "core/util/check.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace attnlab {
namespace {

Error failed_check(int value) {
  try {
    CHECK(value > 0) << "value must be positive, got " << value;
  } catch (const Error& error) {
    return error;
  }
  return Error("no error");
}

TEST(Check, TheMessageHoldsNoSourceLocation) {
  const Error error = failed_check(-1);
  EXPECT_STREQ(error.what(), "value must be positive, got -1");
  EXPECT_EQ(std::string(error.what()).find("failed at"), std::string::npos);
  EXPECT_EQ(std::string(error.what()).find("core/"), std::string::npos);
}

TEST(Check, TheOriginNamesTheConditionFileAndLine) {
  const Error error = failed_check(-1);
  const std::string& origin = error.origin();
  EXPECT_EQ(origin.rfind("check value > 0 failed at ", 0), 0u) << origin;
  EXPECT_NE(origin.find("check_test.cpp:"), std::string::npos) << origin;
}

TEST(Check, TheDebugLineOnlyWithTheEnvironmentVariable) {
  const Error error = failed_check(-2);
  ::unsetenv(kDebugEnvironmentVariable);
  EXPECT_EQ(debug_line(error), "");
  ::setenv(kDebugEnvironmentVariable, "0", 1);
  EXPECT_EQ(debug_line(error), "");
  ::setenv(kDebugEnvironmentVariable, "1", 1);
  EXPECT_EQ(debug_line(error), "debug: " + error.origin());
  EXPECT_EQ(debug_line(std::runtime_error("not ours")), "");
  EXPECT_EQ(debug_line(Error("no check")), "");
  ::unsetenv(kDebugEnvironmentVariable);
}

TEST(Check, ACheckWithoutAMessageIsAnInternalErrorThatSaysWhere) {
  try {
    CHECK(1 + 1 == 3);
    FAIL() << "CHECK did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()).rfind("internal error: check 1 + 1 == 3 failed at ", 0), 0u)
        << error.what();
  }
}

}  // namespace
}  // namespace attnlab
