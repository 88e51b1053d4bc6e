"""`python3 -m analysis.studies runs/studies [--run] [--page docs/results/studies.md]`: the four
seed-note studies of experiments/studies/ (sqrt_dk, warmup_norm, positions_length, heads).

With --run it first trains every study through `attnlab sweep FILE --launcher local --out
RUNS_DIR` (completed runs are skipped) and translates the positions_length test set (see
evaluate_long below); then, and without --run, it reads the runs and writes the page with its
figures and tables (figures in the page's directory, under <page stem>/). Every number in the
page comes from the run files; the sentences that describe a result are chosen by comparing
those numbers.

Exit codes: 0 written, 2 bad input (missing study directory, unreadable run file), 1 a command
failed.
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import time

if __package__ in (None, ""):  # run as a file: the checkout's root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from analysis import studies_data as data  # noqa: E402
from analysis import studies_figures as figures  # noqa: E402
from analysis.errors import AnalysisError  # noqa: E402
from analysis.sweep import load_sweep  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
STUDIES = ("sqrt_dk", "warmup_norm", "positions_length", "heads")
TIMING = "studies_timing.json"
LONG_VIEW = "long_eval"   # positions_length: <run>/long_eval/, the run seen with a longer max_length
LONG_GROUP = "test_long"  # ... whose `attnlab eval --split test` goes to hyp.test.txt there


# --- running ---------------------------------------------------------------------------------

def _record_time(runs_dir, key, seconds):
    path = pathlib.Path(runs_dir) / TIMING
    timing = json.loads(path.read_text()) if path.exists() else {}
    timing[key] = timing.get(key, 0.0) + seconds
    path.write_text(json.dumps(timing, indent=1, sort_keys=True) + "\n")


def _call(command, runs_dir, key):
    print("+ " + " ".join(map(str, command)), flush=True)
    start = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.setdefault("OPENBLAS_CORETYPE", "Zen")
    result = subprocess.run(["nice", "-n", "10", *map(str, command)], cwd=ROOT, env=env)
    _record_time(runs_dir, key, time.monotonic() - start)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} exited {result.returncode}")


def long_view(run_dir, max_length):
    """A directory that `attnlab eval` reads as the run with data.max_length = `max_length`.

    `attnlab eval` cuts every test side to the run's data.max_length - 1 pieces (make_eval_set)
    and load_run_config() prefers <dir>/config.yaml to the config stored in run.h5, so the view
    holds a config.yaml inheriting the run's own (`base: ../config.yaml`) with only
    data.max_length changed, the run's checkpoints (a symbolic link) and a copy of run.h5 for the
    results. The run itself is left as it was."""
    view = pathlib.Path(run_dir) / LONG_VIEW
    view.mkdir(exist_ok=True)
    (view / "config.yaml").write_text(
        "# The run, evaluated on test sentences longer than it was trained on (analysis.studies)\n"
        f"base: ../config.yaml\ndata: {{max_length: {max_length}}}\n", encoding="utf-8")
    if not (view / "ckpt").exists():
        (view / "ckpt").symlink_to("../ckpt")
    if not (view / "run.h5").exists():
        shutil.copyfile(pathlib.Path(run_dir) / "run.h5", view / "run.h5")
    return view


def run_studies(args):
    runs_dir = pathlib.Path(args.runs)
    for study in args.only:
        sweep_file = ROOT / "experiments" / "studies" / f"{study}.yaml"
        command = [args.attnlab, "sweep", sweep_file, "--launcher", "local", "--out", runs_dir]
        if args.max_parallel:
            command += ["--max-parallel", args.max_parallel]
        _call(command, runs_dir, study)
    if "positions_length" in args.only:
        evaluate_long(runs_dir / "positions_length", args.attnlab, runs_dir)


def evaluate_long(sweep_dir, attnlab, runs_dir):
    """Greedy test translations of every completed positions_length run through its long view,
    with max_length = max_positions - 2 (the largest the config rules allow)."""
    sweep = load_sweep(sweep_dir, with_attention=False)
    for _, run_id, run in data.completed_runs(sweep):
        run_dir = pathlib.Path(run.path).parent
        view = long_view(run_dir, int(run.config["model.max_positions"]) - 2)
        if (view / "hyp.test.txt").exists():
            continue
        _call([attnlab, "eval", view, "--split", "test"], runs_dir, "positions_length_eval")


# --- the tokenizer of a run ------------------------------------------------------------

def tokenizer_path(run):
    """The SentencePiece model of a corpus run (core/train/corpus_source.h: data.tokenizer.model,
    else beside data.train.src), or None when it is not there."""
    model = run.config.get("data.tokenizer.model") or ""
    if not model:
        source = run.config.get("data.train.src", "")
        if not source:
            return None
        vocab = run.config.get("data.tokenizer.vocab_size")
        model = str(pathlib.Path(source).parent / f"sentencepiece.bpe.{vocab}.model")
    path = ROOT / model
    return path if path.exists() else None


def piece_namer(run):
    """id strings -> piece texts for a corpus run, or None when its tokenizer is not found."""
    path = tokenizer_path(run)
    if path is None:
        return None
    pieces = [piece for piece, _, _ in data.sentencepiece_vocabulary(path)]

    def names(ids):
        return [pieces[int(i)] if str(i).isdigit() and int(i) < len(pieces) else str(i)
                for i in ids]
    return names


# --- the page --------------------------------------------------------------------------------

def _fmt(value, digits=3):
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


def _table(frame, columns):
    """Markdown table of `frame` with (column, header, formatter) triples."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    for record in frame.to_dict("records"):
        lines.append("| " + " | ".join(f(record[c]) for c, _, f in columns) + " |")
    return lines + [""]


