// The run directory and its life cycle: fresh start, resume from the newest valid checkpoint, or
// nothing to do; the HDF5 log written by rank 0 only.
#include "core/train/run.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/config/config.h"
#include "core/decode/average.h"
#include "core/decode/greedy.h"
#include "core/dist/abort.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/run_log.h"
#include "core/model/param_count.h"
#include "core/tensor/blas.h"
#include "core/train/checkpoints.h"
#include "core/train/corpus_source.h"
#include "core/train/diagnostics.h"
#include "core/train/memory_estimate.h"
#include "core/train/precision.h"
#include "core/train/progress.h"
#include "core/train/trainer.h"
#include "core/util/dir_lock.h"
#include "core/util/fault.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

void request_stop(int) { Trainer::stop_requested().store(true); }

// Ctrl-C: the first one stops as SIGTERM does (checkpoint after the step, exit 3); a second one
// quits at once, and the run resumes from its newest checkpoint. Only async-signal-safe calls.
void interrupt(int) {
  static volatile std::sig_atomic_t interrupts = 0;
  if (interrupts++ > 0) {
    constexpr char kQuit[] =
        "\nattnlab: second interrupt: quitting now (rerun to resume from "
        "the newest checkpoint)\n";
    (void)!write(STDERR_FILENO, kQuit, sizeof(kQuit) - 1);
    _exit(kExitInterrupted);
  }
  constexpr char kStop[] =
      "\nattnlab: interrupt: stopping after this step with a checkpoint "
      "(Ctrl-C again to quit at once)\n";
  (void)!write(STDERR_FILENO, kStop, sizeof(kStop) - 1);
  Trainer::stop_requested().store(true);
}

std::unique_ptr<DataSource> make_source(const ExperimentConfig& config) {
  if (config.data.task == DataTask::kCorpus) return make_corpus_source(config);
  return make_synthetic_source(config);
}

// Which tokenizer and how much of the corpus a run used, in /summary and on stderr.
void describe_corpus(const DataSource& data, io::RunLog& log, bool quiet) {
  const auto* corpus = dynamic_cast<const CorpusSource*>(&data);
  if (corpus == nullptr) return;
  log.set_summary("tokenizer_path", corpus->tokenizer().model_path());
  log.set_summary("tokenizer_sha256", corpus->tokenizer().checksum());
  log.set_summary("train_pairs", static_cast<double>(corpus->train_pairs()));
  log.set_summary("train_pairs_skipped", static_cast<double>(corpus->skipped_pairs()));
  log.set_summary("train_pairs_empty", static_cast<double>(corpus->empty_pairs()));
  if (quiet) return;
  std::fprintf(stderr,
               "attnlab: corpus: %ld training pairs (%ld longer than data.max_length and %ld "
               "with an empty side skipped), %ld batches per epoch, tokenizer %s\n",
               static_cast<long>(corpus->train_pairs()), static_cast<long>(corpus->skipped_pairs()),
               static_cast<long>(corpus->empty_pairs()),
               static_cast<long>(corpus->batches_per_epoch()),
               corpus->tokenizer().model_path().c_str());
}

io::Row train_row(const TrainRow& r) {
  return {{"step", static_cast<double>(r.step)},
          {"tokens", static_cast<double>(r.tokens)},
          {"loss", r.loss},
          {"nll", r.nll},
          {"lr", r.lr},
          {"grad_norm", r.grad_norm},
          {"tokens_per_sec", r.tokens_per_sec},
          {"wall_time", r.wall_time}};
}

io::Row eval_row(const EvalRow& r) {
  io::Row row{
      {"step", static_cast<double>(r.step)}, {"loss", r.loss}, {"nll", r.nll}, {"ppl", r.ppl}};
  if (r.accuracy >= 0) row.push_back({"accuracy", r.accuracy});
  if (r.bleu >= 0) row.push_back({"bleu", r.bleu});
  return row;
}

// A completed run is never overwritten: --force picks the first free "<dir>.<n>".
std::string fresh_directory(const std::string& dir) {
  for (int n = 1;; ++n) {
    std::string candidate = dir + "." + std::to_string(n);
    if (!fs::exists(candidate)) return candidate;
  }
}

