"""PyTorch parity: a checkpoint attnlab wrote, rebuilt in torch by its parameter names, scores the
dev set with the per-token NLL attnlab reported for it.

Each case trains a tiny reverse-task model for 100 steps (so its parameters are far from their
initialisation), then an independent float64 torch implementation of the architecture reads the
checkpoint's `params` group by the fairseq-style names of core/model/param_names.h, runs the same
dev sentences and must reproduce the run's `final_dev_nll` (run.h5 summary, a float64 sum over
tokens) to a relative 1e-6. attnlab evaluates in float32, whose round-off here is near 1e-9; a
wrong convention anywhere (sqrt(d_model) embedding scale, interleaved sinusoids, learned position
rows, norm placement, LayerNorm/RMSNorm and their epsilon, the pre-LN stack norm, the attention
scale, d_k/d_v head widths, padding and causal masks, the tied or separate output projection)
moves the NLL by far more. Every checkpoint tensor must be used, so a tensor the torch model
ignores fails the test instead of passing unnoticed.

attnlab writes no file with the synthetic dev sentences: they are regenerated here from the run's
seed by a transcription of make_synthetic_split (core/data/synthetic.cpp) and its counter-based
generator (core/util/rng.h), checked against the first dev pair the run log keeps as its
attention probe (/attention/probe_0), and batched as SyntheticSource batches them
(core/train/data_source.cpp).
"""

import math

import h5py
import numpy as np
import pytest

from conftest import ROOT, run_attnlab

torch = pytest.importorskip("torch", reason="python3-torch is not installed: the PyTorch parity "
                                            "of attnlab's evaluation is not checked")
F = torch.nn.functional

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"
STEPS = 100
# Small data and batches keep a run under a second. Warmup 10 (instead of 100) and 100 steps move
# the parameters well away from their initialisation and give attention a pattern to lose: with
# another attention scale, a missing padding mask or another embedding scale, the NLL moves by
# 1e-4 to 1e-1 relative, while the float32 round-off of attnlab's evaluation is near 1e-9.
DATA = [
    "--set", "data.synthetic.train_size=2000", "--set", "data.synthetic.dev_size=60",
    "--set", "train.batch_tokens=400", "--set", "train.lr.warmup=10",
    "--set", f"train.steps={STEPS}",
]
RELATIVE_TOLERANCE = 1e-6


def model_settings(**values):
    settings = []
    for key, value in values.items():
        settings += ["--set", f"model.{key}={value}"]
    return settings


# Each option value appears at least once; d_k and d_v differ from d_model / heads where noted.
CASES = [
    pytest.param(model_settings(norm="post", norm_type="layernorm", positions="sinusoidal",
                                attention_scale="rsqrt_dk", encoder_layers=1, decoder_layers=1,
                                d_model=32, d_ff=64, heads=4, d_k=8, d_v=8),
                 id="post-layernorm-sinusoidal-rsqrt_dk"),
    # d_k 4, d_v 12 with d_model / heads = 8; two layers per stack.
    pytest.param(model_settings(norm="pre", norm_type="layernorm", positions="learned",
                                attention_scale="none", encoder_layers=2, decoder_layers=2,
                                d_model=16, d_ff=32, heads=2, d_k=4, d_v=12),
                 id="pre-layernorm-learned-none-dk4-dv12"),
    # A large epsilon, so that using another one (or none) shows in the NLL.
    pytest.param(model_settings(norm="post", norm_type="rmsnorm", positions="learned",
                                attention_scale="inv_dk", encoder_layers=1, decoder_layers=2,
                                d_model=24, d_ff=48, heads=3, d_k=5, d_v=7, layer_norm_eps=0.01),
                 id="post-rmsnorm-learned-inv_dk-eps1e-2"),
    pytest.param(model_settings(norm="pre", norm_type="rmsnorm", positions="sinusoidal",
                                attention_scale="inv_dk", encoder_layers=2, decoder_layers=1,
                                d_model=32, d_ff=64, heads=4, d_k=12, d_v=4),
                 id="pre-rmsnorm-sinusoidal-inv_dk-dk12-dv4"),
    # The remaining names: a learned scale per attention block, separate decoder embedding and
    # output projection, and an output bias.
    pytest.param(model_settings(norm="pre", norm_type="layernorm", positions="sinusoidal",
                                attention_scale="learned", tie_embeddings="false",
                                output_bias="true", encoder_layers=1, decoder_layers=1,
                                d_model=16, d_ff=32, heads=2, d_k=8, d_v=8),
                 id="pre-layernorm-learned_scale-untied-output_bias"),
]


