"""One line per ablation, first thing in a report: the effect on dev perplexity with its 95%
interval, whether it is significant, whether its direction agrees with the paper's, whether the
runs behind it converged, and whether their decoders read the source. Every verdict comes from
numbers in the table; the thresholds are stated in the output."""

import math

import numpy as np

from analysis import stats
from analysis.source_attention import IGNORES_SOURCE

ALPHA = 0.05


def _values(sweep, run_ids, key):
    index = sweep.runs.set_index("run_id")
    if key not in index:
        return []
    values = [float(index.at[r, key]) for r in run_ids]
    return [v for v in values if np.isfinite(v)]


def _direction(delta):
    return "higher" if delta > 0 else "lower" if delta < 0 else "equal"


def verdicts(sweep, table):
    """Per non-base row: the numbers behind its conclusion line (None where a side has no
    completed run yet)."""
    by_row = {r["row"]: r for r in table.records}
    base = sweep.row(sweep.base)
    base_ppl = _values(sweep, sweep.completed(base.key), "dev_ppl")
    paper_base = base.paper.get("ppl", math.nan)
    results = []
    for row in sweep.rows:
        if row.key == base.key:
            continue
        ids = sweep.completed(row.key)
        ours = _values(sweep, ids, "dev_ppl")
        if not ours or not base_ppl:
            results.append({"row": row.key, "delta": None})
            continue
        low, high = stats.welch_interval(ours, base_ppl)
        paper = row.paper.get("ppl", math.nan)
        paper_delta = (paper - paper_base
                       if math.isfinite(paper) and math.isfinite(paper_base) else math.nan)
        results.append({
            "row": row.key, "runs": len(ids), "delta": float(np.mean(ours) - np.mean(base_ppl)),
            "low": low, "high": high, "p": by_row[row.key].get("ppl_p", math.nan),
            "testable": math.isfinite(low), "resolved": low > 0 or high < 0,
            "paper_delta": paper_delta, "unconverged": len(sweep.unconverged(row.key)),
            "ignoring_source": sweep.ignoring_source(row.key)})
    return results


def convergence_phrase(runs, unconverged):
    """How many of a row's `runs` completed runs converged, in words."""
    if unconverged == 0:
        return {1: "its run converged", 2: "both runs converged"}.get(
            runs, f"all {runs} runs converged")
    if runs == 1:
        return "its run did not converge"
    return f"{unconverged} of {runs} runs unconverged"


def source_phrase(runs, ignoring):
    """'' when every run's decoder reads the source, else how many ignore it and how much
    (`ignoring`: {run id: dev cross-attention relative to uniform})."""
    if not ignoring:
        return ""
    values = sorted(ignoring.values())
    level = f"{values[0]:.3f}" if len(values) == 1 else f"{values[0]:.3f} to {values[-1]:.3f}"
    where = "its run" if runs == 1 else f"{len(ignoring)} of {runs} runs"
    return (f"; the decoder ignores the source in {where} "
            f"(decoder-encoder attention at {level} of uniform over the dev set): the row "
            "measures a model that did not learn to translate")


