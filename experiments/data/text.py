#!/usr/bin/env python3
"""A parallel corpus of one's own: cleaned, split and written in the layout attnlab's configs read.

Reads line-aligned source and target files (and dev and test files, when given), drops training
pairs with an empty side, pairs longer than --max-length words, pairs whose word-count ratio
exceeds --max-ratio, exact duplicates and pairs that also occur in dev or test, counting each;
keeps given dev and test files as they are (a score on them stays comparable with anyone else's on
the same files: the card counts what each rule would have dropped, and --clean-held-out drops it);
draws dev and test from the training pairs (seeded) when they are not given; and writes
train/dev/test.<lang>, DATA_CARD.md (inputs, what was dropped, splits, sha256 checksums) and
experiment.yaml (experiments/small/base.yaml on this data). `attnlab data text` runs this script:

    attnlab data text --src corpus.en --tgt corpus.de --src-lang en --tgt-lang de --out data/en-de

Nothing is redone while the card's checksums match and the inputs and options are those it was made
from; other inputs or options for a directory that holds a corpus are refused unless --force,
which rewrites every file of it (and removes the tokenizer trained on the old data).

Python 3 standard library only (and datacard.py beside it, shared with bible.py).
"""

import argparse
import collections
import glob
import hashlib
import json
import math
import os
import re
import sys

from datacard import (CARD, checksum_section, files_match_card, read_card, sha256_file,
                      token_stats, write_atomic)

# Bumped whenever the cleaning or the split changes; a card from another recipe is rebuilt.
# 2: given dev and test files are kept as given unless --clean-held-out.
RECIPE_VERSION = 2

PROG = "attnlab data text"
DEFAULT_SRC_LANG = "src"
DEFAULT_TGT_LANG = "tgt"
DEFAULT_MAX_LENGTH = 250  # words on either side; 0 = no limit
DEFAULT_MAX_RATIO = 3.0   # longer side / shorter side, in words; 0 = no limit
DEFAULT_SEED = 1
# A dev or test split drawn from the training pairs takes this share of them, at least 1 pair and
# at most DRAWN_MAX, unless --dev-size / --test-size say otherwise.
DRAWN_SHARE = 0.05
DRAWN_MAX = 1000

SPLITS = ("train", "dev", "test")
EXPERIMENT = "experiment.yaml"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE_CONFIG = os.path.join(ROOT, "experiments", "small", "base.yaml")
LANG = re.compile(r"^[A-Za-z0-9_-]+$")
STAMP = re.compile(r"^<!-- attnlab data text: (\{.*\}) -->$", re.M)
TOKENIZERS = "sentencepiece.*.model"  # what `attnlab train` trains beside data.train.src

# Why a pair is dropped, in the order the rules are applied; a pair counts for the first it fails.
RULES = ("empty", "too_long", "ratio", "duplicate", "held_out")


class DataError(Exception):
    """A problem with the input files, reported as one line (exit 1); nothing is written."""


class UsageError(Exception):
    """A problem with the command line or the output directory (exit 2); nothing is written."""


# ---------------------------------------------------------------------------------------------
# Reading and cleaning
# ---------------------------------------------------------------------------------------------

# The limits of attnlab's corpus reader (core/data/corpus.h): one line at most 1 MiB, a file at
# most 64 GiB; a device or pipe (/dev/zero) is refused rather than read for ever.
MAX_LINE_BYTES = 1 << 20
MAX_FILE_BYTES = 64 << 30


def check_input_file(path):
    """DataError unless `path` is a regular file within MAX_FILE_BYTES."""
    if not os.path.exists(path):
        raise DataError(f"cannot open {path} (missing file)")
    if not os.path.isfile(path):
        raise DataError(f"{path} is not a regular file (a directory, a device or a pipe)")
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise DataError(f"{path}: {size} bytes, more than the {MAX_FILE_BYTES >> 30} GiB limit "
                        "of a corpus file")


