"""`attnlab train` end to end: a run directory's life cycle, exact resume after SIGTERM, and
N ranks equal one rank. Every run is a tiny reverse-task model so the suite stays fast."""

import hashlib
import re
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest

from conftest import MPI_TEST_ENV, ROOT, attnlab_env, run_attnlab

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


# A fixed budget: linear warmup to 2e-3 over 5 steps, then half a cosine to zero at train.steps.
COSINE = ["--set", "train.lr.schedule=cosine", "--set", "train.lr.warmup=5",
          "--set", "train.lr.peak=2e-3"]


@pytest.mark.parametrize("schedule", [[], COSINE], ids=["inverse_sqrt", "cosine"])
def test_sigterm_then_resume_equals_an_uninterrupted_run(attnlab, tmp_path, schedule):
    steps = 40
    straight = tmp_path / "straight"
    train(attnlab, straight, "--set", "model.dropout=0.1", "--set", "train.checkpoint_every=5",
          *schedule, steps=steps)

    # The interrupted run: SIGTERM once progress passes a tenth of the run.
    interrupted = tmp_path / "interrupted"
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", f"train.steps={steps}",
               "--set", "model.dropout=0.1", "--set", "train.checkpoint_every=5", *schedule,
               "--out", str(interrupted)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=attnlab_env())
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
                    "--set", "train.checkpoint_every=5", *schedule, steps=steps)
    assert "resuming" in resumed.stderr
    a = series(straight / "run.h5", "train", "loss")
    b = series(interrupted / "run.h5", "train", "loss")
    assert list(series(interrupted / "run.h5", "train", "step")) == list(range(1, steps + 1))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(series(straight / "run.h5", "train", "lr"),
                                  series(interrupted / "run.h5", "train", "lr"))
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
                               env=attnlab_env())
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
    command = ["mpiexec", "-n", "2", str(attnlab), "train", "-c", str(TASK), *TINY,
               "--set", "train.steps=20", "--set", "model.dropout=0.0", "--out", str(two)]
    import os
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, **MPI_TEST_ENV})
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


# Stop rules: patience on the dev loss, the epoch limit, the best checkpoint.
STOP = ["--set", "eval.every=10", "--set", "train.stop.patience=2",
        "--set", "train.stop.min_delta=0.05", "--set", "train.checkpoint_every=10",
        "--set", "eval.checkpoint=best", "--set", "model.dropout=0.1"]


def summary(path):
    with h5py.File(path, "r") as f:
        return {name: (value.decode() if isinstance(value, bytes) else value)
                for name, value in f["summary"].attrs.items()}


def expected_patience_stop(steps, losses, patience, min_delta):
    """The stop step a patience rule gives on a dev-loss series (plain Python): patience counts
    evaluations since the last one more than min_delta below the previous such one."""
    mark, since = float("inf"), 0
    for step, loss in zip(steps, losses):
        if loss < mark - min_delta:
            mark, since = loss, 0
        else:
            since += 1
            if since >= patience:
                return step
    return None


def test_patience_stops_at_the_step_the_dev_losses_say_and_keeps_the_best(attnlab, tmp_path):
    out = tmp_path / "run"
    result = train(attnlab, out, *STOP, steps=2000)
    assert "completed (patience)" in result.stdout
    steps = series(out / "run.h5", "eval", "step")
    losses = series(out / "run.h5", "eval", "loss")
    stop_step = expected_patience_stop(steps, losses, 2, 0.05)
    assert stop_step is not None and stop_step < 2000
    assert int(steps[-1]) == stop_step
    # The best checkpoint is the lowest dev loss, whether or not it was a gain.
    best_step = int(steps[int(np.argmin(losses))])
    s = summary(out / "run.h5")
    assert s["stop_reason"] == "patience"
    assert s["steps"] == stop_step
    assert s["best_step"] == best_step
    assert s["final_checkpoint"] == f"best (step {best_step})"
    assert (s["final_checkpoint_kind"], s["final_checkpoint_step"]) == ("best", best_step)
    # The final evaluation scored the best parameters: its loss is the best evaluation's.
    assert s["final_dev_loss"] == pytest.approx(losses[list(steps).index(best_step)], rel=1e-9)
    with h5py.File(out / "ckpt" / "best.h5", "r") as f:
        assert int(f.attrs["step"]) == best_step
    inspect = run_attnlab(attnlab, "inspect", out).stdout
    assert "stopped by       patience" in inspect and "best.h5  (best dev loss)" in inspect
    status = run_attnlab(attnlab, "status", out).stdout  # one run directory, not a sweep
    assert re.search(rf"completed\s+{stop_step}/2000 patience", status), status


