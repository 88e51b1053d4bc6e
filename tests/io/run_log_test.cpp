// core/io/run_log: a run file's attributes, config, series, diagnostics, attention and resume.
#include "core/io/run_log.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "core/io/h5.h"
#include "io/expect_error.h"
#include "io/temp_dir.h"

namespace attnlab::io {
namespace {

using test::expect_error;
using test::TempDir;

// "2024-05-01T12:00:00Z"
bool is_utc_timestamp(const std::string& text) {
  const std::string pattern = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != pattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (pattern[i] == 'd' ? !digit : text[i] != pattern[i]) return false;
  }
  return true;
}

RunInfo sample_info() {
  RunInfo info;
  info.run_id = "heads-h1-s2";
  info.sweep_id = "table3";
  info.world_size = 2;
  info.threads = 3;
  info.seed = 2;
  info.config_yaml = "model:\n  heads: 1\n";
  info.command_line = "attnlab train -c heads.yaml";
  return info;
}

const ConfigEntries kConfig = {{"model.heads", "8"},   {"model.dropout", "0.1"},
                               {"model.norm", "post"}, {"train.optimizer.eps", "1.0e-9"},
                               {"data.dev", ""},       {"model.tie_embeddings", "true"},
                               {"train.steps", "-3"},  {"cluster.slurm.time", "04:00:00"},
                               {"eval.value", "nan"}};

// /train rows of a run that logs steps 1..n: loss = 10/step, lr = step * 1e-4.
void append_train_steps(RunLog& log, int first, int last) {
  for (int step = first; step <= last; ++step) {
    log.append_train({{"step", step}, {"loss", 10.0 / step}, {"lr", step * 1e-4}});
  }
}

TEST(RunLog, CreateWritesRootAttributesConfigAndEmptySections) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  { RunLog::create(path, sample_info(), kConfig); }
  RunContents run = read_run(path);
  EXPECT_EQ(run.schema_version, 1);
  EXPECT_EQ(run.status, RunStatus::running);
  EXPECT_EQ(run.info.run_id, "heads-h1-s2");
  EXPECT_EQ(run.info.sweep_id, "table3");
  EXPECT_EQ(run.info.world_size, 2);
  EXPECT_EQ(run.info.threads, 3);
  EXPECT_EQ(run.info.seed, 2);
  EXPECT_EQ(run.info.config_yaml, "model:\n  heads: 1\n");
  EXPECT_EQ(run.info.command_line, "attnlab train -c heads.yaml");
  EXPECT_TRUE(is_utc_timestamp(run.info.created)) << run.info.created;
  EXPECT_FALSE(run.info.host.empty());
  EXPECT_FALSE(run.info.attnlab_version.empty());
  EXPECT_FALSE(run.info.git_commit.empty());
  EXPECT_EQ(run.train.rows, 0);
  EXPECT_TRUE(run.train.columns.empty());

  h5::File file = h5::File::open(path, h5::Access::read);
  EXPECT_EQ(file.root().get_string("schema"), "attnlab-run");
  for (const char* section : {"config", "train", "eval", "diagnostics", "summary", "attention"}) {
    EXPECT_TRUE(file.root().has_group(section)) << section;
  }
  // Numbers are stored as numbers, everything else as text.
  const h5::Group config = file.root().group("config");
  EXPECT_EQ(config.attribute_type("model.heads"), h5::ValueType::integer);
  EXPECT_EQ(config.get_int("model.heads"), 8);
  EXPECT_EQ(config.get_int("train.steps"), -3);
  EXPECT_EQ(config.attribute_type("model.dropout"), h5::ValueType::floating);
  EXPECT_EQ(config.get_double("model.dropout"), 0.1);
  EXPECT_EQ(config.get_double("train.optimizer.eps"), 1e-9);
  for (const char* text :
       {"model.norm", "data.dev", "model.tie_embeddings", "cluster.slurm.time", "eval.value"}) {
    EXPECT_EQ(config.attribute_type(text), h5::ValueType::string) << text;
  }
  EXPECT_EQ(config.get_string("cluster.slurm.time"), "04:00:00");
  // read_run prints numbers back as the shortest text that reads back exactly.
  ConfigEntries expected = {{"cluster.slurm.time", "04:00:00"},
                            {"data.dev", ""},
                            {"eval.value", "nan"},
                            {"model.dropout", "0.1"},
                            {"model.heads", "8"},
                            {"model.norm", "post"},
                            {"model.tie_embeddings", "true"},
                            {"train.optimizer.eps", "1e-09"},
                            {"train.steps", "-3"}};
  EXPECT_EQ(run.config, expected);
}