// One probe: a forward pass over (source, target) and every attention map of it, labelled by
// the data source's pieces.
void write_probe(Transformer<float>& model, const DataSource& data, io::RunLog& log,
                 const std::string& name, const Batch& probe) {
  model.forward(probe, 0.0f, false, 0);
  std::vector<std::string> source, target;
  for (int32_t id : probe.src) source.push_back(data.piece(id));
  for (int32_t id : probe.tgt_in) target.push_back(data.piece(id));
  log.set_attention_probe(name, source, target);
  const ModelConfig& c = model.config();
  for (AttentionStack stack : kAttentionStacks) {
    const int64_t layers = in_decoder(stack) ? c.decoder_layers : c.encoder_layers;
    for (int64_t layer = 0; layer < layers; ++layer) {
      TensorView<const float> probs = model.attention_probs(stack, layer);
      log.write_attention(name, stack, static_cast<int>(layer),
                          probs.reshape({probs.dim(1), probs.dim(2), probs.dim(3)}));
    }
  }
}

// The attention maps of the run log: each sentence of log.attention_probes with the model's own
// greedy translation as the target (probe_<i>), or, without probes, the first dev pair.
void write_attention_probes(Trainer& trainer, io::RunLog& log) {
  Transformer<float>& model = trainer.model();
  const ModelConfig& c = model.config();
  const DataSource& data = trainer.data();
  const std::vector<std::string>& texts = trainer.config().log.attention_probes;
  for (size_t i = 0; i < texts.size(); ++i) {
    Batch probe;
    probe.size = 1;
    probe.src = data.encode_source(texts[i], c.max_positions);
    probe.src_length = static_cast<int64_t>(probe.src.size());
    // The decoder input is bos + output and must fit max_positions too.
    const int64_t longest = std::min<int64_t>(
        probe.src_length + trainer.config().eval.max_len_offset, c.max_positions - 1);
    const std::vector<int32_t> output = greedy_decode(model, probe, longest).front();
    probe.tgt_in = {c.bos_id};
    probe.tgt_in.insert(probe.tgt_in.end(), output.begin(), output.end());
    probe.tgt_out = output;
    probe.tgt_out.push_back(c.eos_id);
    probe.tgt_length = static_cast<int64_t>(probe.tgt_in.size());
    write_probe(model, data, log, "probe_" + std::to_string(i), probe);
  }
  if (!texts.empty()) return;
  const auto& batches = data.dev_batches();
  if (batches.empty()) return;
  const Batch& first = batches.front();
  Batch probe;
  probe.size = 1;
  probe.src_length = first.src_length;
  probe.tgt_length = first.tgt_length;
  probe.src.assign(first.src.begin(), first.src.begin() + first.src_length);
  probe.tgt_in.assign(first.tgt_in.begin(), first.tgt_in.begin() + first.tgt_length);
  probe.tgt_out.assign(first.tgt_out.begin(), first.tgt_out.begin() + first.tgt_length);
  // Trim padding so the maps are (H, real tokens, real tokens).
  while (probe.src_length > 1 && probe.src[static_cast<size_t>(probe.src_length - 1)] == c.pad_id) {
    probe.src.pop_back();
    --probe.src_length;
  }
  while (probe.tgt_length > 1 &&
         probe.tgt_out[static_cast<size_t>(probe.tgt_length - 1)] == c.pad_id) {
    probe.tgt_in.pop_back();
    probe.tgt_out.pop_back();
    --probe.tgt_length;
  }
  write_probe(model, data, log, "probe_0", probe);
}

// Every attention block measured over the whole dev set (teacher forcing, no dropout) with the
// final parameters: /attention_dev, and how concentrated decoder-encoder attention is as the
// summary's dev_cross_attention_entropy (relative to uniform; a probe is one sentence).
void write_dev_attention(Trainer& trainer, io::RunLog& log, int64_t step) {
  const std::vector<Batch>& dev = trainer.data().dev_batches();
  if (dev.empty()) return;
  const AttentionStatistics stats = attention_statistics(trainer.model(), dev);
  log.write_head_statistics("attention_dev", head_statistics(stats, step));
  const double cross = mean_cross_attention_relative_entropy(stats);
  if (!std::isnan(cross)) log.set_summary("dev_cross_attention_entropy", cross);
}

