// The FFN's activation between its two linears (model.activation), each declared once: its name,
// its forward, its backward and what that backward reads, in the table of activation.cpp. The
// model, the option table, the model-variant list of the tests and the generic gradient check
// (tests/ops/activation_test.cpp) read the table, so a new activation is a row there and its op.
#pragma once

#include "core/tensor/tensor.h"
#include "core/util/enum_names.h"

namespace attnlab {

// relu max(0, x) (the paper); gelu the exact x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) with its
// exact derivative Phi(x) + x phi(x) (no tanh approximation).
enum class FfnActivation { kRelu, kGelu };
const EnumNames<FfnActivation>& activation_names();

namespace ops {

// Whether the activation's backward reads its input (gelu), which the model then keeps beside
// the output, or its output (relu), which lets the forward run in place.
bool activation_backward_reads_input(FfnActivation activation);
// out = f(inp); out may alias inp.
template <typename T>
void activation_forward(FfnActivation activation, TensorView<T> out, TensorView<const T> inp);
// dinp = dout * f'(x), from `saved`: the input or the output, as
// activation_backward_reads_input says; dinp may alias dout.
template <typename T>
void activation_backward(FfnActivation activation, TensorView<T> dinp, TensorView<const T> dout,
                         TensorView<const T> saved);

}  // namespace ops
}  // namespace attnlab
