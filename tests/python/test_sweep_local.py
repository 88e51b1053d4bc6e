"""`attnlab sweep` with the local launcher: a 4-run tiny sweep completes, a rerun skips it, status
reports it, failures are named and wait for --retry-failed, Ctrl-C checkpoints the runs and a rerun
resumes them, and --dry-run renders a safe Slurm script from hostile names without Slurm."""

import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py
import pytest

from conftest import ROOT, attnlab_env, built_dirty, run_attnlab, sweep_args

# Whole sweeps and recomputed reports: outside `make test-fast`.
pytestmark = pytest.mark.slow

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"

# seeds x norm: four tiny runs of the reverse task (about a second each).
SWEEP = """\
base: {task}
name: {name}
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4, d_k: 8, d_v: 8,
         dropout: 0.1}}
data: {{synthetic: {{train_size: 2000, dev_size: 50}}}}
train: {{batch_tokens: 400, steps: {steps}, checkpoint_every: {every}}}
eval: {{every: {every}}}
log: {{every: 1}}
cluster: {{ranks: {ranks}, threads_per_rank: {threads}}}
sweep:
  seeds: {seeds}
{extra}"""


def write_sweep(directory, name="tiny", steps=30, ranks=1, seeds="[1, 2]",
                extra="  grid: {model.norm: [post, pre]}\n", every=10, threads=1):
    """Writes a sweep YAML into `directory` (checkpoints and dev evaluations `every` steps) and
    returns its path."""
    path = directory / f"{name}.yaml"
    path.write_text(SWEEP.format(task=TASK, name=name, steps=steps, ranks=ranks, seeds=seeds,
                                 extra=extra, every=every, threads=threads))
    return path


def run_dirs(sweep_dir):
    return sorted(p for p in sweep_dir.iterdir() if (p / "config.yaml").is_file())


def final(run_dir, group="train", column="loss"):
    with h5py.File(run_dir / "run.h5", "r") as f:
        return float(f[group][column][-1])


def final_losses(sweep_dir):
    """{run id: (final train loss, final dev loss)} of every run of a sweep directory."""
    return {d.name: (final(d), final(d, "eval")) for d in run_dirs(sweep_dir)}


def statuses(sweep_dir):
    out = {}
    for d in run_dirs(sweep_dir):
        with h5py.File(d / "run.h5", "r") as f:
            out[d.name] = f.attrs["status"]
    return out


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_local_sweep_completes_and_a_rerun_skips_every_run(attnlab, tmp_path):
    sweep = write_sweep(tmp_path)
    runs = tmp_path / "runs"
    first = run_attnlab(attnlab, "sweep", sweep, "--launcher", "local", "--out", runs, timeout=240)
    sweep_dir = runs / "tiny"
    assert (sweep_dir / "manifest.yaml").is_file()
    assert len(run_dirs(sweep_dir)) == 4
    assert set(statuses(sweep_dir).values()) == {"completed"}, first.stdout
    assert "4/4 done, 0 running, 0 failed" in first.stdout
    for d in run_dirs(sweep_dir):
        assert "completed" in (d / "train.log").read_text()
        with h5py.File(d / "run.h5", "r") as f:
            assert f.attrs["run_id"] == d.name
            assert f.attrs["sweep_id"] == "tiny"
            assert list(f["train"]["step"][...]) == list(range(1, 31))

    # A completed run's directory is left as it is, its config.yaml too (a note added to one
    # stands in for keys a newer binary would render).
    with open(run_dirs(sweep_dir)[0] / "config.yaml", "a", encoding="utf-8") as config:
        config.write("# trained by an older attnlab\n")
    before = {d.name: (digest(d / "run.h5"), digest(d / "config.yaml"))
              for d in run_dirs(sweep_dir)}
    again = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=60)
    assert "skipping 4 run(s), completed" in again.stdout
    assert "nothing to launch" in again.stdout
    assert {d.name: (digest(d / "run.h5"), digest(d / "config.yaml"))
            for d in run_dirs(sweep_dir)} == before

    status = run_attnlab(attnlab, "status", sweep_dir, timeout=60)
    assert "4 runs: 4 completed" in status.stdout
    assert status.stdout.count("30/30") == 4
    # The last column: each run's decoder-encoder attention over the dev set, from its log.
    for d in run_dirs(sweep_dir):
        with h5py.File(d / "run.h5", "r") as f:
            cross = float(f["summary"].attrs["dev_cross_attention_entropy"])
        line = next(line for line in status.stdout.splitlines() if line.startswith(d.name))
        assert line.split()[-1] == f"{cross:.3f}", line
    assert "src attn: decoder-encoder attention entropy over the dev set" in status.stdout



