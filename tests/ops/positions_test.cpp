// Positions: sinusoid values worked out by hand (interleaved sin/cos), the relative-position
// rotation property, the table add with an offset, and the learned-position gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/gradcheck.h"
#include "common/tensor_testing.h"
#include "core/ops/ops.h"

namespace attnlab::test {
namespace {

using ops::add_positions_backward;
using ops::add_positions_forward;
using ops::sinusoidal_table;

TEST(Sinusoids, HandComputedInterleaved) {
  // D = 4: frequencies 1/10000^(0/4) = 1 and 1/10000^(2/4) = 1/100.
  //   pos 0: [sin 0, cos 0, sin 0, cos 0]         = [0 1 0 1]
  //   pos 1: [sin 1, cos 1, sin .01, cos .01]
  //   pos 2: [sin 2, cos 2, sin .02, cos .02]
  std::vector<double> table(12);
  sinusoidal_table<double>(view(table, {3, 4}));
  const std::vector<double> expected = {0,
                                        1,
                                        0,
                                        1,  // pos 0
                                        0.8414709848078965,
                                        0.5403023058681398,
                                        0.009999833334166664,  // pos 1
                                        0.9999500004166653,    //
                                        0.9092974268256817,
                                        -0.4161468365471424,
                                        0.019998666693333080,  // pos 2
                                        0.9998000066665778};
  for (size_t i = 0; i < table.size(); ++i) EXPECT_NEAR(table[i], expected[i], 1e-15) << i;
}

TEST(Sinusoids, HandComputedWidthSix) {
  // D = 6: frequencies 1, 10000^(-2/6) = 0.046415888336127795, 10000^(-4/6) =
  // 0.0021544346900318843.
  //   pos 3: [sin 3, cos 3, sin 0.13924766500838338, cos .., sin 0.006463304070095653, cos ..]
  std::vector<double> table(24);
  sinusoidal_table<double>(view(table, {4, 6}));
  const std::vector<double> expected = {0.1411200080598672,   -0.9899924966004454,
                                        0.13879810108005053,  0.990320699135675,
                                        0.006463259070189645, 0.9999791129229608};
  for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(table[18 + i], expected[i], 1e-14) << i;
}

TEST(Sinusoids, RelativeShiftIsARotation) {
  // The paper's reason for sinusoids: PE(pos+k) is a fixed linear map of PE(pos). Per pair i with
  // frequency w: [sin((p+k)w), cos((p+k)w)] = [[cos kw, sin kw], [-sin kw, cos kw]] [sin pw, cos
  // pw].
  const int64_t positions = 50, width = 16, shift = 7;
  std::vector<double> table(static_cast<size_t>(positions * width));
  sinusoidal_table<double>(view(table, {positions, width}));
  for (int64_t i = 0; i < width / 2; ++i) {
    const double c = table[static_cast<size_t>(shift * width + 2 * i + 1)];  // cos kw
    const double s = table[static_cast<size_t>(shift * width + 2 * i)];      // sin kw
    for (int64_t p = 0; p + shift < positions; ++p) {
      const double sin_p = table[static_cast<size_t>(p * width + 2 * i)];
      const double cos_p = table[static_cast<size_t>(p * width + 2 * i + 1)];
      EXPECT_NEAR(table[static_cast<size_t>((p + shift) * width + 2 * i)], c * sin_p + s * cos_p,
                  1e-12);
      EXPECT_NEAR(table[static_cast<size_t>((p + shift) * width + 2 * i + 1)],
                  -s * sin_p + c * cos_p, 1e-12);
    }
  }
}

TEST(Sinusoids, OddWidthIsAnError) {
  std::vector<double> table(6);
  EXPECT_THROW(sinusoidal_table<double>(view(table, {2, 3})), Error);
}

TEST(Positions, AddWithOffsetHandComputed) {
  // table (4,2) = [[0 1] [10 11] [20 21] [30 31]], x (2,2,2) = 0.5, offset 1:
  //   x[b,t] = 0.5 + table[1+t] -> every batch row gets [10.5 11.5] then [20.5 21.5]
  std::vector<double> table = {0, 1, 10, 11, 20, 21, 30, 31}, x(8, 0.5);
  add_positions_forward<double>(view(x, {2, 2, 2}), const_view(table, {4, 2}), 1);
  EXPECT_EQ(x, (std::vector<double>{10.5, 11.5, 20.5, 21.5, 10.5, 11.5, 20.5, 21.5}));
  // dout rows b0: [1 2] [3 4], b1: [5 6] [7 8]; dtable starts at 1 (it accumulates):
  //   dtable[1] = 1 + [1+5, 2+6] = [7 9], dtable[2] = 1 + [3+7, 4+8] = [11 13], rows 0, 3 stay 1.
  std::vector<double> dout = {1, 2, 3, 4, 5, 6, 7, 8}, dtable(8, 1.0);
  add_positions_backward<double>(view(dtable, {4, 2}), const_view(dout, {2, 2, 2}), 1);
  EXPECT_EQ(dtable, (std::vector<double>{1, 1, 7, 9, 11, 13, 1, 1}));
}

TEST(Positions, PastTheTableIsAnError) {
  std::vector<double> table(8), x(6);
  EXPECT_THROW(add_positions_forward<double>(view(x, {1, 3, 2}), const_view(table, {4, 2}), 2),
               Error);
  EXPECT_THROW(add_positions_backward<double>(view(table, {4, 2}), const_view(x, {1, 3, 2}), 2),
               Error);
}

TEST(Positions, NegativeOffsetIsAnError) {
  // Position -1 does not exist: the table row before row 0 is memory the table does not own.
  std::vector<double> table(8), x(4);
  EXPECT_THROW(add_positions_forward<double>(view(x, {1, 2, 2}), const_view(table, {4, 2}), -1),
               Error);
  EXPECT_THROW(add_positions_backward<double>(view(table, {4, 2}), const_view(x, {1, 2, 2}), -1),
               Error);
}

struct PositionsShape {
  int64_t batch, length, width, positions, offset;
};

class LearnedPositionsTest : public ::testing::TestWithParam<PositionsShape> {};

TEST_P(LearnedPositionsTest, GradientMatchesCentralDifferences) {
  const auto [b, t, d, p, offset] = GetParam();
  const std::vector<double> x0 = random_uniform(b * t * d, 31);
  std::vector<double> table = random_uniform(p * d, 32), dout = random_uniform(b * t * d, 33);
  std::vector<double> x(x0.size());
  auto objective = [&] {
    x = x0;
    add_positions_forward<double>(view(x, {b, t, d}), const_view(table, {p, d}), offset);
    return weighted_sum(x.data(), dout);
  };
  std::vector<double> dtable(static_cast<size_t>(p * d));
  add_positions_backward<double>(view(dtable, {p, d}), const_view(dout, {b, t, d}), offset);
  GradCheckResult result =
      check_gradients(objective, {{"table", table.data(), dtable.data(), p * d}});
  EXPECT_TRUE(result.passed) << result.report;
}

INSTANTIATE_TEST_SUITE_P(Shapes, LearnedPositionsTest,
                         ::testing::Values(PositionsShape{1, 1, 1, 1, 0},
                                           PositionsShape{3, 7, 2, 9, 2},
                                           PositionsShape{2, 3, 7, 7, 4},
                                           PositionsShape{7, 1, 3, 5, 4}));

}  // namespace
}  // namespace attnlab::test
