// MpiComm: every MPI call of attnlab, each one checked (the only file that includes mpi.h).
#include "core/dist/mpi_comm.h"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "core/util/check.h"

namespace attnlab::dist {

struct MpiComm::Handles {
  MPI_Comm comm = MPI_COMM_NULL;
};

namespace {

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<int64_t>() {
  return MPI_INT64_T;
}
template <>
MPI_Datatype mpi_type<unsigned char>() {
  return MPI_BYTE;
}

std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

// Turns a failed MPI call into an attnlab::Error naming the call, the rank and MPI's reason.
// rank < 0: the rank is not known yet (during initialisation).
void check_mpi(int code, const char* call, int rank, int size) {
  if (code == MPI_SUCCESS) return;
  const std::string where =
      rank < 0 ? "" : " on rank " + std::to_string(rank) + " of " + std::to_string(size);
  CHECK(code == MPI_SUCCESS) << call << " failed" << where << ": " << error_text(code);
}

template <typename T>
void allreduce_chunks(T* data, size_t count, size_t max_count, MPI_Comm comm, int rank, int size) {
  for (const Chunk& chunk : split_into_chunks(count, max_count)) {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + chunk.offset, static_cast<int>(chunk.count),
                            mpi_type<T>(), MPI_SUM, comm),
              "MPI_Allreduce", rank, size);
  }
}

template <typename T>
void broadcast_chunks(T* data, size_t count, int root, size_t max_count, MPI_Comm comm, int rank,
                      int size) {
  CHECK(root >= 0 && root < size) << "broadcast root " << root << " is not a rank of a " << size
                                  << "-rank job";
  for (const Chunk& chunk : split_into_chunks(count, max_count)) {
    check_mpi(
        MPI_Bcast(data + chunk.offset, static_cast<int>(chunk.count), mpi_type<T>(), root, comm),
        "MPI_Bcast", rank, size);
  }
}

}  // namespace

MpiComm::MpiComm(MpiCommOptions options)
    : handles_(std::make_unique<Handles>()),
      max_count_per_call_(options.max_count_per_call),
      uncaught_at_construction_(std::uncaught_exceptions()) {
  CHECK(max_count_per_call_ > 0 && max_count_per_call_ <= static_cast<size_t>(INT_MAX))
      << "max_count_per_call must be in [1, INT_MAX], got " << max_count_per_call_;
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  CHECK(!finalized) << "MPI was already finalised in this process; create one MpiComm per process";
  CHECK(!initialized) << "MPI is already initialised; create one MpiComm per process";

  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread",
            -1, -1);
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    CHECK(provided >= MPI_THREAD_FUNNELED)
        << "the MPI library provides thread level " << provided
        << " but attnlab needs MPI_THREAD_FUNNELED (" << MPI_THREAD_FUNNELED
        << ": OpenMP threads compute while the main thread communicates)";
  }
  // MPI_ERRORS_RETURN on the world too, so that a failing MPI_Comm_dup reports instead of aborting.
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
            -1, -1);
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &handles_->comm), "MPI_Comm_dup", -1, -1);
  check_mpi(MPI_Comm_set_errhandler(handles_->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler",
            -1, -1);
  check_mpi(MPI_Comm_rank(handles_->comm, &rank_), "MPI_Comm_rank", -1, -1);
  check_mpi(MPI_Comm_size(handles_->comm, &size_), "MPI_Comm_size", -1, -1);
}

MpiComm::~MpiComm() {
  if (std::uncaught_exceptions() > uncaught_at_construction_) {
    abort(1,
          "an exception is leaving the scope of the MPI communicator; aborting the job so that "
          "no rank waits in a collective");
  }
  MPI_Comm_free(&handles_->comm);
  MPI_Finalize();
}

void MpiComm::allreduce_sum(float* data, size_t count) {
  allreduce_chunks(data, count, max_count_per_call_, handles_->comm, rank_, size_);
}
void MpiComm::allreduce_sum(double* data, size_t count) {
  allreduce_chunks(data, count, max_count_per_call_, handles_->comm, rank_, size_);
}
void MpiComm::allreduce_sum(int64_t* data, size_t count) {
  allreduce_chunks(data, count, max_count_per_call_, handles_->comm, rank_, size_);
}

void MpiComm::broadcast(float* data, size_t count, int root) {
  broadcast_chunks(data, count, root, max_count_per_call_, handles_->comm, rank_, size_);
}
void MpiComm::broadcast(double* data, size_t count, int root) {
  broadcast_chunks(data, count, root, max_count_per_call_, handles_->comm, rank_, size_);
}
void MpiComm::broadcast(int64_t* data, size_t count, int root) {
  broadcast_chunks(data, count, root, max_count_per_call_, handles_->comm, rank_, size_);
}
void MpiComm::broadcast_bytes(void* data, size_t bytes, int root) {
  broadcast_chunks(static_cast<unsigned char*>(data), bytes, root, max_count_per_call_,
                   handles_->comm, rank_, size_);
}

void MpiComm::barrier() { check_mpi(MPI_Barrier(handles_->comm), "MPI_Barrier", rank_, size_); }

void MpiComm::abort(int code, const std::string& message) {
  std::fprintf(stderr, "attnlab: rank %d of %d: %s\n", rank_, size_, message.c_str());
  std::fflush(nullptr);
  // The world, not our duplicate: every process of the job must end.
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this only guards a broken library.
}

std::string MpiComm::library_version() const {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  check_mpi(MPI_Get_library_version(text, &length), "MPI_Get_library_version", rank_, size_);
  std::string version(text, static_cast<size_t>(length));
  const size_t line_end = version.find_first_of("\r\n");
  if (line_end != std::string::npos) version.resize(line_end);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0')) version.pop_back();
  return version;
}

}  // namespace attnlab::dist
