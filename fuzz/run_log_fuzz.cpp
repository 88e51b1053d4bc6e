// Run logs (run.h5): the input is written to a file and read with io::read_run, the reader of
// `attnlab inspect`, `attnlab status` and of `attnlab train` deciding whether a run directory is
// done; a run that is not completed is then continued as `train` does: io::RunLog::resume at the
// step of a checkpoint, one more training row appended, and the file read again.
//
// Beyond crashes: every series read has one value per row in each column; a series group a kill
// left half-defined (or whose metadata the input mangled) is reported as damaged naming its group,
// never read as an empty series in silence; and a resume that succeeds leaves a file with no
// damaged series whose repairs are recorded (the seeds hold such groups: fuzz/make_seeds.py).
//
// Only attnlab's own code is instrumented, not the HDF5 library (Debian's), so coverage guides the
// mutations through what attnlab does with what HDF5 returns.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>

#include "core/io/run_log.h"
#include "core/util/check.h"
#include "fuzz/fuzz_common.h"

namespace {

using attnlab::Error;
namespace fuzz = attnlab::fuzz;
namespace io = attnlab::io;

void require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "run_log invariant broken: %s\n", what);
  __builtin_trap();
}

void check_series(const io::SeriesData& series) {
  require(series.values.size() == series.columns.size(), "one value vector per column");
  for (const std::vector<double>& column : series.values) {
    require(static_cast<int64_t>(column.size()) == series.rows, "each column holds rows values");
  }
}

void check_contents(const io::RunContents& run) {
  check_series(run.train);
  check_series(run.eval);
  for (const std::string& damage : run.damaged) {
    require(damage.rfind('/', 0) == 0, "a damaged series is named by its group");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::filesystem::path path = fuzz::fresh_path("run", ".h5");
  fuzz::write_file(path, fuzz::as_text(data, size));
  io::RunContents run;
  try {
    run = io::read_run(path.string());
  } catch (const Error&) {
    std::filesystem::remove(path);
    return 0;
  }
  check_contents(run);
  try {
    // What inspect prints: the last step and the metrics it looks up by name.
    if (run.train.rows > 0) (void)run.train.column("step").back();
    for (const char* name : {"ppl", "accuracy", "bleu"}) {
      for (const std::string& column : run.eval.columns) {
        if (column == name) (void)run.eval.column(name);
      }
    }
  } catch (const Error&) {
  }
  if (run.status != io::RunStatus::completed) {
    bool resumed = false;
    try {
      // Resume at the middle of the logged steps, as from a checkpoint written then.
      int64_t step = 0;
      if (run.train.rows > 0) {
        const double last = run.train.column("step").back();
        if (last >= 0 && last < 1e15) step = static_cast<int64_t>(last) / 2;
      }
      io::RunLog log = io::RunLog::resume(path.string(), step);
      io::Row row;
      for (const std::string& column : run.train.columns) {
        row.emplace_back(column, column == "step" ? static_cast<double>(step + 1) : 1.0);
      }
      if (!row.empty()) log.append_train(row);
      log.set_status(io::RunStatus::completed);
      resumed = true;
    } catch (const Error&) {
    }
    try {
      const io::RunContents after = io::read_run(path.string());
      check_contents(after);
      if (resumed && !run.damaged.empty()) {
        require(after.damaged.empty(), "a resume repairs the damaged series");
        require(!after.repairs.empty(), "a resume records what it repaired");
      }
    } catch (const Error&) {
    }
  }
  std::filesystem::remove(path);
  return 0;
}
