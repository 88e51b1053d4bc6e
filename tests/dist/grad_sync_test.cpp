// Bucket bookkeeping of the gradient sync, and GradSync's step protocol on one rank.
#include "core/dist/grad_sync.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/dist/comm.h"
#include "core/util/check.h"

namespace attnlab::dist {
namespace {

using Buckets = std::vector<size_t>;

TEST(BucketTracker, SplitsIntoFixedBucketsWithAShorterLast) {
  BucketTracker tracker(10, 4);
  ASSERT_EQ(tracker.bucket_count(), 3u);
  EXPECT_EQ(tracker.bucket(0).offset, 0u);
  EXPECT_EQ(tracker.bucket(1).offset, 4u);
  EXPECT_EQ(tracker.bucket(2).offset, 8u);
  EXPECT_EQ(tracker.bucket(2).count, 2u);
  EXPECT_EQ(BucketTracker(0, 4).bucket_count(), 0u);
  EXPECT_TRUE(BucketTracker(0, 4).all_ready());
  EXPECT_THROW(BucketTracker(10, 0), Error);
}

TEST(BucketTracker, ReverseOrderLayersCompleteBucketsFromTheBack) {
  // Three "layers" owning [0,3), [3,7), [7,10); backward visits them last to first.
  BucketTracker tracker(10, 4);  // buckets [0,4) [4,8) [8,10)
  EXPECT_EQ(tracker.mark_ready(7, 10), (Buckets{2}));
  EXPECT_EQ(tracker.ready_elements(), 3u);
  EXPECT_EQ(tracker.mark_ready(3, 7), (Buckets{1}));
  EXPECT_FALSE(tracker.all_ready());
  EXPECT_EQ(tracker.mark_ready(0, 3), (Buckets{0}));
  EXPECT_TRUE(tracker.all_ready());
}

TEST(BucketTracker, OneRangeCanCompleteSeveralBuckets) {
  BucketTracker tracker(10, 4);
  EXPECT_EQ(tracker.mark_ready(1, 2), (Buckets{}));
  EXPECT_EQ(tracker.mark_ready(2, 10), (Buckets{1, 2}));
  EXPECT_EQ(tracker.mark_ready(0, 1), (Buckets{0}));
  EXPECT_EQ(tracker.mark_ready(5, 5), (Buckets{})) << "an empty range changes nothing";
}

TEST(BucketTracker, RangesOutsideOrOverlappingAreErrors) {
  BucketTracker tracker(10, 4);
  EXPECT_THROW(tracker.mark_ready(8, 11), Error);
  EXPECT_THROW(tracker.mark_ready(5, 4), Error);
  tracker.mark_ready(3, 6);
  EXPECT_THROW(tracker.mark_ready(5, 7), Error);   // overlaps the end
  EXPECT_THROW(tracker.mark_ready(0, 4), Error);   // overlaps the start
  EXPECT_THROW(tracker.mark_ready(4, 5), Error);   // inside
  EXPECT_THROW(tracker.mark_ready(0, 10), Error);  // covers
  tracker.mark_ready(6, 10);                       // touching is fine
  tracker.mark_ready(0, 3);
  EXPECT_TRUE(tracker.all_ready());
  EXPECT_THROW(tracker.mark_ready(9, 10), Error) << "marked twice in one step";
}

TEST(BucketTracker, ResetStartsANewStep) {
  BucketTracker tracker(6, 3);
  EXPECT_EQ(tracker.mark_ready(0, 6), (Buckets{0, 1}));
  tracker.reset();
  EXPECT_EQ(tracker.ready_elements(), 0u);
  EXPECT_EQ(tracker.mark_ready(3, 6), (Buckets{1}));
  EXPECT_EQ(tracker.mark_ready(0, 3), (Buckets{0}));
}

TEST(GradSync, BucketBytesBecomeFloatCounts) {
  LocalComm comm;
  std::vector<float> grads(100, 1.0f);
  EXPECT_EQ(GradSync(comm, grads.data(), grads.size(), {40, SyncMode::kOverlap}).bucket_count(),
            10u);
  EXPECT_EQ(GradSync(comm, grads.data(), grads.size(), {42, SyncMode::kOverlap}).bucket_count(),
            10u)
      << "42 bytes hold 10 whole floats";
  EXPECT_EQ(
      GradSync(comm, grads.data(), grads.size(), {1 << 20, SyncMode::kOverlap}).bucket_count(), 1u);
  EXPECT_THROW(GradSync(comm, grads.data(), grads.size(), {3, SyncMode::kOverlap}), Error);
  EXPECT_THROW(GradSync(comm, nullptr, 5, {}), Error);
}

TEST(GradSync, OverlapStartsEachBucketWhenItsLastRangeArrives) {
  LocalComm comm;
  std::vector<float> grads(10, 2.0f);
  GradSync sync(comm, grads.data(), grads.size(), {4 * sizeof(float), SyncMode::kOverlap});
  sync.mark_ready(9, 10);
  EXPECT_EQ(sync.buckets_started(), 0u);
  sync.mark_ready(8, 9);
  EXPECT_EQ(sync.buckets_started(), 1u);
  sync.mark_ready(2, 8);
  EXPECT_EQ(sync.buckets_started(), 2u);
  EXPECT_THROW(sync.finish(), Error) << "[0, 2) was never marked";
  sync.mark_ready(0, 2);
  EXPECT_EQ(sync.buckets_started(), 3u);
  sync.finish();
  EXPECT_EQ(sync.buckets_started(), 0u);
  EXPECT_EQ(grads, std::vector<float>(10, 2.0f)) << "a sum over one rank is the identity";
  // The next step starts from nothing marked.
  sync.mark_all_ready();
  sync.finish();
}

TEST(GradSync, BlockingModeStartsNothingBeforeFinish) {
  LocalComm comm;
  std::vector<float> grads(10, 1.0f);
  GradSync sync(comm, grads.data(), grads.size(), {4 * sizeof(float), SyncMode::kBlocking});
  sync.mark_ready(0, 10);
  EXPECT_EQ(sync.buckets_started(), 0u);
  sync.finish();
  EXPECT_THROW(sync.finish(), Error) << "a finished step must be marked again";
}

}  // namespace
}  // namespace attnlab::dist
