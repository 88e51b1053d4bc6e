"""Study 3, positions and length (experiments/studies/positions_length.yaml): sinusoidal against
learned positions, trained on short pairs and evaluated on test sentences up to model.max_positions,
per source-length bucket; and which learned position rows training moved.

With --run, evaluate_long() translates a sample of each bucket through a view of every run
(long_view(): the run seen with a larger data.max_length). Then results(sweep) -> table(...) ->
figure(...) -> section(sweep, out_dir, page).
"""

import math
import os
import pathlib
import re
import shutil

import numpy as np
import pandas as pd

from analysis import bleu, plotting
from analysis.errors import AnalysisError
from analysis.runfile import read_checkpoint_params, read_run
from analysis.studies.common import (ROOT, PieceCounter, call, completed_runs, fmt,
                                     markdown_table, plt, read_lines, relative, tokenizer_path)
from analysis.sweep import load_sweep

LONG_VIEW = "long_eval"  # <run>/long_eval/bucket_<b>/: the run seen with a longer max_length
BUCKETS = 5              # source-length buckets of the test set (the first: training lengths)
SAMPLE_PER_BUCKET = 60   # test sentences translated per source-length bucket
MAX_LEN_OFFSET = 20      # greedy output <= source length + this (a weak model rarely stops early)
# Below this BLEU in every bucket, the page calls BLEU differences noise (and says so).
BLEU_NOISE = 5


# --- evaluating the runs on long test sentences (--run) -------------------------------------

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


def test_sample(run, sample_dir):
    """Buckets of the test set by source length in pieces (the first holds the lengths seen in
    training) and the first SAMPLE_PER_BUCKET sentences of each in file order, written to
    <sample_dir>/bucket_<b>.{src,tgt}. Returns (edges, [(src path, tgt path, line numbers)])."""
    tokenizer = tokenizer_path(run)
    if tokenizer is None:
        raise AnalysisError(f"{run.path}: its tokenizer is not found (the positions study "
                            "buckets the test set by pieces)")
    counter = PieceCounter(tokenizer)
    sources = read_lines(ROOT / run.config["data.test.src"])
    targets = read_lines(ROOT / run.config["data.test.tgt"])
    lengths = [counter(line) for line in sources]
    edges = bucket_edges(lengths, count=BUCKETS, first=int(run.config["data.max_length"]))
    sample_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for bucket in range(len(edges)):
        lines = [i for i, n in enumerate(lengths)
                 if bucket_of(n, edges) == bucket][:SAMPLE_PER_BUCKET]
        src, tgt = sample_dir / f"bucket_{bucket}.src", sample_dir / f"bucket_{bucket}.tgt"
        src.write_text("".join(sources[i] + "\n" for i in lines), encoding="utf-8")
        tgt.write_text("".join(targets[i] + "\n" for i in lines), encoding="utf-8")
        out.append((src.resolve(), tgt.resolve(), lines))
    return edges, out


def evaluate_long(sweep_dir, attnlab, runs_dir):
    """Greedy translation and perplexity of every completed positions_length run on each bucket
    sample, through views with max_length = max_positions - 2 (the largest the rules allow)."""
    sweep = load_sweep(sweep_dir, with_attention=False)
    runs = completed_runs(sweep)
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
            call([attnlab, "eval", view, "--split", "test", "--max-len-offset", MAX_LEN_OFFSET],
                 runs_dir, "positions_length_eval")


# --- length buckets and BLEU per bucket -----------------------------------------------------

def source_length_words(line):
    return len(line.split())


def bucket_edges(lengths, count=BUCKETS, first=None):
    """Lower edges of length buckets (distinct integers, the first 0): at quantiles of `lengths`,
    or, with `first`, one bucket below `first` and quantiles of the lengths >= first above it."""
    lengths = np.asarray(lengths)
    if first is not None:
        above = lengths[lengths >= first]
        inner = np.quantile(above, np.linspace(0, 1, count)[1:-1]) if len(above) else []
        return sorted({0, int(first), *[int(math.ceil(q)) for q in inner]})
    quantiles = np.quantile(lengths, np.linspace(0, 1, count + 1)[1:-1])
    return sorted({0, *[int(math.ceil(q)) for q in quantiles]})


