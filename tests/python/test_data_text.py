"""`attnlab data text`: one's own parallel text cleaned, split and written with a data card and an
experiment file (experiments/data/text.py, run by core/app/cmd_data.cpp).

Small hand-made corpora with known defects, and what the command must say about each: the exact
counts on the console and in DATA_CARD.md, the files, their checksums (recomputed here), the seeded
split, the rerun that does nothing, the refusals, errors naming file and line, and a short training
run on a prepared corpus."""

import hashlib
import os
import re
import subprocess
import sys

import h5py
import pytest

from conftest import ROOT, run_attnlab

SCRIPTS = ROOT / "experiments" / "data"
FIXTURE = ROOT / "tests" / "fixtures" / "bible"
SPLITS = ("train", "dev", "test")
OUTPUTS = [f"{split}.{lang}" for split in SPLITS for lang in ("en", "de")]
SUM_ROW = re.compile(r"^\| `([\w.-]+)` \| `([0-9a-f]{64})` \|$", re.M)

sys.path.insert(0, str(SCRIPTS))
import text as text_script  # noqa: E402


def good_pair(i):
    return f"sentence number {i} is about cats", f"Satz Nummer {i} handelt von Katzen"


def write_lines(path, lines, newline="\n"):
    path.write_bytes("".join(line + newline for line in lines).encode("utf-8"))
    return path


def defective_corpus(tmp_path):
    """40 good training pairs plus 2 empty lines, 1 duplicate, 1 over-long pair, 1 ratio outlier
    and 1 pair that is also in the given dev file; dev and test files of their own. The target
    side has CRLF line ends and the source file a byte-order mark, which are not defects."""
    good = [good_pair(i) for i in range(40)]
    train = list(good)
    train.insert(5, ("", "ein Satz ohne Quelle"))              # empty source
    train.insert(12, ("a sentence without target", "   "))    # whitespace-only target
    train.insert(20, good[3])                                  # duplicate of pair 3
    train.insert(25, (" ".join(["word"] * 300), " ".join(["Wort"] * 300)))  # 300 words a side
    train.insert(30, ("yes", "ja , das ist so"))               # 1 word vs 5: ratio 5
    dev = [(f"a dev sentence {i}", f"ein Dev-Satz {i}") for i in range(5)] + [good[17]]
    test = [(f"a test sentence {i}", f"ein Testsatz {i}") for i in range(4)]
    files = {}
    for split, pairs in (("train", train), ("dev", dev), ("test", test)):
        files[f"{split}-src"] = write_lines(tmp_path / f"{split}.in.en", [p[0] for p in pairs])
        files[f"{split}-tgt"] = write_lines(tmp_path / f"{split}.in.de", [p[1] for p in pairs],
                                            newline="\r\n")
    source = files["train-src"]
    source.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    expected_train = [p for i, p in enumerate(good) if i != 17]
    return files, expected_train, dev[:5], test


def prepare(binary, out, files, *extra, check=True, env=None, langs=("en", "de")):
    args = ["data", "text", "--src", files["train-src"], "--tgt", files["train-tgt"],
            "--src-lang", langs[0], "--tgt-lang", langs[1], "--out", out]
    for split in ("dev", "test"):
        if f"{split}-src" in files:
            args += [f"--{split}-src", files[f"{split}-src"], f"--{split}-tgt",
                     files[f"{split}-tgt"]]
    return run_attnlab(binary, *args, *extra, check=check, env=env, timeout=300)


def read_pairs(out, split):
    return read_pairs_of(out, split, ("en", "de"))


def read_pairs_of(out, split, langs):
    src = (out / f"{split}.{langs[0]}").read_text(encoding="utf-8").split("\n")
    tgt = (out / f"{split}.{langs[1]}").read_text(encoding="utf-8").split("\n")
    assert src[-1] == "" and tgt[-1] == "" and len(src) == len(tgt)
    return list(zip(src[:-1], tgt[:-1]))


def card_cleaning(card):
    """{row label: (train, dev, test)} from the card's cleaning table."""
    section = card.split("\n## Cleaning\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([^|]+?) \| (\S+) \| (\S+) \| (\S+) \|$", section, re.M)
    return {label: list(cells) for label, *cells in rows}


def console_cleaning(stdout):
    rows = re.findall(r"^  (\S.*?)\s+(\S+)\s+(\S+)\s+(\S+)$", stdout, re.M)
    return {label: tuple(cells) for label, *cells in rows if cells != ["train", "dev", "test"]}