# Reduce on plateau: the rate halves at every stalled evaluation.
SHRINK = ["--set", "train.lr.shrink=0.5", "--set", "train.lr.shrink_patience=1"]


def expected_lr_factors(train_steps, eval_steps, losses, shrink, shrink_patience, min_delta):
    """The factor on the schedule's rate at each training step, and after the last evaluation
    (plain Python): it changes at the evaluation that completes shrink_patience stalled ones and
    applies from the next step on."""
    mark, since_shrink, factor, after = float("inf"), 0, 1.0, {}
    for step, loss in zip(eval_steps, losses):
        if loss < mark - min_delta:
            mark, since_shrink = loss, 0
        else:
            since_shrink += 1
            if since_shrink >= shrink_patience:
                factor, since_shrink = factor * shrink, 0
        after[int(step)] = factor
    factors, current = [], 1.0
    for step in train_steps:
        factors.append(current)
        current = after.get(int(step), current)
    return np.array(factors), factor


def test_the_rate_shrinks_after_the_evaluations_the_dev_losses_say(attnlab, tmp_path):
    shrunk, plain = tmp_path / "shrunk", tmp_path / "plain"
    result = train(attnlab, shrunk, *STOP, *SHRINK, steps=200)
    eval_steps = series(shrunk / "run.h5", "eval", "step")
    losses = series(shrunk / "run.h5", "eval", "loss")
    train_steps = series(shrunk / "run.h5", "train", "step")
    factors, final = expected_lr_factors(train_steps, eval_steps, losses, 0.5, 1, 0.05)
    assert final < 1.0, "no evaluation stalled: the test needs one"
    # The schedule is a function of the step alone, so a run without the rule gives its rates.
    train(attnlab, plain, steps=int(train_steps[-1]))
    schedule = series(plain / "run.h5", "train", "lr")
    np.testing.assert_allclose(series(shrunk / "run.h5", "train", "lr"), schedule * factors,
                               rtol=1e-12)
    assert summary(shrunk / "run.h5")["lr_factor"] == final
    assert "learning rate x0.5" in result.stderr


