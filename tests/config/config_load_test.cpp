// Config loading: the broken-file corpus (exact locations and messages), precedence, the dump/load
// round trip and the rules for configs built in code.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/config/config.h"
#include "core/config/options.h"
#include "core/config/rules.h"

namespace attnlab {
namespace {

namespace fs = std::filesystem;
const std::string kTestDir = ATTNLAB_CONFIG_TEST_DIR;

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A broken file states its --set assignments and the exact error in header comments:
//   # set: key=value        (any number)
//   # expect: file.yaml:line:column: message   ({dir} stands for the broken/ directory)
struct BrokenCase {
  std::string path;
  std::vector<std::string> sets;
  std::string expected;
};

BrokenCase read_case(const fs::path& path) {
  BrokenCase c{path.string(), {}, ""};
  std::ifstream in(path);
  const std::string dir = path.parent_path().string();
  for (std::string line; std::getline(in, line) && line.rfind("# ", 0) == 0;) {
    if (line.rfind("# set: ", 0) == 0) c.sets.push_back(line.substr(7));
    if (line.rfind("# expect: ", 0) == 0) {
      std::string expected = replace_all(line.substr(10), "{dir}", dir);
      c.expected = expected.rfind("--set", 0) == 0 ? expected : dir + "/" + expected;
    }
  }
  return c;
}

TEST(ConfigBroken, EveryFileFailsWithItsExactLocationAndMessage) {
  int cases = 0;
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(kTestDir + "/broken")) {
    if (entry.path().extension() == ".yaml") paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const fs::path& path : paths) {
    BrokenCase c = read_case(path);
    ASSERT_FALSE(c.expected.empty()) << path << " has no '# expect:' line";
    SCOPED_TRACE(path.filename().string());
    try {
      config::load(c.path, c.sets);
      ADD_FAILURE() << "loaded without error";
    } catch (const ConfigError& error) {
      EXPECT_EQ(std::string(error.what()), c.expected);
    }
    ++cases;
  }
  EXPECT_GE(cases, 20);  // the corpus is all there (typo, type, range, rules, base, --set)
}

TEST(ConfigBroken, MissingTopFileNamesIt) {
  try {
    config::load(kTestDir + "/data/absent.yaml");
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()), kTestDir + "/data/absent.yaml: config file not found");
  }
}

TEST(ConfigPrecedence, DefaultThenBaseThenFileThenLaterFileThenSet) {
  const std::string base = kTestDir + "/data/prec_base.yaml";
  const std::string file = kTestDir + "/data/prec_file.yaml";
  const std::string later = kTestDir + "/data/prec_later.yaml";
  ExperimentConfig c = config::load(file, {"model.d_ff=300", "train.lr.scale=2"});
  EXPECT_EQ(c.model.encoder_layers, 6);  // default
  EXPECT_EQ(c.model.heads, 4);           // base
  EXPECT_EQ(c.model.d_model, 256);       // base
  EXPECT_EQ(c.train.lr.warmup, 100);     // base
  EXPECT_EQ(c.name, "from_file");        // file over base
  EXPECT_EQ(c.train.steps, 700);         // file over base
  EXPECT_EQ(c.model.d_ff, 300);          // --set over file over base
  EXPECT_EQ(c.train.lr.scale, 2.0);      // --set over default
  EXPECT_EQ(c.model.d_k, 64);            // the default d_k stays 64 (not d_model / heads)

  ExperimentConfig two = config::load(std::vector<std::string>{file, later});
  EXPECT_EQ(two.train.steps, 900);  // the later file wins
  EXPECT_EQ(two.model.d_ff, 512);

  ExperimentConfig only_base = config::load(base, {"train.steps=1", "train.steps=2"});
  EXPECT_EQ(only_base.train.steps, 2);  // the later --set wins
}

TEST(ConfigPrecedence, ZeroHeadWidthResolvesToDModelOverHeads) {
  ExperimentConfig c = config::load(kTestDir + "/data/prec_base.yaml",
                                    {"model.d_k=0", "model.d_v=0", "model.heads=8"});
  EXPECT_EQ(c.model.d_k, 32);  // 256 / 8
  EXPECT_EQ(c.model.d_v, 32);
}

