// Single-process distribution: chunking, LocalComm, the launcher guess and failure handling.
#include <gtest/gtest.h>

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dist/abort.h"
#include "core/dist/comm.h"
#include "core/util/check.h"

namespace attnlab::dist {
namespace {

TEST(SplitIntoChunks, CoversTheBufferInOrderWithAShorterTail) {
  const std::vector<Chunk> chunks = split_into_chunks(10, 4);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].offset, 0u);
  EXPECT_EQ(chunks[0].count, 4u);
  EXPECT_EQ(chunks[1].offset, 4u);
  EXPECT_EQ(chunks[1].count, 4u);
  EXPECT_EQ(chunks[2].offset, 8u);
  EXPECT_EQ(chunks[2].count, 2u);
}

TEST(SplitIntoChunks, EdgeSizes) {
  EXPECT_TRUE(split_into_chunks(0, 4).empty());
  ASSERT_EQ(split_into_chunks(4, 4).size(), 1u);
  EXPECT_EQ(split_into_chunks(4, 4)[0].count, 4u);
  EXPECT_EQ(split_into_chunks(5, 1).size(), 5u);
  EXPECT_EQ(split_into_chunks(3, 100)[0].count, 3u);
  EXPECT_THROW(split_into_chunks(3, 0), Error);
}

TEST(SplitIntoChunks, AboveIntMaxEveryChunkFitsAnMpiCount) {
  const size_t total = size_t{5} * 1000 * 1000 * 1000;  // 5e9 floats would be 20 GB
  const size_t limit = 2147483647;
  const std::vector<Chunk> chunks = split_into_chunks(total, limit);
  ASSERT_EQ(chunks.size(), 3u);
  size_t covered = 0;
  for (const Chunk& chunk : chunks) {
    EXPECT_EQ(chunk.offset, covered);
    EXPECT_LE(chunk.count, limit);
    covered += chunk.count;
  }
  EXPECT_EQ(covered, total);
}

TEST(LocalComm, IsRankZeroOfOneAndLeavesDataUnchanged) {
  LocalComm comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  std::vector<float> f = {1.5f, -2.0f};
  std::vector<double> d = {0.25};
  std::vector<int64_t> i = {int64_t{1} << 40, -3};
  comm.allreduce_sum(f.data(), f.size());
  comm.allreduce_sum(d.data(), d.size());
  comm.allreduce_sum(i.data(), i.size());
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(d, (std::vector<double>{0.25}));
  EXPECT_EQ(i, (std::vector<int64_t>{int64_t{1} << 40, -3}));
  comm.broadcast(f.data(), f.size(), 0);
  EXPECT_EQ(f, (std::vector<float>{1.5f, -2.0f}));
  std::string text = "unchanged";
  comm.broadcast_string(text, 0);
  EXPECT_EQ(text, "unchanged");
  comm.barrier();
}

TEST(LocalComm, BroadcastFromAMissingRankIsAnError) {
  LocalComm comm;
  double value = 1.0;
  EXPECT_THROW(comm.broadcast(&value, 1, 1), Error);
  EXPECT_THROW(comm.broadcast_bytes(&value, sizeof(value), -1), Error);
}

TEST(LocalCommDeathTest, AbortExitsWithTheCodeAndMessage) {
  LocalComm comm;
  EXPECT_EXIT(comm.abort(3, "disk full"), testing::ExitedWithCode(3), "attnlab: disk full");
}

// Sets or clears environment variables for one test and restores them afterwards.
class ScopedEnv {
 public:
  void set(const char* name, const char* value) {
    remember(name);
    if (value == nullptr) {
      unsetenv(name);
    } else {
      setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->had_value) {
        setenv(it->name.c_str(), it->value.c_str(), 1);
      } else {
        unsetenv(it->name.c_str());
      }
    }
  }

 private:
  struct Saved {
    std::string name;
    bool had_value;
    std::string value;
  };
  void remember(const char* name) {
    const char* value = std::getenv(name);
    saved_.push_back({name, value != nullptr, value ? value : ""});
  }
  std::vector<Saved> saved_;
};

const char* const kLauncherVariables[] = {
    "ATTNLAB_COMM", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"};

TEST(LaunchedByMpi, FollowsTheLaunchersVariables) {
  ScopedEnv env;
  for (const char* name : kLauncherVariables) env.set(name, nullptr);
  EXPECT_FALSE(launched_by_mpi());
  EXPECT_EQ(make_comm()->size(), 1);
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    env.set(name, "0");
    EXPECT_TRUE(launched_by_mpi()) << name;
    env.set(name, nullptr);
  }
  env.set("SLURM_PROCID", "");
  EXPECT_FALSE(launched_by_mpi()) << "an empty variable is not a launcher";
}

TEST(LaunchedByMpi, AttnlabCommOverridesTheGuess) {
  ScopedEnv env;
  for (const char* name : kLauncherVariables) env.set(name, nullptr);
  env.set("SLURM_PROCID", "0");
  env.set("ATTNLAB_COMM", "local");
  EXPECT_FALSE(launched_by_mpi());
  env.set("SLURM_PROCID", nullptr);
  env.set("ATTNLAB_COMM", "mpi");
  EXPECT_TRUE(launched_by_mpi());
  env.set("ATTNLAB_COMM", "nccl");
  EXPECT_THROW(launched_by_mpi(), Error);
}

TEST(RunOrAbort, PassesTheExitCodeThrough) {
  LocalComm comm;
  EXPECT_EQ(run_or_abort(comm, [] { return 0; }), 0);
  EXPECT_EQ(run_or_abort(comm, [] { return 75; }), 75);
}

TEST(RunOrAbort, OneRankPrintsTheErrorAndReturnsFailure) {
  LocalComm comm;
  testing::internal::CaptureStderr();
  const int code = run_or_abort(comm, []() -> int { throw Error("corpus.de: no such file"); });
  const std::string printed = testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, kExitFailure);
  EXPECT_EQ(printed, "attnlab: error: corpus.de: no such file\n");
}

TEST(DescribeCurrentException, NamesWhatWasThrown) {
  EXPECT_EQ(describe_current_exception(), "no active exception");
  try {
    throw std::invalid_argument("bad shape");
  } catch (...) {
    EXPECT_EQ(describe_current_exception(), "bad shape");
  }
  try {
    throw 42;
  } catch (...) {
    EXPECT_EQ(describe_current_exception(),
              "an exception of a type not derived from std::exception");
  }
}

TEST(AbortOnTerminate, OneGuardAtATimeAndTheHandlerIsRestored) {
  LocalComm comm;
  const std::terminate_handler before = std::get_terminate();
  {
    AbortOnTerminate guard(comm);
    EXPECT_NE(std::get_terminate(), before);
    EXPECT_THROW(AbortOnTerminate second(comm), Error);
  }
  EXPECT_EQ(std::get_terminate(), before);
  AbortOnTerminate again(comm);  // the slot is free again
}

void throw_nan_error() { throw std::runtime_error("nan in layer 3"); }
// An exception that reaches a noexcept boundary calls std::terminate.
void call_noexcept(void (*function)()) noexcept { function(); }

TEST(AbortOnTerminateDeathTest, UncaughtExceptionEndsTheProcessWithItsMessage) {
  EXPECT_EXIT(
      {
        LocalComm comm;
        AbortOnTerminate guard(comm);
        call_noexcept(throw_nan_error);
      },
      testing::ExitedWithCode(kExitFailure), "attnlab: uncaught exception: nan in layer 3");
}

}  // namespace
}  // namespace attnlab::dist
