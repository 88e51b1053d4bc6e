"""`python3 -m analysis.pilot_budget runs/pilot-budget --out docs/results/pilot-budget`: the pilot
behind a fixed-budget recipe (experiments/small/pilot-budget.yaml): for every (row, rate), whether
the row learns within the common prefix of the schedule, and the rate chosen.

The rules, stated so that they can be checked:
- A run *learns* when, at the end of the prefix, its decoder reads the source (decoder-encoder
  attention entropy below IGNORES_SOURCE of uniform, analysis/source_attention.py) and its dev
  NLL still falls: it dropped by at least FALLING_NATS over the last quarter of its evaluations
  (a drop of 1% in dev PPL). A run that stalls, or one whose decoder is a language model of the
  target side, does not.
- A row may have a second stage (--longer: the same runs trained further, e.g. over the whole
  noam part of a budget, experiments/small/pilot-budget-long.yaml): then its longest run at a
  rate and seed decides, and the shorter one, whose steps the longer repeats, is shown beside it.
- The chosen rate is the one under which every row learns (every seed of every row); among those,
  the one with the lowest geometric-mean dev PPL over the rows (the mean of log PPL), so that no
  row's scale dominates. When no rate lets every row learn, there is no choice and the page says
  which rows fail under which rate.

Writes pilot.md (the table, the rule, the choice), pilot.csv and pilot_curves.png.
"""

import math
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
from analysis.pilot import pilot_arguments  # noqa: E402
from analysis.source_attention import IGNORES_SOURCE  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

RATE = "train.lr.scale"
# log(1.01): the dev NLL of a learning run falls by at least 1% of PPL over its last quarter.
FALLING_NATS = math.log(1.01)


def last_quarter_drop(steps, nll):
    """Dev NLL at the start of the last quarter of the evaluations minus the last one (nats;
    positive when it fell). The quarter spans at least two evaluations."""
    nll = np.asarray(nll, dtype=float)
    if len(nll) < 2:
        return float("nan")
    span = max(2, int(math.ceil(len(nll) / 4.0)) + 1)
    window = nll[-span:]
    return float(window[0] - window[-1])


def learns(cross_attention, drop):
    """The rule of the module docstring, on one run's two measurements."""
    return bool(cross_attention < IGNORES_SOURCE and drop >= FALLING_NATS)


def run_frame(sweep):
    """One line per completed run: model row, rate, seed, dev PPL, cross-attention, drop,
    learns."""
    runs = sweep.completed_runs()
    if runs.empty:
        raise AnalysisError(f"{sweep.directory}: no completed pilot run")
    if RATE not in runs:
        raise AnalysisError(f"{sweep.directory}: the runs do not vary {RATE}")
    evaluation = sweep.series("eval")
    records = []
    for _, run in runs.iterrows():
        curve = evaluation[evaluation["run_id"] == run["run_id"]].sort_values("step")
        drop = last_quarter_drop(curve["step"], curve["nll"]) if len(curve) else float("nan")
        cross = float(run.get("dev_cross_attention", float("nan")))
        records.append({"row": model_row(run["row"]), "rate": float(run[RATE]),
                        "seed": int(run["seed"]), "run_id": run["run_id"],
                        "steps": int(run.get("steps", 0) or 0),
                        "dev_ppl": float(run["dev_ppl"]), "dev_cross_attention": cross,
                        "last_quarter_drop": drop, "learns": learns(cross, drop)})
    return pd.DataFrame.from_records(records).sort_values(["row", "rate", "seed", "steps"])


def model_row(name):
    """The sweep row without its grid part ("C N=4.scale-0.2263" -> "C N=4")."""
    return str(name).split(".")[0]


def deciding(frame):
    """The run that decides each (row, rate, seed): the one trained longest."""
    if "steps" not in frame:
        return frame
    return frame.sort_values("steps", kind="stable").groupby(
        ["row", "rate", "seed"], sort=False).tail(1)


def choose(frame, declared):
    """(rate, geometric-mean PPL, scores) for the rate under which every declared row has run
    and learns, with the lowest geometric-mean dev PPL; rate None when no rate does yet. Of a row
    trained in two stages, the longer run decides."""
    scores = {}
    for rate, part in deciding(frame).groupby("rate"):
        if set(part["row"]) != set(declared) or not part["learns"].all():
            continue
        per_row = part.assign(log=np.log(part["dev_ppl"])).groupby("row")["log"].mean()
        scores[float(rate)] = float(per_row.mean())
    if not scores:
        return None, float("nan"), scores
    rate = min(scores, key=scores.get)
    return rate, math.exp(scores[rate]), scores


