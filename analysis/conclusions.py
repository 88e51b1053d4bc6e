"""One line per ablation, first thing in a report: the effect on dev perplexity with its 95%
interval, whether it is significant, whether its direction agrees with the paper's, and whether
the runs behind it converged. Every verdict comes from numbers in the table; the thresholds are
stated in the output."""

import math

import numpy as np

from analysis import stats

ALPHA = 0.05


def _values(sweep, run_ids, key):
    index = sweep.runs.set_index("run_id")
    if key not in index:
        return []
    values = [float(index.at[r, key]) for r in run_ids]
    return [v for v in values if np.isfinite(v)]


def _direction(delta):
    return "higher" if delta > 0 else "lower" if delta < 0 else "equal"


def conclusion_lines(sweep, table):
    """Markdown bullet lines, one per non-base row with dev PPL on both sides."""
    by_row = {r["row"]: r for r in table.records}
    base = sweep.row(sweep.base)
    base_ids = sweep.completed(base.key)
    base_ppl = _values(sweep, base_ids, "dev_ppl")
    paper_base = base.paper.get("ppl", math.nan)
    lines = []
    for row in sweep.rows:
        if row.key == base.key:
            continue
        ids = sweep.completed(row.key)
        ours = _values(sweep, ids, "dev_ppl")
        if not ours or not base_ppl:
            lines.append(f"- **{row.key}**: no completed runs on one side yet.")
            continue
        delta = float(np.mean(ours) - np.mean(base_ppl))
        low, high = stats.welch_interval(ours, base_ppl)
        p = by_row[row.key].get("ppl_p", math.nan)
        if math.isfinite(low):
            interval = f"[{low:+.2f}, {high:+.2f}]"
            resolved = low > 0 or high < 0
            verdict = "significant" if resolved else "not significant (the interval holds 0)"
        else:
            interval = "(no interval: fewer than two seeds)"
            verdict = "not testable"
        paper = row.paper.get("ppl", math.nan)
        if math.isfinite(paper) and math.isfinite(paper_base) and round(paper - paper_base, 2):
            paper_delta = paper - paper_base
            agrees = (_direction(paper_delta) == _direction(delta))
            paper_text = (f"paper {paper_delta:+.2f} PPL: "
                          + ("same direction" if agrees else "opposite direction"))
        elif math.isfinite(paper) and math.isfinite(paper_base):
            paper_text = "paper: no difference"
        else:
            paper_text = "no paper value"
        unconverged = len(sweep.unconverged(row.key))
        converged = (f"all {len(ids)} runs converged" if unconverged == 0
                     else f"{unconverged} of {len(ids)} runs unconverged")
        p_text = "" if not math.isfinite(p) else ", p < 0.001" if p < 0.001 else f", p = {p:.3f}"
        lines.append(f"- **{row.key}**: dev PPL {delta:+.2f} vs base, 95% interval {interval}"
                     f"{p_text}, {verdict}; {paper_text}; {converged}.")
    if lines:
        lines.insert(0, f"One line per ablation: the difference of mean dev PPL from the base row "
                        f"({base.key}) with Welch's 95% interval over seeds; significant when the "
                        f"interval excludes 0 (two-sided, alpha = {ALPHA}); the paper's direction "
                        "from its own base; convergence as defined under the table.")
        lines.insert(1, "")
    return lines
