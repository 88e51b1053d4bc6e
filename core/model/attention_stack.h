// The three attention maps of the Transformer, with their shapes for S source and T target tokens
// and H heads: encoder self-attention (H,S,S), decoder self-attention (H,T,T, causal), decoder
// attention over the encoder output (H,T,S). The model's probes and the run log's
// /attention/<probe>/<stack> groups use the same names.
#pragma once

namespace attnlab {

enum class AttentionStack { kEncoderSelf = 0, kDecoderSelf = 1, kDecoderCross = 2 };
inline constexpr AttentionStack kAttentionStacks[] = {
    AttentionStack::kEncoderSelf, AttentionStack::kDecoderSelf, AttentionStack::kDecoderCross};

// "encoder_self" | "decoder_self" | "decoder_cross".
inline const char* to_string(AttentionStack stack) {
  switch (stack) {
    case AttentionStack::kEncoderSelf: return "encoder_self";
    case AttentionStack::kDecoderSelf: return "decoder_self";
    case AttentionStack::kDecoderCross: return "decoder_cross";
  }
  return "?";
}

// Encoder self-attention lives in the encoder's layers, the other two in the decoder's.
inline bool in_decoder(AttentionStack stack) { return stack != AttentionStack::kEncoderSelf; }
// Which attention block of its layer: 0 self-attention, 1 the decoder's cross-attention.
inline int attention_block(AttentionStack stack) {
  return stack == AttentionStack::kDecoderCross ? 1 : 0;
}

}  // namespace attnlab
