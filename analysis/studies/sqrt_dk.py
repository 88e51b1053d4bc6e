"""Study 1, why divide by sqrt(d_k) (experiments/studies/sqrt_dk.yaml): attention-logit variance,
attention entropy and the query/key gradient norm against d_k, with the paper's 1/sqrt(d_k) and
with no scale, at initialisation and after training.

table(sweep) -> claims(table) -> figure(table, out_dir) -> section(sweep, out_dir, page).
"""

import pathlib

import matplotlib.ticker
import numpy as np
import pandas as pd

from analysis import plotting
from analysis.errors import AnalysisError
from analysis.studies.common import completed_runs, fmt, markdown_table, plt, relative

# Two log-log slopes (exponents of d_k) are called clearly different when they differ by more
# than this; the page states it next to each sentence chosen by it.
SLOPE_MARGIN = 0.5

SCALE_STYLE = {"rsqrt_dk": ("tab:blue", "1/sqrt(d_k) (paper)"), "none": ("tab:red", "no scale")}


# --- data and table --------------------------------------------------------------------------

def d_k(config):
    value = int(config.get("model.d_k", 0) or 0)
    return value or int(config["model.d_model"]) // int(config["model.heads"])


def _row_at(diagnostic, step):
    """The row of a diagnostic logged at `step` (None when it was not logged there)."""
    where = np.nonzero(diagnostic.steps == step)[0]
    return None if len(where) == 0 else diagnostic.values[where[0]]


