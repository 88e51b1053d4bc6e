// RunLog: writing, resuming and reading the HDF5 log of one training run.
#include "core/io/run_log.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <utility>

#include "core/io/series.h"
#include "core/util/build_info.h"
#include "core/util/check.h"
#include "core/util/clock.h"
#include "core/util/files.h"
#include "core/util/isolated.h"
#include "core/util/wire.h"

namespace attnlab::io {

namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

bool parse_int(const std::string& text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, *value);
  return error == std::errc() && stop == end && !text.empty();
}

// Decimal numbers only: "nan", "inf" and hexadecimal floats stay strings.
bool parse_double(const std::string& text, double* value) {
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  char* stop = nullptr;
  *value = std::strtod(text.c_str(), &stop);
  return stop == text.c_str() + text.size();
}

// The shortest decimal text that reads back as `value`.
std::string number_text(double value) {
  char text[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

// Checks the root attributes of an attnlab run file.
int64_t check_run_schema(const h5::File& file) {
  const h5::Group& root = file.root();
  CHECK(root.has_attribute("schema") && root.attribute_type("schema") == h5::ValueType::string &&
        root.get_string("schema") == kRunSchema)
      << file.path() << ": not an attnlab run file (the root attribute 'schema' is not '"
      << kRunSchema << "')";
  int64_t version = root.get_int("schema_version");
  CHECK(version >= 1 && version <= kRunSchemaVersion)
      << file.path() << ": run file of schema_version " << version << ", this build reads 1 to "
      << kRunSchemaVersion;
  return version;
}

}  // namespace

// Free space a change of the run file needs beyond its own bytes: HDF5 writes its dirty metadata
// and whole chunks (8 KiB) when the file is flushed, which for a run log stays far below this.
constexpr int64_t kRunLogReserve = int64_t{256} << 10;
// The status alone (one attribute), so that a run stopped by a full disk can still say failed.
constexpr int64_t kStatusReserve = int64_t{64} << 10;

struct RunLog::State {
  h5::File file;
  Series train;
  Series eval;
  std::map<std::string, Series> diagnostics;

  State(h5::File opened, Series train_series, Series eval_series)
      : file(std::move(opened)), train(std::move(train_series)), eval(std::move(eval_series)) {}

  // Before any change: nothing is changed (in memory either, which HDF5 would flush on close)
  // unless the disk can take it.
  void reserve(int64_t payload_bytes, const char* what) const {
    require_free_space(file.path(), payload_bytes + kRunLogReserve, what);
  }
};

RunLog::RunLog(std::unique_ptr<State> state) : state_(std::move(state)) {}
RunLog::RunLog(RunLog&&) noexcept = default;
RunLog& RunLog::operator=(RunLog&&) noexcept = default;
RunLog::~RunLog() = default;

const std::string& RunLog::path() const { return state_->file.path(); }

namespace {

void write_new_run(const std::string& path, const RunInfo& info, const ConfigEntries& config) {
  h5::File file = h5::File::create(path, true);
  h5::Group& root = file.root();
  root.set_string("schema", kRunSchema);
  root.set_int("schema_version", kRunSchemaVersion);
  root.set_string("attnlab_version",
                  info.attnlab_version.empty() ? attnlab_version() : info.attnlab_version);
  root.set_string("git_commit", info.git_commit.empty() ? git_commit() : info.git_commit);
  // The uncommitted changes this build was made with (provenance of a "-dirty" commit); only
  // for runs this build makes, not for a commit given by the caller.
  root.set_string("git_diff_sha256", info.git_commit.empty() ? git_diff_sha256() : "");
  root.set_string("created", info.created.empty() ? utc_now() : info.created);
  root.set_string("host", info.host.empty() ? host_name() : info.host);
  root.set_int("world_size", info.world_size);
  root.set_int("threads", info.threads);
  root.set_int("seed", info.seed);
  root.set_string("run_id", info.run_id);
  root.set_string("sweep_id", info.sweep_id);
  root.set_string("status", run_status_names().name(RunStatus::running));
  root.set_string("config_yaml", info.config_yaml);
  root.set_string("command_line", info.command_line);

  h5::Group config_group = root.create_group("config");
  for (const auto& [key, text] : config) {
    CHECK(!config_group.has_attribute(key)) << path << ": config key '" << key << "' given twice";
    int64_t integer = 0;
    double number = 0;
    if (parse_int(text, &integer)) {
      config_group.set_int(key, integer);
    } else if (parse_double(text, &number)) {
      config_group.set_double(key, number);
    } else {
      config_group.set_string(key, text);
    }
  }
  for (const char* section : {"train", "eval", "diagnostics", "summary", "attention"}) {
    root.create_group(section);
  }
  file.flush();
}

}  // namespace

RunLog RunLog::create(const std::string& path, const RunInfo& info, const ConfigEntries& config) {
  // The first version of the file is written under a temporary name and renamed, so that a run
  // killed while creating it leaves either no run file or a complete one.
  CHECK(!std::filesystem::exists(path)) << path << ": file exists; refusing to overwrite a run";
  require_free_space(path, kRunLogReserve, "a new run log");
  std::string temporary = path + ".tmp";
  write_new_run(temporary, info, config);
  replace_file(temporary, path);
  h5::File file = h5::File::open_unlocked(path, h5::Access::write);
  h5::Group& root = file.root();
  Series train = Series::open(root.group("train"));
  Series eval = Series::open(root.group("eval"));
  return RunLog(std::make_unique<State>(std::move(file), std::move(train), std::move(eval)));
}

RunLog RunLog::resume(const std::string& path, int64_t step) {
  require_free_space(path, kRunLogReserve, "resuming the run log");
  h5::File file = h5::File::open_unlocked(path, h5::Access::write);
  check_run_schema(file);
  h5::Group& root = file.root();
  std::vector<std::string> repairs = root.has_attribute(kRepairsAttribute)
                                         ? root.get_strings(kRepairsAttribute)
                                         : std::vector<std::string>{};
  const size_t repairs_before = repairs.size();
  // A series whose definition a kill interrupted holds no row that was ever flushed: its datasets
  // are dropped, with the reason kept in the file, and the next append defines it again.
  auto drop_interrupted = [&](Series& series) {
    if (!series.interrupted()) return;
    repairs.push_back("resumed at step " + std::to_string(step) + ", dropped " +
                      series.drop_interrupted_definition());
  };
  Series train = Series::open(root.group("train"));
  Series eval = Series::open(root.group("eval"));
  drop_interrupted(train);
  drop_interrupted(eval);
  train.keep_steps_up_to(step);
  eval.keep_steps_up_to(step);
  std::map<std::string, Series> diagnostics;
  h5::Group diagnostics_group = root.group("diagnostics");
  for (const std::string& metric : diagnostics_group.names()) {
    Series series = Series::open(diagnostics_group.group(metric));
    // A metric's columns are always (step, value): one whose attribute is missing but whose two
    // datasets are there is rebuilt from what they hold (their complete rows are kept).
    h5::Group group = diagnostics_group.group(metric);
    if (series.interrupted() && group.has_dataset("step") && group.has_dataset("value")) {
      const std::string damage = series.damage();
      group.set_strings("columns", {"step", "value"});
      series = Series::open(std::move(group));
      repairs.push_back("resumed at step " + std::to_string(step) + ", rebuilt " + damage +
                        " as (step, value)");
    }
    // A metric's group is created, then defined, at its first append: an undefined one is
    // dropped whole and created again by the next append (with its labels).
    if (!series.defined()) {
      if (series.interrupted()) {
        repairs.push_back("resumed at step " + std::to_string(step) + ", dropped " +
                          series.damage());
      }
      diagnostics_group.remove(metric);
      continue;
    }
    series.keep_steps_up_to(step);
    diagnostics.emplace(metric, std::move(series));
  }
  if (repairs.size() != repairs_before) root.set_strings(kRepairsAttribute, repairs);
  root.set_string("status", run_status_names().name(RunStatus::running));
  file.flush();
  auto state = std::make_unique<State>(std::move(file), std::move(train), std::move(eval));
  state->diagnostics = std::move(diagnostics);
  return RunLog(std::move(state));
}

namespace {

void append_row(Series& series, const Row& row) {
  std::vector<std::string> columns;
  std::vector<double> values;
  columns.reserve(row.size());
  values.reserve(row.size());
  for (const auto& [name, value] : row) {
    columns.push_back(name);
    values.push_back(value);
  }
  if (!series.defined()) series.define(columns, std::vector<std::vector<int64_t>>(columns.size()));
  CHECK(columns == series.columns())
      << series.where() << ": row has columns " << join_names(columns) << ", the series has "
      << join_names(series.columns());
  std::vector<const double*> pointers;
  pointers.reserve(values.size());
  for (const double& value : values) pointers.push_back(&value);
  series.append(pointers);
}

}  // namespace

void RunLog::append_train(const Row& row) {
  state_->reserve(0, "a /train row");
  append_row(state_->train, row);
  state_->file.flush();
}

void RunLog::append_eval(const Row& row) {
  state_->reserve(0, "an /eval row");
  append_row(state_->eval, row);
  state_->file.flush();
}

void RunLog::append_diagnostic(const std::string& metric, int64_t step,
                               const std::vector<int64_t>& shape, const std::vector<double>& values,
                               const std::vector<std::string>& labels) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  state_->reserve(count * static_cast<int64_t>(sizeof(double)), "a /diagnostics row");
  CHECK(count == static_cast<int64_t>(values.size()))
      << path() << ", /diagnostics/" << metric << ": " << values.size()
      << " values given for shape " << Shape(shape).str();
  auto found = state_->diagnostics.find(metric);
  if (found == state_->diagnostics.end()) {
    h5::Group group = state_->file.root().group("diagnostics").create_group(metric);
    if (!labels.empty()) {
      CHECK(!shape.empty() && static_cast<int64_t>(labels.size()) == shape[0])
          << group.where() << ": " << labels.size() << " labels for shape " << Shape(shape).str()
          << " (one per entry along axis 0)";
      group.set_strings("labels", labels);
    }
    Series series = Series::open(std::move(group));
    series.define({"step", "value"}, {{}, shape});
    found = state_->diagnostics.emplace(metric, std::move(series)).first;
  }
  Series& series = found->second;
  CHECK(series.row_shape(1) == shape)
      << series.where() << ": values of shape " << Shape(shape).str()
      << ", the series holds rows of shape " << Shape(series.row_shape(1)).str();
  double step_value = static_cast<double>(step);
  series.append({&step_value, values.data()});
  state_->file.flush();
}