def read_lines(path):
    """The file's lines as text, as attnlab's corpus reader takes them: split on \\n, a \\r before
    it removed; a UTF-8 byte-order mark at the start is removed. Invalid UTF-8, a file that is
    not regular and a line or file over the limits above are errors naming the file (and the
    line and byte), as `attnlab train` reports them."""
    check_input_file(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()  # a regular file whose size was checked above
    except OSError as error:
        raise DataError(f"cannot open {path} ({error.strerror})") from error
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()  # the newline that ends the last line
    if not raw:
        raise DataError(f"{path}: the file is empty")
    lines = []
    for number, line in enumerate(raw, 1):
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > MAX_LINE_BYTES:
            raise DataError(f"{path}:{number}: a line of {len(line)} bytes, longer than the "
                            f"{MAX_LINE_BYTES >> 10} KiB limit of one segment")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DataError(f"{path}:{number}: invalid UTF-8 at byte {error.start + 1} of the "
                            "line") from error
        if number == 1 and text.startswith("\ufeff"):
            text = text[1:]
        lines.append(text)
    return lines


def read_pairs(src_path, tgt_path):
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DataError(f"parallel files are not line-aligned: {src_path} has {len(src)} lines "
                        f"but {tgt_path} has {len(tgt)}")
    return list(zip(src, tgt))


def clean(pairs, max_length, max_ratio):
    """(kept pairs, Counter of dropped pairs by rule, plus "read" and "kept"). Whitespace around
    each line is removed; a pair is dropped for the first rule it fails."""
    counts = collections.Counter({rule: 0 for rule in RULES})
    counts["read"] = len(pairs)
    kept, seen = [], set()
    for src, tgt in pairs:
        src, tgt = src.strip(), tgt.strip()
        if not src or not tgt:
            counts["empty"] += 1
            continue
        src_words, tgt_words = len(src.split()), len(tgt.split())
        if max_length and max(src_words, tgt_words) > max_length:
            counts["too_long"] += 1
        elif max_ratio and max(src_words, tgt_words) > max_ratio * min(src_words, tgt_words):
            counts["ratio"] += 1
        elif (src, tgt) in seen:
            counts["duplicate"] += 1
        else:
            seen.add((src, tgt))
            kept.append((src, tgt))
    counts["kept"] = len(kept)
    return kept, counts


def remove_pairs(pairs, unwanted, counts):
    """`pairs` without those in `unwanted`, counted as held_out."""
    kept = [pair for pair in pairs if pair not in unwanted]
    counts["held_out"] += len(pairs) - len(kept)
    counts["kept"] = len(kept)
    return kept


def draw_key(seed, pair):
    """The order in which pairs are drawn into dev and test: a hash of the seed and the pair, so
    a pair's chance does not depend on where it sits in the file or on the Python version."""
    return hashlib.sha256(f"{seed}\n{pair[0]}\n{pair[1]}".encode("utf-8")).digest()


def default_drawn_size(pairs):
    return min(DRAWN_MAX, max(1, int(pairs * DRAWN_SHARE)))


# ---------------------------------------------------------------------------------------------
# The corpus
# ---------------------------------------------------------------------------------------------

def input_files(args):
    """{split: (src path, tgt path)} for the splits given as files."""
    files = {"train": (args.src, args.tgt)}
    for split in ("dev", "test"):
        src, tgt = getattr(args, f"{split}_src"), getattr(args, f"{split}_tgt")
        if src is not None:
            files[split] = (src, tgt)
    return files


def kept_as_given(pairs, max_length, max_ratio):
    """(the pairs with whitespace around each line removed, Counter of what each rule would have
    dropped, "kept" = every pair): a given dev or test file without --clean-held-out."""
    _, counts = clean(pairs, max_length, max_ratio)
    counts["kept"] = len(pairs)
    return [(src.strip(), tgt.strip()) for src, tgt in pairs], counts


def prepare(args):
    """{split: pairs} and {split: counts of the split's input (None for a drawn split)}. For a
    given dev or test file kept as given, the counts are of the pairs each rule would drop."""
    files = input_files(args)
    pairs, counts = {}, {}
    for split, (src, tgt) in files.items():
        read = read_pairs(src, tgt)
        if split == "train" or args.clean_held_out:
            pairs[split], counts[split] = clean(read, args.max_length, args.max_ratio)
        else:
            pairs[split], counts[split] = kept_as_given(read, args.max_length, args.max_ratio)
    counts.setdefault("dev", None)
    counts.setdefault("test", None)
    # Given dev and test pairs leave the training pairs; dev pairs leave the test pairs only when
    # held-out files are cleaned (else they are counted).
    held_out = set(pairs.get("dev", [])) | set(pairs.get("test", []))
    pairs["train"] = remove_pairs(pairs["train"], held_out, counts["train"])
    if "dev" in pairs and "test" in pairs:
        if args.clean_held_out:
            pairs["test"] = remove_pairs(pairs["test"], set(pairs["dev"]), counts["test"])
        else:
            in_dev = set(pairs["dev"])
            counts["test"]["held_out"] += sum(pair in in_dev for pair in pairs["test"])
    for split in ("train", "dev", "test"):
        if split in pairs and not pairs[split]:
            src, tgt = files[split]
            raise DataError(f"no pair of {src} and {tgt} is left after cleaning")

    drawn = [split for split in ("dev", "test") if split not in pairs]
    available = len(pairs["train"])
    sizes = {}
    for split in drawn:
        size = getattr(args, f"{split}_size")
        sizes[split] = default_drawn_size(available) if size is None else size
    if drawn and sum(sizes.values()) >= available:
        wanted = " and ".join(f"{split} {sizes[split]}" for split in drawn)
        raise DataError(f"{available} training pairs are left after cleaning: too few to draw "
                        f"{wanted} pairs from them and keep some for training "
                        "(give smaller --dev-size/--test-size, or dev and test files)")
    order = sorted(range(available), key=lambda i: draw_key(args.seed, pairs["train"][i]))
    start = 0
    taken = set()
    for split in drawn:
        chosen = sorted(order[start:start + sizes[split]])
        start += sizes[split]
        pairs[split] = [pairs["train"][i] for i in chosen]
        taken.update(chosen)
    pairs["train"] = [pair for i, pair in enumerate(pairs["train"]) if i not in taken]
    return pairs, counts


def output_names(langs):
    return [f"{split}.{lang}" for split in SPLITS for lang in langs]


def stamp_of(args):
    """What the outputs are a function of: the recipe, the inputs' contents and the options."""
    inputs = {}
    for split, (src, tgt) in input_files(args).items():
        for side, path in (("src", src), ("tgt", tgt)):
            check_input_file(path)
            try:
                inputs[f"{split}_{side}"] = sha256_file(path)
            except OSError as error:
                raise DataError(f"cannot open {path} ({error.strerror})") from error
    drawn = args.dev_src is None or args.test_src is None
    options = {"src_lang": args.src_lang, "tgt_lang": args.tgt_lang,
               "max_length": args.max_length, "max_ratio": args.max_ratio,
               "seed": args.seed if drawn else None,  # splits drawn from the training pairs only
               "dev_size": args.dev_size, "test_size": args.test_size,
               "clean_held_out": args.clean_held_out}
    return {"recipe": RECIPE_VERSION, "inputs": inputs, "options": options}


def stamp_differences(old, new):
    """What differs between the inputs and options of two stamps, as phrases; [] when none."""
    differences = []
    old_inputs, new_inputs = old.get("inputs", {}), new["inputs"]
    for key in sorted(set(old_inputs) | set(new_inputs)):
        if key not in new_inputs:
            differences.append(f"{key.replace('_', ' ')} was given, now is not")
        elif key not in old_inputs:
            differences.append(f"{key.replace('_', ' ')} was not given, now is")
        elif old_inputs[key] != new_inputs[key]:
            differences.append(f"{key.replace('_', ' ')} file has other contents")
    old_options = old.get("options", {})
    for key, value in new["options"].items():
        if old_options.get(key) != value:
            differences.append(f"{key} {old_options.get(key)} -> {value}")
    return differences


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------

def rule_labels(args):
    length = (f"more than {args.max_length} words on a side" if args.max_length
              else "over a length limit (none set)")
    ratio = (f"word-count ratio above {args.max_ratio:g}" if args.max_ratio
             else "over a word-count ratio limit (none set)")
    return [("read", "pairs read"), ("empty", "empty line on either side"),
            ("too_long", length), ("ratio", ratio),
            ("duplicate", "exact duplicate of an earlier pair"),
            ("held_out", "also in dev or test (train), in dev (test)"), ("kept", "kept")]


def kept_whole(args, split):
    """Whether a split is a given file kept as given (its counts say what rules would drop)."""
    return split != "train" and getattr(args, f"{split}_src") is not None \
        and not args.clean_held_out


def cleaning_table(args, counts):
    """Rows of (label, train, dev, test) cells; "-" for a drawn split, "(n)" for what a rule
    would have dropped from a split kept as given."""
    rows = []
    for key, label in rule_labels(args):
        cells = []
        for split in SPLITS:
            if counts[split] is None:
                cells.append("-")
            elif kept_whole(args, split) and key not in ("read", "kept"):
                cells.append(f"({counts[split][key]})")
            else:
                cells.append(str(counts[split][key]))
        rows.append((label, *cells))
    return rows


def held_out_policy(args):
    """How given dev and test files were treated, in a sentence for the card and the console."""
    given = [split for split in ("dev", "test") if getattr(args, f"{split}_src") is not None]
    if not given:
        return ""
    names = " and ".join(given)
    if args.clean_held_out:
        return (f"The given {names} file{'s were' if len(given) > 1 else ' was'} cleaned by the "
                "same rules (--clean-held-out): a score on them is not comparable with one on "
                "the original files.")
    return (f"The given {names} file{'s are' if len(given) > 1 else ' is'} kept as given (only "
            "whitespace around each line removed), so that a score on them is comparable with "
            "anyone else's on the same files; a number in brackets counts the pairs the rule "
            "would have dropped (--clean-held-out drops them).")


def origin(args, split):
    """Where a split's pairs come from, for the card."""
    if split == "train":
        drawn = [name for name in ("dev", "test") if getattr(args, f"{name}_src") is None]
        return "train input" + (f", less the drawn {' and '.join(drawn)}" if drawn else "")
    if getattr(args, f"{split}_src") is not None:
        return f"{split} input"
    return f"drawn from the cleaned training pairs (seed {args.seed})"


def write_card(args, stamp, pairs, counts):
    langs = (args.src_lang, args.tgt_lang)
    out_dir = args.out
    name = os.path.basename(os.path.abspath(out_dir))
    lines = [
        f"# Parallel corpus: {langs[0]} - {langs[1]} ({name})",
        "",
        f"<!-- attnlab data text: {json.dumps(stamp, sort_keys=True)} -->",
        "",
        f"Made by `attnlab data text` (`experiments/data/text.py`, recipe {RECIPE_VERSION}). "
        f"One sentence per line; `X.{langs[0]}` and `X.{langs[1]}` are line-aligned.",
        "",
        "## Inputs",
        "",
        "| input | file | sha256 |",
        "|---|---|---|",
    ]
    for split, (src, tgt) in input_files(args).items():
        for side, path in (("src", src), ("tgt", tgt)):
            lines.append(f"| {split} {side} | `{os.path.abspath(path)}` | "
                         f"{stamp['inputs'][f'{split}_{side}']} |")
    lines += [
        "",
        "## Cleaning",
        "",
        "Lines are read as `attnlab train` reads them (split at `\\n`, a `\\r` before it and a "
        "byte-order mark at the start of a file removed; invalid UTF-8 is refused, naming file "
        "and line), and whitespace around each line is removed. A pair is then dropped for the "
        "first of these rules it fails, in this order; words are whitespace-separated. A split "
        "drawn from the training pairs (`-`) has no input of its own. " + held_out_policy(args),
        "",
        "| pairs | train input | dev input | test input |",
        "|---|---|---|---|",
    ]
    for label, *cells in cleaning_table(args, counts):
        lines.append(f"| {label} | {' | '.join(cells)} |")
    lines += [
        "",
        "## Splits",
        "",
        f"| split | pairs | {langs[0]} words | {langs[1]} words | {langs[0]} median / max | "
        f"{langs[1]} median / max | from |",
        "|---|---|---|---|---|---|---|",
    ]
    for split in SPLITS:
        src_total, src_median, src_max = token_stats([p[0] for p in pairs[split]])
        tgt_total, tgt_median, tgt_max = token_stats([p[1] for p in pairs[split]])
        lines.append(f"| {split} | {len(pairs[split])} | {src_total} | {tgt_total} | "
                     f"{src_median} / {src_max} | {tgt_median} / {tgt_max} | "
                     f"{origin(args, split)} |")
    total = sum(len(p) for p in pairs.values())
    shared = len(set(pairs["dev"]) & set(pairs["test"]))
    overlap = ("no pair occurs in two splits" if not shared else
               f"no training pair occurs in dev or test; {shared} test pair"
               f"{'s occur' if shared > 1 else ' occurs'} in dev too (kept as given)")
    lines += ["", f"Total: {total} pairs; {overlap}.", ""]
    lines += checksum_section(out_dir, output_names(langs))
    lines += [
        "",
        "## Experiment",
        "",
        f"`{EXPERIMENT}` trains `experiments/small/base.yaml` on these files: "
        f"`attnlab train -c {os.path.join(os.path.abspath(out_dir), EXPERIMENT)}`. Its checksum "
        "is not listed, so it may be edited; `attnlab data text` writes it again only with the "
        "data or when it is missing.",
        "",
    ]
    write_atomic(os.path.join(out_dir, CARD), "\n".join(lines))


def quote(text):
    """A YAML double-quoted scalar (JSON's string syntax is a subset of YAML's)."""
    return json.dumps(text, ensure_ascii=False)


def experiment_yaml(out_dir, langs):
    """An experiment over experiments/small/base.yaml reading this corpus, with absolute paths
    (data paths in an experiment are taken from the directory attnlab runs in)."""
    directory = os.path.abspath(out_dir)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", os.path.basename(directory)).strip("-.") or "text"

    def split_paths(split):
        src, tgt = (quote(os.path.join(directory, f"{split}.{lang}")) for lang in langs)
        return f"{{src: {src}, tgt: {tgt}}}"

    experiment = os.path.join(directory, EXPERIMENT)
    return f"""\
# small-base's recipe (experiments/small/base.yaml: model, schedule, evaluation) on the corpus in
# this directory, written by `attnlab data text` beside DATA_CARD.md. From any directory:
#   attnlab train -c {experiment}
# or on two MPI ranks:
#   mpirun -np 2 --bind-to none attnlab train -c {experiment} \\
#       --set cluster.ranks=2
# Paths are absolute: after moving this directory, delete this file and run the same
# `attnlab data text` again to write it anew. A SentencePiece tokenizer of
# data.tokenizer.vocab_size pieces (4000 in the base) is trained here on first use; for a small
# corpus set data.tokenizer.vocab_size and model.vocab_size lower, both to the same value.
base: {quote(BASE_CONFIG)}
name: {quote(name)}

data:
  task: corpus
  train: {split_paths("train")}
  dev: {split_paths("dev")}
  test: {split_paths("test")}
  tokenizer:
    model: ""               # trained beside train.{langs[0]}: sentencepiece.bpe.<vocab_size>.model
  max_length: 160           # pieces per side, eos included (small-base's 64 fits Bible verses);
                            # longer pairs are skipped and counted

model:
  max_positions: 256        # data.max_length + 2 plus room for beam search's length limit

cluster:
  ranks: 1                  # `attnlab train` alone; mpirun with --set cluster.ranks=2 for two
"""


def write_experiment(out_dir, langs):
    write_atomic(os.path.join(out_dir, EXPERIMENT), experiment_yaml(out_dir, langs))


def print_cleaning(args, counts, log):
    rows = cleaning_table(args, counts)
    width = max(len(row[0]) for row in rows)
    log(f"  {'pairs dropped, each for its first rule':<{width}}  {'train':>8} {'dev':>8} "
        f"{'test':>8}")
    for label, *cells in rows:
        log(f"  {label:<{width}}  {cells[0]:>8} {cells[1]:>8} {cells[2]:>8}")
    policy = held_out_policy(args)
    if policy:
        log(policy)


# ---------------------------------------------------------------------------------------------
# The command
# ---------------------------------------------------------------------------------------------

def check_arguments(args):
    if not LANG.match(args.src_lang) or not LANG.match(args.tgt_lang):
        raise UsageError("--src-lang and --tgt-lang name the output files (train.<lang>): "
                         "letters, digits, - and _ only")
    if args.src_lang == args.tgt_lang:
        raise UsageError(f"--src-lang and --tgt-lang must differ (both are {args.src_lang!r})")
    for split in ("dev", "test"):
        src, tgt = getattr(args, f"{split}_src"), getattr(args, f"{split}_tgt")
        if (src is None) != (tgt is None):
            raise UsageError(f"--{split}-src and --{split}-tgt go together")
        size = getattr(args, f"{split}_size")
        if src is not None and size is not None:
            raise UsageError(f"--{split}-size sizes a {split} split drawn from the training "
                             f"pairs; with --{split}-src the {split} split is that file")
        if size is not None and size < 1:
            raise UsageError(f"--{split}-size must be at least 1, got {size}")
    if not math.isfinite(args.max_ratio) or not math.isfinite(args.max_length):
        raise UsageError(f"--max-length and --max-ratio must be finite numbers, got "
                         f"{args.max_length} and {args.max_ratio}")
    if args.max_length < 0 or args.max_ratio < 0:
        raise UsageError("--max-length and --max-ratio must be >= 0 (0 = no limit)")
    if args.max_ratio and args.max_ratio < 1:
        raise UsageError(f"--max-ratio compares the longer side with the shorter one: it must be "
                         f">= 1 (or 0 = no limit), got {args.max_ratio:g}")
    out = os.path.abspath(args.out)
    if "," in out:
        raise UsageError(f"--out {out} holds a comma: the tokenizer that `attnlab train` trains "
                         "there cannot read files whose path holds one")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out} exists and is not a directory")
    outputs = [os.path.join(out, name) for name in output_names((args.src_lang, args.tgt_lang))]
    for split, files in input_files(args).items():
        for path in files:
            for output in outputs:
                if os.path.exists(output) and os.path.exists(path) and \
                        os.path.samefile(output, path):
                    raise UsageError(f"the input {path} is the output {output}: choose another "
                                     "--out")


