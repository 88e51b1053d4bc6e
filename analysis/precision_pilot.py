"""`python3 -m analysis.precision_pilot runs/pilot-bf16 --out docs/results/pilot-bf16`: does bf16
change the science? The precision pilot (experiments/small/pilot-bf16.yaml) trains one recipe in
fp32 and in bf16 (train.precision) over a few seeds; this compares their dev-loss curves.

The test, stated so that it can be checked: bf16 agrees with fp32 when at every dev evaluation the
difference of the two precisions' seed means is no larger than the seeds' own spread there (the
larger of the two precisions' max - min over seeds). With two seeds per precision that spread is
a small sample; the page shows the curves so that a reader can judge the margin.

Writes pilot-bf16.md (table, verdict, per-evaluation margins), pilot-bf16.csv and
pilot-bf16_curves.png.
"""

import argparse
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import plotting  # noqa: E402
from analysis.errors import AnalysisError, command_line, report_error  # noqa: E402
from analysis.plotting import plt  # noqa: E402
from analysis.notes import read_notes  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

PRECISION = "train.precision"
ORDER = ("fp32", "bf16")


def evaluations(sweep):
    """The completed runs' dev evaluations with each run's precision; both precisions needed."""
    runs = sweep.completed_runs()
    if runs.empty:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    if PRECISION not in runs:
        raise AnalysisError(f"{sweep.directory}: the runs do not vary {PRECISION}")
    missing = [p for p in ORDER if p not in set(runs[PRECISION])]
    if missing:
        raise AnalysisError(f"{sweep.directory}: no completed {' or '.join(missing)} run")
    series = sweep.series("eval")
    series = series[series["run_id"].isin(runs["run_id"])]
    precision = runs.set_index("run_id")[PRECISION]
    return series.assign(precision=[precision[r] for r in series["run_id"]]), runs


def margins(series):
    """Per dev evaluation step: each precision's seed mean, the seeds' spread (the larger max -
    min of the two precisions) and the difference of means. Only steps both precisions reached."""
    stats = series.groupby(["step", "precision"])["loss"].agg(["mean", "min", "max", "count"])
    rows = []
    for step in sorted(series["step"].unique()):
        if not all((step, p) in stats.index for p in ORDER):
            continue
        fp32, bf16 = stats.loc[(step, "fp32")], stats.loc[(step, "bf16")]
        spread = max(fp32["max"] - fp32["min"], bf16["max"] - bf16["min"])
        difference = bf16["mean"] - fp32["mean"]
        rows.append({"step": int(step), "fp32_mean": fp32["mean"], "bf16_mean": bf16["mean"],
                     "difference": difference, "spread": spread,
                     "within": abs(difference) <= spread})
    return pd.DataFrame(rows)


def summary(runs, series, train):
    """One line per precision: seeds, final dev loss/PPL (mean, range), throughput (the median
    over runs of each run's median tokens/s), training time."""
    final = series.sort_values("step").groupby("run_id").tail(1).set_index("run_id")
    speed = train.groupby("run_id")["tokens_per_sec"].median()
    lines = []
    for precision in ORDER:
        part = runs[runs[PRECISION] == precision]
        losses = final.loc[part["run_id"], "loss"]
        ppl = final.loc[part["run_id"], "ppl"] if "ppl" in final else np.exp(losses)
        lines.append({"precision": precision, "seeds": len(part),
                      "final_loss_mean": losses.mean(), "final_loss_low": losses.min(),
                      "final_loss_high": losses.max(), "final_ppl_mean": ppl.mean(),
                      "tokens_per_sec": speed.reindex(part["run_id"]).median(),
                      "train_seconds": part["train_seconds"].mean()
                      if "train_seconds" in part else float("nan")})
    return pd.DataFrame(lines)


def curves(series, path):
    colors = {"fp32": "tab:blue", "bf16": "tab:orange"}
    figure, axis = plt.subplots(figsize=(6.5, 4.2))
    for precision in ORDER:
        part = series[series["precision"] == precision]
        for _, run in part.groupby("run_id"):
            axis.plot(run["step"], run["loss"], color=colors[precision], alpha=0.35, lw=1)
        mean = part.groupby("step")["loss"].mean()
        axis.plot(mean.index, mean.to_numpy(), color=colors[precision], lw=2,
                  label=f"{precision} (mean; thin: each seed)")
    axis.set_xlabel("step")
    axis.set_ylabel("dev loss (label-smoothed, nats/token)")
    axis.grid(alpha=0.3)
    axis.legend()
    plotting.save(figure, path)