void RunLog::set_summary(const std::string& name, double value) {
  state_->reserve(0, "a /summary value");
  state_->file.root().group("summary").set_double(name, value);
  state_->file.flush();
}

void RunLog::set_summary(const std::string& name, const std::string& value) {
  state_->reserve(static_cast<int64_t>(value.size()), "a /summary text");
  state_->file.root().group("summary").set_string(name, value);
  state_->file.flush();
}

void RunLog::set_stop_reason(StopReason reason) {
  set_summary(kStopReasonKey, stop_reason_names().name(reason));
}

void RunLog::set_attention_probe(const std::string& probe,
                                 const std::vector<std::string>& source_tokens,
                                 const std::vector<std::string>& target_tokens) {
  CHECK(!source_tokens.empty() && !target_tokens.empty())
      << path() << ", /attention/" << probe << ": a probe needs source and target tokens";
  state_->reserve(0, "an attention probe");
  h5::Group group = state_->file.root().group("attention").require_group(probe);
  group.set_strings("source_tokens", source_tokens);
  group.set_strings("target_tokens", target_tokens);
  state_->file.flush();
}

void RunLog::write_attention(const std::string& probe, AttentionStack stack, int layer,
                             TensorView<const float> weights) {
  state_->reserve(weights.numel() * static_cast<int64_t>(sizeof(float)), "an attention map");
  h5::Group attention = state_->file.root().group("attention");
  CHECK(attention.has_group(probe)) << path() << ", /attention: probe '" << probe
                                    << "' has no tokens; call set_attention_probe first";
  h5::Group group = attention.group(probe);
  auto source = static_cast<int64_t>(group.get_strings("source_tokens").size());
  auto target = static_cast<int64_t>(group.get_strings("target_tokens").size());
  int64_t rows = stack == AttentionStack::kEncoderSelf ? source : target;
  int64_t cols = stack == AttentionStack::kDecoderSelf ? target : source;
  const Shape& shape = weights.shape();
  CHECK(shape.rank() == 3 && shape[0] > 0 && shape[1] == rows && shape[2] == cols)
      << group.where() << ": " << to_string(stack) << " layer " << layer << " attention has shape "
      << shape.str() << ", expected (H," << rows << "," << cols << ") for a probe of " << source
      << " source and " << target << " target tokens";
  CHECK(layer >= 0) << group.where() << ": layer " << layer;
  h5::Group stack_group = group.require_group(to_string(stack));
  std::string name = "layer_" + std::to_string(layer);
  if (stack_group.has(name)) stack_group.remove(name);
  stack_group.write<float>(name, shape.dims(), weights.data());
  state_->file.flush();
}