def test_a_sweep_continues_elsewhere_from_its_completed_runs_logs(attnlab, tmp_path):
    """Moving a sweep to another machine: its manifest and the completed runs' run.h5 (no
    checkpoints, no config.yaml) are enough. Those runs are skipped and left as they are; the
    others run and end exactly where a sweep made in one go ends."""
    sweep = write_sweep(tmp_path)
    whole = tmp_path / "whole"
    run_attnlab(attnlab, "sweep", sweep, "--launcher", "local", "--out", whole, timeout=240)
    expected = final_losses(whole / "tiny")
    assert len(expected) == 4

    moved = tmp_path / "moved"
    (moved / "tiny").mkdir(parents=True)
    shutil.copy(whole / "tiny" / "manifest.yaml", moved / "tiny")
    carried = sorted(expected)[:2]
    for run_id in carried:
        (moved / "tiny" / run_id).mkdir()
        shutil.copy(whole / "tiny" / run_id / "run.h5", moved / "tiny" / run_id)
    before = {run_id: digest(moved / "tiny" / run_id / "run.h5") for run_id in carried}

    resumed = run_attnlab(attnlab, "sweep", sweep, "--launcher", "local", "--out", moved,
                          timeout=240)
    assert "skipping 2 run(s), completed" in resumed.stdout, resumed.stdout
    assert "4/4 done" not in resumed.stdout and "2/2 done, 0 running, 0 failed" in resumed.stdout
    assert {run_id: digest(moved / "tiny" / run_id / "run.h5") for run_id in carried} == before
    assert {run_id: (final(moved / "tiny" / run_id), final(moved / "tiny" / run_id, "eval"))
            for run_id in expected} == expected

# A row whose files exist (the sweep checks that before it launches) but are not line-aligned,
# which only its run finds out.
FAILING_ROW = """\
  rows:
    - {{name: ok}}
    - name: broken
      set: {{data.task: corpus, data.max_length: 60, data.tokenizer.vocab_size: 13,
            data.train.src: {a}, data.train.tgt: {b},
            data.dev.src: {a}, data.dev.tgt: {b},
            data.test.src: {a}, data.test.tgt: {b}}}
"""


def failing_row(directory):
    (directory / "a.txt").write_text("one line\ntwo lines\n")
    (directory / "b.txt").write_text("only one line\n")
    return FAILING_ROW.format(a=directory / "a.txt", b=directory / "b.txt")


def test_a_failed_run_is_named_and_waits_for_retry_failed(attnlab, tmp_path):
    sweep = write_sweep(tmp_path, name="failing", seeds="[1]", extra=failing_row(tmp_path))
    runs = tmp_path / "runs"
    first = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=120, check=False)
    assert first.returncode == 1
    assert "1 run(s) failed" in first.stderr and "broken.seed1" in first.stderr
    assert "train.log" in first.stderr

    status = run_attnlab(attnlab, "status", runs / "failing", timeout=60)
    assert "1 completed, 1 failed" in status.stdout

    skipped = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=60, check=False)
    assert "failed (--retry-failed runs it again): broken.seed1" in skipped.stdout
    assert "nothing to launch" in skipped.stdout
    assert skipped.returncode == 1

    retried = run_attnlab(attnlab, "sweep", sweep, "--out", runs, "--retry-failed", timeout=60,
                          check=False)
    assert "launching 1 run(s)" in retried.stdout
    assert retried.returncode == 1


def test_ctrl_c_checkpoints_the_runs_and_a_rerun_resumes_them(attnlab, tmp_path):
    """Ctrl-C while one run trains and another waits: the running one checkpoints, the waiting one
    never starts, the launcher exits (it once spun forever with a run still queued), and a rerun
    finishes both."""
    sweep = write_sweep(tmp_path, name="stopped", steps=400, seeds="[1, 2]",
                        extra="  grid: {model.norm: [pre]}\n")
    runs = tmp_path / "runs"
    command = [str(attnlab), *sweep_args(attnlab, ["sweep", sweep, "--out", runs,
                                                   "--max-parallel", "1"])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={"PATH": "/usr/bin:/bin"})
    run_dir = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and run_dir is None:
        dirs = run_dirs(runs / "stopped") if (runs / "stopped").is_dir() else []
        for candidate in dirs:
            if (candidate / "ckpt").is_dir() and any((candidate / "ckpt").iterdir()):
                run_dir = candidate
        time.sleep(0.1)
    assert run_dir is not None, "the run wrote no checkpoint within 120 s"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, out + err
    assert "Rerun the same command to resume" in err
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "preempted"
        stopped_at = int(f["train"]["step"][-1])
    assert stopped_at < 400
    queued = [d for d in run_dirs(runs / "stopped") if d != run_dir]
    assert len(queued) == 1 and not (queued[0] / "run.h5").exists()
    # status says the run was stopped on request where it checkpointed, not an error.
    status = run_attnlab(attnlab, "status", runs / "stopped").stdout
    assert f"stopped on request after a checkpoint at step {stopped_at}" in status, status
    assert "last:" not in status

    resumed = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=240)
    assert "2/2 done" in resumed.stdout
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        assert list(f["train"]["step"][...]) == list(range(1, 401))


