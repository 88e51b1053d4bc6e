"""analysis.precision_replica: bf16 replica rows beside the fp32 table's same rows and seeds.

The runs are real (attnlab sweep over a tiny task); this machine may have no bf16, so the replica
is a copy of the table whose run logs say train.precision bf16 and whose final dev PPL is scaled
by known factors. The precision effect, the paired t-test and whether a verdict moves are then
known answers: scipy's ttest_rel on the same numbers, and the report's own verdicts of two tables
that differ by those factors.
"""

import math
import shutil
import sys

import h5py
import numpy as np
import pytest
from scipy import stats as scipy_stats

from conftest import ROOT
from tiny_table import dev_ppl, edited_copy, make_table

sys.path.insert(0, str(ROOT))

from analysis import precision_replica  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.manifest import read_manifest  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402
from analysis.table import build_table  # noqa: E402

# bf16's dev PPL over fp32's, per row and seed: base and A h=2 unchanged, A h=1 three times
# worse on every seed (a verdict that must move to "higher").
FACTORS = {"base": (1.0, 1.0, 1.0), "A-h-1": (3.0, 3.1, 2.9), "A-h-2": (1.0, 1.0, 1.0)}


@pytest.fixture(scope="module")
def table(attnlab, tmp_path_factory):
    return make_table(attnlab, tmp_path_factory.mktemp("replica"))


def make_replica(table, destination, factors=FACTORS, precision="bf16"):
    """A copy of `table` whose runs say train.precision `precision` and whose final dev PPL is
    the table's times factors[row][seed - 1]."""
    def edit(run, f):
        f["config"].attrs["train.precision"] = precision
        summary = f["summary"].attrs
        summary["final_dev_ppl"] = float(summary["final_dev_ppl"]) * factors[run.row][run.seed - 1]
    return edited_copy(table, destination, edit)


def test_precision_effects_and_verdicts_are_the_known_answers(table, tmp_path):
    replica_dir = make_replica(table, tmp_path / "replica")
    fp32, bf16 = dev_ppl(table), dev_ppl(replica_dir)
    frame, test = precision_replica.replica_frame(load_sweep(table, with_attention=False),
                                                  load_sweep(replica_dir, with_attention=False))
    assert test == "welch"  # the sweep file's sweep.test, through the manifest
    rows = frame.set_index("row")
    for row, factors in FACTORS.items():
        expected = 100.0 * math.expm1(float(np.mean(np.log(factors))))
        assert rows.at[row, "precision_effect_pct"] == pytest.approx(expected, abs=1e-9)
        assert rows.at[row, "seeds"] == "1 2 3"
        log_bf16 = [math.log(bf16[(row, s)]) for s in (1, 2, 3)]
        log_fp32 = [math.log(fp32[(row, s)]) for s in (1, 2, 3)]
        p = scipy_stats.ttest_rel(log_bf16, log_fp32).pvalue
        if np.isfinite(p):
            assert rows.at[row, "paired_p"] == pytest.approx(p, rel=1e-12)
        else:  # equal values: no variance of the differences, no p
            assert not np.isfinite(rows.at[row, "paired_p"])
    # The verdicts are the report's own, on each precision's table: A h=2 is the table's in both
    # (its values are the same), A h=1's bf16 verdict is that of runs three times worse.
    fp32_table = {r["row"]: r for r in build_table(load_sweep(table, with_attention=False),
                                                   test="welch").records}
    assert rows.at["A-h-2", "fp32_verdict"] == fp32_table["A-h-2"]["ppl_verdict"]
    assert rows.at["A-h-2", "bf16_verdict"] == rows.at["A-h-2", "fp32_verdict"]
    assert rows.at["A-h-2", "verdict_moves"] == "no"
    assert rows.at["A-h-1", "bf16_verdict"] == "higher"
    assert rows.at["A-h-1", "verdict_moves"] == (
        "no" if rows.at["A-h-1", "fp32_verdict"] == "higher" else "yes")
    assert rows.at["base", "verdict_moves"] == ""  # base is not compared with itself
    text = precision_replica.markdown(frame, load_sweep(table, with_attention=False),
                                      load_sweep(replica_dir, with_attention=False), test)
    assert "| A-h-1 | 1 2 3 |" in text


def test_a_replica_run_must_differ_from_its_twin_in_precision_alone(table, tmp_path, capsys):
    replica_dir = make_replica(table, tmp_path / "replica")
    first = read_manifest(replica_dir / "manifest.yaml").runs[0]
    with h5py.File(replica_dir / first.id / "run.h5", "r+") as f:
        f["config"].attrs["train.label_smoothing"] = 0.3
    with pytest.raises(AnalysisError, match=r"differ in train.label_smoothing, not in "
                                            r"precision alone"):
        precision_replica.replica_frame(load_sweep(table, with_attention=False),
                                        load_sweep(replica_dir, with_attention=False))
    fp32_copy = make_replica(table, tmp_path / "fp32", factors={k: (1, 1, 1) for k in FACTORS},
                             precision="fp32")
    capsys.readouterr()
    assert precision_replica.main([str(table), str(fp32_copy), "--out",
                                   str(tmp_path / "o")]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "train.precision is 'fp32'; the replica's runs are bf16" in error[0]


def test_the_page_says_when_no_row_is_compared_yet(table, tmp_path):
    replica_dir = make_replica(table, tmp_path / "replica")
    for run in read_manifest(replica_dir / "manifest.yaml").runs:
        if run.row != "base":
            shutil.rmtree(replica_dir / run.id)
    assert precision_replica.main([str(table), str(replica_dir), "--out",
                                   str(tmp_path / "page")]) == 0
    text = (tmp_path / "page" / "replica.md").read_text()
    assert "**No row is compared yet**" in text
