"""Sweeps through a real single-node Slurm (cluster/local-slurm.sh, brought up once for the
module): a 4-run job array with 2 ranks per run (srun --mpi=pmix) equals the local launcher's
runs, a preempted array task is requeued and resumes to the same final loss, hostile names run
safely, and impossible resources are rejected at submit. Every wait is bounded."""

import contextlib
import os
import re
import shutil
import subprocess
import time

import h5py
import pytest

from conftest import ROOT, run_attnlab
from test_sweep_local import final_losses, write_sweep

LOCAL_SLURM = ROOT / "cluster" / "local-slurm.sh"
PROFILE = ROOT / "cluster" / "profiles" / "local.yaml"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    shutil.which("slurmctld") is None and not os.path.exists("/usr/sbin/slurmctld"),
    reason="slurmctld is not installed (make deps installs slurmctld slurmd slurm-client munge)")]


@contextlib.contextmanager
def local_slurm(state, port, *up_args, **env_extra):
    """cluster/local-slurm.sh up with its state in `state` (ATTNLAB_SLURM_* in env_extra), down
    afterwards; yields the environment its clients need (SLURM_CONF, ATTNLAB_SLURM_DIR)."""
    env = dict(os.environ, ATTNLAB_SLURM_DIR=state, ATTNLAB_SLURM_PORT=str(port), **env_extra)
    try:
        up = subprocess.run([str(LOCAL_SLURM), "up", *up_args], env=env, capture_output=True,
                            text=True, timeout=90)
        assert up.returncode == 0, up.stdout + up.stderr
        env["SLURM_CONF"] = f"{state}/slurm.conf"
        yield env
    finally:
        subprocess.run([str(LOCAL_SLURM), "down"], env=env, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def slurm():
    """A fresh single-node Slurm for this module; yields the environment its clients need."""
    # Under /tmp itself: munged (running as the munge user) must be able to reach its socket.
    with local_slurm(f"/tmp/attnlab-slurm-pytest-{os.getpid()}",
                     os.environ.get("ATTNLAB_SLURM_TEST_PORT", "6917")) as env:
        yield env


def slurm_env(slurm):
    return {"SLURM_CONF": slurm["SLURM_CONF"]}


def debug_info(slurm, sweep_dir):
    """squeue and the task logs, for a failure message."""
    queue = subprocess.run(["squeue", "-a"], env=slurm, capture_output=True, text=True,
                           timeout=30).stdout
    logs = ""
    for log in sorted((sweep_dir / "slurm").glob("*.log")) if sweep_dir.is_dir() else []:
        logs += f"--- {log.name}\n{log.read_text()[-2000:]}\n"
    for log in sorted(sweep_dir.glob("*/train.log")) if sweep_dir.is_dir() else []:
        logs += f"--- {log.parent.name}/train.log\n{log.read_text()[-1000:]}\n"
    return f"squeue:\n{queue}\n{logs}"


def status_of(attnlab, slurm, sweep_dir):
    return run_attnlab(attnlab, "status", sweep_dir, env=slurm_env(slurm), timeout=60).stdout


def wait_until(predicate, timeout, what, slurm, sweep_dir):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"not {what} within {timeout} s\n{debug_info(slurm, sweep_dir)}")


def submit(attnlab, slurm, sweep, runs, *extra, check=True, profile=PROFILE):
    return run_attnlab(attnlab, "sweep", sweep, "--launcher", "slurm", "--profile", profile,
                       "--out", runs, *extra, env=slurm_env(slurm), timeout=120, check=check)


def job_id(result):
    match = re.search(r"submitted job array (\d+)", result.stdout)
    assert match, result.stdout
    return match.group(1)


def test_job_array_of_two_rank_runs_equals_the_local_launcher(attnlab, slurm, tmp_path):
    sweep = write_sweep(tmp_path, name="array", ranks=2)
    local = tmp_path / "local"
    run_attnlab(attnlab, "sweep", sweep, "--out", local, timeout=240)
    expected = final_losses(local / "array")
    assert len(expected) == 4

    runs = tmp_path / "slurm"
    sweep_dir = runs / "array"
    job = job_id(submit(attnlab, slurm, sweep, runs))
    assert f"job_id: \"{job}\"" in (sweep_dir / "slurm.yaml").read_text() or \
        f"job_id: {job}" in (sweep_dir / "slurm.yaml").read_text()
    wait_until(lambda: "4 runs: 4 completed" in status_of(attnlab, slurm, sweep_dir), 180,
               "all 4 array tasks completed", slurm, sweep_dir)
    assert final_losses(sweep_dir) == expected
    for run_dir in sweep_dir.iterdir():
        if (run_dir / "run.h5").is_file():
            with h5py.File(run_dir / "run.h5", "r") as f:
                assert f.attrs["world_size"] == 2
    status = status_of(attnlab, slurm, sweep_dir)
    assert status.count(f"{job}_") == 4 and "COMPLETED" in status

    again = submit(attnlab, slurm, sweep, runs)
    assert "nothing to launch" in again.stdout
    assert "submitted" not in again.stdout


