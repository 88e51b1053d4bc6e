"""The committed CPU-scale Table 3 is what the analysis computes from the committed run logs.

docs/results/table3-small/runs/ keeps the sweep's manifest.yaml and one run.h5 per run (no
checkpoints): every number of docs/results/table3-small/ is recomputed here from them, so none is
typed by hand, and a change to the analysis that would alter the published table fails until the
report is regenerated. The logs must also still be the runs that experiments/small/table3.yaml
declares: a change to the sweep file (or to what a run id hashes) would make them another
experiment's.
"""

import difflib
import subprocess
import sys

import pytest

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis.manifest import read_manifest  # noqa: E402

# Whole sweeps and recomputed reports: outside `make test-fast`.
pytestmark = pytest.mark.slow

RESULTS = ROOT / "docs" / "results" / "table3-small"
LOGS = RESULTS / "runs"
SWEEP = ROOT / "experiments" / "small" / "table3.yaml"
REGENERATE = (f"/usr/bin/python3 -m analysis.report {LOGS.relative_to(ROOT)} "
              f"--out {RESULTS.relative_to(ROOT)} --notes docs/results/table3-small-notes.md")


def _diff(committed, fresh, name):
    return "".join(difflib.unified_diff(committed.splitlines(keepends=True),
                                        fresh.splitlines(keepends=True),
                                        f"{name} (committed)", f"{name} (recomputed)"))


def _markdown_tables(text):
    """The table lines of a report.md (everything that starts with '|')."""
    return "".join(line + "\n" for line in text.splitlines() if line.startswith("|"))


def test_logs_are_the_runs_the_sweep_file_declares(attnlab, tmp_path):
    run_attnlab(attnlab, "sweep", SWEEP, "--dry-run", "--out", tmp_path)
    declared = read_manifest(tmp_path / "table3-small" / "manifest.yaml")
    committed = read_manifest(LOGS / "manifest.yaml")
    # Everything but `source`, the sweep file's path as it was given on the command line.
    assert (committed.sweep, committed.sets) == (declared.sweep, declared.sets)
    assert committed.runs == declared.runs, f"{SWEEP.name} no longer declares the committed runs"
    run_files = {p.parent.name for p in LOGS.glob("*/run.h5")}
    assert run_files, f"{LOGS} holds no run.h5"
    unknown = run_files - {run.id for run in declared.runs}
    assert not unknown, f"run logs the manifest does not declare: {sorted(unknown)}"


def test_committed_tables_are_recomputed_from_the_logs(tmp_path):
    result = subprocess.run([sys.executable, "-m", "analysis.report", str(LOGS), "--out",
                             str(tmp_path), "--no-figures"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("table.csv", "runs.csv", "table.tex"):
        diff = _diff((RESULTS / name).read_text(), (tmp_path / name).read_text(), name)
        assert not diff, f"{name} is stale; regenerate it with\n  {REGENERATE}\n{diff[:4000]}"
    diff = _diff(_markdown_tables((RESULTS / "report.md").read_text()),
                 _markdown_tables((tmp_path / "report.md").read_text()), "report.md tables")
    assert not diff, f"report.md is stale; regenerate it with\n  {REGENERATE}\n{diff[:4000]}"


PILOT = ROOT / "docs" / "results" / "pilot-lr"


def test_the_committed_pilot_is_what_its_logs_give(tmp_path):
    """docs/results/pilot-lr: the table and the recipe chosen are recomputed from the committed
    run logs, and experiments/small/table3-plateau.yaml uses that recipe (noam with the chosen
    warmup and scale = peak * sqrt(d_model * warmup))."""
    import math
    import re
    result = subprocess.run([sys.executable, "-m", "analysis.pilot", str(PILOT / "runs"),
                             "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    diff = _diff((PILOT / "pilot.csv").read_text(), (tmp_path / "pilot.csv").read_text(),
                 "pilot.csv")
    assert not diff, f"pilot.csv is stale; regenerate with python3 -m analysis.pilot\n{diff}"
    chosen = re.search(r"\*\*Chosen: peak ([\d.e-]+), warmup (\d+)\*\*",
                       (tmp_path / "pilot.md").read_text())
    assert chosen and chosen.group(0) in (PILOT / "pilot.md").read_text()
    peak, warmup = float(chosen.group(1)), int(chosen.group(2))
    plateau = (ROOT / "experiments" / "small" / "table3-plateau.yaml").read_text()
    assert re.search(rf"^    warmup: {warmup}\b", plateau, re.M)
    scale = float(re.search(r"^    scale: ([\d.]+)", plateau, re.M).group(1))
    assert scale == pytest.approx(peak * math.sqrt(64 * warmup), rel=1e-3)
