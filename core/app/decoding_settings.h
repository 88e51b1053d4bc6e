// The decoding settings attnlab eval and attnlab translate share: the run's own eval.* values,
// overridden by --average, --beam, --alpha, --max-len-offset, --threads and --precision.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>

#include "core/config/experiment.h"
#include "core/decode/beam.h"
#include "core/train/corpus_source.h"

namespace attnlab::cli {

// Declares the flags decoding_settings reads: --beam, --alpha, --max-len-offset, --average,
// --checkpoint, --threads and --precision.
void add_decoding_options(boost::program_options::options_description& options);

struct DecodingSettings {
  int64_t average = 0;  // checkpoints averaged (0 = the newest only)
  bool best = false;    // ckpt/best.h5 instead of the newest checkpoint
  BeamOptions beam;
};

// Reads the flags over `stored` (the run's config), throwing UsageError on a --beam, --alpha,
// --max-len-offset or --average that the option table's rule of the eval.* key it overrides
// refuses (the same rule as in a config: --alpha -1 like eval.length_penalty: -1), --average
// with --checkpoint best or an unknown --checkpoint, and sets the BLAS
// thread count (--threads, else cluster.threads_per_rank) and the precision of the products
// (--precision, else train.precision; bf16 on a CPU without it is a ConfigError).
DecodingSettings decoding_settings(const boost::program_options::variables_map& values,
                                   const ExperimentConfig& stored);

// On stderr, when `set` cut sentences to the run's data.max_length: how many, of how many.
void note_truncation(const char* command, const std::string& what, const EvalSet& set,
                     const ExperimentConfig& config);

// On stderr, when newer checkpoints were passed over: which checkpoint is used, and why each
// newer one was not.
void note_skipped_checkpoints(const char* command, const RunModel& run);

}  // namespace attnlab::cli
