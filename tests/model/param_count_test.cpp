// Parameter counts: the name table against the closed-form formula, and the paper's base model.
#include "core/model/param_count.h"

#include <gtest/gtest.h>

#include "core/model/param_table.h"
#include "tests/common/model_variants.h"

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
  // Every architecture variant (tests/common/model_variants.h) of the base model, at three head
  // counts.
  for (const test::ModelVariant& variant : test::model_variants()) {
    for (int heads : {1, 4, 16}) {
      ModelConfig c = variant.applied_to(ModelConfig{});
      c.heads = heads;
      c.d_k = 512 / heads;
      c.d_v = 512 / heads;
      EXPECT_EQ(table_total(c), analytic_parameter_count(c))
          << variant.name() << " heads " << heads;
    }
  }
  ModelConfig row_b;
  row_b.d_k = 16;  // Table 3 row B: d_k alone changes
  EXPECT_EQ(table_total(row_b), analytic_parameter_count(row_b));
}

TEST(ParamCount, RmsNormHasOneGainPerNormAndNoBias) {
  // Post-LN base: 6 x 2 + 6 x 3 = 30 norms of d_model 512; pre-LN adds the two final norms.
  for (bool pre : {false, true}) {
    ModelConfig layer_norm;
    layer_norm.norm = pre ? NormPlacement::kPre : NormPlacement::kPost;
    ModelConfig rms_norm = layer_norm;
    rms_norm.norm_type = NormType::kRmsNorm;
    const int64_t norms = pre ? 32 : 30;
    EXPECT_EQ(table_total(layer_norm) - table_total(rms_norm), norms * 512) << pre;
    const ParamTable table(rms_norm);
    int64_t gains = 0;
    for (const ParamEntry& e : table.entries()) {
      if (e.component != "norms") continue;
      EXPECT_EQ(e.name.substr(e.name.size() - 7), ".weight") << e.name;
      ++gains;
    }
    EXPECT_EQ(gains, norms);
    EXPECT_TRUE(table.contains("encoder.layers.0.self_attn_layer_norm.weight"));
    EXPECT_FALSE(table.contains("encoder.layers.0.self_attn_layer_norm.bias"));
    EXPECT_EQ(table.contains("encoder.layer_norm.weight"), pre);
    EXPECT_EQ(table.contains("decoder.layer_norm.weight"), pre);
  }
}

}  // namespace
}  // namespace attnlab
