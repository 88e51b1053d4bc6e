// The typed state of a run as its log records it: the root attribute `status` and /summary's
// `stop_reason`, each an enum whose names are written once (EnumNames) for the writer (RunLog),
// the reader (read_run) and every command that reports or decides on them (status, plan,
// archive, sweep through core/cluster/run_progress.h).
#pragma once

#include "core/util/enum_names.h"

namespace attnlab::io {

// The root attribute `status`: what the process writing the run last said of it.
enum class RunStatus { running, completed, failed, preempted };
const EnumNames<RunStatus>& run_status_names();

// /summary `stop_reason`: why training ended (train.steps reached, train.stop.patience or
// train.max_epochs, a stop request, a non-finite value).
enum class StopReason { kSteps, kPatience, kEpochs, kPreempted, kNonFinite };
const EnumNames<StopReason>& stop_reason_names();
inline constexpr const char* kStopReasonKey = "stop_reason";
// /summary `failure` of a run whose status is failed: what failed and where, in one line (the
// non-finite value and its step, or the error that ended training).
inline constexpr const char* kFailureKey = "failure";

// Which parameters a completed run's final evaluation scored: /summary final_checkpoint_kind,
// with their step in final_checkpoint_step (the newest averaged one for kAverage) and the prose
// final_checkpoint ("best (step 600)") for people.
enum class FinalCheckpoint { kNewest, kBest, kAverage };
const EnumNames<FinalCheckpoint>& final_checkpoint_names();

}  // namespace attnlab::io
