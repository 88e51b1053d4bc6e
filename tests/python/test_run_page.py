"""analysis.runpage, the page of one trained model, on a tiny Bible run: its numbers are the run
log's, its translations are the lines of the files, its halvings are the ones the stop rule gives
for the run's dev losses, and data that is not what the run was scored on is refused."""

import json
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest
import yaml

from conftest import ROOT
from test_translate_cli import FIXTURE, attnlab_in, make_workdir

sys.path.insert(0, str(ROOT))

from analysis import convergence  # noqa: E402

# Every evaluation that is not a gain of 0.05 nats halves the rate (shrink_patience 1), so a
# 24-step run has some halvings and 12 evaluations (enough for the convergence test to judge).
SETTINGS = ["eval.every=2", "train.lr.shrink=0.5", "train.lr.shrink_patience=1",
            "train.stop.min_delta=0.05", "eval.checkpoint=best", "eval.beam=1"]


@pytest.fixture(scope="module")
def scored(attnlab, tmp_path_factory):
    work = make_workdir(tmp_path_factory.mktemp("runpage"), steps=24)
    overrides = [word for setting in SETTINGS for word in ("--set", setting)]
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", *overrides)
    attnlab_in(attnlab, work, "eval", "run", "--split", "test")
    attnlab_in(attnlab, work, "eval", "run", "--split", "dev")
    return work


def make_page(work, *extra, data=None):
    return subprocess.run([sys.executable, "-m", "analysis.runpage", str(work / "run"),
                           "--data", str(data or work / "data"), "--out",
                           str(work / "page.md"), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def config_patience(run_dir):
    """train.stop.patience of the run's stored config, read with h5py and PyYAML."""
    with h5py.File(run_dir / "run.h5", "r") as f:
        config = yaml.safe_load(f.attrs["config_yaml"])
    return config["train"]["stop"]["patience"]


def expected_halvings(eval_steps, losses, min_delta):
    """The evaluations after which the rate halved: every one that is not a gain (shrink_patience
    1), except the last, after which no step ran at the lower rate."""
    mark, steps = float("inf"), []
    for step, loss in zip(eval_steps, losses):
        if loss < mark - min_delta:
            mark = loss
        else:
            steps.append(int(step))
    return [step for step in steps if step < int(eval_steps[-1])]


def test_the_page_quotes_the_run_log_and_shows_the_files_lines(attnlab, scored):
    result = make_page(scored, "--title", "tiny")
    assert result.returncode == 0, result.stderr
    page = (scored / "page.md").read_text(encoding="utf-8")
    assert page.startswith("# tiny\n")
    assert (scored / "page" / "curve.png").stat().st_size > 0
    with h5py.File(scored / "run" / "run.h5", "r") as f:
        steps, losses = f["eval"]["step"][...], f["eval"]["loss"][...]
        nll = f["eval"]["nll"][...]
        test = dict(f["eval_test"].attrs)
        summary = dict(f["summary"].attrs)
    # BLEU as `attnlab bleu` scores the hypotheses (a second implementation, C++).
    scored_json = json.loads(attnlab_in(attnlab, scored, "bleu", FIXTURE / "test.es",
                                        scored / "run" / "hyp.test.txt", "--json").stdout)
    assert f"| test | best (step {int(test['step'])}) | beam 1," in page
    assert f"**{scored_json['score']:.2f}**" in page
    assert f"| {test['ppl']:.2f} | 85" in page
    # The learning-curve table: every listed row is the logged evaluation; best is marked.
    rows = re.findall(r"^\| ([\d,]+) \| ([\d.]+) \| ([\d.]+) \| (best)? \|$", page, re.M)
    assert len(rows) >= 10
    for step, loss, _, mark in rows:
        i = list(steps).index(int(step.replace(",", "")))
        assert float(loss) == pytest.approx(losses[i], abs=5e-5)
        assert (mark == "best") == (i == int(np.argmin(losses)))
    assert int(summary["best_step"]) == int(steps[int(np.argmin(losses))])
    # The halvings the stop rule gives for these dev losses.
    halvings = expected_halvings(steps, losses, 0.05)
    assert halvings, "no evaluation stalled: the test needs one"
    assert "The rate halved (reduce on plateau) after the evaluations of steps " + ", ".join(
        f"{step:,}" for step in halvings) + "." in page
    verdict = convergence.assess(list(nll), list(steps), summary["stop_reason"],
                                 patience=config_patience(scored / "run"),
                                 cross_attention=summary.get("dev_cross_attention_entropy"))
    assert verdict.reason in page
    # Attention concentration as `attnlab eval` measured it on the split.
    assert (f"decoder-encoder attention entropy {test['cross_attention_entropy']:.3f} of uniform"
            in page)
    # Translations: the files' lines, evenly spaced through the 85 test sentences.
    sources = (FIXTURE / "test.en").read_text(encoding="utf-8").splitlines()
    references = (FIXTURE / "test.es").read_text(encoding="utf-8").splitlines()
    hypotheses = (scored / "run" / "hyp.test.txt").read_text(encoding="utf-8").splitlines()
    shown = [int(n) - 1 for n in re.findall(r"^- \*\*line (\d+)\*\*$", page, re.M)]
    assert shown == [8, 25, 42, 59, 76]
    for i in shown:
        assert f"  - source: {sources[i]}\n  - reference: {references[i]}\n" \
               f"  - attnlab: {hypotheses[i]}\n" in page


def test_data_other_than_the_scored_is_refused(scored, tmp_path):
    other = tmp_path / "data"
    other.mkdir()
    for name in ("test.en", "dev.en", "dev.es"):
        (other / name).write_bytes((scored / "data" / name).read_bytes())
    lines = (scored / "data" / "test.es").read_text(encoding="utf-8").splitlines()
    lines[3] = "Otra cosa completamente distinta."
    (other / "test.es").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = make_page(scored, data=other)
    assert result.returncode == 2  # bad input (analysis.errors)
    assert "hyp.test.txt" in result.stderr and "stored" in result.stderr
    (other / "test.es").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    result = make_page(scored, data=other)
    assert result.returncode == 2  # bad input (analysis.errors)
    assert "84 references" in result.stderr