TEST(RunLog, ExplicitInfoFieldsAreKept) {
  TempDir dir;
  RunInfo info = sample_info();
  info.created = "2017-06-12T00:00:00Z";
  info.host = "node17";
  info.attnlab_version = "9.9.9";
  info.git_commit = "abc123";
  { RunLog::create(dir.file("run.h5"), info, {}); }
  RunContents run = read_run(dir.file("run.h5"));
  EXPECT_EQ(run.info.created, "2017-06-12T00:00:00Z");
  EXPECT_EQ(run.info.host, "node17");
  EXPECT_EQ(run.info.attnlab_version, "9.9.9");
  EXPECT_EQ(run.info.git_commit, "abc123");
}

TEST(RunLog, SeriesSummaryAndStatusRoundTrip) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), kConfig);
    append_train_steps(log, 1, 5);
    log.append_eval({{"step", 5}, {"ppl", 4.92}, {"bleu", 25.8}});
    log.set_summary("best_dev_bleu", 25.8);
    log.set_summary("params", 65e6);
    log.set_summary("best_checkpoint", std::string("ckpt/step_5.h5"));
    log.set_summary("best_dev_bleu", 26.1);  // replaces
    log.set_status(RunStatus::completed);
  }
  RunContents run = read_run(path);
  EXPECT_EQ(run.status, RunStatus::completed);
  EXPECT_EQ(run.train.columns, (std::vector<std::string>{"step", "loss", "lr"}));
  ASSERT_EQ(run.train.rows, 5);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(run.train.column("step")[r], r + 1);
    EXPECT_EQ(run.train.column("loss")[r], 10.0 / (r + 1));
    EXPECT_EQ(run.train.column("lr")[r], (r + 1) * 1e-4);
  }
  EXPECT_EQ(run.eval.rows, 1);
  EXPECT_EQ(run.eval.column("bleu")[0], 25.8);
  EXPECT_EQ(run.summary_numbers.at("best_dev_bleu"), 26.1);
  EXPECT_EQ(run.summary_numbers.at("params"), 65e6);
  EXPECT_EQ(run.summary_texts.at("best_checkpoint"), "ckpt/step_5.h5");
  expect_error([&] { run.train.column("bleu"); }, {"no column 'bleu'", "(step, loss, lr)"});

  // On disk: step is int64, the rest float64, all 1-D with the columns attribute giving order.
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group train = file.root().group("train");
  EXPECT_EQ(train.get_strings("columns"), (std::vector<std::string>{"step", "loss", "lr"}));
  EXPECT_EQ(train.dataset("step").value_type(), h5::ValueType::integer);
  EXPECT_EQ(train.dataset("loss").value_type(), h5::ValueType::floating);
  EXPECT_EQ(train.dataset("lr").dims(), (std::vector<int64_t>{5}));
}