# Given dev and test files are kept as given: their cells count what a rule would have dropped.
EXPECTED = {
    "pairs read": ("45", "6", "4"),
    "empty line on either side": ("2", "(0)", "(0)"),
    "more than 250 words on a side": ("1", "(0)", "(0)"),
    "word-count ratio above 3": ("1", "(0)", "(0)"),
    "exact duplicate of an earlier pair": ("1", "(0)", "(0)"),
    "also in dev or test (train), in dev (test)": ("1", "(0)", "(0)"),
    "kept": ("39", "6", "4"),
}


@pytest.fixture(scope="module")
def prepared(attnlab, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("defects")
    files, train, dev, test = defective_corpus(tmp_path)
    out = tmp_path / "corpus"
    result = prepare(attnlab, out, files)
    return out, result, files, train, dev, test


def test_every_defect_is_counted_on_the_console_and_in_the_card(prepared):
    out, result, *_ = prepared
    card = (out / "DATA_CARD.md").read_text(encoding="utf-8")
    # The dev pair that is also in train leaves train; the dev file keeps it (6 pairs kept).
    assert card_cleaning(card) == {label: list(cells) for label, cells in EXPECTED.items()}
    assert console_cleaning(result.stdout) == EXPECTED
    assert "wrote train 39, dev 6, test 4 pairs" in result.stdout


def defective_held_out(tmp_path):
    """Clean training pairs, and dev and test files with a pair each rule would drop: test has
    a ratio outlier, a duplicate, an empty target and a pair that is also in dev."""
    train = [good_pair(i) for i in range(40)]
    dev = [(f"a dev sentence {i}", f"ein Dev-Satz {i}") for i in range(5)]
    test = [("a test sentence", "ein Testsatz"), ("yes", "ja , das ist so"),
            ("a test sentence", "ein Testsatz"), ("an untranslated line", ""), dev[2],
            ("the last test sentence", "der letzte Testsatz")]
    files = {}
    for split, pairs in (("train", train), ("dev", dev), ("test", test)):
        files[f"{split}-src"] = write_lines(tmp_path / f"{split}.in.en", [p[0] for p in pairs])
        files[f"{split}-tgt"] = write_lines(tmp_path / f"{split}.in.de", [p[1] for p in pairs])
    return files, dev, test


def test_given_test_and_dev_files_are_kept_as_given_unless_asked(attnlab, tmp_path):
    files, dev, test = defective_held_out(tmp_path)
    kept = prepare(attnlab, tmp_path / "kept", files)
    assert read_pairs(tmp_path / "kept", "test") == test, "every line, in order"
    assert read_pairs(tmp_path / "kept", "dev") == dev
    counts = console_cleaning(kept.stdout)
    card = (tmp_path / "kept" / "DATA_CARD.md").read_text(encoding="utf-8")
    assert card_cleaning(card) == {label: list(cells) for label, cells in counts.items()}
    # Rules apply in order: the empty target, the ratio 1:5, the repeat, the pair in dev.
    assert [counts[label][2] for label in EXPECTED] == ["6", "(1)", "(0)", "(1)", "(1)", "(1)",
                                                        "6"]
    assert "kept as given" in kept.stdout and "kept as given" in card
    assert "1 test pair occurs in dev too" in card
    assert "wrote train 40, dev 5, test 6 pairs" in kept.stdout

    cleaned = prepare(attnlab, tmp_path / "cleaned", files, "--clean-held-out")
    counts = console_cleaning(cleaned.stdout)
    assert [counts[label][2] for label in EXPECTED] == ["6", "1", "0", "1", "1", "1", "2"]
    assert read_pairs(tmp_path / "cleaned", "test") == [test[0], test[5]]
    assert "wrote train 40, dev 5, test 2 pairs" in cleaned.stdout
    assert "--clean-held-out" in (tmp_path / "cleaned" / "DATA_CARD.md").read_text("utf-8")


def test_the_files_hold_the_cleaned_pairs_in_order(prepared):
    out, _, _, train, dev, test = prepared
    assert read_pairs(out, "train") == train  # BOM and CR removed, defects gone, order kept
    assert read_pairs(out, "dev") == dev + [good_pair(17)]
    assert read_pairs(out, "test") == test
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS + ["DATA_CARD.md",
                                                                      "experiment.yaml"])


