// The training loop: global batch -> this rank's share -> forward/backward -> gradient sum over
// ranks -> divide by the global target-token count -> clip -> Adam with the scheduled rate.
#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/data/batcher.h"
#include "core/decode/beam.h"
#include "core/decode/greedy.h"
#include "core/metrics/bleu.h"
#include "core/model/decode_buffers.h"
#include "core/util/fault.h"
#include "core/util/rng.h"

namespace attnlab {
namespace {

AdamOptions adam_options(const OptimizerConfig& c) { return {c.beta1, c.beta2, c.eps}; }

LrSchedule schedule_from(const ExperimentConfig& c) {
  LrSchedule s;
  s.kind = c.train.lr.schedule;
  s.warmup = c.train.lr.warmup;
  s.scale = c.train.lr.scale;
  s.peak = c.train.lr.peak;
  s.d_model = c.model.d_model;
  s.total = c.train.steps;
  s.cooldown = c.train.lr.cooldown;
  return s;
}

// One evaluation's sums over this rank's share of the dev batches, then over every rank.
struct EvalSums {
  double loss = 0.0, nll = 0.0, tokens = 0.0;  // label-smoothed loss, NLL, target tokens
  double correct = 0.0, sentences = 0.0;       // exact-match decoding (synthetic tasks)

  void allreduce(dist::Comm& comm) {
    double values[5] = {loss, nll, tokens, correct, sentences};
    comm.allreduce_sum(values, 5);
    loss = values[0];
    nll = values[1];
    tokens = values[2];
    correct = values[3];
    sentences = values[4];
  }
};

// Corpus BLEU is computed from n-gram counts summed over every sentence, so the ranks sum their
// counts before the score.
void allreduce(dist::Comm& comm, BleuStats& stats) {
  int64_t counts[2 * kBleuMaxOrder + 2];
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    counts[n] = stats.matches[static_cast<size_t>(n)];
    counts[kBleuMaxOrder + n] = stats.totals[static_cast<size_t>(n)];
  }
  counts[2 * kBleuMaxOrder] = stats.hyp_length;
  counts[2 * kBleuMaxOrder + 1] = stats.ref_length;
  comm.allreduce_sum(counts, 2 * kBleuMaxOrder + 2);
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    stats.matches[static_cast<size_t>(n)] = counts[n];
    stats.totals[static_cast<size_t>(n)] = counts[kBleuMaxOrder + n];
  }
  stats.hyp_length = counts[2 * kBleuMaxOrder];
  stats.ref_length = counts[2 * kBleuMaxOrder + 1];
}

std::string format_value(double value) {
  if (std::isnan(value)) return "nan";  // not "-nan": the sign of a NaN means nothing here
  std::ostringstream text;
  text << std::setprecision(6) << value;
  return text.str();
}

// "step 12: training loss is nan (gradient norm inf)"
std::string describe_non_finite(int64_t step, double loss, double grad_norm) {
  const std::string where = "step " + std::to_string(step) + ": ";
  if (!std::isfinite(loss)) {
    return where + "training loss is " + format_value(loss) + " (gradient norm " +
           format_value(grad_norm) + ")";
  }
  return where + "gradient norm is " + format_value(grad_norm) + " (training loss " +
         format_value(loss) + ")";
}

// "encoder.layers.0.fc1.weight[17] = nan", or "" when every parameter is finite.
std::string first_non_finite_parameter(Transformer<float>& model) {
  const float* params = model.params().data();
  const int64_t size = model.table().size();
  int64_t bad = size;
#pragma omp parallel for reduction(min : bad) schedule(guided)
  for (int64_t i = 0; i < size; ++i) {
    if (!std::isfinite(params[i]) && i < bad) bad = i;
  }
  if (bad == size) return "";
  for (const ParamEntry& entry : model.table().entries()) {
    if (bad >= entry.offset && bad < entry.offset + entry.shape.numel()) {
      return entry.name + "[" + std::to_string(bad - entry.offset) +
             "] = " + format_value(params[bad]);
    }
  }
  return "parameter " + std::to_string(bad) + " = " + format_value(params[bad]);
}

}  // namespace

