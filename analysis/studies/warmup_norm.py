"""Study 2, warmup and normalisation (experiments/studies/warmup_norm.yaml): Post-LN against Pre-LN,
with and without warmup, at two peak learning rates; which runs diverge, final losses, and the
spread of the per-layer gradient norms.

divergence(...) -> table(sweep) -> figures(sweep, table, out_dir) -> section(sweep, out_dir, page).
"""

import math
import pathlib

import numpy as np
import pandas as pd

from analysis import plotting
from analysis.errors import AnalysisError
from analysis.studies.common import completed_runs, fmt, markdown_table, plt, relative

# A run diverged when the mean loss of its last DIVERGENCE_TAIL of logged rows is not below its
# first loss (or a value is not finite); the page states the fraction.
DIVERGENCE_TAIL = 0.1


# --- data and table --------------------------------------------------------------------------

def divergence(steps, losses, grad_norms=None, tail=DIVERGENCE_TAIL):
    """Whether a training run diverged, and why.

    A run diverged when (a) a logged loss or gradient norm is not finite (NaN or inf), or (b) the
    mean loss of its last `tail` fraction of logged rows (at least one row) is not below the loss
    of its first logged row: it ends no better than it started. Returns (diverged, reason, step):
    the first non-finite step for (a), the last step for (b), None when it did not diverge."""
    steps = np.asarray(steps)
    losses = np.asarray(losses, dtype=float)
    if len(losses) == 0:
        return False, "no rows", None
    bad = ~np.isfinite(losses)
    if grad_norms is not None:
        bad |= ~np.isfinite(np.asarray(grad_norms, dtype=float))
    if bad.any():
        first = int(np.argmax(bad))
        return True, "non-finite", int(steps[first])
    count = max(1, int(math.ceil(tail * len(losses))))
    final = float(np.mean(losses[-count:]))
    if final >= losses[0]:
        return True, "no progress", int(steps[-1])
    return False, "", None


