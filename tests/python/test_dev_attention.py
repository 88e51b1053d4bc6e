"""How concentrated attention is, over the dev set: what a run measures at its end (/attention_dev,
/summary dev_cross_attention_entropy) and `attnlab eval` (/eval_<split>/attention) against the
attention maps of the probe sentence recomputed in Python, on a dev set of that one sentence, and
the report's lines built from both."""

import math
import sys
import types

import h5py
import numpy as np
import pytest

from conftest import ROOT
from test_translate_cli import attnlab_in, make_workdir

sys.path.insert(0, str(ROOT))

from analysis import figures  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.source_attention import dev_cross_attention  # noqa: E402


def row_entropies(weights):
    """Entropy (nats) of every row of (H, rows, cols) attention weights: (H, rows)."""
    p = np.clip(weights, 1e-12, 1.0)
    return -(weights * np.log(p)).sum(axis=-1)


@pytest.fixture(scope="module")
def one_sentence_dev(attnlab, tmp_path_factory):
    """A tiny run whose dev set is its first dev pair, which is also the run's probe sentence."""
    work = make_workdir(tmp_path_factory.mktemp("devattention"), steps=30)
    for side in ("en", "es"):
        path = work / "data" / f"dev.{side}"
        path.write_text(path.read_text(encoding="utf-8").splitlines()[0] + "\n",
                        encoding="utf-8")
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run")
    return work


def test_the_run_measures_the_dev_set_as_the_probe_maps_give(one_sentence_dev):
    with h5py.File(one_sentence_dev / "run" / "run.h5", "r") as f:
        dev = f["attention_dev"]
        labels = [str(label) for label in dev.attrs["labels"]]
        entropy, relative = dev["entropy"][...], dev["relative_entropy"][...]
        assert int(dev.attrs["sentences"]) == 1
        summary = float(f["summary"].attrs["dev_cross_attention_entropy"])
        probe = f["attention/probe_0"]
        maps = {name: [probe[name][layer][...] for layer in sorted(probe[name])]
                for name in ("encoder_self", "decoder_self", "decoder_cross")}
    assert labels == [f"{name}.layers.{i}" for name in maps for i in range(len(maps[name]))]
    cross = []
    for label, nats, ratio in zip(labels, entropy, relative):
        name, layer = label.split(".layers.")
        weights = maps[name][int(layer)]
        rows = row_entropies(weights)
        np.testing.assert_allclose(nats, rows.mean(axis=-1), rtol=1e-4, atol=1e-6)
        if name == "decoder_self":
            # Position t sees t + 1 keys; position 0 sees one and has no relative entropy.
            visible = np.arange(1, weights.shape[1] + 1)
            expected = (rows[:, 1:] / np.log(visible[1:])).mean(axis=-1)
        else:
            expected = rows.mean(axis=-1) / math.log(weights.shape[-1])
        np.testing.assert_allclose(ratio, expected, rtol=1e-4, atol=1e-6)
        if name == "decoder_cross":
            cross.append(expected)
    assert summary == pytest.approx(float(np.mean(cross)), rel=1e-4)
    assert summary == pytest.approx(figures._probe_cross_attention(
        types.SimpleNamespace(attention={"probe_0": types.SimpleNamespace(
            maps={"decoder_cross": maps["decoder_cross"]})})), rel=1e-4)
    assert 0.0 < summary < 1.0


def test_eval_measures_the_same_parameters_alike(attnlab, one_sentence_dev):
    result = attnlab_in(attnlab, one_sentence_dev, "eval", "run", "--split", "dev", "--beam", "1")
    with h5py.File(one_sentence_dev / "run" / "run.h5", "r") as f:
        stored = f["attention_dev"]
        measured = f["eval_dev/attention"]
        for name in ("entropy", "relative_entropy", "logit_variance"):
            np.testing.assert_allclose(measured[name][...], stored[name][...], rtol=1e-5)
        assert int(measured.attrs["step"]) == int(stored.attrs["step"])
        value = float(f["eval_dev"].attrs["cross_attention_entropy"])
        assert value == pytest.approx(float(f["summary"].attrs["dev_cross_attention_entropy"]),
                                      rel=1e-6)
    assert f"decoder-encoder attention entropy {value:.3f} of uniform" in result.stdout


def fake_sweep(rows):
    """The parts of analysis.sweep.Sweep that cross_attention_concentration reads: rows with
    keys, their completed run ids and each run's summary and probe maps."""
    data, completed = {}, {}
    for key, runs in rows.items():
        completed[key] = []
        for i, (dev, probe) in enumerate(runs):
            run_id = f"{key}-{i}"
            attention = {}
            if probe is not None:  # one head, 2 target rows, uniform over 4 sources: 1.0
                weights = np.full((1, 2, 4), 0.25) if probe == 1.0 else np.array(
                    [[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]])
                attention["probe_0"] = types.SimpleNamespace(maps={"decoder_cross": [weights]})
            summary = {} if dev is None else {"dev_cross_attention_entropy": dev}
            data[run_id] = types.SimpleNamespace(summary=summary, attention=attention)
            completed[key].append(run_id)
    return types.SimpleNamespace(rows=[types.SimpleNamespace(key=key) for key in rows],
                                 data=data, completed=lambda key: completed[key])


