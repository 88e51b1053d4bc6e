// The HDF5 log of one training run (runs/<sweep>/<run_id>/run.h5), schema "attnlab-run" version
// 1. docs/hdf5-schema.md describes the file for readers; this is the writing side.
//
//   /                  attrs: schema, schema_version, RunInfo fields, status
//   /config            one attribute per flattened config key (numbers stored as numbers)
//   /train, /eval      series: one 1-D dataset per column, equal length, attr `columns` (order)
//   /diagnostics/<m>   series: `step` (rows,) and `value` (rows, shape...), attr `labels`
//   /summary           attrs: final numbers and texts
//   /attention/<probe> attrs source_tokens, target_tokens; <stack>/layer_<i> (H,rows,cols) float
//   /attention_dev     per-head statistics of every attention block over the dev set
//
// Only rank 0 writes. Every call that changes the file flushes it before returning, so a process
// killed at any moment leaves a file that h5py and h5dump open, holding every complete call.
// The file is opened without HDF5's file lock so that it can be read while the run writes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/io/h5.h"
#include "core/io/run_state.h"
#include "core/model/attention_stack.h"
#include "core/tensor/tensor.h"

namespace attnlab::io {

inline constexpr const char* kRunSchema = "attnlab-run";
inline constexpr int64_t kRunSchemaVersion = 1;
// Root attribute: one line per repair a resume made (a dropped interrupted series definition).
inline constexpr const char* kRepairsAttribute = "repairs";

// The root attributes that describe a run. Empty text fields marked "filled in" take the value
// of this build or machine when the file is created.
struct RunInfo {
  std::string run_id;
  std::string sweep_id;
  int64_t world_size = 1;
  int64_t threads = 1;
  int64_t seed = 0;
  std::string config_yaml;      // the resolved experiment YAML (config::dump_yaml)
  std::string command_line;     // argv joined with spaces
  std::string attnlab_version;  // filled in: the project version of this build
  std::string git_commit;       // filled in: the commit this build was configured at
  std::string created;          // filled in: now, ISO 8601 UTC ("2024-05-01T12:00:00Z")
  std::string host;             // filled in: gethostname()
};

// One row of a series: (column, value) pairs in a fixed order, "step" among them. The first row
// of a series fixes its columns; "step" is stored as int64, every other column as float64.
using Row = std::vector<std::pair<std::string, double>>;
// Flattened config as (key, value text) pairs, e.g. ("model.heads", "8") (config::flatten).
using ConfigEntries = std::vector<std::pair<std::string, std::string>>;

// Per-head measurements of every attention block over a whole split: one (blocks, heads) float64
// dataset per entry of `values` (e.g. "entropy"), the attribute `labels` (one per block) and the
// integer attributes `sentences` (how many were measured) and `step` (of the parameters).
struct HeadStatistics {
  std::vector<std::string> labels;
  int64_t heads = 0;
  std::vector<std::pair<std::string, std::vector<double>>> values;  // (name, blocks * heads)
  int64_t sentences = 0;
  int64_t step = 0;
};
// Writes `statistics` into `group`, replacing datasets of the same names.
void write_head_statistics(h5::Group& group, const HeadStatistics& statistics);

class RunLog {
 public:
  // Creates a new run file (an existing file is an Error: a run is never overwritten) with the
  // root attributes, status "running" and /config. Config values that parse as an integer or a
  // floating-point number are stored as int64 or float64 attributes, others as strings.
  static RunLog create(const std::string& path, const RunInfo& info, const ConfigEntries& config);
  // Opens an existing run file to continue it after a checkpoint of `step`: checks that it is an
  // attnlab run file of a schema this build reads, drops every /train, /eval and /diagnostics
  // row whose step is above `step` (and any incomplete row a killed writer left), and sets the
  // status to "running".
  static RunLog resume(const std::string& path, int64_t step);

  RunLog(RunLog&&) noexcept;
  RunLog& operator=(RunLog&&) noexcept;
  ~RunLog();

  const std::string& path() const;

  // Appends one row to /train or /eval. Errors: no "step" column, columns differing from the
  // series' (names and order), a step not above the previous row's.
  void append_train(const Row& row);
  void append_eval(const Row& row);
  // Appends `values` (row-major, of `shape`, e.g. (layers) or (layers,heads)) measured at `step`
  // to /diagnostics/<metric>. The first call fixes the shape and stores `labels` (names along
  // axis 0, e.g. "encoder.layers.0", optional) as the attribute `labels`.
  void append_diagnostic(const std::string& metric, int64_t step, const std::vector<int64_t>& shape,
                         const std::vector<double>& values,
                         const std::vector<std::string>& labels = {});

  // /summary attributes (replacing any earlier value of the same name).
  void set_summary(const std::string& name, double value);
  void set_summary(const std::string& name, const std::string& value);
  // /summary stop_reason.
  void set_stop_reason(StopReason reason);

  // Attention of a probe sentence `probe` ("probe_0"): its tokens, then one (H,rows,cols) map per
  // stack and layer whose rows and cols match the token counts (see AttentionStack). Rewriting a
  // map replaces it.
  void set_attention_probe(const std::string& probe, const std::vector<std::string>& source_tokens,
                           const std::vector<std::string>& target_tokens);
  void write_attention(const std::string& probe, AttentionStack stack, int layer,
                       TensorView<const float> weights);

  // /<group> (e.g. "attention_dev") holding `statistics` (write_head_statistics).
  void write_head_statistics(const std::string& group, const HeadStatistics& statistics);

  void set_status(RunStatus status);

 private:
  struct State;
  explicit RunLog(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// A series read back: columns in their stored order, each with `rows` values.
struct SeriesData {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> values;  // values[c][r]
  int64_t rows = 0;
  // The values of `name`; an Error names the missing column and the ones present.
  const std::vector<double>& column(const std::string& name) const;
};

// Everything of a run file but attention maps and diagnostics (read those with h5::File).
struct RunContents {
  RunInfo info;
  RunStatus status = RunStatus::running;
  int64_t schema_version = 0;
  ConfigEntries config;  // values as text, numbers printed back
  SeriesData train;
  SeriesData eval;
  std::map<std::string, double> summary_numbers;
  std::map<std::string, std::string> summary_texts;
  // Series a kill left half-defined (Series::damage(): the group and what it holds); their rows
  // are not in train/eval. A resume drops them and records it in `repairs`.
  std::vector<std::string> damaged;
  std::vector<std::string> repairs;  // the root attribute `repairs`
  // The step of the parameters each /eval_<split> group scored (eval.decode_splits, `attnlab
  // eval`), by split; a group a kill left without its step is not here.
  std::map<std::string, int64_t> decoded_splits;

  // eval.decode_splits that a completed run has not yet decoded at the step of its final
  // parameters (best_step for eval.checkpoint best, else steps), as `attnlab train` decodes them
  // after completion: a run killed while decoding them is not done, and training it again
  // decodes what is missing. Empty for a run that is not completed.
  std::vector<std::string> pending_splits() const;

  // /summary stop_reason; nullopt when the run has not stopped yet. A name outside the table is
  // an Error naming the value and the names expected.
  std::optional<StopReason> stop_reason() const;
};

// Reads a run file (read only, without a lock: works while the run writes it). Series hold their
// complete rows. A file that is not an attnlab run, or of a newer schema, is an Error naming it.
RunContents read_run(const std::string& path);

}  // namespace attnlab::io
