// GradSync: bucket bookkeeping and the blocking / overlapped gradient allreduce.
#include "core/dist/grad_sync.h"

#include <algorithm>
#include <iterator>

#include "core/util/check.h"

namespace attnlab::dist {

BucketTracker::BucketTracker(size_t total, size_t bucket_elements)
    : total_(total), bucket_elements_(bucket_elements) {
  CHECK(bucket_elements > 0) << "bucket size must be at least one element";
  buckets_ = split_into_chunks(total, bucket_elements);
  ready_in_bucket_.assign(buckets_.size(), 0);
}

std::vector<size_t> BucketTracker::mark_ready(size_t begin, size_t end) {
  CHECK(begin <= end && end <= total_) << "ready range [" << begin << ", " << end
                                       << ") is not inside the buffer [0, " << total_ << ")";
  if (begin == end) return {};

  // The marked ranges are disjoint; the new one must not meet any of them.
  auto after = marked_.upper_bound(begin);  // first range starting after `begin`
  if (after != marked_.begin()) {
    auto before = std::prev(after);
    CHECK(before->second <= begin)
        << "ready range [" << begin << ", " << end << ") overlaps the already ready ["
        << before->first << ", " << before->second << ")";
  }
  CHECK(after == marked_.end() || after->first >= end)
      << "ready range [" << begin << ", " << end << ") overlaps the already ready [" << after->first
      << ", " << after->second << ")";

  // Insert, merging with touching neighbours so the map stays small.
  size_t merged_begin = begin;
  size_t merged_end = end;
  if (after != marked_.end() && after->first == end) {
    merged_end = after->second;
    after = marked_.erase(after);
  }
  if (after != marked_.begin()) {
    auto before = std::prev(after);
    if (before->second == begin) {
      merged_begin = before->first;
      marked_.erase(before);
    }
  }
  marked_.emplace(merged_begin, merged_end);
  ready_elements_ += end - begin;

  std::vector<size_t> completed;
  for (size_t index = begin / bucket_elements_; index <= (end - 1) / bucket_elements_; ++index) {
    const Chunk& bucket = buckets_[index];
    const size_t overlap_begin = std::max(begin, bucket.offset);
    const size_t overlap_end = std::min(end, bucket.offset + bucket.count);
    ready_in_bucket_[index] += overlap_end - overlap_begin;
    if (ready_in_bucket_[index] == bucket.count) completed.push_back(index);
  }
  return completed;
}

void BucketTracker::reset() {
  std::fill(ready_in_bucket_.begin(), ready_in_bucket_.end(), 0);
  marked_.clear();
  ready_elements_ = 0;
}

GradSync::GradSync(Comm& comm, float* grads, size_t count, GradSyncOptions options)
    : comm_(comm),
      grads_(grads),
      options_(options),
      tracker_(count, std::max<size_t>(1, options.bucket_bytes / sizeof(float))) {
  CHECK(grads != nullptr || count == 0)
      << "GradSync needs a gradient buffer of " << count << " floats, got a null pointer";
  CHECK(options.bucket_bytes >= sizeof(float))
      << "bucket_bytes must hold at least one float, got " << options.bucket_bytes;
}

void GradSync::mark_ready(size_t begin, size_t end) {
  const std::vector<size_t> completed = tracker_.mark_ready(begin, end);
  if (options_.mode != SyncMode::kOverlap) return;
  for (size_t index : completed) {
    const Chunk& bucket = tracker_.bucket(index);
    pending_.push_back(comm_.start_allreduce_sum(grads_ + bucket.offset, bucket.count));
  }
  poll();
}

void GradSync::poll() {
  while (first_unfinished_ < pending_.size() && pending_[first_unfinished_]->test()) {
    ++first_unfinished_;
  }
}

void GradSync::finish() {
  CHECK(tracker_.all_ready()) << "gradient sync finished with " << tracker_.ready_elements()
                              << " of " << tracker_.total()
                              << " elements marked ready; every parameter range must be marked "
                                 "once per step";
  if (options_.mode == SyncMode::kBlocking) {
    comm_.allreduce_sum(grads_, tracker_.total());
  } else {
    for (auto& pending : pending_) pending->wait();
  }
  pending_.clear();
  first_unfinished_ = 0;
  tracker_.reset();
}

}  // namespace attnlab::dist