def conclusion_lines(sweep, table):
    """Markdown bullet lines, one per non-base row with dev PPL on both sides."""
    base = sweep.row(sweep.base)
    lines = []
    for v in verdicts(sweep, table):
        if v["delta"] is None:
            lines.append(f"- **{v['row']}**: no completed runs on one side yet.")
            continue
        delta, low, high, p = v["delta"], v["low"], v["high"], v["p"]
        if v["testable"]:
            interval = f"[{low:+.2f}, {high:+.2f}]"
            verdict = ("significant" if v["resolved"]
                       else "not significant (the interval holds 0)")
        else:
            interval = None
            verdict = "not testable"
        paper_delta = v["paper_delta"]
        if math.isfinite(paper_delta) and round(paper_delta, 2):
            agrees = (_direction(paper_delta) == _direction(delta))
            paper_text = (f"paper {paper_delta:+.2f} PPL: "
                          + ("same direction" if agrees else "opposite direction"))
        elif math.isfinite(paper_delta):
            paper_text = "paper: no difference"
        else:
            paper_text = "no paper value"
        interval_text = (f"95% interval {interval}" if interval
                         else "no 95% interval (fewer than two seeds on a side)")
        p_text = "" if not math.isfinite(p) else ", p < 0.001" if p < 0.001 else f", p = {p:.3f}"
        lines.append(f"- **{v['row']}**: dev PPL {delta:+.2f} vs base, {interval_text}"
                     f"{p_text}, {verdict}; {paper_text}; "
                     f"{convergence_phrase(v['runs'], v['unconverged'])}"
                     f"{source_phrase(v['runs'], v['ignoring_source'])}.")
    if lines:
        lines.insert(0, f"One line per ablation: the difference of mean dev PPL from the base row "
                        f"({base.key}) with Welch's 95% interval over seeds; significant when the "
                        f"interval excludes 0 (two-sided, alpha = {ALPHA}); the paper's direction "
                        "from its own base; convergence as defined under the table; and "
                        "whether the decoder ignores the source (decoder-encoder attention at "
                        f"{IGNORES_SOURCE} of uniform or more over the dev set).")
        lines.insert(1, "")
    return lines


def discussion_lines(sweep, table):
    """A generated discussion for a report without a notes file: what the conclusions add up to,
    counted from the same verdicts, and what limits them (seeds, convergence)."""
    results = [v for v in verdicts(sweep, table) if v["delta"] is not None]
    if not results:
        return []
    testable = [v for v in results if v["testable"]]
    resolved = [v for v in testable if v["resolved"]]
    with_paper = [v for v in resolved
                  if math.isfinite(v["paper_delta"]) and round(v["paper_delta"], 2)]
    agreeing = [v for v in with_paper
                if _direction(v["paper_delta"]) == _direction(v["delta"])]
    unconverged_rows = [v["row"] for v in results if v["unconverged"]]
    lines = [f"Of {len(results)} ablations with completed runs on both sides, {len(testable)} "
             f"have at least two seeds on each side and {len(resolved)} of those differ from the "
             f"base row beyond their 95% interval."]
    if resolved:
        worst = max(resolved, key=lambda v: v["delta"])
        best = min(resolved, key=lambda v: v["delta"])
        lines[0] += (f" The largest harm is {worst['row']} ({worst['delta']:+.2f} PPL)"
                     if worst["delta"] > 0 else "")
        lines[0] += (f"{';' if worst['delta'] > 0 else ''} the largest gain is {best['row']} "
                     f"({best['delta']:+.2f} PPL)." if best["delta"] < 0 else ".")
    if with_paper:
        lines.append(f"{len(agreeing)} of the {len(with_paper)} resolved differences the paper "
                     f"also reports point the same way as the paper's"
                     + ("." if len(agreeing) == len(with_paper) else
                        "; the others are named above with 'opposite direction'."))
    unresolved = [v["row"] for v in testable if not v["resolved"]]
    if unresolved:
        lines.append(f"Unresolved at these seeds ({', '.join(unresolved)}): their intervals hold 0, "
                     f"so the sweep cannot say whether they matter; more seeds would narrow them.")
    if unconverged_rows:
        lines.append(f"Runs of {len(unconverged_rows)} row(s) ({', '.join(unconverged_rows)}) had "
                     f"not converged when they stopped: their differences compare how fast the "
                     f"models learn up to the step cap, not how good they become; train longer "
                     f"(train.steps, train.stop) before reading them as the paper's question.")
    else:
        lines.append("Every run behind these numbers converged (definition under the table).")
    stalled = [v["row"] for v in results if v["ignoring_source"]]
    if stalled:
        lines.append(f"In {len(stalled)} row(s) ({', '.join(stalled)}) the decoder of some run "
                     "ignores the source: its perplexity is a language model's of the target "
                     "side, so the difference from base says that the model did not learn to "
                     "translate under this recipe, not what the ablated part contributes.")
    return [" ".join(lines), ""]
