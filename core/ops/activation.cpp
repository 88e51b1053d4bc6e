// The table of FFN activations (activation.h): each row names an activation and the ops that
// compute it (ops.h), with what its backward reads.
#include "core/ops/activation.h"

#include "core/ops/ops.h"

namespace attnlab {

const EnumNames<FfnActivation>& activation_names() {
  static const EnumNames<FfnActivation> names(
      "model.activation", {{FfnActivation::kRelu, "relu"}, {FfnActivation::kGelu, "gelu"}});
  return names;
}

namespace ops {
namespace {

template <typename T>
struct ActivationOps {
  void (*forward)(TensorView<T>, TensorView<const T>);
  void (*backward)(TensorView<T>, TensorView<const T>, TensorView<const T>);
  bool backward_reads_input;
};

template <typename T>
ActivationOps<T> activation_ops(FfnActivation activation) {
  switch (activation) {
    case FfnActivation::kRelu: return {relu_forward<T>, relu_backward<T>, false};
    case FfnActivation::kGelu: return {gelu_forward<T>, gelu_backward<T>, true};
  }
  CHECK(false) << "model.activation: " << static_cast<int>(activation) << " has no ops";
  return {};
}

}  // namespace

bool activation_backward_reads_input(FfnActivation activation) {
  return activation_ops<double>(activation).backward_reads_input;
}

template <typename T>
void activation_forward(FfnActivation activation, TensorView<T> out, TensorView<const T> inp) {
  activation_ops<T>(activation).forward(out, inp);
}

template <typename T>
void activation_backward(FfnActivation activation, TensorView<T> dinp, TensorView<const T> dout,
                         TensorView<const T> saved) {
  activation_ops<T>(activation).backward(dinp, dout, saved);
}

template void activation_forward<float>(FfnActivation, TensorView<float>, TensorView<const float>);
template void activation_forward<double>(FfnActivation, TensorView<double>,
                                         TensorView<const double>);
template void activation_backward<float>(FfnActivation, TensorView<float>, TensorView<const float>,
                                         TensorView<const float>);
template void activation_backward<double>(FfnActivation, TensorView<double>,
                                          TensorView<const double>, TensorView<const double>);

}  // namespace ops
}  // namespace attnlab
