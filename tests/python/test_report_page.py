"""report.html in a real browser: Debian's Chromium, headless, loads the page written for a copy of
the committed pilot-bf16 runs (2 rows x 2 seeds, with attention probes; one run turned back into a
running one and paper values added to the manifest), and a script added to the copy of the page
writes into the DOM what the test checks: JavaScript errors, the plotly traces of every plot, the
table's rows and their order after a click on a column header. The expected counts are computed
from the run files read with h5py alone. `attnlab report --watch` is checked through the program:
the page follows a run that appears, reloads itself, and Ctrl-C ends the watch cleanly."""

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import yaml

from conftest import ROOT, attnlab_env

sys.path.insert(0, str(ROOT))

from analysis.report import main as report_main  # noqa: E402

PILOT = ROOT / "docs" / "results" / "pilot-bf16" / "runs"
STACKS = ("encoder_self", "decoder_self", "decoder_cross")
PAPER_PPL = {"precision-fp32": 4.92, "precision-bf16": 5.07}
CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian package chromium, in the "
    "Makefile's DEPS): report.html cannot be loaded in a browser")

# Runs first in <head>: records every error the page's scripts raise or log.
ERRORS_PROBE = """<script>
window.probeErrors = [];
window.addEventListener("error", function (e) { probeErrors.push("error: " + e.message); });
window.addEventListener("unhandledrejection", function (e) {
  probeErrors.push("unhandled rejection: " + e.reason); });
var probeConsoleError = console.error;
console.error = function () {
  probeErrors.push("console.error: " + Array.prototype.join.call(arguments, " "));
  probeConsoleError.apply(console, arguments); };
</script>"""

# Runs after the page has loaded: what the plots hold, what the table shows, and the table after
# one and two clicks on the dev PPL header, written into <pre id="probe"> for --dump-dom.
RESULT_PROBE = r"""<script>
window.addEventListener("load", function () { setTimeout(function () {
  var plots = Array.prototype.map.call(document.querySelectorAll(".js-plotly-plot"),
    function (gd) { return {traces: gd.data.length, rendered: gd._fullData.length,
      svg: gd.querySelectorAll(".main-svg").length,
      names: gd.data.map(function (t) { return t.name || ""; }),
      hovers: gd.data.map(function (t) { return t.hovertemplate || ""; }),
      visible: gd.data.map(function (t) { return t.visible === undefined ? true : t.visible; })};
    });
  var table = document.getElementById("results");
  function column(index) { return Array.prototype.map.call(table.tBodies[0].rows,
    function (r) { return r.cells[index].textContent.replace(/ \(base\)$/, ""); }); }
  var headers = Array.prototype.map.call(table.tHead.rows[0].cells,
    function (c) { return c.textContent; });
  var ppl = headers.indexOf("dev PPL");
  var result = {errors: probeErrors, plots: plots, headers: headers, rows: column(1)};
  table.tHead.rows[0].cells[ppl].click();
  result.ascending = column(1);
  table.tHead.rows[0].cells[ppl].click();
  result.descending = column(1);
  result.unfinished = Array.prototype.map.call(document.querySelectorAll("li"),
    function (li) { return li.textContent; });
  var pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
}, 0); });
</script>"""


