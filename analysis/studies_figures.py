"""Figures of the seed-note studies (PNG), one function per study, from the tables of
analysis/studies_data.py. Each returns the list of files it wrote.
"""

import math
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from analysis.figures import STACK_TITLES, _colors, _log_axis, _save  # noqa: E402
from analysis.runfile import STACKS  # noqa: E402

SCALE_STYLE = {"rsqrt_dk": ("tab:blue", "1/sqrt(d_k) (paper)"), "none": ("tab:red", "no scale")}


def _log2_x(axis):
    axis.set_xscale("log", base=2)
    axis.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))


def sqrt_dk_figure(table, out_dir):
    """Logit variance, entropy and query/key gradient norm vs. d_k; colour = scale, solid = at
    initialisation, dashed = after training."""
    figure, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    panels = [("logit_variance", "attention-logit variance\n(mean over blocks and heads)", True),
              ("entropy", "attention entropy (nats, mean over query rows)", False),
              ("qk_grad_norm", "gradient norm of W_Q, W_K (+ biases)\n(RMS over blocks)", True)]
    for axis, (column, label, log) in zip(axes, panels):
        for scale, part in table.groupby("scale"):
            color, name = SCALE_STYLE.get(scale, ("tab:gray", scale))
            for moment, style in (("init", "o-"), ("trained", "s--")):
                points = part[part["moment"] == moment].sort_values("d_k")
                if points.empty:
                    continue
                where = ("initialisation" if moment == "init"
                         else f"step {int(points['attention_step'].max())}")
                axis.plot(points["d_k"], points[column], style, color=color,
                          label=f"{name}, {where}")
        scaled = table[(table["scale"] == "rsqrt_dk") & (table["moment"] == "init")]
        if column == "logit_variance" and not scaled.empty and (table["scale"] == "none").any():
            scaled = scaled.sort_values("d_k")
            axis.plot(scaled["d_k"], scaled["d_k"] * scaled["logit_variance"], ":", color="k",
                      lw=1, label="d_k x scaled variance at initialisation (the same logits "
                      "without 1/sqrt(d_k))")
        _log2_x(axis)
        if log:
            _log_axis(axis)
        axis.set_xlabel("d_k (h x d_k = 128 throughout)")
        axis.set_ylabel(label)
        axis.grid(alpha=0.3)
    axes[1].set_title("entropy at initialisation: first dev batch; gradients: step 1", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, bbox_to_anchor=(0.5, -0.12))
    figure.suptitle("Why sqrt(d_k): attention logits, entropy and the gradient through the softmax")
    figure.tight_layout()
    return [_save(figure, pathlib.Path(out_dir) / "sqrt_dk.png")]