TEST(ConfigSet, ValuesAreParsedAsYaml) {
  ExperimentConfig c = config::load(
      kTestDir + "/data/prec_base.yaml",
      {"log.attention_probes=[a b c, \"x: y\"]", "model.attention_scale=0.25", "name='007'",
       "model.norm=pre", "model.tie_embeddings=false", "train.optimizer.eps=1e-6", "seed=42"});
  ASSERT_EQ(c.log.attention_probes.size(), 2u);
  EXPECT_EQ(c.log.attention_probes[0], "a b c");
  EXPECT_EQ(c.log.attention_probes[1], "x: y");
  EXPECT_EQ(c.model.attention_scale.mode, AttentionScale::Mode::kConstant);
  EXPECT_EQ(c.model.attention_scale.constant, 0.25);
  EXPECT_EQ(c.name, "007");
  EXPECT_EQ(c.model.norm, NormPlacement::kPre);
  EXPECT_FALSE(c.model.tie_embeddings);
  EXPECT_EQ(c.train.optimizer.eps, 1e-6);
  EXPECT_EQ(c.seed, 42u);
}

// Writes `text` to a fresh file under the build's temporary directory and returns its path.
std::string write_temp(const std::string& name, const std::string& text) {
  fs::path dir = fs::temp_directory_path() / "attnlab_config_test";
  fs::create_directories(dir);
  fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigDump, LoadingTheDumpGivesTheSameConfig) {
  ExperimentConfig original = config::load(
      kTestDir + "/data/prec_file.yaml",
      {"log.attention_probes=[the cat sat, \"quoted \\\"text\\\"\", '', 'yes']",
       "model.attention_scale=learned", "train.optimizer.eps=1e-9", "train.lr.peak=0.1",
       "name=\"12\"", "data.train.src=../data/train.en", "seed=18446744073709551615"});
  const std::string dump = config::dump_yaml(original);
  ExperimentConfig reloaded = config::load(write_temp("dump.yaml", dump));
  EXPECT_EQ(config::flatten(reloaded), config::flatten(original));
  EXPECT_EQ(config::dump_yaml(reloaded), dump);
  // Spot checks against the values set above, independent of the option table's show().
  EXPECT_EQ(reloaded.log.attention_probes,
            (std::vector<std::string>{"the cat sat", "quoted \"text\"", "", "yes"}));
  EXPECT_TRUE(reloaded.model.attention_scale.learned());
  EXPECT_EQ(reloaded.train.optimizer.eps, 1e-9);
  EXPECT_EQ(reloaded.train.lr.peak, 0.1);
  EXPECT_EQ(reloaded.name, "12");
  EXPECT_EQ(reloaded.data.train.src, "../data/train.en");
  EXPECT_EQ(reloaded.seed, 18446744073709551615ull);
  EXPECT_EQ(reloaded.model.d_ff, 512);
  EXPECT_EQ(reloaded.model.heads, 4);
}

TEST(ConfigDump, EveryOptionAppearsOnceInTableOrder) {
  const std::string dump = config::dump_yaml(ExperimentConfig{}, false);
  EXPECT_EQ(dump.substr(0, 10), "name: run\n");
  EXPECT_NE(dump.find("model:\n  encoder_layers: 6\n"), std::string::npos);
  EXPECT_NE(dump.find("train:\n  batch_tokens: 25000\n"), std::string::npos);
  EXPECT_NE(dump.find("  optimizer:\n    beta1: 0.9\n    beta2: 0.98\n    eps: 1.0e-09\n"),
            std::string::npos);
  EXPECT_NE(dump.find("  attention_probes: []\n"), std::string::npos);
  const auto flat = config::flatten(ExperimentConfig{});
  EXPECT_EQ(flat.size(), config::options().size());
  for (const auto& [key, value] : flat) EXPECT_NE(config::find_option(key), nullptr) << key;
}