def _relative(path, page):
    return os.path.relpath(path, page.parent)


def section_sqrt_dk(sweep, out_dir, page):
    table = data.sqrt_dk_table(sweep)
    files = figures.sqrt_dk_figure(table, out_dir)
    claims = data.sqrt_dk_claims(table)
    lines = ["## 1. Why divide by sqrt(d_k)", "",
             "Sweep `experiments/studies/sqrt_dk.yaml`: d_k from "
             f"{table['d_k'].min()} to {table['d_k'].max()} with h x d_k = 128 (so each q and k "
             "entry has the same initial variance in every row), with the paper's 1/sqrt(d_k) "
             "and with no scale. Logit variance and entropy are measured by the trainer on the "
             "first dev batch (`/diagnostics/attention_logit_variance`, `attention_entropy`, "
             "step 0 = initialisation); the gradient norm is that of the query and key "
             "projections (`/diagnostics/qk_grad_norm`), which reach the loss only through the "
             "softmax, at step 1 (initial parameters) and at the last step.", ""]
    lines += [f"![sqrt_dk]({_relative(files[0], page)})", ""]
    for (scale, moment), claim in sorted(claims.items()):
        lines.append(f"- {scale}, {'initialisation' if moment == 'init' else 'after training'}:"
                     f" logit variance ~ d_k^{claim['variance_slope']:.2f} (log-log slope; 1 "
                     f"means proportional to d_k, 0 independent of it), from "
                     f"{_fmt(claim['variance'][0])} at d_k = {claim['d_k'][0]} to "
                     f"{_fmt(claim['variance'][-1])} at d_k = {claim['d_k'][-1]}; entropy "
                     f"{_fmt(claim['entropy'][0])} -> {_fmt(claim['entropy'][-1])} nats; "
                     f"query/key gradient norm ~ d_k^{claim['gradient_slope']:.2f}.")
    init_none, init_scaled = claims.get(("none", "init")), claims.get(("rsqrt_dk", "init"))
    if init_none and init_scaled:
        lines.append("")
        grows = init_none["variance_slope"] - init_scaled["variance_slope"]
        lines.append(
            "At initialisation the unscaled logit variance "
            + ("grows with d_k while the scaled one stays nearly flat" if grows > 0.5
               else "does not grow much faster with d_k than the scaled one")
            + f" (slopes {init_none['variance_slope']:.2f} vs {init_scaled['variance_slope']:.2f}"
            "; the note's unit-variance argument predicts 1 vs 0). At the largest d_k the "
            f"unscaled attention has entropy {_fmt(init_none['entropy'][-1])} nats against "
            f"{_fmt(init_scaled['entropy'][-1])} scaled"
            + (" (sharper, towards one-hot)" if init_none['entropy'][-1] < init_scaled['entropy'][-1]
               else "")
            + f", and its query/key gradient norm is {_fmt(init_none['gradient'][-1])} against "
            f"{_fmt(init_scaled['gradient'][-1])} scaled.")
    lines += ["", "<details><summary>table</summary>", ""]
    lines += _table(table.sort_values(["scale", "moment", "d_k"]), [
        ("scale", "scale", str), ("d_k", "d_k", str), ("heads", "h", str),
        ("moment", "moment", str), ("attention_step", "attention step", str),
        ("gradient_step", "gradient step", str), ("logit_variance", "logit var", _fmt),
        ("entropy", "entropy (nats)", _fmt), ("qk_grad_norm", "W_Q,W_K grad norm", _fmt),
        ("final_dev_ppl", "dev PPL (end)", _fmt)])
    lines += ["</details>", ""]
    return lines, files


