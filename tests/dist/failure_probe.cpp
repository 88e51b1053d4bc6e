// A two-rank job in which rank 1 fails while rank 0 waits in an allreduce (run by
// check_failure.sh). The job must end at once, non-zero, naming rank 1 and the error.
//
//   failure_probe caught     rank 1 throws inside the command: run_or_abort aborts the job
//   failure_probe uncaught   rank 1's exception hits a noexcept boundary: the terminate handler
//   failure_probe thread     rank 1's exception escapes a worker thread: the terminate handler
//                            calls MPI_Abort from that thread
//   failure_probe killed     rank 1 dies by SIGKILL (as under the OOM killer): the launcher ends it
//   failure_probe unwound    no guard at all: rank 1's exception unwinds past the communicator,
//                            whose destructor aborts instead of finalising
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "core/dist/abort.h"
#include "core/dist/comm.h"
#include "core/util/check.h"

namespace {

void throw_probe_error() { throw std::runtime_error("probe failure in the middle of step 3"); }

// Like an exception escaping an OpenMP region or a destructor: std::terminate runs.
void call_noexcept(void (*function)()) noexcept { function(); }

int run_probe(attnlab::dist::Comm& comm, const char* mode) {
  float value = 1.0f;
  comm.allreduce_sum(&value, 1);  // a first step both ranks complete
  if (comm.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // rank 0 is now waiting
    if (std::strcmp(mode, "caught") == 0) {
      throw attnlab::Error("probe failure in the middle of step 3");
    } else if (std::strcmp(mode, "uncaught") == 0) {
      call_noexcept(throw_probe_error);
    } else if (std::strcmp(mode, "thread") == 0) {
      std::thread worker(throw_probe_error);  // terminate runs on the worker thread
      worker.join();
    } else if (std::strcmp(mode, "killed") == 0) {
      std::raise(SIGKILL);
    }
    CHECK(false) << "unknown mode '" << mode
                 << "', expected caught, uncaught, thread, killed or unwound";
  }
  comm.allreduce_sum(&value, 1);  // rank 1 never joins
  std::fprintf(stderr, "rank %d: the second allreduce returned; the failure was not noticed\n",
               comm.rank());
  return 0;
}

}  // namespace

// A program that forgot run_or_abort: the exception leaves the communicator's scope.
int run_unguarded() {
  try {
    std::unique_ptr<attnlab::dist::Comm> comm = attnlab::dist::make_comm();
    float value = 1.0f;
    comm->allreduce_sum(&value, 1);
    if (comm->rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      throw attnlab::Error("probe failure in the middle of step 3");
    }
    comm->allreduce_sum(&value, 1);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "the exception outlived the communicator: %s\n", error.what());
  }
  return 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "unwound") == 0) return run_unguarded();
  std::unique_ptr<attnlab::dist::Comm> comm = attnlab::dist::make_comm();
  attnlab::dist::AbortOnTerminate abort_on_terminate(*comm);
  return attnlab::dist::run_or_abort(*comm, [&] { return run_probe(*comm, mode); });
}
