// The shared-machine check a several-thread run makes at start: /proc/stat's per-CPU lines read
// for the CPUs asked (user, nice, system, irq, softirq and steal busy; idle and iowait not), the
// busy cores between two snapshots, and the warning's rule on cases with known answers.
#include "core/cluster/shared_cores.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace attnlab::cluster {
namespace {

// Two CPUs: cpu0 busy 100 + 10 + 50 + 5 + 5 + 30 = 200 of 200 + 700 + 100 = 1,000 jiffies;
// cpu1 busy 40 of 1,000. The aggregate "cpu" line and the others are not per-CPU lines.
const char* kBefore =
    "cpu  140 10 50 1400 100 5 5 30 0 0\n"
    "cpu0 100 10 50 700 100 5 5 30 0 0\n"
    "cpu1 40 0 0 960 0 0 0 0 0 0\n"
    "intr 123 0 0\n"
    "ctxt 456\n";
// 100 jiffies later on each: cpu0 spent 90 of them busy (user 80, steal 10), cpu1 10 (system).
const char* kAfter =
    "cpu  220 10 60 1510 100 5 5 40 0 0\n"
    "cpu0 180 10 50 710 100 5 5 40 0 0\n"
    "cpu1 40 0 10 1050 0 0 0 0 0 0\n";

TEST(SharedCores, ReadsThePerCpuLinesOfTheCpusAsked) {
  const CpuTimes both = cpu_times(kBefore, {0, 1});
  EXPECT_EQ(both.cpus, 2);
  EXPECT_DOUBLE_EQ(both.busy, 200.0 + 40.0);
  EXPECT_DOUBLE_EQ(both.total, 2000.0);
  const CpuTimes second = cpu_times(kBefore, {1});
  EXPECT_EQ(second.cpus, 1);
  EXPECT_DOUBLE_EQ(second.busy, 40.0);
  EXPECT_DOUBLE_EQ(second.total, 1000.0);
  EXPECT_EQ(cpu_times(kBefore, {7}).cpus, 0) << "a CPU /proc/stat has no line for";
  EXPECT_EQ(cpu_times("", {0}).cpus, 0);
}

TEST(SharedCores, BusyCoresAreTheBusyShareOfTheWindowTimesTheCpus) {
  // (90 + 10) of 200 jiffies over two CPUs: one core's worth.
  EXPECT_DOUBLE_EQ(busy_cores(cpu_times(kBefore, {0, 1}), cpu_times(kAfter, {0, 1})), 1.0);
  // cpu0 alone: 90 of 100.
  EXPECT_DOUBLE_EQ(busy_cores(cpu_times(kBefore, {0}), cpu_times(kAfter, {0})), 0.9);
  const CpuTimes same = cpu_times(kBefore, {0, 1});
  EXPECT_DOUBLE_EQ(busy_cores(same, same), 0.0) << "no time passed";
}

TEST(SharedCores, WarnsWhenTheThreadsExceedTheFreeCoresByHalfACore) {
  // 2 threads on 2 cores: free 2 - busy; a warning once busy > 0.5.
  EXPECT_EQ(shared_cores_warning(2, 2, 0.0, 0.2), "");
  EXPECT_EQ(shared_cores_warning(2, 2, 0.5, 0.2), "");
  const std::string loaded = shared_cores_warning(2, 2, 1.0, 0.2);
  EXPECT_NE(loaded.find("cluster.threads_per_rank = 2"), std::string::npos) << loaded;
  EXPECT_NE(loaded.find("kept 1.0 of this process's 2 cores busy over 0.2 s"), std::string::npos)
      << loaded;
  EXPECT_NE(loaded.find("cluster.threads_per_rank = 1"), std::string::npos) << loaded;
  // 2 threads on 4 cores keep their cores with up to 2.5 busy.
  EXPECT_EQ(shared_cores_warning(2, 4, 2.5, 0.2), "");
  EXPECT_NE(shared_cores_warning(2, 4, 2.6, 0.2), "");
  // More threads than cores, whatever the load.
  const std::string too_many = shared_cores_warning(4, 2, 0.0, 0.2);
  EXPECT_NE(too_many.find("may run on 2 core(s)"), std::string::npos) << too_many;
  // One thread has nothing to share.
  EXPECT_EQ(shared_cores_warning(1, 1, 0.9, 0.2), "");
}

// The live check reads this machine's /proc/stat; its answer depends on the load, but it must
// finish, and a thread count above every core always warns.
TEST(SharedCores, LiveCheckWarnsForMoreThreadsThanCores) {
  const std::string warning = check_shared_cores(1 << 20, std::chrono::milliseconds(10));
  EXPECT_NE(warning.find("may run on"), std::string::npos) << warning;
}

}  // namespace
}  // namespace attnlab::cluster
