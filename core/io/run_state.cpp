#include "core/io/run_state.h"

namespace attnlab::io {

const EnumNames<RunStatus>& run_status_names() {
  static const EnumNames<RunStatus> names("status", {{RunStatus::running, "running"},
                                                     {RunStatus::completed, "completed"},
                                                     {RunStatus::failed, "failed"},
                                                     {RunStatus::preempted, "preempted"}});
  return names;
}

const EnumNames<StopReason>& stop_reason_names() {
  static const EnumNames<StopReason> names("/summary stop_reason",
                                           {{StopReason::kSteps, "steps"},
                                            {StopReason::kPatience, "patience"},
                                            {StopReason::kEpochs, "epochs"},
                                            {StopReason::kPreempted, "preempted"},
                                            {StopReason::kNonFinite, "non_finite"}});
  return names;
}

const EnumNames<FinalCheckpoint>& final_checkpoint_names() {
  static const EnumNames<FinalCheckpoint> names("/summary final_checkpoint_kind",
                                                {{FinalCheckpoint::kNewest, "newest"},
                                                 {FinalCheckpoint::kBest, "best"},
                                                 {FinalCheckpoint::kAverage, "average"}});
  return names;
}

}  // namespace attnlab::io