def section_warmup(sweep, out_dir, page):
    table = data.warmup_table(sweep)
    files = figures.warmup_figures(sweep, table, out_dir)
    lines = ["## 2. Warmup and normalisation", "",
             "Sweep `experiments/studies/warmup_norm.yaml`: Post-LN (the paper) and Pre-LN, "
             "inverse_sqrt schedule with "
             f"{' or '.join(str(w) for w in sorted(table['warmup'].unique(), reverse=True))} "
             "warmup steps (0: the first step at the peak rate), peak {' and '.join(f'{p:g}' for p in sorted(table['peak'].unique()))}, "
             f"{int(sweep.data[table['run_id'].iloc[0]].train['step'].max())} steps.", "",
             "**Divergence** (`analysis.studies_data.divergence`): a run diverged if a logged "
             "training loss or gradient norm is not finite, or if the mean loss of its last 10% "
             "of logged steps is not below the loss of its first logged step.", ""]
    lines += [f"![warmup_norm loss]({_relative(files[0], page)})", "",
              f"![warmup_norm grad norms]({_relative(files[1], page)})", ""]
    diverged = table[table["diverged"]]
    describe = (lambda r: f"{r['norm']}-LN, warmup {r['warmup']}, peak {r['peak']:g}")
    if diverged.empty:
        lines.append("No run diverged by this definition.")
    else:
        lines.append("Diverged: " + "; ".join(
            f"{describe(r)} ({r['reason']} at step {r['diverged_at']})"
            for r in diverged.to_dict("records")) + ".")
    best = table.sort_values("final_loss").iloc[0]
    lines += ["", f"Lowest final loss: {describe(best)} ({best['final_loss']:.3f}).", ""]
    lines += _table(table, [
        ("norm", "norm", str), ("warmup", "warmup", str), ("peak", "peak lr", _fmt),
        ("first_loss", "first loss", _fmt), ("final_loss", "final loss (last 10%)", _fmt),
        ("max_loss", "max loss", _fmt), ("diverged", "diverged", lambda v: "yes" if v else "no"),
        ("reason", "why", str),
        ("layer_spread_step1", "max/min layer grad norm, step 1", _fmt),
        ("layer_spread_end", "same, last step", _fmt)])
    return lines, files


