// `attnlab sweep FILE`: expands a sweep into runs (stable ids, readable names), writes
// runs/<sweep>/manifest.yaml and each run's resolved config, and launches the runs that are not
// complete: locally (mpirun or the binary, as many at once as the cores fit) or as one Slurm job
// array. --dry-run prints the runs and the plan and launches nothing.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>

#include "core/app/cli.h"
#include "core/app/step_flops.h"
#include "core/cluster/adaptive_seeds.h"
#include "core/cluster/environment.h"
#include "core/cluster/local_launcher.h"
#include "core/cluster/plan.h"
#include "core/cluster/profile.h"
#include "core/cluster/provenance.h"
#include "core/cluster/records.h"
#include "core/cluster/run_length.h"
#include "core/cluster/run_progress.h"
#include "core/cluster/sbatch.h"
#include "core/cluster/slurm.h"
#include "core/config/config.h"
#include "core/config/sweep.h"
#include "core/train/run.h"
#include "core/util/build_info.h"
#include "core/util/clock.h"
#include "core/util/dir_lock.h"
#include "core/util/files.h"

namespace attnlab::cli {
namespace {
namespace fs = std::filesystem;

void print_runs(const config::Sweep& sweep) {
  size_t width = 4, group_width = 5;
  for (const config::SweepRun& run : sweep.runs) {
    width = std::max(width, run.name.size());
    group_width = std::max(group_width, run.group.size());
  }
  std::cout << "sweep " << sweep.name << ": " << sweep.runs.size() << " runs from " << sweep.source
            << "\n";
  std::cout << std::left << std::setw(14) << "id" << std::setw(static_cast<int>(width) + 2)
            << "name" << std::setw(static_cast<int>(group_width) + 2) << "group"
            << "overrides\n";
  for (const config::SweepRun& run : sweep.runs) {
    std::string overrides;
    for (const auto& [key, value] : run.overrides) {
      if (!overrides.empty()) overrides += ' ';
      overrides.append(key).append("=").append(value);
    }
    std::cout << std::setw(14) << run.id << std::setw(static_cast<int>(width) + 2) << run.name
              << std::setw(static_cast<int>(group_width) + 2) << run.group
              << (overrides.empty() ? "-" : overrides) << "\n";
  }
}

// The newest Slurm state of every run the sweep directory has submitted ({} without Slurm).
std::map<std::string, std::string> slurm_states(const std::string& sweep_dir) {
  std::map<std::string, std::string> states;
  const std::vector<cluster::Submission> submissions = cluster::read_submissions(sweep_dir);
  if (submissions.empty() || !cluster::slurm_installed()) return states;
  for (const cluster::Submission& submission : submissions) {
    const auto tasks = cluster::array_task_states(submission.job_id);
    for (size_t task = 0; task < submission.run_ids.size(); ++task) {
      const auto found = tasks.find(static_cast<int64_t>(task));
      states[submission.run_ids[task]] = found == tasks.end() ? "" : found->second;
    }
  }
  return states;
}

// --profile, else the experiment's cluster.profile (relative to here or to the sweep file), else
// the built-in defaults; then the --profile-set overrides.
cluster::SlurmProfile find_profile(const po::variables_map& values, const config::Sweep& sweep) {
  std::string path = values.count("profile") ? values["profile"].as<std::string>()
                                             : sweep.runs.front().config.cluster.profile;
  if (!path.empty() && !values.count("profile") && !fs::exists(path)) {
    const fs::path beside = fs::path(sweep.source).parent_path() / path;
    if (fs::exists(beside)) path = beside.string();
  }
  return cluster::load_profile(path, strings(values, "profile-set"));
}

// The position of `run` in sweep.runs.
size_t index_in(const config::Sweep& sweep, const config::SweepRun* run) {
  return static_cast<size_t>(run - sweep.runs.data());
}

// A run's cost for the launcher's ETA and launch order: the training FLOPs of the `steps` updates
// it is expected to make (core/cluster/run_length.h).
double training_work(const ExperimentConfig& c, double steps) {
  return steps * counted_step_flops(c);
}

// The launch order of core/cluster/run_length.h's launch_order: seed by seed, runs stopped
// part-way first, then the most expected work first.
void launch_seed_by_seed(const config::Sweep& sweep, std::vector<const config::SweepRun*>& runs,
                         const std::vector<cluster::RunProgress>& progress,
                         const std::vector<cluster::ExpectedLength>& lengths) {
  std::map<uint64_t, size_t> seed_rank;
  for (const config::SweepRun& run : sweep.runs) seed_rank.emplace(run.seed, seed_rank.size());
  std::vector<cluster::LaunchCandidate> candidates;
  candidates.reserve(runs.size());
  for (const config::SweepRun* run : runs) {
    const size_t index = index_in(sweep, run);
    candidates.push_back({seed_rank.at(run->seed), progress.at(index).step > 0,
                          training_work(run->config, lengths.at(index).steps)});
  }
  std::vector<const config::SweepRun*> ordered;
  ordered.reserve(runs.size());
  for (const size_t i : cluster::launch_order(candidates)) ordered.push_back(runs[i]);
  runs = std::move(ordered);
}

int launch_local(const config::Sweep& sweep, const std::vector<const config::SweepRun*>& runs,
                 const std::vector<cluster::ExpectedLength>& lengths, const fs::path& sweep_dir,
                 const po::variables_map& values) {
  const int64_t cores = cluster::available_cores();
  const bool oversubscribe = values.count("oversubscribe") != 0;
  const std::string binary = cluster::self_executable();
  std::vector<cluster::LocalRun> local;
  for (const config::SweepRun* run : runs) {
    const auto& cluster_config = run->config.cluster;
    if (cluster_config.ranks > cores && !oversubscribe) {
      throw UsageError("run " + run->name +
                       " asks for cluster.ranks=" + std::to_string(cluster_config.ranks) +
                       " MPI ranks but this machine has " + std::to_string(cores) +
                       " cores; lower it (--set cluster.ranks=" + std::to_string(cores) +
                       ") or pass --oversubscribe");
    }
    const fs::path dir = sweep_dir / run->id;
    cluster::LocalRun entry;
    entry.id = run->id;
    entry.name = run->name;
    entry.dir = dir.string();
    entry.command =
        cluster::local_train_command(binary, (dir / "config.yaml").string(), dir.string(), run->id,
                                     sweep.name, cluster_config.ranks, oversubscribe);
    entry.env = cluster::run_environment(cluster_config.threads_per_rank);
    entry.cores = cluster_config.ranks * cluster_config.threads_per_rank;
    const cluster::ExpectedLength& length = lengths.at(index_in(sweep, run));
    entry.steps = length.steps;
    entry.work = training_work(run->config, length.steps);
    local.push_back(std::move(entry));
  }
  cluster::LocalOptions options;
  options.cores = cores;
  options.max_parallel = values["max-parallel"].as<int64_t>();
  options.live = isatty(STDOUT_FILENO) != 0;
  options.progress = cluster::read_run_progress;
  std::cout << "running " << local.size() << " runs here on " << cores << " cores"
            << (options.max_parallel > 0
                    ? ", at most " + std::to_string(options.max_parallel) + " at once"
                    : std::string())
            << "; each run's output goes to " << sweep_dir.string() << "/<id>/train.log\n";
  std::vector<size_t> indices;
  indices.reserve(runs.size());
  for (const config::SweepRun* run : runs) indices.push_back(index_in(sweep, run));
  std::cout << "the ETA expects " << cluster::describe_lengths(lengths, indices) << "\n"
            << std::flush;
  const cluster::LocalResult result = cluster::run_local(local, options, std::cout);
  if (!result.failed.empty()) {
    std::cerr << "attnlab sweep: " << result.failed.size() << " run(s) failed:";
    for (const std::string& failure : result.failed) std::cerr << "\n  " << failure;
    std::cerr << "\n";
    return kExitFailure;
  }
  if (!result.preempted.empty() || result.interrupted) {
    std::cerr << "attnlab sweep: stopped; " << result.preempted.size()
              << " run(s) checkpointed. Rerun the same command to resume.\n";
    return kExitStopped;  // as a stopped `attnlab train`: rerunning resumes
  }
  return kExitOk;
}

int launch_slurm(const config::Sweep& sweep, const std::vector<const config::SweepRun*>& runs,
                 const fs::path& sweep_dir, const po::variables_map& values, bool dry_run) {
  cluster::ArrayJob job;
  job.sweep = sweep.name;
  job.sweep_dir = sweep_dir.string();
  job.binary = cluster::self_executable();
  job.env_script = cluster::find_env_script();
  job.profile = find_profile(values, sweep);
  job.ranks = runs.front()->config.cluster.ranks;
  job.threads_per_rank = runs.front()->config.cluster.threads_per_rank;
  for (const config::SweepRun* run : runs) {
    if (run->config.cluster.ranks != job.ranks ||
        run->config.cluster.threads_per_rank != job.threads_per_rank) {
      throw UsageError(
          "one job array needs the same cluster.ranks and cluster.threads_per_rank "
          "for every run, but " +
          runs.front()->name + " has " + std::to_string(job.ranks) + " x " +
          std::to_string(job.threads_per_rank) + " and " + run->name + " has " +
          std::to_string(run->config.cluster.ranks) + " x " +
          std::to_string(run->config.cluster.threads_per_rank));
    }
    job.run_ids.push_back(run->id);
  }
  const std::string script_text = cluster::render_array_script(job);
  const std::vector<cluster::Submission> before = cluster::read_submissions(sweep_dir.string());
  fs::create_directories(sweep_dir / "slurm");
  const std::string script_name = "slurm/array-" + std::to_string(before.size() + 1) + ".sbatch";
  write_file_atomically((sweep_dir / script_name).string(), script_text);
  std::cout << "wrote " << (sweep_dir / script_name).string() << " (" << runs.size()
            << " array tasks"
            << (job.profile.source.empty() ? "" : ", profile " + job.profile.source) << ")\n";
  if (dry_run) return kExitOk;
  if (!cluster::slurm_installed()) throw Error("Slurm is not installed here (no sbatch on PATH)");
  cluster::Submission submission;
  try {
    submission.job_id = cluster::submit(script_name, sweep_dir.string());
  } catch (const Error& error) {
    throw Error(
        std::string(error.what()) + " [each task asks for " +
        std::to_string(job.profile.ranks > 0 ? job.profile.ranks : job.ranks) + " ranks x " +
        std::to_string(job.profile.cpus_per_task > 0 ? job.profile.cpus_per_task
                                                     : job.threads_per_rank) +
        " cores" + (job.profile.mem.empty() ? "" : ", mem " + job.profile.mem) +
        (job.profile.partition.empty() ? "" : ", partition " + job.profile.partition) + "]");
  }
  submission.script = script_name;
  submission.submitted = utc_now();
  submission.run_ids = job.run_ids;
  cluster::append_submission(sweep_dir.string(), submission);
  std::cout << "submitted job array " << submission.job_id << " (" << runs.size()
            << " tasks); watch it with: attnlab status " << sweep_dir.string() << "\n";
  return kExitOk;
}

// <sweep>/names/<run name> -> ../<id>: the runs under their readable names (row, grid values,
// seed) beside the directories named by id.
void link_readable_names(const config::Sweep& sweep, const fs::path& sweep_dir) {
  const fs::path names = sweep_dir / "names";
  fs::create_directories(names);
  for (const config::SweepRun& run : sweep.runs) {
    if (run.name.empty() || run.name == "." || run.name == "..") continue;
    const fs::path link = names / run.name;
    const fs::path target = fs::path("..") / run.id;
    std::error_code error;
    if (fs::is_symlink(link, error)) {
      if (fs::read_symlink(link, error) == target) continue;
      fs::remove(link, error);
    }
    fs::create_directory_symlink(target, link, error);
    if (error) throw Error("cannot link " + link.string() + ": " + error.message());
  }
}

// Every data file that the runs to launch read must exist before any of them starts (else each
// would start and fail on its own): the first missing file is named with its key and the run that
// reads it. --dry-run, which launches nothing, says the same as a warning.
void check_data_of(const std::vector<const config::SweepRun*>& runs, const std::string& here,
                   bool dry_run) {
  for (const config::SweepRun* run : runs) {
    ExperimentConfig resolved = run->config;
    config::make_paths_absolute(resolved, here);
    try {
      config::check_data_files_exist(resolved);
    } catch (const ConfigError& error) {
      if (dry_run) {
        std::cerr << "attnlab sweep: warning: " << error.what() << "; run " << run->name
                  << " reads it: the sweep would refuse to launch (`attnlab data` makes a "
                     "corpus)\n";
        return;
      }
      throw ConfigError(std::string(error.what()) + "; run " + run->name +
                        " reads it, and none of the " + std::to_string(runs.size()) +
                        " run(s) to launch was started (`attnlab data` makes a corpus)");
    }
  }
}

// Writes the manifest and the runs' configs, then launches the runs that are not complete.
int launch_sweep(const config::Sweep& sweep, const std::string& runs_dir,
                 const po::variables_map& values) {
  const bool dry_run = values.count("dry-run") != 0;
  const std::string launcher = values["launcher"].as<std::string>();
  print_runs(sweep);
  std::cout << "wrote " << config::write_manifest(sweep, runs_dir) << "\n";

  const fs::path sweep_dir = fs::absolute(fs::path(runs_dir) / sweep.name).lexically_normal();
  // Each run's config names its files absolute, so it runs the same from its own directory on
  // any node (the run id was computed before, from the paths as written).
  const std::string here = fs::current_path().string();
  // Each run's file read once: it decides both whether its config is written and whether it runs.
  std::vector<cluster::RunProgress> progress;
  for (const config::SweepRun& run : sweep.runs) {
    progress.push_back(cluster::read_run_progress((sweep_dir / run.id).string()));
  }
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    fs::create_directories(sweep_dir / run.id);
    // A completed run's directory stays as it ran: its config.yaml is what trained it (run.h5
    // holds the same), not this binary's rendering with keys added since.
    if (progress[i].state == cluster::RunState::kCompleted) continue;
    ExperimentConfig resolved = run.config;
    config::make_paths_absolute(resolved, here);
    write_file_atomically((sweep_dir / run.id / "config.yaml").string(),
                          config::dump_yaml(resolved));
  }
  link_readable_names(sweep, sweep_dir);

