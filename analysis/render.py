"""The table as Markdown, LaTeX (booktabs) and CSV. Markdown and LaTeX show the same cells (one
formatter); the CSV holds the raw numbers those cells round."""

import math

import pandas as pd

from analysis.formatting import count, fixed, p_value, scientific, significant
from analysis.formatting import finite as _finite
from analysis.stats import significance_mark
from analysis.table import failure_diagnostics, other_references, setting_header

def mean_std(record, name, decimals):
    mean = fixed(record.get(f"{name}_mean"), decimals)
    if not mean:
        return ""
    std = fixed(record.get(f"{name}_std"), decimals)
    return f"{mean} ± {std}" if std else mean


def failure(table, record):
    """'failed: <diagnostic>' for a row with a run that failed to learn (the first diagnostic in
    order, as the table's failure text lists them), else ''."""
    if not record.get("failed"):
        return ""
    return "failed: " + failure_diagnostics(table.sweep, record["row"])[0]


def effect_interval(record):
    """Δ% of dev PPL with its 95% interval, e.g. '+4.1 [+1.0, +7.3]'."""
    effect = fixed(record.get("ppl_effect_pct"), 1, sign=True)
    if not effect:
        return ""
    low = fixed(record.get("ppl_effect_low_pct"), 1, sign=True)
    high = fixed(record.get("ppl_effect_high_pct"), 1, sign=True)
    return f"{effect} [{low}, {high}]" if low and high else effect


def agreement(record):
    """Direction and size of our Δ% against the paper's ('' without a comparison)."""
    parts = []
    if record.get("paper_direction_agrees"):
        parts.append(f"direction {record['paper_direction_agrees']}")
    if record.get("paper_size_agrees"):
        parts.append(f"size {record['paper_size_agrees']}")
    return ", ".join(parts)


def columns(table):
    """(header, cell(record) -> text) for every displayed column, left to right."""
    out = [("group", lambda r: r["group"]),
           ("row", lambda r: r["row"] + (" (base)" if r["base"] and r["row"] != "base" else ""))]
    for key in table.settings:
        out.append((setting_header(key, table.settings), lambda r, k=key: r[f"set:{k}"]))

    def seeds(r):
        if r["completed"] == r["runs"]:
            return str(r["completed"])
        return f"{r['completed']} of {r['runs']} †"
    out.append(("n", seeds))
    # Rows compared with another row than base (sweep.rows[].versus) say which: Δ and p are
    # against it.
    if other_references(table.sweep, table.records):
        out.append(("vs", lambda r: r.get("versus", "")))

    def converged(r):
        text = f"{r['converged']}/{r['completed']}"
        return text if r["converged"] == r["completed"] else text + " ‡"
    out.append(("conv.", converged))
    if any(r.get("dirty_runs") for r in table.records):
        out.append(("prov.", lambda r: f"{r['dirty_runs']} §" if r.get("dirty_runs") else ""))
    out.append(("params", lambda r: count(r["params"])))
    if any(_finite(r["paper_params_millions"]) for r in table.records):
        out.append(("paper params (M)", lambda r: significant(r["paper_params_millions"])))
    for metric in table.metrics:
        name, decimals = metric.name, metric.decimals
        out.append((metric.label,
                    lambda r, n=name, d=decimals: failure(table, r) or mean_std(r, n, d)))

        def delta(r, n=name, d=decimals):
            text = fixed(r.get(f"{n}_delta"), d, sign=True)
            mark = significance_mark(r.get(f"{n}_p_adj"))
            return f"{text} {mark}".strip() if text else ""
        out.append(("Δ", delta))
        if name == "ppl":
            out.append(("Δ% [95%]", effect_interval))
        out.append(("p", lambda r, n=name: "" if r["base"] or r["failed"]
                    else p_value(r.get(f"{n}_p"))))
        out.append(("p adj.", lambda r, n=name: "" if r["base"] or r["failed"]
                    else p_value(r.get(f"{n}_p_adj"))))
        if name == "ppl":
            out.append(("verdict", lambda r: r.get("ppl_verdict", "")))
        if metric.paper_key and any(_finite(r.get(f"paper_{name}")) for r in table.records):
            out.append((f"paper {metric.label}",
                        lambda r, n=name: fixed(r.get(f"paper_{n}"), 2)))
            if name == "ppl":
                out.append(("paper Δ%", lambda r: "" if r["base"]
                            else fixed(r.get("paper_ppl_effect_pct"), 1, sign=True)))
                out.append(("vs paper", agreement))
    out.append(("FLOPs/run", lambda r: scientific(r["flops_per_run"])))
    out.append(("FLOPs (row)", lambda r: scientific(r["flops_total"])))
    out.append(("wall s/run", lambda r: fixed(r["wall_seconds_per_run"], 1)))
    out.append(("core-h (row)", lambda r: significant(r["core_hours_total"])))
    return out


def cells(table):
    """Header and the displayed text of every cell, as Markdown and LaTeX show them."""
    spec = columns(table)
    return [h for h, _ in spec], [[cell(r) for _, cell in spec] for r in table.records]


