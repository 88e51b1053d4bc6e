// Talking to Slurm through its commands: submit a job array, ask the state of its tasks, cancel.
// Clients find the cluster as usual (SLURM_CONF or /etc/slurm); every call is bounded by a timeout.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnlab::cluster {

// True when sbatch is on PATH.
bool slurm_installed();

// `sbatch --parsable SCRIPT` from `cwd` (the job's working directory); returns the job id. A
// rejected job (impossible resources, unknown partition or account) throws Error carrying
// sbatch's own message.
std::string submit(const std::string& script, const std::string& cwd);

// State of each array task of `job_id` (task index -> PENDING, RUNNING, COMPLETED, ...), from
// squeue (queued and running), scontrol (recently ended) and sacct (older, with a database or
// the jobcomp file); a task Slurm has forgotten is absent.
std::map<int64_t, std::string> array_task_states(const std::string& job_id);

// Parsers of the commands' outputs (exposed for tests).
// `squeue -h -r -o %i|%T` and `sacct -n -P -o JobID,State` lines: "12_3|RUNNING",
// "12_[4-6%2]|PENDING", "12_1|CANCELLED by 0".
void parse_task_lines(const std::string& job_id, const std::string& text,
                      std::map<int64_t, std::string>& states);
// `scontrol show job -o` lines: "... ArrayJobId=12 ArrayTaskId=3 ... JobState=RUNNING ...".
void parse_scontrol_lines(const std::string& job_id, const std::string& text,
                          std::map<int64_t, std::string>& states);

// scancel of every job id; returns scancel's message on failure, "" on success.
std::string cancel_jobs(const std::vector<std::string>& job_ids);

}  // namespace attnlab::cluster
