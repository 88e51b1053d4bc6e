// Parallel text as a DataSource (files -> tokenizer -> ids -> length-bucketed batches), and
// translating evaluation sets with a trained run's model.
#include "core/train/corpus_source.h"

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "core/config/config.h"
#include "core/data/synthetic.h"
#include "core/decode/average.h"
#include "core/io/checkpoint_dir.h"
#include "core/io/h5.h"
#include "core/io/run_log.h"
#include "core/model/decode_buffers.h"
#include "core/train/checkpoints.h"
#include "core/util/check.h"
#include "core/util/isolated.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

BatcherOptions batcher_options(const ExperimentConfig& config) {
  BatcherOptions options;
  options.batch_tokens = config.train.batch_tokens;
  options.max_length = config.data.max_length;
  options.seed = config.seed;
  options.pad_id = config.model.pad_id;
  options.bos_id = config.model.bos_id;
  options.eos_id = config.model.eos_id;
  return options;
}

std::vector<SequencePair> encode_pairs(const ParallelText& text, const Tokenizer& tokenizer) {
  std::vector<SequencePair> pairs(text.src.size());
  for (size_t i = 0; i < text.src.size(); ++i) {
    pairs[i].src = tokenizer.encode(text.src[i]);
    pairs[i].tgt = tokenizer.encode(text.tgt[i]);
  }
  return pairs;
}

// Sorted by the longer side (ties: line order), cut while rows * (S + T) fits batch_tokens.
EvalSet batch_in_length_order(std::vector<SequencePair> pairs, int64_t batch_tokens,
                              int64_t max_length, const ModelConfig& model) {
  CHECK(max_length >= 2) << "data.max_length must be >= 2, got " << max_length;
  EvalSet set;
  set.sentences = static_cast<int64_t>(pairs.size());
  const size_t longest = static_cast<size_t>(max_length - 1);  // room for eos / bos
  for (SequencePair& pair : pairs) {
    const bool cut = pair.src.size() > longest || pair.tgt.size() > longest;
    if (pair.src.size() > longest) pair.src.resize(longest);
    if (pair.tgt.size() > longest) pair.tgt.resize(longest);
    set.truncated += cut ? 1 : 0;
  }
  std::vector<int64_t> order(pairs.size());
  std::iota(order.begin(), order.end(), 0);
  auto positions = [&](int64_t i) {
    const SequencePair& p = pairs[static_cast<size_t>(i)];
    return std::max(p.src.size(), p.tgt.size()) + 1;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return positions(a) < positions(b); });
  std::vector<int64_t> current;
  size_t longest_src = 0, longest_tgt = 0;
  auto flush = [&] {
    set.batches.push_back(make_batch(pairs, current, model.pad_id, model.bos_id, model.eos_id));
    std::vector<std::vector<int32_t>> references;
    references.reserve(current.size());
    for (int64_t i : current) references.push_back(pairs[static_cast<size_t>(i)].tgt);
    set.reference_ids.push_back(std::move(references));
    set.lines.push_back(current);
    current.clear();
  };
  for (int64_t i : order) {
    const SequencePair& pair = pairs[static_cast<size_t>(i)];
    const size_t src = std::max(longest_src, pair.src.size() + 1);
    const size_t tgt = std::max(longest_tgt, pair.tgt.size() + 1);
    if (!current.empty() &&
        static_cast<int64_t>((current.size() + 1) * (src + tgt)) > batch_tokens) {
      flush();
      longest_src = pair.src.size() + 1;
      longest_tgt = pair.tgt.size() + 1;
    } else {
      longest_src = src;
      longest_tgt = tgt;
    }
    current.push_back(i);
  }
  if (!current.empty()) flush();
  return set;
}

}  // namespace

std::string corpus_tokenizer_path(const DataConfig& data) {
  if (!data.tokenizer.model.empty()) return data.tokenizer.model;
  return tokenizer_path_beside(data.train.src, data.tokenizer.vocab_size);
}

Tokenizer load_corpus_tokenizer(const ExperimentConfig& config, bool train_if_missing) {
  const std::string path = corpus_tokenizer_path(config.data);
  const ModelConfig& m = config.model;
  CHECK(m.pad_id == Tokenizer::kPadId && m.bos_id == Tokenizer::kBosId &&
        m.eos_id == Tokenizer::kEosId)
      << "the SentencePiece tokenizer uses pad 0, bos 1, eos 2; the model config has pad "
      << m.pad_id << ", bos " << m.bos_id << ", eos " << m.eos_id;
  Tokenizer tokenizer = [&] {
    if (std::filesystem::exists(path) || !train_if_missing) {
      CHECK(std::filesystem::exists(path))
          << "tokenizer " << path << " is missing (it is trained by `attnlab train` beside "
          << "data.train.src, or named by data.tokenizer.model)";
      return Tokenizer::load(path);
    }
    TokenizerTraining training;
    training.inputs = {config.data.train.src, config.data.train.tgt};
    training.vocab_size = config.data.tokenizer.vocab_size;
    training.num_threads = static_cast<int>(std::max<int64_t>(1, config.cluster.threads_per_rank));
    return Tokenizer::load_or_train(path, training);
  }();
  CHECK(tokenizer.vocab_size() == m.vocab_size)
      << "vocabulary mismatch: tokenizer " << path << " has " << tokenizer.vocab_size()
      << " pieces but model.vocab_size is " << m.vocab_size
      << " (delete the tokenizer to train a new one, or set data.tokenizer.vocab_size and "
         "model.vocab_size to "
      << tokenizer.vocab_size() << ")";
  return tokenizer;
}

