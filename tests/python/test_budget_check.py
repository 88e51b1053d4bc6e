"""analysis.budget_check: a table's rows at a longer budget beside the table's same rows and seeds.

The runs are real (attnlab sweep over a tiny task). Both sides are copies of that table whose final
dev PPLs are set to chosen values, and the check's copy says it trained 24 steps with a cool-down
of 6: the change with the budget, the effects against base, the pairs whose order flips and
Kendall's tau are then computed by hand below.
"""

import math
import shutil
import sys

import h5py
import pytest

from conftest import ROOT
from tiny_table import edited_copy, make_table

sys.path.insert(0, str(ROOT))

from analysis import budget_check  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.manifest import read_manifest  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

# Dev PPL of every seed of a row: at the table's budget base < A h=1 < A h=2; at the longer one
# A h=1 < base < A h=2, so only the pair (base, A h=1) flips. Kendall's tau over the three rows:
# two concordant pairs and one discordant, (2 - 1) / 3.
TABLE_PPL = {"base": 10.0, "A-h-1": 11.0, "A-h-2": 12.0}
LONGER_PPL = {"base": 9.0, "A-h-1": 8.0, "A-h-2": 12.5}


@pytest.fixture(scope="module")
def table(attnlab, tmp_path_factory):
    return make_table(attnlab, tmp_path_factory.mktemp("budget"))


def with_ppl(table, destination, ppl, steps=None, cooldown=None):
    def edit(run, f):
        f["summary"].attrs["final_dev_ppl"] = ppl[run.row]
        if steps is not None:
            f["config"].attrs["train.steps"] = steps
            f["config"].attrs["train.lr.cooldown"] = cooldown
    return edited_copy(table, destination, edit)


def frames(table, tmp_path):
    short = with_ppl(table, tmp_path / "short", TABLE_PPL)
    longer = with_ppl(table, tmp_path / "longer", LONGER_PPL, steps=24, cooldown=6)
    return load_sweep(short, with_attention=False), load_sweep(longer, with_attention=False)


def test_changes_effects_and_the_order_are_the_known_answers(table, tmp_path):
    short, longer = frames(table, tmp_path)
    frame = budget_check.budget_frame(short, longer)
    rows = frame.set_index("row")
    for row in TABLE_PPL:
        assert rows.at[row, "seeds"] == "1 2 3"
        assert (rows.at[row, "steps"], rows.at[row, "longer_steps"]) == (16, 24)
        assert rows.at[row, "dev_ppl"] == pytest.approx(TABLE_PPL[row], rel=1e-12)
        assert rows.at[row, "change_pct"] == pytest.approx(
            100.0 * (LONGER_PPL[row] / TABLE_PPL[row] - 1.0), rel=1e-9)
    assert math.isnan(rows.at["base", "vs_base_pct"])
    assert rows.at["A-h-1", "vs_base_pct"] == pytest.approx(10.0, rel=1e-9)
    assert rows.at["A-h-1", "longer_vs_base_pct"] == pytest.approx(100.0 * (8.0 / 9.0 - 1.0))
    assert rows.at["A-h-2", "longer_vs_base_pct"] == pytest.approx(100.0 * (12.5 / 9.0 - 1.0))
    flips, tau, compared = budget_check.order_changes(frame)
    assert [(a, b) for a, b, _, _ in flips] == [("base", "A-h-1")]
    assert flips[0][2] == pytest.approx(100.0 * (10.0 / 11.0 - 1.0))
    assert tau == pytest.approx(1.0 / 3.0) and compared == list(TABLE_PPL)
    text = budget_check.markdown(frame, short, longer)
    assert "**The longer budget moves the order of 1 pair(s)**: base against A-h-1" in text
    assert "budgets of 16 and 24 steps" in text


def test_an_unchanged_order_and_rows_still_waiting(table, tmp_path):
    short = with_ppl(table, tmp_path / "short", TABLE_PPL)
    same_order = {"base": 9.0, "A-h-1": 10.5, "A-h-2": 11.0}
    longer = with_ppl(table, tmp_path / "longer", same_order, steps=24, cooldown=6)
    for run in read_manifest(longer / "manifest.yaml").runs:
        if run.row == "A-h-2":
            shutil.rmtree(longer / run.id)  # not run yet at the longer budget
    short_sweep, longer_sweep = (load_sweep(short, with_attention=False),
                                 load_sweep(longer, with_attention=False))
    frame = budget_check.budget_frame(short_sweep, longer_sweep)
    assert frame.set_index("row").at["A-h-2", "seeds"] == ""
    # A row whose twins have not run shows the check's own runs at the longer budget.
    for run in read_manifest(short / "manifest.yaml").runs:
        if run.row == "A-h-1":
            shutil.rmtree(short / run.id)
    waiting = budget_check.budget_frame(load_sweep(short, with_attention=False),
                                        longer_sweep).set_index("row")
    assert waiting.at["A-h-1", "seeds"] == "" and waiting.at["A-h-1", "longer_seeds"] == "1 2 3"
    assert waiting.at["A-h-1", "longer_dev_ppl"] == pytest.approx(same_order["A-h-1"])
    assert math.isnan(waiting.at["A-h-1", "dev_ppl"]) and math.isnan(waiting.at["A-h-1",
                                                                               "change_pct"])
    flips, tau, compared = budget_check.order_changes(frame)
    assert flips == [] and tau == pytest.approx(1.0) and compared == ["base", "A-h-1"]
    text = budget_check.markdown(frame, short_sweep, longer_sweep)
    assert "**The longer budget moves no pair's order** (2 rows" in text
    assert "Rows without a run at both budgets yet: A-h-2." in text


def test_a_check_run_must_differ_from_its_twin_in_the_budget_alone(table, tmp_path, capsys):
    short = with_ppl(table, tmp_path / "short", TABLE_PPL)
    longer = with_ppl(table, tmp_path / "longer", LONGER_PPL, steps=24, cooldown=6)
    first = read_manifest(longer / "manifest.yaml").runs[0]
    with h5py.File(longer / first.id / "run.h5", "r+") as f:
        f["config"].attrs["train.label_smoothing"] = 0.3
    capsys.readouterr()
    assert budget_check.main([str(short), str(longer), "--out", str(tmp_path / "o")]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "differ in train.label_smoothing, not in the budget alone" in error[0]
    with pytest.raises(AnalysisError, match="the budget alone"):
        budget_check.budget_frame(load_sweep(short, with_attention=False),
                                  load_sweep(longer, with_attention=False))
