// The SIGKILL drill: a writer appending to a run file is killed (and paused) at random moments,
// several times; after each kill the file must open (with this library and with h5dump), hold
// every row the writer reported as written, and have series of equal length with the values the
// writer wrote. Each round resumes the run, and the last one completes it without duplicates.
// ATTNLAB_KILL_ROUNDS (default 8) and ATTNLAB_KILL_SEED (default: random, printed) steer it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/io/h5.h"
#include "core/io/run_log.h"
#include "io/drill_rows.h"
#include "io/temp_dir.h"

namespace attnlab::test {
namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

// The writer process with its stdout on a pipe; reports the steps it has written.
class Writer {
 public:
  Writer(const std::string& path, int64_t first, int64_t last, bool resume) {
    int fds[2];
    CHECK(pipe(fds) == 0) << "pipe failed";
    std::vector<std::string> args = {ATTNLAB_RUN_LOG_WRITER, path, std::to_string(first),
                                     std::to_string(last)};
    if (resume) args.emplace_back("--resume");
    pid_ = fork();
    CHECK(pid_ >= 0) << "fork failed";
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      close(fds[0]);
      close(fds[1]);
      std::vector<char*> argv;
      for (std::string& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
  }
  ~Writer() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Reads reports until step `until` is written or the pipe closes; returns the last step.
  int64_t read_until(int64_t until) {
    char buffer[4096];
    while (last_reported_ < until) {
      ssize_t count = read(out_, buffer, sizeof(buffer));
      if (count <= 0) break;
      for (ssize_t i = 0; i < count; ++i) {
        if (buffer[i] == '\n') {
          last_reported_ = std::atoll(line_.c_str());
          line_.clear();
        } else {
          line_ += buffer[i];
        }
      }
    }
    return last_reported_;
  }
  void signal(int number) { kill(pid_, number); }
  // Waits for the process to end; returns its wait status.
  int wait() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  std::string line_;
  int64_t last_reported_ = 0;
};

// Checks one series group against the rows the drill writes; returns its complete rows. A kill
// between a series' datasets and its `columns` attribute (its first append) leaves a group
// without the attribute: read_run must report it as damaged by name (a resume repairs it), and it
// holds no row: none was reported for it.
template <typename RowAt>
int64_t check_series(h5::Group group, const io::RunContents& run, int64_t every, RowAt row_at) {
  if (!group.has_attribute("columns")) {
    bool has_datasets = false;
    for (const std::string& name : group.names()) has_datasets |= group.has_dataset(name);
    if (has_datasets) {
      const bool reported = std::any_of(run.damaged.begin(), run.damaged.end(), [&](auto& text) {
        return text.rfind(group.path() + ":", 0) == 0;
      });
      EXPECT_TRUE(reported) << group.path() << " is half-defined but read_run does not say so";
    }
    return 0;
  }
  std::vector<std::string> columns = group.get_strings("columns");
  int64_t complete = -1;
  int64_t longest = 0;
  for (const std::string& column : columns) {
    int64_t rows = group.dataset(column).rows();
    complete = complete < 0 ? rows : std::min(complete, rows);
    longest = std::max(longest, rows);
  }
  // Only a kill inside an append's flush can leave a partial row, and only one.
  EXPECT_LE(longest - complete, 1) << group.path();
  for (size_t c = 0; c < columns.size(); ++c) {
    std::vector<double> values = group.dataset(columns[c]).read<double>();
    for (int64_t r = 0; r < complete; ++r) {
      int64_t step = (r + 1) * every;
      std::vector<double> expected = row_at(step, c);
      for (size_t k = 0; k < expected.size(); ++k) {
        double value = values[static_cast<size_t>(r) * expected.size() + k];
        if (value != expected[k]) {
          ADD_FAILURE() << group.path() << "/" << columns[c] << " row " << r << ": " << value
                        << ", written " << expected[k];
          return complete;
        }
      }
    }
  }
  return complete;
}

// Checks the whole file; returns the last step whose rows are complete in every series (a resume
// point: the writer appends a step's train row first and may die before its eval row).
int64_t check_run_file(const std::string& path, int64_t reported) {
  io::RunContents run = io::read_run(path);
  EXPECT_GE(run.train.rows, reported) << "rows reported as written are missing";
  h5::File file = h5::File::open_unlocked(path, h5::Access::read);
  int64_t train = check_series(file.root().group("train"), run, 1, [](int64_t step, size_t c) {
    return std::vector<double>{drill_train_row(step)[c].second};
  });
  int64_t eval = check_series(
      file.root().group("eval"), run, kDrillEvalEvery,
      [](int64_t step, size_t c) { return std::vector<double>{drill_eval_row(step)[c].second}; });
  // The writer appends the train row of a step before its eval row, and may die in between.
  auto follows = [train](int64_t rows, int64_t every) {
    return rows == train / every || (train % every == 0 && rows == train / every - 1);
  };
  EXPECT_TRUE(follows(eval, kDrillEvalEvery)) << eval << " eval rows after " << train << " steps";
  int64_t consistent = eval == train / kDrillEvalEvery ? train : train - 1;
  // A kill after step 3's train row and before its diagnostic row is flushed leaves no
  // grad_norm group at all: that is zero rows, and the resume point is step 2.
  h5::Group diagnostics = file.root().group("diagnostics");
  int64_t grad = 0;
  if (diagnostics.has("grad_norm")) {
    grad = check_series(
        diagnostics.group("grad_norm"), run, kDrillDiagnosticEvery, [](int64_t step, size_t c) {
          return c == 0 ? std::vector<double>{double(step)} : drill_grad_norms(step);
        });
  }
  EXPECT_TRUE(follows(grad, kDrillDiagnosticEvery))
      << grad << " diagnostic rows after " << train << " steps";
  if (grad != train / kDrillDiagnosticEvery) consistent = train - 1;
  if (!std::string(ATTNLAB_H5DUMP).empty()) {
    std::string command = std::string(ATTNLAB_H5DUMP) + " '" + path + "' >/dev/null 2>&1";
    EXPECT_EQ(std::system(command.c_str()), 0) << "h5dump cannot read " << path;
  }
  return consistent;
}

TEST(RunLogKill, KilledAtRandomMomentsTheFileStaysReadableAndResumable) {
  int rounds = env_int("ATTNLAB_KILL_ROUNDS", 8);
  unsigned seed = static_cast<unsigned>(env_int("ATTNLAB_KILL_SEED", 0));
  if (seed == 0) seed = std::random_device{}();
  SCOPED_TRACE("ATTNLAB_KILL_SEED=" + std::to_string(seed));
  std::mt19937 random(seed);
  TempDir dir;
  std::string path = dir.file("run.h5");
  int64_t resume_step = 0;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    Writer writer(path, resume_step + 1, resume_step + 100000, round > 0);
    int64_t target = resume_step + 1 + std::uniform_int_distribution<int64_t>(0, 60)(random);
    ASSERT_GE(writer.read_until(target), target) << "the writer stopped early";
    auto pause = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 3000)(random));
    if (round % 2 == 1) {
      // Paused rather than killed: a reader opens the file while the writer holds it.
      std::this_thread::sleep_for(pause);
      writer.signal(SIGSTOP);
      check_run_file(path, target);
      writer.signal(SIGCONT);
    }
    std::this_thread::sleep_for(pause);
    writer.signal(SIGKILL);
    int status = writer.wait();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the writer ended before the kill, status " << status;
    int64_t reported = writer.read_until(INT64_MAX);  // reports still in the pipe
    resume_step = check_run_file(path, reported);
    if (HasFatalFailure()) return;
  }
  Writer last(path, resume_step + 1, resume_step + 20, true);
  EXPECT_EQ(last.read_until(INT64_MAX), resume_step + 20);
  int status = last.wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(check_run_file(path, resume_step + 20), resume_step + 20);
  io::RunContents run = io::read_run(path);
  EXPECT_EQ(run.status, io::RunStatus::completed);
  const std::vector<double>& steps = run.train.column("step");
  for (size_t r = 0; r < steps.size(); ++r) ASSERT_EQ(steps[r], double(r + 1)) << "row " << r;
}

}  // namespace
}  // namespace attnlab::test
