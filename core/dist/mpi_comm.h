// MpiComm: Comm over Open MPI (any MPI-3 library), owning MPI's lifetime in this process.
//
// The constructor calls MPI_Init_thread asking for MPI_THREAD_FUNNELED (OpenMP threads compute,
// only the main thread calls MPI) and fails unless that level is provided; it works on a private
// duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, so every failing call becomes an
// attnlab::Error carrying MPI_Error_string. The destructor frees the communicator and calls
// MPI_Finalize, except while an exception is unwinding the stack: finalising then would wait for
// ranks that are still inside a collective, so it aborts the job instead. mpi.h stays in
// mpi_comm.cpp.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>
#include <string>

#include "core/dist/comm.h"

namespace attnlab::dist {

struct MpiCommOptions {
  // Most elements handed to one MPI call; larger buffers are split (MPI counts are int).
  // Tests lower it to exercise the splitting with small buffers.
  size_t max_count_per_call = INT_MAX;
};

class MpiComm final : public Comm {
 public:
  explicit MpiComm(MpiCommOptions options = {});
  ~MpiComm() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(float* data, size_t count) override;
  void allreduce_sum(double* data, size_t count) override;
  void allreduce_sum(int64_t* data, size_t count) override;

  void broadcast(float* data, size_t count, int root) override;
  void broadcast(double* data, size_t count, int root) override;
  void broadcast(int64_t* data, size_t count, int root) override;
  void broadcast_bytes(void* data, size_t bytes, int root) override;

  void barrier() override;
  [[noreturn]] void abort(int code, const std::string& message) override;
  // With a timeout, collectives are started non-blocking and polled: past the timeout the rank
  // asks every other rank, on a communicator of their own, whether it is waiting too (a rank
  // polling a collective answers at once); the ranks that do not answer within 10 s are the ones
  // that did not arrive, and the job ends naming them.
  void set_collective_timeout(double seconds) override;

  // The MPI library's own version line (MPI_Get_library_version), for run metadata.
  std::string library_version() const;

 private:
  struct Handles;  // the MPI_Comm, kept out of this header
  // Waits for the MPI_Request at `started` (polled, watched: set_collective_timeout).
  void complete(void* started, const char* call);
  template <typename T>
  void allreduce_chunks(T* data, size_t count);
  template <typename T>
  void broadcast_chunks(T* data, size_t count, int root);
  std::unique_ptr<Handles> handles_;
  int rank_ = 0;
  int size_ = 1;
  size_t max_count_per_call_;
  int uncaught_at_construction_;
};

}  // namespace attnlab::dist
