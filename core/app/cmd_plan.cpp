// `attnlab plan SWEEP [--profile P] [--rate GFLOPS] [--out DIR]`: what a sweep would cost on a
// cluster before it is submitted: per row and in total, the wall time and core-hours of its runs
// from counted FLOPs and a per-core rate measured here, and how one run scales over nodes under
// the ring-allreduce model of core/cluster/cost_model.h. Runs with a stop rule are counted at the
// length the sweep's completed runs suggest (core/cluster/run_length.h), and the plan also says
// what is left of the sweep.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "core/app/cli.h"
#include "core/app/step_flops.h"
#include "core/cluster/adaptive_seeds.h"
#include "core/cluster/cost_model.h"
#include "core/cluster/environment.h"
#include "core/cluster/profile.h"
#include "core/cluster/run_length.h"
#include "core/cluster/run_progress.h"
#include "core/config/config.h"
#include "core/config/sweep.h"
#include "core/dist/comm.h"
#include "core/io/run_log.h"
#include "core/model/param_count.h"
#include "core/train/run.h"

namespace attnlab::cli {
namespace {

namespace fs = std::filesystem;

// Training FLOPs per second per core of a finished run, from its /train series: counted FLOPs
// per target token x the tokens trained between logged steps / the wall time between them (so
// start-up, the final evaluation and, for a resumed run, the time between its launches do not
// count; cluster::trained_span), divided by the cores.
std::optional<double> measured_rate(const io::RunContents& run) {
  const auto flops = run.summary_numbers.find("train_flops");
  const auto tokens = run.summary_numbers.find("train_tokens");
  if (flops == run.summary_numbers.end() || tokens == run.summary_numbers.end() ||
      tokens->second <= 0 || run.train.rows < 3) {
    return std::nullopt;
  }
  const std::vector<double>& seen = run.train.column("tokens");
  const std::vector<double>& wall = run.train.column("wall_time");
  const cluster::TrainedSpan span = cluster::trained_span(wall, seen);
  if (span.seconds <= 0) return std::nullopt;
  const double cores = static_cast<double>(std::max<int64_t>(run.info.world_size, 1) *
                                           std::max<int64_t>(run.info.threads, 1));
  return flops->second / tokens->second * span.tokens / span.seconds / cores;
}

// The threads a calibration run uses: the sweep's threads per rank, as many as this machine has
// cores for.
int64_t calibration_threads(const ExperimentConfig& config) {
  return std::clamp<int64_t>(config.cluster.threads_per_rank, 1, cluster::available_cores());
}

// A short run of `config` on one rank, with the sweep's threads per rank (calibration_threads), in
// a temporary directory: its rate per core. Per core means over the threads, so a second thread
// that does not double the speed lowers it: the plan's compute time carries the threads'
// measured efficiency (tokens/s at 2 threads over 1 is about 1.7-1.9x on 2 cores, not 2x).
double calibrate(ExperimentConfig config, int64_t steps) {
  config.train.steps = steps;
  config.train.max_epochs = 0;
  // It measures speed only: no dev evaluation before its end, so nothing that counts evaluations
  // stays on (the stop rule, and the rate's reduce on plateau that config rules tie to them).
  config.eval.every = 0;
  config.train.stop = StopConfig{};
  config.train.lr.shrink_patience = 0;
  config.train.lr.shrink_after = 0;
  // A fixed budget's cool-down would not fit in so few steps, and its decodings follow training.
  config.train.lr.cooldown = 0;
  config.eval.decode_splits.clear();
  config.eval.final_bleu = false;
  config.eval.bleu_during_training = false;
  config.log.every = 1;
  config.log.diagnostics_every = 0;
  config.log.attention_probes.clear();
  config.cluster.ranks = 1;
  config.cluster.threads_per_rank = calibration_threads(config);
  config.train.checkpoint_every = 0;
  std::string dir = (fs::temp_directory_path() / "attnlab-plan-XXXXXX").string();
  CHECK(::mkdtemp(dir.data()) != nullptr) << "cannot create a temporary directory";
  RunRequest request;
  request.config = config;
  request.out_dir = dir + "/run";
  request.quiet = true;
  request.command_line = "attnlab plan (calibration)";
  std::unique_ptr<dist::Comm> comm = dist::make_comm();
  run_training(request, *comm);
  const io::RunContents run = io::read_run(request.out_dir + "/run.h5");
  fs::remove_all(dir);
  const std::optional<double> rate = measured_rate(run);
  CHECK(rate.has_value()) << "the calibration run measured no rate";
  return *rate;
}

std::string duration(double seconds) {
  char text[32];
  if (seconds < 90) {
    std::snprintf(text, sizeof(text), "%.0f s", seconds);
  } else if (seconds < 5400) {
    std::snprintf(text, sizeof(text), "%.1f min", seconds / 60);
  } else if (seconds < 3 * 86400) {
    std::snprintf(text, sizeof(text), "%.1f h", seconds / 3600);
  } else {
    std::snprintf(text, sizeof(text), "%.1f d", seconds / 86400);
  }
  return text;
}

struct RowPlan {
  std::string row;
  int64_t runs = 0;
  int64_t completed = 0;
  double step_flops = 0;        // of one run
  int64_t cap = 0;              // train.steps
  double expected_steps = 0.0;  // mean over the row's runs (core/cluster/run_length.h)
  double steps_left = 0.0;      // summed over its runs that are not complete
  double declared_left = 0.0;   // the same over the runs adaptive seeds have declared so far
  int64_t params = 0;
};

cluster::CostModel cost_model_of(const cluster::SlurmProfile& profile) {
  cluster::CostModel model;
  model.cores_per_node =
      profile.cores_per_node > 0 ? profile.cores_per_node : cluster::available_cores();
  model.bandwidth = profile.network_bandwidth * 1e9;
  model.latency = profile.network_latency_us * 1e-6;
  return model;
}

// Every run's progress (nothing yet when the sweep has not run here) and the training rate its
// finished runs measured, from one read of each run file.
struct SweepLogs {
  std::vector<cluster::RunProgress> progress;  // one per run of the sweep
  double measured_sum = 0.0;                   // of the finished runs' rates, FLOP/s per core
  int64_t measured_count = 0;
};

SweepLogs read_sweep_logs(const config::Sweep& sweep, const std::string& runs_dir) {
  SweepLogs logs;
  logs.progress.resize(sweep.runs.size());
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const fs::path log = fs::path(runs_dir) / sweep.name / sweep.runs[i].id / "run.h5";
    if (!fs::exists(log)) continue;
    try {
      const io::RunContents contents = io::read_run(log.string());
      logs.progress[i] = cluster::progress_of(contents);
      if (contents.status != io::RunStatus::completed) continue;
      if (const auto measured = measured_rate(contents)) {
        logs.measured_sum += *measured;
        ++logs.measured_count;
      }
    } catch (const Error&) {
      continue;  // a damaged log does not stop a plan
    }
  }
  return logs;
}

struct PerCoreRate {
  double flops = 0.0;  // per second and core
  std::string source;  // how it was found, for the output
};

// The per-core rate: given, or from this sweep's logs, or from a calibration run.
PerCoreRate per_core_rate(const po::variables_map& values, const SweepLogs& logs,
                          const config::Sweep& sweep) {
  PerCoreRate rate;
  if (values.count("rate")) {
    rate.flops = values["rate"].as<double>() * 1e9;
    if (!(rate.flops > 0)) throw UsageError("--rate must be > 0");
    rate.source = "given with --rate";
  } else if (logs.measured_count > 0) {
    rate.flops = logs.measured_sum / static_cast<double>(logs.measured_count);
    rate.source =
        "measured from " + std::to_string(logs.measured_count) + " finished run(s) of this sweep";
  } else {
    const int64_t steps = values["calibration-steps"].as<int64_t>();
    if (steps < 3) throw UsageError("--calibration-steps must be >= 3");
    const int64_t threads = calibration_threads(sweep.runs.front().config);
    const std::string where = threads == 1
                                  ? "one core"
                                  : "one rank of " + std::to_string(threads) +
                                        " threads (the rate is per core: over the threads)";
    std::cout << "calibrating: " << steps << " steps of " << sweep.runs.front().name << " on "
              << where << "..." << std::endl;
    rate.flops = calibrate(sweep.runs.front().config, steps);
    rate.source = "measured by a " + std::to_string(steps) + "-step run of " +
                  sweep.runs.front().name + " on " + where + " of this machine";
  }
  return rate;
}

// Adaptive seeds: the runs the seed rule has declared so far, from the completed runs' results
// (the rest may never run).
std::set<const config::SweepRun*> declared_runs(const config::Sweep& sweep,
                                                const std::vector<cluster::RunProgress>& progress) {
  std::set<const config::SweepRun*> declared;
  if (!sweep.adaptive) return declared;
  std::map<std::string, double> results;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    if (progress[i].final_dev_ppl) results[sweep.runs[i].id] = *progress[i].final_dev_ppl;
  }
  for (const config::SweepRun* run : cluster::plan_seeds(sweep, results).runs) {
    declared.insert(run);
  }
  return declared;
}

