"""Writes the committed seed inputs of the fuzz targets, fuzz/corpus/<target>/ (docs/fuzzing.md).

    /usr/bin/python3 fuzz/make_seeds.py [--attnlab build/attnlab] [--only TARGET ...]

Seeds are what the program reads in practice: the experiment files of experiments/ and the test
fixtures of tests/config/ (each base: chain rewritten into the local files a.yaml, b.yaml, ... the
config target reads, joined by bytes 0xFF), the cluster profiles, a sweep manifest and a Slurm
record, a run.h5 and a checkpoint of a 4-step training of a tiny reverse-task model (made with
--attnlab, then rewritten smaller: see compact_copy) with copies whose series groups have missing
or odd metadata (DAMAGED_SERIES), corpus lines and BLEU inputs (with lines at their length limit:
long_line_seeds); and the
dictionaries fuzz/dicts/*.dict (config keys, profile and record keys, YAML tokens). Rerunning it rewrites the seeds; the run.h5 and
checkpoint bytes then differ (times, host), which is harmless.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
SEP = b"\xff"
LOCAL_NAMES = ["a.yaml", "b.yaml", "c.yaml", "d.yaml"]

# The tiny model of the run_log and checkpoint seeds; fuzz/checkpoint_fuzz.cpp loads its
# checkpoints into a model of exactly this size.
TINY = ["--set", "model.encoder_layers=1", "--set", "model.decoder_layers=1",
        "--set", "model.d_model=8", "--set", "model.d_ff=16", "--set", "model.heads=2",
        "--set", "model.d_k=4", "--set", "model.d_v=4", "--set", "model.max_positions=16",
        "--set", "train.batch_tokens=100", "--set", "data.synthetic.train_size=50",
        "--set", "data.synthetic.dev_size=4", "--set", "train.steps=4",
        "--set", "train.checkpoint_every=4", "--set", "eval.every=4", "--set", "log.every=2",
        "--set", "log.diagnostics_every=2"]


def write(target, name, data):
    path = CORPUS / target / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def base_entry(text):
    """The match of a YAML file's top-level base: line (group 1: its value), or None."""
    return re.search(r"^base:[ \t]*(.*?)[ \t]*(#.*)?$", text, re.M)


def chain(path):
    """The file and its base: chain, first the file itself (single bases only), at most 4."""
    files = [path]
    while len(files) < len(LOCAL_NAMES):
        match = base_entry(files[-1].read_text())
        if not match or match.group(1).startswith("["):
            break
        base = (files[-1].parent / match.group(1)).resolve()
        if not base.is_file() or base in files:
            break
        files.append(base)
    return files


def local_chain(path):
    """The chain's texts with each base: naming the next local file; joined by 0xFF."""
    files = chain(path)
    texts = []
    for i, file in enumerate(files):
        text = file.read_text()
        if i + 1 < len(files):
            text = re.sub(r"^base:.*$", f"base: {LOCAL_NAMES[i + 1]}", text, count=1, flags=re.M)
        texts.append(text.encode())
    return SEP.join(texts)


def config_seeds():
    sources = sorted(ROOT.glob("experiments/**/*.yaml"))
    sources += sorted((ROOT / "tests" / "config").glob("**/*.yaml"))
    for source in sources:
        name = str(source.relative_to(ROOT)).replace("/", "_")
        write("config", name, local_chain(source))
    # Shapes the files above do not have: a list of bases (a diamond), a cycle, aliases.
    write("config", "diamond.yaml", SEP.join([
        b"base: [b.yaml, c.yaml]\nname: diamond\nmodel: {d_ff: 512}\n",
        b"base: d.yaml\nmodel: {heads: 4}\n",
        b"base: d.yaml\ntrain: {steps: 10}\n",
        b"model: {d_model: 64, d_k: 0, d_v: 0, vocab_size: 100}\n"]))
    write("config", "cycle.yaml", SEP.join([b"base: b.yaml\n", b"base: a.yaml\n"]))
    write("config", "aliases.yaml",
          b"defaults: &m {d_model: 64, heads: 4}\nmodel:\n  <<: *m\n  d_ff: 128\n")
    write("config", "dotted_keys.yaml",
          b"model.d_model: 32\nmodel.heads: 2\ntrain.lr.peak: 1.0e-3\nname: 'quoted: name'\n")


