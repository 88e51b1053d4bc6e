"""analysis.early_diagnostics: the evidence tables of docs/results/table3-plateau-notes.md are
what the tool prints from the committed evidence runs (each table follows the command that makes
it), its numbers are the run files' own (read here with h5py), and a run without diagnostics, or
a step it did not measure, is named."""

import re
import shlex
import subprocess
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.early_diagnostics import main  # noqa: E402

NOTES = ROOT / "docs" / "results" / "table3-plateau-notes.md"
EVIDENCE = ROOT / "docs" / "results" / "table3-plateau" / "evidence"


def notes_commands():
    """Each `python3 -m analysis.early_diagnostics ...` command of the notes (continuation lines
    joined), as argument lists."""
    text = NOTES.read_text(encoding="utf-8").replace("\\\n", " ")
    return [shlex.split(line.split("analysis.early_diagnostics", 1)[1])
            for line in text.splitlines() if "-m analysis.early_diagnostics " in line]


def test_the_notes_tables_are_what_the_evidence_runs_give(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the commands name the runs from the repository's root
    commands = notes_commands()
    assert len(commands) >= 2, "the notes show the commands of their evidence tables"
    notes = NOTES.read_text(encoding="utf-8")
    for arguments in commands:
        assert main(arguments) == 0
        table = capsys.readouterr().out
        assert table.startswith("| step |")
        # The notes indent the table inside a list item.
        body = "\n".join(line.strip() for line in notes.splitlines())
        assert table.strip() in body, f"the notes no longer show what {arguments} gives:\n{table}"


def test_the_numbers_are_the_run_files_own(capsys):
    run = EVIDENCE / "base-postln-early" / "run.h5"
    assert main([f"base={run.parent}", "--steps", "1200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    with h5py.File(run, "r") as f:
        entropy = f["diagnostics"]["attention_entropy"]
        labels = [str(x, "utf-8") if isinstance(x, bytes) else str(x)
                  for x in entropy.attrs["labels"]]
        row = list(entropy["step"][...]).index(1200)
        cross = [i for i, label in enumerate(labels) if label.startswith("decoder_cross.")]
        expected = np.asarray(entropy["value"][row])[cross].mean(axis=-1)
        evaluation = list(f["eval"]["step"][...]).index(1200)
        loss = float(f["eval"]["loss"][evaluation])
    assert len(cross) == 3
    assert lines[2] == f"| 1,200 | dev loss | {loss:.3f} |"
    shown = [float(x) for x in re.findall(r"\d\.\d\d", lines[3])]
    assert shown == pytest.approx(expected, abs=0.005)


def test_missing_diagnostics_and_steps_are_named(capsys):
    plain = ROOT / "docs" / "results" / "table3-plateau" / "runs" / "bfa1f731ef87"
    assert main([f"base={plain}"]) == 2
    assert "no /diagnostics/attention_entropy" in capsys.readouterr().err
    # Evaluated every 200 steps, diagnosed every 400.
    assert main([f"x={EVIDENCE / 'base-postln-early'}", "--steps", "200"]) == 2
    assert "attention_entropy has no row at step 200 (steps: 0, 400," in capsys.readouterr().err
    assert main([f"x={EVIDENCE / 'base-postln-early'}", "--steps", "500"]) == 2
    assert "no dev evaluation at step 500" in capsys.readouterr().err
    assert main([str(EVIDENCE / "base-postln-early")]) == 2
    assert "expected LABEL=RUN_DIR" in capsys.readouterr().err


def test_the_command_line_entry_point_runs():
    result = subprocess.run([sys.executable, "-m", "analysis.early_diagnostics", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "LABEL=RUN_DIR" in result.stdout
