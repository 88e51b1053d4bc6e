"""Figures of a sweep (PNG): learning curves, attention heat maps of the probe sentence, per-head
attention entropy, per-layer gradient norms and attention-logit variance vs. d_k.

Every function returns the list of files it wrote and a note when the data is absent, so the
report says what was skipped and why.
"""

import dataclasses
import math
import pathlib

import matplotlib.ticker
import numpy as np

from analysis import plotting
from analysis.plotting import plt
from analysis.runfile import STACKS
from analysis.source_attention import dev_cross_attention

STACK_TITLES = {"encoder_self": "encoder self-attention", "decoder_self":
                "decoder self-attention (causal)", "decoder_cross": "decoder-encoder attention"}


def _safe(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _band(frame, x_column, y_column):
    """Per step: x (mean over seeds), mean, min and max of y over seeds."""
    grouped = frame.groupby("step")
    x = grouped[x_column].mean() if x_column != "step" else grouped["step"].first()
    return x.to_numpy(), grouped[y_column].mean().to_numpy(), \
        grouped[y_column].min().to_numpy(), grouped[y_column].max().to_numpy()


def has_blocks(sweep):
    """Whether the rows form blocks besides the base row's (block_curves draws them)."""
    return any(row.key != sweep.base and row.group for row in sweep.rows)


def learning_curves(sweep, out_dir):
    """Training NLL (log axis) and, when the sweep has no blocks for block_curves to draw, dev
    PPL, against target tokens seen, one line per row, band = seed range. Steps are not drawn
    beside tokens (the same curves stretched by the batch size), and a sweep with blocks shows
    its dev PPL per block only, so no panel repeats another."""
    train = sweep.series("train")
    evaluation = sweep.series("eval")
    completed = set(sweep.completed_runs()["run_id"])
    if train.empty and evaluation.empty:
        return [], "learning curves: no run has logged a training or evaluation row yet."
    # NLL, not the training loss: rows with other label smoothing have losses on other scales.
    train_column = "nll" if "nll" in train else "loss"
    train_label = ("training NLL (nats / target token, without label smoothing; log scale)"
                   if train_column == "nll" else "training loss (nats / target token; log scale)")
    panels = [(train, train_column, train_label)]
    if not has_blocks(sweep):
        panels.append((evaluation, "ppl", "dev perplexity (per target token, log scale)"))
    figure, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    rows = [r.key for r in sweep.rows]
    colors = dict(zip(rows, plotting.colors(len(rows))))
    styles = dict(zip(rows, plotting.styles(len(rows))))
    for axis, (frame, column, label) in zip(axes[0], panels):
        if frame.empty or column not in frame or "tokens" not in frame:
            axis.text(0.5, 0.5, f"no {column} logged", ha="center", transform=axis.transAxes)
            continue
        for row in rows:
            part = frame[frame["row"] == row]
            if part.empty:
                continue
            x, mean, low, high = _band(part, "tokens", column)
            seeds = part["run_id"].nunique()
            partial = "" if set(part["run_id"]) <= completed else ", incomplete"
            axis.plot(x, mean, styles[row], color=colors[row], lw=1.6,
                      label=f"{row} (n={seeds}{partial})")
            if seeds > 1:
                axis.fill_between(x, low, high, color=colors[row], alpha=0.2, lw=0)
        axis.set_xlabel("training target tokens seen (summed over ranks)")
        axis.set_ylabel(label)
        plotting.log_axis(axis)
        axis.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    if not handles and len(panels) > 1:
        handles, labels = axes[0][1].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5),
                  title="row (seeds; band = min..max)")
    figure.suptitle(f"Sweep {sweep.name}: learning curves (line = mean over seeds)")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "learning_curves.png")], ""