def test_card_checksums_are_those_of_the_files_and_inputs(prepared):
    out, _, files, *_ = prepared
    card = (out / "DATA_CARD.md").read_text(encoding="utf-8")
    sums = dict(SUM_ROW.findall(card))
    assert sorted(sums) == sorted(OUTPUTS)
    for name, digest in sums.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    for path in files.values():
        line = [row for row in card.splitlines() if f"`{path}`" in row]
        assert len(line) == 1, path
        assert hashlib.sha256(path.read_bytes()).hexdigest() in line[0]


def test_the_experiment_file_points_at_the_files_with_absolute_paths(attnlab, prepared, tmp_path):
    out, *_ = prepared
    here = os.getcwd()
    os.chdir(tmp_path)  # data paths in an experiment are taken from where attnlab runs
    try:
        flat = run_attnlab(attnlab, "config", "-c", out / "experiment.yaml", "--flat").stdout
    finally:
        os.chdir(here)
    config = dict(line.split("=", 1) for line in flat.splitlines())
    for split in SPLITS:
        assert config[f"data.{split}.src"] == str(out / f"{split}.en")
        assert config[f"data.{split}.tgt"] == str(out / f"{split}.de")
    assert config["data.task"] == "corpus"
    assert config["cluster.ranks"] == "1"
    assert config["name"] == "corpus"
    # Longer sentences than Bible verses have room: 160 pieces, as many positions as need be.
    assert config["data.max_length"] == "160"
    assert config["model.max_positions"] == "256"
    # Everything else is experiments/small/base.yaml's.
    base = dict(line.split("=", 1) for line in run_attnlab(
        attnlab, "config", "-c", ROOT / "experiments" / "small" / "base.yaml",
        "--flat").stdout.splitlines())
    differing = {key for key in base if base[key] != config[key]}
    paths = {f"data.{s}.{side}" for s in SPLITS for side in ("src", "tgt")}
    assert differing == {"name", "cluster.ranks", "data.max_length", "model.max_positions"} | paths


def test_a_rerun_does_nothing_while_the_checksums_match(attnlab, prepared):
    out, _, files, *_ = prepared
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()}
    result = prepare(attnlab, out, files)
    assert "up to date" in result.stdout
    assert {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.iterdir()} == before


def test_a_missing_experiment_file_is_written_again_and_nothing_else(attnlab, tmp_path):
    files, *_ = defective_corpus(tmp_path)
    out = tmp_path / "corpus"
    prepare(attnlab, out, files)
    experiment = (out / "experiment.yaml").read_bytes()
    (out / "experiment.yaml").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    result = prepare(attnlab, out, files)
    assert "up to date" in result.stdout and "wrote experiment.yaml" in result.stdout
    assert (out / "experiment.yaml").read_bytes() == experiment
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != "experiment.yaml"} \
        == before


def test_a_changed_output_is_rebuilt_from_the_same_inputs(attnlab, tmp_path):
    files, *_ = defective_corpus(tmp_path)
    out = tmp_path / "corpus"
    prepare(attnlab, out, files)
    original = {name: (out / name).read_bytes() for name in OUTPUTS + ["DATA_CARD.md"]}
    (out / "train.de").write_text("edited\n", encoding="utf-8")
    result = prepare(attnlab, out, files)
    assert "rewriting" in result.stdout
    assert {name: (out / name).read_bytes() for name in original} == original


def test_other_inputs_are_refused_unless_forced(attnlab, tmp_path):
    files, *_ = defective_corpus(tmp_path)
    out = tmp_path / "corpus"
    prepare(attnlab, out, files)
    (out / "sentencepiece.bpe.500.model").write_bytes(b"a tokenizer of the old data")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    other = dict(files)
    other["train-src"] = write_lines(tmp_path / "other.en", [good_pair(i)[0] for i in range(45)])
    result = prepare(attnlab, out, other, check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "holds a corpus prepared from other inputs or options" in result.stderr
    assert "train src file has other contents" in result.stderr and "--force" in result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # Other options are refused the same way.
    result = prepare(attnlab, out, files, "--max-length", "100", check=False)
    assert result.returncode == 2 and "max_length 250 -> 100" in result.stderr
    # --force rewrites all of it, and the tokenizer trained on the old data goes.
    result = prepare(attnlab, out, other, "--force")
    assert "removed sentencepiece.bpe.500.model" in result.stdout
    assert not (out / "sentencepiece.bpe.500.model").exists()
    assert [p[0] for p in read_pairs(out, "train")][:2] == [good_pair(0)[0], good_pair(1)[0]]
    assert "up to date" in prepare(attnlab, out, other).stdout


def test_files_of_a_directory_without_a_card_are_not_overwritten(attnlab, tmp_path):
    files, *_ = defective_corpus(tmp_path)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "train.en").write_text("my own file\n", encoding="utf-8")
    result = prepare(attnlab, out, files, check=False)
    assert result.returncode == 2 and "holds train.en but no DATA_CARD.md" in result.stderr
    assert (out / "train.en").read_text(encoding="utf-8") == "my own file\n"


