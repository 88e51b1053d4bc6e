"""`python3 -m analysis.budget_check TABLE CHECK --out DIR`: does the budget move Table 3's order?

The budget check (experiments/small/budget-check.yaml) trains base and two rows of the table
(experiments/small/table3-budget.yaml) for a longer budget: the same seeds and every other key the
same, so each check run has one twin in the table that differs in train.steps and
train.lr.cooldown alone (checked; a pair that differs in another key is an error). Reported
beside the table, never mixed into it. The rules, stated so that they can be checked:

- **A row's change with the budget**: over the seeds both budgets completed, the mean of the
  longer budget's final dev log PPL minus the table's, as % of PPL.
- **A row's effect at each budget**: its dev PPL against base's over the same seeds (the ratio
  of geometric means, as % of PPL), at the table's budget and at the longer one.
- **Whether the budget moves the order**: for every pair of compared rows, the sign of their
  dev log-PPL difference at each budget; the order of a pair *moves* when the sign flips, and
  Kendall's tau-b (scipy, analysis/stats.py) between the two budgets' dev PPLs summarises the whole
  order. With one seed a row these are descriptions of the runs, not tests: a pair whose gap is
  inside seed noise can flip by chance, so each flipped pair is shown with both gaps.

Writes budget.md and budget.csv.
"""

import itertools
import math
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis.errors import AnalysisError, command_line  # noqa: E402
from analysis.formatting import finite, fixed  # noqa: E402
from analysis.side_by_side import two_sweeps_main  # noqa: E402
from analysis.stats import kendall_tau  # noqa: E402
from analysis.twins import twins  # noqa: E402

BUDGET_KEYS = {"train.steps", "train.lr.cooldown"}


def _percent_of_ppl(log_ratio):
    return 100.0 * math.expm1(log_ratio)


def _mean_log(frame, run_ids, column):
    values = [float(frame.at[i, column]) for i in run_ids]
    return float(np.mean(np.log(values))) if values else math.nan


def _mean(frame, run_ids, column):
    values = [float(frame.at[i, column]) for i in run_ids]
    return float(np.mean(values)) if values else math.nan


def _steps(sweep, run_ids):
    steps = {int(sweep.data[i].config["train.steps"]) for i in run_ids}
    return steps.pop() if len(steps) == 1 else 0


def budget_frame(table, check):
    """One record per check row: the seeds paired, both budgets' steps, mean dev PPL, dev and
    test BLEU, the change with the budget and the effect against base at each budget."""
    if check.base != table.base:
        raise AnalysisError(f"the check's base row is {check.base!r}, the table's {table.base!r}")
    missing = [r.key for r in check.rows if r.key not in {t.key for t in table.rows}]
    if missing:
        raise AnalysisError(f"budget-check rows the table does not have: {', '.join(missing)}")
    pairs = twins(table, check, BUDGET_KEYS, "the budget")
    short = table.runs.set_index("run_id")
    long = check.runs.set_index("run_id")
    base_seeds = {seed for (row, seed) in pairs if row == check.base}
    records = []
    for row in check.rows:
        seeds = sorted(seed for (key, seed) in pairs if key == row.key)
        short_ids = [pairs[(row.key, s)][0] for s in seeds]
        long_ids = [pairs[(row.key, s)][1] for s in seeds]
        # Until a twin completes, the longer budget's columns show the check's own runs.
        shown = check.completed_runs(row.key).sort_values("seed")
        shown_ids = long_ids if seeds else list(shown["run_id"])
        short_log, long_log = (_mean_log(short, short_ids, "dev_ppl"),
                               _mean_log(long, shown_ids, "dev_ppl"))
        record = {"row": row.key, "seeds": " ".join(map(str, seeds)),
                  "longer_seeds": " ".join(str(int(long.at[i, "seed"])) for i in shown_ids),
                  "steps": _steps(table, short_ids), "longer_steps": _steps(check, shown_ids),
                  "dev_ppl": math.exp(short_log) if seeds else math.nan,
                  "longer_dev_ppl": math.exp(long_log) if shown_ids else math.nan,
                  "change_pct": _percent_of_ppl(long_log - short_log) if seeds else math.nan}
        for split in ("dev", "test"):
            record[f"{split}_bleu"] = _mean(short, short_ids, f"{split}_bleu")
            record[f"longer_{split}_bleu"] = _mean(long, shown_ids, f"{split}_bleu")
        # Against base over the seeds both rows have at both budgets.
        common = sorted(set(seeds) & base_seeds) if row.key != check.base else []
        for prefix, sweep_frame, side in (("", short, 0), ("longer_", long, 1)):
            effect = math.nan
            if common:
                mine = _mean_log(sweep_frame, [pairs[(row.key, s)][side] for s in common],
                                 "dev_ppl")
                base = _mean_log(sweep_frame, [pairs[(check.base, s)][side] for s in common],
                                 "dev_ppl")
                effect = _percent_of_ppl(mine - base)
            record[f"{prefix}vs_base_pct"] = effect
        records.append(record)
    return pd.DataFrame.from_records(records)


