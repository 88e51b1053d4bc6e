// Sweep expansion: counts and order, precedence, names, id stability, errors, and the manifest.
#include "core/config/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/config/config.h"

namespace attnlab {
namespace {

const std::string kData = std::string(ATTNLAB_CONFIG_TEST_DIR) + "/data/";
const std::string kExperiments = std::string(ATTNLAB_SOURCE_DIR) + "/experiments/";

std::string error_of(const std::string& path, const std::vector<std::string>& sets = {}) {
  try {
    config::expand(path, sets);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "no error";
}

TEST(SweepHash, FnvMatchesPublishedVectors) {
  EXPECT_EQ(config::fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(config::fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(config::fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(SweepHash, DefaultConfigHashesTheEmptyDifference) {
  ExperimentConfig defaults;
  EXPECT_EQ(config::run_id(defaults), "cbf29ce48422");
  defaults.name = "other";
  defaults.log.dir = "elsewhere";
  defaults.cluster.ranks = 4;
  EXPECT_EQ(config::run_id(defaults), "cbf29ce48422");  // where and under what name: not the id
  defaults.model.heads = 4;
  char expected[17];
  std::snprintf(expected, sizeof(expected), "%016llx",
                static_cast<unsigned long long>(config::fnv1a64("model.heads=4\n")));
  EXPECT_EQ(config::run_id(defaults), std::string(expected, 12));
}

// Ids of committed runs stay their ids: a key added with a default that keeps the old behaviour
// is left out of the id, so expanding the sweep today gives the directories committed under
// docs/results/table3-plateau/runs (read from its manifest: "- id: X" then "name: Y").
TEST(SweepHash, CommittedRunsKeepTheirIds) {
  std::ifstream manifest(std::string(ATTNLAB_SOURCE_DIR) +
                         "/docs/results/table3-plateau/runs/manifest.yaml");
  ASSERT_TRUE(manifest.good());
  std::map<std::string, std::string> committed;  // name -> id
  std::string line, id;
  while (std::getline(manifest, line)) {
    if (line.rfind("  - id: ", 0) == 0) id = line.substr(8);
    if (line.rfind("    name: ", 0) == 0) committed[line.substr(10)] = id;
  }
  ASSERT_EQ(committed.at("base.seed1"), "bfa1f731ef87");
  const config::Sweep sweep = config::expand(kExperiments + "small/table3-plateau.yaml");
  size_t compared = 0;
  for (const config::SweepRun& run : sweep.runs) {
    const auto it = committed.find(run.name);
    if (it == committed.end()) continue;  // a seed the adaptive rule did not need
    EXPECT_EQ(run.id, it->second) << run.name;
    ++compared;
  }
  EXPECT_EQ(compared, committed.size());
}

TEST(SweepExpand, GridTimesSeedsInOdometerOrder) {
  config::Sweep sweep = config::expand(kData + "grid_sweep.yaml");
  EXPECT_EQ(sweep.name, "grid");
  const std::vector<std::string> names = {
      "norm-post.positions-sinusoidal.seed1", "norm-post.positions-sinusoidal.seed2",
      "norm-post.positions-learned.seed1",    "norm-post.positions-learned.seed2",
      "norm-pre.positions-sinusoidal.seed1",  "norm-pre.positions-sinusoidal.seed2",
      "norm-pre.positions-learned.seed1",     "norm-pre.positions-learned.seed2"};
  ASSERT_EQ(sweep.runs.size(), names.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < names.size(); ++i) {
    const config::SweepRun& run = sweep.runs[i];
    EXPECT_EQ(run.name, names[i]);
    EXPECT_EQ(run.config.name, names[i]);
    EXPECT_EQ(run.seed, i % 2 + 1);
    EXPECT_EQ(run.config.model.norm, i < 4 ? NormPlacement::kPost : NormPlacement::kPre);
    EXPECT_EQ(run.config.model.positions,
              i % 4 < 2 ? PositionKind::kSinusoidal : PositionKind::kLearned);
    EXPECT_EQ(run.config.model.d_k, 8);  // 16 / 2, resolved per run
    ASSERT_EQ(run.overrides.size(), 2u);
    EXPECT_EQ(run.overrides[0].first, "model.norm");
    EXPECT_EQ(run.overrides[1].first, "model.positions");
    ids.insert(run.id);
  }
  EXPECT_EQ(ids.size(), names.size());
}

TEST(SweepExpand, RowsTimesGridWithNestedSetsAndPaperValues) {
  config::Sweep sweep = config::expand(kData + "rows_grid_sweep.yaml");
  EXPECT_EQ(sweep.name, "mixed");
  ASSERT_EQ(sweep.runs.size(), 4u);
  EXPECT_EQ(sweep.runs[0].name, "small-h-1.label_smoothing-0.0.seed1");
  EXPECT_EQ(sweep.runs[3].name, "wide.label_smoothing-0.1.seed1");
  EXPECT_EQ(sweep.runs[0].group, "S");
  EXPECT_EQ(sweep.runs[0].config.model.heads, 1);
  EXPECT_EQ(sweep.runs[0].config.model.d_k, 16);  // d_k = 0 resolves after the row's heads
  EXPECT_EQ(*sweep.runs[0].paper.ppl, 5.5);
  EXPECT_FALSE(sweep.runs[0].paper.bleu.has_value());
  EXPECT_EQ(sweep.runs[2].config.model.d_model, 32);
  EXPECT_EQ(sweep.runs[2].config.model.d_k, 16);
  EXPECT_EQ(sweep.runs[3].config.train.label_smoothing, 0.1);
  EXPECT_EQ(sweep.runs[2].overrides,
            (std::vector<std::pair<std::string, std::string>>{
                {"model.d_model", "32"}, {"model.d_ff", "64"}, {"train.label_smoothing", "0.0"}}));
}

TEST(SweepExpand, SetWinsOverRowsAndIdsAreStable) {
  config::Sweep first = config::expand(kData + "rows_grid_sweep.yaml");
  config::Sweep again = config::expand(kData + "rows_grid_sweep.yaml", {"log.dir=/tmp/x"});
  for (size_t i = 0; i < first.runs.size(); ++i) EXPECT_EQ(first.runs[i].id, again.runs[i].id);
  config::Sweep shorter = config::expand(kData + "grid_sweep.yaml", {"model.d_ff=48"});
  for (const config::SweepRun& run : shorter.runs) EXPECT_EQ(run.config.model.d_ff, 48);
  config::Sweep set_over_row = config::expand(kData + "rows_grid_sweep.yaml", {"model.heads=2"});
  EXPECT_EQ(set_over_row.runs[0].config.model.heads, 2);  // the row said 1
  EXPECT_EQ(set_over_row.runs[0].overrides[0],
            (std::pair<std::string, std::string>{"model.heads", "2"}));  // the final value
  // Pinning a grid key with --set collapses its runs into duplicates, which is an error.
  EXPECT_NE(error_of(kData + "grid_sweep.yaml", {"model.norm=pre"}).find("a sweep must not repeat"),
            std::string::npos);
}

TEST(SweepExpand, PaperTable3HasEveryRow) {
  config::Sweep sweep = config::expand(kExperiments + "paper/table3.yaml");
  ASSERT_EQ(sweep.runs.size(), 20u);  // base, 4 A, 2 B, 7 C, 4 D, 1 E, big
  std::map<std::string, int> groups;
  for (const config::SweepRun& run : sweep.runs) ++groups[run.group];
  EXPECT_EQ(groups,
            (std::map<std::string, int>{
                {"base", 1}, {"A", 4}, {"B", 2}, {"C", 7}, {"D", 4}, {"E", 1}, {"big", 1}}));
  const config::SweepRun& base = config::find_run(sweep, "base.seed1");
  EXPECT_EQ(base.config.model.d_model, 512);
  EXPECT_EQ(*base.paper.params, 65.0);
  const config::SweepRun& big = config::find_run(sweep, "big.seed1");
  EXPECT_EQ(big.config.model.d_k, 64);
  EXPECT_EQ(big.config.model.heads, 16);
  EXPECT_EQ(big.config.model.dropout, 0.3);
  EXPECT_EQ(big.config.train.steps, 300000);
  const config::SweepRun& b16 = config::find_run(sweep, "B-d_k-16.seed1");
  EXPECT_EQ(b16.config.model.d_k, 16);
  EXPECT_EQ(b16.config.model.d_v, 64);
  EXPECT_EQ(&config::find_run(sweep, b16.id), &b16);
  // The base row changes nothing, so its id is the hash of the base recipe's differences from
  // the struct defaults; pinned so that a change to hashing or to base.yaml is noticed.
  EXPECT_EQ(base.id, config::run_id(config::load(kExperiments + "base.yaml")));
}

TEST(SweepErrors, DuplicateRunsTyposAndMissingSection) {
  EXPECT_EQ(error_of(kData + "duplicate_runs.yaml"),
            kData + "duplicate_runs.yaml:6:7: runs 'one.seed1' and 'two.seed1' have the same " +
                "configuration (id " +
                config::run_id(config::load(kData + "grid_sweep_base.yaml", {"model.heads=4"})) +
                "); a sweep must not repeat a run");
  EXPECT_EQ(error_of(kData + "typo_row.yaml"),
            kData + "typo_row.yaml:6:25: unknown key 'model.haeds' (did you mean 'model.heads'?)");
  EXPECT_EQ(error_of(kData + "typo_grid.yaml"),
            kData + "typo_grid.yaml:4:10: unknown key 'train.label_smothing' in sweep.grid " +
                "(did you mean 'train.label_smoothing'?)");
  EXPECT_EQ(error_of(kData + "typo_sweep_key.yaml"),
            kData + "typo_sweep_key.yaml:4:3: unknown key 'sweep.seed' (did you mean " +
                "'sweep.seeds'?)");
  EXPECT_EQ(error_of(kData + "grid_sweep_base.yaml"),
            kData + "grid_sweep_base.yaml: no sweep: section (rows, grid or seeds); use -c for " +
                "a single run");
  EXPECT_EQ(error_of(kData + "grid_sweep.yaml", {"model.heads=3"}),
            "--set model.heads=3: model.d_model (16) must be divisible by model.heads (3) when " +
                std::string("model.d_k is 0 (meaning d_model / heads); set model.d_k explicitly ") +
                "or change d_model or heads [in run norm-post.positions-sinusoidal.seed1]");
}

TEST(SweepErrors, NamesThatLeaveTheOutputDirectoryAndControlCharactersInLabels) {
  EXPECT_EQ(error_of(kData + "sweep_name_parent.yaml"),
            kData + "sweep_name_parent.yaml:4:9: sweep.name (the sweep's directory under --out, " +
                "after replacing characters other than letters, digits, . and _ with -): '..' " +
                "would name the parent of the output directory, not a directory inside it");
  EXPECT_EQ(error_of(kData + "row_label_cr.yaml"),
            kData + "row_label_cr.yaml:5:26: sweep.rows[].group: control character (byte 13) in " +
                "a label; use printable text");
}

// A row with versus is compared with that row at the same grid values; the manifest says so, and
// rows without it (the reference row included) are compared with base.
TEST(SweepExpand, VersusNamesTheReferenceRowAtTheSameGridValues) {
  config::Sweep sweep = config::expand(kData + "rows_versus_sweep.yaml");
  ASSERT_EQ(sweep.runs.size(), 8u);
  EXPECT_EQ(sweep.runs[6].name, "wide-h-1.label_smoothing-0.0.seed1");
  EXPECT_EQ(sweep.runs[6].versus, "wide.label_smoothing-0.0");
  EXPECT_EQ(sweep.runs[7].versus, "wide.label_smoothing-0.1");
  EXPECT_EQ(sweep.runs[4].row, "wide.label_smoothing-0.0");  // the key versus refers to
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(sweep.runs[i].versus, "") << sweep.runs[i].name;
  const std::string text = config::manifest_yaml(sweep);
  EXPECT_NE(text.find("    name: wide-h-1.label_smoothing-0.1.seed1\n    group: A-wide\n"
                      "    seed: 1\n    overrides: {model.d_model: 32, model.heads: 1, "
                      "train.label_smoothing: 0.1}\n    versus: wide.label_smoothing-0.1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("versus: base"), std::string::npos);
}

TEST(SweepErrors, VersusMustNameARowComparedWithBaseAndFixedSeeds) {
  EXPECT_EQ(error_of(kData + "versus_unknown.yaml"),
            kData + "versus_unknown.yaml:6:7: sweep.rows[].versus: no row is named 'bse'");
  EXPECT_EQ(error_of(kData + "versus_chain.yaml"),
            kData + "versus_chain.yaml:7:7: sweep.rows[].versus: row 'wide' is itself compared " +
                "with 'base'; compare with a row that is compared with base");
  EXPECT_EQ(error_of(kData + "versus_adaptive.yaml"),
            kData + "versus_adaptive.yaml:7:7: sweep.rows[].versus: adaptive seeds (sweep.seeds " +
                "as {min, max}) compare every row with the base row; give a list of seeds");
}

TEST(SweepErrors, ARunNameTooLongForAFileNameIsRefusedBeforeAnyRun) {
  const std::string row(300, 'r');
  EXPECT_EQ(error_of(kData + "row_name_too_long.yaml"),
            kData + "row_name_too_long.yaml:6:7: run name of row '" + row +
                "' (306 bytes: the row's name, its grid values and the seed): longer than 128 " +
                "bytes, the limit of a name (files named after it, with their suffixes, stay " +
                "within the 255 bytes a file name may have); shorten the row's name");
}

TEST(SweepManifest, ListsEveryRunAndIsWrittenAtomically) {
  config::Sweep sweep = config::expand(kData + "rows_grid_sweep.yaml");
  const std::string text = config::manifest_yaml(sweep);
  const std::string first_run = "  - id: " + sweep.runs[0].id +
                                "\n    name: small-h-1.label_smoothing-0.0.seed1\n"
                                "    group: S\n    seed: 1\n"
                                "    overrides: {model.heads: 1, train.label_smoothing: 0.0}\n"
                                "    paper: {ppl: 5.5, params: 1.0}\n";
  EXPECT_NE(text.find("sweep: mixed\nsource: " + kData + "rows_grid_sweep.yaml\nsets: []\nruns:\n" +
                      first_run),
            std::string::npos)
      << text;
  const std::string dir = testing::TempDir() + "attnlab_sweep_manifest";
  std::filesystem::remove_all(dir);
  const std::string path = config::write_manifest(sweep, dir);
  EXPECT_EQ(path, dir + "/mixed/manifest.yaml");
  std::ifstream in(path);
  std::stringstream written;
  written << in.rdbuf();
  EXPECT_EQ(written.str(), text);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

// sweep.test is declared in the sweep file, before any run, and the manifest carries it to the
// report (analysis/report.py); the default is left out, so older manifests stay as they were.
TEST(SweepManifest, TheVerdictTestIsDeclaredInTheSweepFile) {
  const config::Sweep budget = config::expand(kExperiments + "small/table3-budget.yaml");
  EXPECT_EQ(budget.test, config::VerdictTest::kWelch);
  EXPECT_NE(config::manifest_yaml(budget).find("\nsets: []\ntest: welch\nruns:\n"),
            std::string::npos);
  const config::Sweep plain = config::expand(kData + "rows_grid_sweep.yaml");
  EXPECT_EQ(plain.test, config::VerdictTest::kWelchPermutation);
  EXPECT_EQ(config::manifest_yaml(plain).find("test:"), std::string::npos);
  EXPECT_EQ(error_of(kData + "verdict_test_typo.yaml"),
            kData + "verdict_test_typo.yaml:5:9: sweep.test: expected welch+permutation | welch, " +
                "got welsh");
  EXPECT_EQ(error_of(kData + "seed_rule_typo.yaml"),
            kData + "seed_rule_typo.yaml:4:34: sweep.seeds.until: expected sequential | " +
                "resolved, got resolve");
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace {

// Every YAML file under experiments/ loads (or expands, for sweeps) with the sizes the files state.
TEST(Experiments, EveryFileLoadsAndSweepsHaveTheirSizes) {
  const std::map<std::string, size_t> sweep_sizes = {{"paper/table3.yaml", 20},
                                                     {"ablations/heads.yaml", 15},
                                                     {"ablations/norm.yaml", 12},
                                                     {"ablations/positions.yaml", 6},
                                                     {"ablations/attention_scale.yaml", 16},
                                                     {"ablations/label_smoothing.yaml", 9},
                                                     {"small/study.yaml", 8},
                                                     {"small/study-long.yaml", 16},
                                                     {"small/table3.yaml", 60},
                                                     {"small/pilot-lr.yaml", 24},
                                                     {"small/pilot-budget.yaml", 8},
                                                     {"small/pilot-budget-long.yaml", 2},
                                                     {"small/pilot-bf16.yaml", 4},
                                                     {"small/table3-plateau.yaml", 80},
                                                     {"small/table3-budget.yaml", 72},
                                                     {"small/budget-check.yaml", 3},
                                                     {"small/table3-budget-bf16.yaml", 9},
                                                     {"studies/heads.yaml", 2},
                                                     {"studies/positions_length.yaml", 2},
                                                     {"studies/sqrt_dk.yaml", 10},
                                                     {"studies/warmup_norm.yaml", 8}};
  size_t files = 0, sweeps = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kExperiments)) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string relative = std::filesystem::relative(entry.path(), kExperiments).string();
    SCOPED_TRACE(relative);
    ++files;
    if (config::has_sweep_section(entry.path().string())) {
      ++sweeps;
      ASSERT_TRUE(sweep_sizes.count(relative)) << "a sweep without a stated size";
      EXPECT_EQ(config::expand(entry.path().string()).runs.size(), sweep_sizes.at(relative));
    } else {
      EXPECT_NO_THROW(config::load(entry.path().string()));
    }
  }
  EXPECT_EQ(sweeps, sweep_sizes.size());
  EXPECT_GE(files, 11u);  // base, small, 3 tasks, table3 and 5 ablations
}

// small-base is Table 3's base row at CPU scale: training experiments/small/base.yaml is the
// computation of the table3-plateau sweep's base.seed1 (same seed, same everything but the name),
// so its page and the sweep's base row describe one model.
TEST(Experiments, SmallBaseIsTheBaseRowOfTheTable3PlateauSweep) {
  ExperimentConfig small_base = config::load(kExperiments + "small/base.yaml");
  const config::Sweep sweep = config::expand(kExperiments + "small/table3-plateau.yaml");
  const auto row = std::find_if(sweep.runs.begin(), sweep.runs.end(),
                                [](const auto& run) { return run.row == "base" && run.seed == 1; });
  ASSERT_NE(row, sweep.runs.end());
  EXPECT_EQ(small_base.seed, row->config.seed);
  small_base.name = row->config.name;
  // Where it runs is not what it computes: run ids leave cluster.* out, and so does this.
  small_base.cluster = row->config.cluster;
  EXPECT_EQ(config::dump_yaml(small_base, false), config::dump_yaml(row->config, false));
}

TEST(Experiments, SmokeTasksAreSmallAndFitTheirVocabulary) {
  for (const char* task : {"copy", "reverse", "sort"}) {
    ExperimentConfig c = config::load(kExperiments + "tasks/" + task + ".yaml");
    EXPECT_EQ(to_string(c.data.task), task);
    EXPECT_EQ(c.model.d_model, 64);
    EXPECT_EQ(c.model.heads, 4);
    EXPECT_EQ(c.model.d_k, 16);
    EXPECT_LE(c.model.d_ff, 256);
    EXPECT_EQ(c.model.vocab_size, c.data.synthetic.symbols + 3);
    EXPECT_EQ(c.train.label_smoothing, 0.0);
  }
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace {

// The CPU-scale Table 3 is the paper's Table 3 with every width divided by 8 and depth by 2: row
// for row, the same heads, dropout, smoothing, positions, step ratio to the base and paper values.
// The budget check trains rows of the second edition's table at 1.5x its budget and cool-down,
// nothing else changed; block A at d_model 128 keeps h * d_k = d_model and is compared with h = 8
// at that width.
// The bf16 replica's runs are twins of the table's runs of the same row and seed: precision is
// the one difference, so a verdict that moves between them moves with precision.
TEST(Experiments, TheBf16ReplicaIsTheTableInBf16) {
  const config::Sweep table = config::expand(kExperiments + "small/table3-budget.yaml");
  const config::Sweep replica = config::expand(kExperiments + "small/table3-budget-bf16.yaml");
  EXPECT_EQ(replica.test, table.test);
  for (const config::SweepRun& run : replica.runs) {
    SCOPED_TRACE(run.name);
    EXPECT_EQ(run.config.train.precision, blas::Precision::kBf16);
    ExperimentConfig in_fp32 = run.config;
    in_fp32.train.precision = blas::Precision::kFp32;
    EXPECT_EQ(config::run_id(in_fp32), config::find_run(table, run.name).id);
  }
}

TEST(Experiments, BudgetCheckIsTheTableAtOneAndAHalfTimesItsBudget) {
  const config::Sweep table = config::expand(kExperiments + "small/table3-budget.yaml");
  const config::Sweep check = config::expand(kExperiments + "small/budget-check.yaml");
  for (const config::SweepRun& run : check.runs) {
    SCOPED_TRACE(run.name);
    const config::SweepRun& same = config::find_run(table, run.name);
    ExperimentConfig longer = same.config;
    longer.train.steps = same.config.train.steps * 3 / 2;
    longer.train.lr.cooldown = same.config.train.lr.cooldown * 3 / 2;
    EXPECT_EQ(config::run_id(longer), run.id);
    EXPECT_EQ(run.config.train.steps, 18000);
  }
  size_t wide_rows = 0;
  for (const config::SweepRun& run : table.runs) {
    const auto& model = run.config.model;
    if (run.group != "A128") continue;
    ++wide_rows;
    EXPECT_EQ(model.d_model, 128) << run.name;
    EXPECT_EQ(model.heads * model.d_k, 128) << run.name;
    EXPECT_EQ(model.d_v, model.d_k) << run.name;
    EXPECT_EQ(run.versus, "C-d_model-128") << run.name;
    const config::SweepRun& reference = config::find_run(table, run.versus + ".seed1");
    EXPECT_EQ(reference.config.model.heads * reference.config.model.d_k, 128);
    EXPECT_EQ(reference.config.model.d_ff, model.d_ff);
  }
  EXPECT_EQ(wide_rows, 12u);  // h = 1, 4, 16, 32 x 3 seeds
}

TEST(Experiments, SmallTable3IsThePaperTableScaledConsistently) {
  const config::Sweep paper = config::expand(kExperiments + "paper/table3.yaml");
  const config::Sweep small = config::expand(kExperiments + "small/table3.yaml");
  ASSERT_EQ(small.runs.size(), 3 * paper.runs.size());  // three seeds of every row
  const auto& paper_base = paper.runs.front().config;
  const auto& small_base = small.runs.front().config;
  for (size_t row = 0; row < paper.runs.size(); ++row) {
    const config::SweepRun& p = paper.runs[row];
    for (size_t seed = 0; seed < 3; ++seed) {
      const config::SweepRun& s = small.runs[3 * row + seed];
      SCOPED_TRACE(p.name + " vs " + s.name);
      EXPECT_EQ(s.group, p.group);
      const ModelConfig& pm = p.config.model;
      const ModelConfig& sm = s.config.model;
      EXPECT_EQ(pm.d_model, 8 * sm.d_model);
      EXPECT_EQ(pm.d_ff, 8 * sm.d_ff);
      EXPECT_EQ(pm.d_k, 8 * sm.d_k);
      EXPECT_EQ(pm.d_v, 8 * sm.d_v);
      EXPECT_EQ(pm.heads, sm.heads);
      EXPECT_EQ(pm.encoder_layers, 2 * sm.encoder_layers);
      EXPECT_EQ(pm.decoder_layers, 2 * sm.decoder_layers);
      EXPECT_EQ(pm.dropout, sm.dropout);
      EXPECT_EQ(pm.positions, sm.positions);
      EXPECT_EQ(p.config.train.label_smoothing, s.config.train.label_smoothing);
      EXPECT_EQ(p.config.train.steps * small_base.train.steps,
                s.config.train.steps * paper_base.train.steps);
      EXPECT_EQ(p.paper.ppl, s.paper.ppl);
      EXPECT_EQ(p.paper.bleu, s.paper.bleu);
      EXPECT_EQ(s.seed, seed + 1);
    }
  }
}

}  // namespace
}  // namespace attnlab