def seed_effects(sweep, out_dir):
    """Per row, each completed seed's dev PPL as a dot, in % against base's geometric mean (the
    unit of the table's Δ%), with the paper's effect in the same unit as a marker: the spread of
    the seeds, the size of the effect and the paper's claim on one axis. Rows that failed to
    learn are drawn as crosses and named."""
    index = sweep.runs.set_index("run_id")
    if "dev_ppl" not in index:
        return [], "seed effects: no run has a dev PPL."
    base_values = [float(index.at[r, "dev_ppl"]) for r in sweep.completed(sweep.base)]
    base_values = [v for v in base_values if np.isfinite(v) and v > 0]
    if not base_values:
        return [], "seed effects: the base row has no completed run with a dev PPL."
    reference = math.exp(np.mean(np.log(base_values)))
    paper_base = sweep.row(sweep.base).paper.get("ppl", math.nan)
    figure, axis = plt.subplots(figsize=(max(6.0, 0.55 * len(sweep.rows) + 2), 5.0))
    labels, paper_drawn, failed_drawn = [], False, False
    for position, row in enumerate(sweep.rows):
        labels.append(row.key)
        failed = sweep.failed(row.key)
        for run_id in sweep.completed(row.key):
            value = float(index.at[run_id, "dev_ppl"])
            if not np.isfinite(value):
                continue
            effect = 100.0 * (value / reference - 1.0)
            if run_id in failed:
                axis.plot(position, effect, "x", color="tab:red", ms=7,
                          label="" if failed_drawn else "seed that failed to learn")
                failed_drawn = True
            else:
                axis.plot(position, effect, "o", color="tab:blue", ms=5, alpha=0.8)
        paper = row.paper.get("ppl", math.nan)
        if row.key != sweep.base and math.isfinite(paper) and math.isfinite(paper_base):
            axis.plot(position, 100.0 * (paper / paper_base - 1.0), "D", mfc="none",
                      color="black", ms=8, label="" if paper_drawn else "paper's effect")
            paper_drawn = True
    axis.axhline(0.0, color="grey", lw=1)
    axis.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=8)
    axis.set_ylabel(f"dev PPL vs {sweep.base}'s geometric mean ({reference:.2f}), %")
    axis.grid(alpha=0.3, axis="y")
    axis.plot([], [], "o", color="tab:blue", label="one seed")
    axis.legend(fontsize=8)
    axis.set_title(f"Sweep {sweep.name}: every seed against base, and the paper's effect")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "seed_effects.png")], ""


def block_curves(sweep, out_dir):
    """Dev perplexity vs. step with one panel per block of the table (the sweep's row groups, as
    Table 3's A to E), each block's rows against the base row: a large sweep's one-panel figure
    has too many lines to read. Written when the rows are grouped into at least one block besides
    the base row's."""
    evaluation = sweep.series("eval")
    base = sweep.base
    blocks = {}
    for row in sweep.rows:
        if row.key != base and row.group:
            blocks.setdefault(row.group, []).append(row.key)
    if not blocks or evaluation.empty or "ppl" not in evaluation:
        return [], ""
    columns = min(3, len(blocks))
    lines = (len(blocks) + columns - 1) // columns
    figure, axes = plt.subplots(lines, columns, figsize=(5.2 * columns, 4.2 * lines),
                                squeeze=False, sharey=True)
    for index, (group, keys) in enumerate(blocks.items()):
        axis = axes[index // columns][index % columns]
        colors = dict(zip(keys, plotting.colors(len(keys))))
        for key in [base] + keys:
            part = evaluation[evaluation["row"] == key]
            if part.empty:
                continue
            x, mean, low, high = _band(part, "step", "ppl")
            seeds = part["run_id"].nunique()
            if key == base:
                axis.plot(x, mean, "--", color="black", lw=1.4, label=f"{key} (n={seeds})")
                continue
            axis.plot(x, mean, "-", color=colors[key], lw=1.6, label=f"{key} (n={seeds})")
            if seeds > 1:
                axis.fill_between(x, low, high, color=colors[key], alpha=0.2, lw=0)
        axis.set_title(f"block {group}")
        axis.set_xlabel("training step")
        plotting.log_axis(axis)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    for index in range(len(blocks), lines * columns):
        axes[index // columns][index % columns].axis("off")
    for line in axes:
        line[0].set_ylabel("dev perplexity (log scale)")
    figure.suptitle(f"Sweep {sweep.name}: dev perplexity per block, against {base} (dashed; "
                    f"line = mean over seeds, band = min..max)")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "learning_curves_by_block.png")], ""


def _first_run_with_attention(sweep, row_key):
    for run_id in sweep.completed(row_key):
        if sweep.data[run_id].attention:
            return run_id
    return None


@dataclasses.dataclass
class ProbeMaps:
    """One attention stack of the probe sentence of a row's first completed run with a probe."""
    row_key: str
    run_id: str
    probe_name: str
    stack: str
    layers: list         # per layer, (heads, queries, keys) weights
    query_tokens: list
    key_tokens: list


