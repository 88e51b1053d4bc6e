"""How far a run got, apart from how it stopped: one status per run, with its evidence.

Measured on the dev NLL (nats per target token, never the label-smoothed loss, whose floor moves
with eps_ls), and stated in nats and in % of perplexity (a fall of d nats is a PPL
100 * (1 - exp(-d)) % lower). The statuses, first match wins:

failed to learn
    The decoder ignores its source: decoder-encoder attention over the dev set at
    IGNORES_SOURCE (0.95) of the uniform entropy or more (analysis/source_attention.py); or the
    final dev PPL is no better than a unigram model's of the target side (when the report is
    given that value, --unigram-ppl); or the dev NLL is not finite (the run diverged).
converged (task solved)
    A synthetic task's dev exact-match accuracy at SOLVED_ACCURACY or more: nothing is left to
    learn, however short the run.
budget
    A schedule that decays to zero ran to its end: `train.lr.schedule: cosine` or
    `train.lr.cooldown` > 0 in the run's stored config, and the run completed all `train.steps`.
    Such a curve flattens because the rate reaches zero, so its tail says nothing about
    convergence; the number is what the budget buys.
converged
    The straight line fitted (least squares, dev NLL against step) to the last W evaluations
    falls by less than FLAT_NATS over them (log 1.01 nats: 1% of PPL). W is the last quarter of
    the evaluations, at least MIN_TAIL and at least twice the run's `train.stop.patience`, and the
    run needs MIN_EVALUATIONS evaluations. A patience stop alone cannot satisfy it: patience
    guarantees only that the last `patience` evaluations brought no gain above min_delta; the
    window reaches as far again before them, so a curve that was still falling there has a
    fitted fall of about its slope times the window, whatever the last few points did.
stopped while improving
    Anything else: the fitted fall is FLAT_NATS or more (the run stopped, by patience or at its
    step cap, while its dev NLL still fell), or there are too few evaluations to show a plateau.
"""

import dataclasses
import math

import numpy as np
from scipy import stats as scipy_stats

from analysis.source_attention import IGNORES_SOURCE, dev_cross_attention

CONVERGED = "converged"
BUDGET = "budget"
IMPROVING = "stopped while improving"
FAILED = "failed to learn"
STATUSES = (CONVERGED, BUDGET, IMPROVING, FAILED)

MIN_EVALUATIONS = 10
TAIL_FRACTION = 0.25
MIN_TAIL = 5
FLAT_NATS = math.log(1.01)
SOLVED_ACCURACY = 0.99

MEANING = {
    CONVERGED: (f"the line fitted to the dev NLL over the last quarter of the evaluations (at "
                f"least {MIN_TAIL} and twice the patience, of at least {MIN_EVALUATIONS}) falls "
                f"by less than {FLAT_NATS:.4f} nats (1% of PPL) over them, or a synthetic task's "
                f"dev accuracy is {SOLVED_ACCURACY:.0%} or more; how the run stopped does not "
                "enter"),
    BUDGET: ("a schedule that decays to zero (train.lr.schedule cosine, or train.lr.cooldown > "
             "0) ran all its train.steps: the number is what that budget buys, not a plateau"),
    IMPROVING: ("the run stopped (by patience or at its step cap) while its fitted dev NLL still "
                "fell by 1% of PPL or more over the last quarter, or it has too few evaluations "
                "to show a plateau: its number measures how fast the model learns, not how good "
                "it gets"),
    FAILED: (f"the decoder ignores its source (decoder-encoder attention at {IGNORES_SOURCE} of "
             "the uniform entropy or more over the dev set), or dev PPL is no better than a "
             "unigram model's (when given), or the dev NLL is not finite: the row measures a "
             "model that did not learn the task"),
}

RULE = "; ".join(f"*{status}*: {MEANING[status]}" for status in STATUSES)


@dataclasses.dataclass
class Convergence:
    status: str
    reason: str
    evaluations: int
    diagnostic: str = ""  # failed to learn: what failed, in a few words
    tail_evaluations: int = 0
    tail_fall_nats: float = math.nan  # fitted fall of the dev NLL over the tail window

    @property
    def converged(self):
        """Converged or ran its fixed budget: a number the run's recipe stands behind."""
        return self.status in (CONVERGED, BUDGET)

    @property
    def failed(self):
        return self.status == FAILED


def ppl_percent(nats):
    """A fall of `nats` in NLL as the % by which PPL falls: 100 * (1 - exp(-nats))."""
    return 100.0 * -math.expm1(-nats)


def tail_window(evaluations, patience=0):
    """The number of trailing evaluations the fit uses (see the module comment)."""
    return max(math.ceil(evaluations * TAIL_FRACTION), MIN_TAIL, 2 * int(patience or 0))