def test_a_run_stopped_part_way_resumes_before_a_longer_new_run(attnlab, tmp_path):
    """Within a seed the run with more work launches first, except that a run stopped part-way
    resumes before any new one."""
    rows = "  rows:\n    - {name: narrow}\n    - {name: wide, set: {model.d_ff: 256}}\n"
    sweep = write_sweep(tmp_path, name="resumes", steps=400, seeds="[1]", extra=rows, every=10)
    runs = tmp_path / "runs"

    def launch_order():
        out = run_attnlab(attnlab, "sweep", sweep, "--out", runs, "--dry-run").stdout
        names = {line.split()[0]: line.split()[1] for line in out.splitlines()
                 if len(line.split()) >= 2 and line.split()[1].endswith(".seed1")}
        return [names[line.split("--run-id", 1)[1].split()[0]] for line in out.splitlines()
                if "--run-id" in line], {name: run_id for run_id, name in names.items()}

    order, ids = launch_order()
    assert order == ["wide.seed1", "narrow.seed1"]  # d_ff 256 is the more work
    narrow = runs / "resumes" / ids["narrow.seed1"]
    process = subprocess.Popen(
        [str(attnlab), "train", "-c", str(narrow / "config.yaml"), "--out", str(narrow),
         "--run-id", ids["narrow.seed1"], "--sweep-id", "resumes"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=attnlab_env())
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
            (narrow / "ckpt").is_dir() and any((narrow / "ckpt").iterdir())):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, out + err
    order, _ = launch_order()
    assert order == ["narrow.seed1", "wide.seed1"]


HOSTILE_ROWS = """\
  rows:
    - {name: "a $(touch PWNED) ; `touch PWNED2` 'q\\" x"}
"""


def test_dry_run_renders_a_safe_script_from_hostile_names(attnlab, tmp_path):
    hostile_dir = tmp_path / "out $(touch PWNED) ; 'q\" `touch PWNED2`"
    sweep = write_sweep(tmp_path, name="hostile", seeds="[1]", extra=HOSTILE_ROWS)
    text = sweep.read_text().replace("name: hostile", "name: \"evil $(touch PWNED); x'\"")
    sweep.write_text(text)
    result = run_attnlab(attnlab, "sweep", sweep, "--launcher", "slurm", "--dry-run", "--out",
                         hostile_dir, "--profile", ROOT / "cluster" / "profiles" / "local.yaml",
                         timeout=60)
    scripts = list(hostile_dir.glob("*/slurm/array-1.sbatch"))
    assert len(scripts) == 1, result.stdout
    assert not (hostile_dir.parent / "PWNED").exists()
    text = scripts[0].read_text()
    assert "#SBATCH --job-name=attnlab-evil-touch-PWNED-x\n" in text
    bash = subprocess.run(["bash", "-n", str(scripts[0])], capture_output=True, text=True,
                          timeout=30)
    assert bash.returncode == 0, bash.stderr
    if shutil.which("shellcheck"):
        check = subprocess.run(["shellcheck", str(scripts[0])], capture_output=True, text=True,
                               timeout=60)
        assert check.returncode == 0, check.stdout
    assert not list(tmp_path.rglob("PWNED*"))


def test_hostile_profile_values_are_rejected_with_the_key(attnlab, tmp_path):
    sweep = write_sweep(tmp_path, seeds="[1]")
    profile = tmp_path / "bad.yaml"
    profile.write_text("partition: \"debug; touch PWNED\"\n")
    result = run_attnlab(attnlab, "sweep", sweep, "--launcher", "slurm", "--dry-run",
                         "--profile", profile, "--out", tmp_path / "runs", timeout=60,
                         check=False)
    assert result.returncode == 2
    assert "bad.yaml: partition: 'debug; touch PWNED' is not allowed here" in result.stderr
    assert not list(tmp_path.rglob("*.sbatch"))


