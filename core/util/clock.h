// Wall-clock time as the run logs and Slurm records write it.
#pragma once

#include <string>

namespace attnlab {

// The current UTC time in ISO 8601 to the second: "2026-12-02T04:51:49Z".
std::string utc_now();

}  // namespace attnlab
