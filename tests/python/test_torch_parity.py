"""PyTorch parity, a gradient twin: one training step attnlab dumped (`attnlab dump-step`), redone
by an independent float64 PyTorch model built from the dump's parameters by name, gives the same
log-probabilities, the same label-smoothed loss and NLL, and the same gradient for every
parameter name.

As llm.c's test_gpt2 checks its C model against the state PyTorch dumped, the batch comes from the
dump itself (its token ids and key-padding masks): nothing of attnlab's generator, synthetic data
or batcher is copied here. The torch model is written from the equations and fairseq's names, not
from attnlab's kernels, and every dumped tensor must be read (a tensor the torch model ignored has
no torch gradient, and fails). A wrong convention anywhere (sqrt(d_model) embedding scale,
interleaved sinusoids, learned position rows, norm placement, LayerNorm/RMSNorm and their epsilon,
the pre-LN stack norm, the attention scale, d_k/d_v head widths, padding and causal masks, the tied
or separate output projection, the label-smoothing distribution) moves the numbers by far more than
the tolerances below.

Each model variant is trained for a few steps first, so that norm gains and biases have left
their initial 1 and 0 (where a forward pass that ignored them, on either side, would still
agree), and the step at the run's newest checkpoint is dumped with `--run`; the initial
parameters (`-c`) are dumped too.

Tolerances. In float64 both sides round at 2^-53 ~ 1.1e-16 per operation, and the chains here
are short (at most two layers per stack, sums over at most a few hundred terms): measured over
every case below, log-probabilities and losses differ by at most 9e-16 relative and gradients by
at most 7.4e-15 relative to the largest element of their tensor. FLOAT64_TOLERANCE = 1e-12 leaves
a margin of over 100 and still resolves conventions a float32 comparison cannot: a norm epsilon
of 1e-6 instead of 1e-5 moves the log-probabilities by 7e-7. With `--precision float32` attnlab
runs its training arithmetic (float32 products, exp_poly exponentials), round-off 2^-24 ~ 6e-8 per
operation: measured at most 2e-7 (log-probabilities), 8e-9 (losses) and 4.2e-6 (gradients),
checked to FLOAT32_TOLERANCE = 1e-4.
"""

import math

import h5py
import numpy as np
import pytest

from conftest import ROOT, run_attnlab

torch = pytest.importorskip("torch", reason="python3-torch is not installed: the PyTorch parity "
                                            "of attnlab's training step is not checked")
F = torch.nn.functional

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"
STEPS = 30
# Small data and batches keep a run under a second; warmup 10 and 30 steps move every parameter
# away from its initialisation. Label smoothing 0.1 so that the smoothed loss differs from the
# NLL; dropout 0.1 so that a dump that forgot to switch it off fails.
DATA = [
    "--set", "data.synthetic.train_size=500", "--set", "data.synthetic.dev_size=20",
    "--set", "train.batch_tokens=200", "--set", "train.lr.warmup=10",
    "--set", "train.label_smoothing=0.1", "--set", "model.dropout=0.1",
    "--set", f"train.steps={STEPS}",
]
FLOAT64_TOLERANCE = 1e-12
FLOAT32_TOLERANCE = 1e-4


def model_settings(**values):
    settings = []
    for key, value in values.items():
        settings += ["--set", f"model.{key}={value}"]
    return settings


# Each option value appears at least once; d_k and d_v differ from d_model / heads where noted.
CASES = {
    "post-layernorm-sinusoidal-rsqrt_dk": model_settings(
        norm="post", norm_type="layernorm", positions="sinusoidal", attention_scale="rsqrt_dk",
        encoder_layers=1, decoder_layers=1, d_model=32, d_ff=64, heads=4, d_k=8, d_v=8),
    # d_k 4, d_v 12 with d_model / heads = 8; two layers per stack.
    "pre-layernorm-learned-none-dk4-dv12": model_settings(
        norm="pre", norm_type="layernorm", positions="learned", attention_scale="none",
        encoder_layers=2, decoder_layers=2, d_model=16, d_ff=32, heads=2, d_k=4, d_v=12),
    # A large epsilon, so that using another one (or none) shows.
    "post-rmsnorm-learned-inv_dk-eps1e-2": model_settings(
        norm="post", norm_type="rmsnorm", positions="learned", attention_scale="inv_dk",
        encoder_layers=1, decoder_layers=2, d_model=24, d_ff=48, heads=3, d_k=5, d_v=7,
        layer_norm_eps=0.01),
    # The tiled attention kernel (model.attention), forward and backward.
    "pre-rmsnorm-sinusoidal-inv_dk-dk12-dv4-tiled": model_settings(
        norm="pre", norm_type="rmsnorm", positions="sinusoidal", attention_scale="inv_dk",
        encoder_layers=2, decoder_layers=1, d_model=32, d_ff=64, heads=4, d_k=12, d_v=4,
        attention="tiled"),
    # The remaining names: a learned scale per attention block, separate decoder embedding and
    # output projection, and an output bias.
    "pre-layernorm-learned_scale-untied-output_bias": model_settings(
        norm="pre", norm_type="layernorm", positions="sinusoidal", attention_scale="learned",
        tie_embeddings="false", output_bias="true", encoder_layers=1, decoder_layers=1,
        d_model=16, d_ff=32, heads=2, d_k=8, d_v=8),
}


