"""Errors a user can act on (issue 42, point 7): each case of the adversarial round gives one clear
line naming the file, key or option and what was expected, a non-zero exit and no traceback, or
does what was asked (a completed run on a read-only disk is nothing to do). docs/fuzzing.md
lists the cases and where each is tested."""

import fcntl
import importlib
import os
import socket
import subprocess
import sys

import h5py
import pytest

from conftest import ROOT, attnlab_env, run_attnlab, sweep_args
from test_full_disk import unshare_available
from test_train_cli import TASK, TINY, train

sys.path.insert(0, str(ROOT))
from analysis import errors  # noqa: E402

# A committed sweep directory (four runs of the bf16 pilot) for the report's output errors.
COMMITTED_SWEEP = ROOT / "docs" / "results" / "pilot-bf16" / "runs"


def one_error_line(result, code):
    """The single line a failed command prints: exit `code`, no traceback."""
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def in_read_only_mount(directory, command):
    """Runs `command` (a list) with `directory` bind-mounted read-only in a private mount
    namespace, as root; skips (saying why) where that cannot be done."""
    reason = unshare_available()
    if reason:
        pytest.skip(reason)
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" || exit 90; ' \
             'shift; exec "$@"'
    result = subprocess.run(["unshare", "-m", "bash", "-c", script, "script", str(directory),
                             *map(str, command)], capture_output=True, text=True,
                            env=attnlab_env(), timeout=300)
    assert result.returncode != 90, result.stderr
    return result


# --- c: the analysis command lines -----------------------------------------------------------

def test_report_out_naming_a_file_is_one_line_and_exit_two(attnlab, tmp_path):
    out = tmp_path / "report.txt"
    out.write_text("not a directory\n")
    result = run_attnlab(attnlab, "report", COMMITTED_SWEEP, "--out", out, "--no-figures",
                         check=False)
    line = one_error_line(result, 2)
    assert line == (f"attnlab report: --out {out}: a file is there; the report is written to a "
                    f"directory (give a new or an existing directory)")
    assert out.read_text() == "not a directory\n"


def test_report_into_a_read_only_directory_is_one_line_and_exit_one(attnlab, tmp_path):
    out = tmp_path / "readonly"
    out.mkdir()
    result = in_read_only_mount(out, [attnlab, "report", COMMITTED_SWEEP, "--out", out / "report",
                                      "--no-figures"])
    line = one_error_line(result, 1)
    assert line.startswith(f"attnlab report: {out / 'report'}: a read-only file system"), line


def analysis_command_lines():
    """Every analysis module that runs as `python3 -m analysis.<name>`."""
    names = []
    for path in sorted((ROOT / "analysis").rglob("*.py")):
        if 'if __name__ == "__main__":' in path.read_text() and path.name != "__main__.py":
            names.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    names.append("analysis.studies.cli")
    return names


@pytest.mark.parametrize("module", analysis_command_lines())
def test_every_analysis_command_line_reports_through_the_shared_entry(module):
    main = importlib.import_module(module).main
    assert getattr(main, "__wrapped__", None) is not None, \
        f"{module}.main is not wrapped in analysis.errors.command_line"


@pytest.mark.parametrize("raised, code, expected", [
    (errors.AnalysisError("runs/x: no runs"), 2, "tool: runs/x: no runs"),
    (FileExistsError(17, "File exists", "out/report"), 1,
     "tool: out/report: a file is there where a directory is needed (give --out a directory) "
     "[EEXIST]"),
    (PermissionError(13, "Permission denied", "out/page.md"), 1,
     "tool: out/page.md: no permission (a read-only directory? give --out a writable one) "
     "[EACCES]"),
    (OSError(30, "Read-only file system", "/mnt/out"), 1,
     "tool: /mnt/out: a read-only file system (give --out a writable directory) [EROFS]"),
    (OSError(28, "No space left on device", "out/table.csv"), 1,
     "tool: out/table.csv: the disk is full [ENOSPC]"),
])
def test_the_shared_entry_turns_errors_into_one_line(capsys, raised, code, expected):
    @errors.command_line("tool")
    def main(argv=None):
        raise raised
    assert main([]) == code
    assert capsys.readouterr().err == expected + "\n"


# --- h: numeric options that switch a rule off ------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
def test_data_text_refuses_a_max_ratio_that_is_no_ratio(attnlab, tmp_path, value):
    result = run_attnlab(attnlab, "data", "text", "--src", tmp_path / "a", "--tgt",
                         tmp_path / "b", "--out", tmp_path / "out", f"--max-ratio={value}",
                         check=False)
    line = one_error_line(result, 2)
    assert line.startswith(f"attnlab data: --max-ratio {value}: expected a finite number >= 0"), \
        line
    assert not (tmp_path / "out").exists()