def decide(args, stamp):
    """Why the corpus is to be written ("" for a new one), or None when it is up to date. Raises
    UsageError when --out holds another corpus (or files a corpus would overwrite) and --force is
    not given."""
    langs = (args.src_lang, args.tgt_lang)
    card = read_card(args.out)
    if card is None:
        present = [name for name in output_names(langs) + [EXPERIMENT]
                   if os.path.exists(os.path.join(args.out, name))]
        if present and not args.force:
            raise UsageError(f"{args.out} holds {', '.join(present)} but no {CARD}: not "
                             "overwritten (--force overwrites them, or choose another --out)")
        return f"overwriting {', '.join(present)}" if present else ""
    match = STAMP.search(card)
    old = json.loads(match.group(1)) if match else None
    differences = (["its DATA_CARD.md was not written by attnlab data text"] if old is None
                   else stamp_differences(old, stamp))
    if differences:
        if not args.force:
            raise UsageError(f"{args.out} holds a corpus prepared from other inputs or options "
                             f"({'; '.join(differences)}): not overwritten (--force rewrites all "
                             "of it, or choose another --out)")
        return f"rewriting it ({'; '.join(differences)})"
    if old.get("recipe") == RECIPE_VERSION and files_match_card(args.out, card,
                                                                output_names(langs)):
        return None
    if old.get("recipe") != RECIPE_VERSION:
        return f"rewriting it (recipe {old.get('recipe')} -> {RECIPE_VERSION})"
    return f"rewriting it (its files differ from the checksums in {CARD})"


