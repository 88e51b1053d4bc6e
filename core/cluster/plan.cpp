// Launch decisions and Slurm state classes.
#include "core/cluster/plan.h"

#include <set>

namespace attnlab::cluster {

bool slurm_state_active(const std::string& state) {
  static const std::set<std::string> active = {
      "PENDING",     "RUNNING",    "REQUEUED",      "REQUEUE_HOLD", "REQUEUE_FED",
      "CONFIGURING", "COMPLETING", "SUSPENDED",     "RESIZING",     "SIGNALING",
      "STAGE_OUT",   "STOPPED",    "RESV_DEL_HOLD", "SPECIAL_EXIT"};
  return active.count(state) != 0;
}

bool slurm_state_failed(const std::string& state) {
  static const std::set<std::string> failed = {"FAILED",  "NODE_FAIL", "OUT_OF_MEMORY",
                                               "TIMEOUT", "BOOT_FAIL", "DEADLINE"};
  return failed.count(state) != 0;
}

const char* to_string(Decision decision) {
  switch (decision) {
    case Decision::kLaunch: return "launch";
    case Decision::kSkipCompleted: return "completed";
    case Decision::kSkipFailed: return "failed (--retry-failed runs it again)";
    case Decision::kSkipActive: return "already queued or running in Slurm";
    case Decision::kSkipRunning: return "already running (a live trainer holds its directory)";
  }
  return "?";
}

Decision decide(const RunProgress& progress, const std::string& slurm_state, bool retry_failed) {
  if (progress.state == RunState::kCompleted) return Decision::kSkipCompleted;
  if (slurm_state_active(slurm_state)) return Decision::kSkipActive;
  if (progress.alive) return Decision::kSkipRunning;
  const bool failed = progress.state == RunState::kFailed || slurm_state_failed(slurm_state);
  if (failed && !retry_failed) return Decision::kSkipFailed;
  return Decision::kLaunch;
}

}  // namespace attnlab::cluster
