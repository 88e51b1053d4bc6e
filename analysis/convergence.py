"""Did a run's dev loss reach a plateau? The test every report applies to every run.

A run is converged when either
- training stopped by patience (`stop_reason` "patience" in /summary): train.stop.patience dev
  evaluations in a row did not lower the best dev loss by more than train.stop.min_delta; or
- it has at least MIN_EVALUATIONS dev evaluations and its dev loss fell by less than
  PLATEAU_THRESHOLD (relative) over the last PLATEAU_FRACTION of them: with L the dev losses in
  order, k = ceil(n * PLATEAU_FRACTION), the drop (L[n-k-1] - min(L[n-k:])) / L[n-k-1] is below
  the threshold.
Anything else is unconverged, with the reason (too few evaluations, or the drop measured).
"""

import dataclasses
import math

MIN_EVALUATIONS = 10
PLATEAU_FRACTION = 0.25
PLATEAU_THRESHOLD = 0.01

RULE = (f"converged = stopped by patience, or >= {MIN_EVALUATIONS} dev evaluations with a dev-loss "
        f"drop below {PLATEAU_THRESHOLD:.0%} (relative) over the last "
        f"{PLATEAU_FRACTION:.0%} of them")


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
        tail = [v for v in losses[n - k:] if math.isfinite(v)]
        if math.isfinite(before) and before > 0 and tail:
            drop = (before - min(tail)) / before
    if stop_reason == "patience":
        return Convergence(True, "stopped by patience", n, drop)
    if n < MIN_EVALUATIONS:
        return Convergence(False, f"{n} dev evaluation(s), fewer than {MIN_EVALUATIONS}", n, drop)
    if not math.isfinite(drop):
        return Convergence(False, "dev loss is not finite", n, drop)
    if drop < PLATEAU_THRESHOLD:
        return Convergence(True, f"plateau: dev loss fell {drop:.1%} over the last quarter", n,
                           drop)
    return Convergence(False, f"dev loss still falling: {drop:.1%} over the last quarter", n,
                       drop)


def assess_run(data):
    """Convergence of a loaded RunData (analysis.runfile)."""
    losses = list(data.eval["loss"]) if "loss" in data.eval else []
    return assess(losses, str(data.summary.get("stop_reason", "")))