// The parameters the final evaluation scores (eval.checkpoint, eval.average_last): rank 0 reads
// them into the model and every rank receives them; returns what was loaded, for the summary.
// With eval.checkpoint newest and no averaging the model keeps its trained parameters.
struct FinalParameters {
  std::string description;  // "newest (step 800)", "best (step 600)", "average of steps ..."
  int64_t step = 0;         // the step of the parameters (the newest one when averaged)
  io::FinalCheckpoint kind = io::FinalCheckpoint::kNewest;
  // Not the parameters of any one evaluation.
  bool averaged() const { return kind == io::FinalCheckpoint::kAverage; }
};

FinalParameters load_final_parameters(Trainer& trainer, const std::string& dir, bool lead) {
  const EvalConfig& eval = trainer.config().eval;
  Transformer<float>& model = trainer.model();
  FinalParameters chosen{"newest (step " + std::to_string(trainer.step()) + ")", trainer.step()};
  const int64_t best_step = trainer.stopping().state().best_step;
  if (eval.checkpoint == EvalCheckpoint::kBest && best_step > 0 && best_step != trainer.step()) {
    if (lead)
      read_checkpoint_params(best_checkpoint_path(dir), model.table(), model.params().data());
    chosen = {"best (step " + std::to_string(best_step) + ")", best_step,
              io::FinalCheckpoint::kBest};
  } else if (eval.checkpoint == EvalCheckpoint::kBest) {
    chosen.description = "best (step " + std::to_string(trainer.step()) + ", the newest)";
    chosen.kind = io::FinalCheckpoint::kBest;
  } else if (eval.average_last >= 1) {
    std::string steps;
    if (lead) {
      const std::vector<std::string> paths = last_checkpoints(dir, eval.average_last);
      average_checkpoints(paths, model.table(), model.params().data());
      for (const std::string& path : paths) {
        steps += (steps.empty() ? "" : ", ") + std::to_string(checkpoint_step(path));
      }
    }
    chosen.description =
        "average of " + std::to_string(eval.average_last) + " (steps " + steps + ")";
    chosen.kind = io::FinalCheckpoint::kAverage;
  } else {
    return chosen;
  }
  trainer.broadcast_parameters();
  return chosen;
}

void write_summary(Trainer& trainer, io::RunLog& log, const EvalRow& last) {
  const ModelConfig& c = trainer.model().config();
  int64_t total = 0;
  for (const ComponentCount& count : parameter_counts(c)) {
    log.set_summary("params." + count.component, static_cast<double>(count.params));
    total += count.params;
  }
  log.set_summary("params", static_cast<double>(total));
  log.set_summary("steps", static_cast<double>(trainer.step()));
  log.set_summary("train_tokens", static_cast<double>(trainer.tokens_seen()));
  log.set_summary("train_seconds", trainer.train_seconds());
  log.set_stop_reason(trainer.stop_reason());
  log.set_summary("epochs", trainer.data().epochs());
  const StopState& stopping = trainer.stopping().state();
  if (stopping.best_step > 0) {
    log.set_summary("best_step", static_cast<double>(stopping.best_step));
    log.set_summary("best_dev_loss", stopping.best_loss);
  }
  if (trainer.config().train.lr.shrink_patience > 0) {
    log.set_summary("lr_factor", stopping.lr_factor);
  }
  log.set_summary("final_dev_loss", last.loss);
  log.set_summary("final_dev_nll", last.nll);
  log.set_summary("final_dev_ppl", last.ppl);
  if (last.accuracy >= 0) log.set_summary("final_dev_accuracy", last.accuracy);
  if (last.bleu >= 0) log.set_summary("final_dev_bleu", last.bleu);
  // Counted FLOPs: 6 x matmul multiply-adds per target token at the dev set's mean lengths.
  const auto& batches = trainer.data().dev_batches();
  if (!batches.empty()) {
    const double flops =
        training_flops_per_target_token(c, batches.front().src_length, batches.front().tgt_length);
    log.set_summary("train_flops", flops * static_cast<double>(trainer.tokens_seen()));
  }
  log.set_summary("openblas_core", blas::core_name());
  log.set_summary("matmul_engine", matmul_engine());
  log.set_summary("omp_wait_policy", blas::wait_policy());
}

// How a run starts. Rank 0 decides from the run directory and broadcasts it, so that every rank
// takes the same path.
enum class StartKind : int64_t { kFresh = 0, kResume = 1, kAlreadyCompleted = 2 };

