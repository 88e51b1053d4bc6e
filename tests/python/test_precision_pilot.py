"""analysis.precision_pilot's agreement rule on hand-made evaluations: the difference of the seed
means against the larger of the two precisions' max - min over seeds, step by step, only at the
steps both precisions reached; and its refusals."""

import sys

import pandas as pd
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.errors import AnalysisError  # noqa: E402
from analysis.precision_pilot import evaluations, margins  # noqa: E402
from analysis.sweep import Sweep  # noqa: E402


def frame(rows):
    return pd.DataFrame(rows, columns=["run_id", "precision", "step", "loss"])


def test_margins_compare_the_mean_difference_with_the_seeds_spread():
    series = frame([
        ("a", "fp32", 100, 5.0), ("b", "fp32", 100, 5.2),   # fp32 mean 5.1, spread 0.2
        ("c", "bf16", 100, 5.25), ("d", "bf16", 100, 5.3),  # bf16 mean 5.275, spread 0.05
        ("a", "fp32", 200, 4.0), ("b", "fp32", 200, 4.02),  # mean 4.01, spread 0.02
        ("c", "bf16", 200, 4.1), ("d", "bf16", 200, 4.12),  # mean 4.11, spread 0.02
        ("a", "fp32", 300, 3.0),                            # bf16 never reached step 300
    ])
    result = margins(series).set_index("step")
    assert list(result.index) == [100, 200]
    assert result.at[100, "difference"] == pytest.approx(0.175)
    assert result.at[100, "spread"] == pytest.approx(0.2)
    assert bool(result.at[100, "within"])
    assert result.at[200, "difference"] == pytest.approx(0.1)
    assert result.at[200, "spread"] == pytest.approx(0.02)
    assert not bool(result.at[200, "within"])


class FakeSweep(Sweep):
    """A sweep of the runs frame `runs` whose /eval series is `evals`."""

    def __init__(self, runs, evals):
        super().__init__(directory="runs/fake", name="fake", manifest=None, runs=runs, data={},
                         rows=[], base="", base_note="", notes=[])
        self._evals = evals

    def series(self, kind):
        assert kind == "eval"
        return self._evals


def test_a_pilot_without_one_precision_is_refused():
    runs = pd.DataFrame({"run_id": ["a"], "status": ["completed"], "train.precision": ["fp32"]})
    with pytest.raises(AnalysisError, match="no completed bf16 run"):
        evaluations(FakeSweep(runs, frame([("a", "fp32", 100, 5.0)]).drop(columns="precision")))
    other = pd.DataFrame({"run_id": ["a"], "status": ["completed"]})
    with pytest.raises(AnalysisError, match="do not vary train.precision"):
        evaluations(FakeSweep(other, frame([])))
