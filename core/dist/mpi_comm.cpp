// MpiComm: every MPI call of attnlab, each one checked (the only file that includes mpi.h).
#include "core/dist/mpi_comm.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>
#include <vector>

#include "core/dist/abort.h"
#include "core/util/check.h"

namespace attnlab::dist {

struct MpiComm::Handles {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm watch = MPI_COMM_NULL;  // the census of a timed-out wait, apart from the collectives
  double timeout = 0.0;            // seconds; 0 = blocking calls, no watch
  int64_t collectives = 0;         // collectives this rank has started
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

constexpr int kPingTag = 1;
constexpr int kAnswerTag = 2;
// How long a timed-out rank waits for the others to say that they are waiting too.
constexpr double kCensusSeconds = 10.0;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Answers every census ping that has come in: "I am waiting in a collective too".
void answer_pings(MPI_Comm watch, int64_t collectives) {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, watch, &pending, &status) != MPI_SUCCESS || !pending) {
      return;
    }
    int64_t theirs = 0;
    MPI_Recv(&theirs, 1, MPI_INT64_T, status.MPI_SOURCE, kPingTag, watch, MPI_STATUS_IGNORE);
    MPI_Send(&collectives, 1, MPI_INT64_T, status.MPI_SOURCE, kAnswerTag, watch);
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Pings every other rank and waits up to kCensusSeconds for the answers (answering pings itself,
// since the other waiting ranks take their census too); the ranks that stay silent are stopped,
// hung or still computing: they never reached the collective.
std::string census(MPI_Comm watch, int64_t collectives, int rank, int size) {
  std::vector<int64_t> answers(static_cast<size_t>(size), -1);
  std::vector<MPI_Request> pending(static_cast<size_t>(size), MPI_REQUEST_NULL);
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    MPI_Request ping = MPI_REQUEST_NULL;
    MPI_Isend(&collectives, 1, MPI_INT64_T, other, kPingTag, watch, &ping);
    MPI_Request_free(&ping);  // small: sent eagerly; a silent rank never takes it
    MPI_Irecv(&answers[static_cast<size_t>(other)], 1, MPI_INT64_T, other, kAnswerTag, watch,
              &pending[static_cast<size_t>(other)]);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> waiting = {rank}, silent;
  while (seconds_since(start) < kCensusSeconds) {
    answer_pings(watch, collectives);
    bool all = true;
    for (int other = 0; other < size; ++other) {
      MPI_Request& request = pending[static_cast<size_t>(other)];
      if (request == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      all = all && done;
    }
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int other = 0; other < size; ++other) {
    if (other == rank) continue;
    (answers[static_cast<size_t>(other)] >= 0 ? waiting : silent).push_back(other);
  }
  std::sort(waiting.begin(), waiting.end());
  return rank_list(silent) + " did not arrive (no answer within " +
         std::to_string(static_cast<int>(kCensusSeconds)) +
         " s: stopped, hung or still computing); " + rank_list(waiting) +
         (waiting.size() == 1 ? " is" : " are") + " waiting in it";
}

}  // namespace

// Completes a started collective. With a timeout it polls, so that the rank can answer other
// ranks' census pings meanwhile and notice the timeout; MPI_Test spins (Open MPI progresses a
// non-blocking collective only inside MPI calls) for the first second, then every millisecond.
void MpiComm::complete(void* started, const char* call) {
  MPI_Request& request = *static_cast<MPI_Request*>(started);
  Handles& h = *handles_;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call, rank_, size_);
    if (done) return;
    answer_pings(h.watch, h.collectives);
    const double waited = seconds_since(start);
    if (waited > h.timeout) {
      const std::string silent = census(h.watch, h.collectives, rank_, size_);
      char text[160];
      std::snprintf(text, sizeof(text),
                    "%s (collective %ld of this rank) has waited %.0f s, more than the %g s of "
                    "cluster.collective_timeout: ",
                    call, static_cast<long>(h.collectives), waited, h.timeout);
      abort(kExitFailure, text + silent);
    }
    if (waited > 1.0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

template <typename T>
void MpiComm::allreduce_chunks(T* data, size_t count) {
  for (const Chunk& chunk : split_into_chunks(count, max_count_per_call_)) {
    const int n = static_cast<int>(chunk.count);
    ++handles_->collectives;
    if (handles_->timeout <= 0) {
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + chunk.offset, n, mpi_type<T>(), MPI_SUM,
                              handles_->comm),
                "MPI_Allreduce", rank_, size_);
      continue;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data + chunk.offset, n, mpi_type<T>(), MPI_SUM,
                             handles_->comm, &request),
              "MPI_Iallreduce", rank_, size_);
    complete(&request, "MPI_Allreduce");
  }
}

template <typename T>
void MpiComm::broadcast_chunks(T* data, size_t count, int root) {
  CHECK(root >= 0 && root < size_)
      << "broadcast root " << root << " is not a rank of a " << size_ << "-rank job";
  for (const Chunk& chunk : split_into_chunks(count, max_count_per_call_)) {
    const int n = static_cast<int>(chunk.count);
    ++handles_->collectives;
    if (handles_->timeout <= 0) {
      check_mpi(MPI_Bcast(data + chunk.offset, n, mpi_type<T>(), root, handles_->comm), "MPI_Bcast",
                rank_, size_);
      continue;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(data + chunk.offset, n, mpi_type<T>(), root, handles_->comm, &request),
              "MPI_Ibcast", rank_, size_);
    complete(&request, "MPI_Bcast");
  }
}

void MpiComm::set_collective_timeout(double seconds) {
  CHECK(seconds >= 0) << "collective timeout must be >= 0 seconds, got " << seconds;
  handles_->timeout = seconds;
}

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
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &handles_->watch), "MPI_Comm_dup", -1, -1);
  check_mpi(MPI_Comm_rank(handles_->comm, &rank_), "MPI_Comm_rank", -1, -1);
  check_mpi(MPI_Comm_size(handles_->comm, &size_), "MPI_Comm_size", -1, -1);
}

MpiComm::~MpiComm() {
  if (std::uncaught_exceptions() > uncaught_at_construction_) {
    abort(1,
          "an exception is leaving the scope of the MPI communicator; aborting the job so that "
          "no rank waits in a collective");
  }
  MPI_Comm_free(&handles_->watch);
  MPI_Comm_free(&handles_->comm);
  MPI_Finalize();
}

void MpiComm::allreduce_sum(float* data, size_t count) { allreduce_chunks(data, count); }
void MpiComm::allreduce_sum(double* data, size_t count) { allreduce_chunks(data, count); }
void MpiComm::allreduce_sum(int64_t* data, size_t count) { allreduce_chunks(data, count); }

void MpiComm::broadcast(float* data, size_t count, int root) {
  broadcast_chunks(data, count, root);
}
void MpiComm::broadcast(double* data, size_t count, int root) {
  broadcast_chunks(data, count, root);
}
void MpiComm::broadcast(int64_t* data, size_t count, int root) {
  broadcast_chunks(data, count, root);
}
void MpiComm::broadcast_bytes(void* data, size_t bytes, int root) {
  broadcast_chunks(static_cast<unsigned char*>(data), bytes, root);
}

void MpiComm::barrier() {
  ++handles_->collectives;
  if (handles_->timeout <= 0) {
    check_mpi(MPI_Barrier(handles_->comm), "MPI_Barrier", rank_, size_);
    return;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ibarrier(handles_->comm, &request), "MPI_Ibarrier", rank_, size_);
  complete(&request, "MPI_Barrier");
}

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