def section_positions(sweep, out_dir, page):
    runs = data.completed_runs(sweep)
    if not runs:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    first = runs[0][2]
    training_length = int(first.config["data.max_length"])
    test_src = data.read_lines(ROOT / first.config["data.test.src"])
    test_tgt = data.read_lines(ROOT / first.config["data.test.tgt"])
    counter, check = None, ""
    tokenizer = tokenizer_path(first)
    if tokenizer is not None:
        counter = data.PieceCounter(tokenizer)
        # The Python count against attnlab's: pairs kept for training (both sides short enough).
        kept = sum(1 for a, b in zip(data.read_lines(ROOT / first.config["data.train.src"]),
                                     data.read_lines(ROOT / first.config["data.train.tgt"]))
                   if max(counter(a), counter(b)) <= training_length - 1)
        check = (f"The piece counts are computed in Python (`analysis.studies_data.PieceCounter`"
                 f", SentencePiece BPE over {tokenizer.name}); by that count {kept} training "
                 f"pairs have both sides within {training_length - 1} pieces, and attnlab kept "
                 f"{_fmt(first.summary.get('train_pairs'), 6)}.")
    if counter is not None:
        lengths = [counter(line) for line in test_src]
        unit = "pieces"
        edges = data.bucket_edges(lengths, count=5, first=training_length)
    else:
        lengths = [data.source_length_words(line) for line in test_src]
        unit = "words"
        edges = data.bucket_edges(lengths)
    buckets, changes, notes = {}, None, []
    for _, run_id, run in runs:
        kind = str(run.config["model.positions"])
        run_dir = pathlib.Path(run.path).parent
        hyp = run_dir / LONG_VIEW / "hyp.test.txt"
        if not hyp.exists():
            notes.append(f"{run_id}: no {hyp} (run with --run to translate the test set)")
            continue
        buckets[kind] = data.bleu_by_bucket(lengths, data.read_lines(hyp), test_tgt, edges)
        if kind == "learned":
            changes = data.position_row_changes(run_dir)
    max_positions = int(first.config["model.max_positions"])
    lines = ["## 3. Positions and length", "",
             "Sweep `experiments/studies/positions_length.yaml`: trained on the pairs whose sides "
             f"have at most data.max_length - 1 = {training_length - 1} pieces (plus eos), "
             f"{_fmt(first.summary.get('train_pairs'), 6)} pairs kept and "
             f"{_fmt(first.summary.get('train_pairs_skipped'), 6)} skipped; model.max_positions "
             f"= {max_positions}; then greedy translation of the whole test set "
             f"({len(test_src)} sentences) and BLEU per source-length bucket (source length in "
             f"{unit} without eos"
             + (f"; the first bucket holds the lengths seen in training, the others split the "
                f"longer sources into near-equal parts" if unit == "pieces" else
                "; edges at quintiles of the test sources") + ").", "",
             check, "",
             "What this code does with positions beyond the training length and beyond "
             "model.max_positions:", "",
             "- Both kinds have model.max_positions rows (the sinusoid table is precomputed with "
             "that many rows; learned tables are parameters of that many rows). A batch longer "
             "than that is an error (`CHECK` in core/model/transformer_passes.cpp), never an "
             "extrapolation, for sinusoids as much as for learned positions.",
             "- The config rules require model.max_positions >= data.max_length + 2, `attnlab "
             "eval` cuts every test side to data.max_length - 1 pieces (`make_eval_set`, counted "
             "in `/eval_test/truncated`) and beam search stops at model.max_positions - 1 "
             "tokens, so evaluation never reaches that error. The cut also means that "
             "evaluating a run trained with a small data.max_length simply drops the end of "
             "every long test source. This study therefore evaluates through a view of each run "
             f"(`<run>/{LONG_VIEW}/`: a config.yaml that inherits the run's and sets "
             f"data.max_length = {max_positions - 2}, which `attnlab eval` prefers to the stored "
             "config, the run's checkpoints, and a copy of run.h5), so full test sources are "
             "translated.",
             "- Between the training length and model.max_positions a learned row receives "
             "gradient only from sequences that reach it; rows past the longest training "
             "sequence get exactly zero gradient, and Adam moves a parameter whose gradient has "
             "always been zero by exactly zero, so they stay at their random initialisation. "
             "Sinusoidal rows there are the same fixed functions of the position as in "
             "training.", ""]
    if buckets:
        files = figures.positions_figure(buckets, changes, training_length, unit, out_dir)
        lines += [f"![positions_length]({_relative(files[0], page)})", ""]
        kinds = list(buckets)
        merged = buckets[kinds[0]][["label", "sentences"]].copy()
        for kind in kinds:
            merged[kind] = buckets[kind]["bleu"].to_numpy()
        for kind in kinds:
            merged[f"{kind} ratio"] = buckets[kind]["hyp_ref_ratio"].to_numpy()
        lines += _table(merged, [("label", f"source {unit}", str),
                                 ("sentences", "sentences", str)]
                        + [(k, f"BLEU {k}", lambda v: _fmt(v, 3)) for k in kinds]
                        + [(f"{k} ratio", f"hyp/ref length {k}", lambda v: _fmt(v, 3))
                           for k in kinds])
        if len(kinds) == 2:
            longest = merged.iloc[-1]
            shortest = merged.iloc[0]
            a, b = kinds
            lines.append(
                f"Shortest bucket ({shortest['label']} {unit}): {a} {_fmt(shortest[a])} vs {b} "
                f"{_fmt(shortest[b])} BLEU; longest bucket ({longest['label']} {unit}): {a} "
                f"{_fmt(longest[a])} vs {b} {_fmt(longest[b])}.")
            for kind in kinds:
                ratio = longest[kind] / shortest[kind] if shortest[kind] else np.nan
                lines.append(f"- {kind}: BLEU of the longest bucket is {_fmt(ratio, 2)} x that "
                             "of the shortest.")
            lines.append("")
        if changes is not None:
            for side in ("encoder", "decoder"):
                last = data.last_moving_row(changes[f"{side}_change"])
                still = int(np.sum(changes[f"{side}_change"][last + 1:] == 0))
                lines.append(
                    f"- Learned {side} positions: between steps {changes['first_step']} and "
                    f"{changes['last_step']} the last row that moved is {last} (data.max_length "
                    f"= {training_length}: positions 0..{training_length - 1} occur in training);"
                    f" the {still} rows after it changed by exactly 0.")
            lines.append("")
    else:
        files = []
    lines += [f"- note: {n}" for n in notes] + ([""] if notes else [])
    return lines, files


