"""`python3 -m analysis.editions FIRST SECOND --out DIR`: what changed between two editions of a
table (Table 3's first edition, docs/results/table3-plateau, and its second,
docs/results/table3-budget), in numbers.

Each edition is built by the report's own rules (analysis/table.py, with the test its sweep file
declared), and the page sets them side by side:

- **Per row** present in both: dev PPL (mean over the completed seeds, and their number), whether
  the row failed to learn (then no number: no PPL, effect or test BLEU), its dev-PPL effect
  against its reference row and the verdict word in
  each edition; the verdict *moves* when both editions tested the row (higher, lower, level or
  inconclusive) and the two words differ. Rows of one edition only are
  listed with theirs.
- **Per block**: the trend check's Kendall tau of dev PPL against the paper's values (over the
  block's rows that learned, as the report's trend check) in each edition.

Writes editions.md and editions.csv.
"""

import math
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from analysis.errors import command_line  # noqa: E402
from analysis.formatting import finite, fixed  # noqa: E402
from analysis.side_by_side import two_sweeps_main  # noqa: E402
from analysis.table import block_orders, build_table  # noqa: E402

DEFAULT_TEST = "welch+permutation"
# The verdict words of a row that was tested (analysis/README.md, "Verdicts").
TESTED_VERDICTS = ("higher", "lower", "level", "inconclusive")
_SIDES = ("first", "second")


def _table(sweep):
    test = (sweep.manifest.test if sweep.manifest is not None else "") or DEFAULT_TEST
    return build_table(sweep, test=test), test


def _row_values(record):
    if record is None:
        return {"ppl": math.nan, "seeds": 0, "failed": "", "effect_pct": math.nan,
                "verdict": "", "test_bleu": math.nan}
    completed = int(record.get("completed", 0) or 0)
    # A row with a run that failed to learn measures no model: it is shown as failed, with no
    # number (the report's rule), however many of its other runs learned.
    failed = bool(record.get("failed"))
    return {"ppl": math.nan if failed else record.get("ppl_mean", math.nan),
            "seeds": int(record.get("ppl_n", 0) or 0),
            "failed": "" if not completed else "yes" if failed else "no",
            "effect_pct": record.get("ppl_effect_pct", math.nan),
            "verdict": "" if record["base"] else record.get("ppl_verdict", ""),
            "test_bleu": math.nan if failed else record.get("test_bleu_mean", math.nan)}


def editions_frame(first, second):
    """(rows frame, blocks frame, (first test, second test)): the comparison of the docstring."""
    tables = [_table(first), _table(second)]
    by_row = [{r["row"]: r for r in table.records} for table, _ in tables]
    keys = [r.key for r in first.rows] + [r.key for r in second.rows
                                           if r.key not in by_row[0]]
    rows = []
    for key in keys:
        record = {"row": key}
        for side, records in zip(_SIDES, by_row):
            record.update({f"{side}_{name}": value
                           for name, value in _row_values(records.get(key)).items()})
        # Only a tested verdict can move: a row without one in either edition (base, not
        # testable, failed) is compared by the columns before.
        words = record["first_verdict"], record["second_verdict"]
        tested = all(word in TESTED_VERDICTS for word in words)
        record["verdict_moves"] = "" if not tested else "yes" if words[0] != words[1] else "no"
        rows.append(record)
    orders = [block_orders(sweep, table.records) for sweep, (table, _) in
              zip((first, second), tables)]
    blocks = []
    for group in list(orders[0]) + [g for g in orders[1] if g not in orders[0]]:
        record = {"block": group}
        for side, order in zip(_SIDES, orders):
            tau, count, failed = order.get(group, (math.nan, 0, []))
            record.update({f"{side}_tau": tau, f"{side}_rows": count,
                           f"{side}_failed": " ".join(failed)})
        blocks.append(record)
    return pd.DataFrame.from_records(rows), pd.DataFrame.from_records(blocks), \
        (tables[0][1], tables[1][1])


def _percent(value):
    return f"{fixed(value, 1, sign=True)}%" if finite(value) else ""


def _ppl(value, seeds):
    return f"{fixed(value, 2)} ({seeds})" if finite(value) else ""


def _tau(value, rows):
    return f"{fixed(value, 2, sign=True)} over {rows}" if finite(value) else "n/a"


def markdown(rows, blocks, first, second, tests):
    lines = ["# Table 3: the first edition beside the second", "",
             f"- First edition: `{first.directory}` (test: {tests[0]}); second: "
             f"`{second.directory}` (test: {tests[1]}). Both are built by the report's own "
             "rules; 'PPL (seeds)' is the mean dev PPL over the completed seeds, 'effect' the "
             "row's dev PPL against its reference row, and a verdict moves when the two "
             "editions' words differ. A row with a run that failed to learn is shown as failed, "
             "with no number, effect or verdict.", "",
             "| row | first: dev PPL (seeds) | failed | effect | verdict | second: dev PPL "
             "(seeds) | failed | effect | verdict | test BLEU | verdict moves |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in rows.iterrows():
        lines.append(f"| {r['row']} | {_ppl(r['first_ppl'], r['first_seeds'])} "
                     f"| {r['first_failed']} | {_percent(r['first_effect_pct'])} "
                     f"| {r['first_verdict']} | {_ppl(r['second_ppl'], r['second_seeds'])} "
                     f"| {r['second_failed']} | {_percent(r['second_effect_pct'])} "
                     f"| {r['second_verdict']} | {fixed(r['second_test_bleu'], 2)} "
                     f"| {r['verdict_moves']} |")
    lines += ["", "Kendall tau of dev PPL against the paper's values per block (rows that learned; "
              "+1 = the paper's order):", "",
              "| block | first edition | left out (failed) | second edition | left out (failed) |",
              "|---|---|---|---|---|"]
    for _, b in blocks.iterrows():
        lines.append(f"| {b['block']} | {_tau(b['first_tau'], b['first_rows'])} "
                     f"| {b['first_failed']} | {_tau(b['second_tau'], b['second_rows'])} "
                     f"| {b['second_failed']} |")
    recovered = rows[(rows["first_failed"] == "yes") & (rows["second_failed"] == "no")]["row"]
    lost = rows[(rows["first_failed"] == "no") & (rows["second_failed"] == "yes")]["row"]
    moved = rows[rows["verdict_moves"] == "yes"]["row"]
    waiting = rows[rows["second_seeds"] == 0]["row"]
    lines.append("")
    lines.append(f"- Failed in the first edition and learn in the second: "
                 f"{', '.join(recovered) or 'none'}; failed in the second only: "
                 f"{', '.join(lost) or 'none'}.")
    lines.append(f"- Verdicts that move: {', '.join(moved) or 'none'} (of "
                 f"{int((rows['verdict_moves'] != '').sum())} rows tested in both).")
    if len(waiting):
        lines.append(f"- Rows with no completed run in the second edition yet: "
                     f"{', '.join(waiting)}.")
    return "\n".join(lines) + "\n"


def _write(first, second, out):
    rows, blocks, tests = editions_frame(first, second)
    rows.to_csv(out / "editions.csv", index=False, float_format="%.10g")
    (out / "editions.md").write_text(markdown(rows, blocks, first, second, tests),
                                     encoding="utf-8")
    return [out / "editions.md", out / "editions.csv"]


@command_line("analysis.editions")
def main(argv=None):
    return two_sweeps_main(
        argv, "analysis.editions",
        "Two editions of a table side by side: rows, verdicts and block orderings.",
        ("first", "the first edition's sweep directory"),
        ("second", "the second edition's sweep directory"), _write)

if __name__ == "__main__":
    sys.exit(main())
