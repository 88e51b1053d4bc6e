"""The run statuses of analysis/convergence.py on curves whose answer is known by hand."""

import math
import sys

import pytest

from conftest import ROOT
from test_train_cli import expected_patience_stop

sys.path.insert(0, str(ROOT))

from analysis import convergence  # noqa: E402
from analysis.convergence import (BUDGET, CONVERGED, FAILED, FLAT_NATS, IMPROVING,  # noqa: E402
                                  MIN_EVALUATIONS, assess, decays_to_zero, ppl_percent,
                                  tail_window)

# Dev losses of a base run of experiments/small/table3-plateau.yaml (Bible en->es, one evaluation
# every 200 steps) that patience 4 with min_delta 0.01 stopped at step 8,000, while it still fell.
BASE_STOPPED_BY_SHORT_PATIENCE = [
    6.4946, 6.0307, 5.6222, 5.4016, 5.2452, 5.0861, 4.9457, 4.8459, 4.7457, 4.6682,
    4.5988, 4.5377, 4.5034, 4.4556, 4.4092, 4.425, 4.355, 4.3319, 4.3275, 4.2943,
    4.272, 4.2663, 4.2658, 4.22, 4.2106, 4.2016, 4.1801, 4.1944, 4.2017, 4.1549,
    4.1289, 4.14, 4.1262, 4.1389, 4.112, 4.083, 4.1273, 4.0881, 4.073, 4.1024]
STEPS = [200 * (i + 1) for i in range(len(BASE_STOPPED_BY_SHORT_PATIENCE))]


def test_a_curve_that_patience_stops_while_it_still_falls_is_not_converged():
    # 30 evaluations falling 0.05 nats each, then 0.002 nats per evaluation with noise of
    # +-0.001: patience 4 with min_delta 0.01 stops it (no step down by 0.01 within four
    # evaluations) at evaluation 34, yet the line fitted over its last 9 (max(ceil(35/4), 5, 8))
    # falls by about 8 x 0.002 = 0.016 nats, 1.6% of PPL.
    curve = [5.5 - 0.05 * i for i in range(30)] + [
        4.0 - 0.002 * i + (0.001 if i % 2 else -0.001) for i in range(1, 100)]
    stop = expected_patience_stop(range(len(curve)), curve, 4, 0.01)
    assert stop == 34
    stopped = curve[:stop + 1]
    verdict = assess(stopped, None, "patience", patience=4)
    assert verdict.status == IMPROVING, verdict.reason
    window = tail_window(len(stopped), 4)
    assert verdict.tail_evaluations == window
    # Hand computation of the least-squares line: slope = cov(x, y) / var(x).
    xs = list(range(len(stopped)))[-window:]
    ys = stopped[-window:]
    mx, my = sum(xs) / window, sum(ys) / window
    slope = (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
             / sum((x - mx) ** 2 for x in xs))
    assert verdict.tail_fall_nats == pytest.approx(-slope * (xs[-1] - xs[0]), rel=1e-9)
    assert verdict.tail_fall_nats > FLAT_NATS
    assert "stopped by patience" in verdict.reason and "not below" in verdict.reason


def test_the_base_run_stopped_by_short_patience_is_not_converged():
    verdict = assess(BASE_STOPPED_BY_SHORT_PATIENCE, STEPS, "patience", patience=4)
    assert verdict.status == IMPROVING
    assert verdict.tail_evaluations == 10  # ceil(40 / 4) > 2 x 4
    assert verdict.tail_fall_nats > 0.03


