#!/usr/bin/python3
"""PyTorch reference for the attnlab bench: the same model and measurements in one process.

Builds torch.nn.Transformer with the sizes of bench/bench_configs.h (post-LN, tied input/output
embeddings scaled by sqrt(d_model), sinusoidal positions, dropout 0.1 on sub-layer outputs and
embedding sums), trains it with Adam on random token batches with label smoothing 0.1, and times
forward (loss included) / backward / optimizer, target tokens/s and peak RSS (VmHWM). Then decodes
greedily with nn.Transformer's standard loop (the decoder re-run over the whole prefix every step)
and with a batched beam search built on the same loop. Prints one JSON object on stdout, with the
same keys as attnlab_train_bench.

To match attnlab's model exactly, two dropouts nn.Transformer adds beyond the paper are switched
off: the one on attention probabilities and the one inside the feed-forward block.

--precision bf16 runs the training forward and loss under torch.autocast("cpu",
dtype=torch.bfloat16): PyTorch's own mixed-precision recipe (matmuls in bfloat16 through oneDNN,
weights, gradients and Adam in fp32), the reference for attnlab's --precision bf16. Decoding stays
fp32: in eval mode nn.TransformerEncoderLayer takes its fused fast path, which rejects autocast's
bfloat16 activations in PyTorch 1.13 ("expected scalar type BFloat16 but found Float").

Run with Debian's interpreter: /usr/bin/python3 bench/torch_reference.py --config tiny --threads 1
"""

import argparse
import contextlib
import ctypes
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

from bench_configs import CONFIGS

PAD, BOS, EOS = 0, 1, 2


def sinusoids(length, width):
    """(length, width) table: sin on even columns, cos on odd, as in the paper."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float32) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)
    return table


class Seq2Seq(nn.Module):
    """nn.Transformer between a shared embedding table and its transpose as output projection."""

    def __init__(self, d_model, heads, d_ff, encoder_layers, decoder_layers, vocab, dropout):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model)
        nn.init.normal_(self.embed.weight, 0.0, d_model ** -0.5)
        self.register_buffer("positions", sinusoids(256, d_model), persistent=False)
        self.drop = nn.Dropout(dropout)
        encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, heads, d_ff, dropout, batch_first=True),
            encoder_layers, norm=None, enable_nested_tensor=False)
        decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(d_model, heads, d_ff, dropout, batch_first=True),
            decoder_layers, norm=None)
        for layer in encoder.layers:
            layer.self_attn.dropout = 0.0
            layer.dropout = nn.Identity()
        for layer in decoder.layers:
            layer.self_attn.dropout = 0.0
            layer.multihead_attn.dropout = 0.0
            layer.dropout = nn.Identity()
        self.transformer = nn.Transformer(d_model, heads, custom_encoder=encoder,
                                          custom_decoder=decoder, batch_first=True)

    def embed_tokens(self, tokens):
        x = self.embed(tokens) * math.sqrt(self.d_model) + self.positions[: tokens.shape[1]]
        return self.drop(x)

    def encode(self, src):
        return self.transformer.encoder(self.embed_tokens(src))

    def decode(self, tgt_in, memory):
        length = tgt_in.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(length)
        return self.transformer.decoder(self.embed_tokens(tgt_in), memory, tgt_mask=mask)

    def project(self, hidden):
        return F.linear(hidden, self.embed.weight)

    def forward(self, src, tgt_in):
        return self.project(self.decode(tgt_in, self.encode(src)))


def random_batch(vocab, sentences, length, generator):
    """Source, decoder input (bos y_1..y_{T-1}) and targets (y_1..y_{T-1} eos), no padding."""
    src = torch.randint(3, vocab, (sentences, length), generator=generator)
    words = torch.randint(3, vocab, (sentences, length - 1), generator=generator)
    bos = torch.full((sentences, 1), BOS)
    eos = torch.full((sentences, 1), EOS)
    return src, torch.cat([bos, words], 1), torch.cat([words, eos], 1)


def sgemm_peak_gflops(repeats=8, n=1024):
    """Best of `repeats` fp32 n^3 products through torch.mm: OpenBLAS's sgemm on OpenBLAS's own
    threads (torch.set_num_threads sets them), (per wall second, per CPU second of the process).
    The bench page sets attnlab's 2-thread speed-up beside OpenBLAS's own."""
    generator = torch.Generator().manual_seed(7)
    a = torch.rand(n, n, generator=generator) * 2 - 1
    b = torch.rand(n, n, generator=generator) * 2 - 1
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        cpu0, t0 = time.process_time(), time.perf_counter()
        torch.mm(a, b.t())
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - cpu0)
    flops = 2.0 * n ** 3
    return flops / best_wall / 1e9, flops / best_cpu / 1e9


def peak_rss_mib():
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024.0
    return -1.0


def openblas_core():
    """The kernel of the OpenBLAS this process loaded (torch reaches it as libblas.so.3)."""
    with open("/proc/self/maps", encoding="ascii") as maps:
        paths = {line.split()[-1] for line in maps if "blas" in line and "/" in line}
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"


@torch.no_grad()
def greedy(model, src, new_tokens):
    """nn.Transformer's greedy loop: the decoder re-runs over the whole prefix at every step."""
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    for _ in range(new_tokens):
        logits = model.project(model.decode(ys, memory)[:, -1])
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], 1)
    return ys[:, 1:]