def table(sweep):
    """One line per run: norm, warmup, peak, first and final loss, divergence verdict, and the
    ratio of the largest to the smallest per-layer gradient norm at step 1 and at the end."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        train = data.train
        diverged, reason, step = divergence(train["step"], train["loss"], train.get("grad_norm"))
        tail = max(1, int(math.ceil(DIVERGENCE_TAIL * len(train))))
        record = {"row": row, "run_id": run_id, "norm": str(data.config["model.norm"]),
                  "warmup": int(data.config["train.lr.warmup"]),
                  "peak": float(data.config["train.lr.peak"]),
                  "first_loss": float(train["loss"].iloc[0]),
                  "final_loss": float(train["loss"].iloc[-tail:].mean()),
                  "max_loss": float(np.nanmax(train["loss"].to_numpy())),
                  "diverged": diverged, "reason": reason, "diverged_at": step}
        layers = data.diagnostics.get("grad_norm")
        if layers is not None and len(layers.steps):
            for name, index in (("step1", 0), ("end", -1)):
                values = layers.values[index]
                record[f"layer_spread_{name}"] = (float(values.max() / values.min())
                                                  if np.all(values > 0) else np.nan)
        records.append(record)
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    return pd.DataFrame.from_records(records)


# --- figures ---------------------------------------------------------------------------------

def figures(sweep, frame, out_dir):
    """Loss curves of every run (a cross marks where a run diverged) and, per run, per-layer
    gradient norms over training. Returns the list of files written."""
    runs = {r.run_id: r for r in frame.itertuples()}
    colors = dict(zip(frame["run_id"], plotting.colors(len(frame))))
    fig, axis = plt.subplots(figsize=(10, 5.5))
    for run_id, record in runs.items():
        train = sweep.data[run_id].train
        verdict = f" DIVERGED ({record.reason})" if record.diverged else ""
        style = "-" if record.norm == "post" else "--"
        axis.plot(train["step"], train["loss"], style, color=colors[run_id], lw=1.3,
                  label=f"{record.norm}-LN, warmup {record.warmup}, peak {record.peak:g}{verdict}")
        if record.diverged:
            at = train["step"] == record.diverged_at
            y = train.loc[at, "loss"].to_numpy()
            y = y[0] if len(y) and np.isfinite(y[0]) else np.nanmax(train["loss"].to_numpy())
            axis.plot([record.diverged_at], [y], "x", color=colors[run_id], ms=14, mew=3)
    axis.set_xlabel("training step")
    axis.set_ylabel("training loss (label-smoothed, nats / target token)")
    axis.set_title("Post-LN (solid) vs Pre-LN (dashed), with and without warmup; x = diverged")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    files = [plotting.save(fig, pathlib.Path(out_dir) / "warmup_norm_loss.png")]

    count = len(runs)
    columns = 4
    lines = int(math.ceil(count / columns))
    fig, axes = plt.subplots(lines, columns, figsize=(4.2 * columns, 3.4 * lines),
                             squeeze=False, sharey=True)
    for index, (run_id, record) in enumerate(runs.items()):
        axis = axes[index // columns][index % columns]
        diagnostic = sweep.data[run_id].diagnostics.get("grad_norm")
        if diagnostic is None:
            axis.axis("off")
            continue
        layer_colors = plotting.colors(len(diagnostic.labels))
        for layer, label in enumerate(diagnostic.labels):
            values = diagnostic.values[:, layer]
            axis.plot(diagnostic.steps, np.where(values > 0, values, np.nan),
                      color=layer_colors[layer], lw=1.1, label=label)
        plotting.log_axis(axis)
        axis.set_title(f"{record.norm}-LN, warmup {record.warmup}, peak {record.peak:g}"
                       + ("\nDIVERGED" if record.diverged else ""), fontsize=9,
                       color="red" if record.diverged else "black")
        axis.grid(alpha=0.3)
        axis.set_xlabel("step")
    for index in range(count, lines * columns):
        axes[index // columns][index % columns].axis("off")
    axes[0][0].set_ylabel("layer gradient L2 norm (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    fig.suptitle("Per-layer gradient norms during training")
    fig.tight_layout()
    files.append(plotting.save(fig, pathlib.Path(out_dir) / "warmup_norm_grad_norms.png"))
    return files


# --- the page's section ----------------------------------------------------------------------

def section(sweep, out_dir, page):
    """The page's section 2 (markdown lines) and the figure files it links."""
    frame = table(sweep)
    files = figures(sweep, frame, out_dir)
    config = sweep.data[frame["run_id"].iloc[0]].config
    tail = f"{DIVERGENCE_TAIL:.0%}"
    lines = ["## 2. Warmup and normalisation", "",
             "Sweep `experiments/studies/warmup_norm.yaml`: Post-LN (the paper) and Pre-LN, "
             f"{int(config['model.encoder_layers'])} + {int(config['model.decoder_layers'])} "
             f"layers of d_model {int(config['model.d_model'])}, inverse_sqrt schedule with "
             f"{' or '.join(str(w) for w in sorted(frame['warmup'].unique(), reverse=True))} "
             "warmup steps (0: the first step at the peak rate), "
             f"peak {' and '.join(f'{p:g}' for p in sorted(frame['peak'].unique()))}, "
             f"{int(sweep.data[frame['run_id'].iloc[0]].train['step'].max())} steps.", "",
             f"**Divergence** (`{__name__}.divergence`): a run diverged if a logged "
             "training loss or gradient norm is not finite, or if the mean loss of its last "
             f"{tail} of logged steps is not below the loss of its first logged step.", ""]
    lines += [f"![warmup_norm loss]({relative(files[0], page)})", "",
              f"![warmup_norm grad norms]({relative(files[1], page)})", ""]
    diverged = frame[frame["diverged"]]
    describe = (lambda r: f"{r['norm']}-LN, warmup {r['warmup']}, peak {r['peak']:g}")
    if diverged.empty:
        lines.append("No run diverged by this definition.")
    else:
        lines.append("Diverged: " + "; ".join(
            f"{describe(r)} ({r['reason']} at step {r['diverged_at']})"
            for r in diverged.to_dict("records")) + ".")
    best = frame.sort_values("final_loss").iloc[0]
    lines += ["", f"Lowest final loss: {describe(best)} ({best['final_loss']:.3f}).", ""]
    by_norm = frame.groupby("norm")["final_loss"]
    if len(by_norm) == 2:
        low, high = by_norm.min(), by_norm.max()
        lines.append("Final loss by normalisation: " + ", ".join(
            f"{norm}-LN {fmt(low[norm])} to {fmt(high[norm])}" for norm in low.index) + ".")
        for worse, better in (("post", "pre"), ("pre", "post")):
            if {worse, better} <= set(low.index) and low[worse] > high[better]:
                lines.append(f"Every {worse}-LN run, with or without warmup and at either peak, "
                             f"ends above every {better}-LN run.")
        lines.append("")
    if "layer_spread_end" in frame:
        spread = frame.dropna(subset=["layer_spread_end"]).sort_values("layer_spread_end")
        if not spread.empty:
            lines += ["Ratio of the largest to the smallest per-layer gradient norm at the last "
                      "step (a layer whose gradient collapses drives it up): "
                      + "; ".join(f"{describe(r)}: {fmt(r['layer_spread_end'])}"
                                  for r in spread.iloc[::-1].to_dict("records"))
                      + f". At step 1 it is {fmt(spread['layer_spread_step1'].min())} to "
                      f"{fmt(spread['layer_spread_step1'].max())} in every run.", ""]
    lines += markdown_table(frame, [
        ("norm", "norm", str), ("warmup", "warmup", str), ("peak", "peak lr", fmt),
        ("first_loss", "first loss", fmt), ("final_loss", f"final loss (last {tail})", fmt),
        ("max_loss", "max loss", fmt), ("diverged", "diverged", lambda v: "yes" if v else "no"),
        ("reason", "why", str),
        ("layer_spread_step1", "max/min layer grad norm, step 1", fmt),
        ("layer_spread_end", "same, last step", fmt)])
    return lines, files