def bucket_of(length, edges):
    return int(np.searchsorted(edges, length, side="right") - 1)


def bucket_label(index, edges):
    low = edges[index] if index > 0 else 1
    if index + 1 < len(edges):
        return f"{low}-{edges[index + 1] - 1}"
    return f">={low}"


def bleu_by_bucket(lengths, hypotheses, references, edges):
    """Corpus BLEU of each bucket of source `lengths`: DataFrame bucket, label, sentences,
    bleu, hyp_ref_ratio (hypothesis / reference length, 13a tokens)."""
    if not (len(lengths) == len(hypotheses) == len(references)):
        raise AnalysisError(f"{len(lengths)} sources, {len(hypotheses)} hypotheses and "
                            f"{len(references)} references: the files are not aligned")
    stats = np.array([bleu.sentence_stats(h, r) for h, r in zip(hypotheses, references)])
    buckets = np.array([bucket_of(n, edges) for n in lengths])
    records = []
    for index in range(len(edges)):
        chosen = buckets == index
        totals = stats[chosen].sum(axis=0)
        records.append({"bucket": index, "label": bucket_label(index, edges),
                        "sentences": int(chosen.sum()),
                        "bleu": bleu.bleu_from_stats(totals) if chosen.any() else np.nan,
                        "hyp_ref_ratio": totals[0] / totals[1] if chosen.any() and totals[1]
                        else np.nan})
    return pd.DataFrame.from_records(records)


# --- learned position rows ------------------------------------------------------------------

def checkpoint_steps(run_dir):
    steps = []
    for path in pathlib.Path(run_dir, "ckpt").glob("step_*.h5"):
        match = re.fullmatch(r"step_(\d+)\.h5", path.name)
        if match:
            steps.append(int(match.group(1)))
    return sorted(steps)


def position_row_changes(run_dir):
    """For a learned-positions run: per row of encoder.embed_positions.weight and
    decoder.embed_positions.weight, the L2 norm of its change between the oldest and the newest
    checkpoint kept, and the row's norm in the newest. None for sinusoidal runs or when fewer
    than two checkpoints are kept."""
    steps = checkpoint_steps(run_dir)
    if len(steps) < 2:
        return None
    names = ("encoder.embed_positions.weight", "decoder.embed_positions.weight")
    tables = []
    for step in (steps[0], steps[-1]):
        table = read_checkpoint_params(pathlib.Path(run_dir, "ckpt", f"step_{step}.h5"), names)
        if table is None:
            return None
        tables.append(table)
    out = {"first_step": steps[0], "last_step": steps[-1]}
    for name in names:
        side = name.split(".")[0]
        out[f"{side}_change"] = np.linalg.norm(tables[1][name] - tables[0][name], axis=1)
        out[f"{side}_norm"] = np.linalg.norm(tables[1][name], axis=1)
    return out


def last_moving_row(changes):
    """Index of the last row whose change is non-zero (-1 when none moved)."""
    moved = np.nonzero(changes > 0)[0]
    return int(moved[-1]) if len(moved) else -1


# --- data and table --------------------------------------------------------------------------

def _eval_attrs(view):
    """/eval_test attributes of a view's run.h5 (ppl, bleu, max_len_offset, ...)."""
    return read_run(view / "run.h5", with_attention=False).decodings.get("eval_test")


