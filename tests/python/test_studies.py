"""analysis.studies on tiny runs made by attnlab in a temporary directory: the sqrt(d_k) table
equals a hand computation from the HDF5 datasets (and the unscaled logit variance at step 0 is
d_k times the scaled one, the same parameters seen through another scale), divergence on synthetic
series, BLEU per bucket against analysis.bleu on the same subsets, learned position rows past the
training length never moving, the long-evaluation view's config, and the vocabulary reader."""

import math
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis import bleu  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.studies import common, heads, sqrt_dk, warmup_norm  # noqa: E402
from analysis.studies import positions_length as positions  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"

SWEEP = """\
base: {task}
name: {name}
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 16, d_ff: 32, heads: 2, d_k: 8, d_v: 8,
         dropout: 0.0, positions: {positions}, max_positions: 16}}
data: {{synthetic: {{min_length: 3, max_length: 6, train_size: 500, dev_size: 20}}}}
train: {{batch_tokens: 200, steps: 6, checkpoint_every: 3, keep_checkpoints: 2}}
eval: {{every: 0}}
log: {{every: 1, diagnostics_every: 3}}
sweep:
  seeds: [1]
  grid: {{model.attention_scale: {scales}}}
"""


def make_sweep(attnlab, tmp, name, positions="sinusoidal", scales="[rsqrt_dk, none]"):
    path = tmp / f"{name}.yaml"
    path.write_text(SWEEP.format(task=TASK, name=name, positions=positions, scales=scales))
    run_attnlab(attnlab, "sweep", path, "--launcher", "local", "--out", tmp / "runs",
                "--max-parallel", "2")
    return tmp / "runs" / name


@pytest.fixture(scope="module")
def scale_sweep(attnlab, tmp_path_factory):
    return make_sweep(attnlab, tmp_path_factory.mktemp("studies"), "scales")


def run_files(sweep_dir):
    return sorted(sweep_dir.glob("*/run.h5"))


def test_gradients_are_logged_at_step_one_and_at_the_interval(scale_sweep):
    for path in run_files(scale_sweep):
        with h5py.File(path, "r") as f:
            assert list(f["diagnostics/qk_grad_norm/step"][()]) == [1, 3, 6]
            assert list(f["diagnostics/grad_norm/step"][()]) == [1, 3, 6]
            assert list(f["diagnostics/attention_entropy/step"][()]) == [0, 3, 6]
            labels = [str(x) for x in f["diagnostics/qk_grad_norm"].attrs["labels"]]
            assert labels == ["encoder_self.layers.0", "decoder_self.layers.0",
                              "decoder_cross.layers.0"]


def test_sqrt_dk_table_is_the_mean_of_the_stored_diagnostics(scale_sweep):
    table = sqrt_dk.table(load_sweep(scale_sweep))
    assert len(table) == 4  # two runs x (init, trained)
    for path in run_files(scale_sweep):
        with h5py.File(path, "r") as f:
            run_id = f.attrs["run_id"]
            variance = f["diagnostics/attention_logit_variance/value"][()]
            entropy = f["diagnostics/attention_entropy/value"][()]
            gradient = f["diagnostics/qk_grad_norm/value"][()]
        init = table[(table["run_id"] == run_id) & (table["moment"] == "init")].iloc[0]
        trained = table[(table["run_id"] == run_id) & (table["moment"] == "trained")].iloc[0]
        assert init["logit_variance"] == pytest.approx(variance[0].sum() / variance[0].size)
        assert init["entropy"] == pytest.approx(entropy[0].sum() / entropy[0].size)
        assert init["qk_grad_norm"] == pytest.approx(math.sqrt((gradient[0] ** 2).mean()))
        assert trained["attention_step"] == 6 and trained["gradient_step"] == 6
        assert trained["logit_variance"] == pytest.approx(variance[-1].mean())
        assert trained["qk_grad_norm"] == pytest.approx(math.sqrt((gradient[-1] ** 2).mean()))


def test_unscaled_logit_variance_at_step_zero_is_d_k_times_the_scaled_one(scale_sweep):
    # Same seed, same initial parameters: the first block of each stack sees the same input in
    # both runs, so its unscaled logits are sqrt(d_k) = sqrt(8) times the scaled ones, head by
    # head. (Later blocks see outputs that already depend on the scale.)
    variance = {}
    for path in run_files(scale_sweep):
        with h5py.File(path, "r") as f:
            scale = str(f["config"].attrs["model.attention_scale"])
            labels = [str(x) for x in f["diagnostics/attention_logit_variance"].attrs["labels"]]
            rows = f["diagnostics/attention_logit_variance/value"][0]
            variance[scale] = dict(zip(labels, rows))
    for block in ("encoder_self.layers.0", "decoder_self.layers.0"):
        np.testing.assert_allclose(variance["none"][block], 8 * variance["rsqrt_dk"][block],
                                   rtol=1e-4)
    table = sqrt_dk.table(load_sweep(scale_sweep))
    assert set(table.loc[table["scale"] == "none", "d_k"]) == {8}
    claims = sqrt_dk.claims(table)
    assert set(claims) == {("none", "init"), ("none", "trained"), ("rsqrt_dk", "init"),
                           ("rsqrt_dk", "trained")}