# --- the dev sentences: core/util/rng.h and core/data/synthetic.cpp in Python -------------------

MASK64 = (1 << 64) - 1


def mix64(x):
    """SplitMix64's finaliser, as attnlab's mix64."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def rng_key(a, b=0, c=0, d=0):
    return mix64(mix64(mix64(mix64(a) ^ b) ^ c) ^ d)


class Rng:
    """attnlab's sequential generator: draw n is mix64(key ^ mix64(n))."""

    def __init__(self, seed):
        self.key = rng_key(seed)
        self.counter = 0

    def below(self, n):
        value = mix64(self.key ^ mix64(self.counter))
        self.counter += 1
        return value % n


FIRST_SYMBOL = 3  # 0 pad, 1 bos, 2 eos


def reverse_example(rng, symbols, min_length, max_length):
    length = min_length + rng.below(max_length - min_length + 1)
    src = [FIRST_SYMBOL + rng.below(symbols) for _ in range(length)]
    return src, src[::-1]


def dev_pairs(config):
    """The run's dev (source, target) pairs, without eos, in their generated order: drawn after
    the training set from their own stream, skipping any source the training set holds."""
    assert config["data.task"] == "reverse"
    seed = int(config["seed"])
    symbols, train_size, dev_size, low, high = (
        int(config[f"data.synthetic.{key}"])
        for key in ("symbols", "train_size", "dev_size", "min_length", "max_length"))
    train_rng = Rng(rng_key(seed, 0xDA7A, 1))
    seen = {tuple(reverse_example(train_rng, symbols, low, high)[0]) for _ in range(train_size)}
    dev_rng = Rng(rng_key(seed, 0xDA7A, 2))
    pairs = []
    while len(pairs) < dev_size:
        src, tgt = reverse_example(dev_rng, symbols, low, high)
        if tuple(src) not in seen:
            pairs.append((src, tgt))
    return pairs


def dev_batches(pairs, config):
    """Consecutive pairs until a batch holds batch_tokens source + target tokens (SyntheticSource),
    padded as make_batch pads: src = x eos, tgt_in = bos y, tgt_out = y eos."""
    pad, bos, eos = (int(config[f"model.{key}"]) for key in ("pad_id", "bos_id", "eos_id"))
    groups, group, tokens = [], [], 0
    for i, (src, tgt) in enumerate(pairs):
        group.append((src, tgt))
        tokens += len(src) + len(tgt) + 2
        if tokens >= int(config["train.batch_tokens"]) or i + 1 == len(pairs):
            groups.append(group)
            group, tokens = [], 0
    batches = []
    for group in groups:
        src_length = max(len(src) for src, _ in group) + 1
        tgt_length = max(len(tgt) for _, tgt in group) + 1
        src_ids = torch.full((len(group), src_length), pad, dtype=torch.long)
        tgt_in = torch.full((len(group), tgt_length), pad, dtype=torch.long)
        tgt_out = torch.full((len(group), tgt_length), pad, dtype=torch.long)
        for b, (src, tgt) in enumerate(group):
            src_ids[b, :len(src) + 1] = torch.tensor(src + [eos])
            tgt_in[b, :len(tgt) + 1] = torch.tensor([bos] + tgt)
            tgt_out[b, :len(tgt) + 1] = torch.tensor(tgt + [eos])
        batches.append((src_ids, tgt_in, tgt_out))
    return batches


# --- the model in torch, float64, from the checkpoint's tensors by name -------------------------

