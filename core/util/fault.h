// Fault injection for tests of what a kill at a given moment leaves behind: with the environment
// variable ATTNLAB_FAULT_AT set to a stage's name, the process kills itself (SIGKILL, as a lost
// node or kill -9 would) when it reaches that stage. Unset, it costs one string comparison.
#pragma once

namespace attnlab {

// Stages named so far: "last_step" (the final update is done, nothing evaluated or saved yet),
// "final_checkpoint" (the trainer returned; its last checkpoint is on disk), "final_evaluation"
// (the final numbers are computed, the summary not written), "summary" (the summary and
// attention maps are written, the status is not yet "completed").
void fault_point(const char* stage);

}  // namespace attnlab
