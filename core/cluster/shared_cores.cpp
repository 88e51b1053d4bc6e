#include "core/cluster/shared_cores.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/cluster/environment.h"

namespace attnlab::cluster {

CpuTimes cpu_times(const std::string& proc_stat, const std::vector<int>& cpus) {
  CpuTimes times;
  std::istringstream lines(proc_stat);
  std::string line;
  while (std::getline(lines, line)) {
    // Per-CPU lines only: "cpu" followed by a digit (the first line, "cpu ", sums them all).
    if (line.size() < 4 || line.compare(0, 3, "cpu") != 0 || line[3] < '0' || line[3] > '9') {
      continue;
    }
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    // user nice system idle iowait irq softirq steal; guest time is counted in user already.
    std::array<double, 8> jiffies{};
    fields >> cpu;
    for (double& value : jiffies) fields >> value;
    if (!fields || std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    const auto [user, nice, system, idle, iowait, irq, softirq, steal] = jiffies;
    times.busy += user + nice + system + irq + softirq + steal;
    times.total += user + nice + system + idle + iowait + irq + softirq + steal;
    ++times.cpus;
  }
  return times;
}

double busy_cores(const CpuTimes& before, const CpuTimes& after) {
  const double total = after.total - before.total;
  if (total <= 0.0) return 0.0;
  return std::clamp((after.busy - before.busy) / total, 0.0, 1.0) * after.cpus;
}

std::string shared_cores_warning(int64_t threads, int64_t cores, double busy, double window_s) {
  if (threads <= 1) return "";  // one thread has no count to lower
  char text[512];
  if (threads > cores) {
    std::snprintf(text, sizeof text,
                  "cluster.threads_per_rank = %lld, but this process may run on %lld core(s): "
                  "threads beyond the cores only wait for one another",
                  static_cast<long long>(threads), static_cast<long long>(cores));
    return text;
  }
  const double free_cores = static_cast<double>(cores) - busy;
  if (static_cast<double>(threads) <= free_cores + 0.5) return "";
  std::snprintf(text, sizeof text,
                "cluster.threads_per_rank = %lld, but other processes kept %.1f of this "
                "process's %lld cores busy over %.1f s: threads that share their cores gain "
                "little or nothing over one thread (docs/design.md, \"Threads\"); while the "
                "machine is shared, cluster.threads_per_rank = 1 does as well and leaves the "
                "other processes their cores",
                static_cast<long long>(threads), busy, static_cast<long long>(cores), window_s);
  return text;
}

namespace {

std::string read_proc_stat() {
  std::ifstream file("/proc/stat");
  std::ostringstream text;
  text << file.rdbuf();
  return file ? text.str() : std::string();
}

}  // namespace

std::string check_shared_cores(int64_t threads, std::chrono::milliseconds window) {
  const std::vector<int> cpus = affinity_cpus();
  if (cpus.empty()) return "";
  const auto cores = static_cast<int64_t>(cpus.size());
  // More threads than cores is known without sampling (and without /proc/stat).
  if (threads > cores) return shared_cores_warning(threads, cores, 0.0, 0.0);
  const CpuTimes before = cpu_times(read_proc_stat(), cpus);
  std::this_thread::sleep_for(window);
  const CpuTimes after = cpu_times(read_proc_stat(), cpus);
  if (after.cpus == 0) return "";
  return shared_cores_warning(threads, cores, busy_cores(before, after),
                              std::chrono::duration<double>(window).count());
}

}  // namespace attnlab::cluster
