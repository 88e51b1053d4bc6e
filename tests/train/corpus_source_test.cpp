// CorpusSource on the committed Bible fixture: determinism, exact resume from a position, the
// per-split evaluation batches, and clear errors for bad files and vocabulary mismatches.
#include "core/train/corpus_source.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/util/check.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

// tests/train/<this file> -> tests/fixtures/bible (CMake compiles sources by absolute path).
const std::string kFixture =
    (fs::path(__FILE__).parent_path().parent_path() / "fixtures" / "bible").string();

// A scratch directory holding copies of the fixture, so the tokenizer is trained beside them.
class CorpusSourceTest : public ::testing::Test {
 protected:
  // One 500-piece tokenizer for the suite (training it takes seconds): tests that do not test
  // training point data.tokenizer.model at it.
  static void SetUpTestSuite() {
    shared_dir() = fs::temp_directory_path() /
                   ("attnlab-corpus-tokenizer-" +
                    std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
    fs::create_directories(shared_dir());
    TokenizerTraining training;
    training.inputs = {kFixture + "/train.en", kFixture + "/train.es"};
    training.vocab_size = 500;
    Tokenizer::train(shared_tokenizer(), training);
  }
  static void TearDownTestSuite() { fs::remove_all(shared_dir()); }
  static fs::path& shared_dir() {
    static fs::path dir;
    return dir;
  }
  static std::string shared_tokenizer() { return (shared_dir() / "shared.model").string(); }

  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("attnlab-corpus-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* name : {"train.en", "train.es", "dev.en", "dev.es"}) {
      fs::copy_file(kFixture + "/" + name, dir_ / name);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  ExperimentConfig config() const {
    ExperimentConfig c;
    c.data.task = DataTask::kCorpus;
    c.data.train = {(dir_ / "train.en").string(), (dir_ / "train.es").string()};
    c.data.dev = {(dir_ / "dev.en").string(), (dir_ / "dev.es").string()};
    c.data.tokenizer.vocab_size = 500;
    c.data.tokenizer.model = shared_tokenizer();
    c.data.max_length = 64;
    c.model.vocab_size = 500;
    c.model.max_positions = 128;
    c.train.batch_tokens = 1500;
    c.seed = 7;
    return c;
  }

  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary | std::ios::trunc) << text;
  }

  fs::path dir_;
};

bool same(const Batch& a, const Batch& b) {
  return a.size == b.size && a.src == b.src && a.tgt_in == b.tgt_in && a.tgt_out == b.tgt_out;
}

TEST_F(CorpusSourceTest, TrainsTheTokenizerBesideTheDataAndCountsSkippedPairs) {
  ExperimentConfig c = config();
  c.data.tokenizer.model = "";  // the default place: beside data.train.src
  CorpusSource source(c);
  const std::string expected = (dir_ / "sentencepiece.bpe.500.model").string();
  EXPECT_EQ(source.tokenizer().model_path(), expected);
  EXPECT_TRUE(fs::exists(expected));
  EXPECT_EQ(source.tokenizer().vocab_size(), 500);
  // Every fixture pair is either kept or counted as skipped.
  int64_t lines = 0;
  std::ifstream in(dir_ / "train.en");
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_EQ(source.train_pairs() + source.skipped_pairs(), lines);
  EXPECT_GT(source.skipped_pairs(), 0) << "max_length 64 at vocab 500 cuts some long verses";
  // A batch respects the token budget and the length limit.
  for (int i = 0; i < 20; ++i) {
    const Batch batch = source.next_batch();
    EXPECT_LE(batch.size * (batch.src_length + batch.tgt_length), 1500);
    EXPECT_LE(batch.src_length, 64);
    EXPECT_LE(batch.tgt_length, 64);
  }
}

TEST_F(CorpusSourceTest, SameSeedSameBatchesAndResumeIsExact) {
  CorpusSource first(config());
  CorpusSource second(config());
  const int64_t per_epoch = first.batches_per_epoch();
  // Run past an epoch boundary so the position's epoch changes.
  std::vector<Batch> reference;
  for (int64_t i = 0; i < per_epoch + 5; ++i) reference.push_back(first.next_batch());
  for (int64_t i = 0; i < per_epoch - 3; ++i) ASSERT_TRUE(same(second.next_batch(), reference[i]));
  const DataPosition saved = second.position();
  EXPECT_EQ(saved.epoch, 0);
  EXPECT_EQ(saved.offset, per_epoch - 3);

  CorpusSource resumed(config());
  resumed.seek(saved);
  for (int64_t i = per_epoch - 3; i < per_epoch + 5; ++i) {
    ASSERT_TRUE(same(resumed.next_batch(), reference[static_cast<size_t>(i)])) << "batch " << i;
  }
  EXPECT_EQ(resumed.position().epoch, 1);
  EXPECT_EQ(resumed.position().offset, 5);

  ExperimentConfig other = config();
  other.seed = 8;
  CorpusSource reseeded(other);
  bool differs = false;
  for (int i = 0; i < 5; ++i) differs |= !same(reseeded.next_batch(), reference[i]);
  EXPECT_TRUE(differs) << "another seed must give another batch order";
}

