"""Bad input to `attnlab train` and `attnlab inspect`: one clear error, a non-zero exit, and no
file of a run changed."""

import hashlib
import re
import subprocess

import h5py
import numpy as np
import pytest

from conftest import ROOT, run_attnlab
from test_train_cli import TASK, train


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_truncated_newest_checkpoint_is_reported_and_the_previous_one_used(attnlab, tmp_path):
    out = tmp_path / "run"
    # keep two checkpoints (steps 10 and 20) of a run stopped by a crash at step 20
    train(attnlab, out, "--set", "train.checkpoint_every=10", "--set", "train.keep_checkpoints=3",
          steps=20)
    with h5py.File(out / "run.h5", "r+") as f:
        f.attrs["status"] = "running"  # as a killed run leaves it
    newest = out / "ckpt" / "step_20.h5"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])
    resumed = train(attnlab, out, "--set", "train.checkpoint_every=10",
                    "--set", "train.keep_checkpoints=3", steps=30)
    assert "step_20.h5" in resumed.stderr  # the damaged file is named
    assert "resuming" in resumed.stderr and "step 10" in resumed.stderr
    with h5py.File(out / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        np.testing.assert_array_equal(f["train"]["step"][...], np.arange(1, 31))


def sets(*assignments):
    return [word for assignment in assignments for word in ("--set", assignment)]


@pytest.mark.parametrize("first, then, named", [
    ([], ["model.d_ff=48"], "d_ff"),
    ([], ["model.norm_type=rmsnorm"], "norm_type"),
    (["model.norm_type=rmsnorm"], [], "norm_type"),
])
def test_a_checkpoint_of_another_architecture_is_refused_naming_it(attnlab, tmp_path, first, then,
                                                                   named):
    out = tmp_path / "run"
    train(attnlab, out, *sets("train.checkpoint_every=5", *first), steps=10)
    with h5py.File(out / "run.h5", "r+") as f:
        f.attrs["status"] = "preempted"
    before = digest(out / "run.h5")
    result = train(attnlab, out, *sets("train.checkpoint_every=5", *then), steps=20, check=False)
    assert result.returncode == 1
    assert "architecture" in result.stderr and named in result.stderr
    assert digest(out / "run.h5") == before


def test_a_foreign_hdf5_file_in_place_of_the_run_log_is_an_error_naming_it(attnlab, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    with h5py.File(out / "run.h5", "w") as f:
        f["x"] = np.zeros(3)
    before = digest(out / "run.h5")
    result = train(attnlab, out, check=False)
    assert result.returncode == 1
    assert str(out / "run.h5") in result.stderr
    assert digest(out / "run.h5") == before
    inspected = run_attnlab(attnlab, "inspect", out, check=False)
    assert inspected.returncode == 1 and "run.h5" in inspected.stderr


def test_a_missing_config_file_is_a_usage_error(attnlab, tmp_path):
    result = run_attnlab(attnlab, "train", "-c", tmp_path / "nope.yaml", "--out", tmp_path / "x",
                         check=False)
    assert result.returncode == 2
    assert "nope.yaml" in result.stderr
    assert not (tmp_path / "x").exists()


def test_inspect_summarises_a_run(attnlab, tmp_path):
    out = tmp_path / "run"
    train(attnlab, out, steps=10)
    result = run_attnlab(attnlab, "inspect", out)
    assert "status           completed" in result.stdout
    assert "steps            10 of 10" in result.stdout
    assert "step_10.h5" in result.stdout
    assert "ppl" in result.stdout


def test_a_new_training_corpus_does_not_inherit_another_corpuss_dev_and_test(attnlab, tmp_path):
    """A config based on the Bible one that changes only data.train to another directory would
    evaluate on the Bible's dev/test files: an error naming the inherited keys. Setting them
    again keeps them; a training file in the same directory (a subset) is fine."""
    own = tmp_path / "own.yaml"
    own.write_text(f"base: {ROOT / 'experiments' / 'small' / 'tiny.yaml'}\n"
                   "data:\n  train: {src: mine/train.en, tgt: mine/train.de}\n")
    result = run_attnlab(attnlab, "config", "-c", own, check=False)
    assert result.returncode == 2
    assert f"{own}:3:" in result.stderr
    assert "data.dev.src, data.dev.tgt, data.test.src, data.test.tgt are inherited" in \
        result.stderr
    kept = run_attnlab(attnlab, "config", "-c", own, "--set", "data.dev.src=data/bible/dev.en",
                       "--set", "data.dev.tgt=data/bible/dev.es", "--set",
                       "data.test.src=data/bible/test.en", "--set",
                       "data.test.tgt=data/bible/test.es")
    assert "dev.en" in kept.stdout
    subset = run_attnlab(attnlab, "config", "-c", ROOT / "experiments" / "small" / "tiny.yaml",
                         "--set", "data.train.src=data/bible/train.half.en")
    assert subset.returncode == 0


def test_sizes_that_cannot_fit_in_memory_are_refused_before_allocating_naming_the_key(
        attnlab, tmp_path):
    # 2^31 - 1 synthetic pairs used to be allocated until the process was killed.
    result = train(attnlab, tmp_path / "huge", "--set", "data.synthetic.train_size=2147483647",
                   check=False, timeout=60)
    assert result.returncode == 1, result.stderr
    assert re.search(r"this run needs at least [\d.]+ GiB of memory per process, more than the "
                     r"[\d.]+ GiB of the physical memory of this machine; the largest part is "
                     r"synthetic training pairs \([\d.]+ GiB\): lower data.synthetic.train_size",
                     result.stderr), result.stderr
    assert not (tmp_path / "huge" / "run.h5").exists()
    # A thousand threads' stacks under an address-space limit used to hang instead of failing.
    limited = subprocess.run(
        f"ulimit -v 4000000; exec {attnlab} train -c {TASK} --set cluster.threads_per_rank=1024 "
        f"--out {tmp_path / 'threads'}", shell=True, capture_output=True, text=True, timeout=60)
    assert limited.returncode == 1, limited.stderr
    assert "address-space limit (ulimit -v); the largest part is thread stacks" in \
        limited.stderr and "lower cluster.threads_per_rank" in limited.stderr, limited.stderr
