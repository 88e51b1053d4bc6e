// DataSource: what the trainer reads. A source yields global batches (the same on every rank,
// whatever the rank count), can report and restore its position, and holds the dev set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config/experiment.h"
#include "core/data/batch.h"
#include "core/data/synthetic.h"

namespace attnlab {

struct DataPosition {
  int64_t epoch = 0;
  int64_t offset = 0;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  virtual Batch next_batch() = 0;  // the next global batch
  virtual DataPosition position() const = 0;
  virtual void seek(const DataPosition& position) = 0;
  // Passes over the training data so far, with the fraction of the current one (1.0 right after
  // the last batch of the first epoch).
  virtual double epochs() const = 0;
  // The dev set in batches of about batch_tokens, in a fixed order.
  virtual const std::vector<Batch>& dev_batches() const = 0;
  // Reference target ids (no bos/eos) of dev sentence i of dev batch b, for accuracy.
  virtual const std::vector<std::vector<std::vector<int32_t>>>& dev_references() const = 0;

  // Sources of real text (data.task corpus) turn target ids back into text, so that dev BLEU can
  // be computed during training; synthetic sources have no text and leave these as they are.
  virtual bool has_text() const { return false; }
  // Detokenized text of target ids (pad, bos and eos skipped).
  virtual std::string detokenize(const std::vector<int32_t>& ids) const;
  // Reference text of dev sentence i of dev batch b: [b][i].
  virtual const std::vector<std::vector<std::string>>& dev_reference_text() const;
  // Source ids (eos included, at most `max_tokens`) of a sentence given as text, for attention
  // probes (log.attention_probes). Only sources of real text can; the others throw.
  virtual std::vector<int32_t> encode_source(const std::string& text, int64_t max_tokens) const;
  // What id stands for, to label attention maps: its piece for text, the id itself otherwise.
  virtual std::string piece(int32_t id) const { return std::to_string(id); }
};

// copy / reverse / sort, generated from config.data.synthetic and the experiment seed.
std::unique_ptr<DataSource> make_synthetic_source(const ExperimentConfig& config);

}  // namespace attnlab
