// The one numerical gradient oracle: central differences in double precision, used by every op's
// test and by the whole-model check.
//
// For an objective f (usually f = sum(out * R) for a fixed random R, so that backward runs with
// dout = R), each checked element x_i is compared with
//   numeric_i = (f(x + h e_i) - f(x - h e_i)) / 2h
// by the error |analytic_i - numeric_i| / max(|analytic_i| + |numeric_i|, floor). The floor keeps
// round-off in near-zero gradients from counting as a relative error; below it the error is
// absolute. Values are restored bit for bit after every perturbation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace attnlab::test {

// A tensor the objective reads: `values` are perturbed in place, `analytic` holds
// d(objective)/d(values) as computed by backward at the unperturbed point.
struct GradTensor {
  std::string name;
  double* values = nullptr;
  const double* analytic = nullptr;
  int64_t count = 0;
};

struct GradCheckOptions {
  double step = 1e-5;       // h
  double tolerance = 1e-6;  // largest accepted element error
  double floor = 1e-3;      // denominator floor of the element error
  // At most this many elements per tensor, evenly spread over it (0 = every element). The whole
  // model uses it; op tests check everything.
  int64_t max_per_tensor = 0;
};

struct GradCheckResult {
  bool passed = true;
  double max_error = 0.0;
  int64_t checked = 0;
  std::string worst;   // "name[index]: analytic a, numeric n, error e"
  std::string report;  // one line per tensor: its largest error, then every failing element
};

// The element error used by check_gradients.
inline double gradient_error(double analytic, double numeric, double floor) {
  const double denominator = std::max(std::fabs(analytic) + std::fabs(numeric), floor);
  return std::fabs(analytic - numeric) / denominator;
}

// One GradTensor per parameter tensor of a model (ParamTable layout): its parameters, perturbed
// in place, beside `analytic`, a copy of its gradient buffer.
template <typename Model>
std::vector<GradTensor> parameter_tensors(Model& model, const std::vector<double>& analytic) {
  std::vector<GradTensor> tensors;
  for (const auto& e : model.table().entries()) {
    tensors.push_back(
        {e.name, model.params().data() + e.offset, analytic.data() + e.offset, e.shape.numel()});
  }
  return tensors;
}

inline GradCheckResult check_gradients(const std::function<double()>& objective,
                                       const std::vector<GradTensor>& tensors,
                                       const GradCheckOptions& options = {}) {
  GradCheckResult result;
  std::ostringstream report;
  report.precision(10);
  constexpr int kMaxFailuresListed = 8;
  for (const GradTensor& tensor : tensors) {
    const int64_t count = tensor.count;
    const int64_t checked =
        options.max_per_tensor > 0 ? std::min(count, options.max_per_tensor) : count;
    double tensor_max = 0.0;
    int failures = 0;
    std::ostringstream failing;
    failing.precision(10);
    for (int64_t j = 0; j < checked; ++j) {
      // Evenly spread indices: all of them when checked == count, else first and last included.
      const int64_t i = checked == count || checked == 1 ? j : j * (count - 1) / (checked - 1);
      const double original = tensor.values[i];
      tensor.values[i] = original + options.step;
      const double plus = objective();
      tensor.values[i] = original - options.step;
      const double minus = objective();
      tensor.values[i] = original;
      const double numeric = (plus - minus) / (2.0 * options.step);
      const double analytic = tensor.analytic[i];
      const double error = gradient_error(analytic, numeric, options.floor);
      ++result.checked;
      // A NaN error fails (!(NaN <= tolerance)) and, once recorded as the maximum, stays there.
      const bool ok = error <= options.tolerance;
      if (std::isnan(error) || error > result.max_error) {
        result.max_error = error;
        std::ostringstream worst;
        worst.precision(10);
        worst << tensor.name << "[" << i << "]: analytic " << analytic << ", numeric " << numeric
              << ", error " << error;
        result.worst = worst.str();
      }
      if (std::isnan(error) || error > tensor_max) tensor_max = error;
      if (!ok) {
        result.passed = false;
        if (failures++ < kMaxFailuresListed) {
          failing << "    " << tensor.name << "[" << i << "]: analytic " << analytic << ", numeric "
                  << numeric << ", error " << error << "\n";
        }
      }
    }
    report << tensor.name << ": " << checked << " of " << count << " elements, max error "
           << tensor_max << (failures > 0 ? ", FAILED " + std::to_string(failures) : "") << "\n"
           << failing.str();
  }
  result.report = report.str();
  return result;
}

}  // namespace attnlab::test