def drawn_corpus(tmp_path, pairs=200):
    files = {"train-src": write_lines(tmp_path / "all.en", [good_pair(i)[0] for i in range(pairs)]),
             "train-tgt": write_lines(tmp_path / "all.de", [good_pair(i)[1] for i in range(pairs)])}
    return files


def test_drawn_splits_depend_on_the_seed_only(attnlab, tmp_path):
    files = drawn_corpus(tmp_path)
    outputs = {}
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        out = tmp_path / name
        result = prepare(attnlab, out, files, "--seed", seed)
        outputs[name] = {f: (out / f).read_bytes() for f in OUTPUTS}
        # Default sizes: 5% of 200 pairs each.
        assert "wrote train 180, dev 10 (drawn, seed " in result.stdout
    assert outputs["a"] == outputs["b"]
    assert outputs["a"]["dev.en"] != outputs["c"]["dev.en"]
    assert outputs["a"]["test.en"] != outputs["c"]["test.en"]
    # The three splits are disjoint and together are the corpus; each keeps the input order.
    out = tmp_path / "a"
    splits = {split: read_pairs(out, split) for split in SPLITS}
    every = [pair for split in SPLITS for pair in splits[split]]
    assert sorted(every) == sorted(good_pair(i) for i in range(200))
    order = {good_pair(i): i for i in range(200)}
    for pairs in splits.values():
        assert [order[p] for p in pairs] == sorted(order[p] for p in pairs)
    card = (out / "DATA_CARD.md").read_text(encoding="utf-8")
    assert "| dev | 10 |" in card and "drawn from the cleaned training pairs (seed 1)" in card


def test_sizes_and_a_given_dev_with_a_drawn_test(attnlab, tmp_path):
    files = drawn_corpus(tmp_path, pairs=50)
    files["dev-src"] = write_lines(tmp_path / "dev.in.en", [good_pair(3)[0], "one more"])
    files["dev-tgt"] = write_lines(tmp_path / "dev.in.de", [good_pair(3)[1], "noch einer"])
    out = tmp_path / "corpus"
    result = prepare(attnlab, out, files, "--test-size", "7")
    # Pair 3 is in the given dev: it leaves train before test is drawn from the 49 others.
    assert "wrote train 42, dev 2, test 7 (drawn, seed 1) pairs" in result.stdout
    assert console_cleaning(result.stdout)["also in dev or test (train), in dev (test)"] == \
        ("1", "(0)", "-")
    assert good_pair(3) not in read_pairs(out, "train") + read_pairs(out, "test")
    # A size for a split given as files is a usage error.
    result = prepare(attnlab, tmp_path / "other", files, "--dev-size", "3", check=False)
    assert result.returncode == 2 and "--dev-size" in result.stderr
    # Asking for more than there is: an error that says how many pairs are left.
    result = prepare(attnlab, tmp_path / "big", files, "--test-size", "49", check=False)
    assert result.returncode == 1 and "49 training pairs are left" in result.stderr
    assert not (tmp_path / "big").exists()


# Truncated, a lone continuation byte, overlong, a surrogate, above U+10FFFF.
INVALID_UTF8 = [b"caf\xc3", b"ab\x80cd", b"x\xc0\x80", b"\xed\xa0\x80 surrogate",
                b"\xf5\x80\x80\x80"]


