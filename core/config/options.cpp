// The option table and the typed parsers behind it. Member paths double as YAML keys, so a key
// cannot drift from the field it sets.
#include "core/config/options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "core/util/check.h"

namespace attnlab::config {
namespace {

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
// Upper bounds on sizes that multiply into allocations and into int64 arithmetic (max_length + 2,
// d_model * d_ff, ...): far beyond any model or corpus attnlab can train, and small enough that no
// product of them in the checks overflows.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxWidth = int64_t{1} << 20;
constexpr int64_t kMaxHeads = int64_t{1} << 16;
constexpr int64_t kMaxVocabulary = int64_t{1} << 24;
constexpr int64_t kMaxSequence = int64_t{1} << 20;  // tokens in one sentence or position table
constexpr int64_t kMaxExamples = int64_t{1} << 31;
constexpr int64_t kMaxBatchTokens = int64_t{1} << 30;
constexpr int64_t kMaxAccumulate = int64_t{1} << 20;
constexpr int64_t kMaxBeam = 1024;
constexpr int64_t kMaxRanks = int64_t{1} << 20;
constexpr int64_t kMaxThreads = 1024;
constexpr double kInf = std::numeric_limits<double>::infinity();

// How a value that failed to parse is shown back to the user.
std::string describe(const RawValue& value) {
  switch (value.kind) {
    case RawValue::Kind::kScalar: return value.quoted ? "\"" + value.text + "\"" : value.text;
    case RawValue::Kind::kList: return "a list";
    case RawValue::Kind::kNull: return "nothing (null)";
    case RawValue::Kind::kMap: return "a mapping";
  }
  return "?";
}

std::string expected(const std::string& what, const RawValue& value) {
  return "expected " + what + ", got " + describe(value);
}

bool is_plain_scalar(const RawValue& value) {
  return value.kind == RawValue::Kind::kScalar && !value.quoted;
}

bool parse_int64(const RawValue& value, int64_t* out) {
  if (!is_plain_scalar(value) || value.text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(value.text.c_str(), &end, 10);
  if (errno != 0 || end != value.text.c_str() + value.text.size()) return false;
  *out = parsed;
  return true;
}

bool parse_double(const RawValue& value, double* out) {
  if (!is_plain_scalar(value) || value.text.empty()) return false;
  char* end = nullptr;
  double parsed = std::strtod(value.text.c_str(), &end);
  if (end != value.text.c_str() + value.text.size() || !std::isfinite(parsed)) return false;
  *out = parsed;
  return true;
}

std::string integer_type(int64_t min, int64_t max) {
  if (max == kNoMax) return "integer >= " + std::to_string(min);
  return "integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

struct NumberRange {
  double min = -kInf;
  bool min_open = false;
  double max = kInf;
  bool max_open = false;

  bool contains(double x) const {
    bool above = min_open ? x > min : x >= min;
    bool below = max_open ? x < max : x <= max;
    return above && below;
  }
  std::string type() const {
    if (max == kInf) return std::string("number ") + (min_open ? "> " : ">= ") + format_number(min);
    return std::string("number in ") + (min_open ? "(" : "[") + format_number(min) + ", " +
           format_number(max) + (max_open ? ")" : "]");
  }
};

const NumberRange kNonNegative{0.0, false, kInf, false};
const NumberRange kPositive{0.0, true, kInf, false};
const NumberRange kProbability{0.0, false, 1.0, true};  // [0, 1): a dropout rate or smoothing
const NumberRange kShrinkFactor{0.0, true, 1.0, true};  // (0, 1): a rate that only decreases

// The builders below take `access`, a generic lambda returning the field of a (const or mutable)
// ExperimentConfig, written by ATTNLAB_FIELD so that the key is the member path.
template <typename Access>
Option integer(const char* key, Access access, int64_t min, int64_t max, const char* help) {
  std::string type = integer_type(min, max);
  return Option{key, type, help,
                [access](const ExperimentConfig& c) { return std::to_string(access(c)); },
                [access, min, max, type](ExperimentConfig& c, const RawValue& v) -> std::string {
                  int64_t parsed = 0;
                  if (!parse_int64(v, &parsed) || parsed < min || parsed > max) {
                    return expected("an " + type, v);
                  }
                  using Field = std::remove_reference_t<decltype(access(c))>;
                  access(c) = static_cast<Field>(parsed);
                  return "";
                }};
}

template <typename Access>
Option unsigned_integer(const char* key, Access access, const char* help) {
  return Option{key, "integer >= 0", help,
                [access](const ExperimentConfig& c) { return std::to_string(access(c)); },
                [access](ExperimentConfig& c, const RawValue& v) -> std::string {
                  const std::string& t = v.text;
                  bool digits = is_plain_scalar(v) && !t.empty() &&
                                t.find_first_not_of("0123456789") == std::string::npos;
                  errno = 0;
                  unsigned long long parsed = digits ? std::strtoull(t.c_str(), nullptr, 10) : 0;
                  if (!digits || errno != 0) return expected("an integer >= 0", v);
                  access(c) = parsed;
                  return "";
                }};
}

template <typename Access>
Option number(const char* key, Access access, NumberRange range, const char* help) {
  return Option{key, range.type(), help,
                [access](const ExperimentConfig& c) { return format_number(access(c)); },
                [access, range](ExperimentConfig& c, const RawValue& v) -> std::string {
                  double parsed = 0.0;
                  if (!parse_double(v, &parsed) || !range.contains(parsed)) {
                    return expected("a " + range.type(), v);
                  }
                  access(c) = parsed;
                  return "";
                }};
}

template <typename Access>
Option boolean(const char* key, Access access, const char* help) {
  return Option{key, "true | false", help,
                [access](const ExperimentConfig& c) { return access(c) ? "true" : "false"; },
                [access](ExperimentConfig& c, const RawValue& v) -> std::string {
                  if (is_plain_scalar(v) && (v.text == "true" || v.text == "false")) {
                    access(c) = v.text == "true";
                    return "";
                  }
                  return expected("true or false", v);
                }};
}

template <typename Access>
Option text(const char* key, Access access, const char* help) {
  return Option{key, "string", help,
                [access](const ExperimentConfig& c) { return format_string(access(c)); },
                [access](ExperimentConfig& c, const RawValue& v) -> std::string {
                  if (v.kind == RawValue::Kind::kNull) {
                    access(c).clear();
                  } else if (v.kind == RawValue::Kind::kScalar) {
                    access(c) = v.text;
                  } else {
                    return expected("a string", v);
                  }
                  return "";
                }};
}

// A string option that names a file: relative paths are made absolute by absolute_paths().
template <typename Access>
Option file_path(const char* key, Access access, const char* help) {
  Option option = text(key, access, help);
  option.file = [access](ExperimentConfig& c) -> std::string& { return access(c); };
  return option;
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i ? separator : "") + words[i];
  return out;
}

template <typename Access>
Option choice(const char* key, Access access, const std::vector<std::string>& choices,
              const char* help) {
  std::string type = join(choices, " | ");
  return Option{key, type, help,
                [access](const ExperimentConfig& c) { return format_string(access(c)); },
                [access, choices, type](ExperimentConfig& c, const RawValue& v) -> std::string {
                  if (v.kind == RawValue::Kind::kScalar) {
                    for (const std::string& allowed : choices) {
                      if (v.text == allowed) {
                        access(c) = v.text;
                        return "";
                      }
                    }
                  }
                  return expected("one of " + type, v);
                }};
}

template <typename Access>
Option text_list(const char* key, Access access, const char* help) {
  return Option{key, "list of strings", help,
                [access](const ExperimentConfig& c) {
                  std::vector<std::string> items;
                  for (const std::string& item : access(c)) items.push_back(format_string(item));
                  return "[" + join(items, ", ") + "]";
                },
                [access](ExperimentConfig& c, const RawValue& v) -> std::string {
                  if (v.kind == RawValue::Kind::kList) {
                    access(c) = v.items;
                  } else if (v.kind == RawValue::Kind::kNull) {
                    access(c).clear();
                  } else {
                    return expected("a list of strings", v);
                  }
                  return "";
                }};
}

// An enum or small class field with its own parse(text) and to_string(value).
template <typename Access, typename Parse, typename Show>
Option parsed(const char* key, Access access, const char* type, Parse parse, Show show,
              const char* help) {
  return Option{key, type, help,
                [access, show](const ExperimentConfig& c) {
                  // A mode that is a number (attention_scale: 0.125) stays a plain YAML number.
                  const std::string text = show(access(c));
                  char* end = nullptr;
                  std::strtod(text.c_str(), &end);
                  return !text.empty() && end == text.c_str() + text.size() ? text
                                                                            : format_string(text);
                },
                [access, parse, type](ExperimentConfig& c, const RawValue& v) -> std::string {
                  if (v.kind == RawValue::Kind::kScalar) {
                    try {
                      access(c) = parse(v.text);
                      return "";
                    } catch (const Error&) {
                      // The parser's own wording names the field; the table's type is the answer.
                    }
                  }
                  return expected(std::string("one of ") + type, v);
                }};
}

// An enum field whose names, parser, printer and type text come from its one table.
template <typename Access, typename Enum>
Option enumerated(const char* key, Access access, const EnumNames<Enum>& names, const char* help) {
  return parsed(
      key, access, names.choices().c_str(),
      [&names](const std::string& text) { return names.parse(text); },
      [&names](Enum value) { return names.name(value); }, help);
}

// Model keys that decide which checkpoints fit the model (InArchitecture, options.h). A new key
// is in_architecture: it appears only when not at its default.
Option in_architecture(Option option) {
  option.architecture = InArchitecture::kUnlessDefault;
  return option;
}
Option in_architecture_always(Option option) {
  option.architecture = InArchitecture::kListed;
  return option;
}

#define ATTNLAB_FIELD(path) \
#path, [](auto& c) -> auto& { return c.path; }

std::vector<Option> build_options() {
  return {
      text(ATTNLAB_FIELD(name), "run name (readable; sweeps derive run names from it)"),
      unsigned_integer(ATTNLAB_FIELD(seed), "seed of parameter init, dropout and data order"),

      in_architecture_always(
          integer(ATTNLAB_FIELD(model.encoder_layers), 1, kMaxLayers, "N, encoder layers")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.decoder_layers), 1, kMaxLayers, "N, decoder layers")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.d_model), 1, kMaxWidth, "width of the residual stream")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.d_ff), 1, kMaxWidth, "inner width of the position-wise FFN")),
      in_architecture(enumerated(
          ATTNLAB_FIELD(model.activation), activation_names(),
          "the FFN's activation between its two linears: relu (the paper) or another of "
          "core/ops/activation.h's table (gelu: the exact erf form with its exact derivative)")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.heads), 1, kMaxHeads, "h, attention heads")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.d_k), 0, kMaxWidth,
                  "per-head query/key width; 0 = d_model / heads (which must divide)")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.d_v), 0, kMaxWidth,
                  "per-head value width; 0 = d_model / heads (which must divide)")),
      number(ATTNLAB_FIELD(model.dropout), kProbability,
             "P_drop on sub-layer outputs and embedding sums"),
      number(ATTNLAB_FIELD(model.attention_dropout), kProbability,
             "dropout on attention probabilities"),
      in_architecture_always(
          enumerated(ATTNLAB_FIELD(model.norm), norm_placement_names(),
                     "post: LN(x + sublayer(x)) (the paper); pre: x + sublayer(LN(x))")),
      in_architecture(enumerated(
          ATTNLAB_FIELD(model.norm_type), norm_type_names(),
          "the norm of every sub-layer: layernorm (x - mean) / std * w + b (the paper), or "
          "rmsnorm x / rms(x) * w (no centring, no bias)")),
      in_architecture_always(enumerated(ATTNLAB_FIELD(model.positions), position_names(),
                                        "position encoding added to embeddings")),
      in_architecture_always(integer(ATTNLAB_FIELD(model.max_positions), 1, kMaxSequence,
                                     "rows of the position table")),
      in_architecture_always(parsed(
          ATTNLAB_FIELD(model.attention_scale),
          "rsqrt_dk | none | inv_dk | learned | <positive number>", AttentionScale::parse,
          [](const AttentionScale& s) { return s.str(); },
          "logit scale s in softmax(Q K^T s); rsqrt_dk = 1/sqrt(d_k) (the paper)")),
      enumerated(
          ATTNLAB_FIELD(model.attention), attention_kernel_names(),
          "attention kernel: standard stores (B,H,T,S) probabilities; tiled (online softmax, "
          "recomputed backward) stores O(T), same values to round-off"),
      in_architecture_always(
          boolean(ATTNLAB_FIELD(model.tie_embeddings),
                  "one matrix for source, target embedding and output projection")),
      in_architecture_always(
          boolean(ATTNLAB_FIELD(model.output_bias), "a bias on the pre-softmax projection")),
      in_architecture_always(
          integer(ATTNLAB_FIELD(model.vocab_size), 4, kMaxVocabulary, "shared vocabulary size")),
      integer(ATTNLAB_FIELD(model.pad_id), 0, std::numeric_limits<int32_t>::max(),
              "id of the padding token"),
      integer(ATTNLAB_FIELD(model.bos_id), 0, std::numeric_limits<int32_t>::max(),
              "id of the begin-of-sentence token"),
      integer(ATTNLAB_FIELD(model.eos_id), 0, std::numeric_limits<int32_t>::max(),
              "id of the end-of-sentence token"),
      number(ATTNLAB_FIELD(model.layer_norm_eps), kPositive, "epsilon inside LayerNorm or RMSNorm"),

      enumerated(ATTNLAB_FIELD(data.task), data_task_names(),
                 "synthetic task, or corpus for parallel text files"),
      integer(ATTNLAB_FIELD(data.synthetic.symbols), 1, kMaxVocabulary,
              "distinct content symbols (ids after pad/bos/eos)"),
      integer(ATTNLAB_FIELD(data.synthetic.min_length), 1, kMaxSequence,
              "shortest synthetic sequence"),
      integer(ATTNLAB_FIELD(data.synthetic.max_length), 1, kMaxSequence,
              "longest synthetic sequence"),
      integer(ATTNLAB_FIELD(data.synthetic.train_size), 1, kMaxExamples,
              "synthetic training examples"),
      integer(ATTNLAB_FIELD(data.synthetic.dev_size), 1, kMaxExamples,
              "held-out synthetic examples (disjoint seed stream)"),
      file_path(ATTNLAB_FIELD(data.train.src), "training source text, one sentence per line"),
      file_path(ATTNLAB_FIELD(data.train.tgt), "training target text, line-aligned with src"),
      file_path(ATTNLAB_FIELD(data.dev.src), "dev source text"),
      file_path(ATTNLAB_FIELD(data.dev.tgt), "dev target text"),
      file_path(ATTNLAB_FIELD(data.test.src), "test source text"),
      file_path(ATTNLAB_FIELD(data.test.tgt), "test target text"),
      choice(ATTNLAB_FIELD(data.tokenizer.type), {"sentencepiece"}, "tokenizer of corpus text"),
      integer(ATTNLAB_FIELD(data.tokenizer.vocab_size), 4, kMaxVocabulary,
              "joint BPE vocabulary size"),
      file_path(ATTNLAB_FIELD(data.tokenizer.model),
                "path of the tokenizer model; trained beside the data when missing"),
      integer(ATTNLAB_FIELD(data.max_length), 1, kMaxSequence,
              "longest sentence in tokens; longer pairs are skipped and counted"),

      integer(ATTNLAB_FIELD(train.batch_tokens), 1, kMaxBatchTokens,
              "source + target tokens per global batch (approximate); at least one pair of the "
              "longest length: 2 x data.max_length (corpus), 2 x (data.synthetic.max_length + 1) "
              "(synthetic tasks)"),
      integer(ATTNLAB_FIELD(train.accumulate), 1, kMaxAccumulate,
              "batches whose gradients are summed per update"),
      integer(
          ATTNLAB_FIELD(train.steps), 1, kNoMax,
          "optimizer updates (an upper bound when train.stop or train.max_epochs end it sooner)"),
      integer(ATTNLAB_FIELD(train.max_epochs), 0, kNoMax,
              "stop after this many passes over the training data; 0 = no limit"),
      integer(
          ATTNLAB_FIELD(train.stop.patience), 0, kNoMax,
          "stop after this many dev evaluations without a gain (train.stop.min_delta); 0 = off"),
      number(ATTNLAB_FIELD(train.stop.min_delta), kNonNegative,
             "a gain comes more than this below the last gain's dev loss (nats per token)"),
      number(ATTNLAB_FIELD(train.optimizer.beta1), kProbability, "Adam beta1"),
      number(ATTNLAB_FIELD(train.optimizer.beta2), kProbability, "Adam beta2"),
      number(ATTNLAB_FIELD(train.optimizer.eps), kPositive, "Adam epsilon"),
      enumerated(ATTNLAB_FIELD(train.lr.schedule), LrSchedule::names(),
                 "noam: scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5); cosine: linear "
                 "warmup to peak, then peak * (1 + cos(pi * progress)) / 2, zero at train.steps"),
      integer(ATTNLAB_FIELD(train.lr.warmup), 0, kNoMax,
              "warmup steps (noam, inverse_sqrt, cosine); 0 = none (constant, inverse_sqrt, "
              "cosine)"),
      number(ATTNLAB_FIELD(train.lr.scale), kPositive, "noam: multiplies the schedule"),
      number(ATTNLAB_FIELD(train.lr.peak), kPositive,
             "constant: the rate; inverse_sqrt, cosine: the rate at the end of warmup"),
      integer(ATTNLAB_FIELD(train.lr.cooldown), 0, kNoMax,
              "steps of a linear cool-down to zero at train.steps, on top of the schedule (a "
              "fixed budget); 0 = none"),
      number(ATTNLAB_FIELD(train.lr.shrink), kShrinkFactor,
             "multiplies the rate after train.lr.shrink_patience stalled dev evaluations"),
      integer(
          ATTNLAB_FIELD(train.lr.shrink_patience), 0, kNoMax,
          "dev evaluations without a gain (train.stop.min_delta) before the rate shrinks; 0 = off"),
      integer(ATTNLAB_FIELD(train.lr.shrink_after), 0, kNoMax,
              "the rate shrinks at no evaluation before this step; 0 = from the first"),
      number(ATTNLAB_FIELD(train.label_smoothing), kProbability, "eps_ls"),
      number(ATTNLAB_FIELD(train.clip), kNonNegative, "max global gradient norm; 0 = off"),
      integer(ATTNLAB_FIELD(train.checkpoint_every), 0, kNoMax,
              "steps between checkpoints; 0 = only at the end"),
      integer(ATTNLAB_FIELD(train.keep_checkpoints), 1, kNoMax, "newest checkpoints kept"),
      enumerated(
          ATTNLAB_FIELD(train.precision), blas::precision_names(),
          "operands of the matrix products: fp32, or bf16 rounded with fp32 accumulation and "
          "results (weights, gradients, Adam, LayerNorm, softmax and the loss stay fp32); bf16 "
          "needs a CPU with avx512_bf16 or amx_bf16"),

      integer(ATTNLAB_FIELD(eval.every), 0, kNoMax,
              "steps between dev evaluations; 0 = only at the end"),
      integer(ATTNLAB_FIELD(eval.beam), 1, kMaxBeam, "beam size; 1 = greedy"),
      number(ATTNLAB_FIELD(eval.length_penalty), kNonNegative,
             "GNMT alpha in lp = ((5 + |Y|) / 6)^alpha"),
      integer(ATTNLAB_FIELD(eval.max_len_offset), 0, kMaxSequence,
              "max output length = source length + offset"),
      integer(ATTNLAB_FIELD(eval.average_last), 0, kNoMax,
              "checkpoints averaged for the final evaluation; 0 = none"),
      enumerated(
          ATTNLAB_FIELD(eval.checkpoint), eval_checkpoint_names(),
          "parameters of the final evaluation and of eval/translate: newest (or the average of "
          "eval.average_last), or best (ckpt/best.h5, the lowest dev loss)"),
      boolean(ATTNLAB_FIELD(eval.bleu_during_training),
              "beam-search BLEU at every evaluation, not only at the end"),
      boolean(ATTNLAB_FIELD(eval.final_bleu),
              "beam-search dev BLEU at the final evaluation (implied by bleu_during_training)"),
      text_list(ATTNLAB_FIELD(eval.decode_splits),
                "splits (dev, test) decoded with beam search into /eval_<split> once the run has "
                "completed, from the final evaluation's parameters (as attnlab eval does)"),

      text(ATTNLAB_FIELD(log.dir), "runs go to <dir>/<sweep>/<run_id>/ or <dir>/<name>/"),
      integer(ATTNLAB_FIELD(log.every), 1, kNoMax, "steps between rows in /train"),
      integer(ATTNLAB_FIELD(log.diagnostics_every), 0, kNoMax,
              "steps between /diagnostics rows; 0 = off"),
      text_list(ATTNLAB_FIELD(log.attention_probes),
                "source sentences whose attention maps are saved"),

      integer(ATTNLAB_FIELD(cluster.ranks), 1, kMaxRanks, "MPI ranks per run"),
      integer(ATTNLAB_FIELD(cluster.threads_per_rank), 1, kMaxThreads,
              "OpenBLAS/OpenMP threads per rank"),
      file_path(ATTNLAB_FIELD(cluster.profile),
                "cluster/profiles/<name>.yaml for the Slurm launcher"),
      number(ATTNLAB_FIELD(cluster.collective_timeout), kNonNegative,
             "seconds a collective waits for a rank during training (raised to 10 median steps) "
             "before every rank ends, naming the ranks that did not arrive; 0 = wait for ever"),
  };
}

