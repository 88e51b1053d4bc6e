"""The numbers behind the seed-note studies (experiments/studies/): one function per study turns
its sweep (analysis.sweep.Sweep) into tidy tables; analysis/studies_figures.py draws them and
analysis/studies.py writes the page. Nothing here plots or prints.
"""

import math
import pathlib
import re

import h5py
import numpy as np
import pandas as pd
import sentencepiece

from analysis import bleu
from analysis.errors import AnalysisError


def completed_runs(sweep):
    """(row, run_id, RunData) of every completed run, in the sweep's row order."""
    out = []
    for row in sweep.rows:
        for run_id in sweep.completed(row.key):
            out.append((row.key, run_id, sweep.data[run_id]))
    return out


def d_k(config):
    value = int(config.get("model.d_k", 0) or 0)
    return value or int(config["model.d_model"]) // int(config["model.heads"])


# --- 1. sqrt(d_k) ---------------------------------------------------------------------------

def _row_at(diagnostic, step):
    """The row of a diagnostic logged at `step` (None when it was not logged there)."""
    where = np.nonzero(diagnostic.steps == step)[0]
    return None if len(where) == 0 else diagnostic.values[where[0]]


def sqrt_dk_table(sweep):
    """One line per run and moment ("init" / "trained"): d_k, heads, attention_scale, the mean
    over attention blocks and heads of the logit variance and of the entropy (first dev batch),
    and the root-mean-square over blocks of the query/key gradient norm.

    "init" takes the attention statistics at step 0 and the gradients of step 1 (both at the
    initial parameters); "trained" takes the last step at which the run logged both."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        needed = ("attention_logit_variance", "attention_entropy", "qk_grad_norm")
        missing = [m for m in needed if m not in data.diagnostics]
        if missing:
            raise AnalysisError(f"{data.path}: no /diagnostics/{missing[0]} (the sqrt_dk study "
                                "needs log.diagnostics_every > 0 and a build that records "
                                "qk_grad_norm)")
        variance = data.diagnostics["attention_logit_variance"]
        entropy = data.diagnostics["attention_entropy"]
        gradient = data.diagnostics["qk_grad_norm"]
        common = sorted(set(variance.steps) & set(gradient.steps))
        moments = [("init", 0, 1), ("trained", common[-1], common[-1])] if common else []
        for moment, attention_step, gradient_step in moments:
            v, e, g = (_row_at(variance, attention_step), _row_at(entropy, attention_step),
                       _row_at(gradient, gradient_step))
            if v is None or e is None or g is None:
                raise AnalysisError(f"{data.path}: no diagnostics row at step {attention_step} "
                                    f"/ {gradient_step} for '{moment}'")
            records.append({
                "row": row, "run_id": run_id, "d_k": d_k(data.config),
                "heads": int(data.config["model.heads"]),
                "scale": str(data.config.get("model.attention_scale", "rsqrt_dk")),
                "moment": moment, "attention_step": int(attention_step),
                "gradient_step": int(gradient_step),
                "logit_variance": float(np.mean(v)), "entropy": float(np.mean(e)),
                "qk_grad_norm": float(np.sqrt(np.mean(np.square(g)))),
                "final_dev_ppl": float(data.summary.get("final_dev_ppl", np.nan))})
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run with diagnostics")
    return pd.DataFrame.from_records(records)


def loglog_slope(x, y):
    """Least-squares slope of log(y) against log(x): 1 for y ~ x, 0 for y constant."""
    x, y = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if len(np.unique(x)) < 2:
        return float("nan")
    return float(np.polyfit(x, y, 1)[0])


def sqrt_dk_claims(table):
    """Fitted exponents per scale and moment: {(scale, moment): {metric: slope}}."""
    out = {}
    for (scale, moment), part in table.groupby(["scale", "moment"]):
        part = part.sort_values("d_k")
        out[(scale, moment)] = {
            "variance_slope": loglog_slope(part["d_k"], part["logit_variance"]),
            "gradient_slope": loglog_slope(part["d_k"], part["qk_grad_norm"]),
            "d_k": part["d_k"].tolist(), "entropy": part["entropy"].tolist(),
            "variance": part["logit_variance"].tolist(),
            "gradient": part["qk_grad_norm"].tolist()}
    return out


# --- 2. warmup and normalisation ------------------------------------------------------------

def divergence(steps, losses, grad_norms=None, tail=0.1):
    """Whether a training run diverged, and why.

    A run diverged when (a) a logged loss or gradient norm is not finite (NaN or inf), or (b) the
    mean loss of its last `tail` fraction of logged rows (at least one row) is not below the loss
    of its first logged row: it ends no better than it started. Returns (diverged, reason, step):
    the first non-finite step for (a), the last step for (b), None when it did not diverge."""
    steps = np.asarray(steps)
    losses = np.asarray(losses, dtype=float)
    if len(losses) == 0:
        return False, "no rows", None
    bad = ~np.isfinite(losses)
    if grad_norms is not None:
        bad |= ~np.isfinite(np.asarray(grad_norms, dtype=float))
    if bad.any():
        first = int(np.argmax(bad))
        return True, "non-finite", int(steps[first])
    count = max(1, int(math.ceil(tail * len(losses))))
    final = float(np.mean(losses[-count:]))
    if final >= losses[0]:
        return True, "no progress", int(steps[-1])
    return False, "", None


def warmup_table(sweep):
    """One line per run: norm, warmup, peak, first and final loss, divergence verdict, and the
    ratio of the largest to the smallest per-layer gradient norm at step 1 and at the end."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        train = data.train
        diverged, reason, step = divergence(train["step"], train["loss"], train.get("grad_norm"))
        tail = max(1, int(math.ceil(0.1 * len(train))))
        record = {"row": row, "run_id": run_id, "norm": str(data.config["model.norm"]),
                  "warmup": int(data.config["train.lr.warmup"]),
                  "peak": float(data.config["train.lr.peak"]),
                  "first_loss": float(train["loss"].iloc[0]),
                  "final_loss": float(train["loss"].iloc[-tail:].mean()),
                  "max_loss": float(np.nanmax(train["loss"].to_numpy())),
                  "diverged": diverged, "reason": reason, "diverged_at": step}
        layers = data.diagnostics.get("grad_norm")
        if layers is not None and len(layers.steps):
            for name, index in (("step1", 0), ("end", -1)):
                values = layers.values[index]
                record[f"layer_spread_{name}"] = (float(values.max() / values.min())
                                                  if np.all(values > 0) else np.nan)
        records.append(record)
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    return pd.DataFrame.from_records(records)