TEST(RunLog, RowsMustKeepTheFirstRowsColumnsAndIncreasingSteps) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  RunLog log = RunLog::create(path, sample_info(), {});
  expect_error([&] { log.append_train({{"loss", 1.0}}); }, {"/train", "needs a 'step' column"});
  log.append_train({{"step", 1}, {"loss", 2.0}, {"lr", 0.5}});
  expect_error(
      [&] {
        log.append_train({{"step", 2}, {"loss", 2.0}});
      },
      {path, "/train", "row has columns (step, loss)", "the series has (step, loss, lr)"});
  expect_error(
      [&] {
        log.append_train({{"step", 2}, {"lr", 2.0}, {"loss", 2.0}});
      },
      {"row has columns (step, lr, loss)"});
  expect_error(
      [&] {
        log.append_train({{"step", 1}, {"loss", 2.0}, {"lr", 0.5}});
      },
      {"/train", "step 1 is not after the last row's step 1"});
  expect_error(
      [&] {
        log.append_train({{"step", 2.5}, {"loss", 2.0}, {"lr", 0.5}});
      },
      {"step 2.5 is not a non-negative integer"});
  expect_error(
      [&] {
        log.append_eval({{"step", 1}, {"loss", 1.0}, {"loss", 2.0}});
      },
      {"/eval", "repeat a name"});
  // A rejected row leaves the series as it was.
  log.append_train({{"step", 2}, {"loss", 1.0}, {"lr", 0.25}});
  RunContents run = read_run(path);
  EXPECT_EQ(run.train.rows, 2);
  EXPECT_EQ(run.train.column("lr"), (std::vector<double>{0.5, 0.25}));
}

TEST(RunLog, AnExistingFileIsNeverOverwritten) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    append_train_steps(log, 1, 3);
  }
  expect_error([&] { RunLog::create(path, sample_info(), {}); }, {path, "refusing to overwrite"});
  EXPECT_EQ(read_run(path).train.rows, 3);
}

