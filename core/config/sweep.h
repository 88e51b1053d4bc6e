// Sweeps: an experiment plus a `sweep:` section (rows, grid, seeds) expanded deterministically
// into runs with stable ids, and the manifest that lists them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/config/experiment.h"

namespace attnlab::config {

// The paper's numbers for a row (Table 3), when the sweep file gives them.
struct PaperValues {
  std::optional<double> ppl;
  std::optional<double> bleu;
  std::optional<double> params;  // millions
};

// When a row of adaptive seeds stops (core/cluster/adaptive_seeds.h). `sequential`: its interval
// at the confidence left after spending alpha evenly over the rounds excludes 0, or is narrower
// than +-effect; the final test, at the same spent alpha, keeps the sweep's alpha. `resolved`:
// the interval at the nominal confidence; a test at every round at full alpha, which inflates
// false positives (kept to reproduce sweeps that were run with it).
enum class SeedRule { sequential, resolved };

// sweep.seeds as {min, max, until: sequential|resolved, effect, confidence}: every row runs seeds
// 1..min, then a row gets one more seed until the rule stops it, up to max.
struct AdaptiveSeeds {
  int64_t min = 2;
  int64_t max = 5;
  double effect = 0.02;      // the smallest difference worth resolving, relative to the base mean
  double confidence = 0.95;  // of the interval on the difference of means
  SeedRule until = SeedRule::sequential;
};

const EnumNames<SeedRule>& seed_rule_names();

// The p a row's verdict uses (sweep.test), declared in the sweep file before any run so that it
// is not chosen after seeing the results; analysis/report.py reads it from the manifest.
// welch+permutation: the larger of Welch's p and the exact permutation test's (the default);
// welch: Welch's alone, for seeds the permutation test cannot resolve (3 against 3 cannot go
// below p = 0.1).
enum class VerdictTest { kWelchPermutation, kWelch };
const EnumNames<VerdictTest>& verdict_test_names();

struct SweepRun {
  std::string id;     // 12 hex digits of run_id(config)
  std::string row;    // the table row: the name without ".seed<n>"
  std::string name;   // readable and unique in the sweep: "<row>.<grid key-value...>.seed<n>"
  std::string group;  // the row's group label ("A".."E", "big"), "" for grid-only sweeps
  uint64_t seed = 0;
  // The keys the row and grid set, with the run's final value as YAML text (table order).
  std::vector<std::pair<std::string, std::string>> overrides;
  PaperValues paper;
  // The key of the row this run's row is compared with (sweep.rows[].versus, at the same grid
  // values), "" for the base row: block A at another width is compared with h = 8 at that width.
  std::string versus;
  ExperimentConfig config;  // resolved and checked; config.name is the run name
};

struct Sweep {
  std::string name;               // sweep.name, else the experiment's name
  std::string source;             // the sweep file
  std::vector<std::string> sets;  // --set applied to every run (they win over rows and grid)
  std::vector<SweepRun> runs;     // rows (file order) x grid (last key fastest) x seeds
  std::optional<AdaptiveSeeds> adaptive;  // seeds given as {min, max, ...}; runs then hold 1..max
  // Adaptive sweeps: each row's seed decision ("3 seeds: resolved, ..."), written to the manifest.
  std::vector<std::pair<std::string, std::string>> seed_decisions;
  // `attnlab sweep --allow-dirty`: the runs were launched from a build with uncommitted changes
  // on purpose (core/cluster/provenance.h); written to the manifest only when set.
  bool allow_dirty = false;
  VerdictTest test = VerdictTest::kWelchPermutation;  // written to the manifest when not default
};

// The most runs one sweep may declare.
inline constexpr size_t kMaxSweepRuns = 100000;

// Expands the sweep file at `path`. Precedence per run: experiment (with its base chain) < row set
// < grid values < seed < `sets`. Throws ConfigError on unknown keys, bad values, duplicate runs or
// names, and on a file without a sweep: section.
Sweep expand(const std::string& path, const std::vector<std::string>& sets = {});

// A sweep given on the command line (`attnlab sweep -c FILE --grid KEY=V1,V2 --seeds 1,2
// --name N`): the same as a YAML sweep section with that grid, those seeds and that name.
struct CommandLineSweep {
  std::string name;
  std::vector<std::pair<std::string, std::vector<std::string>>> grid;  // in the order given
  std::vector<std::string> seeds;
};
// Expands `spec` over the experiment file `experiment` (which must not hold a sweep: section):
// the runs, names and ids are those of the equivalent YAML sweep.
Sweep expand_command_line(const std::string& experiment, const CommandLineSweep& spec,
                          const std::vector<std::string>& sets = {});

// FNV-1a, 64 bit.
uint64_t fnv1a64(const std::string& text);
// 12 hex digits of FNV-1a over the "key=value" lines of every option whose value differs from
// the built-in default, leaving out where a run goes and what it is called (name, log.dir,
// cluster.*): the same experiment gets the same id wherever and under whatever name it runs, and
// adding an option with a default keeps existing ids.
std::string run_id(const ExperimentConfig& config);

// The run whose id or name is `id_or_name`; throws ConfigError listing a few names otherwise.
const SweepRun& find_run(const Sweep& sweep, const std::string& id_or_name);

// runs/<sweep>/manifest.yaml text: sweep, source, sets, the verdict test (when not the default),
// then per run id, name, group, seed,
// overrides, the row it is compared with (when not base) and paper values.
std::string manifest_yaml(const Sweep& sweep);
// Writes manifest_yaml under <runs_dir>/<sweep.name>/ and returns the file's path.
std::string write_manifest(const Sweep& sweep, const std::string& runs_dir);

}  // namespace attnlab::config