void write_head_statistics(h5::Group& group, const HeadStatistics& statistics) {
  const auto blocks = static_cast<int64_t>(statistics.labels.size());
  for (const auto& [name, values] : statistics.values) {
    CHECK(static_cast<int64_t>(values.size()) == blocks * statistics.heads)
        << group.where() << "/" << name << ": " << values.size() << " values for " << blocks
        << " blocks of " << statistics.heads << " heads";
    if (group.has(name)) group.remove(name);
    group.write<double>(name, {blocks, statistics.heads}, values.data());
  }
  group.set_strings("labels", statistics.labels);
  group.set_int("sentences", statistics.sentences);
  group.set_int("step", statistics.step);
}

void RunLog::write_head_statistics(const std::string& group, const HeadStatistics& statistics) {
  int64_t bytes = 0;
  for (const auto& entry : statistics.values) {
    bytes += static_cast<int64_t>(entry.second.size() * sizeof(double));
  }
  state_->reserve(bytes, "attention statistics");
  h5::Group target = state_->file.root().require_group(group);
  io::write_head_statistics(target, statistics);
  state_->file.flush();
}

void RunLog::set_status(RunStatus status) {
  require_free_space(state_->file.path(), kStatusReserve, "the run's status");
  state_->file.root().set_string("status", run_status_names().name(status));
  state_->file.flush();
}

