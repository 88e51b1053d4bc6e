// Beam-search decoding and scoring of one split of a corpus run (split_eval.h).
#include "core/app/split_eval.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "core/app/cli.h"
#include "core/config/config.h"
#include "core/data/corpus.h"
#include "core/io/h5.h"
#include "core/metrics/bleu.h"
#include "core/metrics/perplexity.h"
#include "core/tensor/blas.h"
#include "core/train/corpus_source.h"
#include "core/train/diagnostics.h"
#include "core/util/files.h"

namespace attnlab::cli {
namespace {

// Writes `lines` to `path` through a temporary name, so a failure leaves no partial file.
void write_lines_atomically(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text.append(line).append("\n");
  write_file_atomically(path, text);
}

std::string joined(const std::vector<std::string>& values) {
  std::string text;
  for (const std::string& value : values) text += (text.empty() ? "" : ",") + value;
  return text;
}

}  // namespace

void evaluate_split(const SplitEvaluationRequest& request) {
  const std::string& run_dir = request.run_dir;
  const std::string& split = request.split;
  const DecodingSettings& settings = request.settings;
  const int64_t average = settings.average;
  const BeamOptions& beam = settings.beam;

  RunModel run = load_run_model(run_dir, average, settings.best);
  note_skipped_checkpoints(request.command, run);
  const SplitFiles& files = split == "dev" ? run.config.data.dev : run.config.data.test;
  if (files.src.empty() || files.tgt.empty()) {
    throw ConfigError("the run's config names no data." + split + " files (data." + split +
                      ".src and data." + split + ".tgt) to decode");
  }
  const ParallelText text = read_parallel_text(files.src, files.tgt);
  const EvalSet set = make_eval_set(text, run.tokenizer, run.config.train.batch_tokens,
                                    run.config.data.max_length, run.config.model);
  note_truncation(request.command, split + " sentences", set, run.config);
  const auto start = std::chrono::steady_clock::now();
  const Translation translation = translate_set(*run.model, run.tokenizer, set, beam, true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const BleuScore bleu = corpus_bleu(translation.hypotheses, text.tgt);
  const AttentionStatistics attention = attention_statistics(*run.model, set.batches);
  const double cross_attention = mean_cross_attention_relative_entropy(attention);
  const double ppl = perplexity(translation.nll_sum, translation.target_tokens);

  const bool named = !request.group.empty();
  const std::string group_name = named ? request.group : "eval_" + split;
  // hyp.<split>.txt, or hyp.<group>.txt for a named group (so evaluations do not overwrite).
  const std::string hyp_path = run_dir + "/hyp." + (named ? group_name : split) + ".txt";
  write_lines_atomically(hyp_path, translation.hypotheses);
  {
    h5::File file = h5::File::open_unlocked(run_dir + "/run.h5", h5::Access::write);
    h5::Group group = file.root().require_group(group_name);
    group.set_double("bleu", bleu.score);
    group.set_string("bleu_signature", bleu_signature());
    group.set_string("bleu_detail", bleu.format());
    group.set_double("ppl", ppl);
    group.set_double("nll", translation.nll_sum / static_cast<double>(translation.target_tokens));
    group.set_int("target_tokens", translation.target_tokens);
    group.set_int("sentences", set.sentences);
    group.set_int("truncated", set.truncated);
    group.set_int("step", run.step);
    group.set_int("beam", beam.beam);
    group.set_double("length_penalty", beam.alpha);
    group.set_int("max_len_offset", beam.max_len_offset);
    group.set_int("average_last", average);
    group.set_string("checkpoint", settings.best ? "best" : "newest");
    group.set_string("precision", blas::precision_names().name(blas::precision()));
    group.set_string("checkpoints", joined(run.checkpoints));
    group.set_string("source", files.src);
    group.set_string("reference", files.tgt);
    group.set_string("hypotheses", hyp_path);
    group.set_double("decode_seconds", seconds);
    group.set_double("cross_attention_entropy", cross_attention);
    h5::Group attention_group = group.require_group("attention");
    io::write_head_statistics(attention_group, head_statistics(attention, run.step));
    file.flush();
  }
  std::printf("%s %s (step %ld, %s, beam %ld, alpha %.2f): %zu sentences in %.1f s\n",
              run_dir.c_str(), split.c_str(), static_cast<long>(run.step),
              settings.best  ? "best checkpoint"
              : average >= 1 ? ("average of last " + std::to_string(average)).c_str()
                             : "newest checkpoint",
              static_cast<long>(beam.beam), beam.alpha, translation.hypotheses.size(), seconds);
  std::printf("%s\nsignature: %s\nppl %.4f (per piece, %ld target tokens)\n", bleu.format().c_str(),
              bleu_signature().c_str(), ppl, static_cast<long>(translation.target_tokens));
  std::printf(
      "decoder-encoder attention entropy %.3f of uniform (teacher forcing, mean over "
      "layers, heads and target positions)\n",
      cross_attention);
  std::printf("hypotheses: %s\nresults: %s/run.h5 /%s\n", hyp_path.c_str(), run_dir.c_str(),
              group_name.c_str());
}

int64_t evaluated_step(const std::string& run_dir, const std::string& group) {
  h5::File file = h5::File::open_unlocked(run_dir + "/run.h5", h5::Access::read);
  if (!file.root().has_group(group)) return -1;
  return file.root().group(group).get_int("step");
}

int64_t final_parameters_step(const std::string& run_dir, const DecodingSettings& settings) {
  h5::File file = h5::File::open_unlocked(run_dir + "/run.h5", h5::Access::read);
  const h5::Group summary = file.root().group("summary");
  // /summary holds its numbers as doubles.
  return static_cast<int64_t>(summary.get_double(settings.best ? "best_step" : "steps"));
}

}  // namespace attnlab::cli
