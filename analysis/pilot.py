"""`python3 -m analysis.pilot runs/pilot-lr --out docs/results/pilot-lr`: the learning-rate pilot
behind a sweep's recipe (experiments/small/pilot-lr.yaml): every (row, peak rate, warmup) with
its final dev PPL over seeds, the recipe chosen, and the dev-loss curves.

The choice, stated so that it can be checked: the one (peak, warmup) for every row (as the paper
used one recipe for all of Table 3) that minimises the mean over rows of log(final dev PPL)
averaged over seeds, i.e. the geometric mean PPL across rows, so that neither row's scale
dominates and a recipe that stalls one row loses.

Writes pilot.md (the table, the choice and the rule), pilot.csv and pilot_curves.png.
"""

import argparse
import math
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from analysis import plotting  # noqa: E402
from analysis.errors import AnalysisError, command_line, report_error  # noqa: E402
from analysis.plotting import plt  # noqa: E402
from analysis.notes import read_notes  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

PEAK, WARMUP = "train.lr.peak", "train.lr.warmup"


def pilot_frame(sweep):
    """One line per (row, peak, warmup): seeds, mean/std/min/max final dev PPL."""
    runs = sweep.completed_runs()
    if runs.empty:
        raise AnalysisError(f"{sweep.directory}: no completed pilot run")
    for key in (PEAK, WARMUP):
        if key not in runs:
            raise AnalysisError(f"{sweep.directory}: the runs do not vary {key}")
    # The table row without its grid part ("base.peak-1.0e-3.warmup-200" -> "base").
    runs = runs.assign(model_row=runs["row"].str.split(".").str[0])
    grouped = runs.groupby(["model_row", PEAK, WARMUP], sort=True)["dev_ppl"]
    frame = grouped.agg(seeds="count", mean="mean", std="std", low="min", high="max")
    frame["log_mean"] = runs.assign(log=np.log(runs["dev_ppl"])).groupby(
        ["model_row", PEAK, WARMUP], sort=True)["log"].mean()
    return frame.reset_index()


def choose(frame):
    """(peak, warmup, score) minimising the mean over rows of the seeds' mean log PPL."""
    rows = frame["model_row"].nunique()
    per_recipe = frame.groupby([PEAK, WARMUP])
    complete = per_recipe.filter(lambda g: len(g) == rows)
    scores = complete.groupby([PEAK, WARMUP])["log_mean"].mean().sort_values()
    if scores.empty:
        raise AnalysisError("no recipe has results for every row")
    (peak, warmup), score = next(iter(scores.items()))
    return float(peak), int(warmup), float(score), scores


def curves(sweep, frame, path):
    """Dev loss against step, one panel per row, one line per recipe (mean over seeds)."""
    evaluation = sweep.series("eval")
    index = sweep.runs.set_index("run_id")
    evaluation = evaluation.assign(
        model_row=evaluation["row"].str.split(".").str[0],
        peak=[index.at[r, PEAK] for r in evaluation["run_id"]],
        warmup=[index.at[r, WARMUP] for r in evaluation["run_id"]])
    rows = sorted(frame["model_row"].unique())
    figure, axes = plt.subplots(1, len(rows), figsize=(5.5 * len(rows), 4.2), sharey=True,
                                squeeze=False)
    recipes = sorted({(float(p), int(w)) for p, w in zip(frame[PEAK], frame[WARMUP])})
    peaks = sorted({p for p, _ in recipes})
    warmups = sorted({w for _, w in recipes})
    colors = plotting.graded_colors(peaks)
    styles = dict(zip(warmups, ["-", "--", ":", "-."] * len(warmups)))
    for axis, row in zip(axes[0], rows):
        for peak, warmup in recipes:
            part = evaluation[(evaluation["model_row"] == row) & (evaluation["peak"] == peak)
                              & (evaluation["warmup"] == warmup)]
            if part.empty:
                continue
            mean = part.groupby("step")["loss"].mean()
            axis.plot(mean.index, mean.to_numpy(), styles[warmup], color=colors[peak],
                      label=f"peak {peak:g}, warmup {warmup}")
        axis.set_title(row)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("dev loss (label-smoothed, nats/token; mean over seeds)")
    axes[0][-1].legend(fontsize=8)
    plotting.save(figure, path)


