"""docs/results/scaling.md is what bench/scaling.py renders from its committed raw files.

The script writes the raw measurements (docs/results/scaling/measurements.csv, network.csv,
plan.csv, meta.json) and then every generated block of the page from those files alone. Here the
blocks are recomputed from the committed files with the script's own functions and compared with
the page, so a stale page, or a number typed into a table by hand, fails. The measurement itself
(about 45 minutes on the two-node Slurm of cluster/local-slurm.sh) is not run here: `make
bench-scaling` runs it, `/usr/bin/python3 bench/scaling.py --render-only` rewrites the page from
the committed files."""

import difflib
import statistics
import sys
import types

import pandas as pd
import pytest

from conftest import ROOT

REGENERATE = "/usr/bin/python3 bench/scaling.py --render-only"


@pytest.fixture(scope="module")
def scaling():
    """The modules of bench/scaling.py this checks: what it measures (scaling_config), its runs
    and `attnlab plan`'s predictions (scaling_runs), its raw files and page (scaling_page)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import scaling_config
    import scaling_page
    import scaling_runs
    return types.SimpleNamespace(**{**vars(scaling_config), **vars(scaling_runs),
                                    **vars(scaling_page)})


def diff(page, fresh, name):
    return "".join(difflib.unified_diff(page.splitlines(keepends=True),
                                        fresh.splitlines(keepends=True),
                                        f"{name} (page)", f"{name} (from the CSV files)"))


def test_the_table_is_what_measurements_csv_gives(scaling):
    runs = scaling.read_csv(scaling.RESULTS / "measurements.csv")
    plan = scaling.read_csv(scaling.RESULTS / "plan.csv")
    fresh = scaling.render_table(runs, plan)
    page_lines = [line for line in scaling.PAGE.read_text().splitlines() if line.startswith("|")]
    table = fresh.splitlines()
    assert len(table) == 2 + len(scaling.MODELS) * len(scaling.LAYOUTS), fresh
    missing = [line for line in table if line not in page_lines]
    assert not missing, f"lines of the table not on the page (run {REGENERATE}):\n" + "\n".join(
        missing)


def test_every_generated_block_is_current(scaling):
    fresh = scaling.render_blocks(scaling.RESULTS)
    page = scaling.page_blocks(scaling.PAGE.read_text())
    assert set(page) == set(fresh), (sorted(page), sorted(fresh))
    for name, text in fresh.items():
        assert page[name] == text, f"block {name} is stale (run {REGENERATE}):\n" + diff(
            page[name], text, name)


def test_the_measured_column_is_the_median_of_the_clean_runs(scaling):
    # Independent of the script's own helpers: pandas over the raw CSV. The runs that count are
    # those during which other processes used at most CLEAN_OTHERS cores.
    runs = pd.read_csv(scaling.RESULTS / "measurements.csv")
    clean = runs[runs.others_cores <= scaling.CLEAN_OTHERS]
    assert (clean.groupby(["model", "layout"]).size() >= 3).all(), "3 clean runs of each"
    assert set(clean["layout"]) == set(scaling.LAYOUTS) and set(clean["model"]) == set(
        scaling.MODELS)
    assert (runs[runs.layout == "2nodes"]["nodes_seen"] == "n1+n2").all()
    for layout, (ranks, threads) in scaling.LAYOUT_SHAPE.items():
        assert (runs[runs.layout == layout]["world_size"] == ranks).all(), layout
        assert (runs[runs.layout == layout]["threads"] == threads).all(), layout
    assert (runs["rank_sessions"] == runs["world_size"]).all(), "one session per rank"
    table = scaling.render_table(scaling.read_csv(scaling.RESULTS / "measurements.csv"),
                                 scaling.read_csv(scaling.RESULTS / "plan.csv"))
    for (model, layout), group in clean.groupby(["model", "layout"]):
        total = len(runs[(runs.model == model) & (runs.layout == layout)])
        cell = (f"| {len(group)} of {total} | {statistics.median(group['step_s']):.3f} "
                f"({group['step_s'].min():.3f}..{group['step_s'].max():.3f}) |")
        line = next(x for x in table.splitlines()
                    if x.startswith(f"| {model} (") and f"| {scaling.LAYOUT_TEXT[layout]} |" in x)
        assert cell in line, (cell, line)


def test_the_predictions_are_attnlab_plans_at_the_measured_rate(scaling):
    runs = pd.read_csv(scaling.RESULTS / "measurements.csv")
    plan = pd.read_csv(scaling.RESULTS / "plan.csv")
    local = plan[plan.source == "local"]
    clean = runs[runs.others_cores <= scaling.CLEAN_OTHERS]
    for model, group in local.groupby("model"):
        rate = statistics.median(clean[(clean.model == model) & (clean.layout == "1rank")]
                                 ["rate_gflops_core"])
        assert group["rate_gflops_core"].round(3).eq(round(rate, 3)).all(), (model, rate)
        # compute(N) = step FLOPs / (N x cores per node x rate), as core/cluster/cost_model.h says.
        for row in group.itertuples():
            expected = row.gflop_step / (row.nodes * row.cores_per_node * row.rate_gflops_core)
            assert row.compute_s == pytest.approx(expected, rel=3e-3), row


def test_the_script_reads_attnlab_plans_table_as_plan_prints_it(scaling, attnlab, tmp_path):
    """bench/scaling.py parses `attnlab plan`'s output: its row and node numbers are the ones the
    table prints (a changed column layout would shift them)."""
    sweep = tmp_path / "one-row.yaml"
    sweep.write_text(f"base: {ROOT / 'experiments' / 'tasks' / 'reverse.yaml'}\n"
                     "train: {steps: 120}\nname: plan-parse\nsweep:\n  seeds: [1, 2]\n")
    profile = scaling.write_profile(tmp_path / "profile.yaml", 4, bandwidth=1.0, latency=10.0)
    plan = scaling.run_plan(attnlab, sweep, profile, 2.0)
    ((row, (runs, steps, gflop_step, params)),) = plan["rows"].items()
    assert (row, runs, steps) == ("plan-parse", 2, 120), plan["text"]
    assert gflop_step > 0 and params > 0
    # One node computes a step in step FLOPs / (4 cores x 2 GFLOP/s), with no allreduce.
    compute, comm, efficiency = plan["nodes"][1]
    assert compute == pytest.approx(gflop_step / 8, rel=5e-3) and comm == 0 and efficiency == 1