def test_a_flat_tail_is_converged_however_training_stopped():
    # 40 evaluations falling to 3.0 at evaluation 20, then flat with +-0.001 around it: the
    # fitted fall over the last 10 is within noise, far below log(1.01) nats.
    losses = [3.0 + 2.0 * max(0, 20 - i) / 20 + (0.001 if i % 2 else -0.001) for i in range(40)]
    for stop_reason in ("steps", "patience", ""):
        verdict = assess(losses, None, stop_reason, patience=4)
        assert verdict.status == CONVERGED, verdict.reason
        assert abs(verdict.tail_fall_nats) < 0.002
    assert FLAT_NATS == pytest.approx(math.log(1.01))
    assert ppl_percent(FLAT_NATS) == pytest.approx(100 * (1 - 1 / 1.01))


def test_the_window_is_at_least_twice_the_patience():
    # 40 evaluations, patience 10: window 20, not the quarter (10). A curve flat over its last
    # 12 evaluations but falling 0.01 nats per evaluation before them is not converged.
    losses = [4.0 - 0.01 * min(i, 28) for i in range(40)]
    assert tail_window(40, 10) == 20
    assert assess(losses, None, "patience", patience=10).status == IMPROVING
    assert assess(losses, None, "patience", patience=2).status == CONVERGED


def test_too_few_evaluations_are_not_converged_and_a_solved_task_is():
    short = [4.0] * (MIN_EVALUATIONS - 1)
    verdict = assess(short, None, "steps")
    assert verdict.status == IMPROVING and "too few" in verdict.reason
    solved = assess([2.0, 0.5], None, "steps", accuracy=1.0)
    assert solved.status == CONVERGED and "task solved: dev accuracy 100.0%" in solved.reason
    assert assess([2.0, 0.5], None, "steps", accuracy=0.9).status == IMPROVING


def test_failed_to_learn_by_attention_divergence_or_unigram():
    losses = [5.0] * 12
    verdict = assess(losses, None, "patience", cross_attention=0.95)
    assert verdict.status == FAILED and verdict.diagnostic == "the decoder ignores its source"
    assert assess(losses, None, "patience", cross_attention=0.949).status == CONVERGED
    assert assess(losses[:-1] + [math.nan]).status == FAILED
    # exp(5) = 148.4: no better than a unigram model at 148 PPL, better than one at 149.
    assert assess(losses, unigram_ppl=148.0).status == FAILED
    assert assess(losses, unigram_ppl=149.0).status == CONVERGED
    # Failure outranks a solved task and a spent budget.
    assert assess(losses, cross_attention=1.0, accuracy=1.0, budget_spent=True).status == FAILED


def test_a_decaying_schedule_run_to_its_end_is_budget():
    falling = [4.0 - 0.05 * i for i in range(40)]
    assert assess(falling, None, "steps", budget_spent=True).status == BUDGET
    assert decays_to_zero({"train.lr.schedule": "cosine"})
    assert decays_to_zero({"train.lr.schedule": "noam", "train.lr.cooldown": 2000})
    assert not decays_to_zero({"train.lr.schedule": "noam"})
    assert not decays_to_zero({"train.lr.cooldown": "not a number"})


class FakeRun:
    def __init__(self, config, steps_done, stop_reason="steps"):
        import pandas as pd
        self.config = config
        self.summary = {"steps": steps_done, "stop_reason": stop_reason}
        self.eval = pd.DataFrame({"step": [100 * (i + 1) for i in range(12)],
                                  "nll": [4.0 - 0.1 * i for i in range(12)]})
        self.train = pd.DataFrame()


def test_assess_run_reads_the_budget_from_the_stored_config():
    cosine = {"train.lr.schedule": "cosine", "train.steps": 1200}
    assert convergence.assess_run(FakeRun(cosine, 1200)).status == BUDGET
    # Stopped before its last step: its schedule had not reached zero.
    assert convergence.assess_run(FakeRun(cosine, 1100, "patience")).status == IMPROVING
    cooldown = {"train.lr.schedule": "noam", "train.lr.cooldown": 300, "train.steps": 1200}
    assert convergence.assess_run(FakeRun(cooldown, 1200)).status == BUDGET
    assert convergence.assess_run(FakeRun({"train.steps": 1200}, 1200)).status == IMPROVING
