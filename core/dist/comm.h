// Comm: the one interface through which the rest of attnlab talks to other ranks.
//
// Two implementations: LocalComm (one process, every collective is the identity) and MpiComm
// (core/dist/mpi_comm.h, Open MPI). make_comm() picks one from the environment, so `attnlab train`
// runs unchanged with and without mpirun/srun. This header does not include mpi.h: layers that
// hold a Comm build without MPI compile flags.
//
// Collective semantics follow MPI: every rank calls the same collectives in the same order with
// the same counts (and, for broadcast, the same root). Buffers are updated in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnlab::dist {

// A contiguous piece [offset, offset + count) of a larger buffer, in elements.
struct Chunk {
  size_t offset = 0;
  size_t count = 0;
};

// Splits [0, total) into consecutive chunks of at most max_count elements (the last may be
// shorter); empty when total == 0. MPI counts are int, so buffers above INT_MAX elements go
// through one call per chunk.
std::vector<Chunk> split_into_chunks(size_t total, size_t max_count);

class Comm {
 public:
  Comm() = default;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  virtual ~Comm() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[i] <- sum over ranks of data[i], on every rank.
  virtual void allreduce_sum(float* data, size_t count) = 0;
  virtual void allreduce_sum(double* data, size_t count) = 0;
  virtual void allreduce_sum(int64_t* data, size_t count) = 0;

  // data <- root's data, on every rank.
  virtual void broadcast(float* data, size_t count, int root) = 0;
  virtual void broadcast(double* data, size_t count, int root) = 0;
  virtual void broadcast(int64_t* data, size_t count, int root) = 0;
  virtual void broadcast_bytes(void* data, size_t bytes, int root) = 0;

  virtual void barrier() = 0;

  // A collective that has waited `seconds` for some rank ends the job (Comm::abort) with a
  // message naming the ranks that did not arrive; 0 (the default) waits for ever. Per process:
  // each rank watches its own waits. A single process has nothing to wait for.
  virtual void set_collective_timeout(double seconds) { (void)seconds; }

  // Ends the whole job: prints "attnlab: rank R of N: <message>" to stderr and terminates every
  // rank with exit code `code`. Never returns and never throws (it is called from terminate
  // handlers); see core/dist/abort.h for how main uses it.
  [[noreturn]] virtual void abort(int code, const std::string& message) = 0;

  // text <- root's text on every rank (length first, then bytes).
  void broadcast_string(std::string& text, int root);
};

// A single process: rank 0 of 1. Sums and broadcasts leave the data as it is.
class LocalComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }

  void allreduce_sum(float* data, size_t count) override;
  void allreduce_sum(double* data, size_t count) override;
  void allreduce_sum(int64_t* data, size_t count) override;

  void broadcast(float* data, size_t count, int root) override;
  void broadcast(double* data, size_t count, int root) override;
  void broadcast(int64_t* data, size_t count, int root) override;
  void broadcast_bytes(void* data, size_t bytes, int root) override;

  void barrier() override {}
  [[noreturn]] void abort(int code, const std::string& message) override;
};

// True when this process was started by an MPI or Slurm launcher (mpirun/mpiexec of Open MPI,
// PMIx or Hydra, or srun), judged from the variables those launchers export. ATTNLAB_COMM=local
// or ATTNLAB_COMM=mpi overrides the guess (e.g. a Slurm batch shell that did not use srun).
bool launched_by_mpi();

// MpiComm when launched_by_mpi(), LocalComm otherwise. Create one per process, before any
// threads start, and keep it alive until the end of main.
std::unique_ptr<Comm> make_comm();

}  // namespace attnlab::dist
