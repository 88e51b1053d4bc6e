// Slurm client commands and the parsing of what they print.
#include "core/cluster/slurm.h"

#include <regex>
#include <sstream>

#include "core/cluster/process.h"
#include "core/util/check.h"

namespace attnlab::cluster {
namespace {

constexpr double kQueryTimeout = 30.0;

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::string first_word(const std::string& text) {
  const std::string trimmed = trim(text);
  return trimmed.substr(0, trimmed.find(' '));
}

// "3", "4-6", "1,3,5-7" and "4-6%2" (a throttle) -> the task indices.
std::vector<int64_t> expand_tasks(const std::string& spec) {
  std::vector<int64_t> tasks;
  const std::string list = spec.substr(0, spec.find('%'));
  std::stringstream parts(list);
  std::string part;
  static const std::regex range("([0-9]+)(-([0-9]+))?(:([0-9]+))?");
  while (std::getline(parts, part, ',')) {
    std::smatch match;
    if (!std::regex_match(part, match, range)) continue;
    const int64_t first = std::stoll(match[1]);
    const int64_t last = match[3].matched ? std::stoll(match[3]) : first;
    const int64_t step = match[5].matched ? std::max<int64_t>(1, std::stoll(match[5])) : 1;
    for (int64_t task = first; task <= last && tasks.size() < 100000; task += step) {
      tasks.push_back(task);
    }
  }
  return tasks;
}

}  // namespace

bool slurm_installed() { return !find_program("sbatch").empty(); }

std::string submit(const std::string& script, const std::string& cwd) {
  const CommandResult result = run_command({"sbatch", "--parsable", script}, cwd, 120.0);
  if (result.exit_code != 0 || result.timed_out) {
    std::string message = trim(result.err);
    if (result.timed_out) message = "sbatch did not answer within 120 s";
    if (message.empty()) message = "exit code " + std::to_string(result.exit_code);
    throw Error("Slurm rejected the job array " + script + ": " + message);
  }
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id = trim(result.out).substr(0, trim(result.out).find(';'));
  CHECK(!id.empty() && id.find_first_not_of("0123456789") == std::string::npos)
      << "sbatch printed no job id: '" << result.out << "'";
  return id;
}

void parse_task_lines(const std::string& job_id, const std::string& text,
                      std::map<int64_t, std::string>& states) {
  std::stringstream lines(text);
  std::string line;
  const std::string prefix = job_id + "_";
  while (std::getline(lines, line)) {
    const size_t bar = line.find('|');
    if (bar == std::string::npos) continue;
    const std::string id = trim(line.substr(0, bar));
    if (id.rfind(prefix, 0) != 0) continue;  // the job's own line or a step ("12_3.batch")
    std::string tasks = id.substr(prefix.size());
    if (tasks.find('.') != std::string::npos) continue;
    if (!tasks.empty() && tasks.front() == '[') tasks = tasks.substr(1, tasks.size() - 2);
    const std::string state = first_word(line.substr(bar + 1));
    for (int64_t task : expand_tasks(tasks)) states[task] = state;
  }
}

void parse_scontrol_lines(const std::string& job_id, const std::string& text,
                          std::map<int64_t, std::string>& states) {
  std::stringstream lines(text);
  std::string line;
  static const std::regex array_job(R"((^|\s)ArrayJobId=([0-9]+))");
  static const std::regex array_task(R"((^|\s)ArrayTaskId=(\S+))");
  static const std::regex job_state(R"((^|\s)JobState=(\S+))");
  while (std::getline(lines, line)) {
    std::smatch job;
    std::smatch task;
    std::smatch state;
    if (!std::regex_search(line, job, array_job) || job[2] != job_id) continue;
    if (!std::regex_search(line, task, array_task) || !std::regex_search(line, state, job_state)) {
      continue;
    }
    for (int64_t index : expand_tasks(task[2])) states[index] = state[2];
  }
}

std::map<int64_t, std::string> array_task_states(const std::string& job_id) {
  std::map<int64_t, std::string> states;
  // Oldest source first, so that fresher ones overwrite it.
  CommandResult sacct = run_command({"sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State"},
                                    "", kQueryTimeout);
  if (sacct.exit_code != 0 || trim(sacct.out).empty()) {
    sacct = run_command({"sacct", "-c", "-n", "-P", "-j", job_id, "-o", "JobID,State"}, "",
                        kQueryTimeout);
  }
  if (sacct.exit_code == 0) parse_task_lines(job_id, sacct.out, states);
  const CommandResult scontrol =
      run_command({"scontrol", "show", "job", job_id, "-o"}, "", kQueryTimeout);
  if (scontrol.exit_code == 0) parse_scontrol_lines(job_id, scontrol.out, states);
  const CommandResult squeue =
      run_command({"squeue", "-h", "-r", "-j", job_id, "-o", "%i|%T"}, "", kQueryTimeout);
  if (squeue.exit_code == 0) parse_task_lines(job_id, squeue.out, states);
  return states;
}

std::string cancel_jobs(const std::vector<std::string>& job_ids) {
  if (job_ids.empty()) return "";
  std::vector<std::string> command = {"scancel"};
  command.insert(command.end(), job_ids.begin(), job_ids.end());
  const CommandResult result = run_command(command, "", kQueryTimeout);
  if (result.exit_code == 0) return "";
  return trim(result.err).empty() ? "scancel exited " + std::to_string(result.exit_code)
                                  : trim(result.err);
}

}  // namespace attnlab::cluster
