// Wall-clock time as the run logs and Slurm records write it, and as progress lines show it.
#pragma once

#include <string>

namespace attnlab {

// The current UTC time in ISO 8601 to the second: "2026-12-02T04:51:49Z".
std::string utc_now();

// The local time of day for progress lines a person reads: "14:03:27".
std::string local_time_of_day();

}  // namespace attnlab