def test_profile_keys_are_set_from_the_command_line_and_checked_as_the_files_are(attnlab,
                                                                                 tmp_path):
    sweep = write_sweep(tmp_path, seeds="[1]")
    local = ROOT / "cluster" / "profiles" / "local.yaml"

    def dry_run(*extra):
        return run_attnlab(attnlab, "sweep", sweep, "--launcher", "slurm", "--dry-run",
                           "--out", tmp_path / "runs", "--profile", local, *extra, timeout=60,
                           check=False)

    result = dry_run("--profile-set", "time=01:30:00", "--profile-set", "partition=short",
                     "--profile-set", "sbatch=[--exclusive]")
    assert result.returncode == 0, result.stderr
    text = next((tmp_path / "runs").glob("*/slurm/array-1.sbatch")).read_text()
    assert "#SBATCH --time=01:30:00\n" in text and "#SBATCH --partition=short\n" in text
    assert "#SBATCH --exclusive\n" in text
    # The same checks as a file's values, naming the option instead of a file and line.
    result = dry_run("--profile-set", "partition=debug; touch PWNED")
    assert result.returncode == 2
    assert "--profile-set partition: 'debug; touch PWNED' is not allowed here" in result.stderr
    result = dry_run("--profile-set", "walltime=1:00:00")
    assert result.returncode == 2 and "--profile-set walltime: unknown key" in result.stderr
    result = dry_run("--profile-set", "ranks")
    assert result.returncode == 2 and "--profile-set ranks: expected KEY=VALUE" in result.stderr
    assert not list(tmp_path.rglob("PWNED*"))


def test_runs_launch_seed_by_seed(attnlab, tmp_path):
    """Every row's first seed is launched before any second seed, so a half-finished sweep has
    one run of every row (the manifest keeps rows x grid x seeds order); within a seed the
    longest runs start first."""
    sweep = write_sweep(tmp_path, name="order", seeds="[3, 1]",
                        extra="  grid: {model.norm: [post, pre], model.heads: [2, 4]}\n")
    result = run_attnlab(attnlab, "sweep", sweep, "--dry-run", "--out", tmp_path / "runs")
    listed = [line.split()[:2] for line in result.stdout.splitlines()
              if len(line.split()) >= 2 and line.split()[1].startswith("norm-")]
    assert [name.rsplit(".", 1)[1] for _, name in listed] == ["seed3", "seed1"] * 4  # manifest
    launched = [line.split("--run-id", 1)[1].split()[0] for line in result.stdout.splitlines()
                if "--run-id" in line]
    seed_of = {run_id: name.rsplit(".", 1)[1] for run_id, name in listed}
    assert [seed_of[run_id] for run_id in launched] == ["seed3"] * 4 + ["seed1"] * 4
    grid_of = {run_id: name.rsplit(".", 1)[0] for run_id, name in listed}
    assert [grid_of[run_id] for run_id in launched[:4]] == [grid_of[i] for i in launched[4:]]
    # Within a seed the runs with more work start first: 4 heads of d_k 8 project to twice the
    # width of 2 heads; equal work keeps the sweep's order.
    assert [grid_of[run_id] for run_id in launched[:4]] == [
        "norm-post.heads-4", "norm-pre.heads-4", "norm-post.heads-2", "norm-pre.heads-2"]


def welch_interval(a, b, confidence=0.95):
    """SciPy's Welch interval on mean(a) - mean(b): the reference for the sweep's decisions."""
    from scipy import stats as scipy_stats
    import numpy as np
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    se = np.sqrt(va + vb)
    d = np.mean(a) - np.mean(b)
    if se == 0:
        return d, d
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    q = scipy_stats.t.ppf(1 - (1 - confidence) / 2, df)
    return d - q * se, d + q * se


def test_adaptive_seeds_add_seeds_to_unresolved_rows_and_resume_to_the_same_plan(attnlab,
                                                                                 tmp_path):
    """sweep.seeds {min: 2, max: 3}: every row runs 2 seeds; a row whose dev-PPL difference from
    base is unresolved (SciPy's Welch interval holds 0 and is wider than 2 x effect x base mean)
    gets a third seed, and base with it; a second `sweep` launches nothing and writes the same
    manifest. A 50% interval keeps two seeds of tiny runs decisive enough to see both outcomes."""
    # Rows that differ from base by little (dropout) and by much (a fifth of the training).
    extra = ("  rows:\n"
             "    - {name: base, group: base}\n"
             "    - {name: drop, group: D, set: {model.dropout: 0.12}}\n"
             "    - {name: short, group: S, set: {train.steps: 10}}\n")
    path = write_sweep(tmp_path, name="adaptive", steps=80,
                       seeds="{min: 2, max: 3, until: resolved, effect: 0.001, confidence: 0.5}",
                       extra=extra)
    result = run_attnlab(attnlab, "sweep", path, "--launcher", "local", "--out", tmp_path / "runs")
    sweep_dir = tmp_path / "runs" / "adaptive"
    manifest_text = (sweep_dir / "manifest.yaml").read_text()
    sys.path.insert(0, str(ROOT))
    from analysis.manifest import read_manifest
    manifest = read_manifest(sweep_dir / "manifest.yaml")
    ppl = {}
    for run in manifest.runs:
        with h5py.File(sweep_dir / run.id / "run.h5", "r") as f:
            assert f.attrs["status"] == "completed"
            ppl.setdefault(run.row, {})[run.seed] = float(f["summary"].attrs["final_dev_ppl"])
    base = [ppl["base"][s] for s in (1, 2)]
    expected = {}
    for row in ("drop", "short"):
        low, high = welch_interval([ppl[row][s] for s in (1, 2)], base, confidence=0.5)
        margin = 0.001 * abs(sum(base) / 2)
        resolved = low > 0 or high < 0 or high - low < 2 * margin
        expected[row] = 2 if resolved else 3
    expected["base"] = 3 if 3 in expected.values() else 2
    assert {row: len(seeds) for row, seeds in ppl.items()} == expected, result.stdout
    assert expected == {"base": 3, "drop": 3, "short": 2}, "both outcomes are exercised"
    for row, count in expected.items():
        assert manifest.seed_decisions[row].startswith(f"{count} seeds"), manifest.seed_decisions
    again = run_attnlab(attnlab, "sweep", path, "--launcher", "local", "--out", tmp_path / "runs")
    assert "launching" not in again.stdout, again.stdout
    assert (sweep_dir / "manifest.yaml").read_text() == manifest_text
    # plan: what is left is short's third seed, which the rule has not declared.
    plan = run_attnlab(attnlab, "plan", path, "--rate", "2", "--out", tmp_path / "runs").stdout
    assert "(8 of 9 runs complete)" in plan, plan
    assert ("      0 core-hours (0 s on one node) of it in the 8 runs the seed rule has declared "
            "so far") in plan, plan


