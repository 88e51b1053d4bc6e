// Tokenizer: a joint SentencePiece model over source and target text, trained through the C++
// API when its file is missing and identified in run logs by the file's SHA-256.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attnlab {

struct TokenizerTraining {
  std::vector<std::string> inputs;  // text files, one segment a line (both training sides)
  int64_t vocab_size = 8000;        // data.tokenizer.vocab_size
  std::string model_type = "bpe";   // bpe | unigram
  int num_threads = 1;              // threads for training (the model does not depend on it)
};

class Tokenizer {
 public:
  // Special ids, the ModelConfig defaults (pad_id 0, bos_id 1, eos_id 2).
  static constexpr int32_t kPadId = 0;
  static constexpr int32_t kBosId = 1;
  static constexpr int32_t kEosId = 2;
  static constexpr int32_t kUnkId = 3;

  // Loads a trained model; Error naming the file if it is missing or not a SentencePiece model
  // with the special ids above.
  static Tokenizer load(const std::string& model_path);

  // Trains a model on `training.inputs` and writes it to model_path (which must end in
  // ".model"). Deterministic: the same inputs (paths and contents) and options give a
  // byte-identical file; the pieces do not depend on num_threads. Written under a temporary
  // name and renamed, so a crash leaves no half-written model.
  static void train(const std::string& model_path, const TokenizerTraining& training);

  // load(model_path), training it first when the file does not exist.
  static Tokenizer load_or_train(const std::string& model_path, const TokenizerTraining& training);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Piece ids of `text`, without bos/eos.
  std::vector<int32_t> encode(const std::string& text) const;
  std::vector<std::string> encode_pieces(const std::string& text) const;
  // Text of `ids`; pad, bos and eos are skipped. Error on an id outside [0, vocab_size).
  std::string decode(const std::vector<int32_t>& ids) const;
  // The piece of one id ("<pad>", "<s>", "</s>" for the special ids), for labelling.
  std::string piece(int32_t id) const;

  int64_t vocab_size() const;
  const std::string& model_path() const;
  const std::string& checksum() const;  // SHA-256 (hex) of the model file

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where a corpus keeps its tokenizer: beside the training source file,
// "<dir>/sentencepiece.<model_type>.<vocab_size>.model".
std::string tokenizer_path_beside(const std::string& train_src_path, int64_t vocab_size,
                                  const std::string& model_type = "bpe");

}  // namespace attnlab
