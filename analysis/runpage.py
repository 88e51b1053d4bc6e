"""`python3 -m analysis.runpage RUN_DIR --data DIR --out PAGE.md`: the results page of one trained
model (docs/results/small-base.md) from its run directory: the recipe as it ran, the learning
curve with the rate's halvings, whether it converged, dev and test scores from the decodings
`attnlab eval` stored in run.h5, a few test translations beside their source and reference, and
what it cost.

Every number comes from RUN_DIR (run.h5 and the hypotheses files `attnlab eval` wrote); DIR holds
the source and reference text (`attnlab data bible --out DIR`). The BLEU of each decoding is
scored again here from its hypotheses and references (analysis.bleu, sacreBLEU's definition) and
must equal the one attnlab stored, so a page cannot quote hypotheses it does not show. The figure
goes beside the page, in PAGE's directory under PAGE's stem.
"""

import argparse
import math
import pathlib
import sys

if __package__ in (None, ""):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from analysis import bleu, convergence, plotting  # noqa: E402
from analysis.errors import AnalysisError, command_line, report_error  # noqa: E402
from analysis.plotting import plt  # noqa: E402
from analysis.notes import read_notes  # noqa: E402
from analysis.rate_cuts import rate_cuts  # noqa: E402
from analysis.formatting import count, fixed, significant  # noqa: E402
from analysis.runfile import read_run  # noqa: E402

SAMPLES = 5          # test translations shown, evenly spaced through the test set
CURVE_ROWS = 12      # evaluations listed in the learning-curve table (besides best and last)
BLEU_TOLERANCE = 1e-6


