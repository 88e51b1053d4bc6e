"""attnlab analysis: run logs (HDF5) and sweep manifests into pandas, the paper's tables with
statistics, and figures.

    from analysis import load_sweep, build_table
    sweep = load_sweep("runs/heads")          # sweep.runs: one row per run; sweep.series("eval")
    table = build_table(sweep)                # table.records: the rows of table.csv

Command line: python3 -m analysis.report runs/<sweep> [--out DIR] [--format md,tex,csv]
(also `attnlab report`). The table tests every metric across seeds (Welch's t-test);
paired_bootstrap compares two decodings of one test set (README.md, "Significance").
"""

from analysis.errors import AnalysisError
from analysis.runfile import RunData, read_run
from analysis.stats import kendall_tau, paired_bootstrap, summarize, welch_t_test
from analysis.sweep import Sweep, load_sweep
from analysis.table import Table, build_table

__all__ = ["AnalysisError", "RunData", "Sweep", "Table", "build_table", "kendall_tau",
           "load_sweep", "paired_bootstrap", "read_run", "summarize", "welch_t_test"]