// Per row: FLOPs of one step (counted_step_flops: at half the longest allowed length, which the
// output states), runs, steps.
std::vector<RowPlan> row_plans(const config::Sweep& sweep,
                               const std::vector<cluster::RunProgress>& progress,
                               const std::vector<cluster::ExpectedLength>& lengths,
                               const std::set<const config::SweepRun*>& declared) {
  std::vector<RowPlan> rows;
  for (size_t i = 0; i < sweep.runs.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    const ExperimentConfig& c = run.config;
    auto found =
        std::find_if(rows.begin(), rows.end(), [&](const RowPlan& r) { return r.row == run.row; });
    if (found == rows.end()) {
      int64_t params = 0;
      for (const ComponentCount& count : parameter_counts(c.model)) params += count.params;
      RowPlan row;
      row.row = run.row;
      row.step_flops = counted_step_flops(c);
      row.cap = c.train.steps;
      row.params = params;
      rows.push_back(row);
      found = rows.end() - 1;
    }
    ++found->runs;
    found->expected_steps += lengths[i].steps;
    if (progress[i].state == cluster::RunState::kCompleted) {
      ++found->completed;
    } else {
      const double left = std::max(0.0, lengths[i].steps - static_cast<double>(progress[i].step));
      found->steps_left += left;
      if (declared.count(&run)) found->declared_left += left;
    }
  }
  for (RowPlan& row : rows) row.expected_steps /= static_cast<double>(row.runs);
  return rows;
}

