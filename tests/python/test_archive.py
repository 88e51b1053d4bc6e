"""`attnlab archive runs/<sweep> --to DIR`: DIR gets the manifest, the completed runs' logs and,
for a run stopped part-way, its log with the checkpoints its resume reads; a sweep continued from
DIR on another machine skips the completed runs and resumes the stopped one to exactly what an
uninterrupted run gives. What a sweep is still running, and a completed log already in DIR, are
left alone; a DIR of another sweep is refused; --dry-run writes nothing."""

import shutil
import signal
import subprocess
import time

import h5py
import pytest

from conftest import attnlab_env, run_attnlab
from test_sweep_local import digest, final, run_dirs, write_sweep

pytestmark = pytest.mark.slow

STEPS = 300


def start_training(attnlab, run_dir):
    """Starts the trainer of one sweep run in the background (as the local launcher would)."""
    return subprocess.Popen([str(attnlab), "train", "-c", str(run_dir / "config.yaml"), "--out",
                             str(run_dir), "--run-id", run_dir.name, "--sweep-id", "tiny", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=attnlab_env(None))


def wait_for_checkpoint_past(run_dir, step, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = [int(p.stem.split("_")[1]) for p in (run_dir / "ckpt").glob("step_*.h5")]
        if steps and max(steps) >= step:
            return
        time.sleep(0.05)
    raise AssertionError(f"{run_dir} wrote no checkpoint past step {step} within {timeout} s")


def status(run_dir):
    with h5py.File(run_dir / "run.h5", "r") as f:
        return f.attrs["status"]


def archive(attnlab, sweep_dir, to, *extra, check=True):
    return run_attnlab(attnlab, "archive", sweep_dir, "--to", to, *extra, check=check)


@pytest.fixture
def half_done_sweep(attnlab, tmp_path):
    """A 4-run sweep with one run completed (and a decoding beside it), one stopped by SIGTERM at
    a checkpoint part-way, and two not started."""
    sweep = write_sweep(tmp_path, steps=STEPS)
    # Four checkpoints kept, the last two averaged at the end: a resume needs the newest two.
    text = sweep.read_text().replace("checkpoint_every: 10}", "checkpoint_every: 10, "
                                     "keep_checkpoints: 4}")
    sweep.write_text(text.replace("eval: {every: 10}", "eval: {every: 10, average_last: 2}"))
    run_attnlab(attnlab, "sweep", sweep, "--dry-run", "--out", tmp_path / "runs")
    sweep_dir = tmp_path / "runs" / "tiny"
    done, stopped = run_dirs(sweep_dir)[:2]
    run_attnlab(attnlab, "train", "-c", done / "config.yaml", "--out", done, "--run-id",
                done.name, "--sweep-id", "tiny", "-q", timeout=300)
    (done / "hyp.dev.txt").write_text("a decoding of the dev set\n")
    trainer = start_training(attnlab, stopped)
    try:
        wait_for_checkpoint_past(stopped, 60)
    finally:
        trainer.send_signal(signal.SIGTERM)
        trainer.communicate(timeout=120)
    assert trainer.returncode == 3 and status(stopped) == "preempted"
    return sweep, sweep_dir, done, stopped


def test_archive_carries_what_continuing_the_sweep_needs(attnlab, tmp_path, half_done_sweep):
    sweep, sweep_dir, done, stopped = half_done_sweep
    to = tmp_path / "archive"
    out = archive(attnlab, sweep_dir, to).stdout
    assert ("4 runs: 1 completed, 1 stopped part-way (with checkpoints), 2 not started, "
            "0 not archived") in out, out
    assert digest(to / "manifest.yaml") == digest(sweep_dir / "manifest.yaml")
    for name in ("run.h5", "config.yaml", "hyp.dev.txt"):
        assert digest(to / done.name / name) == digest(done / name)
    assert not (to / done.name / "ckpt").exists()
    # The stopped run: its log, its two newest checkpoints (of the four kept) and best.h5.
    kept = sorted((stopped / "ckpt").glob("step_*.h5"), key=lambda p: int(p.stem[5:]))
    assert len(kept) == 4, kept
    assert sorted(p.name for p in (to / stopped.name / "ckpt").iterdir()) == sorted(
        ["best.h5"] + [p.name for p in kept[-2:]])
    for path in kept[-2:] + [stopped / "ckpt" / "best.h5"]:
        assert digest(to / stopped.name / "ckpt" / path.name) == digest(path)
    assert sorted(p.name for p in to.iterdir()) == sorted(["manifest.yaml", done.name,
                                                            stopped.name])
    # Nothing to do the second time.
    again = archive(attnlab, sweep_dir, to).stdout
    assert "0 file(s) written (0.0 MB), 0 removed" in again, again

    # Another machine: the archive, then the sweep. The completed run is skipped untouched; the
    # stopped one resumes and ends where an uninterrupted run of it ends.
    moved = tmp_path / "moved" / "tiny"
    shutil.copytree(to, moved)
    resumed = run_attnlab(attnlab, "sweep", sweep, "--out", tmp_path / "moved", timeout=600)
    assert "skipping 1 run(s), completed" in resumed.stdout, resumed.stdout
    assert digest(moved / done.name / "run.h5") == digest(done / "run.h5")
    whole = tmp_path / "whole"
    run_attnlab(attnlab, "train", "-c", stopped / "config.yaml", "--out", whole, "-q",
                timeout=300)
    with h5py.File(moved / stopped.name / "run.h5", "r") as f:
        assert list(f["train"]["step"][...]) == list(range(1, STEPS + 1))
    assert final(moved / stopped.name) == final(whole)
    assert final(moved / stopped.name, "eval") == final(whole, "eval")

    # Archived back: the now completed run's log replaces the unfinished one, its checkpoints
    # leave the archive.
    back = archive(attnlab, moved, to).stdout
    assert f"remove {stopped.name}/ckpt" in back and f"update {stopped.name}/run.h5" in back
    assert status(to / stopped.name) == "completed"
    assert not (to / stopped.name / "ckpt").exists()
    assert "4 runs: 4 completed" in back, back


def test_archive_leaves_running_runs_and_completed_logs_alone(attnlab, tmp_path,
                                                              half_done_sweep):
    sweep, sweep_dir, done, stopped = half_done_sweep
    to = tmp_path / "archive"
    # A completed log of the stopped run is already in the archive: it is kept.
    (to / stopped.name).mkdir(parents=True)
    shutil.copy(done / "run.h5", to / stopped.name / "run.h5")
    before = digest(to / stopped.name / "run.h5")
    running = run_dirs(sweep_dir)[2]
    trainer = start_training(attnlab, running)
    try:
        wait_for_checkpoint_past(running, 10)
        out = archive(attnlab, sweep_dir, to).stdout
    finally:
        trainer.send_signal(signal.SIGTERM)
        trainer.communicate(timeout=120)
    lines = [line for line in out.splitlines() if "not archived:" in line]
    assert len(lines) == 2, out
    assert any("running (stop the sweep first" in line for line in lines), out
    assert any("is completed; it is kept" in line for line in lines), out
    assert digest(to / stopped.name / "run.h5") == before
    assert not (to / running.name).exists()
    assert "1 completed, 0 stopped part-way (with checkpoints), 1 not started, 2 not archived" \
        in out, out


def test_archive_refuses_another_sweeps_archive_and_a_dry_run_writes_nothing(attnlab, tmp_path,
                                                                              half_done_sweep):
    _, sweep_dir, _, stopped = half_done_sweep
    dry = archive(attnlab, sweep_dir, tmp_path / "fresh", "--dry-run").stdout
    assert "would archive" in dry and f"add    {stopped.name}/run.h5" in dry
    assert "file(s) to write" in dry and not (tmp_path / "fresh").exists()

    other = write_sweep(tmp_path, name="other", seeds="[3]")
    run_attnlab(attnlab, "sweep", other, "--dry-run", "--out", tmp_path / "runs")
    refused = archive(attnlab, sweep_dir, tmp_path / "runs" / "other", check=False)
    assert refused.returncode == 1
    assert "lists 2 run(s) that" in refused.stderr and "it archives another sweep" in \
        refused.stderr, refused.stderr
    completed_only = archive(attnlab, sweep_dir, tmp_path / "logs", "--completed-only").stdout
    assert "stopped at step" in completed_only and "(--completed-only)" in completed_only
    assert not (tmp_path / "logs" / stopped.name).exists()
