"""Study 4, heads (experiments/studies/heads.yaml): one head against several at h x d_k =
d_model; per-head attention entropy before and after training, and the probe sentence's
attention maps.

table(sweep) -> summary(sweep, table) -> figures(sweep, table, out_dir, piece_names) ->
section(sweep, out_dir, page).
"""

import pathlib

import numpy as np
import pandas as pd

from analysis import plotting
from analysis.errors import AnalysisError
from analysis.figures import STACK_TITLES, draw_head_map
from analysis.runfile import STACKS
from analysis.studies.common import (completed_runs, fmt, markdown_table, piece_namer, plt,
                                     relative)

PROBE_HEADS = 8  # heads drawn per run in the probe figures (the title says when more exist)


# --- data and tables -------------------------------------------------------------------------

def table(sweep):
    """One line per run, attention block and head: entropy of the first dev batch's attention
    (/diagnostics/attention_entropy) at step 0 and at the last logged step."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        diagnostic = data.diagnostics.get("attention_entropy")
        if diagnostic is None or not len(diagnostic.steps):
            raise AnalysisError(f"{data.path}: no /diagnostics/attention_entropy")
        for moment, index in (("init", 0), ("trained", -1)):
            values = diagnostic.values[index]
            for block, label in enumerate(diagnostic.labels):
                for head in range(values.shape[1]):
                    records.append({"row": row, "run_id": run_id,
                                    "heads": int(data.config["model.heads"]),
                                    "moment": moment, "step": int(diagnostic.steps[index]),
                                    "block": label, "stack": label.split(".")[0],
                                    "head": head, "entropy": float(values[block, head])})
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    return pd.DataFrame.from_records(records)


def summary(sweep, frame):
    """One line per row after training, by number of heads: mean, lowest and highest head
    entropy, the largest max - min across the heads of one layer (`spread`) and the final dev
    perplexity."""
    trained = frame[frame["moment"] == "trained"]
    spread = (trained.groupby(["row", "heads", "block"])["entropy"]
              .agg(lambda v: v.max() - v.min()).groupby(["row", "heads"]).max().reset_index())
    out = trained.groupby(["row", "heads"])["entropy"].agg(["mean", "min", "max"]).reset_index()
    out = out.merge(spread.rename(columns={"entropy": "spread"}), on=["row", "heads"])
    ppl = {row: sweep.data[run_id].summary.get("final_dev_ppl", np.nan)
           for row, run_id, _ in completed_runs(sweep)}
    out["dev_ppl"] = out["row"].map(ppl)
    return out.sort_values("heads")


# --- figures ---------------------------------------------------------------------------------

def figures(sweep, frame, out_dir, piece_names=None):
    """Per-head entropy at initialisation and after training, per stack and run; and the probe
    sentence's attention (last layer, each stack) of every run side by side. Returns the list
    of files written."""
    rows = list(dict.fromkeys(frame["row"]))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8), sharey=True)
    colors = dict(zip(rows, plotting.colors(len(rows))))
    for axis, stack in zip(axes, STACKS):
        part = frame[frame["stack"] == stack]
        blocks = list(dict.fromkeys(part["block"]))
        for position, row in enumerate(rows):
            for moment, marker in (("init", "o"), ("trained", "s")):
                points = part[(part["row"] == row) & (part["moment"] == moment)]
                heads = max(int(points["heads"].max()), 1) if len(points) else 1
                when = "initialisation" if moment == "init" else "trained"
                for block_index, block in enumerate(blocks):
                    values = points[points["block"] == block].sort_values("head")["entropy"]
                    spread = (np.arange(len(values)) / max(heads - 1, 1) - 0.5) * 0.25
                    x = block_index + (position - (len(rows) - 1) / 2) * 0.3 + spread
                    axis.scatter(x, values, s=14, marker=marker, color=colors[row],
                                 alpha=0.35 if moment == "init" else 1.0,
                                 label=f"{row}, {when}" if block_index == 0 else None)
        axis.set_xticks(range(len(blocks)), [b.split(".")[-1] for b in blocks])
        axis.set_xlabel("layer (one point per head)")
        axis.set_title(STACK_TITLES[stack], fontsize=10)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("attention entropy (nats), first dev batch")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.suptitle("Per-head attention entropy: single head vs several heads")
    fig.tight_layout()
    files = [plotting.save(fig, pathlib.Path(out_dir) / "heads_entropy.png")]

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
        shown = min(heads, PROBE_HEADS)
        fig, axes = plt.subplots(len(probes), shown, squeeze=False,
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
                peak = draw_head_map(axis, weights[head])
                axis.set_title(f"{row}, head {head} (max {peak:.2f})", fontsize=8)
                axis.set_xticks(range(len(keys)), keys, fontsize=6, rotation=90)
                axis.set_yticks(range(len(queries)), queries if head == 0 else [], fontsize=6)
        layer = len(probes[0][1].maps[stack]) - 1
        fig.suptitle(f"Probe sentence, {STACK_TITLES[stack]}, layer {layer} (last); colour "
                     "0 (dark) to the panel's max (yellow)"
                     + (f"; first {shown} of {heads} heads" if shown < heads else ""))
        files.append(plotting.save(fig, pathlib.Path(out_dir) / f"heads_probe_{stack}.png"))
    return files


# --- the page's section ----------------------------------------------------------------------

def section(sweep, out_dir, page):
    """The page's section 4 (markdown lines) and the figure files it links."""
    frame = table(sweep)
    runs = completed_runs(sweep)
    names = piece_namer(runs[0][2]) if runs else None
    files = figures(sweep, frame, out_dir, names)
    lines = ["## 4. Heads", "",
             "Sweep `experiments/studies/heads.yaml`: h = "
             f"{', '.join(str(h) for h in sorted(frame['heads'].unique()))} with h x d_k = "
             "d_model. Entropy per head from `/diagnostics/attention_entropy` (first dev batch) "
             "at step 0 and at the last step; heat maps of the probe sentence (the first sentence "
             "of the first dev batch, which is sorted by length, so a short verse; "
             "`/attention/probe_0`, written at the end of training), last layer, tick labels "
             "are the SentencePiece pieces.", ""]
    lines += [f"![heads entropy]({relative(files[0], page)})", ""]
    for path in files[1:]:
        lines += [f"![{pathlib.Path(path).stem}]({relative(path, page)})", ""]
    rows = summary(sweep, frame)
    lines += markdown_table(rows, [
        ("row", "row", str), ("mean", "mean entropy (nats)", fmt), ("min", "lowest head", fmt),
        ("max", "highest head", fmt),
        ("spread", "largest max-min across the heads of one layer", fmt),
        ("dev_ppl", "dev PPL (end)", fmt)])
    multi = rows[rows["heads"] > 1]
    if not multi.empty:
        widest = multi.sort_values("spread").iloc[-1]
        lines.append(f"Within one layer, the heads of {widest['row']} differ by up to "
                     f"{fmt(widest['spread'])} nats of entropy after training.")
        lines.append("")
    return lines, files
