// GradSync: the sum of the flat gradient buffer over ranks, in buckets that can start during
// backward.
//
// Does overlap pay here? Measured with tests/dist/grad_sync_bench.cpp (2 ranks of Open MPI 4.1.4,
// shared memory, on this 2-core Debian 12 VM, which other jobs loaded to ~12 runnable threads
// during the run, so absolute times are inflated and only the side-by-side differences count):
// 10M floats (38 MiB), 24 equal "layers" of a simulated backward (an in-cache multiply-add
// chain calibrated at start-up to 200 ms per step, then the layer's gradients written),
// 15 repetitions with every variant back to back within a repetition; medians; exposed = the
// median (and quartiles) over repetitions of (variant - compute only) in the same repetition.
//
//   variant              median ms   min ms   max ms   exposed ms   exposed p25..p75
//   compute only            1321.2   1215.6   1537.3          0.0
//   allreduce only           237.2    197.3    273.6        237.2   220.6..255.7
//   blocking                1538.2   1377.1   1669.3        214.7   199.1..247.7
//   overlap 1 MiB           1476.6   1376.0   2020.3        178.6   161.5..250.5
//   overlap+poll 1 MiB      1514.1   1344.6   1720.6        217.8   156.2..233.6
//   overlap 4 MiB           1525.9   1380.0   1846.5        231.1   159.8..259.4
//   overlap+poll 4 MiB      1516.0   1417.3   1908.0        209.2   177.5..259.4
//   allreduce only: the blocking sum with no compute. +poll: GradSync::poll() also called 16
//   times inside each layer's compute, not only at mark_ready.
//
// Two earlier runs (9 and 11 repetitions, buckets of 1, 4 and 16 MiB) gave exposed times of
// 226 and 172 ms for blocking and 145..328 ms for the overlapped variants, a different one
// "best" each time. Every overlapped variant's quartile range contains blocking's median: no
// gain beyond the noise, and 16 MiB buckets were slower in both runs. The reason is
// structural: each rank keeps one of the two cores busy computing, Open MPI has no progress
// thread and moves a non-blocking collective only inside MPI calls, and a shared-memory
// allreduce is CPU copying, so there is no idle resource to hide the communication in. Hence
// the default is kBlocking (one call, no bucket bookkeeping on the critical path). kOverlap
// stays for machines where the network moves the bytes (RDMA NICs, spare cores); re-run the
// bench there before switching: mpiexec -n 2 <build>/tests/dist/attnlab_grad_sync_bench
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