// ---- reading ------------------------------------------------------------------------------

std::optional<StopReason> RunContents::stop_reason() const {
  const auto found = summary_texts.find(kStopReasonKey);
  if (found == summary_texts.end()) return std::nullopt;
  return stop_reason_names().parse(found->second);
}

std::vector<std::string> RunContents::pending_splits() const {
  std::vector<std::string> pending;
  if (status != RunStatus::completed) return pending;
  std::string splits, checkpoint;
  for (const auto& [key, value] : config) {
    if (key == "eval.decode_splits") splits = value;
    if (key == "eval.checkpoint") checkpoint = value;
  }
  const auto final_step = summary_numbers.find(checkpoint == "best" ? "best_step" : "steps");
  // The list as the config stores it: "[dev, test]".
  std::string split;
  for (const char c : splits) {
    if (c == '[' || c == ' ') continue;
    if (c != ',' && c != ']') {
      split += c;
      continue;
    }
    const auto decoded = decoded_splits.find(split);
    if (!split.empty() && (final_step == summary_numbers.end() || decoded == decoded_splits.end() ||
                           decoded->second != static_cast<int64_t>(final_step->second))) {
      pending.push_back(split);
    }
    split.clear();
  }
  return pending;
}

const std::vector<double>& SeriesData::column(const std::string& name) const {
  auto found = std::find(columns.begin(), columns.end(), name);
  CHECK(found != columns.end()) << "no column '" << name << "' among " << join_names(columns);
  return values[static_cast<size_t>(found - columns.begin())];
}