# --- the dump ------------------------------------------------------------------------------------

class Dump:
    """A step dump (docs/hdf5-schema.md, "Step dump") as float64 torch tensors."""

    def __init__(self, path):
        with h5py.File(path, "r") as f:
            assert f.attrs["schema"] == "attnlab-step-dump"
            self.attrs = dict(f.attrs)
            self.config = dict(f["config"].attrs)
            self.batch = {name: torch.from_numpy(np.asarray(data[...], dtype=np.int64))
                          for name, data in f["batch"].items()}
            self.log_probs = torch.from_numpy(np.asarray(f["log_probs"][...], dtype=np.float64))
            self.params = {name: np.asarray(data[...], dtype=np.float64)
                           for name, data in f["params"].items()}
            self.grads = {name: torch.from_numpy(np.asarray(data[...], dtype=np.float64))
                          for name, data in f["grads"].items()}


class Parameters:
    """The dump's parameters as float64 leaf tensors that collect gradients; remembers which
    names were read."""

    def __init__(self, arrays):
        self.tensors = {name: torch.tensor(array, dtype=torch.float64, requires_grad=True)
                        for name, array in arrays.items()}
        self.read = set()

    def __getitem__(self, name):
        self.read.add(name)
        return self.tensors[name]


def flag(value):
    return str(value).lower() == "true"


# --- the model in torch, float64 -----------------------------------------------------------------

class TorchTransformer:
    """The encoder-decoder of core/model/transformer.cpp without dropout, written from the
    equations and fairseq's names rather than from attnlab's kernels."""

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

    def encode(self, src, source_padding):
        hidden = source_padding[:, None, :]  # (B,1,S) padding keys
        x = self.embed(src, "encoder")
        for i in range(self.encoder_layers):
            layer = f"encoder.layers.{i}"
            x = self.sublayer(x, f"{layer}.self_attn_layer_norm",
                              lambda h: self.attention(h, h, f"{layer}.self_attn", hidden))
            x = self.sublayer(x, f"{layer}.final_layer_norm", lambda h: self.ffn(h, layer))
        return self.norm(x, "encoder.layer_norm") if self.pre_norm else x

    def log_probs(self, src, tgt_in, source_padding, target_padding):
        """(B,T,N) log-probabilities; the paddings are True at padded positions."""
        memory = self.encode(src, source_padding)
        length = tgt_in.shape[1]
        future = torch.ones(length, length, dtype=torch.bool).triu(1)
        # Decoder self-attention hides padded target positions as keys, and the future.
        self_hidden = target_padding[:, None, :] | future[None]
        y = self.embed(tgt_in, "decoder")
        for i in range(self.decoder_layers):
            layer = f"decoder.layers.{i}"
            y = self.sublayer(y, f"{layer}.self_attn_layer_norm",
                              lambda h: self.attention(h, h, f"{layer}.self_attn", self_hidden))
            y = self.sublayer(y, f"{layer}.encoder_attn_layer_norm",
                              lambda h: self.attention(h, memory, f"{layer}.encoder_attn",
                                                       source_padding[:, None, :]))
            y = self.sublayer(y, f"{layer}.final_layer_norm", lambda h: self.ffn(h, layer))
        if self.pre_norm:
            y = self.norm(y, "decoder.layer_norm")
        projection = self.p["encoder.embed_tokens.weight" if self.tied
                            else "decoder.output_projection.weight"]
        bias = self.p["decoder.output_projection.bias"] if self.output_bias else None
        return torch.log_softmax(F.linear(y, projection, bias), dim=-1)


