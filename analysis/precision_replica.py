"""`python3 -m analysis.precision_replica TABLE REPLICA --out DIR`: does bf16 move a verdict of
Table 3?

The bf16 replica (experiments/small/table3-budget-bf16.yaml) trains base and two rows of the fp32
table (experiments/small/table3-budget.yaml) with train.precision bf16: the same seeds and every
other key the same, so each replica run has one twin in the table that differs in precision
alone (checked; a replica run without its twin, or with a twin that differs in another key, is an
error). It is reported beside the table, never mixed into it. Two questions, stated so that they
can be checked:

- **The precision effect of a row**: over the seeds both precisions completed, the mean of
  bf16's dev log PPL minus its fp32 twin's, as % of PPL, with a paired t-test
  (scipy.stats.ttest_rel) over those seeds.
- **Whether precision moves a verdict**: each compared row's dev-PPL verdict against base by the
  report's own rule (analysis/table.py, with the test the replica's sweep declares), computed in
  each precision over the same family: the replica's rows, and the fp32 table restricted to them.
  A verdict *moves* when the two words differ.

Writes replica.md and replica.csv.
"""

import dataclasses
import math
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

from analysis.errors import AnalysisError, command_line  # noqa: E402
from analysis.formatting import finite, fixed  # noqa: E402
from analysis.side_by_side import two_sweeps_main  # noqa: E402
from analysis.table import build_table  # noqa: E402
from analysis.twins import twins as paired_runs  # noqa: E402

PRECISION = "train.precision"


def _precisions_are_the_pair(ours, twin):
    if ours.config.get(PRECISION) != "bf16":
        raise AnalysisError(f"{ours.path}: {PRECISION} is {ours.config.get(PRECISION)!r}; "
                            "the replica's runs are bf16")
    if twin.config.get(PRECISION, "fp32") != "fp32":
        raise AnalysisError(f"{twin.path}: {PRECISION} is {twin.config.get(PRECISION)!r}; "
                            "the table's runs are fp32")


def twins(table, replica):
    """{(row, seed): (fp32 run id, bf16 run id)} over the replica's completed runs, each with its
    completed twin in the table. AnalysisError when a replica run is not bf16, a table run is not
    fp32, or the twin differs in any key but the precision."""
    return paired_runs(table, replica, {PRECISION}, "precision", _precisions_are_the_pair)


def precision_effects(table, replica, pairs):
    """One record per replica row: the seeds paired, both precisions' mean dev PPL, bf16's
    effect in % of PPL and the paired t-test's p (nan with fewer than two pairs)."""
    fp32_ppl = table.runs.set_index("run_id")["dev_ppl"].astype(float)
    bf16_ppl = replica.runs.set_index("run_id")["dev_ppl"].astype(float)
    records = []
    for row in replica.rows:
        seeds = sorted(seed for (key, seed) in pairs if key == row.key)
        log_fp32 = np.log([fp32_ppl[pairs[(row.key, s)][0]] for s in seeds])
        log_bf16 = np.log([bf16_ppl[pairs[(row.key, s)][1]] for s in seeds])
        effect = 100.0 * math.expm1(float(np.mean(log_bf16 - log_fp32))) if seeds else math.nan
        p = (float(scipy_stats.ttest_rel(log_bf16, log_fp32).pvalue) if len(seeds) >= 2
             else math.nan)
        records.append({"row": row.key, "seeds": " ".join(map(str, seeds)),
                        "fp32_ppl": float(np.exp(np.mean(log_fp32))) if seeds else math.nan,
                        "bf16_ppl": float(np.exp(np.mean(log_bf16))) if seeds else math.nan,
                        "precision_effect_pct": effect, "paired_p": p})
    return records


def restricted(sweep, keys, run_ids):
    """The sweep cut down to the rows `keys` and, of their runs, to `run_ids`: the same family
    of comparisons in both precisions, over the same seeds."""
    rows = [dataclasses.replace(r, run_ids=[i for i in r.run_ids if i in run_ids])
            for r in sweep.rows if r.key in keys]
    runs = sweep.runs[sweep.runs["row"].isin(keys) & sweep.runs["run_id"].isin(run_ids)]
    return dataclasses.replace(sweep, rows=rows, runs=runs)