def build(args, log=print):
    check_arguments(args)
    langs = (args.src_lang, args.tgt_lang)
    stamp = stamp_of(args)
    experiment = os.path.join(args.out, EXPERIMENT)
    reason = decide(args, stamp)
    if reason is None:
        log(f"{args.out}: up to date ({CARD} checksums match; same inputs and options)")
        if not os.path.exists(experiment):
            write_experiment(args.out, langs)
            log(f"{args.out}: wrote {EXPERIMENT}")
        return False

    pairs, counts = prepare(args)  # reads everything before anything is removed or written
    if reason:
        log(f"{args.out}: {reason}")
    os.makedirs(args.out, exist_ok=True)
    card_path = os.path.join(args.out, CARD)
    if os.path.exists(card_path):
        os.unlink(card_path)  # the card marks a complete corpus: removed until it is one again
    for stale in sorted(glob.glob(os.path.join(glob.escape(args.out), TOKENIZERS))):
        os.unlink(stale)
        log(f"{args.out}: removed {os.path.basename(stale)} (trained on the old data)")
    for split in SPLITS:
        for lang, column in zip(langs, (0, 1)):
            text = "".join(pair[column] + "\n" for pair in pairs[split])
            write_atomic(os.path.join(args.out, f"{split}.{lang}"), text)
    write_experiment(args.out, langs)
    write_card(args, stamp, pairs, counts)

    print_cleaning(args, counts, log)
    sizes = ", ".join(
        f"{split} {len(pairs[split])}" + ("" if counts[split] is not None else
                                          f" (drawn, seed {args.seed})") for split in SPLITS)
    log(f"{args.out}: wrote {sizes} pairs, {CARD} and {EXPERIMENT}")
    log(f"train on it: attnlab train -c {experiment}")
    return True