EvalSet make_eval_set(const ParallelText& text, const Tokenizer& tokenizer, int64_t batch_tokens,
                      int64_t max_length, const ModelConfig& model) {
  EvalSet set =
      batch_in_length_order(encode_pairs(text, tokenizer), batch_tokens, max_length, model);
  set.source_text = text.src;
  for (const std::vector<int64_t>& lines : set.lines) {
    std::vector<std::string> references;
    references.reserve(lines.size());
    for (int64_t line : lines) references.push_back(text.tgt[static_cast<size_t>(line)]);
    set.reference_text.push_back(std::move(references));
  }
  return set;
}

EvalSet make_source_set(const std::vector<std::string>& lines, const Tokenizer& tokenizer,
                        int64_t batch_tokens, int64_t max_length, const ModelConfig& model) {
  std::vector<SequencePair> pairs(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) pairs[i].src = tokenizer.encode(lines[i]);
  EvalSet set = batch_in_length_order(std::move(pairs), batch_tokens, max_length, model);
  set.source_text = lines;
  return set;
}

CorpusSource::CorpusSource(const ExperimentConfig& config)
    : CorpusSource(
          config,
          read_parallel_text(config.data.train.src, config.data.train.tgt, EmptyLines::kSkipPairs),
          read_parallel_text(config.data.dev.src, config.data.dev.tgt)) {}

// Both texts are read (and checked) before the tokenizer, which may be trained and written here.
CorpusSource::CorpusSource(const ExperimentConfig& config, const ParallelText& train,
                           const ParallelText& dev)
    : tokenizer_(load_corpus_tokenizer(config, true)),
      batcher_(encode_pairs(train, tokenizer_), batcher_options(config)),
      dev_(make_eval_set(dev, tokenizer_, config.train.batch_tokens, config.data.max_length,
                         config.model)),
      empty_pairs_(train.empty_pairs_skipped) {}

Batch CorpusSource::next_batch() { return batcher_.next(); }

DataPosition CorpusSource::position() const {
  const BatchPosition p = batcher_.position();
  return {p.epoch, p.batch};
}

double CorpusSource::epochs() const {
  const BatchPosition p = batcher_.position();
  return static_cast<double>(p.epoch) +
         static_cast<double>(p.batch) / static_cast<double>(batcher_.batches_per_epoch());
}

void CorpusSource::seek(const DataPosition& position) {
  batcher_.seek({position.epoch, position.offset});
}

std::vector<int32_t> CorpusSource::encode_source(const std::string& text,
                                                 int64_t max_tokens) const {
  std::vector<int32_t> ids = tokenizer_.encode(text);
  CHECK(!ids.empty()) << "log.attention_probes: the probe '" << text << "' encodes to no pieces";
  if (static_cast<int64_t>(ids.size()) > max_tokens - 1)
    ids.resize(static_cast<size_t>(max_tokens - 1));
  ids.push_back(Tokenizer::kEosId);
  return ids;
}

std::string CorpusSource::detokenize(const std::vector<int32_t>& ids) const {
  return tokenizer_.decode(ids);
}

std::unique_ptr<DataSource> make_corpus_source(const ExperimentConfig& config) {
  return std::make_unique<CorpusSource>(config);
}

ExperimentConfig load_run_config(const std::string& run_dir) {
  const fs::path yaml = fs::path(run_dir) / "config.yaml";
  if (fs::exists(yaml)) return config::load(yaml.string());
  const fs::path log = fs::path(run_dir) / "run.h5";
  CHECK(fs::exists(log)) << run_dir << " is not a run directory: it has neither config.yaml nor "
                         << "run.h5";
  const std::string text = io::read_run(log.string()).info.config_yaml;
  CHECK(!text.empty()) << log.string() << " stores no config_yaml";
  // Parsed from memory, so that an error names the run's file and attribute.
  return config::load_text(text, log.string() + " (attribute config_yaml)");
}

