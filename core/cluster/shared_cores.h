// Whether other processes leave a run's threads their cores. Threads on cores another process
// keeps busy gain little or nothing over one thread (with a training run busy on the other of two
// cores, small at 2 threads ran at 0.96x of one thread asleep and 0.28x spinning:
// docs/design.md, "Threads"), so a run of several threads says so when it starts on a shared
// machine, from what /proc/stat counted on its CPUs just before.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::cluster {

// Jiffies of a set of CPUs from /proc/stat's per-CPU lines ("cpuN user nice system idle iowait
// irq softirq steal ..."): busy is user + nice + system + irq + softirq + steal (time the
// hypervisor gave to another guest is time this one could not run), total adds idle + iowait.
struct CpuTimes {
  double busy = 0.0, total = 0.0;
  int cpus = 0;  // of the requested CPUs, those /proc/stat had a line for
};

// The times of the CPUs numbered in `cpus` from the text of /proc/stat.
CpuTimes cpu_times(const std::string& proc_stat, const std::vector<int>& cpus);

// Cores kept busy between two snapshots of the same CPUs: the busy share of their time, times
// their number; 0 when no time passed.
double busy_cores(const CpuTimes& before, const CpuTimes& after);

// The warning a run of `threads` threads gets on `cores` cores of which other processes keep
// `busy` busy, or "" when the threads have their cores. The rule: for two threads or more, warn
// when they exceed the cores, or the free cores (cores - busy) by more than half a core.
std::string shared_cores_warning(int64_t threads, int64_t cores, double busy, double window_s);

// shared_cores_warning for this process's CPUs (its affinity mask), sampling /proc/stat over
// `window` while this process sleeps (not when the threads outnumber the CPUs, which warns at
// once); "" when /proc/stat cannot be read.
std::string check_shared_cores(int64_t threads, std::chrono::milliseconds window);

}  // namespace attnlab::cluster