def test_the_report_gives_the_dev_set_and_the_probe_per_row():
    lines = figures.cross_attention_concentration(fake_sweep({
        "base": [(0.6, 1.0), (0.7, 0.0)], "h=1": [(None, 1.0)], "h=4": [(0.3, None)]}))
    text = "\n".join(lines)
    dev, probe = text.split("Decoder-encoder attention of the probe sentence")
    assert "over the whole dev set" in dev
    assert "- base: 0.650 over 2 seed(s)" in dev and "- h=4: 0.300 over 1 seed(s)" in dev
    assert "h=1" not in dev
    assert "- base: 0.500 over 2 seed(s)" in probe and "- h=1: 1.000 over 1 seed(s)" in probe
    assert "h=4" not in probe
    # Runs without the dev measurement (older logs) keep the probe lines alone.
    only_probe = figures.cross_attention_concentration(fake_sweep({"base": [(None, 1.0)]}))
    assert only_probe[0].startswith("Decoder-encoder attention of the probe sentence")


def test_older_runs_give_it_from_eval_on_the_final_parameters_only():
    def run(final, **decoding):
        return types.SimpleNamespace(summary={"final_checkpoint": final}, decodings={
            "eval_dev": {"cross_attention_entropy": 0.4, "average_last": 0, **decoding}})
    assert dev_cross_attention(run("best (step 40)", step=40)) == 0.4
    assert dev_cross_attention(run("best (step 40, the newest)", step=40)) == 0.4
    assert dev_cross_attention(run("newest (step 40)", step=40)) == 0.4
    # Other parameters than the run's final evaluation scored: not this run's number.
    assert dev_cross_attention(run("best (step 40)", step=30)) is None
    assert dev_cross_attention(run("newest (step 40)", step=40, average_last=5)) is None
    assert dev_cross_attention(run("average of 5 (steps 20, 40)", step=40)) is None
    # Logs with the typed attributes say the same without prose; an unknown kind is an error.
    def typed(kind, final_step, **decoding):
        data = run("", **decoding)
        data.summary = {"final_checkpoint_kind": kind, "final_checkpoint_step": final_step}
        return data
    assert dev_cross_attention(typed("best", 40, step=40)) == 0.4
    assert dev_cross_attention(typed("newest", 40, step=40)) == 0.4
    assert dev_cross_attention(typed("newest", 40, step=30)) is None
    assert dev_cross_attention(typed("average", 40, step=40)) is None
    with pytest.raises(AnalysisError, match="final_checkpoint_kind 'last'"):
        dev_cross_attention(typed("last", 40, step=40))
    # The run's own measurement wins.
    own = run("best (step 40)", step=40)
    own.summary["dev_cross_attention_entropy"] = 0.7
    assert dev_cross_attention(own) == 0.7


@pytest.mark.slow
def test_the_committed_table3_names_the_rows_whose_decoder_ignores_the_source():
    """On the committed table3-plateau runs: the runs table's dev cross-attention is each run's
    /summary or /eval_dev value read here with h5py, and a conclusion says that the decoder
    ignores the source exactly for the rows with a run at 0.95 of uniform or more."""
    from analysis.conclusions import conclusion_lines
    from analysis.source_attention import IGNORES_SOURCE
    from analysis.sweep import load_sweep
    from analysis.table import build_table
    logs = ROOT / "docs" / "results" / "table3-plateau" / "runs"
    sweep = load_sweep(logs, with_attention=False)
    measured = {}
    for run_id in sweep.runs[sweep.runs["status"] == "completed"]["run_id"]:
        with h5py.File(logs / run_id / "run.h5", "r") as f:
            summary = f["summary"].attrs
            measured[run_id] = float(summary["dev_cross_attention_entropy"]
                                     if "dev_cross_attention_entropy" in summary
                                     else f["eval_dev"].attrs["cross_attention_entropy"])
    frame = sweep.runs.set_index("run_id")
    assert measured and all(frame.loc[run_id, "dev_cross_attention"] == pytest.approx(value)
                            for run_id, value in measured.items())
    stalled_rows = {frame.loc[run_id, "row"] for run_id, value in measured.items()
                    if value >= IGNORES_SOURCE}
    assert "C-N-4" in stalled_rows and "base" not in stalled_rows
    lines = [line for line in conclusion_lines(sweep, build_table(sweep))
             if line.startswith("- **")]
    named = {line[4:line.index("**", 4)] for line in lines if "ignores its source" in line}
    assert named == stalled_rows
    assert all(f"- **{row}**: failed: " in "\n".join(lines) for row in stalled_rows)
    # The trend check leaves them out of block C's order, as scipy computes it.
    from scipy import stats as scipy_stats
    table = build_table(sweep)
    records = {r["row"]: r for r in table.records}
    learned = [row.key for row in sweep.rows
               if (row.group == "C" or row.key == sweep.base) and row.key not in stalled_rows]
    tau = scipy_stats.kendalltau([records[k]["ppl_mean"] for k in learned],
                                 [records[k]["paper_ppl"] for k in learned])[0]
    stalled_in_c = sorted((row.key for row in sweep.rows
                           if row.group == "C" and row.key in stalled_rows),
                          key=[row.key for row in sweep.rows].index)
    line = next(line for line in table.trend if line.startswith("- block C:") and
                f"(left out, failed to learn: {', '.join(stalled_in_c)})" in line)
    assert f"dev PPL: tau = {tau:+.2f}" in line and f"over {len(learned)} rows" in line