def section_heads(sweep, out_dir, page):
    table = data.heads_table(sweep)
    runs = data.completed_runs(sweep)
    names = piece_namer(runs[0][2]) if runs else None
    files = figures.heads_figures(sweep, table, out_dir, names)
    lines = ["## 4. Heads", "",
             "Sweep `experiments/studies/heads.yaml`: h = "
             f"{', '.join(str(h) for h in sorted(table['heads'].unique()))} with h x d_k = "
             "d_model. Entropy per head from `/diagnostics/attention_entropy` (first dev batch) "
             "at step 0 and at the last step; heat maps of the probe sentence (the first dev "
             "sentence, `/attention/probe_0`, written at the end of training), last layer.", ""]
    lines += [f"![heads entropy]({_relative(files[0], page)})", ""]
    for path in files[1:]:
        lines += [f"![{pathlib.Path(path).stem}]({_relative(path, page)})", ""]
    trained = table[table["moment"] == "trained"]
    spread = (trained.groupby(["row", "heads", "block"])["entropy"]
              .agg(lambda v: v.max() - v.min()).groupby(["row", "heads"]).max().reset_index())
    summary = trained.groupby(["row", "heads"])["entropy"].agg(["mean", "min", "max"]).reset_index()
    summary = summary.merge(spread.rename(columns={"entropy": "spread"}), on=["row", "heads"])
    ppl = {row: sweep.data[run_id].summary.get("final_dev_ppl", np.nan)
           for row, run_id, _ in runs}
    summary["dev_ppl"] = summary["row"].map(ppl)
    summary = summary.sort_values("heads")
    lines += _table(summary, [
        ("row", "row", str), ("mean", "mean entropy (nats)", _fmt), ("min", "lowest head", _fmt),
        ("max", "highest head", _fmt),
        ("spread", "largest max-min across the heads of one layer", _fmt),
        ("dev_ppl", "dev PPL (end)", _fmt)])
    multi = summary[summary["heads"] > 1]
    if not multi.empty:
        widest = multi.sort_values("spread").iloc[-1]
        lines.append(f"Within one layer, the heads of {widest['row']} differ by up to "
                     f"{_fmt(widest['spread'])} nats of entropy after training.")
        lines.append("")
    return lines, files


