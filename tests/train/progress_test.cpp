// The progress lines a log sees: one per tenth of the run, with the ETA to train.steps, shown as a
// bound when a stop rule may end the run sooner.
#include "core/train/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace attnlab {
namespace {

// What a non-interactive Progress over `total` steps writes for steps 1..total.
std::string log_of(int64_t total, bool may_stop_sooner) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  {
    Progress progress(file, /*interactive=*/false, total, /*start_step=*/0, may_stop_sooner);
    for (int64_t step = 1; step <= total; ++step) {
      TrainRow row;
      row.step = step;
      row.loss = 1.0;
      row.tokens_per_sec = 100.0;
      progress.on_step(row);
    }
  }
  std::rewind(file);
  std::string text;
  for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file))
    text.push_back(static_cast<char>(c));
  std::fclose(file);
  return text;
}

int count_lines(const std::string& text) {
  int lines = 0;
  for (const char c : text) lines += c == '\n';
  return lines;
}

TEST(Progress, ALogGetsALinePerTenthOfTheRun) {
  const std::string text = log_of(50, false);
  EXPECT_EQ(count_lines(text), 10) << text;
  EXPECT_NE(text.find("step 5/50  loss 1.0000"), std::string::npos) << text;
  EXPECT_NE(text.find("step 50/50"), std::string::npos) << text;
  EXPECT_NE(text.find("  ETA "), std::string::npos) << text;
  EXPECT_EQ(text.find("ETA <="), std::string::npos) << text;
}

TEST(Progress, WithAStopRuleTheEtaToTheCapIsABound) {
  const std::string text = log_of(50, true);
  EXPECT_EQ(count_lines(text), 10) << text;
  EXPECT_NE(text.find("  ETA <="), std::string::npos) << text;
}

}  // namespace
}  // namespace attnlab
