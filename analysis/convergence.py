"""Did a run's dev loss reach a plateau? The test every report applies to every run.

A run is converged when it has at least MIN_EVALUATIONS dev evaluations and its dev loss fell by
less than PLATEAU_THRESHOLD (relative) over the last PLATEAU_FRACTION of them: with L the dev
losses in order, k = ceil(n * PLATEAU_FRACTION), the drop (L[n-k-1] - min(L[n-k:])) / L[n-k-1] is
below the threshold. Anything else is unconverged, with the reason (too few evaluations, or the
drop measured).

How training stopped does not decide it. A patience rule whose window is short next to the
evaluation-to-evaluation noise stops runs that are still improving: a base run stopped by
patience 4 x 200 steps (min_delta 0.01) had a dev loss that fell 2.0% over its last quarter. The
stop reason is kept in the verdict's text so the report says both.
"""

import dataclasses
import math

MIN_EVALUATIONS = 10
PLATEAU_FRACTION = 0.25
PLATEAU_THRESHOLD = 0.01

RULE = (f"converged = >= {MIN_EVALUATIONS} dev evaluations with a dev-loss drop below "
        f"{PLATEAU_THRESHOLD:.0%} (relative) over the last {PLATEAU_FRACTION:.0%} of them, "
        f"however training stopped")


@dataclasses.dataclass
class Convergence:
    converged: bool
    reason: str
    evaluations: int
    last_quarter_drop: float  # relative drop over the last quarter (nan with too few points)


def assess(losses, stop_reason=""):
    """Convergence of one run from its dev losses (in step order) and its stop reason."""
    losses = [float(v) for v in losses]
    n = len(losses)
    drop = math.nan
    if n >= 2:
        k = max(1, math.ceil(n * PLATEAU_FRACTION))
        k = min(k, n - 1)
        before = losses[n - k - 1]
        tail = losses[n - k:]
        # A non-finite loss anywhere in the window (a run that diverged) leaves the drop NaN.
        if all(math.isfinite(v) for v in [before, *tail]) and before > 0:
            drop = (before - min(tail)) / before
    stopped = f" (stopped by {stop_reason})" if stop_reason else ""
    if n < MIN_EVALUATIONS:
        return Convergence(False, f"{n} dev evaluation(s), fewer than {MIN_EVALUATIONS}{stopped}",
                           n, drop)
    if not math.isfinite(drop):
        return Convergence(False, f"dev loss is not finite{stopped}", n, drop)
    if drop < PLATEAU_THRESHOLD:
        return Convergence(True, f"plateau: dev loss fell {drop:.1%} over the last quarter"
                           f"{stopped}", n, drop)
    return Convergence(False, f"dev loss still falling: {drop:.1%} over the last quarter"
                       f"{stopped}", n, drop)


def assess_run(data):
    """Convergence of a loaded RunData (analysis.runfile)."""
    losses = list(data.eval["loss"]) if "loss" in data.eval else []
    return assess(losses, str(data.summary.get("stop_reason", "")))
