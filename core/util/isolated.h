// Reading damaged files without crashing: HDF5 parses a file's internal structures (heaps,
// B-trees) without checksums in the format attnlab writes, so a flipped bit can make it read out
// of bounds or loop. A read that might meet such a file runs first in a child process; the caller
// continues only when the child finished it, and otherwise gets one Error saying what happened.
#pragma once

#include <functional>
#include <string>

namespace attnlab {

// Runs `body` in a forked child and returns when it completed normally. Throws Error
// "<what>: <reason>" when the child threw an Error (its message), died of a signal (a crash
// inside a library reading damaged bytes), or did not finish in `timeout_seconds` (it is killed).
// The child shares nothing with the caller afterwards: whatever `body` computes is discarded, so
// the caller repeats the work in-process once it is known to be safe.
void run_in_child(const std::function<void()>& body, const std::string& what,
                  double timeout_seconds = 30.0);

}  // namespace attnlab
