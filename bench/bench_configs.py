"""The three bench configurations (as in bench_configs.h) and the decoding FLOP counts.

decode_macs gives the multiply-adds of decoding `new_tokens` tokens for one sentence of `source`
tokens: with a KV cache (attnlab: every step runs one position through the decoder) or by
re-running the decoder over the whole prefix at every step (nn.Transformer's standard loop, which
also re-projects the encoder output into cross-attention keys and values each step). Both project
only the newest position onto the vocabulary. Their ratio bounds the speed-up the KV cache can
give at equal efficiency per FLOP.
"""

# name: (d_model, heads, d_ff, encoder layers, decoder layers, vocabulary, sentences, length)
CONFIGS = {
    "tiny": (128, 4, 512, 2, 2, 8000, 64, 32),
    "small": (256, 4, 1024, 3, 3, 8000, 64, 32),
    "base": (512, 8, 2048, 6, 6, 37000, 32, 64),
}


def decode_macs(config, source, new_tokens, cached):
    d, _, f, n_enc, n_dec, vocab, _, _ = CONFIGS[config]
    # Encoder: q,k,v,out projections, scores and weighted values over `source` keys, the FFN.
    total = source * n_enc * (4 * d * d + 2 * source * d + 2 * d * f)
    if cached:
        total += n_dec * 2 * source * d * d  # cross-attention keys and values, once
    for t in range(1, new_tokens + 1):
        if cached:
            # One position: self-attention projections and t keys, cross q/out and S keys, FFN.
            layer = 4 * d * d + 2 * t * d + 2 * d * d + 2 * source * d + 2 * d * f
        else:
            # All t positions, t x t self-attention, t x S cross-attention, memory re-projected.
            layer = (t * (6 * d * d + 2 * d * f) + 2 * t * t * d + 2 * t * source * d
                     + 2 * source * d * d)
        total += n_dec * layer + d * vocab
    return total
