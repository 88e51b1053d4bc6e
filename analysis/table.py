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
from analysis.errors import AnalysisError
from analysis.convergence import BUDGET, CONVERGED, MEANING, STATUSES


@dataclasses.dataclass
class Metric:
    name: str        # CSV prefix: ppl, accuracy_pct, bleu, test_ppl, test_bleu
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
    Metric("test_ppl", "test_ppl", "test PPL", 1.0, 3, "", True),
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
    multiplicity: str = "holm"  # stats.MULTIPLICITY key
    margin_pct: float = 2.0     # equivalence margin on dev PPL (%)
    alpha: float = 0.05
    test: str = "welch+permutation"  # a key of TESTS: the p a verdict uses


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


def _run_texts(sweep, run_ids, key):
    """The distinct non-empty texts of a runs column over `run_ids`, sorted."""
    index = sweep.runs.set_index("run_id")
    if key not in index:
        return []
    return sorted({str(index.at[r, key]) for r in run_ids
                   if isinstance(index.at[r, key], str) and index.at[r, key]})


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


def _status_text(counts):
    return ", ".join(f"{counts[status]} {status}" for status in STATUSES if counts.get(status))


def failure_diagnostics(sweep, row_key):
    """What failed in the row's runs that failed to learn, each diagnostic once, in the order
    the table's failure text lists them."""
    return sorted({diagnostic for diagnostic, _ in sweep.failed(row_key).values()})


def _failure_text(failed, completed):
    """What failed in how many runs, e.g. 'the decoder ignores its source in 2 of 2 runs
    (decoder-encoder attention 0.984 to 1.000 of uniform over the dev set)'."""
    if not failed:
        return ""
    parts = []
    for diagnostic in sorted({d for d, _ in failed.values()}):
        runs = [cross for d, cross in failed.values() if d == diagnostic]
        text = f"{diagnostic} in {len(runs)} of {completed} runs"
        levels = sorted(v for v in runs if np.isfinite(v))
        if diagnostic == "the decoder ignores its source" and levels:
            level = (f"{levels[0]:.3f}" if levels[0] == levels[-1]
                     else f"{levels[0]:.3f} to {levels[-1]:.3f}")
            text += f" (decoder-encoder attention {level} of uniform over the dev set)"
        parts.append(text)
    return "; ".join(parts)


def looks(sweep):
    """How many times adaptive seeds looked at a row's results (max - min + 1 rounds; 1 for fixed
    seeds): the report spends alpha over them (core/cluster/adaptive_seeds.h)."""
    rule = sweep.manifest.seeds if sweep.manifest is not None else {}
    try:
        return max(1, int(rule["max"]) - int(rule["min"]) + 1) if rule else 1
    except (KeyError, TypeError, ValueError):
        raise AnalysisError(f"{sweep.directory}/manifest.yaml: seeds {rule!r}: expected integer "
                            "min and max") from None


# The p a comparison's verdict uses. welch+permutation (the default): the larger of Welch's and
# the exact permutation test's, so that neither normality nor a lucky split alone makes a
# difference. welch: Welch's alone, for a design whose seeds the permutation test cannot resolve
# (3 against 3 seeds: its smallest p is 2/20 = 0.1, above any alpha; the report states the
# floor); the permutation p is still computed and shown.
# Each test's p in the methods' words ("p is ...") and in the conclusions' ("higher or lower: ...").
TESTS = {
    "welch+permutation": "the larger of the two",
    "welch": "Welch's p (the exact permutation test's is shown beside it, not used)",
}
VERDICT_P = {
    "welch+permutation": "the {family}-adjusted p of the more conservative of Welch's and the "
                         "exact permutation test",
    "welch": "the {family}-adjusted Welch p (the exact permutation test's is shown, not used)",
}