std::atomic<bool>& Trainer::stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

Trainer::Trainer(const ExperimentConfig& config, std::unique_ptr<DataSource> data, dist::Comm& comm)
    : config_(config),
      data_(std::move(data)),
      comm_(comm),
      model_(config.model, config.seed),
      adam_(model_.table().size(), adam_options(config.train.optimizer)),
      schedule_(schedule_from(config)),
      stopping_(config.train) {
  CHECK(config.train.accumulate >= 1)
      << "train.accumulate must be >= 1, got " << config.train.accumulate;
  broadcast_parameters();
}

void Trainer::broadcast_parameters() {
  comm_.broadcast(model_.params().data(), model_.params().size(), 0);
}

void Trainer::restore(int64_t step, int64_t tokens, const DataPosition& position) {
  step_ = step;
  tokens_ = tokens;
  adam_.set_steps_taken(step);
  data_->seek(position);
  broadcast_parameters();
}

bool Trainer::train_step(TrainRow& row, const TrainerCallbacks& callbacks) {
  const int rank = comm_.rank(), world = comm_.size();
  const int64_t size = model_.table().size();
  model_.zero_grads();
  // Sums over micro-batches and ranks: loss, nll, target tokens.
  double sums[3] = {0.0, 0.0, 0.0};
  for (int64_t micro = 0; micro < config_.train.accumulate; ++micro) {
    const Batch global = data_->next_batch();
    const Batch local = split_for_rank(global, rank, world, config_.model.pad_id);
    if (local.size == 0) continue;  // fewer sentences than ranks: this rank adds nothing
    const uint64_t dropout_seed =
        rng_key(config_.seed, static_cast<uint64_t>(step_ + 1), static_cast<uint64_t>(rank),
                static_cast<uint64_t>(micro));
    const ops::LossSums s = model_.forward(local, static_cast<float>(config_.train.label_smoothing),
                                           true, dropout_seed);
    // Gradient of the summed loss; divided by the global token count once it is known.
    model_.backward();
    sums[0] += s.loss;
    sums[1] += s.nll;
    sums[2] += static_cast<double>(s.tokens);
  }
  comm_.allreduce_sum(sums, 3);
  comm_.allreduce_sum(model_.grads().data(), model_.grads().size());
  const double tokens = sums[2];
  CHECK(tokens > 0) << "step " << step_ + 1 << " has no target tokens";
  model_.scale_grads(static_cast<float>(1.0 / tokens));
  float* grads = model_.grads().data();
  const int64_t every = config_.log.diagnostics_every;
  // Step 1 too: its gradients are taken at the initial parameters.
  if (every > 0 && (step_ == 0 || (step_ + 1) % every == 0) && callbacks.on_gradients) {
    callbacks.on_gradients(step_ + 1);
  }
  row.grad_norm = clip_global_norm(grads, size, config_.train.clip);
  row.loss = sums[0] / tokens;
  row.nll = sums[1] / tokens;
  // Loss and norm come from allreduced sums that every rank holds alike, so every rank reaches
  // the same verdict without another collective; a non-finite one is never stepped on.
  const int64_t step = step_ + 1;
  if (!std::isfinite(row.loss) || !std::isfinite(row.grad_norm)) {
    non_finite_ = describe_non_finite(step, row.loss, row.grad_norm);
    return false;
  }
  row.lr = schedule_.rate(step) * stopping_.state().lr_factor;
  adam_.step(model_.params().data(), grads, row.lr);
  // A finite gradient can still give a non-finite update (Adam's eps 0 with a zero second
  // moment, an infinite rate): those parameters must not reach a checkpoint.
  const std::string broken = first_non_finite_parameter(model_);
  if (!all_finite(broken.empty())) {
    non_finite_ =
        "step " + std::to_string(step) + ": the update at learning rate " + format_value(row.lr) +
        " made parameters non-finite (first: " + (broken.empty() ? "on another rank" : broken) +
        ")";
    return false;
  }
  step_ = step;
  tokens_ += static_cast<int64_t>(tokens);
  row.step = step_;
  row.tokens = tokens_;
  return true;
}