def probe_maps(sweep, rows):
    """ProbeMaps of each chosen row and stack that has maps, in row and STACKS order: what the
    PNG heat maps and the report page's maps both draw."""
    for row_key in rows:
        run_id = _first_run_with_attention(sweep, row_key)
        if run_id is None:
            continue
        probes = sweep.data[run_id].attention
        probe_name = sorted(probes)[0]
        probe = probes[probe_name]
        for stack in STACKS:
            layers = probe.maps.get(stack, [])
            if not layers:
                continue
            queries = probe.source_tokens if stack == "encoder_self" else probe.target_tokens
            keys = probe.target_tokens if stack == "decoder_self" else probe.source_tokens
            yield ProbeMaps(row_key, run_id, probe_name, stack, layers, queries, keys)


def draw_head_map(axis, weights, colorbar=False):
    """One head's attention map (rows queries, columns keys) on its own colour scale, 0 to its
    largest weight: weakly trained heads stay near uniform, which a shared 0..1 scale would
    paint in one colour; with `colorbar`, the scale is drawn beside it. Returns that largest
    weight."""
    peak = float(weights.max())
    image = axis.imshow(weights, vmin=0.0, vmax=peak if peak > 0 else 1.0, cmap="viridis",
                        aspect="auto", interpolation="nearest")
    if colorbar:
        bar = axis.figure.colorbar(image, ax=axis, fraction=0.046, pad=0.02)
        bar.ax.tick_params(labelsize=6)
        bar.set_label("attention weight", fontsize=7)
    return peak


def attention_maps(sweep, out_dir, rows):
    """One PNG per (row, stack): a layers x heads grid of the probe sentence's attention."""
    written = []
    for maps in probe_maps(sweep, rows):
        row_key, run_id, probe_name, stack = maps.row_key, maps.run_id, maps.probe_name, maps.stack
        layers, queries, keys = maps.layers, maps.query_tokens, maps.key_tokens
        heads = max(m.shape[0] for m in layers)
        size = 2.2 + 0.12 * max(len(keys), 1)
        figure, axes = plt.subplots(len(layers), heads, squeeze=False,
                                    figsize=(size * heads + 1, size * len(layers) + 0.6))
        for layer, weights in enumerate(layers):
            for head in range(heads):
                axis = axes[layer][head]
                if head >= weights.shape[0]:
                    axis.axis("off")
                    continue
                peak = draw_head_map(axis, weights[head], colorbar=True)
                axis.set_title(f"layer {layer}, head {head} (max {peak:.2f})", fontsize=9)
                if len(keys) == weights.shape[2] and len(keys) <= 40:
                    axis.set_xticks(range(len(keys)), keys, fontsize=7, rotation=90)
                if len(queries) == weights.shape[1] and len(queries) <= 40:
                    axis.set_yticks(range(len(queries)), queries, fontsize=7)
                if layer == len(layers) - 1:
                    axis.set_xlabel("key position (token)")
                if head == 0:
                    axis.set_ylabel("query position (token)")
        figure.suptitle(f"{STACK_TITLES[stack]}, {probe_name}: row {row_key}, "
                        f"seed {sweep.data[run_id].attrs.get('seed')} (each map coloured "
                        "from 0 to its own maximum, its colour bar beside it)")
        path = pathlib.Path(out_dir) / f"attention_{_safe(row_key)}_{stack}.png"
        written.append(plotting.save(figure, path))
    note = "" if written or not rows else ("attention heat maps: no completed run of the "
                                           "chosen rows stored a probe.")
    return written, note


def entropy(weights):
    """Mean entropy (nats) of each head's attention rows: weights (H,rows,cols) -> (H,)."""
    p = np.clip(weights, 1e-12, 1.0)
    return -(weights * np.log(p)).sum(axis=-1).mean(axis=-1)


def relative_entropy(weights):
    """Mean over heads and query rows of each row's entropy divided by log(keys): 1 = uniform
    attention, 0 = every query attends to one key. weights: (H, rows, cols)."""
    keys = weights.shape[-1]
    if keys < 2:
        return float("nan")
    return float(entropy(weights).mean() / math.log(keys))


def _probe_cross_attention(data):
    """The first probe's decoder-encoder attention entropy relative to uniform (mean over layers,
    heads and target positions), or None without a probe."""
    if not data.attention:
        return None
    layers = data.attention[sorted(data.attention)[0]].maps.get("decoder_cross", [])
    return float(np.mean([relative_entropy(w) for w in layers])) if layers else None


