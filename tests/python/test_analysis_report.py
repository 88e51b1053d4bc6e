"""The analysis on a sweep trained by the real program: `attnlab sweep --launcher local` writes
the manifest and trains every run (tiny reverse-task models, 2 seeds x 3 rows), and the
report's tables, statistics and figures are checked against values read independently with
h5py and computed with numpy/scipy. Bad inputs (empty directory, truncated file, mixed schema
versions, incomplete sweeps) are derived from copies of that sweep."""

import json
import math
import re
import shutil
import sys
import types

import h5py
import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from conftest import ROOT, run_attnlab

sys.path.insert(0, str(ROOT))

from analysis import bleu, build_table, figures, load_sweep  # noqa: E402
from analysis import table as table_module  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.manifest import read_manifest  # noqa: E402
from analysis.report import main as report_main  # noqa: E402
from analysis.report import parse_args, write_report  # noqa: E402
from analysis.sweep import Row  # noqa: E402

EXPERIMENT = f"""base: {ROOT}/experiments/tasks/reverse.yaml
name: tiny
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4, d_k: 8, d_v: 8}}
data: {{synthetic: {{train_size: 2000, dev_size: 50}}}}
train: {{batch_tokens: 400, steps: 24, lr: {{warmup: 10}}}}
eval: {{every: 8}}
log: {{every: 2}}
"""
SWEEP = """base: tiny.yaml
sweep:
  name: tiny
  rows:
    - {name: base, group: base, paper: {ppl: 4.92, bleu: 25.8, params: 65}}
    - {name: "A h=1", group: A, set: {model.heads: 1, model.d_k: 32, model.d_v: 32},
       paper: {ppl: 5.29, bleu: 24.9}}
    - {name: "A h=2", group: A, set: {model.heads: 2, model.d_k: 16, model.d_v: 16},
       paper: {ppl: 5.00, bleu: 25.5}}
  seeds: [1, 2]
"""


@pytest.fixture(scope="session")
def sweep_dir(attnlab, tmp_path_factory):
    """runs/tiny made by the real program: `attnlab sweep --launcher local` writes the manifest
    and trains every run with `attnlab train`."""
    work = tmp_path_factory.mktemp("analysis")
    (work / "tiny.yaml").write_text(EXPERIMENT)
    (work / "sweep.yaml").write_text(SWEEP)
    run_attnlab(attnlab, "sweep", work / "sweep.yaml", "--launcher", "local", "--out",
                work / "runs")
    directory = work / "runs" / "tiny"
    for run in read_manifest(directory / "manifest.yaml").runs:
        assert (directory / run.id / "run.h5").is_file(), run.name
    return directory


