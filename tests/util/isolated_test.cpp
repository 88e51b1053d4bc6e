// core/util/isolated: a read that crashes, loops or throws in the child becomes one Error in the
// caller, which itself never crashes.
#include "core/util/isolated.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include "core/util/check.h"
#include "core/util/wire.h"
#include "io/expect_error.h"

namespace attnlab {
namespace {

using test::expect_error;

TEST(RunInChild, ABodyThatCompletesReturnsNormally) {
  run_in_child([] {}, "file.h5");
}

TEST(RunInChild, TheChildsErrorIsRethrownWithItsMessage) {
  expect_error(
      [] { run_in_child([] { throw Error("file.h5: /train/nll: claims 41 values"); }, "file.h5"); },
      {"file.h5: /train/nll: claims 41 values"});
}

TEST(RunInChild, ACrashInTheChildIsAnErrorNamingTheFileAndTheSignal) {
  expect_error([] { run_in_child([] { std::raise(SIGSEGV); }, "runs/x/run.h5"); },
               {"runs/x/run.h5: reading it crashed the reader (signal 11", "the file is damaged"});
}

TEST(RunInChild, AChildThatDoesNotFinishIsStoppedAtTheTimeout) {
  expect_error(
      [] {
        run_in_child(
            [] {
              while (true) pause();
            },
            "runs/x/run.h5", 0.2);
      },
      {"runs/x/run.h5: reading it did not finish"});
}

TEST(RunInChild, TheChildsResultComesBackWhole) {
  // 3 MiB: many times a pipe's buffer, so the parent must read while the child writes.
  std::string expected(3u << 20, '\0');
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<char>((i * 7919) % 251);
  EXPECT_EQ(run_in_child_for_bytes([&] { return expected; }, "file.h5"), expected);
  EXPECT_EQ(run_in_child_for_bytes([] { return std::string(); }, "file.h5"), "");
}

TEST(Wire, ValuesRoundTripInOrder) {
  wire::Writer out;
  out.put_int(-7);
  out.put_string(std::string("a\0b", 3));
  out.put_doubles({1.5, -0.25});
  out.put_double(2.0);
  wire::Reader in(out.bytes());
  EXPECT_EQ(in.get_int(), -7);
  EXPECT_EQ(in.get_string(), std::string("a\0b", 3));
  EXPECT_EQ(in.get_doubles(), (std::vector<double>{1.5, -0.25}));
  EXPECT_EQ(in.get_double(), 2.0);
  EXPECT_TRUE(in.done());
}

TEST(Wire, ShortOrGarbledBytesAreAnErrorNotAnOverRead) {
  wire::Writer out;
  out.put_string("abcdef");
  const std::string bytes = out.bytes();
  const std::string cut = bytes.substr(0, bytes.size() - 1);
  expect_error([&] { wire::Reader(cut).get_string(); }, {"a count of 6 items with 5 bytes left"});
  wire::Writer huge;
  huge.put_int(int64_t{1} << 60);
  expect_error([&] { wire::Reader(huge.bytes()).get_doubles(); },
               {"a count of 1152921504606846976 items with 0 bytes left"});
  expect_error([] { wire::Reader(std::string(3, 'x')).get_int(); },
               {"encoded value ends after 3 bytes, 5 short"});
}

}  // namespace
}  // namespace attnlab