struct RunStart {
  StartKind kind = StartKind::kFresh;
  std::string dir;              // the run directory (a new <out>.N when --force restarts)
  std::string checkpoint_path;  // kResume: the newest valid checkpoint
  bool new_log = false;         // rank 0: run.h5 was unreadable, is kept aside, and starts anew
  // Rank 0 holds the run directory's lock until it exits: a second trainer on it stops here.
  std::vector<std::unique_ptr<DirectoryLock>> locks;
};

// Rank 0's look at the run directory: a completed run is left alone (or, with --force, started
// again in a new directory), anything else resumes from its newest valid checkpoint or starts.
void inspect_run_directory(const RunRequest& request, RunStart& start) {
  const std::string log_path = start.dir + "/run.h5";
  fs::create_directories(start.dir);
  // A run directory that cannot be written (a read-only mount, an archive, no permission): a
  // completed run has nothing to write, so it is "nothing to do" without the lock, which needs a
  // writable lock file; anything else is refused here, before any write fails half-way.
  if (::access(start.dir.c_str(), W_OK) != 0 && (errno == EROFS || errno == EACCES)) {
    const std::string reason = std::strerror(errno);
    if (!request.force && fs::exists(log_path) &&
        io::read_run(log_path).status == io::RunStatus::completed) {
      start.kind = StartKind::kAlreadyCompleted;
      return;
    }
    throw Error(start.dir + " cannot be written (" + reason + ")" +
                (request.force ? "" : " and holds no completed run") +
                ": training writes its run log and checkpoints there; give a writable --out");
  }
  start.locks.push_back(std::make_unique<DirectoryLock>(start.dir));
  if (!fs::exists(log_path)) return;
  // A log that cannot be read, in a directory with an intact checkpoint, is kept aside; the run
  // resumes from that checkpoint with a new log (the earlier series stay in the kept file only).
  std::optional<io::RunContents> existing;
  try {
    existing = io::read_run(log_path);
  } catch (const Error& error) {
    // Without a checkpoint of its own this may not be a run of ours at all: leave it.
    if (newest_valid_checkpoint(start.dir, request.config.model, nullptr).empty()) throw;
    const std::string kept = fresh_directory(log_path + ".damaged");
    fs::rename(log_path, kept);
    std::fprintf(stderr,
                 "attnlab: %s cannot be read (%s); it is kept as %s and the run resumes from its "
                 "newest intact checkpoint with a new log\n",
                 log_path.c_str(), error.what(), kept.c_str());
    start.new_log = true;
  }
  if (existing && existing->status == io::RunStatus::completed) {
    if (!request.force) {
      start.kind = StartKind::kAlreadyCompleted;
      return;
    }
    start.dir = fresh_directory(start.dir);
    fs::create_directories(start.dir);
    start.locks.push_back(std::make_unique<DirectoryLock>(start.dir));
    return;
  }
  std::string warning;
  start.checkpoint_path = newest_valid_checkpoint(start.dir, request.config.model, &warning);
  if (!warning.empty()) std::fprintf(stderr, "attnlab: %s\n", warning.c_str());
  start.kind = start.checkpoint_path.empty() ? StartKind::kFresh : StartKind::kResume;
  if (start.checkpoint_path.empty() && fs::exists(log_path)) {
    // Killed before its first checkpoint: keep the old log beside the new one.
    const std::string kept = fresh_directory(log_path);
    fs::rename(log_path, kept);
    std::fprintf(stderr,
                 "attnlab: %s has no checkpoint to resume from; starting again (the old log is "
                 "kept as %s)\n",
                 start.dir.c_str(), kept.c_str());
  }
}

RunStart decide_start(const RunRequest& request, dist::Comm& comm) {
  RunStart start;
  start.dir = request.out_dir;
  if (comm.rank() == 0) inspect_run_directory(request, start);
  int64_t kind = static_cast<int64_t>(start.kind);
  comm.broadcast(&kind, 1, 0);
  start.kind = static_cast<StartKind>(kind);
  comm.broadcast_string(start.dir, 0);
  comm.broadcast_string(start.checkpoint_path, 0);
  return start;
}