@pytest.fixture(scope="session")
def report(sweep_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert report_main([str(sweep_dir), "--out", str(out), "--attention", "base,A-h-1"]) == 0
    return out


def read_summary(path):
    with h5py.File(path, "r") as f:
        return {k: f["summary"].attrs[k] for k in f["summary"].attrs}, dict(f.attrs)


def independent_rows(sweep_dir):
    """row -> list of (seed, summary, root attrs) of its runs, read with h5py alone."""
    rows = {}
    for run in read_manifest(sweep_dir / "manifest.yaml").runs:
        summary, attrs = read_summary(sweep_dir / run.id / "run.h5")
        rows.setdefault(run.row, []).append((run.seed, summary, attrs))
    return rows


def test_loading_gives_one_row_per_run_with_config_summary_and_series(sweep_dir):
    sweep = load_sweep(sweep_dir)
    runs = sweep.runs
    assert len(runs) == 6 and set(runs["status"]) == {"completed"}
    assert [r.key for r in sweep.rows] == ["base", "A-h-1", "A-h-2"] and sweep.base == "base"
    assert sorted(runs["seed"]) == [1, 1, 1, 2, 2, 2]
    by_row = runs.set_index("name")
    assert by_row.at["A-h-1.seed2", "model.heads"] == 1
    assert by_row.at["A-h-2.seed1", "model.d_k"] == 16
    assert by_row.at["base.seed1", "model.d_model"] == 32
    assert by_row.at["A-h-1.seed1", "group"] == "A"
    assert by_row.at["base.seed2", "paper.ppl"] == pytest.approx(4.92)
    for _, run in runs.iterrows():
        summary, attrs = read_summary(run["path"])
        assert run["final_dev_ppl"] == pytest.approx(summary["final_dev_ppl"])
        assert run["params"] == summary["params"] and run["run_id"] == attrs["run_id"]
    train = sweep.series("train")
    evaluation = sweep.series("eval")
    with h5py.File(runs.iloc[0]["path"], "r") as f:
        steps = list(f["train"]["step"][...])
        ppl = list(f["eval"]["ppl"][...])
    first = runs.iloc[0]["run_id"]
    assert list(train.loc[train["run_id"] == first, "step"]) == steps
    assert list(evaluation.loc[evaluation["run_id"] == first, "ppl"]) == pytest.approx(ppl)
    assert {"row", "group", "seed", "tokens", "loss"} <= set(train.columns)
    assert evaluation["tokens"].notna().all()


def test_table_values_match_independent_means_stds_and_tests(sweep_dir):
    table = build_table(load_sweep(sweep_dir))
    records = {r["row"]: r for r in table.records}
    rows = independent_rows(sweep_dir)
    base_ppl = [s["final_dev_ppl"] for _, s, _ in rows["base"]]
    for row, runs in rows.items():
        record = records[row]
        ppl = np.array([s["final_dev_ppl"] for _, s, _ in runs])
        assert record["ppl_n"] == 2 and record["completed"] == 2
        assert record["ppl_mean"] == pytest.approx(ppl.mean(), rel=1e-12)
        assert record["ppl_std"] == pytest.approx(abs(ppl[0] - ppl[1]) / math.sqrt(2), rel=1e-9)
        accuracy = np.array([s["final_dev_accuracy"] for _, s, _ in runs]) * 100
        assert record["accuracy_pct_mean"] == pytest.approx(accuracy.mean(), abs=1e-12)
        assert record["params"] == runs[0][1]["params"]
        seconds = [s["train_seconds"] * a["world_size"] * a["threads"] / 3600 for _, s, a in runs]
        assert record["core_hours_total"] == pytest.approx(sum(seconds), rel=1e-12)
        assert record["flops_per_run"] == pytest.approx(
            np.mean([s["train_flops"] for _, s, _ in runs]), rel=1e-12)
        if row == "base":
            assert math.isnan(record["ppl_delta"]) and record["ppl_test"] == ""
            continue
        assert record["ppl_delta"] == pytest.approx(ppl.mean() - np.mean(base_ppl), rel=1e-9)
        assert record["ppl_test"] == "welch+permutation"
        welch = scipy_stats.ttest_ind(ppl, base_ppl, equal_var=False)[1]
        assert record["ppl_p_welch"] == pytest.approx(welch, rel=1e-9)
        # 2 against 2 seeds: 6 splits, the observed one and its mirror as extreme at least.
        assert record["ppl_p_perm"] >= 2 / 6
        assert record["ppl_p"] == pytest.approx(max(welch, record["ppl_p_perm"]), rel=1e-9)
    # Only the settings that differ from base are shown, base shows its own.
    assert table.settings == ["model.heads", "model.d_k", "model.d_v"]
    assert (records["base"]["set:model.heads"], records["A-h-1"]["set:model.heads"]) == ("4", "1")
    # Trend: tau over (base, A-h-1, A-h-2) of our PPL means vs the paper's 4.92, 5.29, 5.00.
    ours = [records[k]["ppl_mean"] for k in ("base", "A-h-1", "A-h-2")]
    tau = scipy_stats.kendalltau(ours, [4.92, 5.29, 5.00])[0]
    verdict = {1.0: "the paper's order", -1.0: "the reverse of the paper's order"}.get(
        round(tau, 12), "mostly the paper's order" if tau > 0 else "mostly reversed")
    assert f"dev PPL: tau = {tau:+.2f} ({verdict}) over 3 rows" in "\n".join(table.trend)


def test_the_welch_test_option_uses_welchs_p_and_says_so(sweep_dir, tmp_path):
    """--test welch: p (and its adjustment and verdict) is Welch's alone, the permutation p is
    still computed beside it, and the method and conclusions name the rule; an unknown test is
    refused."""
    sweep = load_sweep(sweep_dir)
    default = {r["row"]: r for r in build_table(sweep).records}
    table = build_table(sweep, test="welch")
    for record in table.records:
        if record["base"]:
            continue
        assert record["ppl_p"] == pytest.approx(record["ppl_p_welch"], rel=1e-12)
        assert record["ppl_p_perm"] == pytest.approx(default[record["row"]]["ppl_p_perm"])
        assert default[record["row"]]["ppl_p"] == pytest.approx(
            max(record["ppl_p_welch"], record["ppl_p_perm"]))
        assert record["ppl_test"] == "welch"
    assert any("p is Welch's p (the exact permutation test's is shown beside it, not used)"
               in line for line in table.method)
    with pytest.raises(AnalysisError, match="test 't': expected one of welch"):
        build_table(sweep, test="t")
    copy = copy_sweep(sweep_dir, tmp_path)
    assert report_main([str(copy), "--no-figures", "--test", "welch"]) == 0
    text = (copy / "report" / "report.md").read_text()
    assert ("higher or lower: the Holm-adjusted Welch p (the exact permutation test's is shown, "
            "not used) below 0.05") in text


def test_the_sweep_files_declared_test_decides_and_cannot_be_changed(attnlab, sweep_dir,
                                                                      tmp_path):
    """sweep.test: welch in the sweep file reaches the report through the manifest the program
    writes: without --test the verdicts use Welch's p and the method says the sweep declared it;
    --test welch repeats it; --test welch+permutation is refused, naming the manifest."""
    copy = copy_sweep(sweep_dir, tmp_path)
    work = tmp_path / "declared"
    work.mkdir()
    (work / "tiny.yaml").write_text(EXPERIMENT)
    (work / "sweep.yaml").write_text(SWEEP.replace("  name: tiny\n", "  name: tiny\n  test: welch\n"))
    run_attnlab(attnlab, "sweep", work / "sweep.yaml", "--dry-run", "--out", work / "runs")
    shutil.copy(work / "runs" / "tiny" / "manifest.yaml", copy / "manifest.yaml")
    assert read_manifest(copy / "manifest.yaml").runs == read_manifest(
        sweep_dir / "manifest.yaml").runs  # the test is not part of any run's id
    assert report_main([str(copy), "--no-figures", "--format", "md"]) == 0
    text = (copy / "report" / "report.md").read_text()
    assert "the Holm-adjusted Welch p (the exact permutation test's is shown, not used)" in text
    assert "The test was declared in the sweep file before its runs (sweep.test: welch)." in text
    assert report_main([str(copy), "--no-figures", "--format", "md", "--test", "welch"]) == 0
    with pytest.raises(AnalysisError, match=r"--test welch\+permutation: the sweep declared "
                       r"test welch before its runs \(sweep.test in .*sweep.yaml, .*manifest"):
        write_report(parse_args([str(copy), "--no-figures", "--test", "welch+permutation"]))


def test_trend_splits_a_block_by_the_settings_its_rows_change():
    """The paper's block C varies depth and d_ff (and width): besides one tau over the block,
    each setting gets its own, base included, here against scipy's tau-b."""
    rows = [Row("base", "base", {}, {}, []),
            Row("N1", "C", {"model.encoder_layers": 1, "model.decoder_layers": 1}, {}, []),
            Row("N4", "C", {"model.encoder_layers": 4, "model.decoder_layers": 4}, {}, []),
            Row("ff128", "C", {"model.d_ff": 128}, {}, []),
            Row("ff512", "C", {"model.d_ff": 512}, {}, [])]
    ours = {"base": 100.0, "N1": 80.0, "N4": 300.0, "ff128": 110.0, "ff512": 95.0}
    paper = {"base": 4.92, "N1": 6.11, "N4": 4.88, "ff128": 5.12, "ff512": 4.75}
    records = [{"row": k, "ppl_mean": ours[k], "paper_ppl": paper[k]} for k in ours]
    metric = types.SimpleNamespace(name="ppl", label="dev PPL", paper_key="ppl")
    # N4 failed to learn: it is left out of the block's order, and named.
    records[2]["failed"] = True
    sweep = types.SimpleNamespace(rows=rows, base="base")
    lines = table_module._trend(sweep, records, [metric])

    def tau(keys):
        return scipy_stats.kendalltau([ours[k] for k in keys], [paper[k] for k in keys])[0]

    learned = ["base", "N1", "ff128", "ff512"]
    block = [line for line in lines if line.startswith("- block C: ")]
    # Without N4: (100, 80, 110, 95) against (4.92, 6.11, 5.12, 4.75): 3 concordant pairs of 6,
    # 3 discordant, tau 0.
    assert tau(learned) == pytest.approx(0.0)
    assert block == ["- block C: dev PPL: tau = +0.00 (unrelated to the paper's order) over 4 "
                     "rows (left out, failed to learn: N4)"]
    assert tau(["base", "N1"]) == pytest.approx(-1.0)
    assert ("  - model.encoder_layers, model.decoder_layers: dev PPL: tau = -1.00 (the reverse "
            "of the paper's order) over 2 rows") in lines
    assert "  - model.d_ff: dev PPL: tau = +1.00 (the paper's order) over 3 rows" in lines


def markdown_table(text):
    lines = [line for line in text.split("## Table", 1)[1].splitlines() if line.startswith("|")]
    lines = lines[:lines.index(next(x for x in lines[2:] if x.startswith("| run |")))] \
        if any(x.startswith("| run |") for x in lines) else lines
    split = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines]
    return split[0], split[2:]