namespace {

SeriesData read_series(h5::Group group, std::vector<std::string>& damaged) {
  Series series = Series::open(std::move(group));
  SeriesData data;
  if (series.interrupted()) damaged.push_back(series.damage());
  if (!series.defined()) return data;
  data.columns = series.columns();
  data.rows = series.rows();
  for (size_t c = 0; c < data.columns.size(); ++c) data.values.push_back(series.read_column(c));
  return data;
}

RunContents read_run_in_process(const std::string& path) {
  h5::File file = h5::File::open_unlocked(path, h5::Access::read);
  RunContents run;
  run.schema_version = check_run_schema(file);
  const h5::Group& root = file.root();
  RunInfo& info = run.info;
  info.run_id = root.get_string("run_id");
  info.sweep_id = root.get_string("sweep_id");
  info.world_size = root.get_int("world_size");
  info.threads = root.get_int("threads");
  info.seed = root.get_int("seed");
  info.config_yaml = root.get_string("config_yaml");
  info.command_line = root.get_string("command_line");
  info.attnlab_version = root.get_string("attnlab_version");
  info.git_commit = root.get_string("git_commit");
  info.created = root.get_string("created");
  info.host = root.get_string("host");
  run.status = run_status_names().parse(root.get_string("status"));

  h5::Group config = root.group("config");
  for (const std::string& key : config.attribute_names()) {
    switch (config.attribute_type(key)) {
      case h5::ValueType::integer:
        run.config.emplace_back(key, std::to_string(config.get_int(key)));
        break;
      case h5::ValueType::floating:
        run.config.emplace_back(key, number_text(config.get_double(key)));
        break;
      default: run.config.emplace_back(key, config.get_string(key)); break;
    }
  }
  run.train = read_series(root.group("train"), run.damaged);
  run.eval = read_series(root.group("eval"), run.damaged);
  const h5::Group diagnostics = root.group("diagnostics");
  for (const std::string& metric : diagnostics.names()) {
    const Series series = Series::open(diagnostics.group(metric));
    if (series.interrupted()) run.damaged.push_back(series.damage());
  }
  if (root.has_attribute(kRepairsAttribute)) run.repairs = root.get_strings(kRepairsAttribute);
  h5::Group summary = root.group("summary");
  for (const std::string& name : summary.attribute_names()) {
    if (summary.attribute_type(name) == h5::ValueType::string) {
      run.summary_texts[name] = summary.get_string(name);
    } else {
      run.summary_numbers[name] = summary.get_double(name);
    }
  }
  const std::string prefix = "eval_";
  for (const std::string& name : root.names()) {
    if (name.rfind(prefix, 0) != 0) continue;
    const h5::Group group = root.group(name);
    // An integer step, as split_eval writes it; anything else is not a decoding of ours.
    if (group.has_attribute("step") && group.attribute_type("step") == h5::ValueType::integer) {
      run.decoded_splits[name.substr(prefix.size())] = group.get_int("step");
    }
  }
  return run;
}

void put_series(wire::Writer& out, const SeriesData& series) {
  out.put_int(series.rows);
  out.put_int(static_cast<int64_t>(series.columns.size()));
  for (size_t c = 0; c < series.columns.size(); ++c) {
    out.put_string(series.columns[c]);
    out.put_doubles(series.values[c]);
  }
}

SeriesData get_series(wire::Reader& in) {
  SeriesData series;
  series.rows = in.get_int();
  const size_t columns = in.get_count(2 * sizeof(int64_t));
  for (size_t c = 0; c < columns; ++c) {
    series.columns.push_back(in.get_string());
    series.values.push_back(in.get_doubles());
  }
  return series;
}

std::string encode(const RunContents& run) {
  wire::Writer out;
  const RunInfo& info = run.info;
  for (const std::string* text :
       {&info.run_id, &info.sweep_id, &info.config_yaml, &info.command_line, &info.attnlab_version,
        &info.git_commit, &info.created, &info.host}) {
    out.put_string(*text);
  }
  for (int64_t number : {info.world_size, info.threads, info.seed, run.schema_version,
                         static_cast<int64_t>(run.status)}) {
    out.put_int(number);
  }
  out.put_int(static_cast<int64_t>(run.config.size()));
  for (const auto& [key, value] : run.config) {
    out.put_string(key);
    out.put_string(value);
  }
  put_series(out, run.train);
  put_series(out, run.eval);
  out.put_int(static_cast<int64_t>(run.summary_numbers.size()));
  for (const auto& [name, value] : run.summary_numbers) {
    out.put_string(name);
    out.put_double(value);
  }
  out.put_int(static_cast<int64_t>(run.summary_texts.size()));
  for (const auto& [name, value] : run.summary_texts) {
    out.put_string(name);
    out.put_string(value);
  }
  for (const std::vector<std::string>* notes : {&run.damaged, &run.repairs}) {
    out.put_int(static_cast<int64_t>(notes->size()));
    for (const std::string& note : *notes) out.put_string(note);
  }
  out.put_int(static_cast<int64_t>(run.decoded_splits.size()));
  for (const auto& [split, step] : run.decoded_splits) {
    out.put_string(split);
    out.put_int(step);
  }
  return out.bytes();
}

RunContents decode(const std::string& bytes) {
  wire::Reader in(bytes);
  RunContents run;
  RunInfo& info = run.info;
  for (std::string* text : {&info.run_id, &info.sweep_id, &info.config_yaml, &info.command_line,
                            &info.attnlab_version, &info.git_commit, &info.created, &info.host}) {
    *text = in.get_string();
  }
  for (int64_t* number : {&info.world_size, &info.threads, &info.seed, &run.schema_version}) {
    *number = in.get_int();
  }
  run.status = static_cast<RunStatus>(in.get_int());
  const size_t entries = in.get_count(2 * sizeof(int64_t));
  for (size_t i = 0; i < entries; ++i) {
    std::string key = in.get_string();
    run.config.emplace_back(std::move(key), in.get_string());
  }
  run.train = get_series(in);
  run.eval = get_series(in);
  const size_t numbers = in.get_count(sizeof(int64_t) + sizeof(double));
  for (size_t i = 0; i < numbers; ++i) {
    std::string name = in.get_string();
    run.summary_numbers[name] = in.get_double();
  }
  const size_t texts = in.get_count(2 * sizeof(int64_t));
  for (size_t i = 0; i < texts; ++i) {
    std::string name = in.get_string();
    run.summary_texts[name] = in.get_string();
  }
  for (std::vector<std::string>* notes : {&run.damaged, &run.repairs}) {
    const size_t count = in.get_count(sizeof(int64_t));
    for (size_t i = 0; i < count; ++i) notes->push_back(in.get_string());
  }
  const size_t splits = in.get_count(2 * sizeof(int64_t));
  for (size_t i = 0; i < splits; ++i) {
    std::string split = in.get_string();
    run.decoded_splits[split] = in.get_int();
  }
  CHECK(in.done()) << "encoded run: " << bytes.size() << " bytes, more than it holds";
  return run;
}

}  // namespace

RunContents read_run(const std::string& path) {
  // A damaged file can crash HDF5 itself: the file is read in a child process, which hands back
  // what it read, so that such a file is an Error here, not a crash of status, sweep or the
  // trainer, and HDF5 never parses it in this process.
  return decode(run_in_child_for_bytes([&] { return encode(read_run_in_process(path)); }, path));
}

}  // namespace attnlab::io