def markdown(sweep, frame, choice, notes=None):
    peak, warmup, score, scores = choice
    lines = [f"# Learning-rate pilot ({sweep.name})", "",
             f"Runs: `{sweep.directory}` ({len(sweep.runs)} runs; sweep file "
             f"`{sweep.manifest.source if sweep.manifest else '?'}`). Final dev PPL per recipe "
             "(mean ± std over seeds, min-max in brackets); schedule inverse_sqrt: "
             "peak x min(step / warmup, sqrt(warmup / step)), which is noam with its peak set "
             "directly.", ""]
    runs = sweep.runs
    if "host" in runs and "git_commit" in runs:
        seconds = runs["train_seconds"].sum() if "train_seconds" in runs else float("nan")
        created = sorted(str(c) for c in runs.get("created", []) if str(c) != "nan")
        lines += [f"Provenance: runs made on {', '.join(sorted(set(map(str, runs['host']))))} "
                  f"with attnlab {', '.join(sorted(set(map(str, runs['git_commit']))))}"
                  + (f", {created[0]} to {created[-1]}" if created else "")
                  + f"; training time summed over runs {seconds / 60:.1f} min.", ""]
    lines += ["| row | peak | warmup | seeds | dev PPL | range |", "|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        std = "" if not math.isfinite(r["std"]) else f" ± {r['std']:.2f}"
        lines.append(f"| {r['model_row']} | {r[PEAK]:g} | {int(r[WARMUP])} | {int(r['seeds'])} "
                     f"| {r['mean']:.2f}{std} | {r['low']:.2f}-{r['high']:.2f} |")
    lines += ["", "Geometric-mean dev PPL over the rows, per recipe (the choice minimises it):", "",
              "| peak | warmup | geometric mean PPL |", "|---|---|---|"]
    for (p, w), s in scores.items():
        lines.append(f"| {p:g} | {int(w)} | {math.exp(s):.2f} |")
    lines += ["", f"**Chosen: peak {peak:g}, warmup {warmup}** (geometric mean dev PPL "
              f"{math.exp(score):.2f}).", "", "![dev loss curves](pilot_curves.png)", ""]
    if notes:
        lines += ["## Discussion", "", notes, ""]
    return "\n".join(lines) + "\n"


def pilot_arguments(module, description, example, argv, stages=False):
    """The command line every pilot page takes: SWEEP [--out DIR] [--notes FILE]; with stages,
    also [--longer DIR ...], sweeps that train some of its runs further."""
    parser = argparse.ArgumentParser(prog=f"python3 -m analysis.{module}",
                                     description=description)
    parser.add_argument("sweep", help=f"the pilot's sweep directory ({example})")
    parser.add_argument("--out", help="output directory (default: <sweep>/pilot)")
    parser.add_argument("--notes", help="a Markdown file whose text goes into pilot.md as its "
                        "Discussion section")
    if stages:
        parser.add_argument("--longer", action="append", default=[], metavar="DIR",
                            help="a second stage's sweep directory: runs of the same rows, rates "
                            "and seeds trained further (repeatable)")
    return parser.parse_args(argv)


@command_line("analysis.pilot")
def main(argv=None):
    args = pilot_arguments("pilot", "The learning-rate pilot's table and choice.",
                           "runs/pilot-lr", argv)
    try:
        sweep = load_sweep(args.sweep, with_attention=False)
        frame = pilot_frame(sweep)
        choice = choose(frame)
        out = pathlib.Path(args.out) if args.out else sweep.directory / "pilot"
        notes = read_notes(args.notes, out) if args.notes else None
    except AnalysisError as error:
        return report_error("analysis.pilot", error)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "pilot.csv", index=False, float_format="%.10g")
    curves(sweep, frame, out / "pilot_curves.png")
    (out / "pilot.md").write_text(markdown(sweep, frame, choice, notes), encoding="utf-8")
    print(f"chosen: peak {choice[0]:g}, warmup {choice[1]}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
