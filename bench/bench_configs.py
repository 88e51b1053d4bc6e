"""The three bench configurations (as in bench_configs.h), the decoding FLOP counts and the
decoding time their matrix products alone take.

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


# cached_decode_macs's keys for the products of a decoder step (one row per sentence); 'peak' is
# the source side.
DECODER_STEP_PRODUCTS = ("projection", "fc1", "fc2", "logits")


def cached_decode_macs(config, source, new_tokens):
    """The multiply-adds of KV-cache decoding for one sentence, by the product that does them:
    'peak' for the source side (encoder; cross-attention keys and values, once: products of many
    rows) and attention's dot products, 'projection' (self-attention q, k, v, out and
    cross-attention q, out: six d x d per layer and position), 'fc1', 'fc2' and 'logits' for a
    decoder step's products, which have one row per sentence of the batch."""
    d, _, f, n_enc, n_dec, vocab, _, _ = CONFIGS[config]
    steps = range(1, new_tokens + 1)
    return {
        # Encoder: q,k,v,out projections, scores and weighted values over `source` keys, the FFN.
        "peak": (source * n_enc * (4 * d * d + 2 * source * d + 2 * d * f)
                 + n_dec * 2 * source * d * d
                 + n_dec * sum(2 * t * d + 2 * source * d for t in steps)),
        "projection": n_dec * new_tokens * 6 * d * d,
        "fc1": n_dec * new_tokens * d * f,
        "fc2": n_dec * new_tokens * f * d,
        "logits": new_tokens * d * vocab,
    }


def decode_macs(config, source, new_tokens, cached):
    if cached:
        return sum(cached_decode_macs(config, source, new_tokens).values())
    d, _, f, n_enc, n_dec, vocab, _, _ = CONFIGS[config]
    # Encoder: q,k,v,out projections, scores and weighted values over `source` keys, the FFN.
    total = source * n_enc * (4 * d * d + 2 * source * d + 2 * d * f)
    for t in range(1, new_tokens + 1):
        # All t positions, t x t self-attention, t x S cross-attention, memory re-projected.
        layer = (t * (6 * d * d + 2 * d * f) + 2 * t * t * d + 2 * t * source * d
                 + 2 * source * d * d)
        total += n_dec * layer + d * vocab
    return total


def decode_gemm_seconds(config, source, new_tokens, rates):
    """Seconds per sentence of attnlab's KV-cache decoding if it did nothing but multiply, each
    product of cached_decode_macs at its rate in `rates` (FLOP/s, the same keys; the decoder
    step's from attnlab_kernels' decode_gemm rows). Everything else counts as free, so the time
    is a lower bound and the speed it gives a ceiling."""
    macs = cached_decode_macs(config, source, new_tokens)
    return sum(2.0 * count / rates[product] for product, count in macs.items())
