// The process environment of a training run: threads per rank and the OpenBLAS kernel
// (cluster/env.sh's choice, made the same way here so that the launcher needs no shell).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster/process.h"

namespace attnlab::cluster {

// SkylakeX (AVX-512 F/BW/DQ/VL), Zen (AMD or Hygon with AVX2 and FMA), Haswell (others with AVX2
// and FMA) or "" from the first `flags` and `vendor_id` lines of a /proc/cpuinfo-style file;
// "" when the file cannot be read.
std::string openblas_coretype(const std::string& cpuinfo_path = "/proc/cpuinfo");

// OMP_NUM_THREADS = threads_per_rank (cluster.threads_per_rank, 1 by default: one thread per
// rank) and OPENBLAS_NUM_THREADS = 1 (products are split over OpenMP's threads by the program),
// plus OPENBLAS_CORETYPE from openblas_coretype() and OMP_WAIT_POLICY=passive, each unless this
// process already has it (a value the user set wins).
Environment run_environment(int64_t threads_per_rank);

// The thread environment the program's threading assumes, which libgomp and OpenBLAS read only
// when they load: OMP_WAIT_POLICY=passive (idle threads sleep: with another process on one of two
// cores, spinning threads made two threads 0.6x as fast as one, sleeping ones 0.97x) and
// OPENBLAS_NUM_THREADS=1 (no idle OpenBLAS pool). When OMP_WAIT_POLICY is unset, sets both (a
// value the user set wins) and re-executes the program (/proc/self/exe, same argv and pid); on
// return the environment was already settled. Prints a warning if the re-execution fails.
void settle_thread_environment(char** argv);

// The CPUs this process may run on (its affinity mask), by number; empty if it cannot be read.
std::vector<int> affinity_cpus();
// Cores this process may run on: affinity_cpus()'s count, at least 1.
int64_t available_cores();

// cluster/env.sh of an installed attnlab (<prefix>/share/attnlab/cluster/env.sh), else of the
// source tree the running binary was built in (<root>/build*/attnlab), or "" when there is none.
std::string find_env_script();

// The running executable's absolute path (/proc/self/exe).
std::string self_executable();

}  // namespace attnlab::cluster
