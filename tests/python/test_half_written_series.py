"""A series group a kill left half-defined (its datasets made, its `columns` attribute not yet:
the writer was inside the series' first append): inspect, status and the analysis report it as
damaged, naming the group, never as an empty series; a resumed `train` drops it with the reason
recorded in the root attribute `repairs` and logs the series anew."""

import sys

import h5py
import numpy as np

from conftest import ROOT, run_attnlab
from test_train_cli import TASK, TINY

sys.path.insert(0, str(ROOT))
from analysis.runfile import read_run  # noqa: E402

DAMAGE = ("/eval: datasets (loss, step) without the attribute 'columns' (holding at most 0 rows): "
          "its definition was interrupted before its first row was flushed")


def killed_inside_the_first_eval_append(run_dir):
    """What a kill between Series::define's datasets and its attribute leaves in /eval, in a run
    whose trainer died (status still running)."""
    with h5py.File(run_dir / "run.h5", "a") as f:
        del f["eval"]
        group = f.create_group("eval")
        group.create_dataset("step", shape=(0,), maxshape=(None,), dtype="int64", chunks=(16,))
        group.create_dataset("loss", shape=(0,), maxshape=(None,), dtype="float64", chunks=(16,))
        f.attrs["status"] = "running"


def test_readers_call_a_half_defined_series_damaged_and_a_resume_repairs_it(attnlab, tmp_path):
    run_dir = tmp_path / "run"
    common = [*TINY, "--set", "train.checkpoint_every=2", "--set", "eval.every=2", "--quiet"]
    run_attnlab(attnlab, "train", "-c", TASK, *common, "--set", "train.steps=4", "--out", run_dir)
    killed_inside_the_first_eval_append(run_dir)

    shown = run_attnlab(attnlab, "inspect", run_dir).stdout
    assert f"damaged          {DAMAGE}" in shown, shown
    status = run_attnlab(attnlab, "status", run_dir).stdout
    assert "damaged" in status and "/eval: datasets (loss, step)" in status, status
    assert read_run(run_dir / "run.h5").damaged == [DAMAGE]

    resumed = run_attnlab(attnlab, "train", "-c", TASK, *common, "--set", "train.steps=6",
                          "--out", run_dir)
    assert "resuming" in resumed.stderr, resumed.stderr
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        assert list(f.attrs["repairs"]) == [f"resumed at step 4, dropped {DAMAGE}"]
        assert list(f["eval"].attrs["columns"])[:2] == ["step", "loss"]
        np.testing.assert_array_equal(f["eval"]["step"][...], [6])
    data = read_run(run_dir / "run.h5")
    assert data.damaged == []
    assert "repaired         resumed at step 4, dropped /eval" in \
        run_attnlab(attnlab, "inspect", run_dir).stdout
