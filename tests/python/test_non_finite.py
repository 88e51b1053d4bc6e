"""A NaN or infinite loss, gradient norm or parameter stops training at once: exit 1 with a message
naming the step and the value, status `failed` with the reason in /summary, nothing non-finite in
/train or in any checkpoint, and the last finite checkpoint kept (step_<n>.keep) and named. Every
case is the tiny reverse-task model of test_train_cli, driven to overflow by its config."""

import os
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import MPI_TEST_ENV, attnlab_env, run_attnlab
from test_train_cli import TASK, TINY

# A constant rate of 1e5 overflows the tiny model's gradients at step 4, after the checkpoint of
# step 2; 1e6 already at step 2, before any checkpoint.
DIVERGING = ["--set", "train.lr.schedule=constant", "--set", "train.lr.peak=1e5",
             "--set", "train.checkpoint_every=2", "--set", "train.keep_checkpoints=1"]
FAILURE = re.compile(r"attnlab: error: non-finite value at step (\d+): (training loss|gradient norm)"
                     r" is (nan|inf|-inf)")


def train(binary, out, *extra):
    return run_attnlab(binary, "train", "-c", TASK, *TINY, "--set", "train.steps=30", "--out", out,
                       "--quiet", *extra, check=False)


def checkpoint_params_finite(path):
    with h5py.File(path, "r") as f:
        return all(np.isfinite(item[...]).all() for item in _datasets(f))


def _datasets(group):
    for item in group.values():
        if isinstance(item, h5py.Group):
            yield from _datasets(item)
        elif item.dtype.kind == "f":
            yield item


def check_failed_run(out, result):
    assert result.returncode == 1, result.stdout + result.stderr
    found = FAILURE.search(result.stderr)
    assert found, result.stderr
    step = int(found.group(1))
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "failed"
        summary = dict(f["summary"].attrs)
        train_steps = f["train"]["step"][...]
        for column in f["train"].attrs["columns"]:
            assert np.isfinite(f["train"][column][...]).all(), column
    assert summary["stop_reason"] == "non_finite"
    assert summary["failure"].startswith(f"non-finite value at step {step}: ")
    # The failed step was neither logged nor saved.
    assert list(train_steps) == list(range(1, step))
    for checkpoint in (out / "ckpt").glob("*.h5"):
        assert checkpoint_params_finite(checkpoint), checkpoint
    return step, summary


def test_a_diverging_run_fails_at_the_first_non_finite_step_and_keeps_its_last_checkpoint(
        attnlab, tmp_path):
    out = tmp_path / "run"
    result = train(attnlab, out, *DIVERGING)
    step, summary = check_failed_run(out, result)
    assert step == 4
    assert summary["last_finite_step"] == 2
    assert summary["last_finite_checkpoint"] == str(out / "ckpt" / "step_2.h5")
    assert (out / "ckpt" / "step_2.keep").is_file()
    assert f"the last finite checkpoint is {out / 'ckpt' / 'step_2.h5'} (kept)" in result.stderr
    # A rerun resumes from it (not afresh) and meets the same step again.
    again = train(attnlab, out, *DIVERGING)
    assert "resuming" in again.stderr and "from step 2" in again.stderr, again.stderr
    assert check_failed_run(out, again)[0] == 4
    shown = run_attnlab(attnlab, "inspect", out).stdout
    assert "status           failed" in shown
    assert "failure          non-finite value at step 4: " in shown
    # status names the failure from run.h5 (/summary failure), not a line picked from the log.
    status = run_attnlab(attnlab, "status", out).stdout
    assert "    failure: non-finite value at step 4: " in status, status
    assert "    last: " not in status, status


def test_a_failure_before_any_checkpoint_says_so(attnlab, tmp_path):
    out = tmp_path / "run"
    result = train(attnlab, out, "--set", "train.lr.schedule=constant",
                   "--set", "train.lr.peak=1e6")
    step, summary = check_failed_run(out, result)
    assert step == 2
    assert summary["last_finite_checkpoint"] == "none"
    assert "no checkpoint was written before it" in result.stderr


def test_an_update_that_makes_parameters_non_finite_is_stopped_before_it_is_saved(
        attnlab, tmp_path):
    # Adam with eps 0 (1e-300 in float) and beta2 0 divides 0 by 0 where a gradient is exactly 0.
    out = tmp_path / "run"
    result = train(attnlab, out, "--set", "train.optimizer.eps=1e-300",
                   "--set", "train.optimizer.beta2=0", "--set", "train.checkpoint_every=1")
    assert result.returncode == 1, result.stderr
    assert re.search(r"non-finite value at step 1: the update at learning rate \S+ made "
                     r"parameters non-finite \(first: [a-z_.0-9]+\[\d+\] = nan\)", result.stderr)
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "failed"
    assert not list((out / "ckpt").glob("step_*.h5"))


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs Open MPI's mpiexec")
def test_two_ranks_stop_together_with_the_same_message(attnlab, tmp_path):
    out = tmp_path / "run"
    command = ["mpiexec", "-n", "2", str(attnlab), "train", "-c", str(TASK), *TINY,
               "--set", "train.steps=30", *DIVERGING, "--out", str(out), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                            env=attnlab_env({**os.environ, **MPI_TEST_ENV}))
    step, _ = check_failed_run(out, result)
    assert step == 4