NUMBER = re.compile(r"[-+]?\d[\d,]*\.?\d*(?:e[-+]?\d+)?")


def test_markdown_latex_and_csv_agree(report):
    csv = pd.read_csv(report / "table.csv")
    header, rows = markdown_table((report / "report.md").read_text())
    tex = (report / "table.tex").read_text()
    body = tex.split("\\midrule", 1)[1].split("\\bottomrule")[0]
    tex_rows = [line for line in body.splitlines() if line.endswith("\\\\")]
    assert len(rows) == len(tex_rows) == len(csv) == 3
    for md_row, tex_row in zip(rows, tex_rows):
        # The same numbers in the same order (LaTeX escapes only the symbols around them).
        tex_cells = [c.strip() for c in tex_row[:-2].split(" & ")]
        assert len(tex_cells) == len(md_row)
        assert NUMBER.findall(" ".join(md_row)) == NUMBER.findall(" ".join(tex_cells))
    column = {name: header.index(name) for name in ("dev PPL", "params", "n", "paper dev PPL")}
    delta = header.index("Δ")
    for md_row, (_, record) in zip(rows, csv.iterrows()):
        mean, std = md_row[column["dev PPL"]].split(" ± ")
        assert float(mean) == round(record["ppl_mean"], 3)
        assert float(std) == round(record["ppl_std"], 3)
        assert int(md_row[column["params"]].replace(",", "")) == record["params"]
        assert int(md_row[column["n"]]) == record["completed"]
        assert float(md_row[column["paper dev PPL"]]) == record["paper_ppl"]
        if record["base"]:
            assert md_row[delta] == ""
        else:
            assert float(md_row[delta].split()[0]) == round(record["ppl_delta"], 3)
    assert "\\toprule" in tex and "\\bottomrule" in tex and "$\\pm$" in tex
    assert "Welch's t-test" in (report / "report.md").read_text()