#undef ATTNLAB_FIELD

}  // namespace

const std::vector<Option>& options() {
  static const std::vector<Option> table = build_options();
  return table;
}

const Option* find_option(const std::string& key) {
  static const std::unordered_map<std::string, const Option*> by_key = [] {
    std::unordered_map<std::string, const Option*> map;
    for (const Option& option : options()) map[option.key] = &option;
    return map;
  }();
  auto it = by_key.find(key);
  return it == by_key.end() ? nullptr : it->second;
}

bool is_section(const std::string& prefix) {
  for (const Option& option : options()) {
    if (option.key.size() > prefix.size() && option.key.compare(0, prefix.size(), prefix) == 0 &&
        option.key[prefix.size()] == '.') {
      return true;
    }
  }
  return false;
}

std::string format_number(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[40];
  // The shortest %g text that reads back as the same double.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  std::string out(buffer);
  size_t exponent = out.find_first_of("eE");
  std::string mantissa = out.substr(0, exponent);
  if (mantissa.find('.') == std::string::npos && mantissa.find("nan") == std::string::npos) {
    mantissa += ".0";
  }
  return exponent == std::string::npos ? mantissa : mantissa + out.substr(exponent);
}

std::string format_string(const std::string& value) {
  static const char* kReserved[] = {
      "true", "false", "yes", "no",  "on",   "off",  "null",  "~",   "y",  "n",  "True", "False",
      "Yes",  "No",    "On",  "Off", "Null", "TRUE", "FALSE", "YES", "NO", "ON", "OFF",  "NULL"};
  bool plain = !value.empty() && value.find_first_not_of(
                                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789_./+-") == std::string::npos;
  if (plain && (value[0] == '-' || value[0] == '+' || value[0] == '.')) plain = false;
  if (plain) {
    for (const char* word : kReserved) plain = plain && value != word;
    char* end = nullptr;
    std::strtod(value.c_str(), &end);
    if (end == value.c_str() + value.size()) plain = false;  // would read back as a number
  }
  if (plain) return value;
  std::string quoted = "\"";
  for (char ch : value) {
    if (ch == '"' || ch == '\\') {
      quoted += '\\';
      quoted += ch;
    } else if (ch == '\n') {
      quoted += "\\n";
    } else if (ch == '\t') {
      quoted += "\\t";
    } else {
      quoted += ch;
    }
  }
  return quoted + "\"";
}

}  // namespace attnlab::config