SECTIONS = {"sqrt_dk": section_sqrt_dk, "warmup_norm": section_warmup,
            "positions_length": section_positions, "heads": section_heads}


def _cpu():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def write_page(args):
    runs_dir = pathlib.Path(args.runs)
    page = pathlib.Path(args.page)
    out_dir = page.parent / page.stem
    out_dir.mkdir(parents=True, exist_ok=True)
    body, sweeps = [], {}
    for study in args.only:
        sweep = load_sweep(runs_dir / study)
        sweeps[study] = sweep
        lines, _ = SECTIONS[study](sweep, out_dir, page)
        body += lines
    runs = [run for sweep in sweeps.values() for run in sweep.data.values()]
    hosts = sorted({str(r.attrs.get("host", "?")) for r in runs})
    commits = sorted({str(r.attrs.get("git_commit", "?")) for r in runs})
    created = sorted(str(r.attrs.get("created", "")) for r in runs if r.attrs.get("created"))
    train_seconds = sum(float(r.summary.get("train_seconds", 0.0)) for r in runs)
    timing_path = runs_dir / TIMING
    timing = json.loads(timing_path.read_text()) if timing_path.exists() else {}
    header = ["# The seed notes' claims as experiments", "",
              "Generated by `python3 -m analysis.studies " + " ".join(args.argv) + "` on "
              f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC from the run "
              f"files in `{runs_dir}`. Do not edit by hand.", "",
              f"- Machine: {', '.join(hosts)} ({_cpu()}, {os.cpu_count()} cores, shared with "
              "other jobs); one rank and one thread per run, under `nice -n 10`.",
              f"- Runs: {len(runs)}, started {created[0] if created else '?'} to "
              f"{created[-1] if created else '?'}; attnlab commit {', '.join(commits)}.",
              f"- Training time summed over runs: {train_seconds / 60:.1f} min."]
    if timing:
        header.append("- Wall time of `--run` per study (training, plus the test translations "
                      "for positions): " + ", ".join(f"{k} {v / 60:.1f} min"
                                                     for k, v in sorted(timing.items()))
                      + f"; total {sum(timing.values()) / 60:.1f} min.")
    header += ["", "The claims come from the seed notes as summarised in the project's paper "
               "notes (claims 1, 3, 4, 5). Each section is a sweep in `experiments/studies/`; "
               "one seed per configuration, so differences of a few percent are within noise.",
               ""]
    page.write_text("\n".join(header + body) + "\n", encoding="utf-8")
    return page


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python3 -m analysis.studies",
                                     description="The seed-note studies: run and report.")
    parser.add_argument("runs", help="runs directory holding <study>/ sweeps (e.g. runs/studies)")
    parser.add_argument("--page", default="docs/results/studies.md",
                        help="markdown page to write; figures go to <page dir>/<page stem>/")
    parser.add_argument("--run", action="store_true",
                        help="first train the studies (attnlab sweep, local launcher) and "
                             "translate the positions test set; completed runs are skipped")
    parser.add_argument("--attnlab", default=str(ROOT / "build" / "attnlab"),
                        help="attnlab binary for --run (default: build/attnlab)")
    parser.add_argument("--max-parallel", type=int, default=0,
                        help="--run: runs at once per sweep (default: attnlab's choice)")
    parser.add_argument("--only", default=",".join(STUDIES),
                        help=f"comma-separated studies (default: {','.join(STUDIES)})")
    args = parser.parse_args(argv)
    args.only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in args.only if s not in STUDIES]
    if unknown:
        parser.error(f"unknown studies {unknown}; choose from {','.join(STUDIES)}")
    args.argv = argv
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    try:
        if args.run:
            run_studies(args)
        page = write_page(args)
    except AnalysisError as error:
        print(f"analysis.studies: {error}", file=sys.stderr)
        return 2
    except RuntimeError as error:
        print(f"analysis.studies: {error}", file=sys.stderr)
        return 1
    print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