def test_a_run_resumed_under_patience_stops_where_an_uninterrupted_one_does(attnlab, tmp_path):
    # With the rate shrinking too: a resumed run keeps the shrink state as well as the patience.
    straight = tmp_path / "straight"
    train(attnlab, straight, *STOP, *SHRINK, steps=2000)
    stop_step = int(series(straight / "run.h5", "eval", "step")[-1])
    interrupted = tmp_path / "interrupted"
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", "train.steps=2000", *STOP,
               *SHRINK, "--out", str(interrupted)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=attnlab_env())
    # Stop once the rate has shrunk, before patience ends the run.
    for line in process.stderr:
        if "learning rate x0.5" in line:
            process.send_signal(signal.SIGTERM)
            break
    process.communicate(timeout=300)
    assert process.returncode == 3
    assert summary(interrupted / "run.h5")["stop_reason"] == "preempted"
    assert "stopped by       preempted" in run_attnlab(attnlab, "inspect", interrupted).stdout
    # While it trains again its log says running beside the earlier stop's summary: inspect (as
    # status) does not call that run stopped.
    training_again = tmp_path / "training-again"
    training_again.mkdir()
    shutil.copy(interrupted / "run.h5", training_again / "run.h5")
    with h5py.File(training_again / "run.h5", "r+") as f:
        f.attrs["status"] = "running"
    inspect = run_attnlab(attnlab, "inspect", training_again).stdout
    assert "stopped by       - (running again since its stop by preempted)" in inspect, inspect
    resumed = train(attnlab, interrupted, *STOP, *SHRINK, steps=2000)
    assert "resuming" in resumed.stderr
    for group, column in (("eval", "step"), ("eval", "loss"), ("train", "loss"), ("train", "lr")):
        np.testing.assert_array_equal(series(straight / "run.h5", group, column),
                                      series(interrupted / "run.h5", group, column))
    a, b = summary(straight / "run.h5"), summary(interrupted / "run.h5")
    for key in ("stop_reason", "steps", "best_step", "best_dev_loss", "final_dev_loss",
                "lr_factor"):
        assert a[key] == b[key], key
    with h5py.File(straight / "ckpt/best.h5", "r") as fa, \
            h5py.File(interrupted / "ckpt/best.h5", "r") as fb:
        for name in fa["params"]:
            np.testing.assert_array_equal(fa["params"][name][...], fb["params"][name][...])
    # Run again from the final checkpoint (as after a kill before the status was written): it
    # trains no further step.
    with h5py.File(interrupted / "run.h5", "r+") as f:
        f.attrs["status"] = "preempted"
    again = train(attnlab, interrupted, *STOP, *SHRINK, steps=2000)
    assert "completed (patience)" in again.stdout
    assert int(series(interrupted / "run.h5", "train", "step")[-1]) == stop_step


def test_fixed_budget_schedules_log_their_formula_and_end_at_zero(attnlab, tmp_path):
    steps, warmup, peak = 30, 5, 2e-3
    cosine = tmp_path / "cosine"
    train(attnlab, cosine, *COSINE, steps=steps)
    step = series(cosine / "run.h5", "train", "step").astype(float)
    progress = np.clip((step - warmup) / (steps - warmup), 0.0, 1.0)
    expected = np.where(step < warmup, peak * step / warmup,
                        peak * 0.5 * (1.0 + np.cos(np.pi * progress)))
    lr = series(cosine / "run.h5", "train", "lr")
    np.testing.assert_allclose(lr, expected, rtol=1e-12, atol=1e-18)
    assert lr[-1] == 0.0 and lr.max() == pytest.approx(peak, rel=1e-12)
    # inverse_sqrt (the task's schedule, here with a 10-step warmup) with a 10-step cool-down:
    # the same rates up to step 20, then times (30 - step) / 10.
    plain, cooled = tmp_path / "plain", tmp_path / "cooled"
    train(attnlab, plain, "--set", "train.lr.warmup=10", steps=steps)
    train(attnlab, cooled, "--set", "train.lr.warmup=10", "--set", "train.lr.cooldown=10",
          steps=steps)
    factor = np.clip((steps - step) / 10.0, 0.0, 1.0)
    np.testing.assert_allclose(series(cooled / "run.h5", "train", "lr"),
                               series(plain / "run.h5", "train", "lr") * factor,
                               rtol=1e-12, atol=1e-18)
    with h5py.File(cooled / "run.h5", "r") as f:
        assert int(f["config"].attrs["train.lr.cooldown"]) == 10


