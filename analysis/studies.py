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

import h5py  # noqa: E402
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
    result = subprocess.run(["nice", "-n", "10", *map(str, command)], cwd=ROOT, env=env)
    _record_time(runs_dir, key, time.monotonic() - start)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} exited {result.returncode}")


def long_view(run_dir, max_length, view=None, test=None):
    """A directory that `attnlab eval` reads as the run with data.max_length = `max_length`
    (and, with `test` = (src, tgt), another test set).

    `attnlab eval` cuts every test side to the run's data.max_length - 1 pieces (make_eval_set)
    and load_run_config() prefers <dir>/config.yaml to the config stored in run.h5, so the view
    holds a config.yaml inheriting the run's own with only those keys changed, the run's
    checkpoints (a symbolic link) and a copy of run.h5 for the results. The run itself is left
    as it was. `view` defaults to <run_dir>/long_eval."""
    run_dir = pathlib.Path(run_dir)
    view = pathlib.Path(view) if view else run_dir / LONG_VIEW
    view.mkdir(parents=True, exist_ok=True)
    overrides = f"data: {{max_length: {max_length}"
    if test:
        overrides += f", test: {{src: {test[0]}, tgt: {test[1]}}}"
    (view / "config.yaml").write_text(
        "# The run, evaluated on test sentences longer than it was trained on (analysis.studies)\n"
        f"base: {os.path.relpath(run_dir / 'config.yaml', view)}\n{overrides}}}\n",
        encoding="utf-8")
    if not (view / "ckpt").exists():
        (view / "ckpt").symlink_to(os.path.relpath(run_dir / "ckpt", view))
    if not (view / "run.h5").exists():
        shutil.copyfile(run_dir / "run.h5", view / "run.h5")
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


SAMPLE_PER_BUCKET = 60  # test sentences translated per source-length bucket
MAX_LEN_OFFSET = 20     # greedy output <= source length + this (a weak model rarely stops early)


def test_sample(run, sample_dir):
    """Buckets of the test set by source length in pieces (the first holds the lengths seen in
    training) and the first SAMPLE_PER_BUCKET sentences of each in file order, written to
    <sample_dir>/bucket_<b>.{src,tgt}. Returns (edges, [(src path, tgt path, line numbers)])."""
    tokenizer = tokenizer_path(run)
    if tokenizer is None:
        raise AnalysisError(f"{run.path}: its tokenizer is not found (the positions study "
                            "buckets the test set by pieces)")
    counter = data.PieceCounter(tokenizer)
    sources = data.read_lines(ROOT / run.config["data.test.src"])
    targets = data.read_lines(ROOT / run.config["data.test.tgt"])
    lengths = [counter(line) for line in sources]
    edges = data.bucket_edges(lengths, count=5, first=int(run.config["data.max_length"]))
    sample_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for bucket in range(len(edges)):
        lines = [i for i, n in enumerate(lengths)
                 if data.bucket_of(n, edges) == bucket][:SAMPLE_PER_BUCKET]
        src, tgt = sample_dir / f"bucket_{bucket}.src", sample_dir / f"bucket_{bucket}.tgt"
        src.write_text("".join(sources[i] + "\n" for i in lines), encoding="utf-8")
        tgt.write_text("".join(targets[i] + "\n" for i in lines), encoding="utf-8")
        out.append((src.resolve(), tgt.resolve(), lines))
    return edges, out


