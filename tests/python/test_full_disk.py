"""A disk that fills up during training: the write that would not fit is refused before anything
is changed, training stops with exit 1 naming the file and the free space, the run log stays
readable (status failed) with every row it had, and once space is freed a rerun resumes from the
newest checkpoint to the same end as an uninterrupted run.

The small file system is a 4 MiB tmpfs mounted in a private mount namespace (`unshare -m`, as
root); elsewhere the test is skipped, saying why."""

import os
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import attnlab_env
from test_train_cli import TASK, TINY

# Diagnostics every step make run.h5 grow by about 2 KiB a step; a checkpoint is about 620 KiB.
RUN = [*TINY, "--set", "train.steps=300", "--set", "train.checkpoint_every=100",
       "--set", "eval.every=100", "--set", "train.keep_checkpoints=1",
       "--set", "log.diagnostics_every=1", "--quiet"]

# Runs in the namespace: mount, fill to FREE KiB, train, keep a copy, free the space, train again.
SCRIPT = r"""
set -u
disk=$1; free_kib=$2; binary=$3; out=$4; shift 4
mount -t tmpfs -o size=4m tmpfs "$disk" || exit 90
avail=$(df -k --output=avail "$disk" | tail -1)
fallocate -l $(( (avail - free_kib) * 1024 )) "$disk/filler" || exit 91
"$binary" train --out "$disk/run" "$@" > "$out/first.out" 2> "$out/first.err"
echo $? > "$out/first.rc"
cp -r "$disk/run" "$out/after_failure"
rm "$disk/filler"
"$binary" train --out "$disk/run" "$@" > "$out/second.out" 2> "$out/second.err"
echo $? > "$out/second.rc"
cp -r "$disk/run" "$out/after_resume"
"""


def unshare_available():
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs root and unshare(1) to mount a small tmpfs in a private mount namespace"
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare -m is not allowed here: {probe.stderr.strip()}"
    return None


def fill_and_train(attnlab, tmp_path, free_kib):
    """Trains on a disk with `free_kib` free, then again after freeing it; returns the error
    line of the first attempt as (file, free KiB, needed KiB)."""
    reason = unshare_available()
    if reason:
        pytest.skip(reason)
    disk = tmp_path / "disk"
    disk.mkdir()
    result = subprocess.run(["unshare", "-m", "bash", "-c", SCRIPT, "script", str(disk),
                             str(free_kib), str(attnlab), str(tmp_path), "-c", str(TASK), *RUN],
                            capture_output=True, text=True, timeout=300, env=attnlab_env())
    assert result.returncode == 0, result.stderr
    first_err = (tmp_path / "first.err").read_text()
    assert (tmp_path / "first.rc").read_text().strip() == "1", first_err
    found = re.search(r"attnlab: error: (\S+): not written: the file system has (\d+) KiB free, "
                      r"less than the (\d+) KiB that", first_err)
    assert found, first_err
    assert int(found.group(2)) < int(found.group(3))
    assert (tmp_path / "second.rc").read_text().strip() == "0", \
        (tmp_path / "second.err").read_text()
    return found.group(1).replace(str(disk), "DISK"), first_err


def test_a_disk_too_full_for_a_new_run_log_writes_nothing(attnlab, tmp_path):
    path, message = fill_and_train(attnlab, tmp_path, 200)
    assert path == "DISK/run/run.h5"
    assert "a new run log needs" in message
    assert not (tmp_path / "after_failure" / "run.h5").exists()


def test_a_full_disk_stops_training_cleanly_and_a_rerun_resumes(attnlab, tmp_path):
    # Room for the run to start and write its first checkpoints, not for the second ones.
    path, _ = fill_and_train(attnlab, tmp_path, 2200)
    assert path.startswith("DISK/run/ckpt/")

    kept = tmp_path / "after_failure"
    with h5py.File(kept / "run.h5", "r") as f:
        assert f.attrs["status"] == "failed"
        steps = f["train"]["step"][...]
    assert len(steps) >= 100 and list(steps) == list(range(1, len(steps) + 1))
    assert (kept / "ckpt" / "step_100.h5").is_file()
    assert not list((kept / "ckpt").glob("*.tmp"))

    second_err = (tmp_path / "second.err").read_text()
    assert "resuming" in second_err and "from step" in second_err, second_err
    with h5py.File(tmp_path / "after_resume" / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        resumed = f["train"]["loss"][...]
        np.testing.assert_array_equal(f["train"]["step"][...], np.arange(1, 301))
    # The same 300 steps without a full disk.
    reference = tmp_path / "reference"
    subprocess.run([str(attnlab), "train", "-c", str(TASK), *RUN, "--out", str(reference)],
                   check=True, capture_output=True, env=attnlab_env(), timeout=300)
    with h5py.File(reference / "run.h5", "r") as f:
        np.testing.assert_array_equal(resumed, f["train"]["loss"][...])