  const std::map<std::string, std::string> in_slurm = slurm_states(sweep_dir.string());
  const bool retry_failed = values.count("retry-failed") != 0;
  std::vector<const config::SweepRun*> to_launch;
  std::map<cluster::Decision, std::vector<std::string>> skipped;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    const auto found = in_slurm.find(run.id);
    const cluster::Decision decision =
        cluster::decide(progress[i], found == in_slurm.end() ? "" : found->second, retry_failed);
    if (decision == cluster::Decision::kLaunch) {
      to_launch.push_back(&run);
    } else {
      skipped[decision].push_back(run.name);
    }
  }
  for (const auto& [decision, names] : skipped) {
    std::cout << "skipping " << names.size() << " run(s), " << cluster::to_string(decision) << ":";
    for (const std::string& name : names) std::cout << " " << name;
    std::cout << "\n";
  }
  if (to_launch.empty()) {
    std::cout << "nothing to launch\n";
    const auto failed = skipped.find(cluster::Decision::kSkipFailed);
    return failed == skipped.end() ? kExitOk : kExitFailure;
  }
  check_data_of(to_launch, here, dry_run);
  const std::vector<cluster::ExpectedLength> lengths = cluster::expected_lengths(sweep, progress);
  launch_seed_by_seed(sweep, to_launch, progress, lengths);
  std::cout << (dry_run ? "would launch " : "launching ") << to_launch.size() << " run(s) with the "
            << launcher << " launcher\n";
  if (launcher == "slurm") return launch_slurm(sweep, to_launch, sweep_dir, values, dry_run);
  if (dry_run) {
    for (const config::SweepRun* run : to_launch) {
      const fs::path dir = sweep_dir / run->id;
      std::string line;
      for (const std::string& word : cluster::local_train_command(
               cluster::self_executable(), (dir / "config.yaml").string(), dir.string(), run->id,
               sweep.name, run->config.cluster.ranks, values.count("oversubscribe") != 0)) {
        line += (line.empty() ? "" : " ") + word;
      }
      std::cout << "  " << line << "\n";
    }
    return kExitOk;
  }
  return launch_local(sweep, to_launch, lengths, sweep_dir, values);
}