# --- a, g: config values refused at load ------------------------------------------------------

def test_invalid_utf8_in_a_name_is_refused_at_load_naming_file_key_and_offset(attnlab, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_bytes(f"base: {TASK}\nname: run-\xff\n".encode("latin-1"))
    offset = config.read_bytes().index(b"\xff")
    result = run_attnlab(attnlab, "train", "-c", config, "--out", tmp_path / "run", check=False)
    line = one_error_line(result, 2)
    assert line == (f"attnlab train: {config}:2:11: invalid UTF-8 at byte offset {offset} "
                    f"(byte 0xFF) in key 'name'; a YAML file must be UTF-8 text")
    assert not (tmp_path / "run").exists()


def test_a_batch_smaller_than_one_pair_is_refused_naming_the_key_value_and_minimum(attnlab,
                                                                                   tmp_path):
    result = run_attnlab(attnlab, "train", "-c", TASK, "--set", "train.batch_tokens=1", "--out",
                         tmp_path / "run", check=False)
    line = one_error_line(result, 2)
    # reverse.yaml: data.synthetic.max_length 8, so a pair is at most 2 * (8 + 1) tokens.
    assert line == ("attnlab train: --set train.batch_tokens=1: train.batch_tokens is 1, below "
                    "its minimum 18: a batch must hold one pair of the longest length "
                    "(data.synthetic.max_length 8 plus eos on each side); raise "
                    "train.batch_tokens or lower data.synthetic.max_length")


# --- b: a damaged stored config ---------------------------------------------------------------

def test_eval_of_a_run_whose_stored_config_is_damaged_names_the_run_file(attnlab, tmp_path):
    out = tmp_path / "run"
    train(attnlab, out, steps=2)
    with h5py.File(out / "run.h5", "r+") as f:
        text = f.attrs["config_yaml"]
        text = text.decode() if isinstance(text, bytes) else text
        assert "\nmodel:\n" in text
        f.attrs["config_yaml"] = text.replace("\nmodel:\n", "\nmodle:\n")
    result = run_attnlab(attnlab, "eval", out, check=False)
    line = one_error_line(result, 2)
    assert line.startswith(f"attnlab eval: {out / 'run.h5'} (attribute config_yaml):"), line
    assert "unknown key 'modle'" in line
    assert "attnlab-config-" not in line and "/tmp/" not in line.replace(str(tmp_path), "")


# --- i: internal check locations only on a debug line ------------------------------------------

def test_messages_hold_no_source_location_unless_asked(attnlab, tmp_path):
    result = run_attnlab(attnlab, "eval", tmp_path, check=False)
    line = one_error_line(result, 1)
    assert line == (f"attnlab eval: {tmp_path} is not a run directory: it has neither "
                    f"config.yaml nor run.h5")
    debug = run_attnlab(attnlab, "eval", tmp_path, check=False, env={"ATTNLAB_DEBUG": "1"})
    lines = debug.stderr.strip().splitlines()
    assert lines[0] == line
    assert lines[1].startswith("attnlab eval: debug: check ") and \
        " failed at core/train/corpus_source.cpp:" in lines[1], debug.stderr


def test_a_training_error_holds_no_source_location_unless_asked(attnlab, tmp_path):
    """Through the catch-all of `train` (dist::run_or_abort): a run directory another process
    holds, as a second trainer on it sees it."""
    out = tmp_path / "run"
    out.mkdir()
    with open(out / ".attnlab.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"{os.getpid()} {socket.gethostname()}\n")
        lock.flush()
        plain = run_attnlab(attnlab, "train", "-c", TASK, *TINY, "--out", out, check=False)
        debug = run_attnlab(attnlab, "train", "-c", TASK, *TINY, "--out", out, check=False,
                            env={"ATTNLAB_DEBUG": "1"})
    line = one_error_line(plain, 1)
    assert line == (f"attnlab: error: {out} is in use by another attnlab process (pid "
                    f"{os.getpid()} on host {socket.gethostname()}): one trainer per run "
                    f"directory; wait for it, or stop it first")
    lines = debug.stderr.strip().splitlines()
    assert lines[0] == line and len(lines) == 2, debug.stderr
    assert lines[1].startswith("attnlab: debug: check ") and \
        " failed at core/util/dir_lock.cpp:" in lines[1], debug.stderr


# --- f: a completed run on a read-only disk ---------------------------------------------------

def test_a_completed_run_on_a_read_only_disk_is_nothing_to_do(attnlab, tmp_path):
    out = tmp_path / "run"
    train(attnlab, out, steps=2)
    result = in_read_only_mount(out, [attnlab, "train", "-c", TASK, *TINY, "--set",
                                      "train.steps=2", "--out", out])
    assert result.returncode == 0, result.stderr
    assert "already completed; nothing to train" in result.stdout


def test_an_unfinished_run_on_a_read_only_disk_is_one_clear_error(attnlab, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    result = in_read_only_mount(out, [attnlab, "train", "-c", TASK, *TINY, "--set",
                                      "train.steps=2", "--out", out])
    line = one_error_line(result, 1)
    assert line == (f"attnlab: error: {out} cannot be written (Read-only file system) and holds "
                    f"no completed run: training writes its run log and checkpoints there; give "
                    f"a writable --out")


# --- d: a run name too long for a file name ---------------------------------------------------

def tiny_sweep(directory, name="tiny", rows="    - {name: one}\n"):
    path = directory / f"{name}.yaml"
    path.write_text(f"base: {TASK}\nname: {name}\n"
                    "model: {encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4,"
                    " d_k: 8, d_v: 8}\n"
                    "data: {synthetic: {train_size: 200, dev_size: 20}}\n"
                    "train: {batch_tokens: 400, steps: 2, checkpoint_every: 0}\n"
                    "cluster: {ranks: 1, threads_per_rank: 1}\n"
                    f"sweep:\n  rows:\n{rows}")
    return path


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_a_row_name_too_long_is_refused_before_any_manifest(attnlab, tmp_path, dry_run):
    long_name = "r" * 300
    sweep = tiny_sweep(tmp_path, rows=f"    - {{name: one}}\n    - {{name: {long_name}, set: "
                                       "{model.heads: 2}}\n")
    result = run_attnlab(attnlab, "sweep", sweep, "--out", tmp_path / "runs", *dry_run,
                         check=False)
    line = one_error_line(result, 2)
    assert line.startswith(f"attnlab sweep: {sweep}:10:7: run name of row '{long_name}' (306 "
                           f"bytes"), line
    assert "longer than 128 bytes" in line and "255 bytes a file name may have" in line
    assert not (tmp_path / "runs").exists()


# --- e: two sweeps of one sweep at once -------------------------------------------------------

def test_a_sweep_whose_directory_is_locked_is_refused_at_once(attnlab, tmp_path):
    """The lock held by this test (as a running `attnlab sweep` holds it): a second sweep stops
    before writing anything, naming the holder."""
    sweep = tiny_sweep(tmp_path)
    sweep_dir = tmp_path / "runs" / "tiny"
    sweep_dir.mkdir(parents=True)
    with open(sweep_dir / ".attnlab.lock", "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"{os.getpid()} {socket.gethostname()}\n")
        lock.flush()
        result = run_attnlab(attnlab, "sweep", sweep, "--out", tmp_path / "runs", check=False)
    line = one_error_line(result, 1)
    assert line == (f"attnlab sweep: {sweep_dir} is in use by another attnlab process (pid "
                    f"{os.getpid()} on host {socket.gethostname()}): one `attnlab sweep` per "
                    f"sweep at a time; it launches and resumes every run, so wait for it "
                    f"(attnlab status {sweep_dir} shows its progress), or stop it first")
    assert sorted(p.name for p in sweep_dir.iterdir()) == [".attnlab.lock"]


def test_two_sweeps_at_once_run_each_run_once(attnlab, tmp_path):
    """Two `attnlab sweep` of one sweep started together: one launches the run, the other is
    refused (or, started after the first finished, finds nothing to do); the run trains once and
    ends completed."""
    sweep = tiny_sweep(tmp_path)
    command = [str(attnlab), *sweep_args(attnlab, ["sweep", sweep, "--out", tmp_path / "runs"])]
    first, second = (subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=attnlab_env()) for _ in range(2))
    outcomes = [(p.wait(timeout=300), *p.communicate()) for p in (first, second)]
    refused = [o for o in outcomes if o[0] != 0]
    assert len(refused) <= 1, outcomes
    for code, _, err in refused:
        assert code == 1 and "is in use by another attnlab process (pid " in err, outcomes
    sweep_dir = tmp_path / "runs" / "tiny"
    (run_dir,) = [p for p in sweep_dir.iterdir() if (p / "config.yaml").is_file()]
    with h5py.File(run_dir / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
    log = (run_dir / "train.log").read_text()
    assert log.count(" completed (") == 1 and "already completed" not in log, log