def peak_at_d_model_64(scale, warmup):
    """noam's peak (at step = warmup) for d_model 64: scale * (64 * warmup)^-0.5."""
    return scale / math.sqrt(64.0 * warmup)


def curves(evaluation, frame, path):
    """Dev NLL against step, one panel per row, one line per run (rate, seed and length)."""
    rows = sorted(frame["row"].unique())
    rates = sorted(frame["rate"].unique())
    colors = plotting.graded_colors(rates)
    longest = frame.groupby("row")["steps"].max()
    figure, axes = plt.subplots(1, len(rows), figsize=(4.6 * len(rows), 3.8), sharey=True,
                                squeeze=False)
    for axis, row in zip(axes[0], rows):
        for _, run in frame[frame["row"] == row].iterrows():
            curve = evaluation[evaluation["run_id"] == run["run_id"]].sort_values("step")
            axis.plot(curve["step"], curve["nll"], color=colors[run["rate"]],
                      linestyle="-" if run["learns"] else ":",
                      linewidth=1.0 if run["steps"] < longest[row] else 1.6,
                      label=f"scale {run['rate']:g}, seed {run['seed']}, {run['steps']} steps"
                            + ("" if run["learns"] else " (does not learn)"))
        axis.set_title(row)
        axis.set_xlabel("step")
        axis.grid(alpha=0.3)
    axes[0][0].set_ylabel("dev NLL (nats per piece)")
    for axis in axes[0]:
        axis.legend(fontsize=7)
    plotting.save(figure, path)


def prefix_repeats(evaluation, frame):
    """For every run that a longer run of the same row, rate and seed trains further: (row, rate,
    seed, shared evaluations, largest |dev NLL difference|) over the steps both evaluated. The
    noam schedule does not depend on train.steps, so up to the shorter run's end the two are one
    computation and the difference is 0."""
    out = []
    for (row, rate, seed), part in frame.groupby(["row", "rate", "seed"]):
        if len(part) < 2:
            continue
        part = part.sort_values("steps")
        longest = evaluation[evaluation["run_id"] == part["run_id"].iloc[-1]].set_index("step")
        for run_id in part["run_id"].iloc[:-1]:
            shorter = evaluation[evaluation["run_id"] == run_id].set_index("step")
            shared = shorter.index.intersection(longest.index)
            gap = float(np.max(np.abs(shorter.loc[shared, "nll"].to_numpy()
                                      - longest.loc[shared, "nll"].to_numpy()))) \
                if len(shared) else float("nan")
            out.append((row, float(rate), int(seed), len(shared), gap))
    return out