@pytest.mark.parametrize("bad", INVALID_UTF8)
def test_invalid_utf8_names_file_line_and_byte_as_attnlab_reports_it(attnlab, tmp_path, bad):
    files = drawn_corpus(tmp_path, pairs=20)
    lines = files["train-tgt"].read_bytes().split(b"\n")
    lines[2] = b"ok " + bad
    files["train-tgt"].write_bytes(b"\n".join(lines))
    out = tmp_path / "corpus"
    result = prepare(attnlab, out, files, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    match = re.search(rf"{re.escape(str(files['train-tgt']))}:3: invalid UTF-8 at byte (\d+) of "
                      r"the line", result.stderr)
    assert match, result.stderr
    assert not out.exists()
    # The C++ corpus reader (here through attnlab bleu) names the same line and byte.
    bleu = run_attnlab(attnlab, "bleu", files["train-tgt"], files["train-tgt"], check=False)
    assert bleu.returncode != 0
    assert f"{files['train-tgt']}:3: invalid UTF-8 at byte {match.group(1)} of the line" \
        in bleu.stderr


def test_invalid_utf8_in_a_dev_file_names_that_file(attnlab, tmp_path):
    files, *_ = defective_corpus(tmp_path)
    files["dev-src"].write_bytes(b"fine\n\xff\n" + b"x\n" * 4)
    result = prepare(attnlab, tmp_path / "corpus", files, check=False)
    assert result.returncode == 1
    assert f"{files['dev-src']}:2: invalid UTF-8 at byte 1 of the line" in result.stderr


def test_a_device_or_an_overlong_line_is_refused_naming_the_limit(attnlab, tmp_path):
    """/dev/zero used to be read for ever (and a line without end held whole in memory): the
    script and attnlab's own readers refuse a file that is not regular and a line over 1 MiB."""
    files = drawn_corpus(tmp_path, pairs=20)
    result = run_attnlab(attnlab, "data", "text", "--src", "/dev/zero", "--tgt",
                         files["train-tgt"], "--out", tmp_path / "corpus", check=False,
                         timeout=60)
    assert result.returncode == 1
    assert "/dev/zero is not a regular file" in result.stderr, result.stderr
    long_line = tmp_path / "long.txt"
    long_line.write_bytes(b"ok\n" + b"x" * ((1 << 20) + 1) + b"\n")
    files["train-src"].write_bytes(long_line.read_bytes() + b"y\n" * 18)
    result = prepare(attnlab, tmp_path / "corpus", files, check=False)
    assert result.returncode == 1
    assert f"{files['train-src']}:2: a line of 1048577 bytes, longer than the 1024 KiB limit" \
        in result.stderr, result.stderr
    bleu = run_attnlab(attnlab, "bleu", long_line, long_line, check=False)
    assert bleu.returncode == 1
    assert f"{long_line}:2: a line longer than 1024 KiB (the limit of one segment" in bleu.stderr
    device = run_attnlab(attnlab, "bleu", "/dev/zero", long_line, check=False, timeout=60)
    assert device.returncode == 1 and "/dev/zero is not a regular file" in device.stderr
    # An endless stdin is stopped at its line limit, not read until memory runs out.
    endless = subprocess.run(f"head -c 3000000 /dev/zero | {attnlab} bleu {files['train-tgt']}",
                             shell=True, capture_output=True, text=True, timeout=60)
    assert endless.returncode == 1
    assert "a line longer than 1024 KiB" in endless.stderr, endless.stderr


def test_mismatched_line_counts_name_both_files_and_counts(attnlab, tmp_path):
    files = drawn_corpus(tmp_path, pairs=20)
    write_lines(files["train-tgt"], [good_pair(i)[1] for i in range(19)])
    out = tmp_path / "corpus"
    result = prepare(attnlab, out, files, check=False)
    assert result.returncode == 1
    assert (f"{files['train-src']} has 20 lines but {files['train-tgt']} has 19"
            in result.stderr), result.stderr
    assert not out.exists()


@pytest.mark.parametrize("extra, langs, message", [
    (["--dev-src", "x.en"], ("en", "de"), "--dev-src and --dev-tgt go together"),
    ([], ("en", "en"), "--src-lang and --tgt-lang must differ"),
    ([], ("en", "d/e"), "letters, digits, - and _ only"),
    (["--max-ratio", "0.5"], ("en", "de"), "--max-ratio"),
    (["--max-ratio", "nan"], ("en", "de"), "--max-ratio nan: expected a finite number >= 0"),
    (["--dev-size", "0"], ("en", "de"), "--dev-size must be at least 1"),
    (["--slice"], ("en", "de"), "--slice is not an option of data text"),
])
def test_usage_errors_exit_2(attnlab, tmp_path, extra, langs, message):
    files = drawn_corpus(tmp_path, pairs=20)
    result = prepare(attnlab, tmp_path / "corpus", files, *extra, langs=langs, check=False)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "corpus").exists()
    result = run_attnlab(attnlab, "data", "text", "--src", files["train-src"], check=False)
    assert result.returncode == 2 and "needs --tgt" in result.stderr


