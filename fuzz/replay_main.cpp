// Replays inputs through a fuzz target without libFuzzer: every regular file under each argument
// (a file, or a directory searched recursively; a missing directory holds nothing) is passed to
// LLVMFuzzerTestOneInput once, in sorted order. The ctest tests fuzz_replay.<target> run the
// committed seeds and regressions this way, so the regular and sanitizer builds replay them too.
// An input that runs longer than kSecondsPerInput fails the replay at once (a hang found by the
// fuzzer should fail the test, not wait for ctest's timeout).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

// Longer than any reader's own limit: the HDF5 readers stop a read after 30 s in a child process.
constexpr unsigned kSecondsPerInput = 60;

const char* current_input = "";

void on_alarm(int) {
  const char message[] = ": the input did not finish in time (a hang)\n";
  (void)!::write(STDERR_FILENO, current_input, std::strlen(current_input));
  (void)!::write(STDERR_FILENO, message, sizeof(message) - 1);
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path path = argv[i];
    if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else if (fs::is_directory(path)) {
      for (const fs::directory_entry& entry : fs::recursive_directory_iterator(path)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      std::printf("%s: no such file or directory, nothing to replay there\n", argv[i]);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no input to replay\n");
    return 1;
  }
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    if (!in.eof() && in.fail()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 1;
    }
    std::printf("replaying %s (%zu bytes)\n", path.c_str(), bytes.size());
    std::fflush(stdout);
    current_input = path.c_str();
    std::signal(SIGALRM, on_alarm);
    ::alarm(kSecondsPerInput);
    try {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ::alarm(0);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "%s: the target let an exception escape: %s\n", path.c_str(),
                   error.what());
      return 1;
    }
  }
  std::printf("replayed %zu input(s)\n", files.size());
  return 0;
}