def evaluate_long(sweep_dir, attnlab, runs_dir):
    """Greedy translation and perplexity of every completed positions_length run on each bucket
    sample, through views with max_length = max_positions - 2 (the largest the rules allow)."""
    sweep = load_sweep(sweep_dir, with_attention=False)
    runs = data.completed_runs(sweep)
    if not runs:
        return
    _, samples = test_sample(runs[0][2], pathlib.Path(sweep_dir) / "test_sample")
    for _, run_id, run in runs:
        run_dir = pathlib.Path(run.path).parent
        for bucket, (src, tgt, _) in enumerate(samples):
            view = long_view(run_dir, int(run.config["model.max_positions"]) - 2,
                             run_dir / LONG_VIEW / f"bucket_{bucket}", (src, tgt))
            if (view / "hyp.test.txt").exists():
                continue
            _call([attnlab, "eval", view, "--split", "test", "--max-len-offset", MAX_LEN_OFFSET],
                  runs_dir, "positions_length_eval")


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
    pieces = data.sentencepiece_pieces(path)

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
                     f"{_fmt(claim['entropy'][0])} nats at d_k = {claim['d_k'][0]} and "
                     f"{_fmt(claim['entropy'][-1])} at d_k = {claim['d_k'][-1]}; "
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
            "; the note's unit-variance argument predicts 1 vs 0).")
        lines.append("")
        init = table[table["moment"] == "init"].pivot(index="d_k", columns="scale")
        init = init.dropna()
        if not init.empty:
            ratio = init["qk_grad_norm"]["none"] / init["qk_grad_norm"]["rsqrt_dk"]
            entropy_none, entropy_scaled = init["entropy"]["none"], init["entropy"]["rsqrt_dk"]
            lines.append(
                "Unscaled against scaled, same d_k, at initialisation: entropy "
                + ", ".join(f"{_fmt(n)} vs {_fmt(c)} nats (d_k = {d})" for d, n, c in
                            zip(init.index, entropy_none, entropy_scaled))
                + "; query/key gradient norm ratio (unscaled / scaled) "
                + ", ".join(f"{_fmt(r)} (d_k = {d})" for d, r in zip(init.index, ratio)) + ".")
            lines.append("")
            if (ratio > 1).all():
                lines.append(
                    "So over this range the unscaled softmax is sharper (lowest mean entropy "
                    f"{_fmt(entropy_none.min())} nats; one-hot rows would give 0) and its "
                    "gradient into W_Q and W_K is larger than with the scale, not vanishing. "
                    "The vanishing-gradient half of the note's argument needs logits wide enough "
                    "to make the softmax nearly one-hot, which these d_k and this initialisation "
                    "do not reach; the sharpening half is measured.")
            elif (np.diff(ratio.to_numpy()) < 0).all():
                lines.append("The unscaled/scaled gradient ratio falls as d_k grows: the "
                             "saturating softmax passes less gradient, as the note argues.")
    trained_none = claims.get(("none", "trained"))
    trained_scaled = claims.get(("rsqrt_dk", "trained"))
    if trained_none and trained_scaled:
        gap = trained_none["gradient_slope"] - trained_scaled["gradient_slope"]
        lines += ["", "After training the unscaled logits have grown (variance "
                  f"{_fmt(trained_none['variance'][0])} at d_k = {trained_none['d_k'][0]} to "
                  f"{_fmt(trained_none['variance'][-1])} at d_k = {trained_none['d_k'][-1]}, "
                  f"against {_fmt(trained_scaled['variance'][0])} to "
                  f"{_fmt(trained_scaled['variance'][-1])} scaled), and the unscaled query/key "
                  "gradient norm "
                  + ("falls with d_k while the scaled one stays nearly flat: the vanishing-"
                     "gradient half of the note's argument shows once training has widened the "
                     "logits" if gap < -0.5 and trained_none["gradient_slope"] < -0.5
                     else "does not fall clearly faster with d_k than the scaled one")
                  + f" (slopes {trained_none['gradient_slope']:.2f} vs "
                  f"{trained_scaled['gradient_slope']:.2f})."]
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
    config = sweep.data[table["run_id"].iloc[0]].config
    lines = ["## 2. Warmup and normalisation", "",
             "Sweep `experiments/studies/warmup_norm.yaml`: Post-LN (the paper) and Pre-LN, "
             f"{int(config['model.encoder_layers'])} + {int(config['model.decoder_layers'])} "
             f"layers of d_model {int(config['model.d_model'])}, inverse_sqrt schedule with "
             f"{' or '.join(str(w) for w in sorted(table['warmup'].unique(), reverse=True))} "
             "warmup steps (0: the first step at the peak rate), "
             f"peak {' and '.join(f'{p:g}' for p in sorted(table['peak'].unique()))}, "
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
    by_norm = table.groupby("norm")["final_loss"]
    if len(by_norm) == 2:
        low, high = by_norm.min(), by_norm.max()
        lines.append("Final loss by normalisation: " + ", ".join(
            f"{norm}-LN {_fmt(low[norm])} to {_fmt(high[norm])}" for norm in low.index) + ".")
        for worse, better in (("post", "pre"), ("pre", "post")):
            if {worse, better} <= set(low.index) and low[worse] > high[better]:
                lines.append(f"Every {worse}-LN run, with or without warmup and at either peak, "
                             f"ends above every {better}-LN run.")
        lines.append("")
    if "layer_spread_end" in table:
        spread = table.dropna(subset=["layer_spread_end"]).sort_values("layer_spread_end")
        if not spread.empty:
            lines += ["Ratio of the largest to the smallest per-layer gradient norm at the last "
                      "step (a layer whose gradient collapses drives it up): "
                      + "; ".join(f"{describe(r)}: {_fmt(r['layer_spread_end'])}"
                                  for r in spread.iloc[::-1].to_dict("records"))
                      + f". At step 1 it is {_fmt(spread['layer_spread_step1'].min())} to "
                      f"{_fmt(spread['layer_spread_step1'].max())} in every run.", ""]
    lines += _table(table, [
        ("norm", "norm", str), ("warmup", "warmup", str), ("peak", "peak lr", _fmt),
        ("first_loss", "first loss", _fmt), ("final_loss", "final loss (last 10%)", _fmt),
        ("max_loss", "max loss", _fmt), ("diverged", "diverged", lambda v: "yes" if v else "no"),
        ("reason", "why", str),
        ("layer_spread_step1", "max/min layer grad norm, step 1", _fmt),
        ("layer_spread_end", "same, last step", _fmt)])
    return lines, files


def _eval_attrs(view):
    """/eval_test attributes of a view's run.h5 (ppl, bleu, max_len_offset, ...)."""
    with h5py.File(view / "run.h5", "r", locking=False) as f:
        if "eval_test" not in f:
            return None
        return {k: (v.decode() if isinstance(v, bytes) else v)
                for k, v in f["eval_test"].attrs.items()}


def section_positions(sweep, out_dir, page):
    runs = data.completed_runs(sweep)
    if not runs:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    first = runs[0][2]
    training_length = int(first.config["data.max_length"])
    tokenizer = tokenizer_path(first)
    if tokenizer is None:
        raise AnalysisError(f"{first.path}: its tokenizer is not found; the positions study "
                            "buckets the test set by pieces")
    counter = data.PieceCounter(tokenizer)
    # The Python count against attnlab's: pairs kept for training (both sides short enough).
    kept = sum(1 for a, b in zip(data.read_lines(ROOT / first.config["data.train.src"]),
                                 data.read_lines(ROOT / first.config["data.train.tgt"]))
               if max(counter(a), counter(b)) <= training_length - 1)
    check = (f"Piece counts are computed in Python (`analysis.studies_data.PieceCounter`, "
             f"python3-sentencepiece with {tokenizer.name}); by that count {kept} training pairs "
             f"have both sides within {training_length - 1} pieces, and attnlab kept "
             f"{_fmt(first.summary.get('train_pairs'), 6)}.")
    unit = "pieces"
    test_count = len(data.read_lines(ROOT / first.config["data.test.src"]))
    edges, samples = test_sample(first, pathlib.Path(sweep.directory) / "test_sample")
    buckets, perplexity, changes, notes, offsets = {}, {}, None, [], set()
    for _, run_id, run in runs:
        kind = str(run.config["model.positions"])
        run_dir = pathlib.Path(run.path).parent
        lengths, hyps, refs, ppl = [], [], [], []
        for bucket, (src, tgt, _) in enumerate(samples):
            view = run_dir / LONG_VIEW / f"bucket_{bucket}"
            attrs = _eval_attrs(view) if (view / "run.h5").exists() else None
            if attrs is None or not (view / "hyp.test.txt").exists():
                notes.append(f"{run_id}: bucket {bucket} not evaluated (run with --run)")
                break
            offsets.add(int(attrs["max_len_offset"]))
            sample_src = data.read_lines(src)
            lengths += [counter(line) for line in sample_src]
            hyps += data.read_lines(view / "hyp.test.txt")
            refs += data.read_lines(tgt)
            ppl.append(float(attrs["ppl"]))
        else:
            buckets[kind] = data.bleu_by_bucket(lengths, hyps, refs, edges)
            perplexity[kind] = ppl
        if kind == "learned":
            changes = data.position_row_changes(run_dir)
    max_positions = int(first.config["model.max_positions"])
    lines = ["## 3. Positions and length", "",
             "Sweep `experiments/studies/positions_length.yaml`: trained on the pairs whose sides "
             f"have at most data.max_length - 1 = {training_length - 1} pieces (plus eos), "
             f"{_fmt(first.summary.get('train_pairs'), 6)} pairs kept and "
             f"{_fmt(first.summary.get('train_pairs_skipped'), 6)} skipped; model.max_positions "
             f"= {max_positions}. The test set ({test_count} sentences) is split into buckets by "
             "source length in pieces (without eos): the first holds the lengths seen in "
             "training, the others split the longer sources into near-equal parts. The first "
             f"{SAMPLE_PER_BUCKET} sentences of each bucket (file order) are translated "
             f"greedily with output length <= source length + "
             f"{', '.join(str(o) for o in sorted(offsets)) or '?'} and scored: BLEU (this "
             "bucket's sample) and perplexity per target piece (teacher-forced, from `attnlab "
             "eval`).", "", check, "",
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
        files = figures.positions_figure(buckets, changes, training_length, unit, out_dir,
                                         perplexity)
        lines += [f"![positions_length]({_relative(files[0], page)})", ""]
        kinds = list(buckets)
        merged = buckets[kinds[0]][["label", "sentences"]].copy()
        for kind in kinds:
            merged[kind] = buckets[kind]["bleu"].to_numpy()
        for kind in kinds:
            merged[f"{kind} ppl"] = perplexity[kind]
        for kind in kinds:
            merged[f"{kind} ratio"] = buckets[kind]["hyp_ref_ratio"].to_numpy()
        lines += _table(merged, [("label", f"source {unit}", str),
                                 ("sentences", "sentences", str)]
                        + [(k, f"BLEU {k}", lambda v: _fmt(v, 3)) for k in kinds]
                        + [(f"{k} ppl", f"PPL {k}", lambda v: _fmt(v, 4)) for k in kinds]
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
                rise = merged[f"{kind} ppl"].iloc[-1] / merged[f"{kind} ppl"].iloc[0]
                lines.append(f"- {kind}: perplexity on the longest bucket is {_fmt(rise, 3)} x "
                             "that on the bucket of training lengths.")
            ratio = merged[f"{b} ppl"] / merged[f"{a} ppl"]
            lines.append(f"- {b} / {a} perplexity per bucket: "
                         + ", ".join(f"{label}: {_fmt(r, 3)}"
                                     for label, r in zip(merged["label"], ratio)) + ".")
            best_bleu = max(float(np.nanmax(merged[k])) for k in kinds)
            if best_bleu < 5:
                lines.append(f"- BLEU stays below {_fmt(np.ceil(best_bleu), 2)} in every bucket: "
                             "at this training budget the models are far from translating, so "
                             "BLEU differences between buckets and kinds are noise; perplexity "
                             "and the hypothesis length ratio are the usable signals.")
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
             "at step 0 and at the last step; heat maps of the probe sentence (the first sentence of "
             "the first dev batch, which is sorted by length, so a short verse; "
             "`/attention/probe_0`, written at the end of training), last layer, tick labels "
             "are the SentencePiece pieces.", ""]
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


def _sweep_span(sweep):
    """(start, end, seconds) of a sweep's completed runs: `created` to created + the last
    logged wall_time."""
    starts, ends = [], []
    for run in sweep.data.values():
        if run.status != "completed" or not run.attrs.get("created"):
            continue
        created = datetime.datetime.fromisoformat(str(run.attrs["created"]).replace("Z", "+00:00"))
        start = created.timestamp()
        starts.append(start)
        ends.append(start + float(run.train["wall_time"].iloc[-1]) if len(run.train) else start)
    if not starts:
        return (0.0, 0.0, 0.0)
    return (min(starts), max(ends), max(ends) - min(starts))


def _git_head():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


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
    runs = [run for sweep in sweeps.values() for run in sweep.data.values()
            if run.status == "completed"]
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
              f"- Machine: {', '.join(hosts)} ({_cpu()}, {os.cpu_count()} cores); one rank and "
              "one thread per run" + (", under `nice -n 10`." if args.run else "."),
              f"- Runs: {len(runs)}, started {created[0] if created else '?'} to "
              f"{created[-1] if created else '?'}; attnlab built from commit "
              f"{', '.join(commits)} (the runs' `git_commit`); analysis at commit "
              f"{_git_head()}.",
              f"- Training time summed over runs: {train_seconds / 60:.1f} min."]
    spans = {study: _sweep_span(sweep) for study, sweep in sweeps.items()}
    header.append("- Wall time of each sweep (first run start to last training step, from the run "
                  "files; sweeps partly overlapped): " + ", ".join(
                      f"{k} {v[2] / 60:.1f} min" for k, v in spans.items()) + ".")
    if spans:
        start = min(v[0] for v in spans.values())
        end = max(v[1] for v in spans.values())
        header.append(f"- All training, first start to last end: {(end - start) / 60:.1f} min.")
    if "positions_length_eval" in timing:
        header.append("- Test translations of the positions study (`attnlab eval`, summed): "
                      f"{timing['positions_length_eval'] / 60:.1f} min.")
    budget = []
    for study, sweep in sweeps.items():
        done = [r for r in sweep.data.values() if r.status == "completed"]
        if done:
            ppl = [float(r.summary.get("final_dev_ppl", np.nan)) for r in done]
            budget.append(f"{study} {int(done[0].config['train.steps'])} steps of "
                          f"{int(done[0].config['train.batch_tokens'])} tokens (final dev PPL "
                          f"{_fmt(np.nanmin(ppl))} to {_fmt(np.nanmax(ppl))})")
    if budget:
        header.append("- Training budget per run: "
                      + "; ".join(budget) + ". These models are weakly trained: the studies "
                      "measure the mechanisms (logit statistics, gradients, positions), not "
                      "translation quality.")
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