class Checkpoint:
    """The `params` group of a checkpoint as float64 tensors; remembers which names were read."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            self.tensors = {name: torch.from_numpy(np.asarray(data[...], dtype=np.float64))
                            for name, data in f["params"].items()}
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return self.tensors[name]


def flag(value):
    return str(value).lower() == "true"


class TorchTransformer:
    """The encoder-decoder of core/model/transformer.cpp without dropout (evaluation), written
    from the equations and fairseq's names rather than from attnlab's kernels."""

    def __init__(self, params, config):
        self.p = params
        self.d_model = int(config["model.d_model"])
        self.heads = int(config["model.heads"])
        self.d_k = int(config["model.d_k"])
        self.d_v = int(config["model.d_v"])
        self.pre_norm = config["model.norm"] == "pre"
        self.rms = config["model.norm_type"] == "rmsnorm"
        self.eps = float(config["model.layer_norm_eps"])
        self.learned_positions = config["model.positions"] == "learned"
        self.tied = flag(config["model.tie_embeddings"])
        self.output_bias = flag(config["model.output_bias"])
        self.scale_mode = config["model.attention_scale"]
        self.encoder_layers = int(config["model.encoder_layers"])
        self.decoder_layers = int(config["model.decoder_layers"])
        self.pad = int(config["model.pad_id"])

    def attention_scale(self, prefix):
        mode = self.scale_mode
        if mode == "rsqrt_dk":
            return 1.0 / math.sqrt(self.d_k)
        if mode == "none":
            return 1.0
        if mode == "inv_dk":
            return 1.0 / self.d_k
        if mode == "learned":
            return self.p[f"{prefix}.scale"].reshape(())
        return float(mode)  # a constant

    def norm(self, x, prefix):
        weight = self.p[f"{prefix}.weight"]
        if self.rms:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight
        return F.layer_norm(x, (self.d_model,), weight, self.p[f"{prefix}.bias"], self.eps)

    def linear(self, x, prefix):
        return F.linear(x, self.p[f"{prefix}.weight"], self.p[f"{prefix}.bias"])

    def attention(self, queries, keys_values, prefix, hidden):
        """Multi-head attention; hidden (B, T or 1, S) is True where a key may not be seen."""
        batch, length, keys = queries.shape[0], queries.shape[1], keys_values.shape[1]
        q = self.linear(queries, f"{prefix}.q_proj").view(batch, length, self.heads, self.d_k)
        k = self.linear(keys_values, f"{prefix}.k_proj").view(batch, keys, self.heads, self.d_k)
        v = self.linear(keys_values, f"{prefix}.v_proj").view(batch, keys, self.heads, self.d_v)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B,H,L,width)
        logits = self.attention_scale(prefix) * (q @ k.transpose(-1, -2))
        # Every query sees at least one key here (eos ends every source, bos starts every target),
        # so no row is all -inf.
        probs = torch.softmax(logits.masked_fill(hidden[:, None], float("-inf")), dim=-1)
        heads_out = (probs @ v).transpose(1, 2).reshape(batch, length, self.heads * self.d_v)
        return self.linear(heads_out, f"{prefix}.out_proj")

    def sublayer(self, x, norm_prefix, f):
        # post-LN (the paper): N(x + f(x)); pre-LN: x + f(N(x)).
        if self.pre_norm:
            return x + f(self.norm(x, norm_prefix))
        return self.norm(x + f(x), norm_prefix)

    def ffn(self, x, layer):
        return self.linear(F.relu(self.linear(x, f"{layer}.fc1")), f"{layer}.fc2")

    def embed(self, tokens, stack):
        table_name = "encoder" if self.tied or stack == "encoder" else "decoder"
        table = self.p[f"{table_name}.embed_tokens.weight"]
        length = tokens.shape[1]
        if self.learned_positions:
            positions = self.p[f"{stack}.embed_positions.weight"][:length]
        else:
            # Interleaved: sin(pos / 10000^(2i/D)) in column 2i, cos in 2i + 1; positions from 0.
            pos = torch.arange(length, dtype=torch.float64)[:, None]
            two_i = torch.arange(0, self.d_model, 2, dtype=torch.float64)
            angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64),
                                    two_i / self.d_model)
            positions = torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1)
            positions = positions.reshape(length, self.d_model)
        return math.sqrt(self.d_model) * table[tokens] + positions

    def encode(self, src):
        hidden = (src == self.pad)[:, None, :]  # (B,1,S) padding keys
        x = self.embed(src, "encoder")
        for i in range(self.encoder_layers):
            layer = f"encoder.layers.{i}"
            x = self.sublayer(x, f"{layer}.self_attn_layer_norm",
                              lambda h: self.attention(h, h, f"{layer}.self_attn", hidden))
            x = self.sublayer(x, f"{layer}.final_layer_norm", lambda h: self.ffn(h, layer))
        return self.norm(x, "encoder.layer_norm") if self.pre_norm else x

    def logits(self, src, tgt_in):
        memory = self.encode(src)
        source_hidden = (src == self.pad)[:, None, :]
        length = tgt_in.shape[1]
        future = torch.ones(length, length, dtype=torch.bool).triu(1)
        # Decoder self-attention hides padded target positions as keys, and the future.
        self_hidden = (tgt_in == self.pad)[:, None, :] | future[None]
        y = self.embed(tgt_in, "decoder")
        for i in range(self.decoder_layers):
            layer = f"decoder.layers.{i}"
            y = self.sublayer(y, f"{layer}.self_attn_layer_norm",
                              lambda h: self.attention(h, h, f"{layer}.self_attn", self_hidden))
            y = self.sublayer(y, f"{layer}.encoder_attn_layer_norm",
                              lambda h: self.attention(h, memory, f"{layer}.encoder_attn",
                                                       source_hidden))
            y = self.sublayer(y, f"{layer}.final_layer_norm", lambda h: self.ffn(h, layer))
        if self.pre_norm:
            y = self.norm(y, "decoder.layer_norm")
        projection = self.p["encoder.embed_tokens.weight" if self.tied
                            else "decoder.output_projection.weight"]
        bias = self.p["decoder.output_projection.bias"] if self.output_bias else None
        return F.linear(y, projection, bias)

    def nll_sums(self, batch):
        """(summed NLL, target tokens) of a batch; pad targets are not scored."""
        src, tgt_in, tgt_out = batch
        log_probs = torch.log_softmax(self.logits(src, tgt_in), dim=-1)
        scored = tgt_out != self.pad
        token_nll = -log_probs.gather(-1, tgt_out.unsqueeze(-1)).squeeze(-1)
        return token_nll[scored].sum().item(), int(scored.sum())


# --- the test ------------------------------------------------------------------------------------

def train_tiny(attnlab, out, settings):
    run_attnlab(attnlab, "train", "-c", TASK, *DATA, *settings, "--out", out)
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        config = dict(f["config"].attrs)
        summary = dict(f["summary"].attrs)
        probe = f["attention"]["probe_0"].attrs
        first_pair = (list(probe["source_tokens"]), list(probe["target_tokens"]))
    return config, summary, first_pair


def assert_trained(params):
    """The checkpoint is not the initialisation: every norm gain has left 1 and every norm bias 0
    (a torch model that ignored them, or swapped gain and bias, would not match)."""
    for name, tensor in params.tensors.items():
        if "layer_norm" not in name:
            continue
        initial = 1.0 if name.endswith(".weight") else 0.0
        assert torch.any(tensor != initial), f"{name} is still at its initial {initial}"


@pytest.mark.parametrize("settings", CASES)
def test_torch_rebuilt_checkpoint_gives_attnlabs_dev_nll(attnlab, tmp_path, settings):
    out = tmp_path / "run"
    config, summary, (probe_source, probe_target) = train_tiny(attnlab, out, settings)
    # The run evaluated the final step's own parameters (eval.checkpoint newest, no averaging),
    # which are what the step's checkpoint holds.
    assert summary["final_checkpoint"] == f"newest (step {STEPS})"
    params = Checkpoint(out / "ckpt" / f"step_{STEPS}.h5")
    assert_trained(params)

    pairs = dev_pairs(config)
    src, tgt = pairs[0]
    eos, bos = int(config["model.eos_id"]), int(config["model.bos_id"])
    assert (probe_source, probe_target) == ([str(t) for t in src + [eos]],
                                            [str(t) for t in [bos] + tgt]), \
        "the regenerated dev set no longer starts with the run's first dev pair: " \
        "make_synthetic_split or rng.h changed, update dev_pairs() here"

    model = TorchTransformer(params, config)
    nll, tokens = 0.0, 0
    with torch.no_grad():
        for batch in dev_batches(pairs, config):
            batch_nll, batch_tokens = model.nll_sums(batch)
            nll += batch_nll
            tokens += batch_tokens
    unread = sorted(set(params.tensors) - params.read)
    assert not unread, f"checkpoint tensors the torch model never read: {unread}"

    torch_nll = nll / tokens
    attnlab_nll = float(summary["final_dev_nll"])
    relative = abs(torch_nll - attnlab_nll) / attnlab_nll
    assert relative <= RELATIVE_TOLERANCE, \
        f"dev NLL per token: torch {torch_nll!r}, attnlab {attnlab_nll!r} " \
        f"(relative difference {relative:.3g} over {tokens} tokens)"
