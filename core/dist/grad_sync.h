// GradSync: the sum of the flat gradient buffer over ranks, in buckets that can start during
// backward.
//
// Usage, once per training step (ranges are element offsets of the ParamTable):
//   GradSync sync(comm, grads.data(), grads.size(), GradSyncOptions{});   // once
//   ...backward of the last layer writes grads[b, e) ...  sync.mark_ready(b, e);
//   ...backward of the layer before ...                   sync.mark_ready(b2, e2);  ...
//   sync.finish();   // every element marked; grads now hold the sum over ranks; ready again
//
// In kOverlap mode a bucket's non-blocking allreduce starts as soon as all of its elements are
// marked. MPI requires every rank to start collectives in the same order, so every rank must mark
// the same ranges in the same order (backward is deterministic, so it does). In kBlocking mode
// mark_ready only records, and finish() runs one allreduce over the whole buffer.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "core/dist/comm.h"

namespace attnlab::dist {

// Which elements of a buffer of `total` elements are ready, and which fixed-size buckets
// [i*bucket_elements, min((i+1)*bucket_elements, total)) that makes complete. No communication.
class BucketTracker {
 public:
  BucketTracker(size_t total, size_t bucket_elements);

  size_t total() const { return total_; }
  size_t bucket_count() const { return buckets_.size(); }
  const Chunk& bucket(size_t index) const { return buckets_.at(index); }

  // Records [begin, end) as ready and returns the buckets this completed, in increasing order.
  // Throws if the range leaves the buffer or overlaps a range already marked since reset().
  std::vector<size_t> mark_ready(size_t begin, size_t end);

  size_t ready_elements() const { return ready_elements_; }
  bool all_ready() const { return ready_elements_ == total_; }
  void reset();

 private:
  size_t total_;
  size_t bucket_elements_;
  std::vector<Chunk> buckets_;
  std::vector<size_t> ready_in_bucket_;
  std::map<size_t, size_t> marked_;  // disjoint, merged ranges: begin -> end
  size_t ready_elements_ = 0;
};

enum class SyncMode {
  kBlocking,  // one allreduce over the whole buffer in finish()
  kOverlap,   // one non-blocking allreduce per bucket, started by mark_ready
};

struct GradSyncOptions {
  size_t bucket_bytes = size_t{4} << 20;  // bucket size in kOverlap mode (rounded down to floats)
  SyncMode mode = SyncMode::kBlocking;
};

class GradSync {
 public:
  // grads: the flat gradient buffer of `count` floats; it must outlive this object.
  GradSync(Comm& comm, float* grads, size_t count, GradSyncOptions options);
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // grads[begin, end) hold this rank's final gradients for the step and will not be written
  // again before finish().
  void mark_ready(size_t begin, size_t end);
  void mark_all_ready() { mark_ready(0, tracker_.total()); }

  // Lets started buckets progress. Open MPI moves non-blocking collectives forward only inside
  // MPI calls, so a long backward can call this between layers; mark_ready already does.
  void poll();

  // Waits until grads hold the sum over ranks (every element must have been marked), then
  // resets for the next step.
  void finish();

  SyncMode mode() const { return options_.mode; }
  size_t bucket_count() const { return tracker_.bucket_count(); }
  size_t buckets_started() const { return pending_.size(); }

 private:
  Comm& comm_;
  float* grads_;
  GradSyncOptions options_;
  BucketTracker tracker_;
  std::vector<std::unique_ptr<PendingReduce>> pending_;  // in start order
  size_t first_unfinished_ = 0;                          // pending_[< this] are complete
};

}  // namespace attnlab::dist
