"""What several seed-note studies use: the checkout's root, running attnlab, a sweep's completed
runs, the tokenizer of a corpus run (its SentencePiece pieces and piece counts), pyplot (on
analysis.plotting's backend), and the page's number and table formatting. Nothing here knows a
particular study.
"""

import json
import os
import pathlib
import subprocess
import time

import sentencepiece

from analysis.errors import AnalysisError
from analysis.formatting import DASH, significant
from analysis.plotting import plt  # noqa: F401  (the study modules draw with it)

ROOT = pathlib.Path(__file__).resolve().parents[2]
TIMING = "studies_timing.json"  # <runs dir>/: seconds spent per study by --run, summed


# --- running attnlab ------------------------------------------------------------------------

def record_time(runs_dir, key, seconds):
    path = pathlib.Path(runs_dir) / TIMING
    timing = json.loads(path.read_text()) if path.exists() else {}
    timing[key] = timing.get(key, 0.0) + seconds
    path.write_text(json.dumps(timing, indent=1, sort_keys=True) + "\n")


def call(command, runs_dir, key):
    """Run `command` from the checkout's root under `nice -n 10` with one OpenMP/BLAS thread,
    add its wall time to <runs_dir>/studies_timing.json under `key`, and raise RuntimeError
    when it fails."""
    print("+ " + " ".join(map(str, command)), flush=True)
    start = time.monotonic()
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    result = subprocess.run(["nice", "-n", "10", *map(str, command)], cwd=ROOT, env=env)
    record_time(runs_dir, key, time.monotonic() - start)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} exited {result.returncode}")


# --- runs ------------------------------------------------------------------------------------

def completed_runs(sweep):
    """(row, run_id, RunData) of every completed run, in the sweep's row order."""
    out = []
    for row in sweep.rows:
        for run_id in sweep.completed(row.key):
            out.append((row.key, run_id, sweep.data[run_id]))
    return out


def read_lines(path):
    return pathlib.Path(path).read_text(encoding="utf-8").splitlines()


# --- the tokenizer of a run: SentencePiece vocabulary and piece counts ----------------------

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


def piece_namer(run):
    """id strings -> piece texts for a corpus run, or None when its tokenizer is not found."""
    path = tokenizer_path(run)
    if path is None:
        return None
    pieces = sentencepiece_pieces(path)

    def names(ids):
        return [pieces[int(i)] if str(i).isdigit() and int(i) < len(pieces) else str(i)
                for i in ids]
    return names


# --- the page --------------------------------------------------------------------------------

def fmt(value, digits=3):
    """`value` with `digits` significant digits; an en dash for None and non-finite values."""
    return significant(value, digits, missing=DASH)


def markdown_table(frame, columns):
    """Markdown table of `frame` with (column, header, formatter) triples."""
    lines = ["| " + " | ".join(h for _, h, _ in columns) + " |",
             "|" + "---|" * len(columns)]
    for record in frame.to_dict("records"):
        lines.append("| " + " | ".join(f(record[c]) for c, _, f in columns) + " |")
    return lines + [""]


def relative(path, page):
    """`path` as the page links it: relative to the page's directory."""
    return os.path.relpath(path, page.parent)
