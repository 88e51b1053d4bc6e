"""The convergence test of analysis/convergence.py on hand-computed curves."""

import math
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.convergence import MIN_EVALUATIONS, assess, rates_at  # noqa: E402

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


# 60 evaluations: 45 falling from 5.00 to L[44] = 4.00, five more to 3.93 (L[49]), then the last
# ten (the rate window) reach 3.92 at the end. Last quarter (15): (4.00 - 3.92) / 4.00 = 2.0%.
# Rate window (10): (3.93 - 3.92) / 3.93 = 0.254%.
CUT_RATE_LOSSES = ([5.0 - i / 44 for i in range(45)] + [3.986, 3.972, 3.958, 3.944, 3.93]
                   + [3.929] * 9 + [3.92])


def cut_rates(final_ratio):
    """Rate 1.0 up to the evaluation before the window, halving through it to final_ratio."""
    return [1.0] * 50 + [0.5] * 5 + [0.3] * 4 + [final_ratio]


def test_a_cut_rate_plateau_is_converged_with_both_drops_in_its_reason():
    verdict = assess(CUT_RATE_LOSSES, "patience", cut_rates(0.25))
    assert verdict.converged, verdict.reason
    assert verdict.last_quarter_drop == pytest.approx(0.08 / 4.0)
    assert verdict.window_drop == pytest.approx(0.01 / 3.93)
    assert verdict.window_rate_ratio == pytest.approx(0.25)
    assert verdict.reason == ("plateau at a cut rate: dev loss fell 2.0% over the last quarter; "
                              "0.25% over the last 10 evaluations, with the learning rate at "
                              "0.25x (stopped by patience)")


def test_the_same_curve_is_unconverged_without_the_cut_or_with_a_larger_window_drop():
    # The rate fell to 0.26x only, or not at all (noam's slow decay), or it is unknown.
    for rates in (cut_rates(0.26), [1.0] * 60, None):
        verdict = assess(CUT_RATE_LOSSES, "patience", rates)
        assert not verdict.converged
        assert verdict.reason.startswith("dev loss still falling: 2.0% over the last quarter")
    # A cut of the rate that still bought 0.51% over the window is not a plateau.
    steeper = CUT_RATE_LOSSES[:-1] + [3.93 * (1 - 0.0051)]
    verdict = assess(steeper, "patience", cut_rates(0.1))
    assert not verdict.converged
    assert "0.51% over the last 10 evaluations, with the learning rate at 0.10x" in verdict.reason


def test_the_base_run_stopped_by_short_patience_stays_unconverged_at_noam_rates():
    # noam's rate between steps 6,000 and 8,000 falls as step^-0.5: to 0.87x, not a cut.
    steps = [200 * (i + 1) for i in range(len(BASE_STOPPED_BY_SHORT_PATIENCE))]
    rates = [step ** -0.5 for step in steps]
    verdict = assess(BASE_STOPPED_BY_SHORT_PATIENCE, "patience", rates)
    assert not verdict.converged
    assert verdict.window_rate_ratio == pytest.approx((8000 / 6000) ** -0.5)


def test_the_rate_at_an_evaluation_is_that_of_the_last_logged_step_before_it():
    train = {"step": [10, 20, 30, 40], "lr": [1.0, 0.5, 0.25, 0.125]}
    assert rates_at(train, [10, 25, 40, 100]) == [1.0, 0.5, 0.125, 0.125]
    assert math.isnan(rates_at(train, [5])[0])
    assert rates_at({"step": [], "lr": []}, [10]) is None
