"""When reduce on plateau (train.lr.shrink) cut a run's learning rate, and where a row's seeds part.

A cut shows in /train's logged rate as a fall of the ratio between the logged rate and the rate
the schedule gives at that step (core/optim/lr_schedule.cpp; the ratio is the trainer's
lr_factor): each cut multiplies it by train.lr.shrink, and nothing else moves it. A cut acts on
the steps after a dev evaluation, so it is dated by the last evaluation before the first logged
step at the lower rate.

As a command, for every row of a sweep with two or more completed runs: each run's first cut, its
number of cuts, and the step and value of its best dev loss; then, per row, the gap in best dev
loss between the seed whose rate was cut first and the seed cut last. Under a recipe that cuts the
rate after a stall of a few evaluations, a stall that evaluation noise brings on while the model
still improves cuts the rate early, and this shows whether such a seed ended on a higher plateau.
Given LABEL=RUN_DIR pairs instead, the same columns for those runs, one line each (evidence runs
beside the sweep's).

    python3 -m analysis.rate_cuts docs/results/table3-plateau/runs
    python3 -m analysis.rate_cuts "seed 1=runs/a" "seed 2=runs/b"
"""

import argparse
import math
import sys

import numpy as np

from analysis.errors import AnalysisError, command_line, report_error
from analysis.runfile import read_labeled_runs
from analysis.sweep import load_sweep


def scheduled_rate(config, steps):
    """The rate train.lr's schedule gives at `steps` before any cut (core/optim/lr_schedule.cpp):
    noam scale x d_model^-0.5 x min(s^-0.5, s x w^-1.5); constant peak; inverse_sqrt
    peak x min(s / w, sqrt(w / s)), or peak / sqrt(s) without warmup."""
    s = np.maximum(np.asarray(steps, dtype=float), 1.0)
    warmup = float(config.get("train.lr.warmup", 4000))
    w = max(warmup, 1.0)
    schedule = config.get("train.lr.schedule", "noam")
    if schedule == "noam":
        return (float(config.get("train.lr.scale", 1.0)) / math.sqrt(config["model.d_model"])
                * np.minimum(s ** -0.5, s * w ** -1.5))
    peak = float(config.get("train.lr.peak", 1e-3))
    if schedule == "constant":
        return np.full_like(s, peak)
    if schedule == "inverse_sqrt":
        return peak / np.sqrt(s) if warmup <= 0 else peak * np.minimum(s / w, np.sqrt(w / s))
    raise AnalysisError(f"train.lr.schedule {schedule!r}: not a schedule this analysis knows")


def rate_cuts(data):
    """The dev-evaluation steps after which the run's learning rate was cut, in order: where the
    logged rate over the scheduled one falls below sqrt(train.lr.shrink) of its previous logged
    value (halfway, on a log scale, between no cut and one)."""
    train = data.train
    if "lr" not in train:
        raise AnalysisError(f"{data.path}: no learning-rate column in /train")
    if len(train) < 2:
        return []
    shrink = float(data.config.get("train.lr.shrink", 0.5))
    if not 0 < shrink < 1:
        return []  # no cut can show
    steps = train["step"].to_numpy()
    factor = train["lr"].to_numpy(dtype=float) / scheduled_rate(data.config, steps)
    eval_steps = data.eval["step"].to_numpy() if "step" in data.eval else np.array([])
    cuts = []
    for i in np.flatnonzero(factor[1:] < math.sqrt(shrink) * factor[:-1]):
        before = eval_steps[eval_steps < steps[i + 1]]
        if len(before):
            cuts.append(int(before[-1]))
    return cuts


def best_dev(data):
    """(step, dev loss) of the lowest dev loss of a run."""
    evaluations = data.eval
    if "loss" not in evaluations or evaluations.empty:
        raise AnalysisError(f"{data.path}: no dev evaluations")
    best = int(np.argmin(evaluations["loss"].to_numpy()))
    return int(evaluations["step"].iloc[best]), float(evaluations["loss"].iloc[best])


def run_summary(data):
    """(first cut or None, number of cuts, best step, best dev loss, final dev PPL) of a run."""
    if "final_dev_ppl" not in data.summary:
        raise AnalysisError(f"{data.path}: no /summary final_dev_ppl (the run has not completed)")
    steps = rate_cuts(data)
    return (steps[0] if steps else None, len(steps), *best_dev(data),
            float(data.summary["final_dev_ppl"]))


def row_runs(sweep):
    """[(row key, [(seed, first cut or None, number of cuts, best step, best loss, final dev
    PPL), ...])] for the rows with two or more completed runs, in the sweep's order."""
    out = []
    for row in sweep.rows:
        completed = sweep.completed(row.key)
        if len(completed) < 2:
            continue
        runs = []
        for run_id in completed:
            record = sweep.runs[sweep.runs["run_id"] == run_id].iloc[0]
            runs.append((int(record["seed"]), *run_summary(sweep.data[run_id])))
        out.append((row.key, runs))
    return out


def _cut_text(step):
    return "none" if step is None else f"{step:,}"


def _run_cells(cut, count, best_step, best_loss, ppl):
    return f"{_cut_text(cut)} | {count} | {best_loss:.4f} ({best_step:,}) | {ppl:.2f} |"


def table(rows):
    """Markdown lines: one line per run, then per row the gap between its first- and last-cut
    seeds, then how many rows have the first-cut seed higher."""
    lines = ["| row | seed | rate first cut after step | cuts | best dev loss (step) | dev PPL |",
             "|---|---|---|---|---|---|"]
    gaps = []
    for key, runs in rows:
        for seed, cut, count, best_step, best_loss, ppl in runs:
            lines.append(f"| {key} | {seed} | " + _run_cells(cut, count, best_step, best_loss, ppl))
        # Runs never cut count as cut after their end: latest of all.
        order = sorted(runs, key=lambda r: (r[1] is None, r[1] if r[1] is not None else 0))
        first, last = order[0], order[-1]
        if first[1] != last[1]:
            gaps.append((key, round(first[4] - last[4], 3) + 0.0))  # + 0.0: no "-0.000"
    lines.append("")
    if gaps:
        lines.append("Best dev loss of the seed whose rate was cut first minus that of the seed "
                     "cut last, per row: " + ", ".join(f"{k} {g:+.3f}" for k, g in gaps) + ".")
        higher = sum(g > 0 for _, g in gaps)
        lines.append(f"The seed cut first ended higher in {higher} of {len(gaps)} rows "
                     f"(mean gap {np.mean([g for _, g in gaps]):+.3f} nats).")
    else:
        lines.append("No row has seeds whose rate was first cut at different steps.")
    return lines


def runs_table(runs):
    """Markdown lines: one line per (label, RunData)."""
    return (["| run | rate first cut after step | cuts | best dev loss (step) | dev PPL |",
             "|---|---|---|---|---|"]
            + [f"| {label} | " + _run_cells(*run_summary(data)) for label, data in runs])


@command_line("analysis.rate_cuts")
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="SWEEP_DIR | LABEL=RUN_DIR",
                        help="a sweep directory (runs/<sweep> or its committed copy), or runs")
    args = parser.parse_args(argv)
    try:
        if len(args.paths) == 1 and "=" not in args.paths[0]:
            sweep = load_sweep(args.paths[0], with_attention=False)
            rows = row_runs(sweep)
            if not rows:
                raise AnalysisError(f"{args.paths[0]}: no row has two completed runs yet")
            print("\n".join(table(rows)))
            return 0
        print("\n".join(runs_table(read_labeled_runs(args.paths))))
    except AnalysisError as error:
        return report_error("analysis.rate_cuts", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