def markdown(sweep, table, frame, notes=None):
    agree = bool(frame["within"].all())
    worst = frame.loc[(frame["difference"].abs() - frame["spread"]).idxmax()]
    lines = [f"# Precision pilot ({sweep.name}): fp32 against bf16", "",
             f"Runs: `{sweep.directory}` ({len(sweep.runs)} runs; sweep file "
             f"`{sweep.manifest.source if sweep.manifest else '?'}`).", ""]
    runs = sweep.runs
    if "host" in runs and "git_commit" in runs:
        lines += [f"Provenance: runs made on {', '.join(sorted(set(map(str, runs['host']))))} "
                  f"with attnlab {', '.join(sorted(set(map(str, runs['git_commit']))))}.", ""]
    lines += ["| precision | seeds | final dev loss | range | final dev PPL | tokens/s (median) "
              "| training time |", "|---|---|---|---|---|---|---|"]
    for _, r in table.iterrows():
        lines.append(f"| {r['precision']} | {int(r['seeds'])} | {r['final_loss_mean']:.4f} "
                     f"| {r['final_loss_low']:.4f}-{r['final_loss_high']:.4f} "
                     f"| {r['final_ppl_mean']:.2f} | {r['tokens_per_sec']:.0f} "
                     f"| {r['train_seconds'] / 60:.1f} min |")
    lines += ["", "Tokens/s and training time are the wall clock of runs that may have shared the "
              "machine with other work: they do not measure bf16's speed, which make bench "
              "measures side by side ([bench.md](../bench.md)).", ""]
    verdict = ("**bf16 agrees with fp32**: at every dev evaluation the difference of the seed "
               "means is within the seeds' spread" if agree else
               "**bf16 does not agree with fp32**: at some dev evaluation the difference of the "
               "seed means exceeds the seeds' spread")
    lines += [verdict + f" (closest call: step {int(worst['step'])}, difference "
              f"{worst['difference']:+.4f} against spread {worst['spread']:.4f}).", "",
              "Test: at every evaluation both precisions reached, |mean bf16 - mean fp32| <= the "
              "larger of the two precisions' max - min over seeds.", "",
              "| step | fp32 mean | bf16 mean | bf16 - fp32 | seeds' spread | within |",
              "|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {int(r['step'])} | {r['fp32_mean']:.4f} | {r['bf16_mean']:.4f} "
                     f"| {r['difference']:+.4f} | {r['spread']:.4f} "
                     f"| {'yes' if r['within'] else 'no'} |")
    lines += ["", "![dev loss curves](pilot-bf16_curves.png)", ""]
    if notes:
        lines += ["## Discussion", "", notes, ""]
    return "\n".join(lines) + "\n"


@command_line("analysis.precision_pilot")
def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.precision_pilot",
                                     description="fp32 against bf16 dev-loss curves.")
    parser.add_argument("sweep", help="the pilot's sweep directory (runs/pilot-bf16)")
    parser.add_argument("--out", help="output directory (default: <sweep>/pilot)")
    parser.add_argument("--notes", help="a Markdown file whose text becomes the Discussion")
    args = parser.parse_args(argv)
    try:
        sweep = load_sweep(args.sweep, with_attention=False)
        series, runs = evaluations(sweep)
        frame = margins(series)
        if frame.empty:
            raise AnalysisError(f"{sweep.directory}: no evaluation step both precisions reached")
        table = summary(runs, series, sweep.series("train"))
        out = pathlib.Path(args.out) if args.out else sweep.directory / "pilot"
        notes = read_notes(args.notes, out) if args.notes else None
    except AnalysisError as error:
        return report_error("analysis.precision_pilot", error)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "pilot-bf16.csv", index=False, float_format="%.10g")
    curves(series, out / "pilot-bf16_curves.png")
    (out / "pilot-bf16.md").write_text(markdown(sweep, table, frame, notes), encoding="utf-8")
    print(f"{'agree' if frame['within'].all() else 'disagree'}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