def test_a_live_trainer_is_never_doubled_and_a_killed_one_shows_as_interrupted(attnlab, tmp_path):
    """The launcher killed with -9 leaves its trainer running: a second `sweep` skips that run
    (its directory is locked) instead of starting a second trainer on it. With the trainer killed
    too, `status` says interrupted (not running), with the log, and a `sweep` resumes it."""
    sweep = write_sweep(tmp_path, name="locked", steps=3000, seeds="[1]",
                        extra="  grid: {model.norm: [pre]}\n")
    runs = tmp_path / "runs"
    launcher = subprocess.Popen([str(attnlab), *sweep_args(attnlab, ["sweep", sweep, "--out",
                                                                      runs])],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    deadline = time.monotonic() + 120
    run_dir = None
    while time.monotonic() < deadline and run_dir is None:
        for candidate in run_dirs(runs / "locked") if (runs / "locked").is_dir() else []:
            if (candidate / "ckpt").is_dir() and any((candidate / "ckpt").iterdir()):
                run_dir = candidate
        time.sleep(0.1)
    assert run_dir is not None, "the run wrote no checkpoint within 120 s"
    launcher.kill()
    launcher.communicate(timeout=60)
    trainers = subprocess.run(["pgrep", "-f", f"attnlab train .*{run_dir.name}"],
                              capture_output=True, text=True).stdout.split()
    assert trainers, "the trainer outlives a killed launcher"
    try:
        status = run_attnlab(attnlab, "status", runs / "locked").stdout
        assert " running " in status, status
        again = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=60)
        assert "already running (a live trainer" in again.stdout
        assert "launching" not in again.stdout
        second = run_attnlab(attnlab, "train", "-c", run_dir / "config.yaml", "--out", run_dir,
                             check=False)
        assert second.returncode == 1 and "is in use by another attnlab process" in second.stderr
    finally:
        for pid in trainers:
            subprocess.run(["kill", "-9", pid], check=False)
    time.sleep(0.5)
    status = run_attnlab(attnlab, "status", runs / "locked").stdout
    assert " interrupted " in status and "why runs stopped" in status, status
    assert str(run_dir / "train.log") in status
    resumed = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=600)
    assert "launching 1 run(s)" in resumed.stdout
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"