@pytest.mark.parametrize("settings, keys", [
    (["train.lr.shrink_patience=2"], ["train.lr.shrink_patience", "fixed-budget"]),
    (["train.stop.patience=2"], ["train.stop.patience", "fixed-budget"]),
    (["train.max_epochs=1"], ["train.max_epochs", "fixed-budget"]),
    (["train.lr.warmup=30"], ["train.lr.warmup", "train.steps"]),
    (["train.lr.cooldown=5"], ["train.lr.cooldown", "already reaches zero"]),
])
def test_a_fixed_budget_refuses_rules_that_end_it_early(attnlab, tmp_path, settings, keys):
    sets = [item for setting in settings for item in ("--set", setting)]
    result = train(attnlab, tmp_path / "run", *COSINE, *sets, steps=30, check=False)
    assert result.returncode == 2, result.stderr
    for key in keys:
        assert key in result.stderr, result.stderr
    result = train(attnlab, tmp_path / "run", "--set", "train.lr.warmup=25",
                   "--set", "train.lr.cooldown=10", steps=30, check=False)
    assert result.returncode == 2
    assert "train.lr.cooldown" in result.stderr and "after warmup" in result.stderr


def test_max_epochs_stops_after_that_many_passes(attnlab, tmp_path):
    out = tmp_path / "run"
    # 2,000 training examples in batches of ~400 tokens: an epoch is some tens of steps.
    result = train(attnlab, out, "--set", "train.max_epochs=2", steps=5000)
    assert "completed (epochs)" in result.stdout
    s = summary(out / "run.h5")
    assert s["stop_reason"] == "epochs"
    assert s["epochs"] == pytest.approx(2.0, abs=0.05)
    assert s["steps"] < 5000
    one = tmp_path / "one"
    train(attnlab, one, "--set", "train.max_epochs=1", steps=5000)
    assert summary(one / "run.h5")["steps"] == pytest.approx(s["steps"] / 2, abs=2)


def test_patience_without_evaluations_is_a_config_error(attnlab, tmp_path):
    result = train(attnlab, tmp_path / "run", "--set", "train.stop.patience=3",
                   "--set", "eval.every=0", check=False)
    assert result.returncode == 2
    assert "train.stop.patience" in result.stderr and "eval.every" in result.stderr
    result = train(attnlab, tmp_path / "run", "--set", "train.lr.shrink_patience=3",
                   "--set", "eval.every=0", check=False)
    assert result.returncode == 2
    assert "train.lr.shrink_patience" in result.stderr and "eval.every" in result.stderr
    # A factor of 1 would never shrink: only (0, 1) is a shrink.
    result = train(attnlab, tmp_path / "run", "--set", "train.lr.shrink=1", check=False)
    assert result.returncode == 2
    assert "train.lr.shrink" in result.stderr and "(0.0, 1.0)" in result.stderr, result.stderr


# Steps of about a second, so that a second Ctrl-C lands while the first one's step is in flight.
SLOW_STEPS = ["--set", "model.dropout=0.1", "--set", "train.checkpoint_every=2",
              "--set", "train.batch_tokens=40000", "--set", "data.synthetic.train_size=8000"]


def interrupted_run(attnlab, out, signals, steps=8):
    """Starts a run, sends SIGINT once it reports its first step and, for signals=2, again once
    it has said it will stop after the step; returns the exit code and stderr."""
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", f"train.steps={steps}",
               *SLOW_STEPS, "--out", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               env=attnlab_env())
    lines, sent = [], 0
    for line in process.stderr:
        lines.append(line)
        if line.startswith("step ") and sent == 0:
            process.send_signal(signal.SIGINT)
            sent = 1
        elif "interrupt: stopping after this step" in line and sent < signals:
            process.send_signal(signal.SIGINT)
            sent += 1
        if sent == signals:
            break
    _, rest = process.communicate(timeout=300)
    return process.returncode, "".join(lines) + rest