def test_heads_table_has_one_line_per_block_head_and_moment(scale_sweep):
    table = heads.table(load_sweep(scale_sweep))
    assert len(table) == 2 * 3 * 2 * 2  # runs x blocks x heads x moments
    for path in run_files(scale_sweep):
        with h5py.File(path, "r") as f:
            run_id = f.attrs["run_id"]
            last = f["diagnostics/attention_entropy/value"][-1]
        part = table[(table["run_id"] == run_id) & (table["moment"] == "trained")]
        got = part.sort_values(["block", "head"])
        assert np.allclose(sorted(got["entropy"]), sorted(last.ravel()))


def test_sqrt_dk_figure_is_written(scale_sweep, tmp_path):
    files = sqrt_dk.figure(sqrt_dk.table(load_sweep(scale_sweep)), tmp_path)
    assert [p.split("/")[-1] for p in files] == ["sqrt_dk.png"]
    assert (tmp_path / "sqrt_dk.png").stat().st_size > 10000


def test_divergence_on_synthetic_series():
    steps = np.arange(1, 11)
    falling = np.linspace(5.0, 2.0, 10)
    assert warmup_norm.divergence(steps, falling) == (False, "", None)
    with_nan = falling.copy()
    with_nan[6] = np.nan
    assert warmup_norm.divergence(steps, with_nan) == (True, "non-finite", 7)
    assert warmup_norm.divergence(steps, falling, grad_norms=[1.0] * 4 + [np.inf] + [1.0] * 5) == \
        (True, "non-finite", 5)
    # Falls, then climbs back: the last row (10% of 10) is 5.0, not below the first 5.0.
    back = np.concatenate([np.linspace(5.0, 2.0, 5), np.linspace(3.0, 5.0, 5)])
    assert warmup_norm.divergence(steps, back) == (True, "no progress", 10)
    # A spike in the middle that recovers is not divergence by this definition.
    spike = falling.copy()
    spike[4] = 50.0
    assert warmup_norm.divergence(steps, spike)[0] is False
    # The tail length decides: the last row (5.5) is above the first (4.6), the mean of the
    # last three ((2 + 4 + 5.5) / 3 = 3.83) is below it.
    tail = np.array([4.6, 3, 2, 2, 2, 2, 2, 2, 4.0, 5.5])
    assert warmup_norm.divergence(steps, tail, tail=0.1) == (True, "no progress", 10)
    assert warmup_norm.divergence(steps, tail, tail=0.3) == (False, "", None)
    assert warmup_norm.divergence([], []) == (False, "no rows", None)


def test_bleu_by_bucket_is_corpus_bleu_of_each_subset():
    sources = ["a b", "a b c d e", "a", "a b c d e f g h", "a b c", "x y z w v u t s r q"]
    references = ["the cat sat on the mat", "a dog ran in the park today", "hello world",
                  "we went to the market on the hill", "it rains a lot", "one two three four"]
    hypotheses = ["the cat sat on a mat", "a dog ran in a park", "hello world",
                  "we went to market on a hill", "it rains", "one two three four"]
    edges = [0, 3, 6]
    lengths = [positions.source_length_words(line) for line in sources]
    frame = positions.bleu_by_bucket(lengths, hypotheses, references, edges)
    assert list(frame["label"]) == ["1-2", "3-5", ">=6"]
    assert list(frame["sentences"]) == [2, 2, 2]
    for bucket, chosen in enumerate([[0, 2], [1, 4], [3, 5]]):
        expected = bleu.corpus_bleu([hypotheses[i] for i in chosen],
                                    [references[i] for i in chosen])
        assert frame["bleu"][bucket] == pytest.approx(expected)
        hyp = sum(len(bleu.tokenize_13a(hypotheses[i])) for i in chosen)
        ref = sum(len(bleu.tokenize_13a(references[i])) for i in chosen)
        assert frame["hyp_ref_ratio"][bucket] == pytest.approx(hyp / ref)
    with pytest.raises(Exception, match="not aligned"):
        positions.bleu_by_bucket(lengths, hypotheses[:-1], references, edges)