def results(sweep):
    """What the section reports, from the runs and their long-evaluation views: a dict with
    `first` (the first run), `training_length` (data.max_length), `tokenizer` (its path),
    `kept` (training pairs with both sides within training_length - 1 pieces, counted in
    Python), `test_count`, `max_positions`, bucket `edges`, per positions kind `buckets`
    (bleu_by_bucket) and `perplexity` (one per bucket), `changes` (position_row_changes of the
    learned run), `notes` (runs not evaluated) and `offsets` (max_len_offset values used)."""
    runs = completed_runs(sweep)
    if not runs:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    first = runs[0][2]
    training_length = int(first.config["data.max_length"])
    tokenizer = tokenizer_path(first)
    if tokenizer is None:
        raise AnalysisError(f"{first.path}: its tokenizer is not found; the positions study "
                            "buckets the test set by pieces")
    counter = PieceCounter(tokenizer)
    # The Python count against attnlab's: pairs kept for training (both sides short enough).
    kept = sum(1 for a, b in zip(read_lines(ROOT / first.config["data.train.src"]),
                                 read_lines(ROOT / first.config["data.train.tgt"]))
               if max(counter(a), counter(b)) <= training_length - 1)
    test_count = len(read_lines(ROOT / first.config["data.test.src"]))
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
            sample_src = read_lines(src)
            lengths += [counter(line) for line in sample_src]
            hyps += read_lines(view / "hyp.test.txt")
            refs += read_lines(tgt)
            ppl.append(float(attrs["ppl"]))
        else:
            buckets[kind] = bleu_by_bucket(lengths, hyps, refs, edges)
            perplexity[kind] = ppl
        if kind == "learned":
            changes = position_row_changes(run_dir)
    return {"first": first, "training_length": training_length, "tokenizer": tokenizer,
            "kept": kept, "test_count": test_count,
            "max_positions": int(first.config["model.max_positions"]), "edges": edges,
            "buckets": buckets, "perplexity": perplexity, "changes": changes, "notes": notes,
            "offsets": offsets}


def table(buckets, perplexity):
    """One line per bucket: label, sentences, and per positions kind BLEU (column <kind>),
    perplexity (<kind> ppl) and hypothesis / reference length (<kind> ratio)."""
    kinds = list(buckets)
    merged = buckets[kinds[0]][["label", "sentences"]].copy()
    for kind in kinds:
        merged[kind] = buckets[kind]["bleu"].to_numpy()
    for kind in kinds:
        merged[f"{kind} ppl"] = perplexity[kind]
    for kind in kinds:
        merged[f"{kind} ratio"] = buckets[kind]["hyp_ref_ratio"].to_numpy()
    return merged


# --- figure ----------------------------------------------------------------------------------

def figure(buckets, changes, training_length, unit, out_dir, perplexity=None):
    """Left: test BLEU per source-length bucket, one bar per positions kind; middle: perplexity
    per bucket; right: how much each learned position row moved between the two kept
    checkpoints (encoder and decoder). Returns the list of files written."""
    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(21, 5))
    first = buckets[list(buckets)[0]]
    for index, (kind, values) in enumerate((perplexity or {}).items()):
        middle.plot(range(len(values)), values, "o-", label=kind)
    middle.set_xticks(range(len(first)), list(first["label"]))
    middle.axvspan(-0.4, 0.4, color="grey", alpha=0.15, label="lengths seen in training")
    middle.set_xlabel(f"source length ({unit}) of the test sentence")
    middle.set_ylabel("perplexity per target piece (teacher-forced)")
    middle.set_title("Perplexity per source-length bucket")
    middle.grid(alpha=0.3)
    middle.legend(title="positions")
    kinds = list(buckets)
    width = 0.8 / max(len(kinds), 1)
    for index, kind in enumerate(kinds):
        frame = buckets[kind]
        x = np.arange(len(frame)) + (index - (len(kinds) - 1) / 2) * width
        left.bar(x, frame["bleu"], width, label=kind)
    first = buckets[kinds[0]]
    left.set_xticks(range(len(first)),
                    [f"{label}\n(n={n})" for label, n in zip(first["label"], first["sentences"])])
    left.set_xlabel(f"source length ({unit}) of the test sentence")
    left.set_ylabel("test BLEU of the bucket (greedy)")
    left.set_title("BLEU per source-length bucket")
    left.grid(alpha=0.3, axis="y")
    left.legend(title="positions")
    if changes is not None:
        for side, color in (("encoder", "tab:blue"), ("decoder", "tab:orange")):
            values = changes[f"{side}_change"]
            right.plot(np.arange(len(values)), values, color=color, lw=1.3,
                       label=f"{side}: |row(step {changes['last_step']}) - "
                             f"row(step {changes['first_step']})|")
            right.plot(np.arange(len(values)), changes[f"{side}_norm"], ":", color=color, lw=1,
                       label=f"{side}: |row(step {changes['last_step']})|")
        right.axvline(training_length - 0.5, color="k", ls="--", lw=1,
                      label=f"data.max_length = {training_length} (positions 0..."
                            f"{training_length - 1} occur in training)")
        right.set_xlabel("position (row of the learned table)")
        right.set_ylabel("L2 norm")
        right.set_title("Learned position rows: change between the kept checkpoints")
        right.grid(alpha=0.3)
        right.legend(fontsize=8)
    else:
        right.axis("off")
    fig.tight_layout()
    return [plotting.save(fig, pathlib.Path(out_dir) / "positions_length.png")]


