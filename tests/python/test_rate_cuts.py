"""analysis.rate_cuts on the committed Table 3 runs: the cuts it finds are the trainer's own
(their count gives /summary lr_factor, and across the first the logged rate falls from noam's
value, computed here, to half of it), the best dev loss is the lowest /eval loss read here with
h5py, sparse logging does not pass for a cut, a sweep without a row of two completed runs is
named, runs given as LABEL=RUN_DIR get the same cells, and the tables in
docs/results/table3-plateau-notes.md are what the tool prints from the committed runs."""

import shlex
import shutil
import sys

import h5py
import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.rate_cuts import main, rate_cuts, row_runs  # noqa: E402
from analysis.runfile import read_run  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

RUNS = ROOT / "docs" / "results" / "table3-plateau" / "runs"
NOTES = ROOT / "docs" / "results" / "table3-plateau-notes.md"


@pytest.fixture(scope="module")
def rows():
    sweep = load_sweep(RUNS, with_attention=False)
    paths = {row.key: [sweep.runs.set_index("run_id").loc[i, "path"]
                       for i in sweep.completed(row.key)] for row in sweep.rows}
    return row_runs(sweep), paths


def noam(config, step):
    """train.lr.scale x d_model^-0.5 x min(step^-0.5, step x warmup^-1.5)."""
    d_model, warmup = config.attrs["model.d_model"], config.attrs["train.lr.warmup"]
    return (config.attrs["train.lr.scale"] * d_model ** -0.5
            * min(step ** -0.5, step * warmup ** -1.5))


def test_the_cuts_are_the_trainers_own(rows):
    found, paths = rows
    assert found, "the committed sweep has rows with two completed runs"
    for key, runs in found:
        for (seed, first, count, best_step, best_loss, _), path in zip(runs, paths[key]):
            with h5py.File(path, "r") as f:
                shrink = f["config"].attrs["train.lr.shrink"]
                # Every cut multiplies the schedule by train.lr.shrink: the count gives the
                # trainer's own factor at the end.
                assert shrink ** count == pytest.approx(f["summary"].attrs["lr_factor"]), path
                steps, lr = f["train"]["step"][:], f["train"]["lr"][:]
                if first is not None:
                    # The first cut acts after the evaluation at `first`: the logged rate is
                    # noam's up to that step and half of it from the next logged step on.
                    i = int(np.flatnonzero(steps <= first)[-1])
                    assert lr[i] == pytest.approx(noam(f["config"], steps[i]), rel=1e-5), path
                    assert lr[i + 1] == pytest.approx(
                        shrink * noam(f["config"], steps[i + 1]), rel=1e-5), path
                losses, at = f["eval"]["loss"][:], f["eval"]["step"][:]
                assert best_loss == pytest.approx(losses.min())
                assert best_step == at[np.argmin(losses)]


def test_sparse_logging_is_not_a_cut():
    """/train rows logged every 2,000 steps, before base seed 1's first cut (after step 8,000):
    noam alone falls to 1/sqrt(2) of its rate from step 2,000 to 4,000, more than a step-to-step
    threshold on the raw rate would allow, and no cut is found."""
    data = read_run(str(RUNS / "bfa1f731ef87" / "run.h5"), with_attention=False)
    assert rate_cuts(data)[0] == 8000
    train = data.train
    data.train = train[(train["step"] % 2000 == 0) & (train["step"] <= 8000)].reset_index(
        drop=True)
    lr = data.train["lr"].to_numpy()
    assert (lr[1:] / lr[:-1]).min() < 0.75  # what the raw rate alone would take for a cut
    assert rate_cuts(data) == []


def test_a_sweep_without_two_completed_runs_in_a_row_is_named(tmp_path, capsys):
    single = tmp_path / "single"
    (single / "one").mkdir(parents=True)
    shutil.copy(RUNS / "bfa1f731ef87" / "run.h5", single / "one" / "run.h5")
    assert main([str(single)]) == 2
    assert f"{single}: no row has two completed runs yet" in capsys.readouterr().err


def test_runs_given_by_label_get_their_rows_cells(rows, capsys):
    found, _ = rows
    base = dict(found)["base"]
    assert main([f"first={RUNS / 'bfa1f731ef87'}", f"second={RUNS / '14e8bfa5002b'}/"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| run | rate first cut after step | cuts | best dev loss (step) | dev PPL |"
    for line, label, (seed, cut, count, best_step, best_loss, ppl) in zip(
            lines[2:], ("first", "second"), base):
        assert line == (f"| {label} | {cut:,} | {count} | {best_loss:.4f} ({best_step:,}) | "
                        f"{ppl:.2f} |")
    assert len(lines) == 4


def test_a_run_without_a_label_or_a_summary_is_named(tmp_path, capsys):
    assert main(["a=" + str(RUNS / "bfa1f731ef87"), str(RUNS / "14e8bfa5002b")]) == 2
    assert "expected LABEL=RUN_DIR" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    shutil.copy(RUNS / "bfa1f731ef87" / "run.h5", tmp_path / "run" / "run.h5")
    with h5py.File(tmp_path / "run" / "run.h5", "r+") as f:
        del f["summary"].attrs["final_dev_ppl"]
    assert main([f"unfinished={tmp_path / 'run'}"]) == 2
    assert "no /summary final_dev_ppl (the run has not completed)" in capsys.readouterr().err


def test_the_notes_table_is_what_the_committed_runs_give(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the notes name the runs from the repository's root
    notes = NOTES.read_text(encoding="utf-8")
    commands = [shlex.split(line.split("-m analysis.rate_cuts ", 1)[1].rstrip("\\"))
                for line in notes.splitlines() if "-m analysis.rate_cuts " in line]
    assert commands, "the notes show the command of their rate-cut table"
    body = "\n".join(line.strip() for line in notes.splitlines())
    for arguments in commands:
        assert main(arguments) == 0
        table = capsys.readouterr().out.strip()
        assert table in body, f"the notes no longer show what {arguments} gives:\n{table}"
