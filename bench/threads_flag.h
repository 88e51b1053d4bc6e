// The --threads=N flag of the Google Benchmark binaries (attnlab_kernels, attnlab_attention_bench).
#pragma once

#include <cstdlib>
#include <cstring>

namespace attnlab::bench {

// Removes --threads=N from argv (Google Benchmark rejects flags it does not know) and returns N
// (1 when absent).
inline int take_threads_flag(int& argc, char** argv) {
  int threads = 1;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--threads=", 10) == 0) {
      threads = std::atoi(argv[i] + 10);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return threads;
}

}  // namespace attnlab::bench
