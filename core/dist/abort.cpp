// Failure handling: the catch-all around a command and the std::terminate handler.
#include "core/dist/abort.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include "core/util/check.h"

namespace attnlab::dist {

namespace {

// A terminate handler cannot capture state; the guard publishes the communicator here.
std::atomic<Comm*> terminate_comm{nullptr};

[[noreturn]] void abort_job_on_terminate() {
  const std::string reason = "uncaught exception: " + describe_current_exception();
  if (Comm* comm = terminate_comm.load()) comm->abort(kExitFailure, reason);
  std::fprintf(stderr, "attnlab: %s\n", reason.c_str());
  std::abort();
}

}  // namespace

std::string describe_current_exception() {
  const std::exception_ptr current = std::current_exception();
  if (!current) return "no active exception";
  try {
    std::rethrow_exception(current);
  } catch (const std::bad_alloc&) {
    // std::bad_alloc's what() is its type name alone.
    return "out of memory: an allocation failed (std::bad_alloc); lower the sizes of the config "
           "(data.synthetic.*, model.*, train.batch_tokens, cluster.threads_per_rank) or give "
           "the process more memory";
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "an exception of a type not derived from std::exception";
  }
}

namespace {

// debug_line (core/util/check.h) of the exception being handled.
std::string current_debug_line() {
  try {
    std::rethrow_exception(std::current_exception());
  } catch (const std::exception& error) {
    return debug_line(error);
  } catch (...) {
    return "";
  }
}

}  // namespace

int run_or_abort(Comm& comm, const std::function<int()>& body) {
  try {
    return body();
  } catch (...) {
    const std::string message = "error: " + describe_current_exception();
    // The debug line goes first when the job is aborted: abort does not return.
    const std::string debug = current_debug_line();
    if (comm.size() > 1) {
      if (!debug.empty()) std::fprintf(stderr, "attnlab: %s\n", debug.c_str());
      comm.abort(kExitFailure, message);
    }
    std::fprintf(stderr, "attnlab: %s\n", message.c_str());
    if (!debug.empty()) std::fprintf(stderr, "attnlab: %s\n", debug.c_str());
    return kExitFailure;
  }
}

AbortOnTerminate::AbortOnTerminate(Comm& comm) {
  Comm* expected = nullptr;
  CHECK(terminate_comm.compare_exchange_strong(expected, &comm))
      << "an AbortOnTerminate guard is already installed; keep one, in main";
  previous_handler_ = std::set_terminate(abort_job_on_terminate);
}

AbortOnTerminate::~AbortOnTerminate() {
  std::set_terminate(previous_handler_);
  terminate_comm.store(nullptr);
}

}  // namespace attnlab::dist
