"""A rank that is stopped, not dead (SIGSTOP), used to hang the whole job: the other rank waited in
its allreduce for ever. With cluster.collective_timeout the waiting rank asks the others whether
they are waiting too, names the one that is silent, and the job ends with exit 1."""

import os
import shutil
import signal
import subprocess
import time

import h5py
import pytest

from conftest import MPI_TEST_ENV, attnlab_env
from test_train_cli import TASK, TINY


def rank_pids(launcher_pid):
    """{rank: pid} of the attnlab processes mpiexec started (OMPI_COMM_WORLD_RANK in their
    environment)."""
    ranks = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                command = f.read().split(b"\0")
            with open(f"/proc/{entry}/environ", "rb") as f:
                environment = dict(item.split(b"=", 1) for item in f.read().split(b"\0")
                                   if b"=" in item)
        except OSError:
            continue
        if not command or not command[0].endswith(b"attnlab"):
            continue
        if environment.get(b"ATTNLAB_TEST_LAUNCHER") != str(launcher_pid).encode():
            continue
        rank = environment.get(b"OMPI_COMM_WORLD_RANK")
        if rank is not None:
            ranks[int(rank)] = int(entry)
    return ranks


def logged_steps(path):
    try:
        with h5py.File(path, "r", locking=False) as f:
            return len(f["train"]["step"]) if "step" in f["train"] else 0
    except (OSError, KeyError):
        return 0


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs Open MPI's mpiexec")
def test_a_stopped_rank_ends_the_job_naming_it(attnlab, tmp_path):
    out = tmp_path / "run"
    marker = str(os.getpid())
    command = ["mpiexec", "-n", "2", "-x", "ATTNLAB_TEST_LAUNCHER", str(attnlab), "train",
               "-c", str(TASK), *TINY, "--set", "train.steps=100000",
               "--set", "cluster.collective_timeout=3", "--out", str(out), "--quiet"]
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=attnlab_env({**os.environ, **MPI_TEST_ENV,
                                            "ATTNLAB_TEST_LAUNCHER": marker}))
    stopped = None
    try:
        deadline = time.monotonic() + 60
        while logged_steps(out / "run.h5") < 5:
            assert job.poll() is None, job.communicate()
            assert time.monotonic() < deadline, "the job did not start training"
            time.sleep(0.2)
        ranks = {}
        while len(ranks) < 2 and time.monotonic() < deadline:
            ranks = rank_pids(marker)
        assert set(ranks) == {0, 1}, ranks
        stopped = ranks[1]
        os.kill(stopped, signal.SIGSTOP)
        began = time.monotonic()
        _, stderr = job.communicate(timeout=60)
        ended_after = time.monotonic() - began
    finally:
        if job.poll() is None:
            job.kill()
            job.communicate()
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGCONT)
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert job.returncode != 0
    assert ended_after < 60
    assert "more than the 3 s of cluster.collective_timeout: rank 1 did not arrive" in stderr, \
        stderr
    assert "rank 0 is waiting in it" in stderr