def other_references(sweep, records):
    """The rows, other than base, that some row of the table is compared with
    (sweep.rows[].versus), sorted; [] for a table compared with base alone."""
    return sorted({r.get("versus") for r in records} - {"", None, sweep.base})


def _compare(record, metric, ours, theirs, spent_over, test):
    """Welch's and the exact permutation test of a row's per-seed values against its reference's
    (the base row's, or its sweep.rows[].versus row's); the p that counts is `test`'s (TESTS),
    times the looks adaptive seeds took (`spent_over`; Bonferroni alpha spending), at most 1."""
    welch = stats.welch_t_test(ours, theirs)[1]
    permutation = stats.permutation_p(ours, theirs)
    record[f"{metric.name}_p_welch"] = welch
    record[f"{metric.name}_p_perm"] = permutation
    counted = max(welch, permutation) if test == "welch+permutation" else welch
    record[f"{metric.name}_p"] = (min(1.0, spent_over * counted)
                                  if np.isfinite(welch) else math.nan)
    record[f"{metric.name}_test"] = test


def _log_ppl_effect(record, ours, theirs, paper, paper_base, margin_pct):
    """Effects on log PPL, comparable across scales: 100 (exp(mean log row - mean log base) - 1),
    the ratio of geometric-mean PPLs, with Welch's 95% interval mapped the same way; TOST on
    log PPL within +/- log(1 + margin); the paper's effect in the same unit and whether ours
    agrees with it in direction and in size (the paper's inside our interval)."""
    log_ours, log_theirs = np.log(ours), np.log(theirs)
    difference = float(np.mean(log_ours) - np.mean(log_theirs))
    low, high = stats.welch_interval(log_ours, log_theirs)
    record["ppl_effect_pct"] = 100.0 * math.expm1(difference)
    record["ppl_effect_low_pct"] = 100.0 * math.expm1(low) if np.isfinite(low) else math.nan
    record["ppl_effect_high_pct"] = 100.0 * math.expm1(high) if np.isfinite(high) else math.nan
    record["ppl_tost_p"] = stats.equivalence_p(log_ours, log_theirs,
                                               math.log1p(margin_pct / 100.0))
    if np.isfinite(paper) and np.isfinite(paper_base) and paper_base > 0:
        effect = 100.0 * (paper / paper_base - 1.0)
        record["paper_ppl_effect_pct"] = effect
        record["paper_direction_agrees"] = ("" if round(effect, 2) == 0 else
                                            "yes" if np.sign(effect) == np.sign(difference)
                                            else "no")
        if np.isfinite(record["ppl_effect_low_pct"]):
            inside = record["ppl_effect_low_pct"] <= effect <= record["ppl_effect_high_pct"]
            record["paper_size_agrees"] = "yes" if inside else "no"


def _ppl_verdict(record, alpha):
    """The verdict word of a row's dev PPL (analysis/README.md, "Verdicts")."""
    if record["failed"]:
        return "failed"
    if record["base"]:
        return ""
    if np.isfinite(record.get("ppl_p_adj", math.nan)) and record["ppl_p_adj"] < alpha:
        return "higher" if record["ppl_delta"] > 0 else "lower"
    if np.isfinite(record.get("ppl_tost_p_adj", math.nan)) and record["ppl_tost_p_adj"] < alpha:
        return "level"
    if not np.isfinite(record.get("ppl_p", math.nan)):
        return "not testable"
    return "inconclusive"