TEST(RunLog, DiagnosticsKeepShapeStepsAndLabels) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    std::vector<std::string> layers = {"encoder.layers.0", "encoder.layers.1", "decoder.layers.0"};
    log.append_diagnostic("grad_norm", 10, {3}, {0.5, 0.25, 2.0}, layers);
    log.append_diagnostic("grad_norm", 20, {3}, {0.4, 0.2, 1.0});
    log.append_diagnostic("attention_entropy", 10, {3, 2}, {1, 2, 3, 4, 5, 6}, layers);
    expect_error(
        [&] {
          log.append_diagnostic("grad_norm", 30, {2}, {1, 2});
        },
        {"/diagnostics/grad_norm", "values of shape (2)", "rows of shape (3)"});
    expect_error(
        [&] {
          log.append_diagnostic("grad_norm", 20, {3}, {1, 2, 3});
        },
        {"step 20 is not after the last row's step 20"});
    expect_error(
        [&] {
          log.append_diagnostic("x", 1, {2}, {1, 2, 3});
        },
        {"3 values given for shape (2)"});
    expect_error(
        [&] {
          log.append_diagnostic("y", 1, {2}, {1, 2}, {"only one"});
        },
        {"1 labels for shape (2)"});
  }
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group grad = file.root().group("diagnostics").group("grad_norm");
  EXPECT_EQ(grad.get_strings("labels"),
            (std::vector<std::string>{"encoder.layers.0", "encoder.layers.1", "decoder.layers.0"}));
  EXPECT_EQ(grad.dataset("step").read<int64_t>(), (std::vector<int64_t>{10, 20}));
  h5::Array<double> value = grad.read<double>("value");
  EXPECT_EQ(value.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(value.values, (std::vector<double>{0.5, 0.25, 2.0, 0.4, 0.2, 1.0}));
  h5::Array<double> entropy =
      file.root().group("diagnostics").group("attention_entropy").read<double>("value");
  EXPECT_EQ(entropy.dims, (std::vector<int64_t>{1, 3, 2}));
  EXPECT_EQ(entropy.values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

TEST(RunLog, AttentionMapsMatchTheProbeTokens) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  std::vector<float> cross(2 * 3 * 4);  // (H=2, T=3, S=4)
  for (size_t i = 0; i < cross.size(); ++i) cross[i] = static_cast<float>(i) / 24.0f;
  std::vector<float> encoder(2 * 4 * 4, 0.25f);
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    TensorView<const float> cross_view(cross.data(), Shape{2, 3, 4});
    expect_error(
        [&] { log.write_attention("probe_0", AttentionStack::kDecoderCross, 0, cross_view); },
        {"probe 'probe_0' has no tokens"});
    log.set_attention_probe("probe_0", {"a", "b", "c", "</s>"}, {"x", "y", "</s>"});
    log.write_attention("probe_0", AttentionStack::kDecoderCross, 1, cross_view);
    log.write_attention("probe_0", AttentionStack::kEncoderSelf, 0,
                        TensorView<const float>(encoder.data(), Shape{2, 4, 4}));
    expect_error(
        [&] { log.write_attention("probe_0", AttentionStack::kDecoderSelf, 0, cross_view); },
        {"/attention/probe_0", "decoder_self layer 0 attention has shape (2,3,4)",
         "expected (H,3,3)"});
    cross[0] = 0.5f;
    log.write_attention("probe_0", AttentionStack::kDecoderCross, 1, cross_view);  // replaces
  }
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group probe = file.root().group("attention").group("probe_0");
  EXPECT_EQ(probe.get_strings("source_tokens"), (std::vector<std::string>{"a", "b", "c", "</s>"}));
  EXPECT_EQ(probe.get_strings("target_tokens"), (std::vector<std::string>{"x", "y", "</s>"}));
  h5::Array<float> read = probe.group("decoder_cross").read<float>("layer_1");
  EXPECT_EQ(read.dims, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(read.values, cross);
  EXPECT_EQ(probe.group("encoder_self").read<float>("layer_0").values, encoder);
  EXPECT_FALSE(probe.has("decoder_self"));
}

TEST(RunLog, HeadStatisticsAreBlocksByHeadsAndReplaceTheirNamesake) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  HeadStatistics statistics;
  statistics.labels = {"encoder_self.layers.0", "decoder_cross.layers.0"};
  statistics.heads = 3;
  statistics.values = {{"entropy", {1, 2, 3, 4, 5, 6}}, {"relative_entropy", {6, 5, 4, 3, 2, 1}}};
  statistics.sentences = 17;
  statistics.step = 400;
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    log.write_head_statistics("attention_dev", statistics);
    statistics.values[0].second[0] = 9;
    statistics.step = 500;
    log.write_head_statistics("attention_dev", statistics);  // replaces
    statistics.values.push_back({"bad", {1, 2}});
    expect_error([&] { log.write_head_statistics("attention_dev", statistics); },
                 {"/attention_dev/bad", "2 values for 2 blocks of 3 heads"});
  }
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group group = file.root().group("attention_dev");
  EXPECT_EQ(group.get_strings("labels"), statistics.labels);
  EXPECT_EQ(group.get_int("sentences"), 17);
  EXPECT_EQ(group.get_int("step"), 500);
  h5::Array<double> entropy = group.read<double>("entropy");
  EXPECT_EQ(entropy.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(entropy.values, (std::vector<double>{9, 2, 3, 4, 5, 6}));
  EXPECT_EQ(group.read<double>("relative_entropy").values, (std::vector<double>{6, 5, 4, 3, 2, 1}));
  EXPECT_FALSE(group.has("bad"));
}

TEST(RunLog, ResumeDropsRowsAfterTheCheckpointStep) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), kConfig);
    append_train_steps(log, 1, 7);
    log.append_eval({{"step", 3}, {"ppl", 9.0}});
    log.append_eval({{"step", 6}, {"ppl", 7.0}});
    log.append_diagnostic("grad_norm", 3, {2}, {1, 2});
    log.append_diagnostic("grad_norm", 6, {2}, {3, 4});
    log.set_status(RunStatus::preempted);
  }
  {
    RunLog log = RunLog::resume(path, 5);
    EXPECT_EQ(read_run(path).status, RunStatus::running);
    append_train_steps(log, 6, 8);
    log.append_eval({{"step", 6}, {"ppl", 6.5}});
    log.append_diagnostic("grad_norm", 6, {2}, {5, 6});
    expect_error(
        [&] {
          log.append_train({{"step", 8}, {"loss", 1.0}, {"lr", 1.0}});
        },
        {"step 8 is not after the last row's step 8"});
  }
  RunContents run = read_run(path);
  ASSERT_EQ(run.train.rows, 8);
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(run.train.column("step")[r], r + 1);
    EXPECT_EQ(run.train.column("loss")[r], 10.0 / (r + 1));
  }
  EXPECT_EQ(run.eval.column("step"), (std::vector<double>{3, 6}));
  EXPECT_EQ(run.eval.column("ppl"), (std::vector<double>{9.0, 6.5}));
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group grad = file.root().group("diagnostics").group("grad_norm");
  EXPECT_EQ(grad.dataset("step").read<int64_t>(), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(grad.dataset("value").read<double>(), (std::vector<double>{1, 2, 5, 6}));
}

