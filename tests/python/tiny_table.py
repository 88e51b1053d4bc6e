"""A real three-row table over a tiny task (attnlab sweep, three seeds a row), and copies of it
whose run logs are edited to known values: the inputs of the comparisons reported beside a table
(analysis.precision_replica, analysis.budget_check), whose answers are then known."""

import shutil
import sys

import h5py

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis.manifest import read_manifest  # noqa: E402

EXPERIMENT = f"""base: {ROOT}/experiments/tasks/reverse.yaml
name: tiny
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4, d_k: 8, d_v: 8}}
data: {{synthetic: {{train_size: 2000, dev_size: 50}}}}
train: {{batch_tokens: 400, steps: 16, lr: {{warmup: 8}}}}
eval: {{every: 8}}
log: {{every: 4}}
"""
SWEEP = """base: tiny.yaml
sweep:
  name: tiny
  test: welch
  rows:
    - {name: base, group: base}
    - {name: "A h=1", group: A, set: {model.heads: 1, model.d_k: 32, model.d_v: 32}}
    - {name: "A h=2", group: A, set: {model.heads: 2, model.d_k: 16, model.d_v: 16}}
  seeds: [1, 2, 3]
"""
ROWS = ("base", "A-h-1", "A-h-2")


def make_table(attnlab, work):
    """Runs the sweep under `work`; returns its directory (manifest and run logs)."""
    (work / "tiny.yaml").write_text(EXPERIMENT)
    (work / "sweep.yaml").write_text(SWEEP)
    run_attnlab(attnlab, "sweep", work / "sweep.yaml", "--launcher", "local", "--out",
                work / "runs")
    return work / "runs" / "tiny"


def edited_copy(table, destination, edit):
    """A copy of `table` (without checkpoints and reports) in which edit(run, h5py file) has
    changed every run log."""
    shutil.copytree(table, destination, ignore=shutil.ignore_patterns("ckpt", "report"))
    for run in read_manifest(destination / "manifest.yaml").runs:
        with h5py.File(destination / run.id / "run.h5", "r+") as f:
            edit(run, f)
    return destination


def dev_ppl(directory):
    """{(row, seed): final dev PPL} of a sweep directory, read directly from its run logs."""
    out = {}
    for run in read_manifest(directory / "manifest.yaml").runs:
        with h5py.File(directory / run.id / "run.h5", "r") as f:
            out[(run.row, run.seed)] = float(f["summary"].attrs["final_dev_ppl"])
    return out