def warmup_figures(sweep, table, out_dir):
    """Loss curves of every run (a cross marks where a run diverged) and, per run, per-layer
    gradient norms over training."""
    runs = {r.run_id: r for r in table.itertuples()}
    colors = dict(zip(table["run_id"], _colors(len(table))))
    figure, axis = plt.subplots(figsize=(10, 5.5))
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
    figure.tight_layout()
    files = [_save(figure, pathlib.Path(out_dir) / "warmup_norm_loss.png")]

    count = len(runs)
    columns = 4
    lines = int(math.ceil(count / columns))
    figure, axes = plt.subplots(lines, columns, figsize=(4.2 * columns, 3.4 * lines),
                                squeeze=False, sharey=True)
    for index, (run_id, record) in enumerate(runs.items()):
        axis = axes[index // columns][index % columns]
        diagnostic = sweep.data[run_id].diagnostics.get("grad_norm")
        if diagnostic is None:
            axis.axis("off")
            continue
        layer_colors = _colors(len(diagnostic.labels))
        for layer, label in enumerate(diagnostic.labels):
            values = diagnostic.values[:, layer]
            axis.plot(diagnostic.steps, np.where(values > 0, values, np.nan),
                      color=layer_colors[layer], lw=1.1, label=label)
        _log_axis(axis)
        axis.set_title(f"{record.norm}-LN, warmup {record.warmup}, peak {record.peak:g}"
                       + ("\nDIVERGED" if record.diverged else ""), fontsize=9,
                       color="red" if record.diverged else "black")
        axis.grid(alpha=0.3)
        axis.set_xlabel("step")
    for index in range(count, lines * columns):
        axes[index // columns][index % columns].axis("off")
    axes[0][0].set_ylabel("layer gradient L2 norm (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    figure.suptitle("Per-layer gradient norms during training")
    figure.tight_layout()
    files.append(_save(figure, pathlib.Path(out_dir) / "warmup_norm_grad_norms.png"))
    return files


def positions_figure(buckets, changes, training_length, unit, out_dir, perplexity=None):
    """Left: test BLEU per source-length bucket, one bar per positions kind; middle: perplexity
    per bucket; right: how much each learned position row moved between the two kept
    checkpoints (encoder and decoder)."""
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(21, 5))
    first = buckets[list(buckets)[0]]
    for index, (kind, values) in enumerate((perplexity or {}).items()):
        middle.plot(range(len(values)), values, "o-", label=kind)
    middle.set_xticks(range(len(first)), list(first["label"]))
    middle.axvspan(-0.4, 0.4, color="grey", alpha=0.15, label="lengths seen in training")
    middle.set_xlabel(f"source length ({unit}) of the test sentence")
    middle.set_ylabel("perplexity per target piece (teacher-forced)")
    middle.set_title("Perplexity per source-length bucket")
    middle.grid(alpha=0.3)
    middle.legend(title="positions")
    kinds = list(buckets)
    width = 0.8 / max(len(kinds), 1)
    for index, kind in enumerate(kinds):
        frame = buckets[kind]
        x = np.arange(len(frame)) + (index - (len(kinds) - 1) / 2) * width
        left.bar(x, frame["bleu"], width, label=kind)
    first = buckets[kinds[0]]
    left.set_xticks(range(len(first)),
                    [f"{label}\n(n={n})" for label, n in zip(first["label"], first["sentences"])])
    left.set_xlabel(f"source length ({unit}) of the test sentence")
    left.set_ylabel("test BLEU of the bucket (greedy)")
    left.set_title("BLEU per source-length bucket")
    left.grid(alpha=0.3, axis="y")
    left.legend(title="positions")
    if changes is not None:
        for side, color in (("encoder", "tab:blue"), ("decoder", "tab:orange")):
            values = changes[f"{side}_change"]
            right.plot(np.arange(len(values)), values, color=color, lw=1.3,
                       label=f"{side}: |row(step {changes['last_step']}) - "
                             f"row(step {changes['first_step']})|")
            right.plot(np.arange(len(values)), changes[f"{side}_norm"], ":", color=color, lw=1,
                       label=f"{side}: |row(step {changes['last_step']})|")
        right.axvline(training_length - 0.5, color="k", ls="--", lw=1,
                      label=f"data.max_length = {training_length} (positions 0..."
                            f"{training_length - 1} occur in training)")
        right.set_xlabel("position (row of the learned table)")
        right.set_ylabel("L2 norm")
        right.set_title("Learned position rows: change between the kept checkpoints")
        right.grid(alpha=0.3)
        right.legend(fontsize=8)
    else:
        right.axis("off")
    figure.tight_layout()
    return [_save(figure, pathlib.Path(out_dir) / "positions_length.png")]


def heads_figures(sweep, table, out_dir, piece_names=None):
    """Per-head entropy at initialisation and after training, per stack and run; and the probe
    sentence's attention (last layer, each stack) of every run side by side."""
    rows = list(dict.fromkeys(table["row"]))
    figure, axes = plt.subplots(1, 3, figsize=(16, 4.8), sharey=True)
    colors = dict(zip(rows, _colors(len(rows))))
    for axis, stack in zip(axes, STACKS):
        part = table[table["stack"] == stack]
        blocks = list(dict.fromkeys(part["block"]))
        for position, row in enumerate(rows):
            for moment, marker in (("init", "o"), ("trained", "s")):
                points = part[(part["row"] == row) & (part["moment"] == moment)]
                heads = max(int(points["heads"].max()), 1) if len(points) else 1
                for block_index, block in enumerate(blocks):
                    values = points[points["block"] == block].sort_values("head")["entropy"]
                    spread = (np.arange(len(values)) / max(heads - 1, 1) - 0.5) * 0.25
                    x = block_index + (position - (len(rows) - 1) / 2) * 0.3 + spread
                    axis.scatter(x, values, s=14, marker=marker, color=colors[row],
                                 alpha=0.35 if moment == "init" else 1.0,
                                 label=f"{row}, {'initialisation' if moment == 'init' else 'trained'}"
                                 if block_index == 0 else None)
        axis.set_xticks(range(len(blocks)), [b.split(".")[-1] for b in blocks])
        axis.set_xlabel("layer (one point per head)")
        axis.set_title(STACK_TITLES[stack], fontsize=10)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("attention entropy (nats), first dev batch")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5))
    figure.suptitle("Per-head attention entropy: single head vs several heads")
    figure.tight_layout()
    files = [_save(figure, pathlib.Path(out_dir) / "heads_entropy.png")]

    for stack in STACKS:
        probes = []
        for row in rows:
            run_ids = sweep.completed(row)
            attention = sweep.data[run_ids[0]].attention if run_ids else {}
            if attention:
                probes.append((row, attention[sorted(attention)[0]]))
        if not probes:
            continue
        heads = max(p.maps[stack][-1].shape[0] for _, p in probes)
        shown = min(heads, 8)
        figure, axes = plt.subplots(len(probes), shown, squeeze=False,
                                    figsize=(2.6 * shown + 1.5, 2.7 * len(probes) + 0.8))
        for line, (row, probe) in enumerate(probes):
            weights = probe.maps[stack][-1]
            queries = probe.source_tokens if stack == "encoder_self" else probe.target_tokens
            keys = probe.target_tokens if stack == "decoder_self" else probe.source_tokens
            if piece_names:
                queries, keys = piece_names(queries), piece_names(keys)
            for head in range(shown):
                axis = axes[line][head]
                if head >= weights.shape[0]:
                    axis.axis("off")
                    continue
                # Colour per panel from 0 to the panel's largest weight: weakly trained heads
                # stay near uniform, which a shared 0..1 scale would paint in one colour.
                peak = float(weights[head].max())
                axis.imshow(weights[head], vmin=0, vmax=peak, cmap="viridis", aspect="auto",
                            interpolation="nearest")
                axis.set_title(f"{row}, head {head} (max {peak:.2f})", fontsize=8)
                axis.set_xticks(range(len(keys)), keys, fontsize=6, rotation=90)
                axis.set_yticks(range(len(queries)), queries if head == 0 else [], fontsize=6)
        layer = len(probes[0][1].maps[stack]) - 1
        figure.suptitle(f"Probe sentence, {STACK_TITLES[stack]}, layer {layer} (last); colour "
                        "0 (dark) to the panel's max (yellow)"
                        + (f"; first {shown} of {heads} heads" if shown < heads else ""))
        files.append(_save(figure, pathlib.Path(out_dir) / f"heads_probe_{stack}.png"))
    return files
