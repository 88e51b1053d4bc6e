// MpiComm across ranks, run by ctest under `mpiexec -n 2` (any rank count works).
//
// Every rank runs every test, so each test issues the same collectives in the same order on all
// ranks; assertions are EXPECT_* so that a failure does not skip a collective and hang the others.
// `--max-count-per-call N` builds the communicator with that chunk limit, so a second ctest run
// pushes every collective through the splitting of buffers larger than an MPI count.
#include "core/dist/mpi_comm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/util/check.h"

namespace attnlab::dist {
namespace {

MpiComm* world = nullptr;

const std::vector<size_t> kSizes = {0, 1, 7, 1001, 70001};

// Rank r holds r + 1 + (i % 5) / 2 at index i: the sum over N ranks is N(N+1)/2 + N (i % 5) / 2,
// exact in float.
TEST(MpiAllreduce, FloatSumsMatchTheClosedForm) {
  const int ranks = world->size();
  for (size_t count : kSizes) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = world->rank() + 1 + 0.5f * (i % 5);
    world->allreduce_sum(data.data(), count);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      const float expected = ranks * (ranks + 1) / 2.0f + ranks * 0.5f * (i % 5);
      if (data[i] != expected) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "count " << count << ", rank " << world->rank();
  }
}

// Rank r holds (r + 1) / 4 + i: the sum is N(N+1)/8 + N i.
TEST(MpiAllreduce, DoubleSumsMatchTheClosedForm) {
  const int ranks = world->size();
  for (size_t count : kSizes) {
    std::vector<double> data(count);
    for (size_t i = 0; i < count; ++i)
      data[i] = (world->rank() + 1) * 0.25 + static_cast<double>(i);
    world->allreduce_sum(data.data(), count);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != ranks * (ranks + 1) / 8.0 + ranks * static_cast<double>(i)) ++wrong;
    }
    EXPECT_EQ(wrong, 0u) << "count " << count << ", rank " << world->rank();
  }
}

// Values above 2^32 check that all 64 bits travel: rank r holds (r + 1) 2^33 - i.
TEST(MpiAllreduce, Int64SumsMatchTheClosedForm) {
  const int64_t ranks = world->size();
  for (size_t count : kSizes) {
    std::vector<int64_t> data(count);
    for (size_t i = 0; i < count; ++i) {
      data[i] = (world->rank() + 1) * (int64_t{1} << 33) - static_cast<int64_t>(i);
    }
    world->allreduce_sum(data.data(), count);
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      if (data[i] !=
          ranks * (ranks + 1) / 2 * (int64_t{1} << 33) - ranks * static_cast<int64_t>(i)) {
        ++wrong;
      }
    }
    EXPECT_EQ(wrong, 0u) << "count " << count << ", rank " << world->rank();
  }
}

TEST(MpiBroadcast, EveryRankReceivesTheRootsData) {
  for (int root = 0; root < world->size(); ++root) {
    const bool is_root = world->rank() == root;
    for (size_t count : kSizes) {
      std::vector<float> f(count, -1.0f);
      std::vector<double> d(count, -1.0);
      std::vector<int64_t> n(count, -1);
      std::vector<unsigned char> bytes(count, 0xEE);
      if (is_root) {
        for (size_t i = 0; i < count; ++i) {
          f[i] = 0.125f * root + static_cast<float>(i % 1000);
          d[i] = 1.0 / (root + 1) + static_cast<double>(i);
          n[i] = (int64_t{root} << 40) + static_cast<int64_t>(i);
          bytes[i] = static_cast<unsigned char>((i * 7 + root) % 251);
        }
      }
      world->broadcast(f.data(), count, root);
      world->broadcast(d.data(), count, root);
      world->broadcast(n.data(), count, root);
      world->broadcast_bytes(bytes.data(), count, root);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) {
        wrong += f[i] != 0.125f * root + static_cast<float>(i % 1000);
        wrong += d[i] != 1.0 / (root + 1) + static_cast<double>(i);
        wrong += n[i] != (int64_t{root} << 40) + static_cast<int64_t>(i);
        wrong += bytes[i] != static_cast<unsigned char>((i * 7 + root) % 251);
      }
      EXPECT_EQ(wrong, 0u) << "root " << root << ", count " << count << ", rank " << world->rank();
    }
  }
}

TEST(MpiBroadcast, StringsOfAnyLengthArriveWhole) {
  // Every rank starts with a different length; the root's text wins everywhere.
  std::string text(static_cast<size_t>(3 + 11 * world->rank()), 'x');
  if (world->rank() == 0) text = "model:\n  heads: 8\n";
  world->broadcast_string(text, 0);
  EXPECT_EQ(text, "model:\n  heads: 8\n");
  std::string empty = world->rank() == 0 ? "" : "stale";
  world->broadcast_string(empty, 0);
  EXPECT_EQ(empty, "");
}

TEST(MpiBroadcast, AMissingRootIsRejectedBeforeAnyCommunication) {
  float value = 1.0f;
  EXPECT_THROW(world->broadcast(&value, 1, world->size()), Error);
  EXPECT_THROW(world->broadcast(&value, 1, -1), Error);
}

TEST(MpiErrors, AFailingCallBecomesAnErrorWithMpisReason) {
  if (world->size() < 2) GTEST_SKIP() << "needs two ranks";
  // The root sends 8 floats where rank 1 expects 4: MPI reports truncation on rank 1 only.
  std::vector<float> data(8, 1.0f);
  const size_t count = world->rank() == 0 ? 8 : 4;
  if (world->rank() == 1) {
    try {
      world->broadcast(data.data(), count, 0);
      ADD_FAILURE() << "a truncated broadcast was not reported";
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("MPI_Bcast failed on rank 1 of"), std::string::npos) << message;
      EXPECT_NE(message.find("truncat"), std::string::npos) << message;
    }
  } else if (world->rank() == 0) {
    world->broadcast(data.data(), count, 0);
  }
  world->barrier();
}

TEST(MpiComm, ReportsTheLibraryVersion) {
  const std::string version = world->library_version();
  EXPECT_NE(version.find("MPI"), std::string::npos) << version;
  EXPECT_EQ(version.find('\n'), std::string::npos);
}

// On ranks other than 0 only failures are printed, prefixed with the rank.
class FailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (result.failed()) {
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, result.file_name(), result.line_number(),
                   result.summary());
    }
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace attnlab::dist

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  attnlab::dist::MpiCommOptions options;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--max-count-per-call") == 0) {
      options.max_count_per_call = std::strtoull(argv[i + 1], nullptr, 10);
    }
  }
  attnlab::dist::MpiComm comm(options);
  attnlab::dist::world = &comm;
  if (comm.rank() != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new attnlab::dist::FailurePrinter(comm.rank()));
  }
  const int status = RUN_ALL_TESTS();
  // The job fails if any rank failed, and every rank says so.
  int64_t failed_ranks = status != 0;
  comm.allreduce_sum(&failed_ranks, 1);
  if (comm.rank() == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "%lld rank(s) had failures\n", static_cast<long long>(failed_ranks));
  }
  return failed_ranks > 0 ? 1 : 0;
}