def cross_attention_concentration(sweep):
    """Lines for the report: per row, decoder-encoder attention entropy relative to uniform (mean
    over layers, heads and target positions, then over the completed seeds that measured it),
    over the whole dev set where the runs recorded it and on the probe sentence."""
    what = ("entropy relative to uniform (1 = uniform over the source, 0 = one source token per "
            "target token; mean over layers, heads and target positions):")
    blocks = [(dev_cross_attention, "Decoder-encoder attention over the whole dev set "
               "(teacher forcing, the parameters of the final evaluation), " + what),
              (_probe_cross_attention, "Decoder-encoder attention of the probe sentence, " + what)]
    lines = []
    for measure, heading in blocks:
        rows = []
        for row in sweep.rows:
            values = [value for value in (measure(sweep.data[run_id])
                                          for run_id in sweep.completed(row.key))
                      if value is not None]
            if values:
                rows.append(f"- {row.key}: {np.mean(values):.3f} over {len(values)} seed(s)")
        if rows:
            lines += ([""] if lines else []) + [heading, ""] + rows
    return lines


def attention_entropy(sweep, out_dir):
    """Per-head entropy of the probe's attention, per stack: one column of points per row."""
    rows = [r.key for r in sweep.rows]
    points = {stack: [] for stack in STACKS}
    for position, row_key in enumerate(rows):
        run_id = _first_run_with_attention(sweep, row_key)
        if run_id is None:
            continue
        probe = sweep.data[run_id].attention[sorted(sweep.data[run_id].attention)[0]]
        for stack in STACKS:
            for layer, weights in enumerate(probe.maps.get(stack, [])):
                for head, value in enumerate(entropy(weights)):
                    points[stack].append((position, layer, head, value, weights.shape[-1]))
    if not any(points.values()):
        return [], "attention entropy: no completed run stored a probe."
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.8), sharey=True)
    max_layers = max(p[1] for values in points.values() for p in values) + 1
    colors = plotting.colors(max_layers)
    for axis, stack in zip(axes, STACKS):
        heads = {}
        for position, _, head, _, _ in points[stack]:
            heads[position] = max(heads.get(position, 0), head + 1)
        for position, layer, head, value, keys in points[stack]:
            # Heads spread side by side over +-0.3 around the row's position.
            offset = 0.0 if heads[position] == 1 else 0.6 * (head / (heads[position] - 1) - 0.5)
            axis.scatter(position + offset, value, color=colors[layer], s=18,
                         label=f"layer {layer}")
        if points[stack]:
            uniform = math.log(max(p[4] for p in points[stack]))
            axis.axhline(uniform, color="grey", ls="--", lw=1, label="uniform over all keys")
        axis.set_xticks(range(len(rows)), rows, rotation=45, ha="right", fontsize=8)
        axis.set_title(STACK_TITLES[stack], fontsize=10)
        axis.set_xlabel("row (one point per head)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("attention entropy (nats, mean over query positions)")
    handles, labels = axes[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    figure.legend(unique.values(), unique.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5))
    figure.suptitle("Per-head attention entropy of the probe sentence (first completed seed)")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "attention_entropy.png")], ""


def _diagnostic_runs(sweep, metric):
    out = []
    for row in sweep.rows:
        for run_id in sweep.completed(row.key):
            diagnostic = sweep.data[run_id].diagnostics.get(metric)
            if diagnostic is not None and len(diagnostic.steps):
                out.append((row.key, run_id, diagnostic))
    return out


def gradient_norms(sweep, out_dir):
    """Per-layer gradient norms from /diagnostics/grad_norm: first logged step and mean."""
    runs = _diagnostic_runs(sweep, "grad_norm")
    if not runs:
        return [], ("per-layer gradient norms: not recorded (no /diagnostics/grad_norm; set "
                    "log.diagnostics_every > 0 to record them).")
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
    rows = list(dict.fromkeys(r for r, _, _ in runs))
    colors = dict(zip(rows, plotting.colors(len(rows))))
    for axis, (title, reduce) in zip(axes, [("first logged step", lambda v: v[0]),
                                             ("mean over training", lambda v: v.mean(axis=0))]):
        for row in rows:
            series = [reduce(d.values.reshape(len(d.steps), -1)) for r, _, d in runs if r == row]
            series = np.array(series)
            x = np.arange(series.shape[1])
            axis.plot(x, series.mean(axis=0), "o-", color=colors[row], label=row)
            if len(series) > 1:
                axis.fill_between(x, series.min(axis=0), series.max(axis=0), color=colors[row],
                                  alpha=0.2, lw=0)
        labels = next((d.labels for _, _, d in runs if d.labels), [])
        if labels:
            axis.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
        axis.set_xlabel("layer (input side on the left)")
        axis.set_title(title)
        plotting.log_axis(axis)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("gradient L2 norm of the layer's parameters (log scale)")
    axes[1].legend(title="row (band = seed range)", loc="center left",
                   bbox_to_anchor=(1.0, 0.5))
    figure.suptitle("Per-layer gradient norms")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "grad_norms.png")], ""