def verdicts(table, replica, pairs, test):
    """{row: (fp32 verdict, bf16 verdict, fp32 effect %, bf16 effect %)} for the replica's
    compared rows, each precision's table built over the replica's rows and paired seeds."""
    keys = [r.key for r in replica.rows]
    fp32_ids = {fp32 for fp32, _ in pairs.values()}
    bf16_ids = {bf16 for _, bf16 in pairs.values()}
    fp32 = build_table(restricted(table, keys, fp32_ids), test=test)
    bf16 = build_table(restricted(replica, keys, bf16_ids), test=test)
    by_row = {r["row"]: r for r in fp32.records}
    out = {}
    for record in bf16.records:
        if record["base"]:
            continue
        other = by_row[record["row"]]
        out[record["row"]] = (other.get("ppl_verdict", ""), record.get("ppl_verdict", ""),
                              other.get("ppl_effect_pct", math.nan),
                              record.get("ppl_effect_pct", math.nan))
    return out


def replica_frame(table, replica):
    if replica.base != table.base:
        raise AnalysisError(f"the replica's base row is {replica.base!r}, the table's "
                            f"{table.base!r}")
    missing = [r.key for r in replica.rows if r.key not in {t.key for t in table.rows}]
    if missing:
        raise AnalysisError(f"replica rows the table does not have: {', '.join(missing)}")
    pairs = twins(table, replica)
    test = (replica.manifest.test if replica.manifest is not None else "") or "welch+permutation"
    records = precision_effects(table, replica, pairs)
    moved = verdicts(table, replica, pairs, test) if pairs else {}
    for record in records:
        # A row without paired seeds has nothing to compare in either precision.
        fp32_word, bf16_word, fp32_effect, bf16_effect = (
            moved.get(record["row"], ("", "", math.nan, math.nan)) if record["seeds"]
            else ("", "", math.nan, math.nan))
        record.update({"fp32_vs_base_pct": fp32_effect, "bf16_vs_base_pct": bf16_effect,
                       "fp32_verdict": fp32_word, "bf16_verdict": bf16_word,
                       "verdict_moves": "" if not fp32_word else
                       ("yes" if fp32_word != bf16_word else "no")})
    return pd.DataFrame.from_records(records), test


def _percent(value):
    return f"{fixed(value, 2, sign=True)}%" if finite(value) else ""


def markdown(frame, table, replica, test):
    moved = frame[frame["verdict_moves"] == "yes"]["row"].tolist()
    compared = frame[frame["verdict_moves"] != ""]["row"].tolist()
    lines = ["# Table 3 in bf16 beside fp32", "",
             f"- fp32: `{table.directory}` (the table); bf16: `{replica.directory}` (the replica, "
             f"sweep file `{replica.manifest.source if replica.manifest else '?'}`).",
             "- Each bf16 run is paired with the fp32 run of the same row and seed, which differs "
             "in train.precision alone. The precision effect is the mean over the paired seeds "
             "of bf16's dev log PPL minus fp32's, as % of PPL, with a paired t-test (scipy). A "
             "row's verdict against base is the report's rule (test: "
             f"{test}, Holm over the replica's rows), computed in each precision over the same "
             "rows and seeds; it moves when the two words differ.", "",
             "| row | seeds paired | fp32 dev PPL | bf16 dev PPL | bf16 vs fp32 | paired p "
             "| fp32 vs base | fp32 verdict | bf16 vs base | bf16 verdict | verdict moves |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in frame.iterrows():
        lines.append(f"| {r['row']} | {r['seeds'] or 'none yet'} | {fixed(r['fp32_ppl'], 3)} "
                     f"| {fixed(r['bf16_ppl'], 3)} | {_percent(r['precision_effect_pct'])}"
                     f" | {fixed(r['paired_p'], 3)} | {_percent(r['fp32_vs_base_pct'])} "
                     f"| {r['fp32_verdict']} | {_percent(r['bf16_vs_base_pct'])} "
                     f"| {r['bf16_verdict']} | {r['verdict_moves']} |")
    lines.append("")
    if not compared:
        lines.append("**No row is compared yet**: no compared row has paired seeds in both "
                     "precisions.")
    elif moved:
        lines.append(f"**bf16 moves the verdict of {', '.join(moved)}** (of {len(compared)} "
                     "compared rows).")
    else:
        lines.append(f"**bf16 moves no verdict** ({len(compared)} compared rows).")
    return "\n".join(lines) + "\n"


def _write(table, replica, out):
    frame, test = replica_frame(table, replica)
    frame.to_csv(out / "replica.csv", index=False, float_format="%.10g")
    (out / "replica.md").write_text(markdown(frame, table, replica, test), encoding="utf-8")
    return [out / "replica.md", out / "replica.csv"]


@command_line("analysis.precision_replica")
def main(argv=None):
    return two_sweeps_main(
        argv, "analysis.precision_replica",
        "bf16 replica rows of a table beside the fp32 table's same rows and seeds.",
        ("table", "the fp32 table's sweep directory (manifest and run logs)"),
        ("replica", "the bf16 replica's sweep directory"), _write)

if __name__ == "__main__":
    sys.exit(main())