def loss_sums(log_probs, targets, pad, smoothing):
    """(label-smoothed loss, NLL) summed over the non-pad targets: the target distribution puts
    1 - eps on the target and eps / (N - 1) on every other class (the paper, fairseq)."""
    vocab = log_probs.shape[-1]
    scored = targets != pad
    target_log_probs = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)[scored]
    others = log_probs.sum(-1)[scored] - target_log_probs
    nll = -target_log_probs.sum()
    loss = -((1.0 - smoothing) * target_log_probs + smoothing / (vocab - 1) * others).sum()
    return loss, nll


# --- the comparisons ----------------------------------------------------------------------------

def relative_difference(attnlab_value, torch_value):
    """max |a - t| over the largest |t| of the tensor (or scalar)."""
    attnlab_value = torch.as_tensor(attnlab_value, dtype=torch.float64)
    torch_value = torch.as_tensor(torch_value, dtype=torch.float64)
    scale = torch_value.abs().max().item()
    difference = (attnlab_value - torch_value).abs().max().item()
    return difference / scale if scale > 0 else difference


def twin_differences(dump):
    """Reruns the dumped step in torch; returns the largest relative differences (log_probs, loss,
    nll, gradient) with the gradient's name, after checking that every tensor was used."""
    config, batch = dump.config, dump.batch
    pad = int(config["model.pad_id"])
    src, tgt_in, tgt_out = batch["src"], batch["tgt_in"], batch["tgt_out"]
    # The masks attnlab's attention used are exactly the padded positions of the token ids.
    source_padding, target_padding = src == pad, tgt_in == pad
    assert torch.equal(batch["src_key_padding"].bool(), source_padding)
    assert torch.equal(batch["tgt_key_padding"].bool(), target_padding)
    assert int(dump.attrs["target_tokens"]) == int((tgt_out != pad).sum())

    params = Parameters(dump.params)
    model = TorchTransformer(params, config)
    log_probs = model.log_probs(src, tgt_in, source_padding, target_padding)
    smoothing = float(config["train.label_smoothing"])
    assert float(dump.attrs["label_smoothing"]) == smoothing
    # attnlab's loss takes eps as a float32 (0.1 becomes 0.10000000149...), 1.5e-8 relative away
    # from the double: enough to show in a float64 loss.
    loss, nll = loss_sums(log_probs, tgt_out, pad, float(np.float32(smoothing)))
    # The trainer's gradient: of the mean label-smoothed loss per target token.
    (loss / int(dump.attrs["target_tokens"])).backward()

    unread = sorted(set(params.tensors) - params.read)
    assert not unread, f"dumped parameters the torch model never read: {unread}"
    assert set(dump.grads) == set(params.tensors), "the dump's /grads and /params name differently"
    differences = {
        "log_probs": relative_difference(dump.log_probs, log_probs.detach()),
        "loss": relative_difference(dump.attrs["loss_sum"], loss.item()),
        "nll": relative_difference(dump.attrs["nll_sum"], nll.item()),
    }
    for name, tensor in params.tensors.items():
        assert tensor.grad is not None, f"{name}: no gradient reaches it in the torch model"
        assert tuple(dump.grads[name].shape) == tuple(tensor.shape), name
    largest = max(tensor.grad.abs().max().item() for tensor in params.tensors.values())
    worst_gradient, worst_name = 0.0, None
    for name, tensor in params.tensors.items():
        if name.endswith(".k_proj.bias"):
            # Zero in exact arithmetic: a key bias b adds q.b to every logit of a query's row,
            # which softmax ignores. Both sides hold round-off, compared with the largest gradient.
            difference = max(dump.grads[name].abs().max().item(),
                             tensor.grad.abs().max().item()) / largest
        else:
            difference = relative_difference(dump.grads[name], tensor.grad)
        if difference >= worst_gradient:
            worst_gradient, worst_name = difference, name
    differences["gradient"] = worst_gradient
    return differences, worst_name


def assert_twins(dump, tolerance):
    differences, worst_name = twin_differences(dump)
    report = ", ".join(f"{key} {value:.3g}" for key, value in differences.items())
    for key, value in differences.items():
        assert value <= tolerance, \
            f"{key} differs from torch by {value:.3g} relative (tolerance {tolerance:g}; " \
            f"{report}; worst gradient {worst_name})"