def test_a_command_line_sweep_expands_exactly_like_its_yaml_form(attnlab, tmp_path):
    """`sweep -c FILE --grid KEY=V1,V2 --seeds 1,2 --name N` declares the runs (ids, names,
    overrides) of the YAML sweep with that grid, seeds and name; each run is also reachable under
    its readable name in <sweep>/names/."""
    experiment = tmp_path / "experiment.yaml"
    experiment.write_text(SWEEP.split("sweep:")[0].format(task=TASK, name="exp", steps=10,
                                                          ranks=1, seeds="", extra="", every=10,
                                                          threads=1))
    yaml_form = tmp_path / "yaml-form.yaml"
    yaml_form.write_text(f"base: {experiment}\nsweep:\n  name: cli\n"
                         "  grid: {model.norm: [post, pre], train.lr.warmup: [100, 200]}\n"
                         "  seeds: [1, 2]\n")
    run_attnlab(attnlab, "sweep", yaml_form, "--dry-run", "--out", tmp_path / "a")
    run_attnlab(attnlab, "sweep", "-c", experiment, "--grid", "model.norm=post,pre",
                "--grid", "train.lr.warmup=100,200", "--seeds", "1,2", "--name", "cli",
                "--dry-run", "--out", tmp_path / "b")
    sys.path.insert(0, str(ROOT))
    from analysis.manifest import read_manifest
    a = read_manifest(tmp_path / "a" / "cli" / "manifest.yaml")
    b = read_manifest(tmp_path / "b" / "cli" / "manifest.yaml")
    assert len(a.runs) == 8 and a.runs == b.runs
    for run in b.runs:
        link = tmp_path / "b" / "cli" / "names" / run.name
        assert link.is_symlink() and link.resolve() == (tmp_path / "b" / "cli" / run.id).resolve()
    bad = run_attnlab(attnlab, "sweep", "-c", experiment, "--grid", "model.norm", "--dry-run",
                      check=False)
    assert bad.returncode == 2 and "expected KEY=V1,V2" in bad.stderr
    both = run_attnlab(attnlab, "sweep", yaml_form, "--seeds", "1", "--dry-run", check=False)
    assert both.returncode == 2 and "-c FILE" in both.stderr


def plan_rows(out, prefix):
    """{row: its numbers} from `attnlab plan`'s table, for the rows whose name starts `prefix`."""
    rows = {}
    for m in re.finditer(rf"^({prefix}\S*)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+\d+"
                         r"\s+[\d.]+ \w+\s+([\d.e+-]+)\s+([\d.e+-]+)$", out, re.M):
        rows[m[1]] = {"runs": int(m[2]), "done": int(m[3]), "cap": int(m[4]),
                      "expected": int(m[5]), "gflop_step": float(m[6]),
                      "core_hours": float(m[7]), "left": float(m[8])}
    return rows


def test_plan_expects_stop_ruled_runs_to_train_as_long_as_their_completed_ones(attnlab,
                                                                              tmp_path):
    """A row whose runs stop by patience is priced at the length its completed runs trained, not
    at its cap, and once runs exist the plan says what is left: here one run of each row."""
    # early logs /train every 4 steps: its last row (12) is not where it stopped (15).
    rows = ("  rows:\n"
            "    - {name: early, set: {train.stop.patience: 2, train.stop.min_delta: 100,\n"
            "                          log.every: 4}}\n"
            "    - {name: full}\n")
    one_seed = write_sweep(tmp_path, name="lengths", steps=30, seeds="[1]", extra=rows, every=5)
    runs = tmp_path / "runs"
    before = run_attnlab(attnlab, "plan", one_seed, "--rate", "2", "--out", runs).stdout
    assert plan_rows(before, "early")["early"]["expected"] == 30, before
    assert "left:" not in before
    run_attnlab(attnlab, "sweep", one_seed, "--out", runs, timeout=300)
    # Dev loss never gains 100 nats: the first evaluation (step 5) is the best, and the run stops
    # after two more without a gain, at step 15.
    (early,) = [d for d in run_dirs(runs / "lengths")
                if "patience: 2" in (d / "config.yaml").read_text()]
    with h5py.File(early / "run.h5", "r") as f:
        assert int(f["summary"].attrs["steps"]) == 15 and int(f["train"]["step"][-1]) == 12
    two_seeds = write_sweep(tmp_path, name="lengths", steps=30, seeds="[1, 2]", extra=rows,
                            every=5)
    out = run_attnlab(attnlab, "plan", two_seeds, "--rate", "2", "--out", runs).stdout
    table = plan_rows(out, "early") | plan_rows(out, "full")
    assert table["early"]["expected"] == 15 and table["full"]["expected"] == 30, out
    assert table["early"]["done"] == table["full"]["done"] == 1
    for row in table.values():
        # Left: the second seed at the row's expected length, half of the row's core-hours
        # (both printed with three significant digits).
        assert row["left"] == pytest.approx(row["core_hours"] / 2, rel=1e-2), out
    assert "1 run(s) as long as their row's completed runs" not in out
    assert "2 run(s) as long as their row's completed runs, 2 run(s) to their cap" in out
    assert "left: " in out and "(2 of 4 runs complete)" in out
    # status: the second seeds take as long as their rows' first seeds did (none has started).
    run_attnlab(attnlab, "sweep", two_seeds, "--out", runs, "--dry-run")
    took = 0.0
    for run_dir in run_dirs(runs / "lengths"):
        if (run_dir / "run.h5").is_file():
            with h5py.File(run_dir / "run.h5", "r") as f:
                took += float(f["summary"].attrs["train_seconds"])
    status = run_attnlab(attnlab, "status", runs / "lengths").stdout
    shown = f"{round(took)}s" if took < 59.5 else f"{int(took // 60)}m{round(took % 60):02d}s"
    assert f"left: about {shown} of run time for 2 run(s)" in status, status
    # The sweep's ETA weighs the second seeds the same way.
    swept = run_attnlab(attnlab, "sweep", two_seeds, "--out", runs, timeout=300).stdout
    assert ("the ETA expects 1 run(s) as long as their row's completed runs, 1 run(s) to their "
            "cap (train.steps)") in swept, swept


