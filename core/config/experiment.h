// ExperimentConfig: everything one run needs, as typed structs with defaults (the paper's recipe).
// core/config/ loads it from YAML (strict, `base:` inheritance, --set overrides) and dumps it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/model_config.h"
#include "core/optim/lr_schedule.h"
#include "core/tensor/blas.h"
#include "core/util/enum_names.h"

namespace attnlab {

// What a run trains on: a synthetic sequence task (core/data/synthetic.h) or parallel text.
enum class DataTask { kCopy, kReverse, kSort, kCorpus };
// The names of the tasks (data.task), declared once; to_string and parse_data_task read them.
const EnumNames<DataTask>& data_task_names();
std::string to_string(DataTask task);
DataTask parse_data_task(const std::string& text);

struct SyntheticTaskConfig {
  int64_t symbols = 10;        // distinct content symbols (ids after pad/bos/eos)
  int64_t min_length = 3;      // shortest sequence
  int64_t max_length = 10;     // longest sequence
  int64_t train_size = 20000;  // training examples
  int64_t dev_size = 500;      // held-out examples (disjoint seed stream)
};

struct SplitFiles {
  std::string src;  // line-aligned source text
  std::string tgt;  // line-aligned target text
};

struct TokenizerConfig {
  std::string type = "sentencepiece";  // sentencepiece
  int64_t vocab_size = 8000;           // joint BPE vocabulary
  std::string model;                   // path of the .model; trained beside the data when missing
};

struct DataConfig {
  DataTask task = DataTask::kReverse;
  SyntheticTaskConfig synthetic;
  SplitFiles train, dev, test;  // task: corpus
  TokenizerConfig tokenizer;
  int64_t max_length = 256;  // longer pairs are skipped (and counted)
};

struct OptimizerConfig {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
};

struct LrConfig {
  LrSchedule::Kind schedule = LrSchedule::Kind::kNoam;
  int64_t warmup = 4000;  // warmup steps (noam, inverse_sqrt)
  double scale = 1.0;     // noam: multiplies d_model^-0.5 * min(...)
  double peak = 1e-3;     // constant: the rate; inverse_sqrt, cosine: the rate at the end of warmup
  // A linear cool-down to zero over the last `cooldown` steps of train.steps, on top of any
  // schedule (noam or inverse_sqrt with a cool-down is a fixed budget, like cosine); 0 = none.
  int64_t cooldown = 0;
  // Reduce on plateau (fairseq's --lr-shrink/--lr-patience, Marian's --lr-decay-strategy
  // stalled): after shrink_patience dev evaluations without a gain (StopConfig), the schedule's
  // rate is multiplied by `shrink` from then on; 0 = off. No shrink happens at an evaluation
  // before step shrink_after (Marian's --lr-decay-start): early on, a few stalled evaluations
  // are more often the dev loss's noise than a plateau.
  double shrink = 0.5;
  int64_t shrink_patience = 0;
  int64_t shrink_after = 0;
};

// When training ends before train.steps (fairseq's --patience, Marian's --early-stopping).
struct StopConfig {
  int64_t patience = 0;  // evaluations without a gain before stopping; 0 = off
  // A gain is a dev loss more than this below the last gain's (StoppingRule); the best
  // checkpoint follows the lowest dev loss regardless.
  double min_delta = 0.0;
};

struct TrainConfig {
  int64_t batch_tokens = 25000;  // source + target tokens per global batch (approximate)
  int64_t accumulate = 1;        // gradient accumulation steps per update
  int64_t steps = 100000;        // optimizer updates (an upper bound when stop rules are set)
  int64_t max_epochs = 0;        // passes over the training data; 0 = no limit
  StopConfig stop;
  OptimizerConfig optimizer;
  LrConfig lr;
  double label_smoothing = 0.1;     // eps_ls
  double clip = 0.0;                // max global gradient norm; 0 = off
  int64_t checkpoint_every = 1000;  // steps between checkpoints; 0 = only at the end
  int64_t keep_checkpoints = 5;     // newest checkpoints kept
  // Operands of the float matrix products (mixed precision with bf16; see blas::Precision).
  blas::Precision precision = blas::Precision::kFp32;

  // Whether a stop rule may end training before `steps` (which is then only a cap).
  bool may_stop_sooner() const { return stop.patience > 0 || max_epochs > 0; }
};

// The parameters of a run's final evaluation and of eval/translate (eval.checkpoint): the newest
// (or the average of eval.average_last), or ckpt/best.h5, the lowest dev loss.
enum class EvalCheckpoint { kNewest, kBest };
const EnumNames<EvalCheckpoint>& eval_checkpoint_names();

struct EvalConfig {
  int64_t every = 1000;  // steps between dev evaluations; 0 = only at the end
  int64_t beam = 4;
  double length_penalty = 0.6;  // GNMT alpha
  int64_t max_len_offset = 50;  // max output length = source length + offset
  int64_t average_last = 0;     // checkpoints averaged for the final evaluation; 0 = none
  EvalCheckpoint checkpoint = EvalCheckpoint::kNewest;
  bool bleu_during_training = false;
  bool final_bleu = false;  // dev BLEU at the final evaluation even without bleu_during_training
  // Splits ("dev", "test") that `attnlab train` decodes with beam search once the run has
  // completed, from the final evaluation's parameters, into /eval_<split> (as `attnlab eval`
  // does). Nothing in training reads them: the test split is scored, never used to choose.
  std::vector<std::string> decode_splits;
};

struct LogConfig {
  std::string dir = "runs";                   // runs go to <dir>/<sweep>/<run_id>/ or <dir>/<name>/
  int64_t every = 100;                        // steps between rows in /train
  int64_t diagnostics_every = 0;              // steps between /diagnostics rows; 0 = off
  std::vector<std::string> attention_probes;  // source sentences whose attention maps are saved
};

struct ClusterConfig {
  int64_t ranks = 1;             // MPI ranks per run
  int64_t threads_per_rank = 1;  // OpenBLAS/OpenMP threads per rank
  std::string profile;           // cluster/profiles/<name>.yaml for the Slurm launcher
  // Seconds a collective may wait for a rank during training before the job ends naming it
  // (at least 10 median steps); 0 = wait for ever.
  double collective_timeout = 300.0;
};

struct ExperimentConfig {
  std::string name = "run";
  uint64_t seed = 1;
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  EvalConfig eval;
  LogConfig log;
  ClusterConfig cluster;
};

}  // namespace attnlab
