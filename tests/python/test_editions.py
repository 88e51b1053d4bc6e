"""analysis.editions: two editions of a table side by side.

The runs are real (attnlab sweep over a tiny task). Both editions are copies of that table whose
final dev PPLs are set to chosen values and whose manifests carry paper values, so that each
edition's block ordering and the rows' effects are known: with the paper's order base < A h=2 <
A h=1, the first edition's base < A h=1 < A h=2 has one discordant pair of three (tau = 1/3), the
second's base < A h=2 < A h=1 none (tau = 1).
"""

import math
import sys

import pytest
import yaml

from conftest import ROOT
from tiny_table import edited_copy, make_table

sys.path.insert(0, str(ROOT))

from analysis import editions  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

PAPER = {"base": 4.92, "A-h-1": 5.29, "A-h-2": 5.00}
FIRST = {"base": 10.0, "A-h-1": 11.0, "A-h-2": 12.0}
SECOND = {"base": 9.0, "A-h-1": 12.5, "A-h-2": 10.0}


@pytest.fixture(scope="module")
def table(attnlab, tmp_path_factory):
    return make_table(attnlab, tmp_path_factory.mktemp("editions"))


def edition(table, destination, ppl_of, also=None):
    """A copy of `table` whose run logs hold the final dev PPL ppl_of(run) (and whatever
    also(run, f) writes) and whose manifest gives every row its paper PPL; loaded."""
    def edit(run, f):
        f["summary"].attrs["final_dev_ppl"] = ppl_of(run)
        if also is not None:
            also(run, f)
    directory = edited_copy(table, destination, edit)
    manifest = directory / "manifest.yaml"
    data = yaml.safe_load(manifest.read_text())
    for run in data["runs"]:
        run["paper"] = {"ppl": PAPER[run["name"].rsplit(".seed", 1)[0]]}
    manifest.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_sweep(directory, with_attention=False)


def test_rows_and_block_orders_of_both_editions_are_the_known_answers(table, tmp_path):
    first = edition(table, tmp_path / "first", lambda run: FIRST[run.row])
    second = edition(table, tmp_path / "second", lambda run: SECOND[run.row])
    rows, blocks, tests = editions.editions_frame(first, second)
    assert tests == ("welch", "welch")  # each sweep file's sweep.test, through its manifest
    by_row = rows.set_index("row")
    for key in PAPER:
        assert by_row.at[key, "first_ppl"] == pytest.approx(FIRST[key], rel=1e-12)
        assert by_row.at[key, "second_ppl"] == pytest.approx(SECOND[key], rel=1e-12)
        assert by_row.at[key, "first_seeds"] == 3 and by_row.at[key, "second_failed"] == "no"
    assert by_row.at["A-h-1", "first_effect_pct"] == pytest.approx(10.0, rel=1e-9)
    assert by_row.at["A-h-1", "second_effect_pct"] == pytest.approx(100.0 * (12.5 / 9.0 - 1))
    # Equal values over the seeds: Welch's test has no variance, so no row is tested.
    assert set(by_row["first_verdict"]) == {"", "not testable"}
    assert set(by_row["verdict_moves"]) == {""}
    block = blocks.set_index("block").loc["A"]
    assert block["first_tau"] == pytest.approx(1.0 / 3.0) and block["first_rows"] == 3
    assert block["second_tau"] == pytest.approx(1.0) and block["second_rows"] == 3
    text = editions.markdown(rows, blocks, first, second, tests)
    assert "| A | +0.33 over 3 |  | +1.00 over 3 |  |" in text


def test_a_verdict_moves_when_both_editions_test_the_row_and_differ(table, tmp_path):
    # Seed noise of 1% a seed, so that Welch's test has a variance. A h=1 equals base in the
    # first edition (not "higher") and is three times worse on every seed in the second.
    def noise(run):
        return 1.0 + 0.01 * run.seed

    level = {"base": 10.0, "A-h-1": 10.0, "A-h-2": 12.0}
    first = edition(table, tmp_path / "first", lambda run: level[run.row] * noise(run))
    second = edition(table, tmp_path / "second", lambda run: level[run.row] * noise(run) * (
        3.0 if run.row == "A-h-1" else 1.0))
    rows, blocks, tests = editions.editions_frame(first, second)
    by_row = rows.set_index("row")
    assert by_row.at["A-h-1", "first_verdict"] != "higher"
    assert by_row.at["A-h-1", "second_verdict"] == "higher"
    assert by_row.at["A-h-1", "verdict_moves"] == "yes"
    assert by_row.at["A-h-2", "verdict_moves"] == (
        "no" if by_row.at["A-h-2", "first_verdict"] == by_row.at["A-h-2", "second_verdict"]
        else "yes")
    assert by_row.at["base", "verdict_moves"] == ""
    text = editions.markdown(rows, blocks, first, second, tests)
    assert "- Verdicts that move: A-h-1" in text


def test_a_row_with_a_run_that_failed_to_learn_shows_no_number(table, tmp_path):
    # One seed of A h=2 in the second edition reads its source no better than uniform: the row
    # failed, so neither its dev PPL nor its test BLEU is shown, in the frame or on the page.
    first = edition(table, tmp_path / "first", lambda run: FIRST[run.row])

    def ignores_source(run, f):
        if run.row == "A-h-2" and run.seed == 1:
            f["summary"].attrs["dev_cross_attention_entropy"] = 0.999

    second = edition(table, tmp_path / "second", lambda run: SECOND[run.row], ignores_source)
    rows, blocks, tests = editions.editions_frame(first, second)
    by_row = rows.set_index("row")
    assert by_row.at["A-h-2", "second_failed"] == "yes"
    assert math.isnan(by_row.at["A-h-2", "second_ppl"])
    assert math.isnan(by_row.at["A-h-2", "second_test_bleu"])
    assert by_row.at["A-h-2", "first_ppl"] == pytest.approx(FIRST["A-h-2"], rel=1e-12)
    assert by_row.at["A-h-1", "second_ppl"] == pytest.approx(SECOND["A-h-1"], rel=1e-12)
    text = editions.markdown(rows, blocks, first, second, tests)
    line = next(row for row in text.splitlines() if row.startswith("| A-h-2 |"))
    assert [cell.strip() for cell in line.split("|")[6:12]] == ["", "yes", "", "failed", "", ""]
    assert "failed in the second only: A-h-2" in text