def build_table(sweep, multiplicity="holm", margin_pct=2.0, alpha=ALPHA[0],
                test="welch+permutation"):
    """The table (see the module comment). multiplicity: holm or bh, over each metric's
    comparisons; margin_pct: the equivalence margin on dev PPL, in %; test: a key of TESTS."""
    if test not in TESTS:
        raise AnalysisError(f"test {test!r}: expected one of {', '.join(TESTS)}")
    settings = _shown_settings(sweep)
    metrics = _present_metrics(sweep)
    base = sweep.row(sweep.base)
    # The paper measured every row against its base, so the paper's effects are against it even
    # for a row of ours compared with another reference (sweep.rows[].versus).
    paper_base = base.paper.get("ppl", math.nan)
    records = []
    tests_used = set()   # labels of the metrics tested against base
    for row in sweep.rows:
        completed = sweep.completed(row.key)
        is_base = row.key == base.key
        reference = sweep.reference(row.key)
        reference_ids = sweep.completed(reference)
        reference_failed = bool(sweep.failed(reference))
        counts = sweep.statuses(row.key)
        failed = sweep.failed(row.key)
        dirty = sweep.dirty(row.key)
        commits = _run_texts(sweep, completed, "git_commit")
        record = {"group": row.group, "row": row.key, "base": is_base,
                  "versus": "" if is_base else reference,
                  "runs": len(row.run_ids), "completed": len(completed),
                  "converged": counts.get(CONVERGED, 0) + counts.get(BUDGET, 0),
                  "statuses": _status_text(counts), "failed": bool(failed),
                  "failure": _failure_text(failed, len(completed)),
                  "dirty_runs": len(dirty), "commits": " ".join(commits)}
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
            theirs = _run_values(sweep, reference_ids, metric.run_key, metric.scale)
            summary = stats.summarize(ours)
            reference_summary = stats.summarize(theirs)
            record[f"{metric.name}_mean"] = summary.mean
            record[f"{metric.name}_std"] = summary.std
            record[f"{metric.name}_n"] = summary.n
            record[f"{metric.name}_delta"] = math.nan
            for column in ("p_welch", "p_perm", "p"):
                record[f"{metric.name}_{column}"] = math.nan
            record[f"{metric.name}_test"] = ""
            # A failed row (or reference) measures a model that did not learn: not compared.
            if (not is_base and not failed and not reference_failed and summary.n
                    and reference_summary.n):
                record[f"{metric.name}_delta"] = summary.mean - reference_summary.mean
                # Across seeds, BLEU included: a paired bootstrap over sentences measures only
                # the test set's sampling, and calls two seeds of one configuration different
                # (analysis/README.md, "Significance").
                _compare(record, metric, ours, theirs, looks(sweep), test)
                tests_used.add(metric.label)
                if metric.name == "ppl":
                    _log_ppl_effect(record, ours, theirs, row.paper.get("ppl", math.nan),
                                    paper_base, margin_pct)
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
    # One family per metric: every row's comparison with its reference (TOST's family for dev
    # PPL), whichever row that is.
    for column in [f"{m.name}_p" for m in metrics] + ["ppl_tost_p"]:
        adjusted = stats.adjust([r.get(column, math.nan) for r in records], multiplicity)
        for record, value in zip(records, adjusted):
            record[f"{column}_adj"] = float(value)
    for record in records:
        if "ppl_mean" in record:
            record["ppl_verdict"] = _ppl_verdict(record, alpha)
    return Table(sweep=sweep, settings=settings, metrics=metrics, records=records,
                 trend=_trend(sweep, records, metrics),
                 method=_method_lines(sweep, metrics, tests_used, records, multiplicity,
                                      margin_pct, alpha, test),
                 incomplete=_incomplete_lines(sweep), multiplicity=multiplicity, test=test,
                 margin_pct=margin_pct, alpha=alpha)


def _blocks(sweep):
    """Group label -> row keys, the block's reference row first: the base row, or the row every
    row of the block is compared with (sweep.rows[].versus), which then stands for the paper's
    base in the ordering."""
    blocks = {}
    for row in sweep.rows:
        if row.key == sweep.base:
            continue
        blocks.setdefault(row.group or "all", []).append(row)
    ordered = {}
    for group, rows in blocks.items():
        references = {row.versus or sweep.base for row in rows}
        reference = references.pop() if len(references) == 1 else sweep.base
        ordered[group] = [reference] + [row.key for row in rows if row.key != reference]
    return ordered


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


