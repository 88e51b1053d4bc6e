// SentencePiece tokenizer: trained on the Bible fixture (vocab 500, fast), exact round trips,
// the special ids, determinism of training, checksums, and clear errors.
#include "core/data/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/data/corpus.h"
#include "core/util/check.h"
#include "core/util/sha256.h"
#include "data/scratch_dir.h"

namespace attnlab {
namespace {

using test::ScratchDir;

TokenizerTraining fixture_training(int64_t vocab_size = 500) {
  TokenizerTraining training;
  training.inputs = {test::bible_fixture("train.en"), test::bible_fixture("train.es")};
  training.vocab_size = vocab_size;
  training.num_threads = 2;
  return training;
}

// One model trained for the whole suite: training is the slow part (about a second).
class TokenizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    model_path_ = dir_->file("sentencepiece.bpe.500.model");
    Tokenizer::train(model_path_, fixture_training());
  }
  static void TearDownTestSuite() { delete dir_; }
  static ScratchDir* dir_;
  static std::string model_path_;
};
ScratchDir* TokenizerTest::dir_ = nullptr;
std::string TokenizerTest::model_path_;

TEST_F(TokenizerTest, SpecialIdsAndVocabularySize) {
  const Tokenizer tokenizer = Tokenizer::load(model_path_);
  EXPECT_EQ(tokenizer.vocab_size(), 500);
  EXPECT_EQ(tokenizer.encode_pieces("x").size(), tokenizer.encode("x").size());
  for (int32_t id : tokenizer.encode("En el principio crió Dios los cielos y la tierra.")) {
    EXPECT_GT(id, Tokenizer::kUnkId);  // no pad/bos/eos, and every character is known
    EXPECT_LT(id, 500);
  }
  // A character never seen in training maps to unk.
  const auto ids = tokenizer.encode("\xE2\x98\x83");  // U+2603 snowman
  EXPECT_NE(std::find(ids.begin(), ids.end(), Tokenizer::kUnkId), ids.end());
}

TEST_F(TokenizerTest, RoundTripsHeldOutTextExactly) {
  const Tokenizer tokenizer = Tokenizer::load(model_path_);
  for (const std::string side : {"dev.en", "dev.es", "test.en", "test.es"}) {
    for (const std::string& line : read_text_lines(test::bible_fixture(side))) {
      ASSERT_EQ(tokenizer.decode(tokenizer.encode(line)), line) << side;
    }
  }
}

TEST_F(TokenizerTest, DecodeSkipsSpecialIdsAndRejectsUnknownIds) {
  const Tokenizer tokenizer = Tokenizer::load(model_path_);
  std::vector<int32_t> ids = tokenizer.encode("Y dijo Dios");
  std::vector<int32_t> framed = {Tokenizer::kBosId};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(Tokenizer::kEosId);
  framed.push_back(Tokenizer::kPadId);
  EXPECT_EQ(tokenizer.decode(framed), "Y dijo Dios");
  EXPECT_THROW(tokenizer.decode({5, 500}), Error);
  EXPECT_THROW(tokenizer.decode({-1}), Error);
}

TEST_F(TokenizerTest, TrainingIsDeterministicAndChecksumIsTheFileSha256) {
  ScratchDir other;
  const std::string again = other.file("again.model");
  Tokenizer::train(again, fixture_training());
  const Tokenizer first = Tokenizer::load(model_path_);
  const Tokenizer second = Tokenizer::load(again);
  EXPECT_EQ(first.checksum(), second.checksum());
  EXPECT_EQ(first.checksum(), sha256_file(model_path_));
  EXPECT_EQ(first.checksum().size(), 64u);
  // Another thread count gives the same pieces (the file itself records the thread count).
  TokenizerTraining one_thread = fixture_training();
  one_thread.num_threads = 1;
  const std::string single_path = other.file("single.model");
  Tokenizer::train(single_path, one_thread);
  const Tokenizer single = Tokenizer::load(single_path);
  for (const std::string& line : read_text_lines(test::bible_fixture("dev.es"))) {
    ASSERT_EQ(single.encode_pieces(line), first.encode_pieces(line));
  }
}

TEST_F(TokenizerTest, LoadOrTrainReusesAnExistingModel) {
  const auto before = std::filesystem::last_write_time(model_path_);
  TokenizerTraining nonsense = fixture_training();
  nonsense.inputs = {"/nonexistent/input"};  // would fail if training ran
  const Tokenizer tokenizer = Tokenizer::load_or_train(model_path_, nonsense);
  EXPECT_EQ(std::filesystem::last_write_time(model_path_), before);
  EXPECT_EQ(tokenizer.model_path(), model_path_);
}

TEST(Tokenizer, LoadOrTrainTrainsAMissingModelBesideTheData) {
  ScratchDir dir;
  const std::string src = dir.write("train.src", "abc abd abe\nabc abc\n");
  const std::string tgt = dir.write("train.tgt", "xyz xyw\nxyz xyz xyv\n");
  const std::string path = tokenizer_path_beside(src, 20);
  EXPECT_EQ(path, dir.file("sentencepiece.bpe.20.model"));
  TokenizerTraining training;
  training.inputs = {src, tgt};
  training.vocab_size = 20;
  const Tokenizer tokenizer = Tokenizer::load_or_train(path, training);
  EXPECT_EQ(tokenizer.vocab_size(), 20);
  EXPECT_EQ(tokenizer.decode(tokenizer.encode("abc xyz")), "abc xyz");
  // Nothing but the model is left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file(""))) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 3);  // train.src, train.tgt, the model
}

TEST(Tokenizer, ErrorsNameTheFile) {
  ScratchDir dir;
  try {
    Tokenizer::load(dir.file("missing.model"));
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("missing.model not found"), std::string::npos);
  }
  const std::string garbage = dir.write("garbage.model", "not a model");
  EXPECT_THROW(Tokenizer::load(garbage), Error);
  TokenizerTraining too_big = fixture_training(100000);
  too_big.inputs = {dir.write("tiny.txt", "a b c\n")};
  try {
    Tokenizer::train(dir.file("big.model"), too_big);
    FAIL() << "expected an error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("vocab_size 100000"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("big.model")));
  EXPECT_THROW(Tokenizer::train(dir.file("no-suffix"), fixture_training()), Error);
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the padding spills into a second block.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // The fixture's data card lists Python's hashlib digests: the two implementations agree.
  const std::string card = test::read_file(test::bible_fixture("DATA_CARD.md"));
  for (const std::string name : {"train.en", "train.es", "dev.es", "test.en"}) {
    const std::string row = "| `" + name + "` | `" + sha256_file(test::bible_fixture(name)) + "` |";
    EXPECT_NE(card.find(row), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace attnlab