// The final dev perplexity of every completed run of the sweep (adaptive seeds decide on it).
std::map<std::string, double> completed_results(const config::Sweep& sweep,
                                                const fs::path& sweep_dir) {
  std::map<std::string, double> results;
  for (const config::SweepRun& run : sweep.runs) {
    const cluster::RunProgress progress = cluster::read_run_progress((sweep_dir / run.id).string());
    if (progress.final_dev_ppl) results[run.id] = *progress.final_dev_ppl;
  }
  return results;
}

void print_seed_decisions(const cluster::SeedPlan& plan) {
  std::cout << "adaptive seeds (dev PPL against the base row):\n";
  for (const auto& [row, decision] : plan.decisions) {
    std::cout << "  " << row << ": " << decision << "\n";
  }
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t comma = text.find(',');; comma = text.find(',', start)) {
    parts.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

// --grid KEY=V1,V2 ..., --seeds S1,S2, --name N as the sweep section they stand for.
config::CommandLineSweep command_line_sweep(const po::variables_map& values) {
  config::CommandLineSweep spec;
  if (values.count("name")) spec.name = values["name"].as<std::string>();
  for (const std::string& axis : strings(values, "grid")) {
    const size_t equals = axis.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == axis.size()) {
      throw UsageError("--grid " + axis + ": expected KEY=V1,V2,...");
    }
    spec.grid.emplace_back(axis.substr(0, equals), split_commas(axis.substr(equals + 1)));
    for (const std::string& value : spec.grid.back().second) {
      if (value.empty()) throw UsageError("--grid " + axis + ": an empty value");
    }
  }
  if (values.count("seeds")) {
    spec.seeds = split_commas(values["seeds"].as<std::string>());
    for (const std::string& seed : spec.seeds) {
      if (seed.empty())
        throw UsageError("--seeds: an empty seed in '" + values["seeds"].as<std::string>() + "'");
    }
  }
  if (spec.grid.empty() && spec.seeds.empty()) {
    throw UsageError("-c FILE sweeps need --grid KEY=V1,V2 or --seeds S1,S2");
  }
  return spec;
}

