// CorpusSource: the DataSource of data.task corpus. Line-aligned parallel text files, a joint
// SentencePiece tokenizer (trained on the training sides when missing), length-bucketed global
// batches that resume exactly, and fixed-order evaluation batches with their references.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/data/batcher.h"
#include "core/data/corpus.h"
#include "core/data/tokenizer.h"
#include "core/decode/beam.h"
#include "core/model/transformer.h"
#include "core/train/data_source.h"

namespace attnlab {

// Where the run's tokenizer lives: data.tokenizer.model when set, else beside data.train.src
// (tokenizer_path_beside).
std::string corpus_tokenizer_path(const DataConfig& data);

// The run's tokenizer. When its file is missing it is trained on data.train (both sides) if
// `train_if_missing`, otherwise that is an Error naming the path. Error when its vocabulary
// differs from model.vocab_size, naming the file and both sizes.
Tokenizer load_corpus_tokenizer(const ExperimentConfig& config, bool train_if_missing);

// A split encoded for evaluation: fixed batches of sentences sorted by length, the original line
// of every row, and the references as text. Sides longer than max_length - 1 pieces are cut so
// that every line can be scored and translated (the count is in `truncated`).
struct EvalSet {
  std::vector<Batch> batches;
  std::vector<std::vector<int64_t>> lines;  // [batch][row]: 0-based line of the split's files
  std::vector<std::vector<std::vector<int32_t>>> reference_ids;  // [batch][row], no bos/eos
  std::vector<std::vector<std::string>> reference_text;          // [batch][row]
  std::vector<std::string> source_text;  // every line of the source file, in file order
  int64_t sentences = 0;
  int64_t truncated = 0;
};

// Encodes `text` (source and target lines) into an EvalSet of batches of about batch_tokens
// padded source + target tokens, deterministic and independent of the seed.
EvalSet make_eval_set(const ParallelText& text, const Tokenizer& tokenizer, int64_t batch_tokens,
                      int64_t max_length, const ModelConfig& model);

// Source-only batches for translation (no references): same order rule as make_eval_set.
EvalSet make_source_set(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                        int64_t batch_tokens, int64_t max_length, const ModelConfig& model);

class CorpusSource final : public DataSource {
 public:
  // Reads data.train and data.dev (Error naming file and line for missing or misaligned files,
  // invalid UTF-8, and empty lines in dev; training pairs with an empty side are left out and
  // counted), loads or trains the tokenizer, encodes and batches.
  explicit CorpusSource(const ExperimentConfig& config);

  Batch next_batch() override;
  // DataPosition {epoch, offset} is the batcher's {epoch, batch}: offset counts global batches
  // served in the epoch.
  DataPosition position() const override;
  double epochs() const override;
  void seek(const DataPosition& position) override;
  const std::vector<Batch>& dev_batches() const override { return dev_.batches; }
  const std::vector<std::vector<std::vector<int32_t>>>& dev_references() const override {
    return dev_.reference_ids;
  }
  bool has_text() const override { return true; }
  std::string detokenize(const std::vector<int32_t>& ids) const override;
  const std::vector<std::vector<std::string>>& dev_reference_text() const override {
    return dev_.reference_text;
  }
  std::vector<int32_t> encode_source(const std::string& text, int64_t max_tokens) const override;
  std::string piece(int32_t id) const override { return tokenizer_.piece(id); }

  const Tokenizer& tokenizer() const { return tokenizer_; }
  int64_t train_pairs() const { return static_cast<int64_t>(batcher_.pairs().size()); }
  int64_t skipped_pairs() const { return batcher_.skipped(); }  // longer than data.max_length
  int64_t empty_pairs() const { return empty_pairs_; }          // with an empty side
  int64_t batches_per_epoch() const { return batcher_.batches_per_epoch(); }

 private:
  CorpusSource(const ExperimentConfig& config, const ParallelText& train, const ParallelText& dev);

  Tokenizer tokenizer_;
  TokenBatcher batcher_;
  EvalSet dev_;
  int64_t empty_pairs_ = 0;
};

std::unique_ptr<DataSource> make_corpus_source(const ExperimentConfig& config);

// ---- Translating with a trained run (attnlab eval, attnlab translate) ----

// The experiment config of a run directory: <run_dir>/config.yaml when present, else the
// resolved YAML stored in <run_dir>/run.h5 (root attribute config_yaml).
ExperimentConfig load_run_config(const std::string& run_dir);

// A run's model with the parameters of its newest intact checkpoint, the elementwise mean of its
// last `average` checkpoints (average >= 1), or its best checkpoint (ckpt/best.h5, `best`), and
// the run's tokenizer.
struct RunModel {
  ExperimentConfig config;
  Tokenizer tokenizer;
  std::unique_ptr<Transformer<float>> model;
  std::vector<std::string> checkpoints;  // the files averaged (one when not averaging)
  int64_t step = 0;                      // the newest of those checkpoints' steps
  // Newer checkpoints passed over (newest-checkpoint mode), one "path: reason" each; the
  // commands print them, so a fallback to an older checkpoint is never silent.
  std::vector<std::string> skipped;
};
// Errors name the file: no checkpoint, a tokenizer whose vocabulary differs from the model's or
// from the checkpoint's embedding rows, tensors of other shapes.
RunModel load_run_model(const std::string& run_dir, int64_t average, bool best);

// What decoding a set gives: one hypothesis per line of the set (file order), and the summed
// negative log-likelihood of the references (when the set has them).
struct Translation {
  std::vector<std::string> hypotheses;
  double nll_sum = 0.0;
  int64_t target_tokens = 0;
};
Translation translate_set(Transformer<float>& model, const Tokenizer& tokenizer, const EvalSet& set,
                          const BeamOptions& options, bool score_references);

}  // namespace attnlab
