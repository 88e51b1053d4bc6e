"""One line per ablation, first thing in a report: its verdict on dev perplexity (higher, lower,
level, inconclusive, failed) with the effect in % of PPL and its 95% interval, the tests behind
it (raw and adjusted p), how it compares with the paper's effect in the same unit, the status of
the runs behind it, and where they were built from. Every word comes from the table's records
(analysis/table.py), whose rules are stated under the table."""

import math

from analysis import stats
from analysis.convergence import STATUSES
from analysis.table import VERDICT_P, other_references


def _p(value):
    """'p = 0.012', 'p < 0.001' or 'p n/a'."""
    if not math.isfinite(value):
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _paper_text(record):
    effect = record.get("paper_ppl_effect_pct", math.nan)
    if not math.isfinite(effect):
        return "no paper value"
    if round(effect, 2) == 0:
        return "paper: no difference"
    direction = record.get("paper_direction_agrees", "")
    size = record.get("paper_size_agrees", "")
    return (f"paper {effect:+.1f}%: direction {'agrees' if direction == 'yes' else 'differs'}, "
            f"the paper's size {'inside' if size == 'yes' else 'outside'} our interval")


def _runs_text(record):
    statuses = record.get("statuses", "")
    text = f"runs: {statuses}" if statuses else "runs: none completed"
    if record.get("dirty_runs"):
        text += (f"; {record['dirty_runs']} of {record['completed']} built from a dirty tree "
                 f"(§)")
    return text


def _line(record, table):
    row = record["row"]
    if record["failed"]:
        return (f"- **{row}**: failed: {record['failure']}; not compared with "
                f"{record['versus']} or the "
                f"paper, left out of tau; {_runs_text(record)}.")
    if not math.isfinite(record.get("ppl_delta", math.nan)):
        return f"- **{row}**: no completed runs on one side yet."
    family = stats.MULTIPLICITY[table.multiplicity]
    effect = record.get("ppl_effect_pct", math.nan)
    low, high = record.get("ppl_effect_low_pct", math.nan), record.get("ppl_effect_high_pct",
                                                                        math.nan)
    interval = (f" [{low:+.1f}%, {high:+.1f}%]" if math.isfinite(low) else
                " (no interval: fewer than two seeds on a side)")
    verdict = record.get("ppl_verdict", "")
    if verdict == "level":
        tests = (f"TOST within ±{table.margin_pct:g}% {_p(record['ppl_tost_p'])}, "
                 f"{family}-adjusted {_p(record['ppl_tost_p_adj'])}")
    else:
        tests = (f"Welch {_p(record['ppl_p_welch'])}, permutation {_p(record['ppl_p_perm'])}, "
                 f"{family}-adjusted {_p(record['ppl_p_adj'])}")
    return (f"- **{row}**: {verdict}: dev PPL {record['ppl_delta']:+.2f} ({effect:+.1f}%"
            f"{interval}) vs {record['versus']}, {record['ppl_n']} seed{'' if record['ppl_n'] == 1 else 's'}; {tests}; {_paper_text(record)}; "
            f"{_runs_text(record)}.")


def conclusion_lines(sweep, table):
    """Markdown bullet lines, one per non-base row with dev PPL."""
    records = [r for r in table.records if not r["base"] and "ppl_mean" in r]
    if not records:
        return []
    family = stats.MULTIPLICITY[table.multiplicity]
    others = other_references(sweep, records)
    against = f"the base row ({sweep.base})" + (
        f" or the row it names ({', '.join(others)}: the same change at another width)"
        if others else "")
    lines = [f"One line per ablation, against {against}: the verdict on dev "
             f"PPL (higher or lower: {VERDICT_P[table.test].format(family=family)} below "
             f"{table.alpha}; level: TOST within "
             f"±{table.margin_pct:g}% of PPL, adjusted the same way, below {table.alpha}; "
             "inconclusive: neither; failed: a run failed to learn), the effect as the ratio of "
             "geometric-mean PPLs in % with Welch's 95% interval, the paper's effect in the same "
             "unit, and the status of the runs (defined under the table).", ""]
    lines += [_line(record, table) for record in records]
    return lines


def discussion_lines(sweep, table):
    """A generated discussion for a report without a notes file: the verdicts counted, and what
    limits them (seeds, convergence, provenance)."""
    records = [r for r in table.records if not r["base"] and "ppl_verdict" in r]
    if not records:
        return []
    by_verdict = {}
    for record in records:
        by_verdict.setdefault(record["ppl_verdict"], []).append(record["row"])
    order = ("higher", "lower", "level", "inconclusive", "not testable", "failed")
    lines = [f"Of {len(records)} ablations: " + "; ".join(
        f"{len(by_verdict[v])} {v} ({', '.join(by_verdict[v])})" for v in order
        if v in by_verdict) + "."]
    resolved = [r for r in records if r["ppl_verdict"] in ("higher", "lower")
                and r.get("paper_direction_agrees")]
    if resolved:
        agreeing = [r for r in resolved if r["paper_direction_agrees"] == "yes"]
        lines.append(f"{len(agreeing)} of the {len(resolved)} resolved differences the paper "
                     "also reports point the same way as the paper's.")
    if by_verdict.get("inconclusive"):
        lines.append("An inconclusive row is neither shown to differ nor shown to be level: its "
                     "interval is wider than the equivalence margin, so more seeds (or a longer "
                     "run) are needed before it says anything.")
    totals = {}
    for row in sweep.rows:
        for status, count in sweep.statuses(row.key).items():
            totals[status] = totals.get(status, 0) + int(count)
    if totals:
        lines.append("Runs: " + ", ".join(f"{totals[s]} {s}" for s in STATUSES if s in totals)
                     + ".")
    dirty = sum(r.get("dirty_runs", 0) for r in table.records)
    if dirty:
        lines.append(f"{dirty} runs were built from a working tree with uncommitted changes (§ "
                     "in the table): no commit holds the code that made them.")
    return [" ".join(lines), ""]