int run_sweep(const std::vector<std::string>& args) {
  po::options_description options("sweep options");
  options.add_options()("file", po::value<std::string>(), "sweep YAML (an experiment + sweep:)")(
      "config,c", po::value<std::string>(),
      "an experiment file to sweep from the command line (with --grid, --seeds, --name)")(
      "grid", po::value<std::vector<std::string>>()->composing(),
      "KEY=V1,V2,...: every value of KEY (repeatable; as sweep.grid, the last key changes "
      "fastest)")("seeds", po::value<std::string>(), "S1,S2,...: the seeds (as sweep.seeds)")(
      "name", po::value<std::string>(), "the sweep's name (as sweep.name)")(
      "set", po::value<std::vector<std::string>>()->composing(),
      "override one key in every run (wins over rows and grid; repeatable)")(
      "launcher", po::value<std::string>()->default_value("local"),
      "local (this machine, mpirun when a run has several ranks) or slurm (one job array)")(
      "profile", po::value<std::string>(),
      "cluster profile YAML for slurm (default: the experiment's cluster.profile)")(
      "profile-set", po::value<std::vector<std::string>>()->composing(),
      "override one profile key, KEY=VALUE with VALUE in YAML (repeatable; e.g. "
      "--profile-set time=04:00:00)")(
      "dry-run",
      "expand, print the runs and the plan, write the manifest (and the sbatch "
      "script for slurm); launch nothing")("retry-failed",
                                           "launch failed runs again (they are skipped otherwise)")(
      "max-parallel", po::value<int64_t>()->default_value(0),
      "local: at most N runs at once (0: as many as ranks x threads fit the cores)")(
      "oversubscribe", "local: let mpirun start more ranks than there are cores")(
      "allow-dirty",
      "launch runs even though this attnlab was built from a working tree with uncommitted "
      "changes (refused otherwise; recorded in the manifest)")(
      "out", po::value<std::string>(),
      "runs directory; the sweep goes to <out>/<sweep>/ (default: log.dir)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  if (!parse("sweep",
             "FILE | -c FILE [--grid KEY=V1,V2 ...] [--seeds 1,2] [--name N]  "
             "[--launcher local|slurm] [--profile FILE] [--dry-run] [--retry-failed] "
             "[--max-parallel N] [--oversubscribe] [--allow-dirty] [--set KEY=VALUE ...] "
             "[--out DIR]",
             args, options, positional, values)) {
    return kExitOk;
  }
  const bool command_line = values.count("config") != 0;
  if (values.count("file") == command_line) {
    throw UsageError(command_line ? "give either a sweep FILE or -c FILE with --grid/--seeds, "
                                    "not both"
                                  : "missing the sweep FILE (or -c FILE --grid KEY=V1,V2 ...)");
  }
  if (!command_line && (values.count("grid") || values.count("seeds") || values.count("name"))) {
    throw UsageError(
        "--grid, --seeds and --name sweep an experiment given with -c FILE; a sweep "
        "FILE has them in its sweep: section");
  }
  const std::string launcher = values["launcher"].as<std::string>();
  if (launcher != "local" && launcher != "slurm") {
    throw UsageError("--launcher must be local or slurm, got '" + launcher + "'");
  }
  if (values["max-parallel"].as<int64_t>() < 0) throw UsageError("--max-parallel must be >= 0");
  const bool dry_run = values.count("dry-run") != 0;
  config::Sweep sweep =
      command_line ? config::expand_command_line(values["config"].as<std::string>(),
                                                 command_line_sweep(values), strings(values, "set"))
                   : config::expand(values["file"].as<std::string>(), strings(values, "set"));
  sweep.allow_dirty = values.count("allow-dirty") != 0;
  // A dry run launches nothing, so only a launch needs a build that a commit holds.
  const std::string refusal = cluster::dirty_build_refusal(git_commit(), sweep.allow_dirty);
  if (!dry_run && !refusal.empty()) {
    std::cerr << "attnlab sweep: " << refusal << "\n";
    return kExitUsage;
  }
  const std::string runs_dir =
      values.count("out") ? values["out"].as<std::string>() : sweep.runs.front().config.log.dir;
  const fs::path sweep_dir = fs::absolute(fs::path(runs_dir) / sweep.name).lexically_normal();
  // One `attnlab sweep` per sweep directory, before its manifest is written: two at once would
  // launch the same runs twice into one train.log each, and both fail on the runs the other holds.
  fs::create_directories(sweep_dir);
  const DirectoryLock sweep_lock(
      sweep_dir.string(),
      "one `attnlab sweep` per sweep at a time; it launches and resumes every run, so wait for it "
      "(attnlab status " +
          sweep_dir.string() + " shows its progress), or stop it first");
  if (!sweep.adaptive) return launch_sweep(sweep, runs_dir, values);
  // Adaptive seeds: declare the runs the results so far call for, run them, and plan again
  // until the plan stops growing (locally), or leave the next round to the next `sweep`.
  size_t declared = 0;
  for (;;) {
    const cluster::SeedPlan plan = cluster::plan_seeds(sweep, completed_results(sweep, sweep_dir));
    config::Sweep round = sweep;
    round.runs.clear();
    for (const config::SweepRun* run : plan.runs) round.runs.push_back(*run);
    round.seed_decisions = plan.decisions;
    if (declared > 0 && round.runs.size() == declared) {
      config::write_manifest(round, runs_dir);  // the final decisions
      print_seed_decisions(plan);
      return kExitOk;
    }
    declared = round.runs.size();
    print_seed_decisions(plan);
    const int code = launch_sweep(round, runs_dir, values);
    if (code != kExitOk || dry_run) return code;
    if (values["launcher"].as<std::string>() == "slurm") {
      if (!plan.settled) {
        std::cout << "adaptive seeds: once this job array has finished, run the same `attnlab "
                     "sweep` again to add the seeds its results call for\n";
      }
      return code;
    }
  }
}

const CommandRegistration kRegister{
    "sweep", "expand a sweep (rows x grid x seeds) and launch its runs locally or on Slurm",
    &run_sweep};

}  // namespace
}  // namespace attnlab::cli