def read_lines(path):
    try:
        return pathlib.Path(path).read_text(encoding="utf-8").split("\n")[:-1]
    except OSError as error:
        raise AnalysisError(f"{path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise AnalysisError(f"{path}: not UTF-8 at byte {error.start}") from None


def curve_rows(evaluation):
    """Indices of the evaluations the table lists: evenly spaced ones, the best and the last."""
    n = len(evaluation)
    picked = set(np.unique(np.linspace(0, n - 1, min(n, CURVE_ROWS)).round().astype(int)))
    picked.add(int(evaluation["loss"].to_numpy().argmin()))
    return sorted(picked)


def draw_curve(data, halvings, path):
    evaluation, train = data.eval, data.train
    figure, axis = plt.subplots(figsize=(7.5, 4.2))
    axis.plot(evaluation["step"], evaluation["ppl"], color="tab:blue", label="dev PPL")
    axis.set_yscale("log")
    axis.set_xlabel("step")
    axis.set_ylabel("dev perplexity (log scale)")
    axis.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    axis.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    best = int(evaluation["loss"].to_numpy().argmin())
    axis.plot(evaluation["step"].iloc[best], evaluation["ppl"].iloc[best], "o", color="tab:blue",
              label="lowest dev loss (ckpt/best.h5)")
    rate = axis.twinx()
    rate.plot(train["step"], train["lr"], color="tab:orange", linewidth=1, label="learning rate")
    rate.set_ylabel("learning rate")
    for step in halvings:
        axis.axvline(step, color="tab:gray", linewidth=0.8, linestyle=":")
    lines = axis.get_legend_handles_labels()
    more = rate.get_legend_handles_labels()
    axis.legend(lines[0] + more[0], lines[1] + more[1], loc="upper right", fontsize="small")
    axis.set_title(f"{data.config.get('name', '')}: dev perplexity and learning rate"
                   + (" (dotted: the rate halved)" if halvings else ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    plotting.save(figure, path)


def check_decoding(name, decoding, run_dir, data_dir):
    """(hypotheses, sources, references) of one stored decoding, with its BLEU scored again."""
    stored = pathlib.Path(str(decoding.get("hypotheses", "")))
    hypotheses = read_lines(run_dir / stored.name)
    sources = read_lines(data_dir / pathlib.Path(str(decoding["source"])).name)
    references = read_lines(data_dir / pathlib.Path(str(decoding["reference"])).name)
    if not len(hypotheses) == len(sources) == len(references) == int(decoding["sentences"]):
        raise AnalysisError(
            f"{run_dir / stored.name}: {len(hypotheses)} hypotheses for {len(sources)} sources "
            f"and {len(references)} references in {data_dir}, /{name} says "
            f"{int(decoding['sentences'])}: not the data this run was scored on")
    score = bleu.corpus_bleu(hypotheses, references)
    if abs(score - float(decoding["bleu"])) > BLEU_TOLERANCE:
        raise AnalysisError(f"{run_dir / stored.name}: BLEU {score:.6f} against {data_dir}, but "
                            f"/{name} stored {float(decoding['bleu']):.6f}: not the data this run "
                            f"was scored on")
    return hypotheses, sources, references


def _duration(seconds):
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def recipe_lines(data):
    c, s, a = data.config, data.summary, data.attrs
    layers = f"{c['model.encoder_layers']}+{c['model.decoder_layers']}"
    norm = "Post-LN" if c["model.norm"] == "post" else "Pre-LN"
    model = (f"{norm} Transformer, {layers} layers, d_model {c['model.d_model']}, d_ff "
             f"{c['model.d_ff']}, {c['model.heads']} heads (d_k {c['model.d_k']}, d_v "
             f"{c['model.d_v']}), dropout {c['model.dropout']}, {c['model.positions']} positions, "
             f"label smoothing {c['train.label_smoothing']}: {count(s.get('params'))} parameters")
    skipped = count(s.get("train_pairs_skipped"))
    data_text = (f"{count(s.get('train_pairs'))} training pairs ({skipped} longer than "
                 f"{c['data.max_length']} pieces skipped), SentencePiece "
                 f"{c['data.tokenizer.vocab_size']} pieces (sha256 "
                 f"`{str(s.get('tokenizer_sha256', ''))[:12]}`)")
    warmup, d_model, scale = float(c["train.lr.warmup"]), float(c["model.d_model"]), \
        float(c["train.lr.scale"])
    peak = scale * d_model ** -0.5 * warmup ** -0.5
    schedule = (f"noam, warmup {int(warmup)}, scale {scale:g} (peak {peak:.2e} at step "
                f"{int(warmup)})" if c["train.lr.schedule"] == "noam"
                else f"{c['train.lr.schedule']}, warmup {c['train.lr.warmup']}")
    stopping = []
    if int(c.get("train.lr.shrink_patience", 0)) > 0:
        stopping.append(f"rate x{c['train.lr.shrink']} after every "
                        f"{c['train.lr.shrink_patience']} evaluations without a gain (a dev loss "
                        f"more than {c['train.stop.min_delta']} nats below the last gain's)")
    if int(c.get("train.stop.patience", 0)) > 0:
        stopping.append(f"stop after {c['train.stop.patience']} without one")
    stopping.append(f"at most {count(c['train.steps'])} steps")
    batch = count(c["train.batch_tokens"])
    training = (f"{a.get('world_size', c['cluster.ranks'])} MPI rank(s) x "
                f"{c['cluster.threads_per_rank']} thread(s), batches of ~{batch}"
                f" padded source + target tokens, Adam ({c['train.optimizer.beta1']}, "
                f"{c['train.optimizer.beta2']}, {c['train.optimizer.eps']}), {schedule}; "
                f"{'; '.join(stopping)}; dev evaluation every {c['eval.every']} steps")
    return [("model", model), ("data", data_text), ("training", training)]


def cost_text(data):
    s, train = data.summary, data.train
    tokens_per_second = (float(np.median(train["tokens_per_sec"]))
                         if "tokens_per_sec" in train and len(train) else math.nan)
    return (f"{count(s.get('steps'))} steps, {fixed(s.get('epochs'), 1)} epochs, "
            f"{count(s.get('train_tokens'))} tokens in {_duration(s.get('train_seconds', 0))} of "
            f"training (median {count(tokens_per_second)} tokens/s; OpenBLAS kernel "
            f"{s.get('openblas_core', '?')}), {significant(s.get('train_flops', math.nan) / 1e12)} "
            f"TFLOP")


def page(data, run_dir, data_dir, figure_name, title, notes):
    verdict = convergence.assess_run(data)
    halvings = rate_cuts(data)
    s, evaluation = data.summary, data.eval
    lines = [f"# {title}", "",
             f"Generated by `python3 -m analysis.runpage` from the run log in `{run_dir}` (run "
             f"`{data.attrs.get('run_id', '?')}`, `{data.config.get('name', '')}`, commit "
             f"`{data.attrs.get('git_commit', '?')}`); regenerate it rather than editing it.", "",
             "## Recipe", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in recipe_lines(data)]
    lines += [f"| stopped | {s.get('stop_reason', '?')} at step {count(s.get('steps'))}; best dev "
              f"loss at step {count(s.get('best_step'))} |",
              f"| cost | {cost_text(data)} |",
              f"| convergence | **{verdict.status}**: {verdict.reason} "
              f"({verdict.status}: {convergence.MEANING[verdict.status]}) |", ""]

    lines += ["## Learning curve", "", f"![dev perplexity and learning rate]({figure_name})", ""]
    if halvings:
        lines += ["The rate halved (reduce on plateau) after the evaluations of steps "
                  + ", ".join(f"{step:,}" for step in halvings) + ".", ""]
    lines += ["| step | dev loss | dev PPL | |", "|---:|---:|---:|---|"]
    best = int(evaluation["loss"].to_numpy().argmin())
    for i in curve_rows(evaluation):
        row = evaluation.iloc[i]
        mark = "best" if i == best else ""
        lines.append(f"| {int(row['step']):,} | {row['loss']:.4f} | {row['ppl']:.2f} | {mark} |")
    lines.append("")

    lines += ["## Scores", "",
              "| split | parameters | decoding | BLEU | PPL | sentences |",
              "|---|---|---|---:|---:|---:|"]
    samples = None
    signatures = set()
    for name in sorted(data.decodings):
        decoding = data.decodings[name]
        hypotheses, sources, references = check_decoding(name, decoding, run_dir, data_dir)
        split = name[len("eval_"):] if name.startswith("eval_") else name
        parameters = (f"average of the last {decoding['average_last']}"
                      if int(decoding.get("average_last", 0)) > 1
                      else f"{decoding['checkpoint']} (step {int(decoding['step']):,})")
        decoding_text = (f"beam {decoding['beam']}, alpha {decoding['length_penalty']}, "
                         f"max length source + {decoding['max_len_offset']}")
        truncated = int(decoding.get("truncated", 0))
        lines.append(f"| {split} | {parameters} | {decoding_text} | "
                     f"**{float(decoding['bleu']):.2f}** | {float(decoding['ppl']):.2f} | "
                     f"{int(decoding['sentences']):,}"
                     + (f" ({truncated} cut to max length)" if truncated else "") + " |")
        signatures.add(str(decoding["bleu_signature"]))
        if split == "test" or samples is None:
            samples = (split, hypotheses, sources, references, decoding)
    if not data.decodings:
        raise AnalysisError(f"{run_dir}: no decoding in run.h5: run `attnlab eval {run_dir} "
                            f"--split test` (and --split dev) first")
    lines += ["", "BLEU: `" + "`, `".join(sorted(signatures)) + "` (detokenized output), scored "
              "again from the hypotheses by analysis.bleu. PPL is per SentencePiece piece, without "
              "label smoothing.", ""]
    for name in sorted(data.decodings):
        decoding = data.decodings[name]
        attention = decoding.get("cross_attention_entropy")
        lines.append(f"- {name}: `{decoding.get('bleu_detail', '')}`, decoded in "
                     f"{_duration(decoding.get('decode_seconds', math.nan))}"
                     + ("" if attention is None else
                        f"; decoder-encoder attention entropy {float(attention):.3f} of uniform "
                        "(teacher forcing with the references; mean over layers, heads and "
                        "target positions)"))
    lines.append("")

    split, hypotheses, sources, references, decoding = samples
    picks = sorted({int(i) for i in ((np.arange(SAMPLES) + 0.5) * len(sources) / SAMPLES)})
    lines += [f"## {split.capitalize()} translations", "",
              f"Lines {', '.join(str(i + 1) for i in picks)} of {len(sources):,} (evenly spaced), "
              f"with the parameters and decoding of the {split} row above.", ""]
    for i in picks:
        lines += [f"- **line {i + 1}**", f"  - source: {sources[i]}",
                  f"  - reference: {references[i]}", f"  - attnlab: {hypotheses[i]}"]
    lines.append("")
    if notes:
        lines += ["## Discussion", "", notes, ""]
    return "\n".join(lines)


@command_line("analysis.runpage")
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a run directory (run.h5 and hyp.<split>.txt)")
    parser.add_argument("--data", required=True,
                        help="the directory of the source and reference files (data/bible)")
    parser.add_argument("--out", required=True, help="the page to write (a .md file)")
    parser.add_argument("--title", help="the page's heading (default: the run's name)")
    parser.add_argument("--notes", help="a Markdown file whose text goes into the page as its "
                        "discussion")
    args = parser.parse_args(argv)
    try:
        run_dir, data_dir, out = (pathlib.Path(args.run_dir), pathlib.Path(args.data),
                                  pathlib.Path(args.out))
        if out.suffix != ".md":
            raise AnalysisError(f"--out {out}: the page is a Markdown file (.md)")
        data = read_run(str(run_dir / "run.h5"))
        if data.eval.empty:
            raise AnalysisError(f"{run_dir / 'run.h5'}: no dev evaluation to draw a curve from")
        notes = read_notes(args.notes, out.parent) if args.notes else None
        figure = out.parent / out.stem / "curve.png"
        text = page(data, run_dir, data_dir, f"{out.stem}/curve.png",
                    args.title or str(data.config.get("name", run_dir.name)), notes)
        draw_curve(data, rate_cuts(data), figure)
        out.write_text(text, encoding="utf-8")
    except AnalysisError as error:
        return report_error("analysis.runpage", error)
    print(f"wrote {out} and {figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
