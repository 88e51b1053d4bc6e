"""The fixed-budget pilot's rules (analysis/pilot_budget.py) on cases whose answers are worked by
hand: the last-quarter drop, what "learns" means, and which rate is chosen."""

import math

import pandas as pd
import pytest

from analysis.pilot_budget import (FALLING_NATS, choose, last_quarter_drop, learns, model_row,
                                   peak_at_d_model_64, prefix_repeats)


def test_the_last_quarter_spans_a_quarter_of_the_evaluations_and_at_least_two():
    # 8 evaluations: the quarter is the last 2 intervals (3 points), 4.0 -> 3.5.
    assert last_quarter_drop(range(8), [9, 8, 7, 6, 5, 4.0, 3.8, 3.5]) == pytest.approx(0.5)
    # 2 evaluations: the one interval there is.
    assert last_quarter_drop(range(2), [5.0, 4.5]) == pytest.approx(0.5)
    # A curve that rose over its last quarter has a negative drop.
    assert last_quarter_drop(range(4), [5.0, 4.0, 3.0, 3.2]) == pytest.approx(-0.2)
    assert math.isnan(last_quarter_drop([1], [3.0]))


def test_a_run_learns_only_reading_its_source_and_still_falling():
    assert learns(0.70, 0.05)
    assert not learns(0.96, 0.05), "a decoder at 0.96 of uniform ignores its source"
    assert not learns(0.70, FALLING_NATS / 2), "a stalled curve"
    assert not learns(float("nan"), 0.05), "no measurement is no evidence"


def frame(entries):
    return pd.DataFrame.from_records(
        [{"row": row, "rate": rate, "seed": 1, "dev_ppl": ppl, "learns": ok}
         for row, rate, ppl, ok in entries])


def test_the_choice_is_the_lowest_geometric_mean_among_rates_where_every_row_learns():
    entries = [("base", 0.2, 30.0, True), ("deep", 0.2, 40.0, True),
               ("base", 0.4, 20.0, True), ("deep", 0.4, 90.0, False),   # lower base, deep fails
               ("base", 0.1, 36.0, True), ("deep", 0.1, 36.0, True)]
    rate, geometric, scores = choose(frame(entries), ["base", "deep"])
    # 0.2: sqrt(30 * 40) = 34.64 beats 0.1: 36; 0.4 is out because deep does not learn there.
    assert rate == 0.2
    assert geometric == pytest.approx(math.sqrt(1200.0))
    assert set(scores) == {0.1, 0.2}


def test_no_choice_when_no_rate_lets_every_row_learn_or_a_row_has_no_run():
    rate, geometric, scores = choose(frame([("base", 0.2, 30.0, True), ("deep", 0.2, 90.0, False),
                                            ("base", 0.4, 20.0, True)]), ["base", "deep"])
    assert rate is None and scores == {} and math.isnan(geometric)
    # A row the sweep declares but that has no completed run yet blocks the choice too.
    rate, _, _ = choose(frame([("base", 0.2, 30.0, True)]), ["base", "deep"])
    assert rate is None


def test_a_row_trained_further_is_decided_by_its_longer_run():
    # big does not learn within 3,000 steps at either rate; trained to 9,600 it learns at 0.2
    # only, so 0.2 is chosen although base alone would prefer 0.4.
    entries = pd.DataFrame.from_records(
        [{"row": row, "rate": rate, "seed": 1, "steps": steps, "dev_ppl": ppl, "learns": ok,
          "run_id": f"{row}-{rate}-{steps}"}
         for row, rate, steps, ppl, ok in [("base", 0.2, 3000, 30.0, True),
                                           ("base", 0.4, 3000, 20.0, True),
                                           ("big", 0.2, 3000, 80.0, False),
                                           ("big", 0.2, 9600, 40.0, True),
                                           ("big", 0.4, 3000, 60.0, False),
                                           ("big", 0.4, 9600, 35.0, False)]])
    rate, geometric, scores = choose(entries, ["base", "big"])
    assert rate == 0.2 and set(scores) == {0.2}
    assert geometric == pytest.approx(math.sqrt(30.0 * 40.0))
    # Without the second stage there is no choice.
    rate, _, _ = choose(entries[entries["steps"] == 3000], ["base", "big"])
    assert rate is None


def test_a_longer_run_repeats_its_prefix_and_a_difference_is_measured():
    frame = pd.DataFrame.from_records([
        {"row": "big", "rate": 0.2, "seed": 1, "steps": 4, "run_id": "short"},
        {"row": "big", "rate": 0.2, "seed": 1, "steps": 8, "run_id": "long"},
        {"row": "base", "rate": 0.2, "seed": 1, "steps": 4, "run_id": "alone"}])
    evaluation = pd.DataFrame.from_records(
        [{"run_id": "short", "step": step, "nll": nll} for step, nll in [(2, 5.0), (4, 4.5)]]
        + [{"run_id": "long", "step": step, "nll": nll}
           for step, nll in [(2, 5.0), (4, 4.25), (6, 4.0), (8, 3.9)]]
        + [{"run_id": "alone", "step": 2, "nll": 6.0}])
    assert prefix_repeats(evaluation, frame) == [("big", 0.2, 1, 2, pytest.approx(0.25))]


def test_rows_and_peaks():
    assert model_row("C N=4.scale-0.4525") == "C N=4"
    # noam: scale * d_model^-0.5 * warmup^-0.5 at step warmup; 0.4525 at warmup 800 is 2.0e-3.
    assert peak_at_d_model_64(0.4525, 800) == pytest.approx(2.0e-3, rel=1e-3)
