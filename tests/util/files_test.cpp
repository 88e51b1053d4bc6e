// core/util/files and clock: atomic replacement leaves the old file or the new one, and no
// temporary file behind; utc_now has the format the run logs record.
#include "core/util/files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/util/clock.h"
#include "io/expect_error.h"
#include "io/temp_dir.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Files, WriteAtomicallyReplacesTheFileAndLeavesNoTemporary) {
  test::TempDir dir;
  const std::string path = dir.file("manifest.yaml");
  write_file_atomically(path, "first\n");
  write_file_atomically(path, std::string("second\0bytes\n", 13));
  EXPECT_EQ(contents(path), std::string("second\0bytes\n", 13));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
}

TEST(Files, AFailedReplacementLeavesTheOldFileAndNamesThePaths) {
  test::TempDir dir;
  const std::string path = dir.file("kept.txt");
  write_file_atomically(path, "old\n");
  // A directory cannot be renamed over a file: the rename fails after the temporary is written.
  const std::string temporary = dir.file("new_dir");
  fs::create_directory(temporary);
  test::expect_error([&] { replace_file(temporary, path); }, {path, "cannot rename", temporary});
  EXPECT_EQ(contents(path), "old\n");
  test::expect_error([&] { write_file_atomically(dir.file("missing/x.txt"), "text"); },
                     {"missing/x.txt.tmp-", "cannot write"});
}

TEST(Clock, UtcNowIsIso8601ToTheSecondAndTheTimeOfDayIsHoursMinutesSeconds) {
  EXPECT_TRUE(std::regex_match(utc_now(), std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")));
  EXPECT_TRUE(std::regex_match(local_time_of_day(), std::regex(R"(\d{2}:\d{2}:\d{2})")));
}

}  // namespace
}  // namespace attnlab
