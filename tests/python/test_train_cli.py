"""`attnlab train` end to end: a run directory's life cycle, exact resume after SIGTERM, and
N ranks equal one rank. Every run is a tiny reverse-task model so the suite stays fast."""

import hashlib
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import ROOT, run_attnlab

TINY = [
    "--set", "model.encoder_layers=1", "--set", "model.decoder_layers=1",
    "--set", "model.d_model=32", "--set", "model.d_ff=64", "--set", "model.heads=4",
    "--set", "model.d_k=8", "--set", "model.d_v=8",
    "--set", "train.batch_tokens=400", "--set", "data.synthetic.train_size=2000",
    "--set", "data.synthetic.dev_size=50", "--set", "log.every=1",
]
TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"


def train(binary, out, *extra, steps=30, **kwargs):
    return run_attnlab(binary, "train", "-c", TASK, *TINY, "--set", f"train.steps={steps}",
                       "--out", out, *extra, **kwargs)


def series(path, group, column):
    with h5py.File(path, "r") as f:
        return np.asarray(f[group][column][...])


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_writes_a_completed_log_and_is_never_overwritten(attnlab, tmp_path):
    out = tmp_path / "run"
    first = train(attnlab, out, "--set", "model.dropout=0.1")
    assert "completed" in first.stdout
    log = out / "run.h5"
    with h5py.File(log, "r") as f:
        assert f.attrs["status"] == "completed"
        assert f.attrs["schema"] == "attnlab-run"
        steps = f["train"]["step"][...]
        assert list(steps) == list(range(1, 31))
        assert f["summary"].attrs["params"] > 0
        assert f["config"].attrs["model.d_model"] == 32
    before = digest(log)
    again = train(attnlab, out, "--set", "model.dropout=0.1")
    assert "already completed" in again.stdout
    assert digest(log) == before
    forced = train(attnlab, out, "--set", "model.dropout=0.1", "--force", steps=2)
    assert (tmp_path / "run.1" / "run.h5").is_file()
    assert digest(log) == before, forced.stdout


def test_sigterm_then_resume_equals_an_uninterrupted_run(attnlab, tmp_path):
    steps = 40
    straight = tmp_path / "straight"
    train(attnlab, straight, "--set", "model.dropout=0.1", "--set", "train.checkpoint_every=5",
          steps=steps)

    # The interrupted run: SIGTERM once progress passes a tenth of the run.
    interrupted = tmp_path / "interrupted"
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", f"train.steps={steps}",
               "--set", "model.dropout=0.1", "--set", "train.checkpoint_every=5",
               "--out", str(interrupted)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                    "PATH": "/usr/bin:/bin"})
    for line in process.stderr:
        if line.startswith("step "):
            process.send_signal(signal.SIGTERM)
            break
    process.communicate(timeout=300)
    assert process.returncode == 3, "a preempted run exits with code 3"
    with h5py.File(interrupted / "run.h5", "r") as f:
        assert f.attrs["status"] == "preempted"
        stopped_at = int(f["train"]["step"][-1])
    assert stopped_at < steps
    resumed = train(attnlab, interrupted, "--set", "model.dropout=0.1",
                    "--set", "train.checkpoint_every=5", steps=steps)
    assert "resuming" in resumed.stderr
    a = series(straight / "run.h5", "train", "loss")
    b = series(interrupted / "run.h5", "train", "loss")
    assert list(series(interrupted / "run.h5", "train", "step")) == list(range(1, steps + 1))
    np.testing.assert_array_equal(a, b)
    last = f"ckpt/step_{steps}.h5"
    with h5py.File(straight / last, "r") as fa, h5py.File(interrupted / last, "r") as fb:
        for name in fa["params"]:
            np.testing.assert_array_equal(fa["params"][name][...], fb["params"][name][...],
                                          err_msg=name)


def caught_signals(pid):
    """Signals the process has handlers for (SigCgt in /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("SigCgt:"):
                mask = int(line.split()[1], 16)
                return {number for number in range(1, 65) if mask >> (number - 1) & 1}
    return set()


def test_a_stop_during_start_up_checkpoints_after_the_first_step(attnlab, tmp_path):
    """A launcher's stop request (USR1) can arrive while a run is still starting: the trainer
    catches it from the start (before it writes run.h5), trains one step, checkpoints and exits 3,
    instead of dying of USR1's default action and being counted as failed."""
    out = tmp_path / "run"
    # A large synthetic training set keeps the start-up (data generation) long enough to see.
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", "train.steps=50",
               "--set", "data.synthetic.train_size=1000000", "--out", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                                    "PATH": "/usr/bin:/bin"})
    deadline = time.monotonic() + 60
    while signal.SIGUSR1 not in caught_signals(process.pid) and time.monotonic() < deadline:
        time.sleep(0.001)
    log_existed = (out / "run.h5").exists()
    process.send_signal(signal.SIGUSR1)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 3, stdout + stderr
    assert not log_existed, "the stop handler was installed only after start-up"
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "preempted"
        assert list(f["train"]["step"][...]) == [1]
    assert (out / "ckpt" / "step_1.h5").is_file()


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs Open MPI's mpiexec")
def test_two_ranks_equal_one_rank_on_the_same_global_batch(attnlab, tmp_path):
    one = tmp_path / "one"
    two = tmp_path / "two"
    train(attnlab, one, "--set", "model.dropout=0.0", steps=20)
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_hwloc_base_binding_policy": "none",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    command = ["mpiexec", "-n", "2", str(attnlab), "train", "-c", str(TASK), *TINY,
               "--set", "train.steps=20", "--set", "model.dropout=0.0", "--out", str(two)]
    import os
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    with h5py.File(two / "run.h5", "r") as f:
        assert f.attrs["world_size"] == 2
    a = series(one / "run.h5", "train", "loss")
    b = series(two / "run.h5", "train", "loss")
    np.testing.assert_allclose(a, b, rtol=2e-4)
    np.testing.assert_array_equal(series(one / "run.h5", "train", "tokens"),
                                  series(two / "run.h5", "train", "tokens"))


def test_a_typo_in_the_yaml_is_a_usage_error_naming_file_and_line(attnlab, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"base: {TASK}\nmodel:\n  haeds: 4\n")
    result = run_attnlab(attnlab, "train", "-c", bad, "--out", tmp_path / "x", check=False)
    assert result.returncode == 2
    assert "bad.yaml:3" in result.stderr and "heads" in result.stderr
    assert not (tmp_path / "x").exists()