// Restores the trainer from the start's checkpoint (every rank) and opens rank 0's log: the
// resumed run.h5 cut back to the checkpoint's step, or a new one. Other ranks get no log.
std::unique_ptr<io::RunLog> restore_and_open_log(const RunRequest& request, const RunStart& start,
                                                 Trainer& trainer, dist::Comm& comm) {
  const bool lead = comm.rank() == 0;
  std::unique_ptr<io::RunLog> log;
  const std::string log_path = start.dir + "/run.h5";
  if (start.kind == StartKind::kResume) {
    const CheckpointState state = load_checkpoint(start.checkpoint_path, trainer);
    trainer.restore(state.step, state.tokens, state.position);
    trainer.stopping().restore(state.stopping);
    trainer.restore_train_seconds(state.train_seconds);
    if (lead && !start.new_log) {
      log = std::make_unique<io::RunLog>(io::RunLog::resume(log_path, state.step));
    }
    if (lead) {
      std::fprintf(stderr, "attnlab: resuming %s from step %ld\n", start.dir.c_str(),
                   static_cast<long>(state.step));
    }
  }
  if (lead && !log) {
    const ExperimentConfig& config = request.config;
    io::RunInfo info;
    info.run_id = request.run_id.empty() ? fs::path(start.dir).filename().string() : request.run_id;
    info.sweep_id = request.sweep_id;
    info.world_size = comm.size();
    info.threads = config.cluster.threads_per_rank;
    info.seed = static_cast<int64_t>(config.seed);
    info.config_yaml = config::dump_yaml(config, false);
    info.command_line = request.command_line;
    log = std::make_unique<io::RunLog>(io::RunLog::create(log_path, info, config::flatten(config)));
  }
  return log;
}

// What the training loop reports, and where it goes: rank 0 logs steps, evaluations and
// diagnostics to run.h5, prints progress, and writes checkpoints; every rank keeps the last
// evaluation (the final summary may reuse it).
struct RunReporting {
  const RunRequest& request;
  const std::string& dir;
  Trainer& trainer;
  io::RunLog* log;  // rank 0 only
  Progress& progress;
  bool lead;
  EvalRow last_eval;

  // Attention entropy and logit variance on the first dev batch (at initialisation and every
  // log.diagnostics_every steps).
  void log_attention(int64_t step) const {
    const auto& dev = trainer.data().dev_batches();
    if (!lead || trainer.config().log.diagnostics_every <= 0 || dev.empty()) return;
    const AttentionStatistics stats = attention_statistics(trainer.model(), dev.front());
    const std::vector<int64_t> shape{static_cast<int64_t>(stats.labels.size()), stats.heads};
    log->append_diagnostic("attention_entropy", step, shape, stats.entropy, stats.labels);
    log->append_diagnostic("attention_logit_variance", step, shape, stats.logit_variance,
                           stats.labels);
  }

  TrainerCallbacks callbacks() {
    const ExperimentConfig& config = trainer.config();
    TrainerCallbacks callbacks;
    callbacks.on_step = [this, &config](const TrainRow& row) {
      if (lead && config.log.every > 0 &&
          (row.step % config.log.every == 0 || row.step == config.train.steps)) {
        log->append_train(train_row(row));
      }
      if (lead && !request.quiet) progress.on_step(row);
      const int64_t diagnostics_every = config.log.diagnostics_every;
      if (diagnostics_every > 0 && row.step % diagnostics_every == 0) log_attention(row.step);
    };
    callbacks.on_eval = [this](const EvalRow& row) {
      last_eval = row;
      if (!lead) return;
      log->append_eval(eval_row(row));
      if (!request.quiet) progress.on_eval(row);
    };
    callbacks.on_best = [this](int64_t) {
      if (lead) save_best_checkpoint(dir, trainer);
    };
    callbacks.on_lr_shrunk = [this, &config](int64_t step, double lr_factor) {
      if (!lead || request.quiet) return;
      std::fprintf(stderr,
                   "attnlab: step %ld: %ld dev evaluations without a gain of more than %g: "
                   "learning rate x%g, now %g of the schedule\n",
                   static_cast<long>(step), static_cast<long>(config.train.lr.shrink_patience),
                   config.train.stop.min_delta, config.train.lr.shrink, lr_factor);
    };
    callbacks.on_checkpoint = [this, &config](int64_t) {
      if (lead) save_checkpoint(dir, trainer, config.train.keep_checkpoints);
    };
    // Per-layer gradient norms at the diagnostics interval.
    callbacks.on_gradients = [this](int64_t step) {
      if (!lead) return;
      const LayerValues norms = layer_gradient_norms(trainer.model());
      log->append_diagnostic("grad_norm", step, {static_cast<int64_t>(norms.values.size())},
                             norms.values, norms.labels);
      const LayerValues scores = attention_score_gradient_norms(trainer.model());
      log->append_diagnostic("qk_grad_norm", step, {static_cast<int64_t>(scores.values.size())},
                             scores.values, scores.labels);
    };
    return callbacks;
  }
};

