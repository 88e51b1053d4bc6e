// Run environment: thread counts, OpenBLAS kernel detection, core count, paths of this build.
#include "core/cluster/environment.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include "core/util/installed.h"

namespace attnlab::cluster {
namespace fs = std::filesystem;
namespace {

// The value after ':' of the first line starting with `key`, padded with spaces so that
// " flag " finds whole words.
std::string first_field(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const size_t colon = line.find(':');
    return colon == std::string::npos ? "" : " " + line.substr(colon + 1) + " ";
  }
  return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
  std::string padded = flags;
  for (char& ch : padded) {
    if (ch == '\t') ch = ' ';
  }
  return padded.find(" " + flag + " ") != std::string::npos;
}

// Whether the environment leaves `name` unset (or empty): a value the user set always wins.
bool env_unset(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0';
}

}  // namespace

std::string openblas_coretype(const std::string& cpuinfo_path) {
  const std::string flags = first_field(cpuinfo_path, "flags");
  std::string vendor = first_field(cpuinfo_path, "vendor_id");
  std::string vendor_word;
  for (char ch : vendor) {
    if (ch != ' ' && ch != '\t') vendor_word += ch;
  }
  // OpenBLAS's SkylakeX kernels use AVX-512 F, BW, DQ and VL.
  if (has_flag(flags, "avx512f") && has_flag(flags, "avx512bw") && has_flag(flags, "avx512dq") &&
      has_flag(flags, "avx512vl")) {
    return "SkylakeX";
  }
  if (has_flag(flags, "avx2") && has_flag(flags, "fma")) {
    // Zen runs the Haswell kernels with blocking sizes tuned for AMD caches.
    return vendor_word == "AuthenticAMD" || vendor_word == "HygonGenuine" ? "Zen" : "Haswell";
  }
  return "";
}

Environment run_environment(int64_t threads_per_rank) {
  const std::string threads = std::to_string(threads_per_rank);
  // The program splits products over OpenMP's threads itself (blas::set_threads); OpenBLAS's own
  // pool would only add idle threads.
  Environment env = {{"OMP_NUM_THREADS", threads}, {"OPENBLAS_NUM_THREADS", "1"}};
  if (env_unset("OPENBLAS_CORETYPE")) {
    const std::string kernel = openblas_coretype();
    if (!kernel.empty()) env.emplace_back("OPENBLAS_CORETYPE", kernel);
  }
  // Idle OpenMP threads sleep instead of spinning: concurrent runs and ranks share the cores.
  if (env_unset("OMP_WAIT_POLICY")) env.emplace_back("OMP_WAIT_POLICY", "passive");
  return env;
}

void settle_thread_environment(char** argv) {
  if (!env_unset("OMP_WAIT_POLICY")) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  if (env_unset("OPENBLAS_NUM_THREADS")) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  const std::string exe = self_executable();
  if (!exe.empty()) execv(exe.c_str(), argv);
  std::cerr << "attnlab: warning: could not restart with OMP_WAIT_POLICY=passive ("
            << (exe.empty() ? "no /proc/self/exe" : std::strerror(errno))
            << "); idle OpenMP threads spin\n";
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

int64_t available_cores() {
  return std::max<int64_t>(1, static_cast<int64_t>(affinity_cpus().size()));
}

std::string self_executable() {
  std::error_code error;
  const fs::path path = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
}

std::string find_env_script() {
  if (const std::string installed = installed_data_dir("cluster/env.sh"); !installed.empty()) {
    return installed + "/cluster/env.sh";
  }
  const std::string exe = self_executable();
  if (exe.empty()) return "";
  // <root>/<build dir>/attnlab -> <root>/cluster/env.sh
  const fs::path candidate = fs::path(exe).parent_path().parent_path() / "cluster" / "env.sh";
  std::error_code error;
  return fs::is_regular_file(candidate, error) ? candidate.string() : std::string();
}

}  // namespace attnlab::cluster