# --- the page's section ----------------------------------------------------------------------

def section(sweep, out_dir, page):
    """The page's section 3 (markdown lines) and the figure files it links."""
    res = results(sweep)
    first, training_length = res["first"], res["training_length"]
    buckets, perplexity, changes = res["buckets"], res["perplexity"], res["changes"]
    max_positions, notes, offsets = res["max_positions"], res["notes"], res["offsets"]
    check = (f"Piece counts are computed in Python (`{PieceCounter.__module__}.PieceCounter`, "
             f"python3-sentencepiece with {res['tokenizer'].name}); by that count {res['kept']} "
             f"training pairs have both sides within {training_length - 1} pieces, and attnlab "
             f"kept {fmt(first.summary.get('train_pairs'), 6)}.")
    unit = "pieces"
    lines = ["## 3. Positions and length", "",
             "Sweep `experiments/studies/positions_length.yaml`: trained on the pairs whose sides "
             f"have at most data.max_length - 1 = {training_length - 1} pieces (plus eos), "
             f"{fmt(first.summary.get('train_pairs'), 6)} pairs kept and "
             f"{fmt(first.summary.get('train_pairs_skipped'), 6)} skipped; model.max_positions "
             f"= {max_positions}. The test set ({res['test_count']} sentences) is split into "
             "buckets by source length in pieces (without eos): the first holds the lengths seen "
             "in training, the others split the longer sources into near-equal parts. The first "
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
        files = figure(buckets, changes, training_length, unit, out_dir, perplexity)
        lines += [f"![positions_length]({relative(files[0], page)})", ""]
        kinds = list(buckets)
        merged = table(buckets, perplexity)
        lines += markdown_table(merged, [("label", f"source {unit}", str),
                                         ("sentences", "sentences", str)]
                                + [(k, f"BLEU {k}", lambda v: fmt(v, 3)) for k in kinds]
                                + [(f"{k} ppl", f"PPL {k}", lambda v: fmt(v, 4)) for k in kinds]
                                + [(f"{k} ratio", f"hyp/ref length {k}", lambda v: fmt(v, 3))
                                   for k in kinds])
        if len(kinds) == 2:
            longest = merged.iloc[-1]
            shortest = merged.iloc[0]
            a, b = kinds
            lines.append(
                f"Shortest bucket ({shortest['label']} {unit}): {a} {fmt(shortest[a])} vs {b} "
                f"{fmt(shortest[b])} BLEU; longest bucket ({longest['label']} {unit}): {a} "
                f"{fmt(longest[a])} vs {b} {fmt(longest[b])}.")
            for kind in kinds:
                rise = merged[f"{kind} ppl"].iloc[-1] / merged[f"{kind} ppl"].iloc[0]
                lines.append(f"- {kind}: perplexity on the longest bucket is {fmt(rise, 3)} x "
                             "that on the bucket of training lengths.")
            ratio = merged[f"{b} ppl"] / merged[f"{a} ppl"]
            lines.append(f"- {b} / {a} perplexity per bucket: "
                         + ", ".join(f"{label}: {fmt(r, 3)}"
                                     for label, r in zip(merged["label"], ratio)) + ".")
            best_bleu = max(float(np.nanmax(merged[k])) for k in kinds)
            if best_bleu < BLEU_NOISE:
                lines.append(f"- BLEU stays below {fmt(np.ceil(best_bleu), 2)} in every bucket "
                             f"(this sentence is written when BLEU is below {BLEU_NOISE:g} in "
                             "every bucket): at this training budget the models are far from "
                             "translating, so BLEU differences between buckets and kinds are "
                             "noise; perplexity and the hypothesis length ratio are the usable "
                             "signals.")
            lines.append("")
        if changes is not None:
            for side in ("encoder", "decoder"):
                last = last_moving_row(changes[f"{side}_change"])
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