// After the loop: the final evaluation on the parameters eval.checkpoint / eval.average_last
// choose, the summary and attention maps, and the completed status (rank 0), in the order the
// fault points name so that a kill between any two resumes to the same summary.
void finish_run(RunReporting& reporting) {
  Trainer& trainer = reporting.trainer;
  const bool lead = reporting.lead;
  if (lead && !reporting.request.quiet && trainer.stop_reason() != StopReason::kSteps) {
    const StopState& stopping = trainer.stopping().state();
    std::fprintf(
        stderr,
        "attnlab: stopped by %s at step %ld (%.2f epochs); best dev loss %.4f at step %ld\n",
        io::stop_reason_names().name(trainer.stop_reason()).c_str(),
        static_cast<long>(trainer.step()), trainer.data().epochs(), stopping.best_loss,
        static_cast<long>(stopping.best_step));
  }
  fault_point("final_checkpoint");
  // The evaluation of the last step is reused when it scored those very parameters; a run
  // resumed from its final checkpoint has none and evaluates again.
  const FinalParameters final_parameters = load_final_parameters(trainer, reporting.dir, lead);
  const EvalConfig& eval_config = trainer.config().eval;
  const bool final_bleu = eval_config.final_bleu || eval_config.bleu_during_training;
  const EvalRow& last_eval = reporting.last_eval;
  EvalRow final_eval = last_eval;
  if (final_parameters.step != trainer.step() || last_eval.step != trainer.step() ||
      final_parameters.averaged() ||
      (final_bleu && last_eval.bleu < 0 && trainer.data().has_text())) {
    final_eval = trainer.evaluate(true, final_bleu);
    final_eval.step = final_parameters.step;
  }
  fault_point("final_evaluation");
  if (!lead) return;
  io::RunLog& log = *reporting.log;
  write_summary(trainer, log, final_eval);
  log.set_summary("final_checkpoint", final_parameters.description);
  log.set_summary("final_checkpoint_kind",
                  io::final_checkpoint_names().name(final_parameters.kind));
  log.set_summary("final_checkpoint_step", static_cast<double>(final_parameters.step));
  write_attention_probes(trainer, log);
  write_dev_attention(trainer, log, final_parameters.step);
  fault_point("summary");
  log.set_status(io::RunStatus::completed);
  std::printf("run %s completed (%s): dev ppl %.4f from the %s parameters", reporting.dir.c_str(),
              io::stop_reason_names().name(trainer.stop_reason()).c_str(), final_eval.ppl,
              final_parameters.description.c_str());
  if (final_eval.accuracy >= 0)
    std::printf(", exact-match accuracy %.2f%%", 100.0 * final_eval.accuracy);
  if (final_eval.bleu >= 0) std::printf(", dev BLEU %.2f", final_eval.bleu);
  std::printf("\nlog: %s/run.h5\n", reporting.dir.c_str());
}

// An error ended training: the run's status says failed and /summary failure says why, for
// `attnlab status`. The error itself goes on to the caller; a second one while recording it (a
// full disk) is reported here and does not replace it.
void record_failure(io::RunLog& log, const std::string& what) {
  try {
    log.set_status(io::RunStatus::failed);
    log.set_summary(io::kFailureKey, what);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attnlab: warning: could not record the failure in %s: %s\n",
                 log.path().c_str(), error.what());
  }
}