TEST_F(CorpusSourceTest, DevBatchesCoverEveryLineWithItsReference) {
  CorpusSource source(config());
  std::set<std::string> references;
  int64_t rows = 0;
  for (size_t b = 0; b < source.dev_batches().size(); ++b) {
    const Batch& batch = source.dev_batches()[b];
    ASSERT_EQ(source.dev_references()[b].size(), static_cast<size_t>(batch.size));
    ASSERT_EQ(source.dev_reference_text()[b].size(), static_cast<size_t>(batch.size));
    for (int64_t i = 0; i < batch.size; ++i) {
      const auto& ids = source.dev_references()[b][static_cast<size_t>(i)];
      // The reference ids are the target row of the batch (tgt_out without eos and padding).
      for (size_t t = 0; t < ids.size(); ++t) {
        EXPECT_EQ(batch.tgt_out[static_cast<size_t>(i * batch.tgt_length) + t], ids[t]);
      }
      references.insert(source.dev_reference_text()[b][static_cast<size_t>(i)]);
      ++rows;
    }
  }
  std::ifstream in(dir_ / "dev.es");
  int64_t lines = 0;
  for (std::string line; std::getline(in, line); ++lines) EXPECT_EQ(references.count(line), 1u);
  EXPECT_EQ(rows, lines);
  // Detokenizing a reference's ids gives its text back (SentencePiece round trip).
  EXPECT_EQ(source.detokenize(source.dev_references()[0][0]), source.dev_reference_text()[0][0]);
}

TEST_F(CorpusSourceTest, MisalignedFilesNameBothFilesAndCounts) {
  write("dev.es", "uno\ndos\n");
  try {
    CorpusSource source(config());
    FAIL() << "misaligned dev files were accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("dev.en has 36 lines"), std::string::npos) << message;
    EXPECT_NE(message.find("dev.es has 2"), std::string::npos) << message;
  }
}

TEST_F(CorpusSourceTest, MissingFileAndEmptyLineAreNamedBeforeAnyTokenizerIsWritten) {
  ExperimentConfig c = config();
  c.data.train.tgt = (dir_ / "absent.es").string();
  try {
    CorpusSource source(c);
    FAIL() << "a missing file was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("absent.es"), std::string::npos) << error.what();
  }
  // An empty dev line is an error (dev lines are scored one to one); in training data a pair
  // with an empty side is left out and counted (CorpusSourceTest.EmptyTrainingPairsAreSkipped).
  write("dev.en", "In the beginning\n\nGod created\n");
  write("dev.es", "En el principio\nx\nDios creó\n");
  c = config();
  c.data.tokenizer.model = "";
  try {
    CorpusSource source(c);
    FAIL() << "an empty dev line was accepted";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("dev.en:2: empty line"), std::string::npos)
        << error.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "sentencepiece.bpe.500.model"));
}

TEST_F(CorpusSourceTest, VocabularyMismatchNamesTheTokenizerAndBothSizes) {
  ExperimentConfig c = config();  // the shared 500-piece tokenizer
  c.data.tokenizer.vocab_size = 600;
  c.model.vocab_size = 600;
  try {
    CorpusSource source(c);
    FAIL() << "a 500-piece tokenizer was accepted for a 600-row embedding";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("shared.model has 500 pieces"), std::string::npos) << message;
    EXPECT_NE(message.find("model.vocab_size is 600"), std::string::npos) << message;
  }
}

TEST_F(CorpusSourceTest, EvalSetTruncatesOverlongLinesAndKeepsLineOrder) {
  CorpusSource source(config());
  const ParallelText dev = read_parallel_text(config().data.dev.src, config().data.dev.tgt);
  const EvalSet set = make_eval_set(dev, source.tokenizer(), 600, 8, config().model);
  EXPECT_EQ(set.sentences, 36);
  EXPECT_GT(set.truncated, 0);
  std::vector<int> seen(36, 0);
  for (size_t b = 0; b < set.batches.size(); ++b) {
    EXPECT_LE(set.batches[b].src_length, 8);
    EXPECT_LE(set.batches[b].tgt_length, 8);
    for (size_t i = 0; i < set.lines[b].size(); ++i) {
      const int64_t line = set.lines[b][i];
      ++seen[static_cast<size_t>(line)];
      EXPECT_EQ(set.reference_text[b][i], dev.tgt[static_cast<size_t>(line)]);
    }
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

}  // namespace
}  // namespace attnlab
