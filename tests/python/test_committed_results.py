"""The committed sweep reports are what the analysis computes from the committed run logs.

docs/results/table3-small/runs/ and docs/results/study/runs/ keep each sweep's manifest.yaml and
one run.h5 per run (no checkpoints): every number of the report beside them is recomputed here from
them, so none is typed by hand, and a change to the analysis that would alter a published table
fails until the report is regenerated. The logs must also still be the runs that their sweep file
(experiments/small/table3.yaml, experiments/small/study.yaml) declares: a change to the sweep file
(or to what a run id hashes) would make them another experiment's. The same holds for
table3-plateau, whose report is recomputed from the runs committed so far while the sweep goes
on, and for the learning-rate and precision pilots and small-base's page.
"""

import difflib
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis.manifest import read_manifest  # noqa: E402

# Whole sweeps and recomputed reports: outside `make test-fast`.
pytestmark = pytest.mark.slow

# (report directory, sweep file, notes file) of each committed sweep.
COMMITTED = {
    "table3-small": (ROOT / "docs" / "results" / "table3-small",
                     ROOT / "experiments" / "small" / "table3.yaml",
                     "docs/results/table3-small-notes.md"),
    "study": (ROOT / "docs" / "results" / "study", ROOT / "experiments" / "small" / "study.yaml",
              "docs/results/study-notes.md"),
    # Still running: its report is regenerated from the runs committed at every sitting.
    "table3-budget": (ROOT / "docs" / "results" / "table3-budget",
                      ROOT / "experiments" / "small" / "table3-budget.yaml",
                      "docs/results/table3-budget-notes.md"),
    "table3-plateau": (ROOT / "docs" / "results" / "table3-plateau",
                       ROOT / "experiments" / "small" / "table3-plateau.yaml",
                       "docs/results/table3-plateau-notes.md"),
}


def regenerate(results, notes):
    logs = results / "runs"
    return (f"/usr/bin/python3 -m analysis.report {logs.relative_to(ROOT)} "
            f"--out {results.relative_to(ROOT)} --notes {notes}")


def _diff(committed, fresh, name):
    return "".join(difflib.unified_diff(committed.splitlines(keepends=True),
                                        fresh.splitlines(keepends=True),
                                        f"{name} (committed)", f"{name} (recomputed)"))


def _markdown_tables(text):
    """The table lines of a report.md (everything that starts with '|')."""
    return "".join(line + "\n" for line in text.splitlines() if line.startswith("|"))


# (run logs, sweep file) of every committed sweep, finished or still running on the next machine.
DECLARED = {name: (results / "runs", sweep) for name, (results, sweep, _) in COMMITTED.items()}
DECLARED["pilot-bf16"] = (ROOT / "docs" / "results" / "pilot-bf16" / "runs",
                          ROOT / "experiments" / "small" / "pilot-bf16.yaml")
for pilot, stage in (("pilot-budget", "runs"), ("pilot-budget-long", "runs-long")):
    DECLARED[pilot] = (ROOT / "docs" / "results" / "pilot-budget" / stage,
                       ROOT / "experiments" / "small" / f"{pilot}.yaml")