def cluster_seeds(attnlab):
    for profile in sorted((ROOT / "cluster" / "profiles").glob("*.yaml")):
        write("cluster", "profile_" + profile.name, profile.read_bytes())
    write("cluster", "slurm.yaml", (
        "# Slurm job arrays submitted for this sweep, oldest first; array task i runs runs[i].\n"
        "submissions:\n"
        "  - job_id: \"1201\"\n    script: \"slurm/array-1.sbatch\"\n"
        "    submitted: \"2024-05-01T12:00:00Z\"\n    runs: [\"0f1e2d3c4b5a\", \"a1b2c3d4e5f6\"]\n"
        "  - job_id: \"1202\"\n    script: \"slurm/array-2.sbatch\"\n"
        "    submitted: \"2024-05-01T13:30:00Z\"\n    runs: []\n").encode())
    if attnlab is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        for sweep in ("experiments/small/study.yaml", "experiments/small/table3.yaml"):
            subprocess.run([attnlab, "sweep", str(ROOT / sweep), "--launcher", "local",
                            "--dry-run", "--out", tmp], check=True, capture_output=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        for manifest in sorted(Path(tmp).glob("*/manifest.yaml")):
            write("cluster", f"manifest_{manifest.parent.name}.yaml", manifest.read_bytes())


def compact_copy(source, destination):
    """`source` rewritten object by object (groups, datasets with their types, shapes, maximum
    shapes and checksum filters, every attribute with its type) in HDF5's newest format with chunks
    of at most 4 rows. The program's files hold chunks of 1024 rows and one B-tree node of about
    2 KB per chunked dataset, so a tiny run.h5 is 270 KB and a checkpoint 380 KB; the copies hold
    the same objects in a few KB each, which keeps each fuzz input small and quick to write."""
    import h5py  # Debian's python3-h5py, as the tests use

    def copy_attrs(src, dst):
        for name in src.attrs:
            dst.attrs.create(name, src.attrs[name], dtype=src.attrs.get_id(name).dtype)

    with h5py.File(source, "r") as src, h5py.File(destination, "w", libver="latest") as dst:
        copy_attrs(src, dst)

        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                copy_attrs(obj, dst.create_group(name))
                return
            chunks = None
            if obj.chunks:
                chunks = tuple(max(1, min(c, 4 if i == 0 else c, s or 1))
                               for i, (c, s) in enumerate(zip(obj.chunks, obj.shape)))
            copy = dst.create_dataset(name, shape=obj.shape, maxshape=obj.maxshape,
                                      dtype=obj.dtype, chunks=chunks, fletcher32=obj.fletcher32,
                                      data=obj[...])
            copy_attrs(obj, copy)

        src.visititems(visit)


def training_seeds(attnlab):
    import h5py  # Debian's python3-h5py, as the tests use

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        subprocess.run([attnlab, "train", "-c", str(ROOT / "experiments/tasks/reverse.yaml"),
                        *TINY, "--out", str(run)], check=True, capture_output=True, env=env)
        compacted = Path(tmp) / "compacted.h5"
        compact_copy(run / "run.h5", compacted)
        write("run_log", "completed.h5", compacted.read_bytes())
        # The same run as if killed before it completed: the status that takes the resume path.
        with h5py.File(compacted, "r+") as f:
            f.attrs["status"] = "running"
        write("run_log", "running.h5", compacted.read_bytes())
        damaged_series_seeds(compacted)
        compact_copy(run / "ckpt" / "step_4.h5", compacted)
        write("checkpoint", "step_4.h5", compacted.read_bytes())


# Series groups as a kill, a pause or a foreign writer can leave them (core/io/series.h): each
# seed is the running run log with one group's metadata missing or odd. The reader must report
# the group as damaged or refuse the file naming it, and a resume must repair what it reports.
def _drop_columns(group):
    del group.attrs["columns"]


def _set_columns(names):
    def edit(group):
        del group.attrs["columns"]
        group.attrs.create("columns", names, dtype=_string_type())
    return edit


def _string_type():
    import h5py
    return h5py.string_dtype("utf-8")


def _numeric_columns(group):
    del group.attrs["columns"]
    group.attrs["columns"] = [1, 2, 3]


def _drop_dataset(name):
    def edit(group):
        del group[name]
    return edit


def _longer_dataset(name):
    def edit(group):
        dataset = group[name]
        dataset.resize(dataset.shape[0] + 1, axis=0)
    return edit


def _dataset_as_group(name):
    def edit(group):
        del group[name]
        group.create_group(name)
    return edit


def _float_steps(group):
    values = group["step"][...].astype("float64")
    del group["step"]
    group.create_dataset("step", data=values, maxshape=(None,), chunks=(4,))


DAMAGED_SERIES = {
    "train_without_columns": ("train", _drop_columns),
    "eval_without_columns": ("eval", _drop_columns),
    "diagnostic_without_columns": ("diagnostics/grad_norm", _drop_columns),
    "diagnostic_without_columns_or_value": ("diagnostics/grad_norm",
                                            lambda g: (_drop_columns(g),
                                                       _drop_dataset("value")(g))),
    "train_columns_name_a_missing_dataset": ("train", _set_columns(
        ["step", "tokens", "loss", "nll", "lr", "grad_norm", "tokens_per_sec", "wall_time",
         "ghost"])),
    "train_columns_without_step": ("train", _set_columns(["loss", "nll"])),
    "train_columns_twice": ("train", _set_columns(["step", "loss", "loss"])),
    "train_columns_empty": ("train", _set_columns([])),
    "eval_columns_are_numbers": ("eval", _numeric_columns),
    "eval_one_column_longer": ("eval", _longer_dataset("loss")),
    "train_column_is_a_group": ("train", _dataset_as_group("loss")),
    "train_steps_are_floats": ("train", _float_steps),
}


def damaged_series_seeds(running):
    """Writes fuzz/corpus/run_log/<name>.h5 for each DAMAGED_SERIES edit of the run log
    `running` (a run that did not complete, so that the fuzz target resumes it too)."""
    import h5py  # Debian's python3-h5py, as the tests use

    with tempfile.TemporaryDirectory() as tmp:
        for name, (group, edit) in DAMAGED_SERIES.items():
            copy = Path(tmp) / f"{name}.h5"
            shutil.copyfile(running, copy)
            with h5py.File(copy, "r+") as f:
                edit(f[group])
            write("run_log", f"{name}.h5", copy.read_bytes())


def corpus_seeds():
    write("corpus", "plain.txt", b"the cat sat on the mat\nel gato se sento\n")
    write("corpus", "parallel.txt", b"in the beginning\nand the earth\n" + SEP +
          "en el principio\ny la tierra\n".encode())
    write("corpus", "spanish.txt", "¿Qué pasó? — «Nada», dijo él.\nañadió: 😀 ∑ ℵ\n".encode())
    write("corpus", "crlf_and_blank.txt", b"one\r\n\r\n  \r\ntwo\r\nthree" + SEP + b"1\n2\n\n3\n")
    write("corpus", "invalid_utf8.txt", b"ok\n\xc0\xaf overlong\n\xed\xa0\x80 surrogate\n"
          b"\xf4\x90\x80\x80 too big\n\xe2\x82 cut\n")
    long_line_seeds("corpus")


def long_line_seeds(target):
    """"LONG" inputs (fuzz/fuzz_common.h, long_line): one line of the limit minus one, the limit
    and the limit plus one byte, which the target builds from these few bytes."""
    for byte, name in ((0, "under"), (1, "at"), (2, "over")):
        write(target, f"long_line_{name}.txt", b"LONG" + bytes([byte]) + b"the cat sat")


def bleu_seeds():
    ref = "The cat is on the mat.\nThere is a cat on the mat.\n3.5 million, 1,000 e-mails &amp; more\n"
    hyp = "The cat the cat on the mat.\nA cat is on the mat!\n3.5 millions, 1,000 emails & more\n"
    ref2 = "The cat sits on the mat.\nOn the mat there is a cat.\n3.5 million, 1,000 mails\n"
    # The first byte: tokenizer in its low two bits (13a, char, none, intl), 4 for -lc.
    for byte, name in ((0, "13a"), (1, "char"), (2, "none"), (3, "intl"), (4, "13a_lc"),
                       (7, "intl_lc")):
        write("bleu", f"{name}.txt", bytes([byte]) + ref.encode() + SEP + hyp.encode())
    write("bleu", "two_refs.txt", b"\0" + SEP.join([ref.encode(), hyp.encode(), ref2.encode()]))
    write("bleu", "unicode.txt", "\7¿Dónde está? «Aquí» — 東京, İSTANBUL ΟΔΟΣ\n".encode() + SEP +
          "¿Donde esta? «Aquí» — 東京, istanbul οδος\n".encode())
    write("bleu", "empty_lines.txt", b"\0a b c\n\n\nd e\n" + SEP + b"a b\n\nx\nd e\n")
    long_line_seeds("bleu")


YAML_TOKENS = ["---", "...", "&a ", "*a", "<<: ", "!!str ", "!!int ", "!!float ", "? ", "- ", "[",
               "]", "{", "}", ", ", ": ", "\n  ", "'", '"', "#", "~", "null", "true", "false",
               ".inf", "-.nan", "0x1F", "1e309", "-0", "9223372036854775808"]


def write_dict(name, words):
    """A libFuzzer dictionary, fuzz/dicts/<name>.dict: one quoted token a line."""
    lines = [f"# Tokens for fuzz_{name} (written by fuzz/make_seeds.py)."]
    for word in dict.fromkeys(words):
        escaped = "".join(c if c.isprintable() and c not in '\\"' else f"\\x{ord(c):02X}"
                          for c in word)
        lines.append(f'"{escaped}"')
    path = ROOT / "fuzz" / "dicts" / f"{name}.dict"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def dictionaries():
    # Every config key, section and value word of docs/config.md's key table.
    page = (ROOT / "docs" / "config.md").read_text().split("\n## Every key\n", 1)[1]
    keys = re.findall(r"^\| ([a-z_][a-z0-9_.]*) \| (.*?) \| ", page, re.M)
    words = ["base: ", "sweep:", "name: ", "rows:", "grid:", "seeds:", "set:", "group:", "paper:",
             "min:", "max:", "until: resolved", "effect:", "confidence:", "ppl:", "bleu:",
             "params:"]
    for key, kind in keys:
        parts = key.split(".")
        words += [part + ":" for part in parts] + [key + ": "]
        words += [w.strip("` ") for w in kind.replace("\\|", "|").split("|") if w.strip()]
    write_dict("config", words + YAML_TOKENS)
    profile = re.findall(r"^//   ([a-z_]+): ", (ROOT / "core/cluster/profile.h").read_text(), re.M)
    write_dict("cluster", [k + ": " for k in profile] + [
        "runs:", "id: ", "name: ", "group: ", "seed: ", "overrides: ", "submissions:",
        "job_id: ", "script: ", "submitted: ", "srun", "mpirun", "01:00:00", "8G"] + YAML_TOKENS)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnlab", help="the attnlab binary (for run.h5, checkpoint, manifest)")
    parser.add_argument("--only", nargs="*", help="targets to write (default: all)")
    args = parser.parse_args()
    attnlab = str(Path(args.attnlab).resolve()) if args.attnlab else None
    makers = {"config": config_seeds, "cluster": lambda: cluster_seeds(attnlab),
              "corpus": corpus_seeds, "bleu": bleu_seeds}
    if attnlab:
        makers["run_log"] = makers["checkpoint"] = lambda: training_seeds(attnlab)
    for target in args.only or makers:
        if target not in makers:
            sys.exit(f"no seeds for {target} (the run_log and checkpoint seeds need --attnlab)")
        shutil.rmtree(CORPUS / target, ignore_errors=True)
    for maker in dict.fromkeys(makers[target] for target in args.only or makers):
        maker()
    dictionaries()
    for target in sorted(p.name for p in CORPUS.iterdir()):
        sizes = [f.stat().st_size for f in (CORPUS / target).iterdir()]
        print(f"{target}: {len(sizes)} seeds, largest {max(sizes)} bytes")


if __name__ == "__main__":
    main()
