// SentencePiece behind the Tokenizer interface (the only sentencepiece include in attnlab).
#include "core/data/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <unordered_map>

#include "core/util/check.h"
#include "core/util/files.h"
#include "core/util/sha256.h"

namespace attnlab {

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor processor;
  std::string path;
  std::string checksum;
};

namespace {

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

const std::string kModelSuffix = ".model";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& model_path) {
  CHECK(file_exists(model_path)) << "tokenizer model " << model_path << " not found";
  auto impl = std::make_unique<Impl>();
  const auto status = impl->processor.Load(model_path);
  CHECK(status.ok()) << "cannot load tokenizer model " << model_path << ": " << status.ToString();
  const auto& p = impl->processor;
  CHECK(p.pad_id() == kPadId && p.bos_id() == kBosId && p.eos_id() == kEosId &&
        p.unk_id() == kUnkId)
      << "tokenizer model " << model_path << " has special ids pad=" << p.pad_id()
      << " bos=" << p.bos_id() << " eos=" << p.eos_id() << " unk=" << p.unk_id()
      << "; expected pad=0 bos=1 eos=2 unk=3 (retrain it: delete the file)";
  impl->path = model_path;
  impl->checksum = sha256_file(model_path);
  return Tokenizer(std::move(impl));
}

void Tokenizer::train(const std::string& model_path, const TokenizerTraining& training) {
  CHECK(ends_with(model_path, kModelSuffix))
      << "tokenizer model path must end in .model, got " << model_path;
  CHECK(!training.inputs.empty()) << "tokenizer training needs at least one input file";
  CHECK(training.vocab_size > 4)
      << "data.tokenizer.vocab_size must exceed the 4 special pieces, got " << training.vocab_size;
  CHECK(training.model_type == "bpe" || training.model_type == "unigram")
      << "data.tokenizer.model_type must be bpe or unigram, got '" << training.model_type << "'";
  CHECK(training.num_threads >= 1) << "tokenizer num_threads must be >= 1";
  std::string inputs;
  for (const std::string& input : training.inputs) {
    CHECK(file_exists(input)) << "tokenizer training input " << input << " not found";
    CHECK(input.find(',') == std::string::npos)
        << "tokenizer training input " << input << " contains a comma (SentencePiece splits on it)";
    inputs += (inputs.empty() ? "" : ",") + input;
  }
  // Every sentence is used, in file order, with a fixed seed: the model is a function of the
  // inputs and options. The model comes back serialized (no model_prefix, so no temporary name
  // is recorded inside it) and is written under a temporary name, then renamed.
  const std::unordered_map<std::string, std::string> options = {
      {"input", inputs},
      {"model_type", training.model_type},
      {"vocab_size", std::to_string(training.vocab_size)},
      {"pad_id", std::to_string(kPadId)},
      {"bos_id", std::to_string(kBosId)},
      {"eos_id", std::to_string(kEosId)},
      {"unk_id", std::to_string(kUnkId)},
      {"character_coverage", "1.0"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"num_threads", std::to_string(training.num_threads)},
      {"minloglevel", "1"},
  };
  sentencepiece::SetRandomGeneratorSeed(1);
  std::string serialized;
  const auto status = sentencepiece::SentencePieceTrainer::Train(options, nullptr, &serialized);
  CHECK(status.ok()) << "training tokenizer " << model_path << " (vocab_size "
                     << training.vocab_size << ") failed: " << status.ToString();
  write_file_atomically(model_path, serialized);
}

Tokenizer Tokenizer::load_or_train(const std::string& model_path,
                                   const TokenizerTraining& training) {
  if (!file_exists(model_path)) train(model_path, training);
  return load(model_path);
}

std::vector<int32_t> Tokenizer::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = impl_->processor.Encode(text, &ids);
  CHECK(status.ok()) << "tokenizer " << impl_->path << " cannot encode '" << text
                     << "': " << status.ToString();
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::vector<std::string> Tokenizer::encode_pieces(const std::string& text) const {
  std::vector<std::string> pieces;
  const auto status = impl_->processor.Encode(text, &pieces);
  CHECK(status.ok()) << "tokenizer " << impl_->path << " cannot encode '" << text
                     << "': " << status.ToString();
  return pieces;
}

std::string Tokenizer::piece(int32_t id) const {
  CHECK(id >= 0 && id < vocab_size()) << "token id " << id << " is outside the vocabulary of "
                                      << impl_->path << " (size " << vocab_size() << ")";
  if (id == kPadId) return "<pad>";
  if (id == kBosId) return "<s>";
  if (id == kEosId) return "</s>";
  return impl_->processor.IdToPiece(id);
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  const int64_t size = vocab_size();
  std::vector<int> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    CHECK(id >= 0 && id < size) << "token id " << id << " is outside the vocabulary of "
                                << impl_->path << " (size " << size << ")";
    if (id != kPadId && id != kBosId && id != kEosId) kept.push_back(id);
  }
  std::string text;
  const auto status = impl_->processor.Decode(kept, &text);
  CHECK(status.ok()) << "tokenizer " << impl_->path << " cannot decode: " << status.ToString();
  return text;
}

int64_t Tokenizer::vocab_size() const { return impl_->processor.GetPieceSize(); }
const std::string& Tokenizer::model_path() const { return impl_->path; }
const std::string& Tokenizer::checksum() const { return impl_->checksum; }

std::string tokenizer_path_beside(const std::string& train_src_path, int64_t vocab_size,
                                  const std::string& model_type) {
  const size_t slash = train_src_path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : train_src_path.substr(0, slash);
  return dir + "/sentencepiece." + model_type + "." + std::to_string(vocab_size) + ".model";
}

}  // namespace attnlab