@pytest.mark.slow
def test_ctrl_c_checkpoints_like_sigterm_and_a_second_one_quits_at_once(attnlab, tmp_path):
    straight = tmp_path / "straight"
    train(attnlab, straight, *SLOW_STEPS, steps=8)
    once = tmp_path / "once"
    code, stderr = interrupted_run(attnlab, once, 1)
    assert code == 3, stderr
    assert "Ctrl-C again to quit at once" in stderr
    with h5py.File(once / "run.h5", "r") as f:
        assert f.attrs["status"] == "preempted"
        stopped_at = int(f["train"]["step"][-1])
    assert stopped_at < 8
    assert (once / "ckpt" / f"step_{stopped_at}.h5").is_file(), "the stop step is checkpointed"
    twice = tmp_path / "twice"
    code, stderr = interrupted_run(attnlab, twice, 2)
    assert code == 130, stderr
    assert "second interrupt" in stderr
    for run in (once, twice):
        resumed = train(attnlab, run, *SLOW_STEPS, steps=8)
        assert "completed" in resumed.stdout
        np.testing.assert_array_equal(series(straight / "run.h5", "train", "loss"),
                                      series(run / "run.h5", "train", "loss"))


def test_several_ranks_asked_for_but_started_alone_is_a_usage_error(attnlab, tmp_path):
    result = train(attnlab, tmp_path / "run", "--set", "cluster.ranks=2", check=False)
    assert result.returncode == 2
    assert "cluster.ranks is 2" in result.stderr and "mpirun -np 2" in result.stderr
    assert not (tmp_path / "run" / "run.h5").exists()


SUMMARY_KEYS = ("steps", "train_tokens", "final_dev_loss", "final_dev_nll", "final_dev_ppl",
                "final_dev_accuracy", "stop_reason", "best_step", "best_dev_loss", "epochs",
                "final_checkpoint", "final_checkpoint_kind", "final_checkpoint_step", "params",
                "train_flops")


@pytest.mark.parametrize("stage", ["last_step", "final_checkpoint", "final_evaluation",
                                   "summary"])
def test_a_kill_while_a_run_finishes_resumes_to_the_same_summary(attnlab, tmp_path, stage):
    """kill -9 at each stage of finishing a run (ATTNLAB_FAULT_AT), then the same command: the
    run completes with the summary, evaluations and attention maps of an uninterrupted run."""
    settings = [*STOP, "--set", "train.stop.patience=50"]  # best checkpoint, but no early stop
    straight = tmp_path / "straight"
    train(attnlab, straight, *settings, steps=40)
    killed = tmp_path / "killed"
    result = train(attnlab, killed, *settings, steps=40, env={"ATTNLAB_FAULT_AT": stage},
                   check=False)
    assert result.returncode == -signal.SIGKILL, result.stderr
    with h5py.File(killed / "run.h5", "r") as f:
        assert f.attrs["status"] == "running"
    train(attnlab, killed, *settings, steps=40)
    a, b = summary(straight / "run.h5"), summary(killed / "run.h5")
    for key in SUMMARY_KEYS:
        assert a[key] == b[key], (stage, key, a[key], b[key])
    assert b["train_seconds"] >= 0.5 * a["train_seconds"], "training time is carried over"
    for group, column in (("eval", "step"), ("eval", "loss"), ("train", "loss")):
        np.testing.assert_array_equal(series(straight / "run.h5", group, column),
                                      series(killed / "run.h5", group, column))
    with h5py.File(straight / "run.h5", "r") as fa, h5py.File(killed / "run.h5", "r") as fb:
        assert fb.attrs["status"] == "completed"
        np.testing.assert_array_equal(fa["attention/probe_0/decoder_cross/layer_0"][...],
                                      fb["attention/probe_0/decoder_cross/layer_0"][...])