def test_plan_prices_a_sweep_from_a_given_rate_and_from_its_own_logs(attnlab, tmp_path):
    """`attnlab plan`: with --rate, a row's wall time is steps x step FLOPs / (cores x rate) and
    its core-hours that x cores x runs (numbers from `attnlab params`); once runs have finished,
    the rate comes from their logs."""
    sweep = write_sweep(tmp_path, name="priced", steps=20)
    profile = tmp_path / "profile.yaml"
    profile.write_text("cores_per_node: 4\nnetwork_bandwidth: 1\nnetwork_latency_us: 10\n")
    out = run_attnlab(attnlab, "plan", sweep, "--profile", profile, "--rate", "2",
                      "--out", tmp_path / "runs").stdout
    assert "rate: 2.00 GFLOP/s per core, given with --rate" in out
    assert "4 cores per node, 1 GB/s and 10 us" in out
    rows = plan_rows(out, "norm-")
    assert len(rows) == 2, out
    for row in rows.values():
        assert row["expected"] == row["cap"] == 20  # no stop rule: every run trains to its cap
        wall = row["cap"] * row["gflop_step"] / (4 * 2)
        # Printed with three significant digits.
        assert row["core_hours"] == pytest.approx(wall * 4 * row["runs"] / 3600, rel=5e-3)
    run_attnlab(attnlab, "sweep", sweep, "--out", tmp_path / "runs", timeout=300)
    measured = run_attnlab(attnlab, "plan", sweep, "--out", tmp_path / "runs").stdout
    assert "measured from 4 finished run(s) of this sweep" in measured


def test_a_damaged_run_file_shows_as_damaged_and_the_sweep_resumes_it(attnlab, tmp_path):
    """A completed run whose run.h5 was cut short: status says damaged (with the reason), not
    "not started"; sweep keeps the file aside and resumes the run from its newest checkpoint to
    the same final dev loss."""
    sweep = write_sweep(tmp_path, name="damaged", steps=30, seeds="[1]",
                        extra="  grid: {model.norm: [pre]}\n")
    runs = tmp_path / "runs"
    run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=300)
    (run_dir,) = run_dirs(runs / "damaged")

    def final_dev_loss():
        with h5py.File(run_dir / "run.h5", "r") as f:
            return float(f["summary"].attrs["final_dev_loss"])

    expected = final_dev_loss()
    log = run_dir / "run.h5"
    log.write_bytes(log.read_bytes()[:2000])
    status = run_attnlab(attnlab, "status", runs / "damaged").stdout
    assert " damaged " in status and "resumes it from its newest intact checkpoint" in status
    again = run_attnlab(attnlab, "sweep", sweep, "--out", runs, timeout=300)
    assert "launching 1 run(s)" in again.stdout
    assert (run_dir / "run.h5.damaged.1").is_file()
    with h5py.File(log, "r") as f:
        assert f.attrs["status"] == "completed"
    assert final_dev_loss() == expected


