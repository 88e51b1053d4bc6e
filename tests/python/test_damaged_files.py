"""Files damaged so that HDF5 itself crashes on them: every reader (inspect, status, the
analysis) reports the file as damaged, names it and goes on; nothing crashes.

tests/fixtures/damaged/run_that_crashes_hdf5.h5 is a completed run.h5 with one flipped bit (byte
1190, in HDF5's internal structures) that makes HDF5 1.10 dereference a wild pointer.
"""

import os
import shutil
import signal
import subprocess
import sys

import pytest

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))
from analysis.errors import AnalysisError  # noqa: E402
from analysis import runfile  # noqa: E402
from analysis.runfile import read_run  # noqa: E402

CRASHER = ROOT / "tests" / "fixtures" / "damaged" / "run_that_crashes_hdf5.h5"


@pytest.fixture
def damaged_run(tmp_path):
    run_dir = tmp_path / "sweep" / "0123456789ab"
    run_dir.mkdir(parents=True)
    shutil.copy(CRASHER, run_dir / "run.h5")
    return run_dir


def test_the_fixture_does_crash_an_unguarded_reader(damaged_run):
    """Without the guards the file kills the reading process: the tests below would fail."""
    unguarded = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]);"
         "from analysis import runfile; runfile._read_run(sys.argv[2], True)",
         str(ROOT), str(damaged_run / "run.h5")],
        capture_output=True, timeout=60)
    assert unguarded.returncode < 0, (unguarded.returncode, unguarded.stderr[-500:])


def test_inspect_names_the_file_and_exits_one(attnlab, damaged_run):
    result = run_attnlab(attnlab, "inspect", damaged_run, check=False, timeout=120)
    assert result.returncode == 1, result.stderr
    assert str(damaged_run / "run.h5") in result.stderr
    assert "crashed the reader (signal 11" in result.stderr
    assert "the file is damaged" in result.stderr


def test_status_shows_the_run_as_damaged_with_the_reason(attnlab, damaged_run):
    result = run_attnlab(attnlab, "status", damaged_run, timeout=120)
    reasons = [line for line in result.stdout.splitlines() if "): damaged (" in line]
    assert len(reasons) == 1 and "crashed the reader (signal 11" in reasons[0], result.stdout
    assert "1 runs: 1 damaged" in result.stdout


def test_the_analysis_raises_its_error_and_survives(monkeypatch):
    # Whether the damaged fixture crashes HDF5 depends on what HDF5 finds in memory, so the
    # reader is made to crash in its forked child every time: the crash becomes an AnalysisError
    # naming the file, and this process goes on (without the child it would die here).
    def crash(path, with_attention):
        os.kill(os.getpid(), signal.SIGSEGV)
    monkeypatch.setattr(runfile, "_read_run", crash)
    with pytest.raises(AnalysisError, match=r"crashed HDF5 \(signal 11, SIGSEGV\)"):
        read_run(CRASHER)
    monkeypatch.undo()
    # The process is intact: an intact run file still reads.
    intact = next((ROOT / "docs" / "results" / "pilot-lr" / "runs").glob("*/run.h5"))
    assert read_run(intact).status == "completed"


@pytest.mark.slow
def test_a_full_disk_is_a_clear_error_with_exit_one_not_a_crash(attnlab, tmp_path):
    """Training into a 300 KiB file system: the write that would not fit is refused before it
    starts, naming the free space, the exit code is 1 (HDF5's exit handler used to crash on the
    half-written file: 139) and the run log that was written stays readable, its run marked
    failed (tests/python/test_full_disk.py covers the resume)."""
    disk = tmp_path / "small"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        result = run_attnlab(attnlab, "train", "-c", ROOT / "experiments" / "tasks" / "copy.yaml",
                             "--set", "train.steps=400", "--set", "cluster.ranks=1", "--out",
                             disk / "run", check=False, timeout=300)
        assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
        assert "not written: the file system has" in result.stderr
        status = run_attnlab(attnlab, "status", disk / "run").stdout
        assert " failed " in status, status
    finally:
        subprocess.run(["umount", str(disk)], check=False)
