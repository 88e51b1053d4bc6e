"""The convergence test of analysis/convergence.py on hand-computed curves."""

import math
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.convergence import MIN_EVALUATIONS, assess  # noqa: E402

# The dev losses of a base run of experiments/small/table3-plateau.yaml (Bible en->es, one
# evaluation every 200 steps) that patience 4 with min_delta 0.01 stopped at step 8,000.
BASE_STOPPED_BY_SHORT_PATIENCE = [
    6.4946, 6.0307, 5.6222, 5.4016, 5.2452, 5.0861, 4.9457, 4.8459, 4.7457, 4.6682,
    4.5988, 4.5377, 4.5034, 4.4556, 4.4092, 4.425, 4.355, 4.3319, 4.3275, 4.2943,
    4.272, 4.2663, 4.2658, 4.22, 4.2106, 4.2016, 4.1801, 4.1944, 4.2017, 4.1549,
    4.1289, 4.14, 4.1262, 4.1389, 4.112, 4.083, 4.1273, 4.0881, 4.073, 4.1024]


def test_a_patience_stop_while_still_falling_is_unconverged():
    # 40 evaluations: the last quarter is the last 10; the loss before it is L[29] = 4.1549 and
    # their minimum is 4.073, a drop of (4.1549 - 4.073) / 4.1549 = 1.97%, above 1%.
    verdict = assess(BASE_STOPPED_BY_SHORT_PATIENCE, "patience")
    assert not verdict.converged
    assert verdict.last_quarter_drop == pytest.approx((4.1549 - 4.073) / 4.1549)
    assert verdict.reason == "dev loss still falling: 2.0% over the last quarter (stopped by patience)"


def test_a_flat_tail_is_converged_however_training_stopped():
    # 12 evaluations, last quarter = 3; before it 3.0, the tail's minimum 2.98: a 0.67% drop.
    losses = [5.0, 4.5, 4.0, 3.6, 3.3, 3.1, 3.05, 3.02, 3.0, 2.99, 2.98, 3.01]
    for stop_reason in ("steps", "patience", ""):
        verdict = assess(losses, stop_reason)
        assert verdict.converged, verdict.reason
        assert verdict.last_quarter_drop == pytest.approx(0.02 / 3.0)
    assert assess(losses, "steps").reason == ("plateau: dev loss fell 0.7% over the last quarter "
                                              "(stopped by steps)")


def test_too_few_evaluations_or_a_non_finite_loss_is_unconverged():
    short = [4.0] * (MIN_EVALUATIONS - 1)
    verdict = assess(short, "patience")
    assert not verdict.converged
    assert verdict.reason.startswith(f"{MIN_EVALUATIONS - 1} dev evaluation(s), fewer than")
    # A flat curve that ends in NaN, or has an infinity just before its last quarter, diverged.
    for losses in ([5.0] * 11 + [math.nan], [5.0] * 8 + [math.inf] + [5.0] * 3):
        verdict = assess(losses)
        assert not verdict.converged and verdict.reason == "dev loss is not finite"
    assert assess([5.0] * 12).converged