RunModel load_run_model(const std::string& run_dir, int64_t average, bool best) {
  ExperimentConfig config = load_run_config(run_dir);
  CHECK(config.data.task == DataTask::kCorpus)
      << run_dir << " trained data.task '" << to_string(config.data.task)
      << "': translation needs a corpus run (data.task corpus)";
  Tokenizer tokenizer = load_corpus_tokenizer(config, false);
  auto model = std::make_unique<Transformer<float>>(config.model, config.seed);
  // The embedding table's rows are the vocabulary a checkpoint was trained with.
  auto check_vocabulary = [&](const std::string& path) {
    const h5::File file = h5::File::open(path, h5::Access::read);
    const char* embedding = "encoder.embed_tokens.weight";
    CHECK(file.root().has_group("params") && file.root().group("params").has_dataset(embedding))
        << "checkpoint " << path << " has no /params/" << embedding;
    const int64_t rows = file.root().group("params").dataset(embedding).dims().at(0);
    CHECK(rows == tokenizer.vocab_size())
        << "vocabulary mismatch: checkpoint " << path << " was trained with " << rows
        << " pieces but tokenizer " << tokenizer.model_path() << " has " << tokenizer.vocab_size();
  };
  // Every checkpoint is read first in a child process (every stored parameter, checksums
  // verified, whatever their shapes): a file damaged so that HDF5 crashes on it is an error, not
  // a crash of this command, and one of another vocabulary is still reported as such below.
  auto probe = [](const std::string& path) {
    run_in_child(
        [&] {
          const h5::File file = h5::File::open(path, h5::Access::read);
          const h5::Group params = file.root().group("params");
          for (const std::string& name : params.names()) params.dataset(name).read<float>();
        },
        path);
  };
  std::vector<std::string> paths;
  CHECK(!(best && average >= 1)) << "choose either the best checkpoint or an average, not both";
  if (best) {
    const std::string path = best_checkpoint_path(run_dir);
    CHECK(fs::exists(path)) << run_dir << " has no best checkpoint (" << path
                            << "): it is written at the first dev evaluation";
    probe(path);
    check_vocabulary(path);
    read_checkpoint_params(path, model->table(), model->params().data());
    paths.push_back(path);
  } else if (average >= 1) {
    paths = last_checkpoints(run_dir, average);
    for (const std::string& path : paths) {
      probe(path);
      check_vocabulary(path);
    }
    average_checkpoints(paths, model->table(), model->params().data());
  } else {
    // The newest checkpoint whose /params read back intact (checksums verified); only /params
    // is needed here, so this works for every checkpoint layout that stores them.
    const io::CheckpointDir dir(run_dir + "/ckpt");
    const std::vector<int64_t> steps = dir.steps();
    std::vector<std::string> skipped;
    for (auto it = steps.rbegin(); it != steps.rend() && paths.empty(); ++it) {
      const std::string path = dir.path_for(*it);
      try {
        probe(path);  // a damaged file is skipped like a truncated one (an interrupted write)
      } catch (const Error& error) {
        skipped.emplace_back(error.what());
        continue;
      }
      check_vocabulary(path);  // a readable file of another vocabulary is an error, not damage
      try {
        read_checkpoint_params(path, model->table(), model->params().data());
        paths.push_back(path);
      } catch (const Error& error) {
        skipped.emplace_back(error.what());
      }
    }
    std::string reasons;
    for (const std::string& reason : skipped) reasons += (reasons.empty() ? "" : "; ") + reason;
    CHECK(!paths.empty()) << run_dir << " has no readable checkpoint in " << dir.dir()
                          << (reasons.empty() ? "" : " (" + reasons + ")");
    int64_t step = checkpoint_step(paths.front());
    return RunModel{
        std::move(config), std::move(tokenizer), std::move(model), std::move(paths), step,
        std::move(skipped)};
  }
  int64_t step = 0;
  for (const std::string& path : paths) step = std::max(step, checkpoint_step(path));
  return RunModel{
      std::move(config), std::move(tokenizer), std::move(model), std::move(paths), step, {}};
}

Translation translate_set(Transformer<float>& model, const Tokenizer& tokenizer, const EvalSet& set,
                          const BeamOptions& options, bool score_references) {
  Translation translation;
  translation.hypotheses.assign(static_cast<size_t>(set.sentences), "");
  // Every batch's decoder state packs the same weights and makes caches of the same sizes: their
  // buffers serve batch after batch.
  const DecodeBufferReuse reuse_buffers;
  for (size_t b = 0; b < set.batches.size(); ++b) {
    if (score_references) {
      const ops::LossSums sums = model.forward(set.batches[b], 0.0f, false, 0);
      translation.nll_sum += sums.nll;
      translation.target_tokens += sums.tokens;
    }
    const std::vector<BeamHypothesis> best = beam_decode(model, set.batches[b], options);
    for (size_t i = 0; i < best.size(); ++i) {
      translation.hypotheses[static_cast<size_t>(set.lines[b][i])] =
          tokenizer.decode(best[i].tokens);
    }
  }
  return translation;
}

}  // namespace attnlab