void print_assumptions(const config::Sweep& sweep, size_t row_count, const PerCoreRate& rate,
                       const cluster::CostModel& model, const cluster::SlurmProfile& profile,
                       const std::vector<cluster::ExpectedLength>& lengths) {
  std::vector<size_t> all(sweep.runs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::printf("plan for sweep %s: %zu runs in %zu rows%s\n", sweep.name.c_str(), sweep.runs.size(),
              row_count,
              sweep.adaptive ? " (adaptive seeds: every row counted at its maximum)" : "");
  std::printf("rate: %.2f GFLOP/s per core, %s\n", rate.flops / 1e9, rate.source.c_str());
  std::printf("cluster: %ld cores per node, %.3g GB/s and %.3g us between nodes%s\n",
              static_cast<long>(model.cores_per_node), profile.network_bandwidth,
              profile.network_latency_us,
              profile.source.empty() ? " (defaults; set them in a profile)"
                                     : (" (" + profile.source + ")").c_str());
  std::printf(
      "steps: cap is train.steps; expected counts %s\n"
      "a step's FLOPs are counted at half the longest allowed length\n\n",
      cluster::describe_lengths(lengths, all).c_str());
}

// One line per row, then the sweep's totals: what it costs, and what is left of it.
void print_costs(const config::Sweep& sweep, const std::vector<RowPlan>& rows,
                 const cluster::CostModel& model, size_t declared_runs) {
  std::printf("%-24s %5s %5s %8s %9s %11s %10s %11s %11s %11s\n", "row", "runs", "done", "cap",
              "expected", "GFLOP/step", "params", "wall/run", "core-hours", "left");
  double total_core_seconds = 0.0, total_flops = 0.0, left_core_seconds = 0.0;
  double declared_core_seconds = 0.0;
  int64_t completed = 0;
  for (const RowPlan& row : rows) {
    const cluster::StepCost one = cluster::step_cost(model, row.step_flops, 4.0 * row.params, 1);
    const double cores = static_cast<double>(model.cores_per_node);
    const double wall = one.total() * row.expected_steps;
    const double core_seconds = wall * cores * static_cast<double>(row.runs);
    const double left_seconds = one.total() * row.steps_left * cores;
    total_core_seconds += core_seconds;
    left_core_seconds += left_seconds;
    declared_core_seconds += one.total() * row.declared_left * cores;
    total_flops += row.step_flops * row.expected_steps * static_cast<double>(row.runs);
    completed += row.completed;
    std::printf("%-24s %5ld %5ld %8ld %9.0f %11.3f %10ld %11s %11.3g %11.3g\n", row.row.c_str(),
                static_cast<long>(row.runs), static_cast<long>(row.completed),
                static_cast<long>(row.cap), row.expected_steps, row.step_flops / 1e9,
                static_cast<long>(row.params), duration(wall).c_str(), core_seconds / 3600,
                left_seconds / 3600);
  }
  const double node_cores = static_cast<double>(model.cores_per_node);
  std::printf(
      "\ntotal: %.3g training FLOPs, %.3g core-hours; %s on one node of %ld cores, runs "
      "one after another\n",
      total_flops, total_core_seconds / 3600, duration(total_core_seconds / node_cores).c_str(),
      static_cast<long>(model.cores_per_node));
  if (completed == 0) return;
  std::printf("left: %.3g core-hours (%ld of %zu runs complete); %s on one node of %ld cores\n",
              left_core_seconds / 3600, static_cast<long>(completed), sweep.runs.size(),
              duration(left_core_seconds / node_cores).c_str(),
              static_cast<long>(model.cores_per_node));
  if (sweep.adaptive) {
    std::printf(
        "      %.3g core-hours (%s on one node) of it in the %zu runs the seed rule has declared "
        "so far; the rest runs only for rows it leaves unresolved\n",
        declared_core_seconds / 3600, duration(declared_core_seconds / node_cores).c_str(),
        declared_runs);
  }
}

// Independent runs fill nodes with perfect efficiency; one run over many nodes pays the
// allreduce, which is what the table shows for the first row.
void print_node_scaling(const RowPlan& first, const cluster::CostModel& model) {
  std::printf(
      "\none run of %s spread over nodes (data parallel; runs of a sweep can instead "
      "take one node each at full efficiency):\n",
      first.row.c_str());
  std::printf("%6s %12s %12s %11s %14s\n", "nodes", "compute s", "allreduce s", "efficiency",
              "wall/run");
  for (int64_t nodes = 1; nodes <= 64; nodes *= 2) {
    const cluster::StepCost cost =
        cluster::step_cost(model, first.step_flops, 4.0 * first.params, nodes);
    std::printf("%6ld %12.4g %12.4g %10.1f%% %14s\n", static_cast<long>(nodes), cost.compute,
                cost.comm, 100.0 * cost.efficiency,
                duration(cost.total() * first.expected_steps).c_str());
  }
}

int run_plan(const std::vector<std::string>& args) {
  po::options_description options("plan options");
  options.add_options()("file", po::value<std::string>(), "sweep YAML")(
      "profile", po::value<std::string>(),
      "cluster profile: cores_per_node, network_bandwidth, network_latency_us")(
      "profile-set", po::value<std::vector<std::string>>()->composing(),
      "override one profile key, KEY=VALUE with VALUE in YAML (repeatable)")(
      "rate", po::value<double>(),
      "training GFLOP/s per core (default: measured from the sweep's finished runs under --out, "
      "else by a short calibration run here)")(
      "calibration-steps", po::value<int64_t>()->default_value(30), "steps of that run")(
      "out", po::value<std::string>(), "runs directory of the sweep (default: log.dir)");
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map values;
  if (!parse("plan", "SWEEP [--profile P] [--rate GFLOPS] [--out DIR]", args, options, positional,
             values)) {
    return kExitOk;
  }
  if (!values.count("file")) throw UsageError("plan needs a sweep file: attnlab plan SWEEP");
  const config::Sweep sweep = config::expand(values["file"].as<std::string>());
  const cluster::SlurmProfile profile = cluster::load_profile(
      values.count("profile") ? values["profile"].as<std::string>() : std::string(),
      strings(values, "profile-set"));
  cluster::CostModel model = cost_model_of(profile);
  const std::string runs_dir =
      values.count("out") ? values["out"].as<std::string>() : sweep.runs.front().config.log.dir;
  const SweepLogs logs = read_sweep_logs(sweep, runs_dir);
  const PerCoreRate rate = per_core_rate(values, logs, sweep);
  model.flops_per_core = rate.flops;
  const std::vector<cluster::ExpectedLength> lengths =
      cluster::expected_lengths(sweep, logs.progress);
  const std::set<const config::SweepRun*> declared = declared_runs(sweep, logs.progress);
  const std::vector<RowPlan> rows = row_plans(sweep, logs.progress, lengths, declared);
  print_assumptions(sweep, rows.size(), rate, model, profile, lengths);
  print_costs(sweep, rows, model, declared.size());
  print_node_scaling(rows.front(), model);
  return kExitOk;
}

const CommandRegistration kRegister{
    "plan", "estimate a sweep's wall time and core-hours on a cluster, and its scaling over nodes",
    &run_plan};

}  // namespace
}  // namespace attnlab::cli