def test_inspect_exports_the_run_as_json_and_its_series_as_csv(attnlab, tmp_path):
    import csv
    import io
    import json
    out = tmp_path / "run"
    train(attnlab, out, *STOP, steps=60)
    exported = json.loads(run_attnlab(attnlab, "inspect", out, "--json").stdout)
    with h5py.File(out / "run.h5", "r") as f:
        assert exported["status"] == f.attrs["status"]
        assert exported["config"]["model.d_model"] == "32"
        for name, value in f["summary"].attrs.items():
            value = value.decode() if isinstance(value, bytes) else value
            assert exported["summary"][name] == value, name
        for group in ("train", "eval"):
            for column in f[group]:
                assert exported[group][column] == list(f[group][column][...]), (group, column)
    rows = list(csv.DictReader(io.StringIO(run_attnlab(attnlab, "inspect", out, "--csv",
                                                       "eval").stdout)))
    assert [float(r["loss"]) for r in rows] == exported["eval"]["loss"]
    bad = run_attnlab(attnlab, "inspect", out, "--csv", "summary", check=False)
    assert bad.returncode == 2


def test_inspect_shows_every_model_key_and_the_step_the_run_ended_at(attnlab, tmp_path):
    # Rows every 7 steps and a patience stop at an evaluation (every 10): the run ends between
    # two logged rows.
    out = tmp_path / "run"
    train(attnlab, out, *STOP, "--set", "log.every=7", "--set", "model.norm_type=rmsnorm",
          steps=2000)
    stop_step = int(summary(out / "run.h5")["steps"])
    assert stop_step < 2000 and series(out / "run.h5", "train", "step")[-1] < stop_step
    shown = run_attnlab(attnlab, "inspect", out).stdout
    assert f"steps            {stop_step} of 2000" in shown, shown
    with h5py.File(out / "run.h5", "r") as f:
        keys = [name for name in f["config"].attrs if name.startswith("model.")]
    model = shown.split("  model", 1)[1].split("  steps", 1)[0]
    for key in keys:
        assert f" {key[len('model.'):]}=" in model, key
    assert " norm_type=rmsnorm" in model


@pytest.mark.parametrize("policy,spin", [(None, None), ("active", None), (None, "10000")])
def test_idle_threads_sleep_unless_the_user_chose_otherwise(attnlab, tmp_path, policy, spin):
    """libgomp reads OMP_WAIT_POLICY only when it loads: attnlab restarts itself with `passive`
    when the environment has none, and keeps a value the user set; a GOMP_SPINCOUNT the user set
    (idle threads spin that long before they sleep) is kept and recorded beside the policy."""
    env = attnlab_env({"OMP_NUM_THREADS": "2"})
    env.pop("OMP_WAIT_POLICY", None)
    env.pop("GOMP_SPINCOUNT", None)
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    if spin:
        env["GOMP_SPINCOUNT"] = spin
    out = tmp_path / "run"
    result = subprocess.run(
        [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", "train.steps=2",
         "--set", "cluster.threads_per_rank=2", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    expected = (policy or "passive") + (f", GOMP_SPINCOUNT={spin}" if spin else "")
    assert f"2 thread(s) per rank (OMP_WAIT_POLICY={expected})" in result.stderr
    assert summary(out / "run.h5")["omp_wait_policy"] == expected


def test_more_threads_than_the_cores_it_may_use_is_a_warning(attnlab, tmp_path):
    """A one-process run of several threads checks its cores at start (core/cluster/
    shared_cores.h): pinned to one CPU, two threads are named as more than its cores, and the run
    still trains; one thread has nothing to warn about."""
    command = [str(attnlab), "train", "-c", str(TASK), *TINY, "--set", "train.steps=2"]
    pinned = subprocess.run(
        ["taskset", "-c", "0", *command, "--set", "cluster.threads_per_rank=2",
         "--out", str(tmp_path / "two")],
        capture_output=True, text=True, env=attnlab_env(), timeout=300)
    assert pinned.returncode == 0, pinned.stderr
    assert ("warning: cluster.threads_per_rank = 2, but this process may run on 1 core(s)"
            in pinned.stderr), pinned.stderr
    alone = subprocess.run(["taskset", "-c", "0", *command, "--out", str(tmp_path / "one")],
                           capture_output=True, text=True, env=attnlab_env(), timeout=300)
    assert alone.returncode == 0, alone.stderr
    assert "threads_per_rank" not in alone.stderr, alone.stderr