@torch.no_grad()
def beam_search(model, src, new_tokens, beam):
    """Batched beam search over the same loop: `beam` prefixes per sentence, fixed length."""
    sentences = src.shape[0]
    memory = model.encode(src).repeat_interleave(beam, 0)
    ys = torch.full((sentences * beam, 1), BOS, dtype=torch.long)
    scores = torch.full((sentences, beam), -math.inf)
    scores[:, 0] = 0.0
    offsets = (torch.arange(sentences) * beam)[:, None]
    for _ in range(new_tokens):
        log_probs = F.log_softmax(model.project(model.decode(ys, memory)[:, -1]), -1)
        vocab = log_probs.shape[-1]
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(sentences, beam * vocab)
        scores, index = candidates.topk(beam, dim=1)
        rows = (offsets + torch.div(index, vocab, rounding_mode="floor")).reshape(-1)
        ys = torch.cat([ys[rows], (index % vocab).reshape(-1, 1)], 1)
    best = ys.reshape(sentences, beam, -1)[:, 0, 1:]
    return best


def autocast(precision):
    """The context the model's forward runs in: bf16 autocast, or nothing for fp32."""
    if precision == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def timed(function):
    """(wall seconds, process CPU seconds, result) of one call."""
    cpu_start, start = time.process_time(), time.perf_counter()
    result = function()
    return time.perf_counter() - start, time.process_time() - cpu_start, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, choices=sorted(CONFIGS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--decode-repeats", type=int, default=3)
    parser.add_argument("--beam", type=int, default=4, help="0 skips beam search")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--decode-batch", type=int, default=32)
    parser.add_argument("--decode-source", type=int, default=32)
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                        help="bf16: training forward and loss under CPU autocast to bfloat16")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    d_model, heads, d_ff, n_enc, n_dec, vocab, sentences, length = CONFIGS[args.config]
    model = Seq2Seq(d_model, heads, d_ff, n_enc, n_dec, vocab, 0.1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    generator = torch.Generator().manual_seed(100)

    model.train()
    forward, backward, step_optimizer, total, cpu = [], [], [], [], []
    loss_value = 0.0
    for step in range(args.warmup + args.steps):
        src, tgt_in, tgt_out = random_batch(vocab, sentences, length, generator)
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        with autocast(args.precision):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1),
                                   label_smoothing=0.1)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        cpu_seconds = time.process_time() - cpu0
        loss_value = loss.item()
        del logits, loss
        if step < args.warmup:
            continue
        forward.append(t1 - t0)
        backward.append(t2 - t1)
        step_optimizer.append(t3 - t2)
        total.append(t3 - t0)
        cpu.append(cpu_seconds)
    rss = peak_rss_mib()
    openblas_peak = sgemm_peak_gflops() if args.precision == "fp32" else (0.0, 0.0)
    step_seconds = statistics.median(total)
    tokens_per_step = sentences * length

    decoded = {"greedy_s": 0.0, "greedy_cpu_s": 0.0, "greedy_tokens": 0,
               "beam_s": 0.0, "beam_cpu_s": 0.0, "beam_tokens": 0}
    if args.decode_repeats > 0:
        model.eval()
        # Random weights can make eos the most likely token; attnlab's bench zeroes its output
        # row so that no sentence ends early. This loop never stops early, and the row is
        # zeroed all the same so that both sides decode the same kind of model.
        with torch.no_grad():
            model.embed.weight[EOS].zero_()
        src = torch.randint(3, vocab, (args.decode_batch, args.decode_source), generator=generator)
        greedy(model, src, args.new_tokens)  # warm-up (beam search reuses it)
        searches = [("greedy", lambda: greedy(model, src, args.new_tokens))]
        if args.beam > 0:
            searches.append(("beam", lambda: beam_search(model, src, args.new_tokens, args.beam)))
        for name, search in searches:
            runs = [timed(search) for _ in range(args.decode_repeats)]
            decoded[f"{name}_s"] = statistics.median(wall for wall, _, _ in runs)
            decoded[f"{name}_cpu_s"] = statistics.median(cpu for _, cpu, _ in runs)
            decoded[f"{name}_tokens"] = runs[-1][2].numel()

    print(json.dumps({
        "impl": "torch", "config": args.config, "threads": args.threads,
        "precision": args.precision,
        "autocast": "cpu bfloat16, training" if args.precision == "bf16" else "off",
        "steps": args.steps,
        "warmup": args.warmup, "params": sum(p.numel() for p in model.parameters()),
        "tokens_per_step": tokens_per_step, "loss": round(loss_value, 4),
        "forward_s": statistics.median(forward), "backward_s": statistics.median(backward),
        "optimizer_s": statistics.median(step_optimizer), "step_s": step_seconds,
        "step_cpu_s": statistics.median(cpu), "tokens_per_s": tokens_per_step / step_seconds,
        "tokens_per_cpu_s": tokens_per_step / statistics.median(cpu), "peak_rss_mib": round(rss, 1),
        **decoded, "beam": args.beam, "decode_batch": args.decode_batch,
        "openblas_core": openblas_core(), "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "openblas_sgemm_peak_gflops": openblas_peak[0],
        "openblas_sgemm_peak_cpu_gflops": openblas_peak[1],
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