def markdown(sweeps, frame, declared, choice, warmup, repeats, notes=None):
    rate, geometric, scores = choice
    first = sweeps[0]
    lines = [f"# Fixed-budget pilot ({first.name})", ""]
    for sweep in sweeps:
        part = frame[frame["sweep"] == sweep.name]
        steps = sorted(set(part["steps"]))
        lines.append(f"- Runs: `{sweep.directory}` ({len(part)} completed of {len(sweep.runs)} "
                     f"declared; sweep file "
                     f"`{sweep.manifest.source if sweep.manifest else '?'}`), "
                     f"{', '.join(map(str, steps))} steps of noam with warmup {warmup}.")
    lines += ["", "Every budget under noam with a linear cool-down shares the steps before its "
              "cool-down, so a run of the pilot is the prefix of the table's run of its row and "
              "rate. A run **learns** when its decoder reads the source (decoder-encoder "
              f"attention entropy below {IGNORES_SOURCE:.2f} of uniform) and its dev NLL fell by "
              f"at least {FALLING_NATS:.4f} nats (1% of PPL) over the last quarter of its "
              "evaluations. Of a row trained further in a second stage, the longer run decides. "
              "The chosen rate lets every row learn and has the lowest geometric-mean dev PPL "
              "over the rows.", "",
              "| row | noam scale | peak at d_model 64 | seed | steps | dev PPL | cross-attention "
              "(of uniform) | last-quarter drop (nats) | learns |",
              "|---|---|---|---|---|---|---|---|---|"]
    decisive = set(deciding(frame)["run_id"])
    for _, r in frame.iterrows():
        learned = "yes" if r["learns"] else "**no**"
        if r["run_id"] not in decisive:
            learned += " (trained further below)"
        lines.append(f"| {r['row']} | {r['rate']:g} | {peak_at_d_model_64(r['rate'], warmup):.2e} "
                     f"| {r['seed']} | {r['steps']} | {r['dev_ppl']:.2f} "
                     f"| {r['dev_cross_attention']:.3f} | {r['last_quarter_drop']:.4f} "
                     f"| {learned} |")
    lines.append("")
    for row, value, seed, shared, gap in repeats:
        lines.append(f"- {row} at scale {value:g}, seed {seed}: the longer run repeats the "
                     f"shorter over their {shared} shared dev evaluations (largest dev NLL "
                     f"difference {gap:.3g} nats).")
    if repeats:
        lines.append("")
    for value, part in deciding(frame).groupby("rate"):
        failing = sorted(set(part.loc[~part["learns"], "row"]))
        missing = sorted(set(declared) - set(part["row"]))
        verdict = (f"every row learns; geometric-mean dev PPL {math.exp(scores[value]):.2f}"
                   if value in scores else
                   "; ".join(filter(None, [
                       f"does not learn: {', '.join(failing)}" if failing else "",
                       f"no run yet: {', '.join(missing)}" if missing else ""])))
        lines.append(f"- scale {value:g} (peak {peak_at_d_model_64(value, warmup):.2e} at "
                     f"d_model 64): {verdict}.")
    lines.append("")
    if rate is None:
        lines.append("**No rate has let every row learn yet** (rows without a run count as not "
                     "shown to learn): no choice is made.")
    else:
        lines.append(f"**Chosen: noam scale {rate:g}** (peak {peak_at_d_model_64(rate, warmup):.2e}"
                     f" at d_model 64; geometric-mean dev PPL {geometric:.2f}).")
    lines += ["", "![dev NLL curves](pilot_curves.png)", ""]
    if notes:
        lines += ["## Discussion", "", notes, ""]
    return "\n".join(lines) + "\n"


def load_stages(first, longer):
    """The pilot's sweeps (its first stage, then each --longer one), their runs' frame (column
    sweep: the stage's name) and their dev evaluations."""
    sweeps = [load_sweep(path, with_attention=False) for path in [first, *longer]]
    frames = [run_frame(sweep).assign(sweep=sweep.name) for sweep in sweeps]
    frame = pd.concat(frames, ignore_index=True).sort_values(["row", "rate", "seed", "steps"])
    evaluation = pd.concat([sweep.series("eval") for sweep in sweeps], ignore_index=True)
    warmups = set()
    for sweep in sweeps:
        warmups |= set(sweep.completed_runs()["train.lr.warmup"])
    if len(warmups) != 1:
        raise AnalysisError(f"{first}: the pilot's runs must share one warmup, found "
                            f"{sorted(warmups)}")
    return sweeps, frame, evaluation, int(next(iter(warmups)))


@command_line("analysis.pilot_budget")
def main(argv=None):
    args = pilot_arguments("pilot_budget", "The fixed-budget pilot's table and choice.",
                           "runs/pilot-budget", argv, stages=True)
    try:
        sweeps, frame, evaluation, warmup = load_stages(args.sweep, args.longer)
        declared = sorted({model_row(row) for row in sweeps[0].runs["row"]})
        choice = choose(frame, declared)
        out = pathlib.Path(args.out) if args.out else sweeps[0].directory / "pilot"
        notes = read_notes(args.notes, out) if args.notes else None
    except AnalysisError as error:
        return report_error("analysis.pilot_budget", error)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "pilot.csv", index=False, float_format="%.10g")
    curves(evaluation, frame, out / "pilot_curves.png")
    (out / "pilot.md").write_text(markdown(sweeps, frame, declared, choice, warmup,
                                           prefix_repeats(evaluation, frame), notes),
                                  encoding="utf-8")
    rate = choice[0]
    verdict = "no rate lets every row learn yet" if rate is None else f"chosen: noam scale {rate:g}"
    print(f"{verdict}; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