# --- 3. positions and length ----------------------------------------------------------------

def source_length_words(line):
    return len(line.split())


def bucket_edges(lengths, count=5, first=None):
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


def read_lines(path):
    return pathlib.Path(path).read_text(encoding="utf-8").splitlines()


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
        with h5py.File(pathlib.Path(run_dir, "ckpt", f"step_{step}.h5"), "r", locking=False) as f:
            if names[0] not in f["params"]:
                return None
            tables.append({n: np.asarray(f["params"][n][()], dtype=np.float64) for n in names})
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


# --- SentencePiece: vocabulary and piece counts -------------------------------------------

def sentencepiece_pieces(path):
    """The pieces of a SentencePiece .model file in id order (Debian's python3-sentencepiece)."""
    try:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    except (OSError, RuntimeError) as error:
        raise AnalysisError(f"{path}: not a SentencePiece model ({error})") from None
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


class PieceCounter:
    """Number of pieces SentencePiece gives a line (without bos/eos): the library attnlab itself
    encodes with, so the count is attnlab's."""

    def __init__(self, path):
        self.processor = sentencepiece.SentencePieceProcessor(model_file=str(path))

    def __call__(self, line):
        return len(self.processor.encode(line))


# --- 4. heads -------------------------------------------------------------------------------

def heads_table(sweep):
    """One line per run, attention block and head: entropy of the first dev batch's attention
    (/diagnostics/attention_entropy) at step 0 and at the last logged step."""
    records = []
    for row, run_id, data in completed_runs(sweep):
        diagnostic = data.diagnostics.get("attention_entropy")
        if diagnostic is None or not len(diagnostic.steps):
            raise AnalysisError(f"{data.path}: no /diagnostics/attention_entropy")
        for moment, index in (("init", 0), ("trained", -1)):
            values = diagnostic.values[index]
            for block, label in enumerate(diagnostic.labels):
                for head in range(values.shape[1]):
                    records.append({"row": row, "run_id": run_id,
                                    "heads": int(data.config["model.heads"]),
                                    "moment": moment, "step": int(diagnostic.steps[index]),
                                    "block": label, "stack": label.split(".")[0],
                                    "head": head, "entropy": float(values[block, head])})
    if not records:
        raise AnalysisError(f"{sweep.directory}: no completed run")
    return pd.DataFrame.from_records(records)
