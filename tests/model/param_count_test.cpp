// Parameter counts: the name table against the closed-form formula, and the paper's base model.
#include "core/model/param_count.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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

// Which formula term a table group belongs to, read from the group's name alone.
ParameterFormula::Counts term_of_group(const std::string& group) {
  using Counts = ParameterFormula::Counts;
  if (group.rfind("encoder.layers.", 0) == 0) return Counts::kEncoderLayers;
  if (group.rfind("decoder.layers.", 0) == 0) return Counts::kDecoderLayers;
  if (group == "encoder.layer_norm" || group == "decoder.layer_norm") return Counts::kStackNorms;
  EXPECT_EQ(group, "embeddings");
  return Counts::kEmbeddings;
}

TEST(ParamCount, EachFormulaTermCountsItsTableGroups) {
  // The printed formula is the one the count sums; each of its terms must equal the tensors of
  // the groups it names, so a term cannot be right only in total.
  for (const test::ModelVariant& variant : test::model_variants()) {
    const ModelConfig c = variant.applied_to(ModelConfig{});
    std::map<ParameterFormula::Counts, int64_t> from_table, from_formula;
    const ParamTable table(c);
    for (const ParamEntry& e : table.entries())
      from_table[term_of_group(e.group)] += e.shape.numel();
    for (const ParameterFormula::Term& term : parameter_formula(c).terms)
      from_formula[term.counts] += term.value;
    EXPECT_EQ(from_formula, from_table) << variant.name();
  }
}

TEST(ParamCount, FormulaPrintsOnlyTheTermsTheArchitectureHas) {
  ModelConfig c;
  auto expressions = [](const ModelConfig& config) {
    std::string text;
    for (const auto& term : parameter_formula(config).terms) text += term.expression + "|";
    for (const auto& definition : parameter_formula(config).definitions)
      text += definition.symbol + "=" + definition.expression + "|";
    return text;
  };
  EXPECT_EQ(expressions(c),
            "N_enc (attn + ffn + 2 LN)|N_dec (2 attn + ffn + 3 LN)|vocab D|"
            "attn=2 (D H d_k + H d_k) + (D H d_v + H d_v) + (H d_v D + D)|"
            "ffn=(D d_ff + d_ff) + (d_ff D + D)|LN=2 D|");
  // Base by hand (the test above): attn 1,050,624, ffn 2,099,712, LN 1,024.
  const ParameterFormula base = parameter_formula(c);
  EXPECT_EQ(base.definitions[0].value, 1050624);
  EXPECT_EQ(base.definitions[1].value, 2099712);
  EXPECT_EQ(base.definitions[2].value, 1024);
  c.norm = NormPlacement::kPre;
  c.norm_type = NormType::kRmsNorm;
  c.tie_embeddings = false;
  c.output_bias = true;
  c.positions = PositionKind::kLearned;
  c.attention_scale = AttentionScale::parse("learned");
  const std::string all = expressions(c);
  for (const char* part : {"3 vocab D", "vocab (output bias)", "2 max_positions D", "2 LN (Pre-LN",
                           "+ 1 (learned scale)", "LN=D (RMSNorm: no bias)"})
    EXPECT_NE(all.find(part), std::string::npos) << part << " missing from " << all;
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