DECLARED["budget-check"] = (ROOT / "docs" / "results" / "budget-check" / "runs",
                            ROOT / "experiments" / "small" / "budget-check.yaml")


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_logs_are_the_runs_the_sweep_file_declares(attnlab, tmp_path, name):
    logs, sweep = DECLARED[name]
    # The sweep declares its adaptive seeds from the completed runs, so it plans over a copy of
    # their logs (checkpoints and decodings are not needed for that).
    shutil.copytree(logs, tmp_path / name, ignore=shutil.ignore_patterns("ckpt", "hyp.*"))
    run_attnlab(attnlab, "sweep", sweep, "--dry-run", "--out", tmp_path)
    declared = read_manifest(tmp_path / name / "manifest.yaml")
    committed = read_manifest(logs / "manifest.yaml")
    # Everything but `source`, the sweep file's path as it was given on the command line.
    assert (committed.sweep, committed.sets) == (declared.sweep, declared.sets)
    assert committed.runs == declared.runs, f"{sweep.name} no longer declares the committed runs"
    run_files = {p.parent.name for p in logs.glob("*/run.h5")}
    assert run_files, f"{logs} holds no run.h5"
    unknown = run_files - {run.id for run in declared.runs}
    assert not unknown, f"run logs the manifest does not declare: {sorted(unknown)}"


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_committed_tables_are_recomputed_from_the_logs(tmp_path, name):
    results, _, notes = COMMITTED[name]
    result = subprocess.run([sys.executable, "-m", "analysis.report", str(results / "runs"),
                             "--out", str(tmp_path), "--no-figures"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    command = regenerate(results, notes)
    for file in ("table.csv", "runs.csv", "table.tex"):
        diff = _diff((results / file).read_text(), (tmp_path / file).read_text(), file)
        assert not diff, f"{file} is stale; regenerate it with\n  {command}\n{diff[:4000]}"
    diff = _diff(_markdown_tables((results / "report.md").read_text()),
                 _markdown_tables((tmp_path / "report.md").read_text()), "report.md tables")
    assert not diff, f"report.md is stale; regenerate it with\n  {command}\n{diff[:4000]}"


# Pages that set two committed sweeps side by side: (module, its two sweep directories, the
# committed page's directory, the files it writes).
SIDE_BY_SIDE = {
    "budget-check": ("analysis.budget_check", ("docs/results/table3-budget/runs",
                                               "docs/results/budget-check/runs"),
                     "docs/results/budget-check", ("budget.md", "budget.csv")),
    "editions": ("analysis.editions", ("docs/results/table3-plateau/runs",
                                       "docs/results/table3-budget/runs"),
                 "docs/results/table3-budget", ("editions.md", "editions.csv")),
    "precision-replica": ("analysis.precision_replica", ("docs/results/table3-budget/runs",
                                                         "docs/results/table3-budget-bf16/runs"),
                          "docs/results/table3-budget-bf16", ("replica.md", "replica.csv")),
}


@pytest.mark.parametrize("name", sorted(SIDE_BY_SIDE))
def test_side_by_side_pages_are_recomputed_from_both_sweeps_logs(tmp_path, name):
    module, sweeps, committed, files = SIDE_BY_SIDE[name]
    command = [sys.executable, "-m", module, *sweeps]
    result = subprocess.run([*command, "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for file in files:
        diff = _diff((ROOT / committed / file).read_text(), (tmp_path / file).read_text(), file)
        assert not diff, (f"{file} is stale; regenerate it with\n  {' '.join(command[1:])} "
                          f"--out {committed}\n{diff[:4000]}")


PILOT = ROOT / "docs" / "results" / "pilot-lr"

# docs/results/small-base.md: analysis.runpage's page of small-base, whose run is the base row's
# seed 1 of the table3-plateau sweep (the same computation; tests/config/sweep_test.cpp), with the
# decodings `attnlab eval` added to its log.
SMALL_BASE_PAGE = ROOT / "docs" / "results" / "small-base.md"
SMALL_BASE_RUN = "docs/results/table3-plateau/runs/bfa1f731ef87"
SMALL_BASE_NOTES = "docs/results/small-base-notes.md"
SMALL_BASE_TITLE = "small-base: Bible English -> Spanish, trained to a plateau"


def small_base_command(data, out, notes=SMALL_BASE_NOTES):
    return [sys.executable, "-m", "analysis.runpage", SMALL_BASE_RUN, "--data", str(data),
            "--out", str(out), "--title", SMALL_BASE_TITLE, "--notes", str(notes)]


def notes_beside(notes, page_dir, fresh_page_dir):
    """A copy of the notes file where it stands to `fresh_page_dir` as the committed one stands
    to `page_dir`: its relative links then come out of the page as they do in the committed one
    (analysis/notes.py rewrites them from the notes file's directory to the page's)."""
    copy = pathlib.Path(os.path.normpath(fresh_page_dir / os.path.relpath(ROOT / notes,
                                                                           ROOT / page_dir)))
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes((ROOT / notes).read_bytes())
    return copy


def test_the_small_base_page_is_what_its_run_gives(attnlab, tmp_path):
    """The page is regenerated from the committed run log and hypotheses, against the Bible data
    made again here (its BLEU scored again from the hypotheses), and must equal the committed
    one; the run must be the base row's seed 1 of the committed table3-plateau manifest."""
    run_attnlab(attnlab, "data", "bible", "--out", tmp_path / "bible")
    notes = notes_beside(SMALL_BASE_NOTES, "docs/results", tmp_path)
    result = subprocess.run(small_base_command(tmp_path / "bible", tmp_path / "small-base.md",
                                               notes),
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    command = " ".join(small_base_command("data/bible", "docs/results/small-base.md")[1:])
    diff = _diff(SMALL_BASE_PAGE.read_text(encoding="utf-8"),
                 (tmp_path / "small-base.md").read_text(encoding="utf-8"), "small-base.md")
    assert not diff, f"small-base.md is stale; regenerate it with\n  python3 {command}\n{diff}"
    manifest = read_manifest(ROOT / "docs" / "results" / "table3-plateau" / "runs" /
                             "manifest.yaml")
    run = next(run for run in manifest.runs if run.id == SMALL_BASE_RUN.rsplit("/", 1)[1])
    assert (run.row, run.seed) == ("base", 1)


def test_the_committed_pilot_is_what_its_logs_give(tmp_path):
    """docs/results/pilot-lr: the table and the recipe chosen are recomputed from the committed
    run logs, and small-base (experiments/small/base.yaml, whose recipe table3-plateau.yaml
    shares) uses that recipe (noam with the chosen warmup and scale = peak * sqrt(d_model *
    warmup))."""
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
    plateau = (ROOT / "experiments" / "small" / "base.yaml").read_text()
    assert re.search(rf"^    warmup: {warmup}\b", plateau, re.M)
    scale = float(re.search(r"^    scale: ([\d.]+)", plateau, re.M).group(1))
    assert scale == pytest.approx(peak * math.sqrt(64 * warmup), rel=1e-3)


PRECISION_PILOT = ROOT / "docs" / "results" / "pilot-bf16"


def test_the_committed_precision_pilot_is_what_its_logs_give(tmp_path):
    """docs/results/pilot-bf16: the page (margins, verdict, table) is recomputed from the
    committed run logs with its notes and must equal the committed one (DECLARED checks that the
    runs are the ones experiments/small/pilot-bf16.yaml declares)."""
    command = [sys.executable, "-m", "analysis.precision_pilot",
               "docs/results/pilot-bf16/runs", "--out", str(tmp_path / "pilot-bf16"), "--notes",
               str(notes_beside("docs/results/pilot-bf16-notes.md", "docs/results/pilot-bf16",
                                tmp_path / "pilot-bf16"))]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("pilot-bf16.md", "pilot-bf16.csv"):
        diff = _diff((PRECISION_PILOT / name).read_text(encoding="utf-8"),
                     (tmp_path / "pilot-bf16" / name).read_text(encoding="utf-8"), name)
        assert not diff, (f"{name} is stale; regenerate it with python3 -m "
                          f"analysis.precision_pilot docs/results/pilot-bf16/runs --out "
                          f"docs/results/pilot-bf16 --notes docs/results/pilot-bf16-notes.md\n{diff}")


PILOT_BUDGET = ROOT / "docs" / "results" / "pilot-budget"


def test_the_committed_budget_pilot_is_what_its_logs_give(tmp_path):
    """docs/results/pilot-budget: the table (which runs learn) and the choice, or the absence of
    one while rows have no run yet, are recomputed from the committed run logs and manifest."""
    # The second stage (experiments/small/pilot-budget-long.yaml), once it has runs.
    longer = (["--longer", str(PILOT_BUDGET / "runs-long")]
              if (PILOT_BUDGET / "runs-long" / "manifest.yaml").is_file() else [])
    result = subprocess.run([sys.executable, "-m", "analysis.pilot_budget",
                             str(PILOT_BUDGET / "runs"), *longer, "--out", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    diff = _diff((PILOT_BUDGET / "pilot.csv").read_text(), (tmp_path / "pilot.csv").read_text(),
                 "pilot.csv")
    assert not diff, f"pilot.csv is stale; regenerate with python3 -m analysis.pilot_budget\n{diff}"
    fresh = (tmp_path / "pilot.md").read_text().splitlines()
    committed = (PILOT_BUDGET / "pilot.md").read_text()
    verdicts = [line for line in fresh if line.startswith(("- scale", "**"))]
    assert verdicts and all(line in committed for line in verdicts), verdicts
    # The table's recipe (experiments/small/budget.yaml) takes the rate the pilot chose, once it
    # has chosen one.
    chosen = re.search(r"\*\*Chosen: noam scale ([0-9.]+)\*\*", "\n".join(fresh))
    if chosen:
        recipe = yaml.safe_load((ROOT / "experiments" / "small" / "budget.yaml").read_text())
        assert recipe["train"]["lr"]["scale"] == float(chosen.group(1)), chosen.group(0)
