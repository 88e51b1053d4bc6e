// Local sweep execution: slots by cores, children in their own process groups, signal forwarding,
// a summary line with an ETA from the runs' own progress.
#include "core/cluster/local_launcher.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "core/util/check.h"
#include "core/util/clock.h"

namespace attnlab::cluster {
namespace {
namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_stop_signals = 0;

void on_stop_signal(int /*signal*/) { g_stop_signals = g_stop_signals + 1; }

// SIGINT and SIGTERM count into g_stop_signals while this object lives.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signals = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

struct Running {
  size_t index = 0;
  Clock::time_point started;
  bool probed = false;  // its progress has been read once (start_fraction is set)
};

}  // namespace

std::string format_duration(double seconds) {
  const auto total = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buffer[32];
  if (total >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm", static_cast<long long>(total / 3600),
                  static_cast<long long>(total % 3600 / 60));
  } else if (total >= 60) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(total / 60),
                  static_cast<long long>(total % 60));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%llds", static_cast<long long>(total));
  }
  return buffer;
}

std::optional<double> remaining_seconds(const std::vector<RunWork>& runs, double elapsed_seconds) {
  double done = 0.0;
  double left = 0.0;
  for (const RunWork& run : runs) {
    done += run.work * std::max(0.0, run.fraction - run.start_fraction);
    left += run.work * std::max(0.0, 1.0 - run.fraction);
  }
  if (done <= 0.0 || left <= 0.0) return std::nullopt;
  return elapsed_seconds * left / done;
}

std::optional<double> progress_fraction(const RunProgress& progress, double expected_steps) {
  const double steps = expected_steps > 0 ? expected_steps : static_cast<double>(progress.total);
  if (!progress.exists || steps <= 0) return std::nullopt;
  return std::min(1.0, static_cast<double>(progress.step) / steps);
}

std::vector<std::string> local_train_command(const std::string& binary, const std::string& config,
                                             const std::string& run_dir, const std::string& run_id,
                                             const std::string& sweep_id, int64_t ranks,
                                             bool oversubscribe) {
  std::vector<std::string> command;
  if (ranks > 1) {
    command = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
    if (geteuid() == 0) command.emplace_back("--allow-run-as-root");
    if (oversubscribe) command.emplace_back("--oversubscribe");
  }
  for (const std::string& word :
       {binary, std::string("train"), std::string("-c"), config, std::string("--out"), run_dir,
        std::string("--run-id"), run_id, std::string("--sweep-id"), sweep_id}) {
    command.push_back(word);
  }
  return command;
}

