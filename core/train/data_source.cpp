// Synthetic data sources.
#include "core/train/data_source.h"

#include <algorithm>

#include "core/util/check.h"

namespace attnlab {
namespace {

SyntheticTask synthetic_task(DataTask task) {
  switch (task) {
    case DataTask::kCopy: return SyntheticTask::kCopy;
    case DataTask::kReverse: return SyntheticTask::kReverse;
    case DataTask::kSort: return SyntheticTask::kSort;
    case DataTask::kCorpus: break;
  }
  throw Error("data.task corpus is not a synthetic task");
}

class SyntheticSource final : public DataSource {
 public:
  explicit SyntheticSource(const ExperimentConfig& config)
      : model_(config.model),
        split_(make_synthetic_split(
            synthetic_task(config.data.task), config.data.synthetic.symbols,
            config.data.synthetic.min_length, config.data.synthetic.max_length,
            config.data.synthetic.train_size, config.data.synthetic.dev_size, config.seed)),
        batcher_(&split_.train, config.train.batch_tokens, config.seed) {
    CHECK(kFirstSymbol + config.data.synthetic.symbols <= config.model.vocab_size)
        << "model.vocab_size " << config.model.vocab_size << " cannot hold "
        << config.data.synthetic.symbols << " symbols plus pad, bos and eos";
    // Dev batches: consecutive sentences in their generated order.
    std::vector<int64_t> indices;
    int64_t tokens = 0;
    for (size_t i = 0; i < split_.dev.size(); ++i) {
      indices.push_back(static_cast<int64_t>(i));
      tokens += static_cast<int64_t>(split_.dev[i].src.size() + split_.dev[i].tgt.size()) + 2;
      if (tokens >= config.train.batch_tokens || i + 1 == split_.dev.size()) {
        dev_.push_back(
            make_batch(split_.dev, indices, model_.pad_id, model_.bos_id, model_.eos_id));
        std::vector<std::vector<int32_t>> references;
        references.reserve(indices.size());
        for (int64_t index : indices)
          references.push_back(split_.dev[static_cast<size_t>(index)].tgt);
        references_.push_back(std::move(references));
        indices.clear();
        tokens = 0;
      }
    }
  }

  Batch next_batch() override {
    return make_batch(split_.train, batcher_.next(), model_.pad_id, model_.bos_id, model_.eos_id);
  }
  DataPosition position() const override { return {batcher_.epoch(), batcher_.offset()}; }
  void seek(const DataPosition& position) override {
    batcher_.seek(position.epoch, position.offset);
  }
  double epochs() const override {
    return static_cast<double>(batcher_.epoch()) +
           static_cast<double>(batcher_.offset()) / static_cast<double>(split_.train.size());
  }
  const std::vector<Batch>& dev_batches() const override { return dev_; }
  const std::vector<std::vector<std::vector<int32_t>>>& dev_references() const override {
    return references_;
  }

 private:
  ModelConfig model_;
  SyntheticSplit split_;
  SequenceBatcher batcher_;
  std::vector<Batch> dev_;
  std::vector<std::vector<std::vector<int32_t>>> references_;
};

}  // namespace

std::string DataSource::detokenize(const std::vector<int32_t>& ids) const {
  CHECK(false) << "this data source has no text to turn " << ids.size()
               << " token ids into (only data.task corpus has)";
  return "";
}

std::vector<int32_t> DataSource::encode_source(const std::string& text,
                                               int64_t /*max_tokens*/) const {
  throw Error("log.attention_probes: cannot encode '" + text +
              "': the data source has no tokenizer (probes need data.task corpus)");
}

const std::vector<std::vector<std::string>>& DataSource::dev_reference_text() const {
  CHECK(false) << "this data source has no reference text (only data.task corpus has)";
  static const std::vector<std::vector<std::string>> none;
  return none;
}

std::unique_ptr<DataSource> make_synthetic_source(const ExperimentConfig& config) {
  return std::make_unique<SyntheticSource>(config);
}

}  // namespace attnlab