TEST(ConfigDump, NumbersRoundTripAndReadAsFloats) {
  EXPECT_EQ(config::format_number(0.1), "0.1");
  EXPECT_EQ(config::format_number(1.0), "1.0");
  EXPECT_EQ(config::format_number(1e-9), "1.0e-09");
  EXPECT_EQ(config::format_number(2.5e-4), "0.00025");
  EXPECT_EQ(config::format_number(0.98), "0.98");
  EXPECT_EQ(config::format_number(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(config::format_string("post"), "post");
  EXPECT_EQ(config::format_string(""), "\"\"");
  EXPECT_EQ(config::format_string("no"), "\"no\"");
  EXPECT_EQ(config::format_string("1e3"), "\"1e3\"");
  EXPECT_EQ(config::format_string("a b"), "\"a b\"");
}

TEST(ConfigValidate, CodeBuiltConfigsAreCheckedByKey) {
  ExperimentConfig c;
  EXPECT_NO_THROW(config::validate(c));
  c.train.label_smoothing = 1.0;
  try {
    config::validate(c);
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "train.label_smoothing: expected a number in [0.0, 1.0), got 1.0");
  }
  c = ExperimentConfig{};
  c.eval.average_last = 6;  // keep_checkpoints is 5
  EXPECT_THROW(config::validate(c), ConfigError);
  c = ExperimentConfig{};
  c.data.task = DataTask::kCorpus;  // no files named
  try {
    config::validate(c);
    FAIL();
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "data.train.src must name a file when data.task is corpus");
  }
}

TEST(ModelProblems, EveryBrokenRuleComesWithItsKeysInRuleOrder) {
  ModelConfig m;
  EXPECT_TRUE(m.problems().empty());
  m.d_model = 63;  // odd, with sinusoidal positions
  m.bos_id = 0;    // equals pad_id
  m.dropout = 1.0;
  const std::vector<ModelProblem> problems = m.problems();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].keys, std::vector<std::string>{"model.dropout"});
  EXPECT_EQ(problems[0].message, "model.dropout must be in [0, 1), got 1");
  EXPECT_EQ(problems[1].keys, (std::vector<std::string>{"model.d_model", "model.positions"}));
  EXPECT_EQ(problems[2].keys,
            (std::vector<std::string>{"model.pad_id", "model.bos_id", "model.eos_id"}));
  EXPECT_EQ(problems[2].message, "model.pad_id, bos_id and eos_id must differ, got 0, 0, 2");
  // validate() and the config check report the first, keyed by the rule, not by its wording.
  EXPECT_THROW(m.validate(), Error);
  const std::optional<config::RuleViolation> violation = config::check_model(m);
  ASSERT_TRUE(violation.has_value());
  EXPECT_EQ(violation->keys, problems[0].keys);
  EXPECT_EQ(violation->message, problems[0].message);
}

TEST(ConfigReference, ListsEveryKeyWithTypeAndDefault) {
  const std::string reference = config::option_reference();
  EXPECT_NE(reference.find("| model.heads | integer in [1, 65536] | 8 | h, attention heads |"),
            std::string::npos);
  EXPECT_NE(reference.find("| model.norm | post \\| pre | post |"), std::string::npos);
  size_t rows = static_cast<size_t>(std::count(reference.begin(), reference.end(), '\n'));
  EXPECT_EQ(rows, config::options().size() + 2);
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace {

// Text that is not UTF-8 never reaches a run log (whose string attributes are UTF-8): refused
// from --set as from a file (the file cases are in broken/invalid_utf8_*.yaml).
TEST(ConfigEncoding, SetValuesMustBeUtf8) {
  try {
    config::load(std::vector<std::string>{}, {"name=run-\xff"});
    FAIL() << "loaded without error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "--set name: invalid UTF-8 at byte offset 4 of the value; values must be UTF-8 text");
  }
  EXPECT_EQ(config::load(std::vector<std::string>{}, {"name=caf\xc3\xa9"}).name, "caf\xc3\xa9");
}

// A config held in memory (a run's stored config_yaml) is named in errors as its caller says,
// with the line and column in that text.
TEST(ConfigText, ErrorsNameTheTextsSource) {
  const std::string name = "runs/x/run.h5 (attribute config_yaml)";
  EXPECT_EQ(config::load_text("name: a\nmodel: {heads: 4}\n", name).model.heads, 4);
  try {
    config::load_text("name: a\nmodel: {haeds: 4}\n", name);
    FAIL() << "loaded without error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              name + ":2:9: unknown key 'model.haeds' (did you mean 'model.heads'?)");
  }
  try {
    config::load_text("name: a\nmodel: {heads: 4\n", name);
    FAIL() << "loaded without error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(name + ":", 0), 0u) << error.what();
  }
  try {
    config::load_text("base: other.yaml\n", name);
    FAIL() << "loaded without error";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(name + ":1:7: base:", 0), 0u) << error.what();
  }
}

}  // namespace
}  // namespace attnlab