def test_the_help_states_the_scripts_defaults(attnlab):
    page = run_attnlab(attnlab, "data", "--help").stdout
    flat = " ".join(page.split())
    assert f"(default {text_script.DEFAULT_MAX_LENGTH}; 0 = no limit)" in flat
    assert f"(default {text_script.DEFAULT_MAX_RATIO:g}; 0 = no limit)" in flat
    assert f"(default {text_script.DEFAULT_SEED})" in flat
    assert f"(default {text_script.DEFAULT_SRC_LANG})" in flat
    assert f"(default {text_script.DEFAULT_TGT_LANG})" in flat
    assert (f"default {text_script.DRAWN_SHARE:.0%} of the cleaned training pairs, 1 to "
            f"{text_script.DRAWN_MAX}") in flat
    for option in ("--src", "--tgt", "--dev-src", "--dev-tgt", "--test-src", "--test-tgt",
                   "--dev-size", "--test-size", "--seed", "--max-length", "--max-ratio",
                   "--src-lang", "--tgt-lang", "--force"):
        assert option in text_script.parser().format_help() and f"  {option} " in page


def fake_python(tmp_path, name, exit_code):
    """An executable that records its arguments in <name>.log, then exits or runs Debian's
    python3 (exit_code None)."""
    log = tmp_path / f"{name}.log"
    script = tmp_path / name / "python3"
    script.parent.mkdir()
    tail = f"exit {exit_code}" if exit_code is not None else 'exec /usr/bin/python3 "$@"'
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{tail}\n')
    script.chmod(0o755)
    return script, log


def test_the_interpreter_is_attnlab_python_else_debians(attnlab, tmp_path):
    files = drawn_corpus(tmp_path, pairs=20)
    first_on_path, path_log = fake_python(tmp_path, "pyenv", 97)
    chosen, chosen_log = fake_python(tmp_path, "chosen", None)
    env = {"PATH": f"{first_on_path.parent}:{os.environ['PATH']}"}
    prepare(attnlab, tmp_path / "a", files, env=env)  # Debian's, not the one first on PATH
    assert not path_log.exists()
    prepare(attnlab, tmp_path / "b", files, env=dict(env, ATTNLAB_PYTHON=str(chosen)))
    assert "experiments/data/text.py" in chosen_log.read_text()
    # data bible uses the same rule.
    bible, bible_log = fake_python(tmp_path, "bible", 0)
    run_attnlab(attnlab, "data", "bible", "--out", tmp_path / "bible", "--slice",
                env=dict(env, ATTNLAB_PYTHON=str(bible)))
    assert "experiments/data/bible.py --out" in bible_log.read_text()
    assert not path_log.exists()


def test_a_prepared_corpus_trains(attnlab, tmp_path):
    # The Bible slice's training side as one's own corpus; dev and test drawn from it.
    files = {"train-src": FIXTURE / "train.en", "train-tgt": FIXTURE / "train.es"}
    out = tmp_path / "en-es"
    run_attnlab(attnlab, "data", "text", "--src", files["train-src"], "--tgt", files["train-tgt"],
                "--src-lang", "en", "--tgt-lang", "es", "--out", out)
    work = tmp_path / "elsewhere"
    work.mkdir()
    here = os.getcwd()
    os.chdir(work)
    try:
        # A tiny model and vocabulary, two steps (as tests/python/test_translate_cli.py trains).
        settings = ["train.steps=2", "model.encoder_layers=1", "model.decoder_layers=1",
                    "model.d_model=32", "model.d_ff=64", "model.heads=2", "model.d_k=16",
                    "model.d_v=16", "model.vocab_size=500", "data.tokenizer.vocab_size=500",
                    "train.batch_tokens=1000", "eval.beam=1"]
        overrides = [word for setting in settings for word in ("--set", setting)]
        result = run_attnlab(attnlab, "train", "-c", out / "experiment.yaml", "--out",
                             work / "run", *overrides, "-q", timeout=600)
    finally:
        os.chdir(here)
    assert result.returncode == 0
    with h5py.File(work / "run" / "run.h5", "r") as run:
        assert run.attrs["status"] == "completed"
        summary = dict(run["summary"].attrs)
    assert int(summary["steps"]) == 2
    assert int(summary["train_pairs"]) == len(read_pairs_of(out, "train", ("en", "es")))
    # The tokenizer is trained beside the data.
    assert summary["tokenizer_path"] == str(out / "sentencepiece.bpe.500.model")
