"""The paper's Table 3 layout built from a loaded sweep: one line per row (configuration), grouped
as the sweep declares them, the settings that differ from base, params, each metric as
mean +- std over seeds with its delta and significance vs. base, the paper's value beside ours,
the cost in the style of Table 2, and the trend check (Kendall tau) per block.

Only completed runs enter a mean; a row with runs missing, running, failed or preempted is
marked incomplete and lists them (see Sweep.incomplete()).
"""

import dataclasses
import math

import numpy as np

from analysis import stats
from analysis.convergence import RULE as CONVERGENCE_RULE


@dataclasses.dataclass
class Metric:
    name: str        # CSV prefix: ppl, accuracy_pct, bleu, test_bleu
    run_key: str     # column of Sweep.runs (see sweep.DERIVED)
    label: str       # table header
    scale: float     # raw value x scale = shown value
    decimals: int
    paper_key: str   # manifest paper value, "" for none
    lower_is_better: bool


METRICS = [
    Metric("ppl", "dev_ppl", "dev PPL", 1.0, 3, "ppl", True),
    Metric("accuracy_pct", "dev_accuracy", "dev acc. (%)", 100.0, 2, "", False),
    Metric("bleu", "dev_bleu", "dev BLEU", 1.0, 2, "bleu", False),
    Metric("test_bleu", "test_bleu", "test BLEU", 1.0, 2, "", False),
]
ALPHA = (0.05, 0.01)


@dataclasses.dataclass
class Table:
    sweep: object
    settings: list    # config keys shown as columns (differing from base somewhere)
    metrics: list     # Metric present in the runs
    records: list     # one dict of raw values per row (the CSV)
    trend: list       # lines of the trend check
    method: list      # lines naming the statistics
    incomplete: list  # lines naming the runs left out of means