def test_bucket_edges_and_labels():
    edges = positions.bucket_edges(list(range(1, 101)), count=4)
    assert edges == [0, 26, 51, 76]
    assert [positions.bucket_of(n, edges) for n in (1, 25, 26, 75, 76, 500)] == [0, 0, 1, 2, 3, 3]
    assert [positions.bucket_label(i, edges) for i in range(4)] == \
        ["1-25", "26-50", "51-75", ">=76"]
    # One bucket below 24, then thirds of the lengths 24..101 (78 values).
    assert positions.bucket_edges(list(range(1, 102)), count=4, first=24) == [0, 24, 50, 76]


def test_learned_position_rows_past_the_training_length_never_move(attnlab, tmp_path):
    # Synthetic sequences of at most 6 symbols: with eos (source) or bos (target) a sequence
    # fills positions 0..6, so rows 7..15 of each table get no gradient at all.
    sweep = make_sweep(attnlab, tmp_path, "learned", positions="learned", scales="[rsqrt_dk]")
    run_dir = next(p.parent for p in sweep.glob("*/run.h5"))
    changes = positions.position_row_changes(run_dir)
    assert (changes["first_step"], changes["last_step"]) == (3, 6)
    for side in ("encoder", "decoder"):
        moved = changes[f"{side}_change"]
        assert len(moved) == 16
        assert positions.last_moving_row(moved) == 6
        assert np.all(moved[7:] == 0.0) and np.all(moved[:7] > 0.0)
        with h5py.File(run_dir / "ckpt" / "step_6.h5", "r") as f:
            table = f["params"][f"{side}.embed_positions.weight"][()]
        assert np.allclose(changes[f"{side}_norm"], np.linalg.norm(table, axis=1))
    assert positions.position_row_changes(tmp_path) is None  # no checkpoints


def test_long_view_raises_only_data_max_length(attnlab, scale_sweep):
    run_dir = run_files(scale_sweep)[0].parent
    view = positions.long_view(run_dir, 14)
    assert (view / "ckpt").resolve() == (run_dir / "ckpt").resolve()
    assert (view / "run.h5").is_file()
    original = run_attnlab(attnlab, "config", "-c", run_dir / "config.yaml").stdout
    seen = run_attnlab(attnlab, "config", "-c", view / "config.yaml").stdout
    changed = [(a, b) for a, b in zip(original.splitlines(), seen.splitlines()) if a != b]
    assert len(original.splitlines()) == len(seen.splitlines())
    assert len(changed) == 1 and "max_length" in changed[0][1] and "14" in changed[0][1]


def test_piece_counts_and_pieces_are_sentencepieces_own(tmp_path):
    """PieceCounter and sentencepiece_pieces read a model as Debian's sentencepiece command-line
    tools do: the counts equal spm_encode's pieces, the pieces spm_export_vocab's."""
    text = tmp_path / "text.txt"
    lines = (ROOT / "tests" / "fixtures" / "bible" / "train.en").read_text().splitlines()[:200]
    text.write_text("\n".join(lines) + "\n")
    subprocess.run(["spm_train", f"--input={text}", f"--model_prefix={tmp_path / 'm'}",
                    "--vocab_size=300", "--model_type=bpe", "--minloglevel=2"], check=True,
                   capture_output=True)
    model = tmp_path / "m.model"
    encoded = subprocess.run(["spm_encode", f"--model={model}", "--output_format=piece"],
                             input="\n".join(lines[:50]) + "\n", capture_output=True, text=True,
                             check=True).stdout.splitlines()
    counter = common.PieceCounter(model)
    assert [counter(line) for line in lines[:50]] == [len(e.split()) for e in encoded]
    vocab = subprocess.run(["spm_export_vocab", f"--model={model}"], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert common.sentencepiece_pieces(model) == [line.split("\t")[0] for line in vocab]
    with pytest.raises(AnalysisError, match="not a SentencePiece model"):
        common.sentencepiece_pieces(text)


def test_warmup_table_and_figures_follow_the_training_log(scale_sweep, tmp_path):
    sweep = load_sweep(scale_sweep)
    table = warmup_norm.table(sweep)
    for path in run_files(scale_sweep):
        with h5py.File(path, "r") as f:
            run_id = f.attrs["run_id"]
            loss = f["train/loss"][()]
            layers = f["diagnostics/grad_norm/value"][()]
        record = table.set_index("run_id").loc[run_id]
        assert record["first_loss"] == pytest.approx(loss[0])
        assert record["final_loss"] == pytest.approx(loss[-1])  # 10% of 6 rows: the last one
        assert record["max_loss"] == pytest.approx(loss.max())
        assert record["layer_spread_step1"] == pytest.approx(layers[0].max() / layers[0].min())
        assert bool(record["diverged"]) == (loss[-1] >= loss[0])
    files = warmup_norm.figures(sweep, table, tmp_path)
    assert sorted(p.split("/")[-1] for p in files) == ["warmup_norm_grad_norms.png",
                                                      "warmup_norm_loss.png"]