def load_in_chromium(page, work):
    """The page's DOM after Chromium has loaded it and run its scripts (and the probes)."""
    text = page.read_text(encoding="utf-8")
    head, body_end = text.index("<head>") + len("<head>"), text.rindex("</body>")
    probed = work / "probed.html"
    probed.write_text(text[:head] + ERRORS_PROBE + text[head:body_end] + RESULT_PROBE
                      + text[body_end:], encoding="utf-8")
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-dev-shm-usage",
         f"--user-data-dir={work / 'chromium-profile'}",
         "--virtual-time-budget=10000", "--dump-dom", probed.as_uri()],
        capture_output=True, text=True, timeout=180)
    match = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert match, f"no probe result in the DOM (exit {result.returncode}):\n{result.stderr[-3000:]}"
    return json.loads(match.group(1).replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


@pytest.fixture()
def pilot(tmp_path):
    """A copy of the committed pilot-bf16 sweep with paper values in its manifest and
    precision-bf16.seed2 marked as still running."""
    sweep = tmp_path / "pilot"
    shutil.copytree(PILOT, sweep)
    manifest = yaml.safe_load((sweep / "manifest.yaml").read_text())
    for run in manifest["runs"]:
        run["paper"] = {"ppl": PAPER_PPL[run["name"].rsplit(".", 1)[0]]}
        if run["name"] == "precision-bf16.seed2":
            with h5py.File(sweep / run["id"] / "run.h5", "r+") as file:
                file.attrs["status"] = "running"
    (sweep / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return sweep, manifest


def expected_plots(sweep, manifest):
    """Traces per plot in page order, from the run files alone: for each of the dev PPL and the
    training NLL curves, per row with k runs that logged the value: its mean, a band of two when
    k > 1, and k seed lines; the seed plot: completed seeds, row means, the running run, the
    paper; then per row and stack one heat map per layer and head of the first completed seed."""
    rows = {}
    for run in manifest["runs"]:
        rows.setdefault(run["name"].rsplit(".", 1)[0], []).append(run)
    curves = []
    for group, column in (("eval", "ppl"), ("train", "nll")):
        traces = 0
        for runs in rows.values():
            logged = 0
            for run in runs:
                with h5py.File(sweep / run["id"] / "run.h5", "r") as file:
                    logged += file[group][column].shape[0] > 0
            traces += (1 + 2 * (logged > 1) + logged) if logged else 0
        curves.append(traces)
    attention = []
    for runs in rows.values():
        for run in sorted(runs, key=lambda r: r["seed"]):
            with h5py.File(sweep / run["id"] / "run.h5", "r") as file:
                if file.attrs["status"] != "completed":
                    continue
                probe = file["attention"][sorted(file["attention"])[0]]
                attention += [sum(probe[stack][layer].shape[0] for layer in probe[stack])
                              for stack in STACKS]
            break
    return curves + [4] + attention


def completed_means(sweep, manifest):
    """Row -> mean final dev PPL over its completed runs, read with h5py."""
    values = {}
    for run in manifest["runs"]:
        with h5py.File(sweep / run["id"] / "run.h5", "r") as file:
            if file.attrs["status"] == "completed":
                values.setdefault(run["name"].rsplit(".", 1)[0], []).append(
                    float(file["summary"].attrs["final_dev_ppl"]))
    return {row: float(np.mean(v)) for row, v in values.items()}


@needs_chromium
def test_report_page_loads_in_chromium_with_every_trace_and_a_sortable_table(pilot, tmp_path):
    sweep, manifest = pilot
    out = tmp_path / "report"
    assert report_main([str(sweep), "--out", str(out), "--format", "html",
                        "--attention", "all"]) == 0
    page = out / "report.html"
    assert not re.search(r"<script[^>]+src=", page.read_text(encoding="utf-8")), \
        "the page loads a script from elsewhere: it must be self-contained"
    probe = load_in_chromium(page, tmp_path)
    assert probe["errors"] == []
    assert [p["traces"] for p in probe["plots"]] == expected_plots(sweep, manifest)
    for plot in probe["plots"]:
        assert plot["rendered"] == plot["traces"] and plot["svg"] >= 1, plot
    dev_curves = probe["plots"][0]
    assert "precision-bf16 (n=2, 1 not completed)" in dev_curves["names"]
    assert dev_curves["names"].count("precision-bf16: seeds") == 2
    for name, visible in zip(dev_curves["names"], dev_curves["visible"]):
        assert visible == ("legendonly" if name.endswith(": seeds") else True), name
    assert sum("precision-bf16.seed2 (running)" in h for h in dev_curves["hovers"]) == 1
    assert probe["plots"][2]["names"] == ["completed seeds", "row mean (as the table)",
                                          "not completed (latest evaluation)", "paper"]
    means = completed_means(sweep, manifest)
    assert sorted(probe["rows"]) == sorted(means)
    assert probe["ascending"] == sorted(means, key=means.get)
    assert probe["descending"] == sorted(means, key=means.get, reverse=True)
    assert any(re.match(r"precision-bf16\.seed2 \(id \w+\): running, step \d+", line)
               for line in probe["unfinished"]), probe["unfinished"]


def test_report_page_uses_the_tables_cells_and_refreshes_only_when_watched(pilot, tmp_path):
    sweep, _ = pilot
    out = tmp_path / "report"
    assert report_main([str(sweep), "--out", str(out), "--format", "md,html",
                        "--no-figures"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert 'http-equiv="refresh"' not in page
    markdown = (out / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Table", 1)[1].split("\n## ", 1)[0]
    table_lines = [line for line in section.splitlines()
                   if line.startswith("| ") and "precision-" in line]
    assert len(table_lines) == 2
    for line in table_lines:  # every cell of the Markdown table is a cell of the page's table
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert "".join(f"<td>{html.escape(c)}</td>" for c in cells) in page, line
    assert not list(out.glob("*.png")), "--no-figures drew figures"


def test_report_interval_needs_watch_and_a_positive_number(tmp_path):
    assert report_main([str(PILOT), "--out", str(tmp_path), "--interval", "5"]) == 2
    assert report_main([str(PILOT), "--out", str(tmp_path), "--watch", "--interval", "0"]) == 2
    assert report_main([str(PILOT), "--out", str(tmp_path), "--watch", "--interval", "x"]) == 2


def wait_for(condition, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_watch_follows_a_sweep_and_stops_cleanly_on_ctrl_c(attnlab, pilot, tmp_path):
    """Through the program, as a user runs it: a run that appears during the watch is in the next
    page, the page reloads itself every interval, and Ctrl-C at the terminal (SIGINT to the
    process group) ends attnlab and the analysis with exit 0 and no traceback."""
    sweep, manifest = pilot
    late = sweep / manifest["runs"][0]["id"] / "run.h5"
    held = tmp_path / "held.h5"
    late.rename(held)
    out = tmp_path / "watched"
    page = out / "report.html"
    process = subprocess.Popen(
        [str(attnlab), "report", str(sweep), "--out", str(out), "--format", "html",
         "--attention", "none", "--watch", "--interval", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=attnlab_env(),
        start_new_session=True)
    try:
        def shows(text):
            return lambda: page.is_file() and text in page.read_text(encoding="utf-8")
        wait_for(shows("1 missing"), "a page with the missing run")
        assert '<meta http-equiv="refresh" content="1">' in page.read_text(encoding="utf-8")
        held.rename(late)
        wait_for(shows("3 completed, 1 running)"), "a page with the run that appeared")
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, stderr
    assert "stopped watching" in stderr and "Traceback" not in stderr, stderr
    assert "report written to" in stdout