def to_text(value):
    """A value as the short text a table shows (lists joined, floats without trailing zeros)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_text(item) for item in value) + "]"
    if value is None:
        return ""
    return str(value)


def _number(value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def _run_values(sweep, run_ids, key, scale=1.0):
    index = sweep.runs.set_index("run_id")
    if key not in index:
        return []
    values = [_number(index.at[r, key]) * scale for r in run_ids]
    return [v for v in values if np.isfinite(v)]


def _setting_value(sweep, row, key):
    """A row's value of a config key: its override, else a read run's config."""
    if key in row.overrides:
        return row.overrides[key]
    for run_id in row.run_ids:
        if run_id in sweep.data and key in sweep.data[run_id].config:
            return sweep.data[run_id].config[key]
    return None


def _shown_settings(sweep):
    keys = []
    for row in sweep.rows:
        for key in row.overrides:
            if key not in keys:
                keys.append(key)
    base = sweep.row(sweep.base)
    base_values = {k: _setting_value(sweep, base, k) for k in keys}
    return [k for k in keys
            if any(_setting_value(sweep, r, k) != base_values[k] for r in sweep.rows)]


def setting_header(key, keys):
    leaf = key.rsplit(".", 1)[-1]
    return leaf if sum(k.rsplit(".", 1)[-1] == leaf for k in keys) == 1 else key


def _present_metrics(sweep):
    present = []
    for metric in METRICS:
        if metric.run_key in sweep.runs and sweep.runs[metric.run_key].notna().any():
            present.append(metric)
    return present


def build_table(sweep):
    settings = _shown_settings(sweep)
    metrics = _present_metrics(sweep)
    base = sweep.row(sweep.base)
    base_ids = sweep.completed(base.key)
    records = []
    tests_used = set()   # labels of the metrics tested against base
    for row in sweep.rows:
        completed = sweep.completed(row.key)
        is_base = row.key == base.key
        record = {"group": row.group, "row": row.key, "base": is_base,
                  "runs": len(row.run_ids), "completed": len(completed),
                  "converged": len(completed) - len(sweep.unconverged(row.key))}
        for key in settings:
            value = _setting_value(sweep, row, key)
            shown = is_base or value != _setting_value(sweep, base, key)
            record[f"set:{key}"] = to_text(value) if shown else ""
        params = _run_values(sweep, completed, "params") or _run_values(sweep, row.run_ids,
                                                                        "params")
        record["params"] = params[0] if params else math.nan
        record["paper_params_millions"] = row.paper.get("params", math.nan)
        for metric in metrics:
            ours = _run_values(sweep, completed, metric.run_key, metric.scale)
            theirs = _run_values(sweep, base_ids, metric.run_key, metric.scale)
            summary = stats.summarize(ours)
            base_summary = stats.summarize(theirs)
            record[f"{metric.name}_mean"] = summary.mean
            record[f"{metric.name}_std"] = summary.std
            record[f"{metric.name}_n"] = summary.n
            delta, p, test = math.nan, math.nan, ""
            if not is_base and summary.n and base_summary.n:
                delta = summary.mean - base_summary.mean
                # Across seeds, BLEU included: a paired bootstrap over sentences measures only
                # the test set's sampling, and calls two seeds of one configuration different
                # (analysis/README.md, "Significance").
                p, test = stats.welch_t_test(ours, theirs)[2], "welch"
                tests_used.add(metric.label)
            record[f"{metric.name}_delta"] = delta
            record[f"{metric.name}_p"] = p
            record[f"{metric.name}_test"] = test
            if metric.paper_key:
                record[f"paper_{metric.name}"] = row.paper.get(metric.paper_key, math.nan)
        flops = _run_values(sweep, completed, "train_flops")
        seconds = _run_values(sweep, completed, "train_seconds")
        core_hours = _run_values(sweep, completed, "core_hours")
        record["flops_per_run"] = float(np.mean(flops)) if flops else math.nan
        record["flops_total"] = float(np.sum(flops)) if flops else math.nan
        record["wall_seconds_per_run"] = float(np.mean(seconds)) if seconds else math.nan
        record["core_hours_total"] = float(np.sum(core_hours)) if core_hours else math.nan
        records.append(record)
    return Table(sweep=sweep, settings=settings, metrics=metrics, records=records,
                 trend=_trend(sweep, records, metrics),
                 method=_method_lines(sweep, metrics, tests_used),
                 incomplete=_incomplete_lines(sweep))


def _blocks(sweep):
    """Group label -> row keys, base row included in every block."""
    blocks = {}
    for row in sweep.rows:
        if row.key == sweep.base:
            continue
        blocks.setdefault(row.group or "all", []).append(row.key)
    return {g: [sweep.base] + keys for g, keys in blocks.items()}


def _order_verdict(tau):
    """Kendall's tau in words: how much of the paper's ordering the block reproduces."""
    if tau >= 1.0 - 1e-12:
        return "the paper's order"
    if tau > 0.0:
        return "mostly the paper's order"
    if tau <= -1.0 + 1e-12:
        return "the reverse of the paper's order"
    if tau < 0.0:
        return "mostly reversed"
    return "unrelated to the paper's order"


def _axes(sweep, keys):
    """A block's rows split by the settings they change (base first in each): the paper's block C
    varies depth, width and d_ff, and one tau over all of it mixes three questions."""
    overrides = {row.key: row.overrides for row in sweep.rows}
    axes = {}
    for key in keys[1:]:
        axes.setdefault(tuple(overrides.get(key, {})), []).append(key)
    return {axis: [keys[0]] + members for axis, members in axes.items()}


def _tau_parts(by_row, keys, metrics):
    parts = []
    for metric in metrics:
        pairs = [(by_row[k][f"{metric.name}_mean"], by_row[k][f"paper_{metric.name}"])
                 for k in keys]
        pairs = [(a, b) for a, b in pairs if np.isfinite(a) and np.isfinite(b)]
        if len(pairs) < 2:
            parts.append(f"{metric.label}: n/a ({len(pairs)} row(s) with both values)")
            continue
        tau = stats.kendall_tau([a for a, _ in pairs], [b for _, b in pairs])
        text = "n/a (ties)" if not np.isfinite(tau) else f"{tau:+.2f} ({_order_verdict(tau)})"
        parts.append(f"{metric.label}: tau = {text} over {len(pairs)} rows")
    return "; ".join(parts)


def _trend(sweep, records, metrics):
    by_row = {r["row"]: r for r in records}
    paper_metrics = [m for m in metrics if m.paper_key]
    if not any(np.isfinite(r.get(f"paper_{m.name}", math.nan))
               for r in records for m in paper_metrics):
        return ["Trend check: the sweep gives no paper values, so there is nothing to compare."]
    lines = ["Trend check: Kendall tau-b between our means and the paper's values within each "
             "block (base row included; +1 = same order, -1 = reversed), and within each setting "
             "a block varies when it varies several:"]
    for group, keys in _blocks(sweep).items():
        unconverged = [k for k in keys
                       if by_row[k].get("converged", 0) < by_row[k].get("completed", 0)]
        caveat = (f" (unconverged: {', '.join(unconverged)}; an ordering of unconverged rows "
                  "compares learning speed, not final quality)" if unconverged else "")
        lines.append(f"- block {group}: " + _tau_parts(by_row, keys, paper_metrics) + caveat)
        # A row whose decoder ignores the source measures a failed optimisation, not the ablated
        # part: the order among the rows that learned to translate is reported beside.
        ignoring = [k for k in keys[1:] if sweep.ignoring_source(k)]
        learned = [k for k in keys if k not in ignoring]
        if ignoring and len(learned) >= 2:
            lines.append(f"  - without the rows whose decoder ignores the source "
                         f"({', '.join(ignoring)}): " + _tau_parts(by_row, learned, paper_metrics))
        axes = _axes(sweep, keys)
        if len(axes) > 1:
            for axis, axis_keys in axes.items():
                lines.append(f"  - {', '.join(axis) or '(no setting)'}: "
                             + _tau_parts(by_row, axis_keys, paper_metrics))
    return lines


def _method_lines(sweep, metrics, tests_used):
    lines = ["Values: mean ± sample std (ddof 1) over the completed seeds of each row; n = seeds; "
             f"Δ = row mean − base mean; {sweep.base_note}."]
    for metric in metrics:
        if metric.label in tests_used:
            lines.append(f"{metric.label}: Welch's t-test (unequal variances, two-sided) "
                         "across seeds.")
    lines.append("Marks on Δ: * p < 0.05, ** p < 0.01; p = n/a with fewer than two seeds on a "
                 "side or zero variance.")
    lines.append(f"Convergence (column conv.: converged of completed runs, ‡ when not all): "
                 f"{CONVERGENCE_RULE}.")
    lines.append("Cost: counted training FLOPs per run (and summed over the row), mean wall time "
                 "per run, core-hours = train_seconds × world_size × threads / 3600 summed over "
                 "the row's runs.")
    return lines


def _incomplete_lines(sweep):
    missing = sweep.incomplete()
    if missing.empty:
        return []
    lines = [f"Incomplete sweep: {len(missing)} of {len(sweep.runs)} runs are not completed and "
             "are left out of every mean:"]
    for _, run in missing.iterrows():
        lines.append(f"- {run['name']} (id {run['run_id']}, row {run['row']}): {run['status']}")
    return lines
