// Parallel corpus reading: the fixture loads; each kind of bad input is an error naming file+line.
#include "core/data/corpus.h"

#include <gtest/gtest.h>

#include "core/util/check.h"
#include "data/scratch_dir.h"

namespace attnlab {
namespace {

using test::ScratchDir;

// The message of the Error thrown by `body`, or "" if none was thrown.
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(Corpus, ReadsTheBibleFixtureLineAligned) {
  const ParallelText text =
      read_parallel_text(test::bible_fixture("test.en"), test::bible_fixture("test.es"));
  ASSERT_EQ(text.src.size(), 85u);  // Ruth, as the fixture's data card lists
  ASSERT_EQ(text.tgt.size(), 85u);
  EXPECT_EQ(text.src[0].rfind("In the days when the judges judged", 0), 0u) << text.src[0];
  EXPECT_EQ(text.tgt[0].rfind("Y aconteció en los días que gobernaban los jueces", 0), 0u)
      << text.tgt[0];
}

TEST(Corpus, StripsCarriageReturnsAndAcceptsAMissingFinalNewline) {
  ScratchDir dir;
  const auto lines = read_text_lines(dir.write("a.txt", "uno\r\ndos\r\ntres"));
  EXPECT_EQ(lines, (std::vector<std::string>{"uno", "dos", "tres"}));
}

TEST(Corpus, MissingFileNamesIt) {
  ScratchDir dir;
  const std::string message =
      error_of([&] { read_parallel_text(dir.file("nope.en"), dir.file("nope.es")); });
  EXPECT_NE(message.find("nope.en"), std::string::npos) << message;
  EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
}

TEST(Corpus, DifferentLineCountsNameBothFilesAndCounts) {
  ScratchDir dir;
  const std::string src = dir.write("train.en", "a\nb\nc\n");
  const std::string tgt = dir.write("train.es", "a\nb\n");
  const std::string message = error_of([&] { read_parallel_text(src, tgt); });
  EXPECT_NE(message.find("train.en has 3 lines"), std::string::npos) << message;
  EXPECT_NE(message.find("train.es has 2"), std::string::npos) << message;
}

TEST(Corpus, EmptyLineNamesFileAndLine) {
  ScratchDir dir;
  const std::string path = dir.write("dev.es", "uno\ndos\n  \ncuatro\n");
  const std::string message = error_of([&] { read_text_lines(path); });
  EXPECT_NE(message.find(path + ":3: empty line"), std::string::npos) << message;
}

TEST(Corpus, TrainingPairsWithAnEmptySideAreLeftOutAndCounted) {
  ScratchDir dir;
  const std::string src = dir.write("train.en", "a\n\nc\nd\n \n");
  const std::string tgt = dir.write("train.es", "A\nB\n\nD\nE\n");
  const ParallelText text = read_parallel_text(src, tgt, EmptyLines::kSkipPairs);
  EXPECT_EQ(text.src, (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(text.tgt, (std::vector<std::string>{"A", "D"}));
  EXPECT_EQ(text.empty_pairs_skipped, 3);
  const std::string message = error_of([&] { read_parallel_text(src, tgt); });
  EXPECT_NE(message.find("train.en:2: empty line"), std::string::npos) << message;
}

TEST(Corpus, EmptyFileIsAnError) {
  ScratchDir dir;
  const std::string path = dir.write("empty.en", "");
  EXPECT_NE(error_of([&] { read_text_lines(path); }).find("is empty"), std::string::npos);
}

TEST(Corpus, InvalidUtf8NamesFileLineAndByte) {
  ScratchDir dir;
  const std::string path = dir.write("bad.es",
                                     "bien\nma\xF1"
                                     "ana\n");  // Latin-1 ñ
  const std::string message = error_of([&] { read_text_lines(path); });
  EXPECT_NE(message.find(path + ":2: invalid UTF-8 at byte 3"), std::string::npos) << message;
}

TEST(Corpus, Utf8Validation) {
  EXPECT_EQ(find_invalid_utf8("plain ascii"), -1);
  EXPECT_EQ(find_invalid_utf8("ma\xC3\xB1"
                              "ana \xE2\x80\x9Cq\xE2\x80\x9D \xF0\x9F\x98\x80"),
            -1);
  EXPECT_EQ(find_invalid_utf8("a\x80"), 1);             // stray continuation byte
  EXPECT_EQ(find_invalid_utf8("ab\xC0\xAF"), 2);        // overlong '/'
  EXPECT_EQ(find_invalid_utf8("\xE0\x80\xAF"), 0);      // overlong, three bytes
  EXPECT_EQ(find_invalid_utf8("x\xED\xA0\x80"), 1);     // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("ok\xE2\x82"), 2);        // truncated
  EXPECT_EQ(find_invalid_utf8("\xC3(x"), 0);            // continuation missing
  EXPECT_EQ(find_invalid_utf8("\xFF"), 0);
}

}  // namespace
}  // namespace attnlab