LocalResult run_local(const std::vector<LocalRun>& runs, const LocalOptions& options,
                      std::ostream& out) {
  StopSignals stop_signals;
  LocalResult result;
  std::map<pid_t, Running> running;
  size_t next = 0;
  int64_t used_cores = 0;
  int forwarded = 0;  // stop signals passed on so far
  const Clock::time_point start = Clock::now();
  Clock::time_point last_probe = start - std::chrono::hours(1);
  Clock::time_point last_summary = start;
  bool summary_shown = false;
  std::vector<RunWork> work(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) work[i].work = runs[i].work;

  auto summary = [&]() {
    const size_t done = result.completed.size();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    std::string text = std::to_string(done) + "/" + std::to_string(runs.size()) + " done, " +
                       std::to_string(running.size()) + " running, " +
                       std::to_string(result.failed.size()) + " failed";
    if (!result.preempted.empty())
      text += ", " + std::to_string(result.preempted.size()) + " stopped";
    text += ", " + format_duration(elapsed) + " elapsed";
    // After a stop request the queued runs will not start, so there is nothing to estimate.
    const std::optional<double> left = remaining_seconds(work, elapsed);
    if (left && g_stop_signals == 0) text += ", ETA " + format_duration(*left);
    return text;
  };
  auto show_summary = [&]() {
    if (options.live) {
      out << "\r\033[K" << summary() << std::flush;
      summary_shown = true;
    }
  };
  auto event = [&](const std::string& text, bool with_summary) {
    if (options.live) {
      out << "\r\033[K" << text << "\n";
      show_summary();
    } else {
      out << "[" << local_time_of_day() << "] " << text << "\n";
      if (with_summary) out << "[" << local_time_of_day() << "]   " << summary() << "\n";
      out << std::flush;
    }
  };

  // After a stop request nothing new starts, so the loop ends once the running runs are done.
  while ((g_stop_signals == 0 && next < runs.size()) || !running.empty()) {
    // Start what fits: a run always starts when nothing runs, so one larger than the machine
    // still runs (alone).
    while (g_stop_signals == 0 && next < runs.size() &&
           (running.empty() || used_cores + runs[next].cores <= options.cores) &&
           (options.max_parallel <= 0 ||
            static_cast<int64_t>(running.size()) < options.max_parallel)) {
      const LocalRun& run = runs[next];
      std::error_code ignored;
      fs::remove(fs::path(run.dir) / kLastExitFile, ignored);
      const pid_t pid = spawn_logged(run.command, run.env, run.dir + "/train.log");
      running[pid] = Running{next, Clock::now(), false};
      used_cores += run.cores;
      ++next;
      event("started " + run.name + " (" + run.id + ")", false);
    }
    // Pass each new SIGINT/SIGTERM on: the first as USR1 (checkpoint and stop), later ones as TERM.
    if (g_stop_signals > forwarded) {
      const int signal = forwarded == 0 ? SIGUSR1 : SIGTERM;
      forwarded = g_stop_signals;
      result.interrupted = true;
      // USR1 goes to the launcher process (mpirun passes it to every rank); TERM to its whole
      // group.
      for (const auto& [pid, run] : running) kill(signal == SIGUSR1 ? pid : -pid, signal);
      event(std::string("stopping: ") +
                (signal == SIGUSR1 ? "asked every run to checkpoint and stop"
                                   : "terminating every run") +
                ", no new runs start",
            false);
    }
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t done = waitpid(it->first, &status, WNOHANG);
      if (done != it->first) {
        ++it;
        continue;
      }
      const size_t index = it->second.index;
      const LocalRun& run = runs[index];
      const double seconds =
          std::chrono::duration<double>(Clock::now() - it->second.started).count();
      used_cores -= run.cores;
      it = running.erase(it);
      int code = exit_code_of(status);
      // A stop request can kill a run before its trainer has installed the handler that turns
      // USR1 into a checkpoint (USR1's default action), and a second request terminates runs on
      // purpose: both are stops that a rerun resumes, not failures.
      if (forwarded > 0 && (code == 128 + SIGUSR1 || code == 128 + SIGTERM)) code = kExitStopped;
      std::ofstream(fs::path(run.dir) / kLastExitFile) << code << "\n";
      // A completed run's work is all done; a failed run's neither counts as done nor is left.
      if (code == 0) work[index].fraction = 1.0;
      if (code != 0 && code != kExitStopped) work[index].work = 0.0;
      if (code == 0) {
        result.completed.push_back(run.name);
        event("completed " + run.name + " in " + format_duration(seconds), true);
      } else if (code == kExitStopped) {
        result.preempted.push_back(run.name);
        event("stopped " + run.name + " (rerun the sweep to resume it)", true);
      } else {
        result.failed.push_back(run.name + " (exit " + std::to_string(code) + ", see " + run.dir +
                                "/train.log)");
        event("FAILED " + run.name + " with exit code " + std::to_string(code) + ": see " +
                  run.dir + "/train.log",
              true);
      }
    }
    const Clock::time_point now = Clock::now();
    if (options.progress && now - last_probe >= std::chrono::seconds(2)) {
      last_probe = now;
      for (auto& [pid, run] : running) {
        const RunProgress progress = options.progress(runs[run.index].dir);
        RunWork& share = work[run.index];
        if (const auto fraction = progress_fraction(progress, runs[run.index].steps)) {
          share.fraction = *fraction;
        }
        // The first reading is what a resumed run had done before this launch.
        if (!run.probed) share.start_fraction = share.fraction;
        run.probed = true;
      }
    }
    if (options.live && now - last_summary >= std::chrono::seconds(1)) {
      last_summary = now;
      show_summary();
    }
    if (!running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (summary_shown) out << "\r\033[K" << summary() << "\n" << std::flush;
  return result;
}

}  // namespace attnlab::cluster
