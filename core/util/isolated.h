// Reading damaged files without crashing: HDF5 parses a file's internal structures (heaps,
// B-trees) without checksums in the format attnlab writes, so a flipped bit can make it read out
// of bounds or loop. A read that might meet such a file runs first in a child process; the caller
// continues only when the child finished it, and otherwise gets one Error saying what happened.
#pragma once

#include <functional>
#include <string>

namespace attnlab {

// Runs `body` in a forked child and returns the bytes it returned, once it completed normally.
// Throws Error "<what>: <reason>" when the child threw an Error (its message), died of a signal
// (a crash inside a library reading damaged bytes), or did not finish in `timeout_seconds` (it
// is killed). The child shares nothing else with the caller: a reader encodes what it read
// (core/util/wire.h) so that the damaged bytes are parsed once, in the child, and never in the
// caller's process.
std::string run_in_child_for_bytes(const std::function<std::string()>& body,
                                   const std::string& what, double timeout_seconds = 30.0);
// The same for a body that only checks (its result is whether it completed).
void run_in_child(const std::function<void()>& body, const std::string& what,
                  double timeout_seconds = 30.0);

}  // namespace attnlab
