// Failure handling: an error on any rank ends the whole job within seconds, naming rank and error.
//
// Without this, a rank that throws leaves the other ranks blocked forever in their next collective
// (an allreduce never completes when one member is gone). The rule: the failing rank calls
// Comm::abort, which prints "attnlab: rank R of N: <error>" and runs MPI_Abort, and mpirun/srun
// then kill every rank. Two paths lead there:
//   run_or_abort   catches what the command throws (the normal path for errors);
//   AbortOnTerminate  installs a std::terminate handler for everything else: exceptions thrown
//                  past a noexcept boundary or out of an OpenMP or std::thread worker, or
//                  escaping main. The handler then runs on that worker: MPI_Abort from a
//                  non-main thread is outside what MPI_THREAD_FUNNELED promises, but it is the
//                  process's last call and Open MPI honours it (tests/dist: failure_thread).
// Fatal signals (SIGSEGV, SIGKILL, ...) end the rank's process; mpirun then ends the job by
// itself (srun needs --kill-on-bad-exit=1). SIGTERM/SIGUSR1 are the trainer's (checkpoint, exit).
//
// How main uses it (the attnlab CLI does exactly this):
//
//   int main(int argc, char** argv) {
//     std::unique_ptr<attnlab::dist::Comm> comm;
//     try {
//       comm = attnlab::dist::make_comm();   // MPI_Init_thread under mpirun/srun
//     } catch (const std::exception& e) {
//       std::fprintf(stderr, "attnlab: %s\n", e.what());
//       return 1;                            // no communicator: the launcher ends the job
//     }
//     attnlab::dist::AbortOnTerminate abort_on_terminate(*comm);
//     return attnlab::dist::run_or_abort(*comm, [&] { return run_command(argc, argv, *comm); });
//   }                                        // abort_on_terminate, then comm (MPI_Finalize)
//
// With one rank, run_or_abort prints the error and returns kExitFailure so destructors run
// (files are closed cleanly); with several ranks it aborts the job with that code.
#pragma once

#include <functional>
#include <string>

#include "core/dist/comm.h"
#include "core/util/exit_code.h"

namespace attnlab::dist {

// Runs body and returns its exit code. If body throws: with comm.size() == 1 prints
// "attnlab: error: <what>" and returns kExitFailure; with more ranks calls
// comm.abort(kExitFailure, "error: <what>"), which ends every rank.
int run_or_abort(Comm& comm, const std::function<int()>& body);

// While alive, std::terminate aborts the job through `comm` with the uncaught exception's
// message. One at a time; the previous handler is restored on destruction. `comm` must outlive
// the guard (declare the guard after the communicator).
class AbortOnTerminate {
 public:
  explicit AbortOnTerminate(Comm& comm);
  AbortOnTerminate(const AbortOnTerminate&) = delete;
  AbortOnTerminate& operator=(const AbortOnTerminate&) = delete;
  ~AbortOnTerminate();

 private:
  void (*previous_handler_)();
};

// The message of the exception being handled, for catch blocks and terminate handlers:
// what() for std::exception, a fixed text otherwise, or "no active exception".
std::string describe_current_exception();

}  // namespace attnlab::dist