// A value turned non-finite: the run fails at once. Rank 0 marks the newest checkpoint (written
// after a finite step: every step before it was checked) as the one to resume or inspect, records
// the reason in /summary and the status failed; every rank then exits 1 together.
int record_non_finite(Trainer& trainer, const std::string& dir, io::RunLog* log, dist::Comm& comm) {
  if (comm.rank() == 0) {
    const io::CheckpointDir checkpoints(dir + "/ckpt");
    const std::vector<int64_t> steps = checkpoints.steps();
    std::string kept = "none";
    std::string where_to_resume = "no checkpoint was written before it; a rerun starts afresh";
    if (!steps.empty()) {
      checkpoints.keep(steps.back());
      kept = checkpoints.path_for(steps.back());
      where_to_resume = "the last finite checkpoint is " + kept + " (kept), where a rerun resumes";
      log->set_summary("last_finite_step", static_cast<double>(steps.back()));
    }
    log->set_stop_reason(StopReason::kNonFinite);
    log->set_summary(io::kFailureKey, "non-finite value at " + trainer.non_finite());
    log->set_summary("last_finite_checkpoint", kept);
    log->set_status(io::RunStatus::failed);
    std::fprintf(stderr,
                 "attnlab: error: non-finite value at %s; the run stopped (status failed): %s. "
                 "Lower the learning rate (train.lr.*) or check the config before rerunning\n",
                 trainer.non_finite().c_str(), where_to_resume.c_str());
  }
  // The other ranks wait until the failure is recorded: a launcher that ends every rank when one
  // exits non-zero must not cut rank 0's writes short.
  comm.barrier();
  return kExitFailure;
}

}  // namespace

void install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
  struct sigaction on_interrupt {};
  on_interrupt.sa_handler = interrupt;
  sigemptyset(&on_interrupt.sa_mask);
  sigaction(SIGINT, &on_interrupt, nullptr);
}

int run_training(const RunRequest& request, dist::Comm& comm) {
  const ExperimentConfig& config = request.config;
  config::validate(config);
  check_memory_fits(config);
  const bool lead = comm.rank() == 0;
  const int threads = static_cast<int>(config.cluster.threads_per_rank);
  blas::set_threads(threads);
  // attnlab train has checked the CPU before MPI started; this sets it for every caller (plan's
  // calibration included).
  use_precision(config.train.precision, "train.precision");

  RunStart start = decide_start(request, comm);
  if (start.kind == StartKind::kAlreadyCompleted) {
    if (lead) {
      std::printf("%s is already completed; nothing to train (--force starts it again)\n",
                  start.dir.c_str());
      if (request.after_completion) request.after_completion(start.dir);
    }
    return kExitOk;
  }
  if (lead) {
    fs::create_directories(start.dir + "/ckpt");
    const std::string kernel_note = blas::kernel_warning();
    if (!kernel_note.empty()) std::fprintf(stderr, "attnlab: warning: %s\n", kernel_note.c_str());
  }

  Trainer trainer(config, make_source(config), comm);
  const std::unique_ptr<io::RunLog> log = restore_and_open_log(request, start, trainer, comm);
  if (lead) describe_corpus(trainer.data(), *log, request.quiet);

  const bool interactive = isatty(fileno(stderr)) != 0;
  Progress progress(stderr, interactive, config.train.steps, trainer.step(),
                    config.train.may_stop_sooner());
  RunReporting reporting{request, start.dir, trainer, log.get(), progress, lead, {}};
  const TrainerCallbacks callbacks = reporting.callbacks();
  if (trainer.step() == 0) reporting.log_attention(0);
  if (lead && !request.quiet) {
    std::fprintf(stderr, "attnlab: %s, %d thread(s) per rank (OMP_WAIT_POLICY=%s), %d rank(s)\n",
                 matmul_engine().c_str(), threads, blas::wait_policy().c_str(), comm.size());
  }
  install_stop_signals();
  TrainOutcome outcome;
  try {
    outcome = trainer.run(callbacks);
  } catch (...) {
    if (log) record_failure(*log, dist::describe_current_exception());
    throw;
  }
  progress.finish();
  if (outcome == TrainOutcome::kNonFinite)
    return record_non_finite(trainer, start.dir, log.get(), comm);
  if (outcome == TrainOutcome::kPreempted) {
    if (lead) {
      log->set_stop_reason(StopReason::kPreempted);
      log->set_status(io::RunStatus::preempted);
      std::fprintf(stderr, "attnlab: stopped at step %ld after a checkpoint; rerun to resume\n",
                   static_cast<long>(trainer.step()));
    }
    // No rank leaves before the lead has recorded the stop: a launcher that ends the whole step
    // when one task exits non-zero (srun --kill-on-bad-exit) must not cut that short.
    comm.barrier();
    return kExitStopped;
  }
  finish_run(reporting);
  if (lead && request.after_completion) request.after_completion(start.dir);
  return kExitOk;
}

}  // namespace attnlab
