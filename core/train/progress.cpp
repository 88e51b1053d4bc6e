// Progress lines.
#include "core/train/progress.h"

#include <cmath>

namespace attnlab {

Progress::Progress(std::FILE* out, bool interactive, int64_t total_steps, int64_t start_step,
                   bool may_stop_sooner)
    : out_(out),
      interactive_(interactive),
      total_(total_steps),
      start_step_(start_step),
      may_stop_sooner_(may_stop_sooner),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string Progress::duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = std::llround(seconds);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof(text), "%ldh%02ldm", static_cast<long>(s / 3600),
                  static_cast<long>(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(text, sizeof(text), "%ldm%02lds", static_cast<long>(s / 60),
                  static_cast<long>(s % 60));
  } else {
    std::snprintf(text, sizeof(text), "%lds", static_cast<long>(s));
  }
  return text;
}

std::string Progress::line(const TrainRow& row) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int64_t done = row.step - start_step_;
  const double eta =
      done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - row.step) : NAN;
  char text[256];
  std::snprintf(text, sizeof(text),
                "step %ld/%ld  loss %.4f  lr %.2e  %.0f tok/s  elapsed %s  ETA %s%s",
                static_cast<long>(row.step), static_cast<long>(total_), row.loss, row.lr,
                smoothed_tokens_per_sec_, duration(elapsed).c_str(),
                may_stop_sooner_ && std::isfinite(eta) ? "<=" : "", duration(eta).c_str());
  return text;
}

void Progress::on_step(const TrainRow& row) {
  // Exponential smoothing keeps the throughput readable when step times jitter.
  smoothed_tokens_per_sec_ = smoothed_tokens_per_sec_ == 0.0
                                 ? row.tokens_per_sec
                                 : 0.9 * smoothed_tokens_per_sec_ + 0.1 * row.tokens_per_sec;
  const auto now = std::chrono::steady_clock::now();
  if (interactive_) {
    if (now - last_draw_ < std::chrono::milliseconds(250) && row.step != total_) return;
    last_draw_ = now;
    std::fprintf(out_, "\r\033[K%s", line(row).c_str());
    line_open_ = true;
  } else {
    const int64_t every = total_ >= 10 ? total_ / 10 : 1;
    if (row.step % every != 0 && row.step != total_) return;
    std::fprintf(out_, "%s\n", line(row).c_str());
  }
  std::fflush(out_);
}

void Progress::on_eval(const EvalRow& eval) {
  finish();
  std::fprintf(out_, "eval step %ld: dev loss %.4f  ppl %.3f", static_cast<long>(eval.step),
               eval.loss, eval.ppl);
  if (eval.accuracy >= 0)
    std::fprintf(out_, "  exact-match accuracy %.2f%%", 100.0 * eval.accuracy);
  if (eval.bleu >= 0) std::fprintf(out_, "  BLEU %.2f", eval.bleu);
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void Progress::finish() {
  if (line_open_) std::fprintf(out_, "\n");
  line_open_ = false;
}

}  // namespace attnlab