def _tau(by_row, keys, metric_name, paper_from):
    """(Kendall tau-b of our means against the paper's values over `keys`, the rows with both);
    tau is nan with fewer than two such rows or ties. paper_from maps a key to the row whose
    paper value it takes (a block's reference row other than base stands for the paper's base)."""
    pairs = [(by_row[k][f"{metric_name}_mean"],
              by_row[paper_from.get(k, k)][f"paper_{metric_name}"]) for k in keys]
    pairs = [(a, b) for a, b in pairs if np.isfinite(a) and np.isfinite(b)]
    if len(pairs) < 2:
        return math.nan, len(pairs)
    return stats.kendall_tau([a for a, _ in pairs], [b for _, b in pairs]), len(pairs)


def _tau_parts(by_row, keys, metrics, paper_from):
    """Kendall tau per metric over `keys`, in words (see _tau)."""
    parts = []
    for metric in metrics:
        tau, rows = _tau(by_row, keys, metric.name, paper_from)
        if rows < 2:
            parts.append(f"{metric.label}: n/a ({rows} row(s) with both values)")
            continue
        text = "n/a (ties)" if not np.isfinite(tau) else f"{tau:+.2f} ({_order_verdict(tau)})"
        parts.append(f"{metric.label}: tau = {text} over {rows} rows")
    return "; ".join(parts)


def block_orders(sweep, records, metric_name="ppl"):
    """{block: (tau, rows ordered, rows left out as failed)}: the trend check's Kendall tau of
    each block on one metric, over the block's rows that learned (as the report's trend check)."""
    by_row = {r["row"]: r for r in records}
    out = {}
    for group, keys in _blocks(sweep).items():
        paper_from = {keys[0]: sweep.base} if keys[0] != sweep.base else {}
        failed = [k for k in keys if by_row[k].get("failed")]
        tau, rows = _tau(by_row, [k for k in keys if k not in failed], metric_name, paper_from)
        out[group] = (tau, rows, failed)
    return out


def _trend(sweep, records, metrics):
    by_row = {r["row"]: r for r in records}
    paper_metrics = [m for m in metrics if m.paper_key]
    if not any(np.isfinite(r.get(f"paper_{m.name}", math.nan))
               for r in records for m in paper_metrics):
        return ["Trend check: the sweep gives no paper values, so there is nothing to compare."]
    reference = ("its reference row included: base, or the row a block is compared with, which "
                 "takes the paper's base value"
                 if any(row.versus for row in sweep.rows) else "base row included")
    lines = ["Trend check: Kendall tau-b between our means and the paper's values within each "
             f"block ({reference}; +1 = same order, -1 = reversed), and within each setting "
             "a block varies when it varies several. Rows that failed to learn are left out "
             "(their numbers measure a model that did not learn the task) and named:"]
    for group, keys in _blocks(sweep).items():
        paper_from = {keys[0]: sweep.base} if keys[0] != sweep.base else {}
        # A failed row measures a failed optimisation, not the ablated part: it is not ordered.
        failed = [k for k in keys if by_row[k].get("failed")]
        keys = [k for k in keys if k not in failed]
        left_out = f" (left out, failed to learn: {', '.join(failed)})" if failed else ""
        unconverged = [k for k in keys
                       if by_row[k].get("converged", 0) < by_row[k].get("completed", 0)]
        caveat = (f" (stopped while improving: {', '.join(unconverged)}; an ordering of such "
                  "rows compares learning speed, not final quality)" if unconverged else "")
        lines.append(f"- block {group}: " + _tau_parts(by_row, keys, paper_metrics, paper_from) + left_out
                     + caveat)
        axes = _axes(sweep, keys)
        if len(axes) > 1:
            for axis, axis_keys in axes.items():
                lines.append(f"  - {', '.join(axis) or '(no setting)'}: "
                             + _tau_parts(by_row, axis_keys, paper_metrics, paper_from))
    return lines


