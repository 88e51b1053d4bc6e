"""Where a row's seeds part: when reduce-on-plateau (train.lr.shrink) first cut each run's
learning rate, and the best dev loss each run reached.

Under a recipe that halves the rate after a stall of a few evaluations, a stall caused by
evaluation noise while the model is still improving cuts the rate early, and a run whose rate
was cut early may end on a higher plateau than its row's other seeds. This prints, for every
row with two or more completed runs, each run's first cut (read off /train's learning rate: the
first logged step where it falls below SHRUNK of the previous logged step's, which noam's own
decay never does between two logged steps), the step and value of its best dev loss, and its
final dev perplexity; then, per row, the gap in best dev loss between the seed cut first and the
seed cut last, and how often that gap is positive.

    python3 -m analysis.rate_halvings docs/results/table3-plateau/runs
"""

import argparse
import sys

import numpy as np

from analysis.errors import AnalysisError
from analysis.sweep import load_sweep

# A logged learning rate below this fraction of the previous logged one is a cut (the smallest
# cut, train.lr.shrink, is a factor the config gives; noam moves by far less than this between
# two logged steps).
SHRUNK = 0.75


def cuts(data):
    """The logged /train steps after which the learning rate was cut (the last logged step at
    the rate before each cut), in order."""
    train = data.train
    if "lr" not in train or len(train) < 2:
        raise AnalysisError(f"{data.path}: no learning-rate column in /train")
    lr = train["lr"].to_numpy(dtype=float)
    steps = train["step"].to_numpy()
    return [int(steps[i]) for i in np.flatnonzero(lr[1:] < SHRUNK * lr[:-1])]


def best_dev(data):
    """(step, dev loss) of the lowest dev loss of a run."""
    evaluations = data.eval
    if "loss" not in evaluations or evaluations.empty:
        raise AnalysisError(f"{data.path}: no dev evaluations")
    best = int(np.argmin(evaluations["loss"].to_numpy()))
    return int(evaluations["step"].iloc[best]), float(evaluations["loss"].iloc[best])


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
            data = sweep.data[run_id]
            record = sweep.runs[sweep.runs["run_id"] == run_id].iloc[0]
            steps = cuts(data)
            runs.append((int(record["seed"]), steps[0] if steps else None, len(steps),
                         *best_dev(data), float(record["dev_ppl"])))
        out.append((row.key, runs))
    return out


def _cut_text(step):
    return "none" if step is None else f"{step:,}"


def table(rows):
    """Markdown lines: one line per run, then per row the gap between its first- and last-cut
    seeds, then how many rows have the first-cut seed higher."""
    lines = ["| row | seed | rate first cut after step | cuts | best dev loss (step) | dev PPL |",
             "|---|---|---|---|---|---|"]
    gaps = []
    for key, runs in rows:
        for seed, cut, count, best_step, best_loss, ppl in runs:
            lines.append(f"| {key} | {seed} | {_cut_text(cut)} | {count} | {best_loss:.4f} "
                         f"({best_step:,}) | {ppl:.2f} |")
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", help="a sweep directory (runs/<sweep> or its committed copy)")
    args = parser.parse_args(argv)
    try:
        sweep = load_sweep(args.sweep, with_attention=False)
        rows = row_runs(sweep)
        if not rows:
            raise AnalysisError(f"{args.sweep}: no row has two completed runs yet")
        print("\n".join(table(rows)))
    except AnalysisError as error:
        print(f"analysis.rate_halvings: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