def table(sweep):
    """One line per run and moment ("init" / "trained"): d_k, heads, attention_scale, the mean
    over attention blocks and heads of the logit variance and of the entropy (first dev batch),
    and the root-mean-square over blocks of the query/key gradient norm.

    "init" takes the attention statistics at step 0 and the gradients of step 1 (both at the
    initial parameters); "trained" takes the last step at which the run logged both."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        needed = ("attention_logit_variance", "attention_entropy", "qk_grad_norm")
        missing = [m for m in needed if m not in data.diagnostics]
        if missing:
            raise AnalysisError(f"{data.path}: no /diagnostics/{missing[0]} (the sqrt_dk study "
                                "needs log.diagnostics_every > 0 and a build that records "
                                "qk_grad_norm)")
        variance = data.diagnostics["attention_logit_variance"]
        entropy = data.diagnostics["attention_entropy"]
        gradient = data.diagnostics["qk_grad_norm"]
        common = sorted(set(variance.steps) & set(gradient.steps))
        moments = [("init", 0, 1), ("trained", common[-1], common[-1])] if common else []
        for moment, attention_step, gradient_step in moments:
            v, e, g = (_row_at(variance, attention_step), _row_at(entropy, attention_step),
                       _row_at(gradient, gradient_step))
            if v is None or e is None or g is None:
                raise AnalysisError(f"{data.path}: no diagnostics row at step {attention_step} "
                                    f"/ {gradient_step} for '{moment}'")
            records.append({
                "row": row, "run_id": run_id, "d_k": d_k(data.config),
                "heads": int(data.config["model.heads"]),
                "scale": str(data.config.get("model.attention_scale", "rsqrt_dk")),
                "moment": moment, "attention_step": int(attention_step),
                "gradient_step": int(gradient_step),
                "logit_variance": float(np.mean(v)), "entropy": float(np.mean(e)),
                "qk_grad_norm": float(np.sqrt(np.mean(np.square(g)))),
                "final_dev_ppl": float(data.summary.get("final_dev_ppl", np.nan))})
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run with diagnostics")
    return pd.DataFrame.from_records(records)


def loglog_slope(x, y):
    """Least-squares slope of log(y) against log(x): 1 for y ~ x, 0 for y constant."""
    x, y = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(np.unique(x)) < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def claims(frame):
    """Fitted exponents per scale and moment: {(scale, moment): {metric: slope}}."""
    out = {}
    for (scale, moment), part in frame.groupby(["scale", "moment"]):
        part = part.sort_values("d_k")
        out[(scale, moment)] = {
            "variance_slope": loglog_slope(part["d_k"], part["logit_variance"]),
            "gradient_slope": loglog_slope(part["d_k"], part["qk_grad_norm"]),
            "d_k": part["d_k"].tolist(), "entropy": part["entropy"].tolist(),
            "variance": part["logit_variance"].tolist(),
            "gradient": part["qk_grad_norm"].tolist()}
    return out


# --- figure ----------------------------------------------------------------------------------

def _log2_x(axis):
    axis.set_xscale("log", base=2)
    axis.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))


def figure(frame, out_dir):
    """Logit variance, entropy and query/key gradient norm vs. d_k; colour = scale, solid = at
    initialisation, dashed = after training. Returns the list of files written."""
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    panels = [("logit_variance", "attention-logit variance\n(mean over blocks and heads)", True),
              ("entropy", "attention entropy (nats, mean over query rows)", False),
              ("qk_grad_norm", "gradient norm of W_Q, W_K (+ biases)\n(RMS over blocks)", True)]
    for axis, (column, label, log) in zip(axes, panels):
        for scale, part in frame.groupby("scale"):
            color, name = SCALE_STYLE.get(scale, ("tab:gray", scale))
            for moment, style in (("init", "o-"), ("trained", "s--")):
                points = part[part["moment"] == moment].sort_values("d_k")
                if points.empty:
                    continue
                where = ("initialisation" if moment == "init"
                         else f"step {int(points['attention_step'].max())}")
                axis.plot(points["d_k"], points[column], style, color=color,
                          label=f"{name}, {where}")
        scaled = frame[(frame["scale"] == "rsqrt_dk") & (frame["moment"] == "init")]
        if column == "logit_variance" and not scaled.empty and (frame["scale"] == "none").any():
            scaled = scaled.sort_values("d_k")
            axis.plot(scaled["d_k"], scaled["d_k"] * scaled["logit_variance"], ":", color="k",
                      lw=1, label="d_k x scaled variance at initialisation (the same logits "
                      "without 1/sqrt(d_k))")
        _log2_x(axis)
        if log:
            plotting.log_axis(axis)
        axis.set_xlabel("d_k (h x d_k = 128 throughout)")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    axes[1].set_title("entropy at initialisation: first dev batch; gradients: step 1", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.12))
    fig.suptitle("Why sqrt(d_k): attention logits, entropy and the gradient through the softmax")
    fig.tight_layout()
    return [plotting.save(fig, pathlib.Path(out_dir) / "sqrt_dk.png")]


# --- the page's section ----------------------------------------------------------------------

def section(sweep, out_dir, page):
    """The page's section 1 (markdown lines) and the figure files it links."""
    frame = table(sweep)
    files = figure(frame, out_dir)
    fitted = claims(frame)
    lines = ["## 1. Why divide by sqrt(d_k)", "",
             "Sweep `experiments/studies/sqrt_dk.yaml`: d_k from "
             f"{frame['d_k'].min()} to {frame['d_k'].max()} with h x d_k = 128 (so each q and k "
             "entry has the same initial variance in every row), with the paper's 1/sqrt(d_k) "
             "and with no scale. Logit variance and entropy are measured by the trainer on the "
             "first dev batch (`/diagnostics/attention_logit_variance`, `attention_entropy`, "
             "step 0 = initialisation); the gradient norm is that of the query and key "
             "projections (`/diagnostics/qk_grad_norm`), which reach the loss only through the "
             "softmax, at step 1 (initial parameters) and at the last step.", ""]
    lines += [f"![sqrt_dk]({relative(files[0], page)})", ""]
    for (scale, moment), claim in sorted(fitted.items()):
        lines.append(f"- {scale}, {'initialisation' if moment == 'init' else 'after training'}:"
                     f" logit variance ~ d_k^{claim['variance_slope']:.2f} (log-log slope; 1 "
                     f"means proportional to d_k, 0 independent of it), from "
                     f"{fmt(claim['variance'][0])} at d_k = {claim['d_k'][0]} to "
                     f"{fmt(claim['variance'][-1])} at d_k = {claim['d_k'][-1]}; entropy "
                     f"{fmt(claim['entropy'][0])} nats at d_k = {claim['d_k'][0]} and "
                     f"{fmt(claim['entropy'][-1])} at d_k = {claim['d_k'][-1]}; "
                     f"query/key gradient norm ~ d_k^{claim['gradient_slope']:.2f}.")
    init_none, init_scaled = fitted.get(("none", "init")), fitted.get(("rsqrt_dk", "init"))
    if init_none and init_scaled:
        lines.append("")
        grows = init_none["variance_slope"] - init_scaled["variance_slope"]
        lines.append(
            "At initialisation the unscaled logit variance "
            + ("grows with d_k while the scaled one stays nearly flat" if grows > SLOPE_MARGIN
               else "does not grow much faster with d_k than the scaled one")
            + f" (slopes {init_none['variance_slope']:.2f} vs {init_scaled['variance_slope']:.2f}"
            "; the note's unit-variance argument predicts 1 vs 0; \"grows\" means the unscaled "
            f"slope exceeds the scaled one by more than {SLOPE_MARGIN:g}).")
        lines.append("")
        init = frame[frame["moment"] == "init"].pivot(index="d_k", columns="scale")
        init = init.dropna()
        if not init.empty:
            ratio = init["qk_grad_norm"]["none"] / init["qk_grad_norm"]["rsqrt_dk"]
            entropy_none, entropy_scaled = init["entropy"]["none"], init["entropy"]["rsqrt_dk"]
            lines.append(
                "Unscaled against scaled, same d_k, at initialisation: entropy "
                + ", ".join(f"{fmt(n)} vs {fmt(c)} nats (d_k = {d})" for d, n, c in
                            zip(init.index, entropy_none, entropy_scaled))
                + "; query/key gradient norm ratio (unscaled / scaled) "
                + ", ".join(f"{fmt(r)} (d_k = {d})" for d, r in zip(init.index, ratio)) + ".")
            lines.append("")
            if (ratio > 1).all():
                lines.append(
                    "So over this range the unscaled softmax is sharper (lowest mean entropy "
                    f"{fmt(entropy_none.min())} nats; one-hot rows would give 0) and its "
                    "gradient into W_Q and W_K is larger than with the scale, not vanishing. "
                    "The vanishing-gradient half of the note's argument needs logits wide enough "
                    "to make the softmax nearly one-hot, which these d_k and this initialisation "
                    "do not reach; the sharpening half is measured.")
            elif (np.diff(ratio.to_numpy()) < 0).all():
                lines.append("The unscaled/scaled gradient ratio falls as d_k grows: the "
                             "saturating softmax passes less gradient, as the note argues.")
    trained_none = fitted.get(("none", "trained"))
    trained_scaled = fitted.get(("rsqrt_dk", "trained"))
    if trained_none and trained_scaled:
        gap = trained_none["gradient_slope"] - trained_scaled["gradient_slope"]
        falls = gap < -SLOPE_MARGIN and trained_none["gradient_slope"] < -SLOPE_MARGIN
        lines += ["", "After training the unscaled logits have grown (variance "
                  f"{fmt(trained_none['variance'][0])} at d_k = {trained_none['d_k'][0]} to "
                  f"{fmt(trained_none['variance'][-1])} at d_k = {trained_none['d_k'][-1]}, "
                  f"against {fmt(trained_scaled['variance'][0])} to "
                  f"{fmt(trained_scaled['variance'][-1])} scaled), and the unscaled query/key "
                  "gradient norm "
                  + ("falls with d_k while the scaled one stays nearly flat: the vanishing-"
                     "gradient half of the note's argument shows once training has widened the "
                     "logits" if falls
                     else "does not fall clearly faster with d_k than the scaled one")
                  + f" (slopes {trained_none['gradient_slope']:.2f} vs "
                  f"{trained_scaled['gradient_slope']:.2f}; \"falls\" means an unscaled slope "
                  f"below -{SLOPE_MARGIN:g} and more than {SLOPE_MARGIN:g} below the scaled "
                  "one)."]
    lines += ["", "<details><summary>table</summary>", ""]
    lines += markdown_table(frame.sort_values(["scale", "moment", "d_k"]), [
        ("scale", "scale", str), ("d_k", "d_k", str), ("heads", "h", str),
        ("moment", "moment", str), ("attention_step", "attention step", str),
        ("gradient_step", "gradient step", str), ("logit_variance", "logit var", fmt),
        ("entropy", "entropy (nats)", fmt), ("qk_grad_norm", "W_Q,W_K grad norm", fmt),
        ("final_dev_ppl", "dev PPL (end)", fmt)])
    lines += ["</details>", ""]
    return lines, files