def _seed_counts(records):
    """The (row seeds, base seeds) pairs the comparisons used, sorted."""
    base_n = {m: r[f"{m}_n"] for r in records if r["base"] for m in ("ppl",) if f"{m}_n" in r}
    pairs = {(r["ppl_n"], base_n["ppl"]) for r in records
             if not r["base"] and np.isfinite(r.get("ppl_p", math.nan)) and "ppl" in base_n}
    return sorted(pairs)


def _method_lines(sweep, metrics, tests_used, records, multiplicity, margin_pct, alpha, test):
    family = stats.MULTIPLICITY[multiplicity]
    rounds = looks(sweep)
    spent = (f", times {rounds}: adaptive seeds looked at each row up to {rounds} times, and "
             f"alpha is spent evenly over the looks (Bonferroni)" if rounds > 1 else "")
    others = other_references(sweep, records)
    delta = (f"Δ = row mean − its reference's mean (base, or {', '.join(others)} for the rows "
             "that name it: the paper's effects stay against the paper's base)" if others
             else "Δ = row mean − base mean")
    lines = ["Values: mean ± sample std (ddof 1) over the completed seeds of each row; n = seeds; "
             f"{delta}; {sweep.base_note}."]
    for metric in metrics:
        if metric.label in tests_used:
            tested = sum(np.isfinite(r.get(f"{metric.name}_p", math.nan)) for r in records)
            lines.append(f"{metric.label}: Welch's t-test (scipy, unequal variances, two-sided) "
                         "and an exact permutation test (scipy, every split of the pooled seeds, "
                         "|mean difference|) of the row's seeds against "
                         f"{'its reference' if others else 'base'}'s; p is "
                         f"{TESTS[test]}{spent}; p adj. is {family}-adjusted over the {tested} "
                         f"comparisons of {metric.label} in this table (statsmodels).")
    pairs = _seed_counts(records)
    if pairs:
        lines.append("Smallest p the exact permutation test can reach: " + "; ".join(
            f"{a} vs {b} seeds: {2 if a == b else 1}/{math.comb(a + b, a)} = "
            f"{stats.smallest_permutation_p(a, b):.3g}" for a, b in pairs)
            + f" (a comparison whose smallest p is above {alpha} cannot be significant).")
    lines.append(f"Marks on Δ from the adjusted p: * p adj. < {ALPHA[0]}, ** p adj. < {ALPHA[1]}; "
                 "p = n/a with fewer than two seeds on a side or zero variance.")
    if any("ppl_verdict" in r for r in records):
        lines.append(f"Δ% = 100 × (exp(mean log PPL of the row − mean log PPL of base) − 1), the "
                     "ratio of geometric-mean PPLs, with Welch's 95% interval on log PPL mapped "
                     "the same way; paper Δ% is the paper's row over its base in the same unit; "
                     "vs paper: whether the direction agrees, and whether the paper's Δ% lies "
                     "inside our interval (size). Verdict on dev PPL: higher/lower when p adj. < "
                     f"{alpha}; level when TOST (statsmodels ttost_ind, unequal variances) on log "
                     f"PPL within ±{margin_pct:g}% ({family}-adjusted over the same rows) gives "
                     f"p adj. < {alpha}; inconclusive otherwise; failed for a row with a run that "
                     "failed to learn (not compared).")
    lines.append("Convergence (column conv.: runs converged or at the end of a fixed budget, of "
                 "completed runs; ‡ when not all), on the dev NLL: "
                 + "; ".join(f"*{status}*: {MEANING[status]}" for status in STATUSES) + ".")
    if any(r["dirty_runs"] for r in records):
        lines.append("Provenance (column prov.): § the number of runs built from a working tree "
                     "with uncommitted changes (commit ending in -dirty), whose code no commit "
                     "holds; the runs table names each run's commit.")
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