def preempt_and_wait_for_requeue(attnlab, env, job, sweep_dir):
    """Slurm's warning signal to task 0 of `job` (as before a time limit), then waits until the
    requeued task completed; checks the task log says so and returns the run's directory."""
    signal = subprocess.run(["scancel", "--batch", "--signal=USR1", f"{job}_0"], env=env,
                            capture_output=True, text=True, timeout=30)
    assert signal.returncode == 0, signal.stderr
    wait_until(lambda: "1 runs: 1 completed" in status_of(attnlab, env, sweep_dir), 180,
               "the requeued task completed", env, sweep_dir)
    log = (sweep_dir / "slurm" / f"{job}_0.log").read_text()
    assert "preempted after a checkpoint; requeueing its task" in log, log
    assert "(restart 1)" in log, log
    (run_dir,) = [d for d in sweep_dir.iterdir() if (d / "run.h5").is_file()]
    return run_dir


def test_preempted_task_is_requeued_and_resumes_to_the_same_loss(attnlab, slurm, tmp_path):
    # About ten seconds of training: the warning signal, sent once step 15 is seen, lands while
    # the run trains rather than after it ended (300 steps took 1.2 s).
    steps = 3000
    sweep = write_sweep(tmp_path, name="preempt", steps=steps, seeds="[5]",
                        extra="  grid: {model.norm: [pre]}\n", every=100)
    runs = tmp_path / "slurm"
    sweep_dir = runs / "preempt"
    job = job_id(submit(attnlab, slurm, sweep, runs))
    progress = re.compile(r"running\s+(\d+)/" + str(steps))

    def past_a_checkpoint():
        match = progress.search(status_of(attnlab, slurm, sweep_dir))
        return match is not None and int(match.group(1)) >= 15

    wait_until(past_a_checkpoint, 120, "running past step 15", slurm, sweep_dir)
    run_dir = preempt_and_wait_for_requeue(attnlab, slurm, job, sweep_dir)
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        assert list(f["train"]["step"][...]) == list(range(1, steps + 1))

    local = tmp_path / "local"
    run_attnlab(attnlab, "sweep", sweep, "--out", local, timeout=240)
    assert final_losses(sweep_dir) == final_losses(local / "preempt")


def test_cancel_stops_the_array_and_queued_runs_are_not_submitted_twice(attnlab, slurm, tmp_path):
    sweep = write_sweep(tmp_path, name="cancelled", steps=5000, seeds="[1, 2]",
                        extra="  grid: {model.norm: [pre]}\n")
    runs = tmp_path / "runs"
    sweep_dir = runs / "cancelled"
    job = job_id(submit(attnlab, slurm, sweep, runs))
    wait_until(lambda: "2 running" in status_of(attnlab, slurm, sweep_dir), 60,
               "both tasks running", slurm, sweep_dir)
    queued = submit(attnlab, slurm, sweep, runs)
    assert "skipping 2 run(s), already queued or running in Slurm" in queued.stdout
    cancelled = run_attnlab(attnlab, "cancel", sweep_dir, env=slurm_env(slurm), timeout=60)
    assert f"cancelled job array {job} (2 tasks queued or running)" in cancelled.stdout

    def gone():
        return subprocess.run(["squeue", "-h", "-j", job], env=slurm, capture_output=True,
                              text=True, timeout=30).stdout.strip() == ""

    wait_until(gone, 60, "the cancelled tasks gone from the queue", slurm, sweep_dir)
    status = status_of(attnlab, slurm, sweep_dir)
    assert "running" not in status.split("runs:")[-1], status
    # Cancelled runs read as cancelled where they checkpointed, not as crashes.
    assert status.count("cancelled on request after a checkpoint at step") == 2, status
    assert "srun: error" not in status
    nothing = run_attnlab(attnlab, "cancel", sweep_dir, env=slurm_env(slurm), timeout=60)
    assert "nothing to cancel" in nothing.stdout