bool Trainer::all_finite(bool finite_here) {
  int64_t broken = finite_here ? 0 : 1;
  comm_.allreduce_sum(&broken, 1);
  return broken == 0;
}

double Trainer::train_seconds() const {
  if (started_ == std::chrono::steady_clock::time_point{}) return seconds_before_;
  return seconds_before_ +
         std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

namespace {

// The collective timeout while training: cluster.collective_timeout, raised to ten times the
// median step of this process (a rank that does not arrive within it is stopped or hung), and
// off again once run() returns (the final evaluation and the summary are rank 0's alone).
class CollectiveWatch {
 public:
  CollectiveWatch(dist::Comm& comm, double floor_seconds) : comm_(comm), floor_(floor_seconds) {
    comm_.set_collective_timeout(floor_);
  }
  CollectiveWatch(const CollectiveWatch&) = delete;
  CollectiveWatch& operator=(const CollectiveWatch&) = delete;
  ~CollectiveWatch() { comm_.set_collective_timeout(0.0); }

  void step_took(double seconds) {
    if (floor_ <= 0) return;
    constexpr size_t kRecent = 101;
    if (recent_.size() == kRecent) recent_.erase(recent_.begin());
    recent_.push_back(seconds);
    std::vector<double> sorted = recent_;
    const auto middle = sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2);
    std::nth_element(sorted.begin(), middle, sorted.end());
    comm_.set_collective_timeout(std::max(floor_, 10.0 * *middle));
  }

 private:
  dist::Comm& comm_;
  double floor_;
  std::vector<double> recent_;
};

}  // namespace

TrainOutcome Trainer::run(const TrainerCallbacks& callbacks) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  started_ = start;
  auto last = start;
  CollectiveWatch watch(comm_, config_.cluster.collective_timeout);
  stop_reason_ = StopReason::kSteps;
  // A run resumed from the checkpoint a stop rule ended it at has nothing left to train.
  if (step_ > 0 && stopping_.patience_exhausted()) {
    stop_reason_ = StopReason::kPatience;
    return TrainOutcome::kCompleted;
  }
  if (step_ > 0 && step_ < config_.train.steps &&
      stopping_.epochs_done(static_cast<int64_t>(data_->epochs()))) {
    stop_reason_ = StopReason::kEpochs;
    return TrainOutcome::kCompleted;
  }
  while (step_ < config_.train.steps) {
    TrainRow row;
    const int64_t tokens_before = tokens_;
    if (!train_step(row, callbacks)) {
      stop_reason_ = StopReason::kNonFinite;
      return TrainOutcome::kNonFinite;
    }
    const auto now = Clock::now();
    const double step_seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    watch.step_took(step_seconds);
    row.wall_time = std::chrono::duration<double>(now - start).count();
    row.tokens_per_sec =
        step_seconds > 0 ? static_cast<double>(tokens_ - tokens_before) / step_seconds : 0.0;
    if (callbacks.on_step) callbacks.on_step(row);
    // Every rank reaches the same decisions: the step count, the data position and the dev loss
    // (reduced over ranks) are the same on all of them.
    bool finished = step_ == config_.train.steps;
    if (!finished && stopping_.epochs_done(static_cast<int64_t>(data_->epochs()))) {
      finished = true;
      stop_reason_ = StopReason::kEpochs;
    }
    if (finished) fault_point("last_step");
    if ((config_.eval.every > 0 && step_ % config_.eval.every == 0) || finished) {
      EvalRow eval = evaluate(true, config_.eval.bleu_during_training);
      // The dev sums are reduced over ranks, so every rank reaches the same verdict.
      if (!std::isfinite(eval.loss)) {
        non_finite_ = "step " + std::to_string(step_) + ": dev loss is " + format_value(eval.loss);
        stop_reason_ = StopReason::kNonFinite;
        return TrainOutcome::kNonFinite;
      }
      if (callbacks.on_eval) callbacks.on_eval(eval);
      const Observation seen = stopping_.observe(step_, eval.loss);
      if (seen.best && callbacks.on_best) callbacks.on_best(step_);
      if (seen.lr_shrunk && callbacks.on_lr_shrunk) {
        callbacks.on_lr_shrunk(step_, stopping_.state().lr_factor);
      }
      if (!finished && stopping_.patience_exhausted()) {
        finished = true;
        stop_reason_ = StopReason::kPatience;
      }
    }
    // Every rank must agree to stop, or one would wait in the next allreduce forever.
    int64_t stop = stop_requested().load() ? 1 : 0;
    comm_.allreduce_sum(&stop, 1);
    const bool checkpoint_due =
        config_.train.checkpoint_every > 0 && step_ % config_.train.checkpoint_every == 0;
    if ((checkpoint_due || finished || stop > 0) && callbacks.on_checkpoint) {
      callbacks.on_checkpoint(step_);
    }
    if (finished) return TrainOutcome::kCompleted;
    if (stop > 0) {
      stop_reason_ = StopReason::kPreempted;
      return TrainOutcome::kPreempted;
    }
  }
  return TrainOutcome::kCompleted;
}

