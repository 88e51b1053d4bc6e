"""Block A across widths (analysis/width_effects.py): which rows are its points, at which width,
with which effect; the figure appears only with two widths."""

import math
import types

import pandas as pd

from analysis.sweep import Row
from analysis.width_effects import FILE, heads_across_widths, points


def table(with_wide_block=True):
    rows = [Row("base", "base", {}, {}, []),
            Row("A-h-1", "A", {"model.heads": 1, "model.d_k": 64, "model.d_v": 64}, {}, []),
            Row("A-h-16", "A", {"model.heads": 16, "model.d_k": 4, "model.d_v": 4}, {}, []),
            Row("C-d_model-128", "C", {"model.d_model": 128, "model.d_k": 16, "model.d_v": 16},
                {}, []),
            Row("big", "big", {"model.d_model": 128, "model.d_ff": 512, "model.heads": 16,
                               "model.dropout": 0.3}, {}, [])]
    if with_wide_block:
        rows.append(Row("A128-h-1", "A128", {"model.d_model": 128, "model.heads": 1,
                                             "model.d_k": 128, "model.d_v": 128}, {}, [],
                        versus="C-d_model-128"))
    runs = pd.DataFrame.from_records([{"row": "base", "model.d_model": 64, "model.heads": 8}])
    sweep = types.SimpleNamespace(rows=rows, base="base", runs=runs)
    sweep.row = lambda key: next(r for r in rows if r.key == key)
    effects = {"A-h-1": (-8.0, -15.0, -1.0, 7.52), "A-h-16": (9.0, 1.0, 17.0, -0.2),
               "C-d_model-128": (-37.0, -42.0, -32.0, -5.3), "big": (-20.0, -30.0, -10.0, -12.0),
               "A128-h-1": (2.0, -4.0, 8.0, 7.52)}
    records = [{"row": "base", "base": True}]
    for key, (effect, low, high, paper) in effects.items():
        if with_wide_block or key != "A128-h-1":
            records.append({"row": key, "base": False, "ppl_effect_pct": effect,
                            "ppl_effect_low_pct": low, "ppl_effect_high_pct": high,
                            "paper_ppl_effect_pct": paper})
    records.append({"row": "A-h-16-failed", "base": False, "ppl_effect_pct": math.nan})
    rows.append(Row("A-h-16-failed", "A", {"model.heads": 16}, {}, []))
    return types.SimpleNamespace(sweep=sweep, records=records)


def test_the_points_are_the_heads_rows_at_their_widths_with_their_effects():
    # big changes heads with d_ff and dropout, C d_model=128 no heads, the failed row has no
    # effect: none is a point. A-h-1 sits at base's width (64), A128-h-1 at 128.
    assert points(table()) == [(1, 64, -8.0, -15.0, -1.0, 7.52), (1, 128, 2.0, -4.0, 8.0, 7.52),
                               (16, 64, 9.0, 1.0, 17.0, -0.2)]


def test_the_figure_needs_two_widths(tmp_path):
    assert heads_across_widths(table(with_wide_block=False), tmp_path) == ([], "")
    files, note = heads_across_widths(table(), tmp_path)
    assert files == [str(tmp_path / FILE)] and note == ""
    assert (tmp_path / FILE).stat().st_size > 10_000