HOSTILE_ROWS = """\
  rows:
    - {name: "a $(touch PWNED) ; `touch PWNED2` 'q\\" x"}
"""


def test_hostile_names_and_paths_run_safely(attnlab, slurm, tmp_path):
    sweep = write_sweep(tmp_path, name="hostile", seeds="[1]", extra=HOSTILE_ROWS)
    sweep.write_text(sweep.read_text().replace("name: hostile",
                                               "name: \"evil $(touch PWNED); x'\""))
    runs = tmp_path / "runs $(touch PWNED) ; 'q\" `touch PWNED2`"
    submit(attnlab, slurm, sweep, runs)
    (sweep_dir,) = list(runs.iterdir())
    wait_until(lambda: "1 runs: 1 completed" in status_of(attnlab, slurm, sweep_dir), 120,
               "the hostile run completed", slurm, sweep_dir)
    (script,) = list((sweep_dir / "slurm").glob("*.sbatch"))
    if shutil.which("shellcheck"):
        check = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True,
                               timeout=60)
        assert check.returncode == 0, check.stdout
    assert not list(tmp_path.rglob("PWNED*"))
    assert not list(ROOT.glob("PWNED*"))


def test_impossible_resources_are_rejected_at_submit(attnlab, slurm, tmp_path):
    sweep = write_sweep(tmp_path, name="toobig", seeds="[1]")
    profile = tmp_path / "big.yaml"
    profile.write_text(PROFILE.read_text() + "cpus_per_task: 64\n")
    runs = tmp_path / "runs"
    result = run_attnlab(attnlab, "sweep", sweep, "--launcher", "slurm", "--profile", profile,
                         "--out", runs, env=slurm_env(slurm), timeout=120, check=False)
    assert result.returncode == 1
    assert "Slurm rejected the job array" in result.stderr
    assert "More processors requested than permitted" in result.stderr
    assert "64 cores" in result.stderr
    assert not (runs / "toobig" / "slurm.yaml").exists()
    queue = subprocess.run(["squeue", "-h", "-n", "attnlab-toobig"], env=slurm,
                           capture_output=True, text=True, timeout=30)
    assert queue.stdout.strip() == ""


CORPUS_SWEEP = """\
base: tiny.yaml
name: corpus
train: {steps: 6}
eval: {every: 6}
sweep:
  rows:
    - {name: base, group: base}
    - {name: h1, group: A, set: {model.heads: 1, model.d_k: 32, model.d_v: 32}}
  seeds: [1]
"""


def test_a_corpus_sweep_finds_its_data_through_slurm_and_from_any_directory(attnlab, slurm,
                                                                              tmp_path):
    """The README's tour on a corpus study: data paths relative to the directory the sweep is
    started in reach the jobs (which start in the sweep's directory) as absolute paths; the local
    launcher started from elsewhere gives the same runs; a run whose data is gone where it starts
    stops with exit 2 naming the key, the path and the host."""
    from test_translate_cli import make_workdir
    work = make_workdir(tmp_path / "work", steps=6)
    (work / "corpus.yaml").write_text(CORPUS_SWEEP)
    here = os.getcwd()
    os.chdir(work)
    try:
        submit(attnlab, slurm, "corpus.yaml", "runs-slurm")
        local = run_attnlab(attnlab, "sweep", "corpus.yaml", "--out", tmp_path / "local",
                            timeout=240)
    finally:
        os.chdir(here)
    sweep_dir = work / "runs-slurm" / "corpus"
    wait_until(lambda: "2 runs: 2 completed" in status_of(attnlab, slurm, sweep_dir), 180,
               "both corpus runs completed", slurm, sweep_dir)
    assert "2/2 done" in local.stdout
    assert final_losses(sweep_dir) == final_losses(tmp_path / "local" / "corpus")
    config = next(sweep_dir.glob("*/config.yaml")).read_text()
    assert f"src: {work}/data/train.en" in config
    # The data gone where the run starts: exit 2, the key, the path and the host.
    (work / "data" / "dev.es").unlink()
    run_dir = next(d for d in (tmp_path / "local" / "corpus").iterdir()
                   if (d / "config.yaml").is_file())
    gone = run_attnlab(attnlab, "train", "-c", run_dir / "config.yaml", "--out",
                       tmp_path / "elsewhere", check=False)
    assert gone.returncode == 2, gone.stderr
    assert f"data.dev.tgt: {work}/data/dev.es does not exist on host" in gone.stderr
