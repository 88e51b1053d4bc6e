// Parameter counts: the name table against the closed-form formula, and the paper's base model.
#include "core/model/param_count.h"

#include <gtest/gtest.h>

#include "core/model/param_table.h"

namespace attnlab {
namespace {

int64_t table_total(const ModelConfig& config) {
  int64_t total = 0;
  for (const ComponentCount& c : parameter_counts(config)) total += c.params;
  return total;
}

TEST(ParamCount, PaperBaseIs63_08MillionWithoutOutputBias) {
  ModelConfig base;  // the defaults are the paper's base model, V = 37000
  // Hand count: attention 4*(512*512+512) = 1,050,624; FFN 2*512*2048+2048+512 = 2,099,712;
  // encoder layer = 1,050,624 + 2,099,712 + 2*1024 = 3,152,384; decoder layer = 2*1,050,624 +
  // 2,099,712 + 3*1024 = 4,204,032; 6 of each = 44,138,496; embedding 37000*512 = 18,944,000.
  EXPECT_EQ(table_total(base), 63082496);
  EXPECT_EQ(analytic_parameter_count(base), 63082496);
  base.output_bias = true;
  EXPECT_EQ(table_total(base), 63119496);  // the paper's 65M sits ~2M above: the vocabulary term
}

TEST(ParamCount, TableAgreesWithFormulaAcrossAblations) {
  for (int heads : {1, 4, 16}) {
    for (bool learned : {false, true}) {
      for (bool pre : {false, true}) {
        ModelConfig c;
        c.heads = heads;
        c.d_k = 512 / heads;
        c.d_v = 512 / heads;
        c.positions = learned ? PositionKind::kLearned : PositionKind::kSinusoidal;
        c.norm = pre ? NormPlacement::kPre : NormPlacement::kPost;
        c.attention_scale = AttentionScale::parse(learned ? "learned" : "rsqrt_dk");
        c.tie_embeddings = !pre;
        EXPECT_EQ(table_total(c), analytic_parameter_count(c)) << heads << learned << pre;
      }
    }
  }
  ModelConfig row_b;
  row_b.d_k = 16;  // Table 3 row B: d_k alone changes
  EXPECT_EQ(table_total(row_b), analytic_parameter_count(row_b));
}

}  // namespace
}  // namespace attnlab