def fitted_fall(steps, nll):
    """-slope x (last step - first step) of the least-squares line of nll on step: the fall of
    the fitted line over the window, in nats (positive while the curve falls)."""
    fit = scipy_stats.linregress(np.asarray(steps, dtype=float), np.asarray(nll, dtype=float))
    return float(-fit.slope * (float(steps[-1]) - float(steps[0])))


def _number(value, default=0.0):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return value if math.isfinite(value) else default


def decays_to_zero(config):
    """Whether the stored config's schedule ends at a zero rate (keys read defensively: runs
    logged before they existed have neither)."""
    return (str(config.get("train.lr.schedule", "")) == "cosine"
            or _number(config.get("train.lr.cooldown", 0)) > 0)


def assess(nll, steps=None, stop_reason="", patience=0, budget_spent=False,
           cross_attention=None, accuracy=None, unigram_ppl=None):
    """The status of one run (see the module comment). nll: dev NLL per evaluation in step
    order; steps: their steps (1, 2, ... when None); budget_spent: the run's schedule decays to
    zero and it completed all its steps; cross_attention: dev decoder-encoder attention relative
    to uniform; accuracy: a synthetic task's final dev accuracy (0..1)."""
    nll = [float(v) for v in nll]
    steps = list(range(1, len(nll) + 1)) if steps is None else [float(s) for s in steps]
    n = len(nll)
    stopped = f"; stopped by {stop_reason}" if stop_reason else ""
    if cross_attention is not None and math.isfinite(cross_attention) \
            and cross_attention >= IGNORES_SOURCE:
        return Convergence(FAILED, f"the decoder ignores its source: decoder-encoder attention at "
                           f"{cross_attention:.3f} of uniform over the dev set{stopped}", n,
                           diagnostic="the decoder ignores its source")
    if n and not all(math.isfinite(v) for v in nll):
        return Convergence(FAILED, f"the dev NLL is not finite (the run diverged){stopped}", n,
                           diagnostic="diverged")
    if unigram_ppl is not None and n and math.exp(nll[-1]) >= unigram_ppl:
        return Convergence(FAILED, f"dev PPL {math.exp(nll[-1]):.2f} is no better than the "
                           f"unigram model's {unigram_ppl:.2f}{stopped}", n,
                           diagnostic="no better than a unigram model")
    if accuracy is not None and math.isfinite(accuracy) and accuracy >= SOLVED_ACCURACY:
        return Convergence(CONVERGED, f"task solved: dev accuracy {accuracy:.1%}{stopped}", n)
    if budget_spent:
        return Convergence(BUDGET, f"the decaying schedule ran to its end at step "
                           f"{int(steps[-1]) if steps else 0:,}{stopped}", n)
    window = tail_window(n, patience)
    if n < MIN_EVALUATIONS or n < window + 1:
        return Convergence(IMPROVING, f"{n} dev evaluation(s): too few to show a plateau (needs "
                           f"{max(MIN_EVALUATIONS, window + 1)}){stopped}", n)
    fall = fitted_fall(steps[-window:], nll[-window:])
    evidence = (f"fitted dev NLL fall {fall:+.4f} nats ({ppl_percent(fall):+.2f}% PPL) over the "
                f"last {window} evaluations (steps {int(steps[-window]):,}-{int(steps[-1]):,})")
    verdict = dict(evaluations=n, tail_evaluations=window, tail_fall_nats=fall)
    if fall < FLAT_NATS:
        return Convergence(CONVERGED, f"{evidence}, below {FLAT_NATS:.4f}{stopped}", **verdict)
    return Convergence(IMPROVING, f"{evidence}, not below {FLAT_NATS:.4f}{stopped}", **verdict)


def assess_run(data, unigram_ppl=None):
    """The status of a loaded RunData (analysis.runfile)."""
    evaluation = data.eval
    nll = list(evaluation["nll"]) if "nll" in evaluation else []
    steps = list(evaluation["step"]) if "step" in evaluation else None
    config, summary = data.config, data.summary
    planned = _number(config.get("train.steps", 0))
    done = _number(summary.get("steps", 0))
    accuracy = summary.get("final_dev_accuracy")
    if accuracy is None and "accuracy" in evaluation and len(evaluation):
        accuracy = float(evaluation["accuracy"].iloc[-1])
    return assess(nll, steps if steps and len(steps) == len(nll) else None,
                  str(summary.get("stop_reason", "")),
                  patience=_number(config.get("train.stop.patience", 0)),
                  budget_spent=decays_to_zero(config) and planned > 0 and done >= planned,
                  cross_attention=dev_cross_attention(data),
                  accuracy=None if accuracy is None else float(accuracy),
                  unigram_ppl=unigram_ppl)