def test_figures_are_written_and_non_empty(report, sweep_dir):
    names = ["learning_curves.png", "learning_curves_by_block.png", "seed_effects.png",
             "attention_entropy.png"] + [
        f"attention_{row}_{stack}.png" for row in ("base", "A-h-1")
        for stack in ("encoder_self", "decoder_self", "decoder_cross")]
    assert not (report / "attention_A-h-2_encoder_self.png").exists()  # not asked for
    for name in names:
        data = (report / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    text = (report / "report.md").read_text()
    assert "![learning_curves](learning_curves.png)" in text
    assert "![learning_curves_by_block](learning_curves_by_block.png)" in text
    with h5py.File(next(sweep_dir.glob("*/run.h5")), "r") as f:
        recorded = "grad_norm" in f["diagnostics"]
    if recorded:
        assert (report / "grad_norms.png").stat().st_size > 5000
    else:
        assert "skipped: per-layer gradient norms: not recorded" in text


def copy_sweep(sweep_dir, tmp_path):
    copy = tmp_path / "tiny"
    shutil.copytree(sweep_dir, copy, ignore=shutil.ignore_patterns("report", "ckpt"))
    return copy


def run_ids(directory):
    return [run.id for run in read_manifest(directory / "manifest.yaml").runs]


def test_incomplete_sweep_names_missing_and_failed_runs(sweep_dir, tmp_path, capsys):
    copy = copy_sweep(sweep_dir, tmp_path)
    ids = run_ids(copy)
    shutil.rmtree(copy / ids[2])  # A-h-1.seed1 never ran
    with h5py.File(copy / ids[5] / "run.h5", "r+") as f:
        f.attrs["status"] = "failed"  # A-h-2.seed2 crashed
    assert report_main([str(copy), "--no-figures"]) == 0
    warning = capsys.readouterr().err
    assert "2 of 6 runs are not completed" in warning
    assert "A-h-1.seed1" in warning and "missing" in warning and "A-h-2.seed2" in warning
    csv = pd.read_csv(copy / "report" / "table.csv").set_index("row")
    assert csv.at["A-h-1", "completed"] == 1 and csv.at["A-h-1", "runs"] == 2
    alone = read_summary(copy / ids[3] / "run.h5")[0]["final_dev_ppl"]
    assert csv.at["A-h-1", "ppl_mean"] == pytest.approx(alone)
    assert math.isnan(csv.at["A-h-1", "ppl_p"])  # one seed: no test
    text = (copy / "report" / "report.md").read_text()
    assert "**This sweep is incomplete.**" in text and "1 of 2 †" in text


def test_a_run_from_a_dirty_tree_is_flagged_in_the_table_and_the_conclusions(sweep_dir,
                                                                             tmp_path):
    copy = copy_sweep(sweep_dir, tmp_path)
    ids = run_ids(copy)
    for i, run_id in enumerate(ids):  # one commit; A-h-1.seed2 built with changes on top of it
        with h5py.File(copy / run_id / "run.h5", "r+") as f:
            f.attrs["git_commit"] = "0123456789ab-dirty" if i == 3 else "0123456789ab"
    assert report_main([str(copy), "--no-figures"]) == 0
    csv = pd.read_csv(copy / "report" / "table.csv").set_index("row")
    assert csv.at["A-h-1", "dirty_runs"] == 1 and csv.at["base", "dirty_runs"] == 0
    assert "0123456789ab-dirty" in csv.at["A-h-1", "commits"]
    text = (copy / "report" / "report.md").read_text()
    header, rows = markdown_table(text)
    prov = header.index("prov.")
    assert {row[1]: row[prov] for row in rows}["A-h-1"] == "1 §"
    assert {row[1]: row[prov] for row in rows}["base"] == ""
    line = next(line for line in text.splitlines() if line.startswith("- **A-h-1**"))
    assert "1 of 2 built from a dirty tree (§)" in line
    assert "1 runs were built from a working tree with uncommitted changes" in text


def test_a_row_with_versus_is_compared_with_that_row_and_the_paper_with_its_base(sweep_dir,
                                                                                 tmp_path):
    """sweep.rows[].versus: A-h-1 declared against A-h-2 (as block A at d_model 128 is against
    h = 8 at that width) gets Δ, Welch and the permutation test against A-h-2's seeds, the
    paper's effect still against the paper's base, and a block of its own whose order puts A-h-2
    in the paper base's place."""
    copy = copy_sweep(sweep_dir, tmp_path)
    manifest = copy / "manifest.yaml"
    text = manifest.read_text()
    for name in ("a-h-1.seed1", "a-h-1.seed2", "A-h-1.seed1", "A-h-1.seed2"):
        text = text.replace(f"    name: {name}\n    group: A\n",
                            f"    name: {name}\n    group: A-wide\n    versus: A-h-2\n")
    assert text.count("versus: A-h-2") == 2, text
    manifest.write_text(text)
    sweep = load_sweep(copy)
    table = build_table(sweep)
    records = {r["row"]: r for r in table.records}
    rows = independent_rows(sweep_dir)
    ours = np.array([s["final_dev_ppl"] for _, s, _ in rows["A-h-1"]])
    reference = np.array([s["final_dev_ppl"] for _, s, _ in rows["A-h-2"]])
    record = records["A-h-1"]
    assert record["versus"] == "A-h-2" and records["A-h-2"]["versus"] == "base"
    assert record["ppl_delta"] == pytest.approx(ours.mean() - reference.mean(), rel=1e-9)
    assert record["ppl_p_welch"] == pytest.approx(
        scipy_stats.ttest_ind(ours, reference, equal_var=False)[1], rel=1e-9)
    assert record["paper_ppl_effect_pct"] == pytest.approx(100 * (5.29 / 4.92 - 1))
    block = next(line for line in table.trend if line.startswith("- block A-wide: "))
    tau = scipy_stats.kendalltau([records["A-h-2"]["ppl_mean"], ours.mean()], [4.92, 5.29])[0]
    assert f"tau = {tau:+.2f}" in block and "over 2 rows" in block
    assert report_main([str(copy), "--no-figures"]) == 0
    report_text = (copy / "report" / "report.md").read_text()
    header, table_rows = markdown_table(report_text)
    assert {row[1]: row[header.index("vs")] for row in table_rows}["A-h-1"] == "A-h-2"
    line = next(line for line in report_text.splitlines() if line.startswith("- **A-h-1**"))
    assert " vs A-h-2, 2 seeds" in line
    manifest.write_text(text.replace("versus: A-h-2", "versus: A-h-3"))
    with pytest.raises(AnalysisError, match=r"manifest.yaml: row A-h-1 is compared with "
                                            r"'A-h-3', which the manifest does not list"):
        load_sweep(copy)


def test_bleu_is_tested_across_seeds_even_where_decodings_are_kept(sweep_dir, tmp_path):
    # A-h-1 decodes every sentence perfectly, base and A-h-2 drop words: a paired bootstrap over
    # sentences would give A-h-1 p = 0. Its two seeds' BLEU differ instead, and the table tests
    # the configuration, across seeds, with decodings present in every naming.
    copy = copy_sweep(sweep_dir, tmp_path)
    references = [f"the {w} sat on the mat near {i} red houses" for i, w in
                  enumerate(["cat", "dog", "cow", "hen", "fox", "owl", "eel", "ant"])]
    manifest = read_manifest(copy / "manifest.yaml")
    scores = {}
    for run in manifest.runs:
        hypotheses = references if run.row == "A-h-1" else [
            " ".join(r.split()[:-3]) for r in references]
        for name in ("dev.hyp.txt", "hyp.dev.txt"):
            (copy / run.id / name).write_text("\n".join(hypotheses) + "\n")
        (copy / run.id / "dev.ref.txt").write_text("\n".join(references) + "\n")
        score = bleu.corpus_bleu(hypotheses, references) - 20.0 * (run.seed - 1)
        scores.setdefault(run.row, []).append(score)
        with h5py.File(copy / run.id / "run.h5", "r+") as f:
            f["summary"].attrs["final_dev_bleu"] = score
    table = build_table(load_sweep(copy))
    records = {r["row"]: r for r in table.records}
    for row in ("A-h-1", "A-h-2"):
        assert records[row]["bleu_test"] == "welch+permutation"
        assert records[row]["bleu_p_welch"] == pytest.approx(scipy_stats.ttest_ind(
            scores[row], scores["base"], equal_var=False)[1], rel=1e-9)
    assert 0.01 < records["A-h-1"]["bleu_p"] < 1.0 and records["A-h-1"]["bleu_delta"] > 0
    assert any(line.startswith("dev BLEU: Welch's t-test (scipy, unequal variances, two-sided)")
               for line in table.method)
    assert not any("bootstrap" in line for line in table.method)


def test_empty_directory_is_bad_input(tmp_path, capsys):
    assert report_main([str(tmp_path)]) == 2
    assert "neither a manifest.yaml nor any <run>/run.h5" in capsys.readouterr().err
    assert report_main([str(tmp_path / "absent")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_a_truncated_run_file_is_named_and_left_out_the_rest_reported(sweep_dir, tmp_path,
                                                                       capsys):
    copy = copy_sweep(sweep_dir, tmp_path)
    victim = copy / run_ids(copy)[1] / "run.h5"
    data = victim.read_bytes()
    victim.write_bytes(data[:len(data) // 3])
    assert report_main([str(copy), "--no-figures"]) == 0
    error = capsys.readouterr().err
    assert "unreadable" in error and run_ids(copy)[1] in error
    report = (copy / "report" / "report.md").read_text()
    assert "unreadable run file, left out of every mean" in report and str(victim) in report
    assert "truncated" in report
    table = pd.read_csv(copy / "report" / "table.csv")
    assert table["completed"].sum() == len(run_ids(copy)) - 1


def test_a_run_file_of_another_schema_version_is_named_and_left_out(sweep_dir, tmp_path, capsys):
    copy = copy_sweep(sweep_dir, tmp_path)
    newer = copy / run_ids(copy)[4] / "run.h5"
    with h5py.File(newer, "r+") as f:
        f.attrs["schema_version"] = np.int64(2)
    assert report_main([str(copy), "--no-figures"]) == 0
    report = (copy / "report" / "report.md").read_text()
    assert str(newer) in report and "unknown schema_version 2" in report


def test_attnlab_report_runs_the_analysis(attnlab, sweep_dir, tmp_path):
    out = tmp_path / "out"
    result = run_attnlab(attnlab, "report", sweep_dir, "--out", out, "--no-figures",
                         "--format", "csv")
    assert "report written to" in result.stdout
    assert len(pd.read_csv(out / "table.csv")) == 3 and not (out / "report.md").exists()
    bad = run_attnlab(attnlab, "report", tmp_path / "absent", check=False)
    assert bad.returncode == 2 and "no such directory" in bad.stderr


def add_diagnostic(path, metric, steps, values, labels):
    """Writes /diagnostics/<metric> as core/io/run_log.h lays it out (step, value, labels)."""
    with h5py.File(path, "r+") as f:
        group = f["diagnostics"].create_group(metric)
        group.create_dataset("step", data=np.asarray(steps, dtype=np.int64), maxshape=(None,))
        values = np.asarray(values, dtype=np.float64)
        group.create_dataset("value", data=values, maxshape=(None,) + values.shape[1:])
        group.attrs["columns"] = ["step", "value"]
        group.attrs["labels"] = labels


def test_diagnostics_figures_when_the_runs_record_them(sweep_dir, tmp_path):
    copy = copy_sweep(sweep_dir, tmp_path)
    layers = ["encoder.layers.0", "decoder.layers.0"]
    attention = ["encoder.layers.0.self_attn", "decoder.layers.0.self_attn",
                 "decoder.layers.0.encoder_attn"]
    for index, run in enumerate(read_manifest(copy / "manifest.yaml").runs):
        path = copy / run.id / "run.h5"
        with h5py.File(path, "r") as f:
            heads = int(f["config"].attrs["model.heads"])
        add_diagnostic(path, "grad_norm", [8, 16], [[1.0 + index, 2.0], [0.5, 0.7]], layers)
        add_diagnostic(path, "attention_entropy", [16], np.full((1, 3, heads), 1.5), attention)
        add_diagnostic(path, "attention_logit_variance", [16], np.full((1, 3, heads), 2.0),
                       attention)
    sweep = load_sweep(copy)
    for draw, name in ((figures.gradient_norms, "grad_norms.png"),
                       (figures.diagnostic_entropy, "attention_entropy_training.png"),
                       (figures.logit_variance, "logit_variance.png")):
        written, note = draw(sweep, tmp_path)
        assert note == "" and written == [str(tmp_path / name)]
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    diagnostic = sweep.data[run_ids(copy)[0]].diagnostics["grad_norm"]
    assert list(diagnostic.steps) == [8, 16] and diagnostic.labels == layers


def test_bleu_statistics_match_attnlab_bleu(attnlab, tmp_path):
    references = ["The cat sat on the mat.", "It costs 3.50 dollars, not 4-5!",
                  "A quick brown fox jumps over the lazy dog", "\"Quoted\" words & symbols"]
    hypotheses = ["The cat sat on a mat .", "It costs 3.50 dollars, not 45",
                  "a quick brown fox jumped over the dog", "\"Quoted\" words and symbols"]
    (tmp_path / "ref.txt").write_text("\n".join(references) + "\n")
    (tmp_path / "hyp.txt").write_text("\n".join(hypotheses) + "\n")
    result = run_attnlab(attnlab, "bleu", tmp_path / "ref.txt", tmp_path / "hyp.txt", "--json")
    expected = json.loads(result.stdout)
    totals = bleu.corpus_stats(hypotheses, references).sum(axis=0)
    assert (totals[0], totals[1]) == (expected["hyp_len"], expected["ref_len"])
    assert bleu.bleu_from_stats(totals) == pytest.approx(expected["score"], abs=1e-4)


def test_provenance_names_hosts_commits_dates_and_summed_wall_time(report, sweep_dir):
    """The report's provenance section is read from the run files: hosts, commits, the span of
    creation times and the training seconds summed over runs (computed here with h5py)."""
    hosts, commits, created, seconds = set(), set(), [], 0.0
    for path in sweep_dir.glob("*/run.h5"):
        summary, attrs = read_summary(path)
        hosts.add(str(attrs["host"]))
        commits.add(str(attrs["git_commit"]))
        created.append(str(attrs["created"]))
        seconds += float(summary["train_seconds"])
    text = (report / "report.md").read_text()
    section = text[text.index("## Provenance"):text.index("## Table")]
    assert f"runs made on: {', '.join(sorted(hosts))};" in section
    assert f"attnlab commit(s): {', '.join(sorted(commits))}" in section
    assert f"runs created: {min(created)} to {max(created)}" in section
    assert f"summed over runs: {seconds / 60.0:.1f} min" in section


def test_notes_become_the_discussion_and_a_missing_notes_file_is_named(sweep_dir, tmp_path,
                                                                        capsys):
    notes = tmp_path / "notes.md"
    notes.write_text("Heads matter less than depth here.\n")
    out = tmp_path / "with-notes"
    assert report_main([str(sweep_dir), "--out", str(out), "--no-figures", "--notes",
                        str(notes)]) == 0
    text = (out / "report.md").read_text()
    discussion = text[text.index("## Discussion"):text.index("## Figures")]
    assert "Heads matter less than depth here." in discussion
    assert text.index("## Runs") < text.index("## Discussion")
    assert report_main([str(sweep_dir), "--out", str(tmp_path / "x"), "--no-figures",
                        "--notes", str(tmp_path / "absent.md")]) == 2
    assert f"--notes {tmp_path / 'absent.md'}: cannot read it" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing written before the input was checked


def test_relative_attention_entropy_is_one_for_uniform_and_zero_for_one_hot():
    from analysis.figures import relative_entropy
    uniform = np.full((2, 3, 4), 0.25)
    one_hot = np.zeros((2, 3, 4))
    one_hot[:, :, 1] = 1.0
    assert relative_entropy(uniform) == pytest.approx(1.0)
    assert relative_entropy(one_hot) == pytest.approx(0.0, abs=1e-9)
    # Half the heads uniform, half one-hot: the mean over heads.
    mixed = np.concatenate([uniform[:1], one_hot[:1]])
    assert relative_entropy(mixed) == pytest.approx(0.5)


@pytest.mark.slow
def test_conclusions_agree_with_the_table_they_summarise():
    """Each conclusion line of the committed CPU-scale Table 3 (plateau): its verdict follows
    the stated rule from the table's adjusted p-values, its numbers are the table's, failed rows
    are named as failures without numbers, and Holm's adjustment is statsmodels'."""
    from statsmodels.stats.multitest import multipletests
    from analysis.conclusions import conclusion_lines
    from analysis.sweep import load_sweep
    from analysis.table import build_table
    sweep = load_sweep(ROOT / "docs" / "results" / "table3-plateau" / "runs",
                       with_attention=False)
    table = build_table(sweep)
    lines = {re.match(r"- \*\*(.+?)\*\*", line).group(1): line
             for line in conclusion_lines(sweep, table) if line.startswith("- **")}
    records = {r["row"]: r for r in table.records}
    assert len(lines) == len(sweep.rows) - 1
    tested = [r for r in table.records if np.isfinite(r["ppl_p"])]
    holm = multipletests([r["ppl_p"] for r in tested], method="holm")[1]
    for record, adjusted in zip(tested, holm):
        assert record["ppl_p_adj"] == pytest.approx(adjusted, rel=1e-12)
        # Seeds 2 to 4 chosen adaptively: three looks, alpha spent over them.
        assert record["ppl_p"] == pytest.approx(
            min(1.0, 3 * max(record["ppl_p_welch"], record["ppl_p_perm"])), rel=1e-12)
    for row, line in lines.items():
        record = records[row]
        if record["failed"]:
            assert line.startswith(f"- **{row}**: failed: ") and "dev PPL" not in line
            assert "left out of tau" in line
            continue
        verdict = ("higher" if record["ppl_p_adj"] < 0.05 and record["ppl_delta"] > 0 else
                   "lower" if record["ppl_p_adj"] < 0.05 else
                   "level" if record["ppl_tost_p_adj"] < 0.05 else "inconclusive")
        assert line.startswith(f"- **{row}**: {verdict}: dev PPL {record['ppl_delta']:+.2f} "
                               f"({record['ppl_effect_pct']:+.1f}%"), line
        geometric = math.exp(np.mean(np.log(sweep.runs.set_index("run_id").loc[
            sweep.completed(row), "dev_ppl"].astype(float))))
        base_geometric = math.exp(np.mean(np.log(sweep.runs.set_index("run_id").loc[
            sweep.completed(sweep.base), "dev_ppl"].astype(float))))
        assert record["ppl_effect_pct"] == pytest.approx(
            100 * (geometric / base_geometric - 1), rel=1e-9)
    # The two rows whose decoders ignore their source are failures, not numbers.
    assert records["C-N-4"]["failed"] and records["big"]["failed"]
    assert math.isnan(records["C-N-4"]["ppl_p"])


@pytest.mark.slow
def test_the_generated_discussion_counts_what_the_conclusions_say():
    """On the committed CPU-scale Table 3 (no notes file): the discussion's counts are the
    conclusion lines' verdicts counted again."""
    from analysis.conclusions import conclusion_lines, discussion_lines
    from analysis.sweep import load_sweep
    from analysis.table import build_table
    sweep = load_sweep(ROOT / "docs" / "results" / "table3-plateau" / "runs",
                       with_attention=False)
    table = build_table(sweep)
    lines = [line for line in conclusion_lines(sweep, table) if line.startswith("- **")]
    text = " ".join(discussion_lines(sweep, table))
    for verdict in ("higher", "lower", "level", "inconclusive", "failed"):
        rows = [re.match(r"- \*\*(.+?)\*\*", line).group(1) for line in lines
                if re.match(rf"- \*\*.+?\*\*: {verdict}:", line)]
        if rows:
            assert f"{len(rows)} {verdict} ({', '.join(rows)})" in text
    assert text.startswith(f"Of {len(lines)} ablations: ")


def test_a_single_run_and_a_pair_get_a_report(sweep_dir, tmp_path, capsys):
    ids = run_ids(sweep_dir)
    one = tmp_path / "one"
    assert report_main([str(sweep_dir / ids[0]), "--out", str(one), "--no-figures"]) == 0
    table = pd.read_csv(one / "table.csv")
    assert len(table) == 1 and table["completed"].tolist() == [1]
    pair = tmp_path / "pair"
    assert report_main([str(sweep_dir / ids[0] / "run.h5"), str(sweep_dir / ids[-1]), "--out",
                        str(pair), "--no-figures"]) == 0
    runs = pd.read_csv(pair / "runs.csv")
    assert sorted(runs["run_id"]) == sorted([ids[0], ids[-1]])
    assert report_main([str(tmp_path / "nothing"), str(sweep_dir / ids[0])]) == 2
    assert "not a run" in capsys.readouterr().err