def diagnostic_entropy(sweep, out_dir):
    """/diagnostics/attention_entropy (attention layers, heads) at the last logged step: one
    point per head, colour per row (first completed seed)."""
    runs = _diagnostic_runs(sweep, "attention_entropy")
    if not runs:
        return [], ("attention entropy during training: not recorded (no /diagnostics/"
                    "attention_entropy in these runs).")
    first = {}
    for row, run_id, diagnostic in runs:
        first.setdefault(row, diagnostic)
    colors = dict(zip(first, plotting.colors(len(first))))
    figure, axis = plt.subplots(figsize=(10, 4.8))
    labels = []
    for index, (row, diagnostic) in enumerate(first.items()):
        last = diagnostic.values[-1].reshape(diagnostic.values.shape[1], -1)  # (layers, heads)
        heads = last.shape[1]
        for layer in range(last.shape[0]):
            offsets = (np.arange(heads) - (heads - 1) / 2) * 0.6 / max(heads, 2)
            axis.scatter(layer + offsets + 0.1 * (index - len(first) / 2) / len(first),
                         last[layer], color=colors[row], s=16,
                         label=f"{row} (step {diagnostic.steps[-1]})" if layer == 0 else None)
        if len(diagnostic.labels) > len(labels):
            labels = diagnostic.labels
    if labels:
        axis.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    axis.set_xlabel("attention layer (one point per head)")
    axis.set_ylabel("attention entropy (nats, mean over query rows)")
    axis.set_title("Per-head attention entropy at the last diagnostics step")
    axis.grid(alpha=0.3)
    axis.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), title="row")
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "attention_entropy_training.png")], ""


LOGIT_VARIANCE_METRICS = ("attention_logit_variance", "logit_variance")


def _d_k(config):
    d_k = int(config.get("model.d_k", 0) or 0)
    if d_k == 0 and config.get("model.heads"):
        d_k = int(config["model.d_model"]) // int(config["model.heads"])
    return d_k


def logit_variance(sweep, out_dir):
    """Attention-logit variance (mean over layers and heads, last logged step) vs. d_k, one
    marker style per attention_scale, with the unit-variance theory (d_k unscaled, 1 scaled)."""
    metric = next((m for m in LOGIT_VARIANCE_METRICS if _diagnostic_runs(sweep, m)), None)
    if metric is None:
        return [], ("attention-logit variance vs. d_k: not recorded (no /diagnostics/"
                    "attention_logit_variance in these runs).")
    points = {}
    for _, run_id, diagnostic in _diagnostic_runs(sweep, metric):
        config = sweep.data[run_id].config
        scale = str(config.get("model.attention_scale", "rsqrt_dk"))
        points.setdefault(scale, []).append((_d_k(config), float(diagnostic.values[-1].mean())))
    figure, axis = plt.subplots(figsize=(7, 5))
    for scale, values in sorted(points.items()):
        values = np.array(values)
        axis.scatter(values[:, 0], values[:, 1], label=f"attention_scale = {scale}", s=30)
    all_d = np.array(sorted({d for values in points.values() for d, _ in values}))
    if len(all_d):
        axis.plot(all_d, all_d, "k--", lw=1, label="unit-variance q, k, unscaled: Var = d_k")
        axis.plot(all_d, np.ones_like(all_d), "k:", lw=1,
                  label="unit-variance q, k, 1/sqrt(d_k): Var = 1")
    axis.set_xscale("log", base=2)
    axis.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    plotting.log_axis(axis)
    axis.set_xlabel("d_k (per-head key width)")
    axis.set_ylabel("attention-logit variance (mean over layers and heads)")
    axis.set_title("Attention-logit variance vs. d_k (last logged step, one point per run)")
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    return [plotting.save(figure, pathlib.Path(out_dir) / "logit_variance.png")], ""


def all_figures(sweep, out_dir, attention_rows):
    """Every figure; returns (files, notes about skipped figures)."""
    files, notes = [], []
    for function in (learning_curves, block_curves, seed_effects,
                     lambda s, o: attention_maps(s, o, attention_rows),
                     attention_entropy, diagnostic_entropy, gradient_norms, logit_variance):
        written, note = function(sweep, out_dir)
        files += written
        if note:
            notes.append(note)
    return files, notes