def notes(table):
    return table.method + [""] + table.trend + ([""] + table.incomplete
                                               if table.incomplete else [])


def markdown(table):
    header, rows = cells(table)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    if table.incomplete:
        lines.append("")
        lines.append("† rows with runs that are not completed (listed below); their means use "
                     "the completed runs only.")
    if any(r["converged"] < r["completed"] for r in table.records):
        lines.append("")
        lines.append("‡ rows with runs that neither converged nor ran a fixed budget to its end "
                     "(statuses below and in the runs table): a run stopped while improving "
                     "measures how fast a model learns, not how good it gets; a row with a run "
                     "that failed to learn is shown as failed and not compared.")
    lines.append("")
    for line in notes(table):  # one paragraph per note; bullets stay a list
        lines.append(line)
        if line and not line.lstrip().startswith("- "):
            lines.append("")
    return "\n".join(lines) + "\n"


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "±": r"$\pm$", "Δ": r"$\Delta$", "−": "$-$",
                "×": r"$\times$", "†": r"$^\dagger$", "‡": r"$^\ddagger$", "<": r"$<$",
                ">": r"$>$", "–": "--"}


def tex_escape(text):
    return "".join(_TEX_ESCAPES.get(char, char) for char in str(text))


def latex(table):
    header, rows = cells(table)
    numeric = ["l"] * 2 + ["l"] * len(table.settings) + ["r"] * (len(header) - 2 -
                                                                 len(table.settings))
    lines = [r"% attnlab report: needs \usepackage{booktabs}",
             r"\begin{table}[t]", r"\centering", r"\small",
             r"\begin{tabular}{" + "".join(numeric) + "}", r"\toprule",
             " & ".join(tex_escape(h) for h in header) + r" \\", r"\midrule"]
    previous = None
    for record, row in zip(table.records, rows):
        if previous is not None and record["group"] != previous:
            lines.append(r"\midrule")
        previous = record["group"]
        lines.append(" & ".join(tex_escape(c) for c in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}",
              r"\caption{" + tex_escape(f"Sweep {table.sweep.name}: ablations vs. base") + "}",
              r"\end{table}", "", r"\begin{footnotesize}"]
    lines += [tex_escape(line) + r"\par" for line in notes(table) if line]
    lines.append(r"\end{footnotesize}")
    return "\n".join(lines) + "\n"


def csv_frame(table):
    frame = pd.DataFrame.from_records(table.records)
    # The reference row is a column only where some row has one other than base.
    if not other_references(table.sweep, table.records):
        frame = frame.drop(columns="versus", errors="ignore")
    return frame.rename(columns={f"set:{k}": k for k in table.settings})


def write_csv(table, path):
    csv_frame(table).to_csv(path, index=False, float_format="%.10g")


RUN_COLUMNS = [("name", "run"), ("run_id", "id"), ("seed", "seed"), ("status", "status"),
               ("params", "params"), ("dev_ppl", "dev PPL"),
               ("dev_accuracy", "dev acc."), ("dev_bleu", "dev BLEU"), ("test_ppl", "test PPL"),
               ("test_bleu", "test BLEU"),
               ("dev_cross_attention", "dev cross-attn."),
               ("stop_reason", "stopped by"), ("dev_evaluations", "dev evals"),
               ("convergence_status", "convergence"), ("tail_fall_nats", "tail fall (nats)"),
               ("git_commit", "commit"),
               ("train_flops", "FLOPs"), ("train_seconds", "wall s"),
               ("world_size", "ranks"), ("threads", "threads/rank"), ("core_hours", "core-h")]


def runs_frame(sweep):
    frame = sweep.runs
    keep = [c for c, _ in RUN_COLUMNS
            if c in frame and (c in ("name", "run_id", "seed", "status") or frame[c].notna().any())]
    return frame[keep].copy()


def runs_markdown(sweep):
    frame = runs_frame(sweep)
    names = dict(RUN_COLUMNS)
    formats = {"params": count, "train_flops": scientific, "core_hours": significant,
               "train_seconds": lambda v: fixed(v, 1), "dev_ppl": lambda v: fixed(v, 3),
               "dev_accuracy": lambda v: fixed(100 * v, 2) + "%" if _finite(v) else "",
               "dev_bleu": lambda v: fixed(v, 2), "test_bleu": lambda v: fixed(v, 2),
               "test_ppl": lambda v: fixed(v, 3),
               "dev_cross_attention": lambda v: fixed(v, 3),
               "world_size": lambda v: count(v), "threads": lambda v: count(v),
               "dev_evaluations": count,
               "tail_fall_nats": lambda v: fixed(v, 4, sign=True)}
    lines = ["| " + " | ".join(names[c] for c in frame.columns) + " |",
             "|" + "|".join("---" for _ in frame.columns) + "|"]
    for _, run in frame.iterrows():
        row = []
        for column in frame.columns:
            value = run[column]
            if column in formats:
                row.append(formats[column](value))
            else:
                row.append("" if isinstance(value, float) and math.isnan(value) else str(value))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
