"""Did a run's dev loss reach a plateau? The test every report applies to every run.

A run is converged when it has at least MIN_EVALUATIONS dev evaluations and one of two tests
holds; anything else is unconverged, with the reason (too few evaluations, or the drops
measured). L is the dev losses in order, n their number.

(a) Flat curve. The dev loss fell by less than PLATEAU_THRESHOLD (relative) over the last
    PLATEAU_FRACTION of the evaluations: with k = ceil(n * PLATEAU_FRACTION), the drop
    (L[n-k-1] - min(L[n-k:])) / L[n-k-1] is below the threshold.

(b) Flat at a cut rate. Over the last RATE_WINDOW evaluations the learning rate fell to at most
    RATE_CUT of its value at the evaluation before them, and the dev loss fell by less than
    RATE_WINDOW_THRESHOLD over them (the same relative drop as in (a), over that window).
    Reduce on plateau (train.lr.shrink) cuts the rate where the curve stalls, and every cut buys
    a step down: a smaller rate leaves less gradient noise around the minimum. A last quarter
    that holds several halvings therefore shows those steps down, and (a) can fail on a run
    whose remaining gain is already small. If the loss's excess over what a vanishing rate
    reaches scales with the rate (the stationary noise of stochastic gradient methods; Mandt,
    Hoffman and Blei, 2017), a cut from r to r/4 that bought a drop d leaves at most d/3 to gain
    by taking the rate to 0: below RATE_WINDOW_THRESHOLD / 3 = 0.17%, well inside (a)'s 1%.
    The test reads the curve and the rate, not the stop reason.

How training stopped does not decide it. A patience rule whose window is short next to the
evaluation-to-evaluation noise stops runs that are still improving: a base run stopped by
patience 4 x 200 steps (min_delta 0.01), at a rate noam had not cut, had a dev loss that fell
2.0% over its last quarter. The stop reason is kept in the verdict's text so the report says both.
"""

import bisect
import dataclasses
import math

MIN_EVALUATIONS = 10
PLATEAU_FRACTION = 0.25
PLATEAU_THRESHOLD = 0.01
RATE_WINDOW = 10
RATE_CUT = 0.25
RATE_WINDOW_THRESHOLD = 0.005

RULE = (f"converged = >= {MIN_EVALUATIONS} dev evaluations, and a dev-loss drop below "
        f"{PLATEAU_THRESHOLD:.0%} (relative) over the last {PLATEAU_FRACTION:.0%} of them, or "
        f"below {RATE_WINDOW_THRESHOLD:.1%} over the last {RATE_WINDOW} while the learning rate "
        f"fell to {RATE_CUT:g}x or less, however training stopped")


@dataclasses.dataclass
class Convergence:
    converged: bool
    reason: str
    evaluations: int
    last_quarter_drop: float  # relative drop over the last quarter (nan with too few points)
    window_drop: float = math.nan  # relative drop over the last RATE_WINDOW evaluations
    window_rate_ratio: float = math.nan  # rate at the last evaluation / rate before the window


def relative_drop(losses, k):
    """(L[n-k-1] - min(L[n-k:])) / L[n-k-1]: NaN when a loss in the window is not finite."""
    before, tail = losses[-k - 1], losses[-k:]
    # A non-finite loss anywhere in the window (a run that diverged) leaves the drop NaN.
    if all(math.isfinite(v) for v in [before, *tail]) and before > 0:
        return (before - min(tail)) / before
    return math.nan


def assess(losses, stop_reason="", rates=None):
    """Convergence of one run from its dev losses (in step order), its stop reason and the
    learning rate at each evaluation (None when unknown: then only test (a) applies)."""
    losses = [float(v) for v in losses]
    n = len(losses)
    drop = math.nan
    if n >= 2:
        k = min(max(1, math.ceil(n * PLATEAU_FRACTION)), n - 1)
        drop = relative_drop(losses, k)
    window_drop = ratio = math.nan
    if rates is not None and n > RATE_WINDOW:
        window_drop = relative_drop(losses, RATE_WINDOW)
        start, end = float(rates[n - RATE_WINDOW - 1]), float(rates[n - 1])
        if start > 0 and math.isfinite(start) and math.isfinite(end):
            ratio = end / start
    verdict = dict(evaluations=n, last_quarter_drop=drop, window_drop=window_drop,
                   window_rate_ratio=ratio)
    stopped = f" (stopped by {stop_reason})" if stop_reason else ""
    if n < MIN_EVALUATIONS:
        return Convergence(False, f"{n} dev evaluation(s), fewer than {MIN_EVALUATIONS}{stopped}",
                           **verdict)
    if not math.isfinite(drop):
        return Convergence(False, f"dev loss is not finite{stopped}", **verdict)
    if drop < PLATEAU_THRESHOLD:
        return Convergence(True, f"plateau: dev loss fell {drop:.1%} over the last quarter"
                           f"{stopped}", **verdict)
    window = (f"; {window_drop:.2%} over the last {RATE_WINDOW} evaluations, with the learning "
              f"rate at {ratio:.2f}x" if math.isfinite(window_drop) and math.isfinite(ratio)
              else "")
    if ratio <= RATE_CUT and window_drop < RATE_WINDOW_THRESHOLD:
        return Convergence(True, f"plateau at a cut rate: dev loss fell {drop:.1%} over the last "
                           f"quarter{window}{stopped}", **verdict)
    return Convergence(False, f"dev loss still falling: {drop:.1%} over the last quarter"
                       f"{window}{stopped}", **verdict)


def rates_at(train, steps):
    """The learning rate in force at each evaluation step: that of the last logged training step
    at or before it (None when the log has no rates)."""
    if train is None or "lr" not in train or "step" not in train or not len(train["step"]):
        return None
    logged, rates = list(train["step"]), list(train["lr"])
    found = []
    for step in steps:
        i = bisect.bisect_right(logged, step) - 1
        found.append(rates[i] if i >= 0 else math.nan)
    return found


def assess_run(data):
    """Convergence of a loaded RunData (analysis.runfile)."""
    losses = list(data.eval["loss"]) if "loss" in data.eval else []
    steps = list(data.eval["step"]) if "step" in data.eval else []
    rates = rates_at(data.train, steps) if len(steps) == len(losses) else None
    return assess(losses, str(data.summary.get("stop_reason", "")), rates)