def test_a_sweep_whose_corpus_is_missing_launches_nothing_and_says_why(attnlab, tmp_path):
    corpus = """\
base: {base}
name: nodata
data: {{train: {{src: {missing}/train.en, tgt: {missing}/train.es}},
       dev: {{src: {missing}/dev.en, tgt: {missing}/dev.es}},
       test: {{src: {missing}/test.en, tgt: {missing}/test.es}}}}
sweep: {{seeds: [1, 2]}}
"""
    missing = tmp_path / "not-made-yet"
    path = tmp_path / "nodata.yaml"
    path.write_text(corpus.format(base=ROOT / "experiments" / "small" / "tiny.yaml",
                                  missing=missing))
    # --dry-run launches nothing anyway: it warns with the same words.
    result = run_attnlab(attnlab, "sweep", path, "--launcher", "local", "--out",
                         tmp_path / "runs", "--dry-run")
    assert f"warning: data.train.src: {missing}/train.en does not exist" in result.stderr
    assert "the sweep would refuse to launch" in result.stderr
    result = run_attnlab(attnlab, "sweep", path, "--launcher", "local", "--out",
                         tmp_path / "runs", check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"data.train.src: {missing}/train.en does not exist" in result.stderr
    assert "none of the 2 run(s) to launch was started" in result.stderr
    assert "launching" not in result.stdout
    assert not list((tmp_path / "runs").rglob("run.h5"))


@pytest.mark.parametrize("option, message", [
    (["--grid", "model.heads=2,x"], "--grid model.heads: model.heads: expected an integer"),
    (["--grid", "model.headz=2,4"], "--grid model.headz: unknown key 'model.headz'"),
    (["--grid", "model.heads=[2,4"], "--grid model.heads: '[2' is not a YAML value"),
    (["--grid", "model.heads=3,4"], "--grid model.heads: model.d_model (64) must be divisible"),
    (["--seeds", "1,x"], "--seeds: seed: expected an integer"),
])
def test_a_command_line_sweep_error_names_the_option_not_the_file(attnlab, tmp_path, option,
                                                                 message):
    result = run_attnlab(attnlab, "sweep", "-c", ROOT / "experiments" / "small" / "tiny.yaml",
                         *option, "--dry-run", "--out", tmp_path, check=False)
    assert result.returncode == 2
    assert f"attnlab sweep: {message}" in result.stderr, result.stderr
    assert "tiny.yaml" not in result.stderr


def test_plan_calibrates_a_sweep_whose_runs_shrink_the_rate_on_plateau(attnlab, tmp_path):
    """The calibration run evaluates only at its end, so it leaves out every rule that counts dev
    evaluations: a sweep whose runs stop early and shrink the rate on plateau (as
    experiments/small/table3-plateau.yaml, which the README prices) is calibrated and priced."""
    rows = ("  rows:\n    - {name: plateau, set: {train.stop.patience: 3, "
            "train.lr.shrink_patience: 2, train.lr.shrink_after: 10}}\n")
    path = write_sweep(tmp_path, name="plateau", seeds="[1]", extra=rows, every=5)
    result = run_attnlab(attnlab, "plan", path, "--calibration-steps", "3", "--out",
                         tmp_path / "runs", timeout=120)
    assert "calibrating: 3 steps of plateau.seed1" in result.stdout, result.stdout
    assert "core-hours" in result.stdout, result.stdout


def test_plan_calibrates_a_fixed_budget_sweep(attnlab, tmp_path):
    """A fixed budget's cool-down is longer than the calibration run
    (experiments/small/table3-budget.yaml): the calibration leaves it out."""
    rows = "  rows:\n    - {name: budget, set: {train.lr.warmup: 5, train.lr.cooldown: 20}}\n"
    path = write_sweep(tmp_path, name="budget", seeds="[1]", extra=rows)
    result = run_attnlab(attnlab, "plan", path, "--calibration-steps", "3", "--out",
                         tmp_path / "runs", timeout=120)
    assert "calibrating: 3 steps of budget.seed1" in result.stdout, result.stdout
    assert "core-hours" in result.stdout, result.stdout


def test_plan_calibrates_with_the_sweeps_threads_per_rank(attnlab, tmp_path):
    """A sweep of 2 threads per rank is calibrated on one rank of 2 threads (as many as the
    machine has cores), so the per-core rate carries the threads' efficiency."""
    path = write_sweep(tmp_path, name="threads", seeds="[1]", extra="", threads=2)
    result = run_attnlab(attnlab, "plan", path, "--calibration-steps", "3", "--out",
                         tmp_path / "runs", timeout=120)
    if len(os.sched_getaffinity(0)) >= 2:
        where = "one rank of 2 threads (the rate is per core: over the threads)"
    else:
        where = "one core"
    assert f"calibrating: 3 steps of threads.seed1 on {where}..." in result.stdout, result.stdout
    assert f"-step run of threads.seed1 on {where} of this machine" in result.stdout


def test_a_build_with_uncommitted_changes_launches_only_with_allow_dirty(attnlab, tmp_path):
    """From a dirty build, `sweep` refuses to launch (exit 2, the reason named, nothing written)
    unless --allow-dirty, which the manifest records; a dry run launches nothing and is allowed.
    From a clean build the flag changes nothing but the manifest's record."""
    sweep = write_sweep(tmp_path, name="dirty", steps=8, seeds="[1]")
    runs = tmp_path / "runs"
    dry = run_attnlab(attnlab, "sweep", sweep, "--dry-run", "--out", runs, allow_dirty=False)
    assert "allow_dirty" not in (runs / "dirty" / "manifest.yaml").read_text(), dry.stdout
    refused = run_attnlab(attnlab, "sweep", sweep, "--out", tmp_path / "refused", check=False,
                          allow_dirty=False)
    if built_dirty(attnlab):
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "uncommitted changes" in refused.stderr and "--allow-dirty" in refused.stderr
        assert not (tmp_path / "refused").exists()
    else:
        assert refused.returncode == 0, refused.stdout + refused.stderr
    allowed = run_attnlab(attnlab, "sweep", sweep, "--out", runs, "--allow-dirty", timeout=300)
    assert "allow_dirty: true" in (runs / "dirty" / "manifest.yaml").read_text(), allowed.stdout