// What a writer killed inside a series' first append leaves: the column datasets (one of them
// with the row) but not the `columns` attribute, as Series::define writes it last.
void leave_interrupted_definition(const std::string& path, const std::string& group_path) {
  h5::File file = h5::File::open(path, h5::Access::write);
  h5::Group group = file.root().group(group_path);
  h5::Dataset step = group.create_extendable<int64_t>("step", {}, 16);
  const int64_t first = 3;
  step.append(&first, 1);
  group.create_extendable<double>("ppl", {}, 16);
  file.flush();
}

TEST(RunLog, AHalfDefinedSeriesIsReportedDamagedAndAResumeDropsAndRedefinesIt) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), kConfig);
    append_train_steps(log, 1, 4);
  }
  leave_interrupted_definition(path, "eval");
  {
    // A metric group created and labelled whose datasets never came.
    h5::File file = h5::File::open(path, h5::Access::write);
    file.root().group("diagnostics").create_group("grad_norm").set_strings("labels", {"a", "b"});
    // A metric whose attribute is missing but whose (step, value) hold a row: rebuilt.
    h5::Group scores = file.root().group("diagnostics").create_group("qk_grad_norm");
    const int64_t step = 2;
    const double values[2] = {0.5, 0.25};
    scores.create_extendable<int64_t>("step", {}, 16).append(&step, 1);
    scores.create_extendable<double>("value", {2}, 16).append(values, 1);
    file.flush();
  }
  RunContents damaged = read_run(path);
  ASSERT_EQ(damaged.damaged.size(), 2u);
  EXPECT_EQ(damaged.damaged[0],
            "/eval: datasets (ppl, step) without the attribute 'columns' (holding at most 1 row): "
            "its definition was interrupted before its first row was flushed");
  EXPECT_EQ(damaged.train.rows, 4);
  {
    RunLog log = RunLog::resume(path, 4);
    log.append_eval({{"step", 3}, {"ppl", 9.0}, {"loss", 2.0}});
    log.append_diagnostic("grad_norm", 4, {2}, {1, 2}, {"a", "b"});
    append_train_steps(log, 5, 5);
  }
  RunContents run = read_run(path);
  EXPECT_TRUE(run.damaged.empty());
  EXPECT_EQ(run.eval.columns, (std::vector<std::string>{"step", "ppl", "loss"}));
  EXPECT_EQ(run.eval.column("ppl"), (std::vector<double>{9.0}));
  EXPECT_EQ(run.train.rows, 5);
  ASSERT_EQ(run.repairs.size(), 2u);
  EXPECT_EQ(run.repairs[0], "resumed at step 4, dropped " + damaged.damaged[0]);
  EXPECT_EQ(run.repairs[1],
            "resumed at step 4, rebuilt " + damaged.damaged[1] + " as (step, value)");
  h5::File file = h5::File::open(path, h5::Access::read);
  h5::Group grad = file.root().group("diagnostics").group("grad_norm");
  EXPECT_EQ(grad.dataset("step").read<int64_t>(), (std::vector<int64_t>{4}));
  h5::Group scores = file.root().group("diagnostics").group("qk_grad_norm");
  EXPECT_EQ(scores.get_strings("columns"), (std::vector<std::string>{"step", "value"}));
  EXPECT_EQ(scores.dataset("value").read<double>(), (std::vector<double>{0.5, 0.25}));
}