EvalRow Trainer::evaluate(bool with_accuracy, bool with_bleu_requested) {
  const int rank = comm_.rank(), world = comm_.size();
  const auto& batches = data_->dev_batches();
  const auto& references = data_->dev_references();
  // Dev batches are sharded round-robin over ranks and the sums reduced.
  EvalSums sums;
  const bool with_bleu = with_bleu_requested && data_->has_text();
  BleuStats bleu;
  // Every batch's decoder state packs the same weights and makes caches of the same sizes: their
  // buffers serve batch after batch.
  const DecodeBufferReuse reuse_buffers;
  for (size_t b = static_cast<size_t>(rank); b < batches.size(); b += static_cast<size_t>(world)) {
    const ops::LossSums s =
        model_.forward(batches[b], static_cast<float>(config_.train.label_smoothing), false, 0);
    sums.loss += s.loss;
    sums.nll += s.nll;
    sums.tokens += static_cast<double>(s.tokens);
    if (with_bleu) {
      const BeamOptions options{config_.eval.beam, config_.eval.length_penalty,
                                config_.eval.max_len_offset};
      const std::vector<BeamHypothesis> best = beam_decode(model_, batches[b], options);
      for (size_t i = 0; i < best.size(); ++i) {
        bleu += sentence_bleu_stats(data_->detokenize(best[i].tokens),
                                    data_->dev_reference_text()[b][i]);
      }
    }
    // Exact-match accuracy is for synthetic tasks; text is scored with BLEU instead.
    if (!with_accuracy || data_->has_text() || b >= references.size()) continue;
    const int64_t longest = batches[b].tgt_length + 8;
    const auto outputs = greedy_decode(model_, batches[b], longest);
    for (size_t i = 0; i < outputs.size(); ++i) {
      sums.correct += outputs[i] == references[b][i] ? 1.0 : 0.0;
      sums.sentences += 1.0;
    }
  }
  sums.allreduce(comm_);
  if (with_bleu) allreduce(comm_, bleu);
  EvalRow row;
  row.step = step_;
  row.loss = sums.tokens > 0 ? sums.loss / sums.tokens : 0.0;
  row.nll = sums.tokens > 0 ? sums.nll / sums.tokens : 0.0;
  row.ppl = std::exp(row.nll);
  row.accuracy = sums.sentences > 0 ? sums.correct / sums.sentences : -1.0;
  if (with_bleu) row.bleu = compute_bleu(bleu).score;
  return row;
}

}  // namespace attnlab