# --- the tests ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained_runs(attnlab, tmp_path_factory):
    """One short run per variant, trained on first use: its directory by case name."""
    runs = {}

    def run_dir(case):
        if case not in runs:
            out = tmp_path_factory.mktemp("run") / case
            run_attnlab(attnlab, "train", "-c", TASK, *DATA, *CASES[case], "--out", out, "-q")
            runs[case] = out
        return runs[case]

    return run_dir


def dump_step(attnlab, out, *source, precision="float64"):
    run_attnlab(attnlab, "dump-step", *source, "--precision", precision, "--out", out)
    return Dump(out)


@pytest.mark.parametrize("case", CASES)
def test_trained_step_gradients_equal_torchs(attnlab, trained_runs, tmp_path, case):
    run = trained_runs(case)
    dump = dump_step(attnlab, tmp_path / "step.h5", "--run", run)
    checkpoint = run / "ckpt" / f"step_{STEPS}.h5"
    assert dump.attrs["params_from"] == str(checkpoint)
    assert dump.attrs["precision"] == "float64"
    with h5py.File(checkpoint, "r") as f:
        stored = {name: np.asarray(data[...], dtype=np.float64)
                  for name, data in f["params"].items()}
    assert stored.keys() == dump.params.keys()
    for name, values in stored.items():
        np.testing.assert_array_equal(dump.params[name], values, err_msg=name)
        # Trained: every norm gain has left 1 and every norm bias 0 (a torch model that ignored
        # them, or swapped gain and bias, would otherwise agree).
        if "layer_norm" in name:
            initial = 1.0 if name.endswith(".weight") else 0.0
            assert np.any(values != initial), f"{name} is still at its initial {initial}"
    assert_twins(dump, FLOAT64_TOLERANCE)


@pytest.mark.parametrize("case", CASES)
def test_initial_step_gradients_equal_torchs(attnlab, tmp_path, case):
    dump = dump_step(attnlab, tmp_path / "step.h5", "-c", TASK, *DATA, *CASES[case])
    assert dump.attrs["params_from"] == "initialisation (seed 1)"
    assert_twins(dump, FLOAT64_TOLERANCE)


@pytest.mark.parametrize("case", CASES)
def test_float32_step_equals_torchs_to_float32_round_off(attnlab, trained_runs, tmp_path, case):
    dump = dump_step(attnlab, tmp_path / "step.h5", "--run", trained_runs(case),
                     precision="float32")
    assert dump.attrs["precision"] == "float32"
    assert_twins(dump, FLOAT32_TOLERANCE)


def wrong_twin(path, key, value):
    """The differences of a dump redone by a torch model told another value of one config key."""
    dump = Dump(path)
    dump.config[key] = value
    if key == "train.label_smoothing":
        dump.attrs["label_smoothing"] = float(value)
    return twin_differences(dump)[0]


def test_a_wrong_twin_fails(attnlab, trained_runs, tmp_path):
    """The comparison can fail: the same dump against a torch model with another attention scale
    or label smoothing differs beyond even the float32 tolerance, and with another norm epsilon
    (1e-6 for 1e-5) beyond the float64 one."""
    case = "post-layernorm-sinusoidal-rsqrt_dk"
    path = tmp_path / "step.h5"
    dump_step(attnlab, path, "--run", trained_runs(case))
    assert wrong_twin(path, "model.attention_scale", "none")["log_probs"] > 100 * FLOAT32_TOLERANCE
    assert wrong_twin(path, "train.label_smoothing", "0.2")["loss"] > 100 * FLOAT32_TOLERANCE
    assert wrong_twin(path, "model.layer_norm_eps", "1e-6")["log_probs"] > 1e3 * FLOAT64_TOLERANCE


def test_dump_step_refuses_an_existing_file_and_mixed_sources(attnlab, tmp_path):
    out = tmp_path / "step.h5"
    out.write_text("keep me")
    result = run_attnlab(attnlab, "dump-step", "-c", TASK, "--out", out, check=False)
    assert result.returncode == 2 and "--force" in result.stderr
    assert out.read_text() == "keep me"
    result = run_attnlab(attnlab, "dump-step", "-c", TASK, "--run", tmp_path, "--out",
                         tmp_path / "other.h5", check=False)
    assert result.returncode == 2 and "either --run DIR or -c" in result.stderr
    result = run_attnlab(attnlab, "dump-step", "-c", TASK, "--precision", "bf16", "--out",
                         tmp_path / "other.h5", check=False)
    assert result.returncode == 2 and "float64 or float32" in result.stderr
