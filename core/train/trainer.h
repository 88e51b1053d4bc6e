// Trainer: the loop that joins model, optimizer, data and ranks. Deterministic given the seed;
// every rank runs it, only the callbacks decide who logs and saves.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/dist/comm.h"
#include "core/model/transformer.h"
#include "core/optim/adam.h"
#include "core/optim/lr_schedule.h"
#include "core/train/data_source.h"
#include "core/train/stopping.h"

namespace attnlab {

struct TrainRow {
  int64_t step = 0;
  int64_t tokens = 0;  // target tokens seen so far (all ranks)
  double loss = 0.0;   // label-smoothed loss per target token, this step
  double nll = 0.0;    // negative log-likelihood per target token, this step
  double lr = 0.0;
  double grad_norm = 0.0;  // before clipping
  double tokens_per_sec = 0.0;
  double wall_time = 0.0;  // seconds since this process started training
};

struct EvalRow {
  int64_t step = 0;
  double loss = 0.0;  // per target token, no dropout, with the training label smoothing
  double nll = 0.0;
  double ppl = 0.0;        // exp(nll)
  double accuracy = -1.0;  // exact-sequence accuracy of greedy decoding (synthetic tasks)
  double bleu = -1.0;      // dev BLEU (corpus, eval.bleu_during_training); -1 when not computed
};

// kNonFinite: a loss, gradient norm or updated parameter was NaN or infinite; nothing of that
// step was logged or saved, and non_finite() says what and where.
enum class TrainOutcome { kCompleted, kPreempted, kNonFinite };

struct TrainerCallbacks {
  std::function<void(const TrainRow&)> on_step;  // every step
  std::function<void(const EvalRow&)> on_eval;   // every evaluation
  std::function<void(int64_t step)> on_best;     // after an evaluation that is the new best
  // After the evaluation that shrank the learning rate (train.lr.shrink), with the new factor.
  std::function<void(int64_t step, double lr_factor)> on_lr_shrunk;
  std::function<void(int64_t step)> on_checkpoint;  // every train.checkpoint_every steps
  // At step 1 (gradients at the initial parameters) and every log.diagnostics_every steps, with
  // the step's final gradients (summed over ranks, divided by tokens, before clipping) in
  // model().grads().
  std::function<void(int64_t step)> on_gradients;
};

class Trainer {
 public:
  Trainer(const ExperimentConfig& config, std::unique_ptr<DataSource> data, dist::Comm& comm);

  // Trains from the current step to config.train.steps, or until a stop rule ends the run
  // (train.stop.patience, train.max_epochs: kCompleted with stop_reason() saying which), or until
  // stop_requested() is set on any rank (then returns kPreempted after the step in flight), or
  // until a value turns non-finite (kNonFinite, at once: see non_finite()).
  TrainOutcome run(const TrainerCallbacks& callbacks);
  // Dev loss and perplexity; exact-match accuracy of greedy decoding (synthetic tasks) and
  // beam-search BLEU (text) when asked.
  EvalRow evaluate(bool with_accuracy, bool with_bleu);

  const ExperimentConfig& config() const { return config_; }
  Transformer<float>& model() { return model_; }
  Adam& optimizer() { return adam_; }
  DataSource& data() { return *data_; }
  int64_t step() const { return step_; }
  int64_t tokens_seen() const { return tokens_; }
  StopReason stop_reason() const { return stop_reason_; }
  // After run() returned kNonFinite: "step 12: training loss is nan" (the step that failed, the
  // value and what it was).
  const std::string& non_finite() const { return non_finite_; }
  // Seconds spent in run() over every process that trained this run (checkpoints carry it).
  double train_seconds() const;
  void restore_train_seconds(double seconds) { seconds_before_ = seconds; }
  StoppingRule& stopping() { return stopping_; }
  // Restores the counters of a checkpoint (parameters and moments are restored by the caller
  // through model() and optimizer()); then parameters are broadcast from rank 0.
  void restore(int64_t step, int64_t tokens, const DataPosition& position);
  void broadcast_parameters();

  // Set from a signal handler (SIGTERM, SIGUSR1): finish the step, then stop.
  static std::atomic<bool>& stop_requested();

 private:
  // Trains one step; false when a value turned non-finite (non_finite_ says which), with
  // step_ and tokens_ left at the last finite step.
  bool train_step(TrainRow& row, const TrainerCallbacks& callbacks);
  // Every rank's verdict on a value every rank computed from the same reduced sums: the job
  // stops together even if one rank alone saw a non-finite value.
  bool all_finite(bool finite_here);

  ExperimentConfig config_;
  std::unique_ptr<DataSource> data_;
  dist::Comm& comm_;
  Transformer<float> model_;
  Adam adam_;
  LrSchedule schedule_;
  StoppingRule stopping_;
  StopReason stop_reason_ = StopReason::kSteps;
  std::string non_finite_;
  int64_t step_ = 0;
  int64_t tokens_ = 0;
  double seconds_before_ = 0.0;  // trained by earlier processes (restored from a checkpoint)
  std::chrono::steady_clock::time_point started_{};  // this process's run(); epoch if none
};

}  // namespace attnlab
