"""Block A across widths: each number of heads' effect on dev PPL (at constant compute,
h * d_k = d_model) against the width it was measured at, with the paper's effect (d_model 512)
beside it. Table 3's second edition measures block A at d_model 64 against base and at d_model
128 against that width's h = 8 row (experiments/small/table3-budget.yaml, sweep.rows[].versus),
to test whether at d_model 64 the block measures d_k more than heads: if it does, the effects
move towards the paper's as the width grows.

A row belongs to the figure when it changes the number of heads and nothing but the width and
d_k, d_v with it; its effect is the table's Δ% against its reference row (the ratio of
geometric-mean PPLs, with Welch's 95% interval), so every width's h = 8 is 0 by construction.
"""

import math
import pathlib

from analysis.plotting import colors, plt, save

PAPER_D_MODEL = 512
FILE = "heads_across_widths.png"
_WIDTH_AND_HEADS = {"model.heads", "model.d_k", "model.d_v", "model.d_model"}


def _value(sweep, row_key, key):
    """The row's setting `key`: its override, else as the base row's runs were configured (every
    run frame carries its config), as an int."""
    row = sweep.row(row_key)
    if key in row.overrides:
        return int(row.overrides[key])
    return int(sweep.runs.loc[sweep.runs["row"] == sweep.base, key].iloc[0])


def points(table):
    """[(heads, d_model, effect %, low %, high %, paper effect %)] of every row of the figure
    that has an effect (failed rows and rows without two seeds a side have none)."""
    sweep = table.sweep
    out = []
    for record in table.records:
        row = sweep.row(record["row"])
        keys = set(row.overrides)
        if record["base"] or "model.heads" not in keys or not keys <= _WIDTH_AND_HEADS:
            continue
        effect = record.get("ppl_effect_pct", math.nan)
        if not math.isfinite(effect):
            continue
        out.append((_value(sweep, row.key, "model.heads"), _value(sweep, row.key, "model.d_model"),
                    effect, record.get("ppl_effect_low_pct", math.nan),
                    record.get("ppl_effect_high_pct", math.nan),
                    record.get("paper_ppl_effect_pct", math.nan)))
    return sorted(out)


def heads_across_widths(table, out_dir):
    """The figure, when block A has effects at two widths or more; returns (files, note)."""
    measured = points(table)
    widths = sorted({width for _, width, *_ in measured})
    if len(widths) < 2:
        return [], ""
    heads = sorted({h for h, *_ in measured})
    figure, axis = plt.subplots(figsize=(6.4, 4.2))
    for colour, h in zip(colors(len(heads)), heads):
        mine = [p for p in measured if p[0] == h]
        xs = [width for _, width, *_ in mine]
        ys = [effect for _, _, effect, *_ in mine]
        errors = [[effect - low for _, _, effect, low, _, _ in mine],
                  [high - effect for _, _, effect, _, high, _ in mine]]
        axis.errorbar(xs, ys, yerr=errors, color=colour, marker="o", capsize=3,
                      label=f"h = {h}")
        paper = [p[5] for p in mine if math.isfinite(p[5])]
        if paper:
            axis.plot([xs[-1], PAPER_D_MODEL], [ys[-1], paper[0]], color=colour, linestyle=":",
                      linewidth=0.8)
            axis.plot([PAPER_D_MODEL], [paper[0]], color=colour, marker="s")
    axis.axhline(0.0, color="0.4", linewidth=0.8)
    axis.set_xscale("log", base=2)
    axis.set_xticks(widths + [PAPER_D_MODEL])
    axis.set_xticklabels([str(w) for w in widths] + [f"{PAPER_D_MODEL}\n(paper)"])
    axis.set_xlabel("d_model (h * d_k = d_model; h = 8 is the reference at each width)")
    axis.set_ylabel("dev PPL vs h = 8 (%), Welch 95% interval")
    axis.set_title("Block A: heads at constant compute, across widths")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    return [save(figure, pathlib.Path(out_dir) / FILE)], ""
