// Progress of a training run for a person watching: on a terminal one line rewritten in place
// (step, loss, lr, tokens/s, ETA) a few times a second; in a log file or CI a plain line at every
// tenth of the run, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/train/trainer.h"

namespace attnlab {

class Progress {
 public:
  // `out` is stderr or stdout; interactive = isatty(out). start_step > 0 when resuming.
  // may_stop_sooner: a stop rule (patience, epochs) may end the run before total_steps, so the
  // ETA, which runs to total_steps, is shown as a bound ("ETA <=40m").
  Progress(std::FILE* out, bool interactive, int64_t total_steps, int64_t start_step,
           bool may_stop_sooner = false);
  void on_step(const TrainRow& row);
  void on_eval(const EvalRow& eval);
  // Ends the in-place line (if any) so the next message starts on a fresh line.
  void finish();

  // "1h02m", "3m05s", "42s"
  static std::string duration(double seconds);

 private:
  std::string line(const TrainRow& row) const;
  std::FILE* out_;
  bool interactive_;
  int64_t total_, start_step_;
  bool may_stop_sooner_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool line_open_ = false;
  double smoothed_tokens_per_sec_ = 0.0;
};

}  // namespace attnlab