def parser():
    parse = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add = parse.add_argument
    add("--src", required=True, help="training source text, one sentence a line")
    add("--tgt", required=True, help="training target text, line-aligned with --src")
    for split in ("dev", "test"):
        add(f"--{split}-src", help=f"{split} source text (default: drawn)")
        add(f"--{split}-tgt", help=f"{split} target text")
        add(f"--{split}-size", type=int,
            help=f"pairs of a drawn {split} split (default: {DRAWN_SHARE * 100:.0f}%% of the "
                 f"training pairs, 1 to {DRAWN_MAX})")
    add("--out", required=True, help="output directory")
    add("--src-lang", default=DEFAULT_SRC_LANG,
        help="source language: the output files' suffix (default %(default)s)")
    add("--tgt-lang", default=DEFAULT_TGT_LANG, help="target language (default %(default)s)")
    add("--seed", type=int, default=DEFAULT_SEED,
        help="seed of the drawn splits (default %(default)s)")
    add("--max-length", type=int, default=DEFAULT_MAX_LENGTH,
        help="drop pairs with more words on a side (default %(default)s; 0: no limit)")
    add("--max-ratio", type=float, default=DEFAULT_MAX_RATIO,
        help="drop pairs whose longer side has more than this times the words of the shorter "
             "(default %(default)g; 0: no limit)")
    add("--clean-held-out", action="store_true",
        help="drop pairs of given dev and test files by the training rules too (default: kept "
             "as given, so that scores on them stay comparable; the card counts what each rule "
             "would have dropped)")
    add("--force", action="store_true",
        help="rewrite --out when it holds a corpus made from other inputs or options")
    return parse


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        build(args)
    except UsageError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    except DataError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