def order_changes(frame):
    """([(row a, row b, gap % at the table's budget, gap % at the longer)] of the pairs whose
    order flips, Kendall's tau between the budgets' dev PPLs or nan, the rows compared): the
    rule of the module docstring over the rows paired at both budgets."""
    compared = frame[np.isfinite(frame["dev_ppl"]) & np.isfinite(frame["longer_dev_ppl"])]
    flips = []
    for (_, a), (_, b) in itertools.combinations(compared.iterrows(), 2):
        before = math.log(a["dev_ppl"]) - math.log(b["dev_ppl"])
        after = math.log(a["longer_dev_ppl"]) - math.log(b["longer_dev_ppl"])
        if np.sign(before) != np.sign(after):
            flips.append((a["row"], b["row"], _percent_of_ppl(before), _percent_of_ppl(after)))
    tau = kendall_tau(compared["dev_ppl"], compared["longer_dev_ppl"])
    return flips, tau, list(compared["row"])


def _percent(value):
    return f"{fixed(value, 2, sign=True)}%" if finite(value) else ""


def markdown(frame, table, check):
    flips, tau, compared = order_changes(frame)
    steps = sorted({int(run.config["train.steps"]) for sweep in (table, check)
                    for run in sweep.data.values() if "train.steps" in run.config})
    lines = ["# The budget check: Table 3's rows at a longer budget", "",
             f"- The table: `{table.directory}`; the check: `{check.directory}` (sweep file "
             f"`{check.manifest.source if check.manifest else '?'}`), budgets of "
             f"{' and '.join(f'{s:,}' for s in steps) or '?'} steps.",
             "- Each check run is paired with the table's run of the same row and seed, which "
             "differs in train.steps and train.lr.cooldown alone. 'change' is the longer budget's "
             "dev PPL against the table's (geometric mean over the paired seeds); 'vs base' is "
             "the row's dev PPL against base's at the same budget and seeds. A pair of rows' "
             "order moves when the sign of their dev-PPL gap flips between the budgets. Until a "
             "check run's twin has completed, the longer budget's columns show the check's own "
             "runs (their seeds are listed). With one seed a row, these describe the runs; they "
             "are not tests.", "",
             "| row | seeds paired | longer: seeds shown | dev PPL | longer: dev PPL | change "
             "| vs base | longer: vs base | dev BLEU | longer: dev BLEU | test BLEU "
             "| longer: test BLEU |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {r['row']} | {r['seeds'] or 'none yet'} | {r['longer_seeds']} "
                     f"| {fixed(r['dev_ppl'], 3)} "
                     f"| {fixed(r['longer_dev_ppl'], 3)} | {_percent(r['change_pct'])} "
                     f"| {_percent(r['vs_base_pct'])} | {_percent(r['longer_vs_base_pct'])} "
                     f"| {fixed(r['dev_bleu'], 2)} | {fixed(r['longer_dev_bleu'], 2)} "
                     f"| {fixed(r['test_bleu'], 2)} | {fixed(r['longer_test_bleu'], 2)} |")
    lines.append("")
    waiting = [r["row"] for _, r in frame.iterrows() if not r["seeds"]]
    if len(compared) < 2:
        lines.append("**No order to compare yet**: fewer than two rows have a run at both "
                     f"budgets (waiting: {', '.join(waiting) or 'none'}).")
    elif flips:
        moved = "; ".join(f"{a} against {b} (gap {_percent(g1)} at the table's budget, "
                          f"{_percent(g2)} at the longer)" for a, b, g1, g2 in flips)
        lines.append(f"**The longer budget moves the order of {len(flips)} pair(s)**: {moved}. "
                     f"Kendall's tau between the budgets: {fixed(tau, 2, sign=True)} over "
                     f"{len(compared)} rows.")
    else:
        lines.append(f"**The longer budget moves no pair's order** ({len(compared)} rows; "
                     f"Kendall's tau {fixed(tau, 2, sign=True)}).")
    if waiting and len(compared) >= 2:
        lines.append(f"Rows without a run at both budgets yet: {', '.join(waiting)}.")
    return "\n".join(lines) + "\n"


def _write(table, check, out):
    frame = budget_frame(table, check)
    frame.to_csv(out / "budget.csv", index=False, float_format="%.10g")
    (out / "budget.md").write_text(markdown(frame, table, check), encoding="utf-8")
    return [out / "budget.md", out / "budget.csv"]


@command_line("analysis.budget_check")
def main(argv=None):
    return two_sweeps_main(
        argv, "analysis.budget_check",
        "Rows of a table trained for a longer budget, beside the table's same rows and seeds: "
        "whether the budget moves their order.",
        ("table", "the table's sweep directory (manifest and run logs)"),
        ("check", "the budget check's sweep directory"), _write)

if __name__ == "__main__":
    sys.exit(main())