TEST(RunLog, ResumeAtStepZeroEmptiesTheSeriesButKeepsTheirColumns) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    append_train_steps(log, 1, 4);
  }
  {
    RunLog log = RunLog::resume(path, 0);
    expect_error(
        [&] {
          log.append_train({{"step", 1}, {"loss", 1.0}});
        },
        {"the series has (step, loss, lr)"});
    append_train_steps(log, 1, 2);
  }
  EXPECT_EQ(read_run(path).train.column("step"), (std::vector<double>{1, 2}));
}

// A writer killed between the columns of one append leaves one column a row longer: readers see
// only complete rows, and resume cuts the extra value off before appending.
TEST(RunLog, AnIncompleteLastRowIsIgnoredAndRemovedOnResume) {
  TempDir dir;
  std::string path = dir.file("run.h5");
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    append_train_steps(log, 1, 3);
  }
  {
    h5::File file = h5::File::open(path, h5::Access::write);
    int64_t step = 4;
    file.root().group("train").dataset("step").append(&step, 1);
  }
  EXPECT_EQ(read_run(path).train.rows, 3);
  {
    RunLog log = RunLog::resume(path, 100);
    append_train_steps(log, 4, 4);
  }
  h5::File file = h5::File::open(path, h5::Access::read);
  EXPECT_EQ(file.root().group("train").dataset("step").read<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(file.root().group("train").dataset("loss").rows(), 4);
}

TEST(RunLog, ResumeRefusesFilesThatAreNotAttnlabRuns) {
  TempDir dir;
  std::string missing = dir.file("missing.h5");
  expect_error([&] { RunLog::resume(missing, 1); }, {missing, "no such file"});
  std::string other = dir.file("other.h5");
  { h5::File::create(other).root().set_string("creator", "someone else"); }
  expect_error([&] { RunLog::resume(other, 1); }, {other, "not an attnlab run file"});
  expect_error([&] { read_run(other); }, {other, "not an attnlab run file"});
  std::string newer = dir.file("newer.h5");
  { RunLog::create(newer, sample_info(), {}); }
  { h5::File::open(newer, h5::Access::write).root().set_int("schema_version", 2); }
  expect_error([&] { RunLog::resume(newer, 1); }, {newer, "schema_version 2", "reads 1 to 1"});
  std::string text = dir.file("text.h5");
  test::write_bytes(text, "step,loss\n1,2\n");
  expect_error([&] { RunLog::resume(text, 1); }, {text, "not an HDF5 file"});
}

TEST(RunLog, StatusNamesRoundTrip) {
  for (RunStatus status :
       {RunStatus::running, RunStatus::completed, RunStatus::failed, RunStatus::preempted}) {
    EXPECT_EQ(run_status_names().parse(run_status_names().name(status)), status);
  }
  expect_error([] { run_status_names().parse("done"); },
               {"status 'done' must be one of running | completed | failed | preempted"});
}

// The stop reason is written and read back as the enum; the names are the ones earlier builds
// wrote as text (the committed run logs under docs/results say "steps", "patience", ...).
TEST(RunLog, StopReasonIsTyped) {
  test::TempDir dir;
  const std::string path = dir.file("run.h5");
  EXPECT_EQ(stop_reason_names().choices(), "steps | patience | epochs | preempted | non_finite");
  {
    RunLog log = RunLog::create(path, sample_info(), {});
    EXPECT_FALSE(read_run(path).stop_reason().has_value());
    log.set_stop_reason(StopReason::kPatience);
  }
  EXPECT_EQ(read_run(path).stop_reason(), StopReason::kPatience);
  EXPECT_EQ(read_run(path).summary_texts.at("stop_reason"), "patience");
  { RunLog::resume(path, 0).set_summary("stop_reason", "tired"); }
  const RunContents run = read_run(path);
  expect_error([&] { (void)run.stop_reason(); },
               {"stop_reason 'tired' must be one of steps | patience"});
}

}  // namespace
}  // namespace attnlab::io
