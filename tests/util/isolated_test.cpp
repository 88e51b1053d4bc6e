// core/util/isolated: a read that crashes, loops or throws in the child becomes one Error in the
// caller, which itself never crashes.
#include "core/util/isolated.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include "core/util/check.h"
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

}  // namespace
}  // namespace attnlab
