"""`attnlab train` on parallel text, `attnlab eval` and `attnlab translate` end to end, on the
committed Bible fixture with a tiny model (vocabulary 500, a few steps), plus bad inputs: every
failure names the file (and line), and nothing half-written is left behind."""

import hashlib
import json
import os
import shutil
import subprocess

import h5py
import pytest

from conftest import MPI_TEST_ENV, ROOT, run_attnlab
from test_bf16 import NATIVE_BF16, NO_BF16

FIXTURE = ROOT / "tests" / "fixtures" / "bible"

TINY = """\
base: {base}
name: tiny-bible
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 2, d_k: 16, d_v: 16,
        vocab_size: {vocab}, max_positions: 160}}
data:
  train: {{src: data/train.en, tgt: data/train.es}}
  dev: {{src: data/dev.en, tgt: data/dev.es}}
  test: {{src: data/test.en, tgt: data/test.es}}
  tokenizer: {{vocab_size: {vocab}, model: "{tokenizer}"}}
  max_length: 100
train: {{batch_tokens: 1000, steps: {steps}, checkpoint_every: 5, keep_checkpoints: 3,
        lr: {{schedule: noam, warmup: 10}}}}
eval: {{every: 10, beam: 2, bleu_during_training: true}}
log: {{every: 1}}
cluster: {{ranks: 1}}
"""


def make_workdir(path, vocab=500, steps=20, tokenizer=""):
    """A directory holding a copy of the fixture under data/ and the experiment file tiny.yaml."""
    (path / "data").mkdir(parents=True)
    for split in ("train", "dev", "test"):
        for side in ("en", "es"):
            shutil.copy(FIXTURE / f"{split}.{side}", path / "data" / f"{split}.{side}")
    (path / "tiny.yaml").write_text(TINY.format(base=ROOT / "experiments" / "small" / "bible.yaml",
                                                vocab=vocab, steps=steps, tokenizer=tokenizer))
    return path


def attnlab_in(binary, cwd, *args, check=True):
    """Runs attnlab with `cwd` as the current directory (data paths are relative to it)."""
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return run_attnlab(binary, *args, check=check)
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def trained(attnlab, tmp_path_factory):
    """One tiny run on the fixture, shared by the tests that only read it."""
    work = make_workdir(tmp_path_factory.mktemp("bible"))
    result = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run")
    (work / "train.stderr").write_text(result.stderr)
    return work


def test_training_logs_dev_bleu_and_the_tokenizer(trained):
    with h5py.File(trained / "run" / "run.h5", "r") as f:
        assert f.attrs["status"] == "completed"
        assert list(f["eval"]["step"][...]) == [10, 20]
        bleu = f["eval"]["bleu"][...]
        assert all(0.0 <= b <= 100.0 for b in bleu)
        summary = f["summary"].attrs
        # Recorded absolute: relative paths are taken from the directory train was started in.
        assert summary["tokenizer_path"] == str(trained / "data" / "sentencepiece.bpe.500.model")
        model = trained / "data" / "sentencepiece.bpe.500.model"
        assert summary["tokenizer_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
        lines = sum(1 for _ in open(FIXTURE / "train.en", encoding="utf-8"))
        assert summary["train_pairs"] + summary["train_pairs_skipped"] == lines
        assert summary["final_dev_bleu"] == bleu[-1]
        assert summary["matmul_engine"].startswith("fp32 products: OpenBLAS kernel ")
    # Dev BLEU is printed with every evaluation that computes it.
    printed = [line for line in (trained / "train.stderr").read_text().splitlines()
               if line.startswith("eval step ")]
    assert [f"BLEU {b:.2f}" in line for line, b in zip(printed, bleu)] == [True] * len(bleu)


def test_eval_writes_bleu_ppl_and_hypotheses(attnlab, trained):
    result = attnlab_in(attnlab, trained, "eval", "run", "--split", "test", "--average", "2")
    assert "BLEU = " in result.stdout and "signature: nrefs:1|case:mixed" in result.stdout
    hypotheses = trained / "run" / "hyp.test.txt"
    references = FIXTURE / "test.es"
    assert len(hypotheses.read_text(encoding="utf-8").splitlines()) == 85
    # The stored score is the one `attnlab bleu` gives for the written hypotheses.
    scored = json.loads(attnlab_in(attnlab, trained, "bleu", references, hypotheses,
                                   "--json").stdout)
    with h5py.File(trained / "run" / "run.h5", "r") as f:
        group = f["eval_test"].attrs
        assert group["bleu"] == pytest.approx(scored["score"], abs=1e-4)
        assert group["bleu_signature"] == scored["signature"]
        assert group["ppl"] > 1.0
        assert group["sentences"] == 85
        assert group["average_last"] == 2
        assert group["step"] == 20
        assert group["checkpoints"].endswith("ckpt/step_15.h5,run/ckpt/step_20.h5")
        assert f.attrs["status"] == "completed", "eval leaves the run's status alone"


def test_decode_splits_decode_a_completed_run_once_as_eval_does(attnlab, tmp_path):
    work = make_workdir(tmp_path, steps=10)
    decode = ["--set", "eval.decode_splits=[dev, test]", "--set", "eval.every=5"]
    first = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", *decode)
    assert first.stdout.count("BLEU = ") == 2, first.stdout
    run = work / "run"
    with h5py.File(run / "run.h5", "r") as f:
        stored = {split: dict(f[f"eval_{split}"].attrs) for split in ("dev", "test")}
        assert f.attrs["status"] == "completed"
    for split in ("dev", "test"):
        lines = len((FIXTURE / f"{split}.en").read_text(encoding="utf-8").splitlines())
        assert stored[split]["sentences"] == lines
        assert stored[split]["step"] == 10 and stored[split]["beam"] == 2
        assert len((run / f"hyp.{split}.txt").read_text(encoding="utf-8").splitlines()) == lines
    # `attnlab eval` of the same parameters writes the same scores.
    attnlab_in(attnlab, work, "eval", "run", "--split", "test", "--group", "again")
    with h5py.File(run / "run.h5", "r") as f:
        assert f["again"].attrs["bleu"] == stored["test"]["bleu"]
        assert f["again"].attrs["ppl"] == stored["test"]["ppl"]
    # Trained again: nothing to train and nothing to decode; with a split lost (a kill while it
    # decoded), that split alone is decoded again.
    again = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", *decode)
    assert "already completed" in again.stdout and "BLEU = " not in again.stdout
    with h5py.File(run / "run.h5", "a") as f:
        del f["eval_test"]
    again = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", *decode)
    assert again.stdout.count("BLEU = ") == 1 and "run test (step 10" in again.stdout
    # The run's report carries the test decoding's BLEU and PPL in its table.
    attnlab_in(attnlab, work, "report", "run")
    table = (run / "report" / "table.csv").read_text().splitlines()
    header, values = table[0].split(","), table[1].split(",")
    row = dict(zip(header, values))
    with h5py.File(run / "run.h5", "r") as f:
        assert float(row["test_bleu_mean"]) == pytest.approx(f["eval_test"].attrs["bleu"])
        assert float(row["test_ppl_mean"]) == pytest.approx(f["eval_test"].attrs["ppl"])
    assert "test BLEU" in (run / "report" / "report.md").read_text()
    bad = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "other",
                     "--set", "eval.decode_splits=[valid]", check=False)
    assert bad.returncode == 2 and "eval.decode_splits" in bad.stderr and "'valid'" in bad.stderr


def test_translate_round_trip_matches_eval_and_keeps_lines(attnlab, trained):
    attnlab_in(attnlab, trained, "eval", "run", "--split", "test", "--average", "0",
               "--group", "eval_test_newest")
    hypotheses = (trained / "run" / "hyp.eval_test_newest.txt").read_text(encoding="utf-8")
    source = (FIXTURE / "test.en").read_text(encoding="utf-8")
    translated = subprocess.run([str(attnlab), "translate", "run", "--average", "0"], cwd=trained,
                                input=source, capture_output=True, text=True, check=True)
    # Padding is masked exactly, so batching differently gives the same translations.
    assert translated.stdout == hypotheses
    lines = source.splitlines()
    mixed = subprocess.run([str(attnlab), "translate", "run", "--average", "0"], cwd=trained,
                           input=f"{lines[3]}\n\n{lines[0]}\n", capture_output=True, text=True,
                           check=True)
    expected = hypotheses.splitlines()
    assert mixed.stdout.splitlines() == [expected[3], "", expected[0]]


def test_misaligned_dev_files_fail_before_a_run_file_exists(attnlab, tmp_path):
    work = make_workdir(tmp_path / "w")
    (work / "data" / "dev.es").write_text("uno\ndos\n", encoding="utf-8")
    result = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", check=False)
    assert result.returncode == 1
    assert f"{work}/data/dev.en has 36 lines but {work}/data/dev.es has 2" in result.stderr
    assert not (work / "run" / "run.h5").exists()


def test_invalid_utf8_and_missing_files_are_named_with_their_line(attnlab, tmp_path):
    work = make_workdir(tmp_path / "w")
    text = (work / "data" / "train.es").read_bytes().split(b"\n")
    text[6] = b"caf\xe9"
    (work / "data" / "train.es").write_bytes(b"\n".join(text))
    result = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", check=False)
    assert result.returncode == 1
    assert "data/train.es:7: invalid UTF-8 at byte 4" in result.stderr
    assert not (work / "data" / "sentencepiece.bpe.500.model").exists()
    (work / "data" / "train.es").unlink()
    result = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", check=False)
    assert result.returncode == 2
    assert f"data.train.tgt: {work}/data/train.es does not exist on host" in result.stderr


def test_vocabulary_mismatches_are_named_and_write_nothing(attnlab, trained, tmp_path):
    # A 400-piece tokenizer made by a 1-step run elsewhere.
    other = make_workdir(tmp_path / "other", vocab=400, steps=1)
    attnlab_in(attnlab, other, "train", "-c", "tiny.yaml", "--out", "run")
    small_tokenizer = other / "data" / "sentencepiece.bpe.400.model"

    run = tmp_path / "copy"
    shutil.copytree(trained, run)
    (run / "run" / "hyp.test.txt").unlink()
    # The copy's recorded config names the original's files (absolute): point it at its own
    # (a config.yaml in the run directory wins over the one run.h5 records).
    with h5py.File(run / "run" / "run.h5", "r") as f:
        recorded = f.attrs["config_yaml"]
    recorded = recorded.decode() if isinstance(recorded, bytes) else recorded
    (run / "run" / "config.yaml").write_text(recorded.replace(str(trained), str(run)))
    log_digest = hashlib.sha256((run / "run" / "run.h5").read_bytes()).hexdigest()
    # The run's tokenizer file replaced: the config's vocabulary (500) no longer fits.
    shutil.copy(small_tokenizer, run / "data" / "sentencepiece.bpe.500.model")
    result = attnlab_in(attnlab, run, "eval", "run", "--split", "test", check=False)
    assert result.returncode == 1
    assert "sentencepiece.bpe.500.model has 400 pieces but model.vocab_size is 500" in result.stderr
    assert not (run / "run" / "hyp.test.txt").exists()

    # A config that agrees with the 400-piece tokenizer, but checkpoints trained with 500.
    config = (run / "tiny.yaml").read_text().replace("vocab_size: 500", "vocab_size: 400")
    config = config.replace('model: ""', f'model: "{small_tokenizer}"')
    config = config.replace("src: data/", f"src: {run}/data/").replace("tgt: data/",
                                                                       f"tgt: {run}/data/")
    (run / "run" / "config.yaml").write_text(config)
    result = attnlab_in(attnlab, run, "eval", "run", "--split", "test", check=False)
    assert result.returncode == 1
    assert "vocabulary mismatch: checkpoint run/ckpt/step_20.h5 was trained with 500" \
        in result.stderr
    assert "has 400" in result.stderr
    assert not (run / "run" / "hyp.test.txt").exists()
    assert hashlib.sha256((run / "run" / "run.h5").read_bytes()).hexdigest() == log_digest


def test_eval_refuses_what_is_not_a_corpus_run(attnlab, tmp_path):
    result = run_attnlab(attnlab, "eval", tmp_path, check=False)
    assert result.returncode == 1
    assert "is not a run directory" in result.stderr
    run = tmp_path / "reverse"
    run_attnlab(attnlab, "train", "-c", ROOT / "experiments" / "tasks" / "reverse.yaml",
                "--set", "train.steps=2", "--set", "model.d_model=16", "--set", "model.d_ff=16",
                "--set", "model.encoder_layers=1", "--set", "model.decoder_layers=1",
                "--set", "data.synthetic.train_size=100", "--set", "data.synthetic.dev_size=10",
                "--out", run)
    result = run_attnlab(attnlab, "eval", run, check=False)
    assert result.returncode == 1
    assert "translation needs a corpus run" in result.stderr


PROBES = ["In the beginning God created the heavens and the earth.", "Jesus wept."]


def test_attention_probes_are_the_configured_sentences_with_the_models_translation(attnlab,
                                                                                    trained):
    """log.attention_probes: each sentence's maps, labelled by its pieces (checked against the
    sentencepiece command-line encoder), with the model's greedy output as the target."""
    work = trained
    probes = "log.attention_probes=[" + ", ".join(PROBES) + "]"
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "probed", "--set",
               "train.steps=3", "--set", "eval.every=0", "--set", probes)
    model = work / "data" / "sentencepiece.bpe.500.model"
    with h5py.File(work / "probed" / "run.h5", "r") as f:
        assert sorted(f["attention"]) == ["probe_0", "probe_1"]
        heads = f["config"].attrs["model.heads"]
        for index, text in enumerate(PROBES):
            pieces = subprocess.run(["spm_encode", f"--model={model}", "--output_format=piece"],
                                    input=text + "\n", capture_output=True, text=True,
                                    check=True).stdout.split()
            group = f["attention"][f"probe_{index}"]
            source = [str(t, "utf-8") if isinstance(t, bytes) else str(t)
                      for t in group.attrs["source_tokens"]]
            target = [str(t, "utf-8") if isinstance(t, bytes) else str(t)
                      for t in group.attrs["target_tokens"]]
            assert source == pieces + ["</s>"]
            assert target[0] == "<s>" and "</s>" not in target and "<pad>" not in target
            s, t = len(source), len(target)
            assert group["encoder_self"]["layer_0"].shape == (heads, s, s)
            assert group["decoder_self"]["layer_0"].shape == (heads, t, t)
            cross = group["decoder_cross"]["layer_0"][...]
            assert cross.shape == (heads, t, s)
            assert abs(cross.sum(axis=-1) - 1.0).max() < 1e-5  # softmax rows


def test_attention_probes_need_a_text_corpus(attnlab, tmp_path):
    result = run_attnlab(attnlab, "train", "-c", ROOT / "experiments" / "tasks" / "reverse.yaml",
                         "--out", tmp_path / "run", "--set", "log.attention_probes=[a b c]",
                         check=False)
    assert result.returncode == 2
    assert "log.attention_probes" in result.stderr and "data.task corpus" in result.stderr
    assert not (tmp_path / "run").exists()


def test_final_bleu_and_the_best_checkpoint_on_a_corpus_run(attnlab, tmp_path):
    """eval.final_bleu scores dev BLEU once, on the final parameters (here the best checkpoint's),
    without BLEU at the intermediate evaluations; `attnlab eval` then uses ckpt/best.h5 by
    default (eval.checkpoint best), and --checkpoint newest the newest step."""
    work = make_workdir(tmp_path / "w", steps=30)
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run",
               "--set", "eval.bleu_during_training=false", "--set", "eval.final_bleu=true",
               "--set", "eval.checkpoint=best")
    with h5py.File(work / "run" / "run.h5", "r") as f:
        assert "bleu" not in f["eval"], "no BLEU at the intermediate evaluations"
        summary = f["summary"].attrs
        assert 0.0 <= summary["final_dev_bleu"] <= 100.0
        best_step = int(summary["best_step"])
        losses = dict(zip(f["eval"]["step"][...], f["eval"]["loss"][...]))
        assert best_step == min(losses, key=losses.get)
        assert summary["final_dev_loss"] == pytest.approx(losses[best_step], rel=1e-9)
    best = attnlab_in(attnlab, work, "eval", "run", "--split", "dev", "--group", "eval_best")
    newest = attnlab_in(attnlab, work, "eval", "run", "--split", "dev", "--checkpoint", "newest",
                        "--group", "eval_newest")
    assert "best checkpoint" in best.stdout and "newest checkpoint" in newest.stdout
    with h5py.File(work / "run" / "run.h5", "r") as f:
        assert f["eval_best"].attrs["checkpoints"].endswith("ckpt/best.h5")
        assert f["eval_newest"].attrs["step"] == 30
        # Greedy/beam decoding of the best parameters gives the BLEU the summary recorded
        # (the training evaluation decodes the same dev set with the same beam).
        assert f["eval_best"].attrs["bleu"] == pytest.approx(f["summary"].attrs["final_dev_bleu"],
                                                            abs=1e-6)
    conflict = attnlab_in(attnlab, work, "eval", "run", "--checkpoint", "best", "--average", "2",
                          check=False)
    assert conflict.returncode == 2 and "--average" in conflict.stderr


def test_eval_says_how_many_sentences_it_cut_to_max_length(attnlab, tmp_path):
    work = make_workdir(tmp_path / "w", steps=2)
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run",
               "--set", "data.max_length=40", "--set", "eval.every=0")
    result = attnlab_in(attnlab, work, "eval", "run", "--split", "test", "--beam", "1")
    with h5py.File(work / "run" / "run.h5", "r") as f:
        cut, sentences = f["eval_test"].attrs["truncated"], f["eval_test"].attrs["sentences"]
    assert 0 < cut < sentences
    assert (f"attnlab eval: {cut} of {sentences} test sentences are longer than the run's "
            "data.max_length (40 pieces with eos)") in result.stderr


def test_eval_says_which_checkpoint_it_used_when_the_newest_is_damaged(attnlab, tmp_path):
    """A newest checkpoint cut short (a copy interrupted by a full disk) is passed over for the
    next one, and eval says so on stderr, naming both and the reason; the result records it."""
    work = make_workdir(tmp_path / "w", steps=4)
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run", "--set",
               "train.checkpoint_every=2", "--set", "train.keep_checkpoints=3", "--set",
               "eval.every=0")
    newest = work / "run" / "ckpt" / "step_4.h5"
    newest.write_bytes(newest.read_bytes()[:4096])
    result = attnlab_in(attnlab, work, "eval", "run", "--split", "dev", "--beam", "1",
                        "--checkpoint", "newest")
    assert "attnlab eval: using run/ckpt/step_2.h5 (step 2), not the newest checkpoint" in \
        result.stderr, result.stderr
    assert "skipped run/ckpt/step_4.h5" in result.stderr and "truncated" in result.stderr
    with h5py.File(work / "run" / "run.h5", "r") as f:
        assert f["eval_dev"].attrs["step"] == 2
        assert f["eval_dev"].attrs["checkpoints"] == "run/ckpt/step_2.h5"


def test_training_pairs_with_an_empty_side_are_skipped_and_counted(attnlab, tmp_path):
    work = make_workdir(tmp_path / "w", steps=2)
    lines = (work / "data" / "train.es").read_text(encoding="utf-8").split("\n")
    lines[4] = "   "
    lines[9] = ""
    (work / "data" / "train.es").write_text("\n".join(lines), encoding="utf-8")
    result = attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--out", "run",
                        "--set", "eval.every=0")
    assert "and 2 with an empty side skipped" in result.stderr
    with h5py.File(work / "run" / "run.h5", "r") as f:
        summary = f["summary"].attrs
        assert summary["train_pairs_empty"] == 2
        total = sum(1 for _ in open(FIXTURE / "train.en", encoding="utf-8"))
        assert summary["train_pairs"] + summary["train_pairs_skipped"] + 2 == total


def test_bleu_refuses_what_is_not_text_and_takes_several_references(attnlab, tmp_path):
    ref, hyp, ref2 = tmp_path / "ref.txt", tmp_path / "hyp.txt", tmp_path / "ref2.txt"
    ref.write_text("the cat sat on the mat\na dog barked at night\n")
    hyp.write_text("the cat sat on a mat\na dog barked at night\n")
    ref2.write_text("the cat sat on a mat\na dog barks at night\n")
    for args, message in [((tmp_path, tmp_path), "is not a regular file"),
                          (("/dev/zero", "/dev/zero"), "is not a regular file")]:
        result = run_attnlab(attnlab, "bleu", *args, check=False)
        assert result.returncode == 1 and message in result.stderr, result.stderr
    (tmp_path / "empty.txt").write_text("")
    empty = run_attnlab(attnlab, "bleu", ref, tmp_path / "empty.txt", check=False)
    assert empty.returncode == 1 and "empty.txt is empty" in empty.stderr
    (tmp_path / "bad.txt").write_bytes(b"the cat sat on the mat\na d\xe9g\n")
    bad = run_attnlab(attnlab, "bleu", ref, tmp_path / "bad.txt", check=False)
    assert bad.returncode == 1 and "bad.txt:2: invalid UTF-8 at byte 4" in bad.stderr
    one = json.loads(run_attnlab(attnlab, "bleu", ref, hyp, "--json").stdout)
    two = json.loads(run_attnlab(attnlab, "bleu", ref, hyp, "-r", ref2, "--json").stdout)
    assert two["signature"].startswith("nrefs:2|") and two["score"] > one["score"]
    assert two["score"] == pytest.approx(100.0), "every hypothesis matches one of its references"
    chars = json.loads(run_attnlab(attnlab, "bleu", ref, hyp, "--tokenize", "char",
                                   "--json").stdout)
    assert "|tok:char|" in chars["signature"]
    assert chars["hyp_len"] == len("thecatsatonamat") + len("adogbarkedatnight")
    unknown = run_attnlab(attnlab, "bleu", ref, hyp, "--tokenize", "ja-mecab", check=False)
    assert unknown.returncode == 2 and "13a, intl, char or none" in unknown.stderr


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs Open MPI's mpiexec")
def test_dev_bleu_on_two_ranks_equals_one_rank(attnlab, tmp_path):
    """Each rank decodes its share of the dev batches; corpus BLEU comes from the n-gram counts
    summed over ranks, so it equals the one-rank score (a rank's counts left out would not)."""
    work = make_workdir(tmp_path)
    attnlab_in(attnlab, work, "train", "-c", "tiny.yaml", "--set", "model.dropout=0.0",
               "--out", "one")
    result = subprocess.run(["mpiexec", "-n", "2", str(attnlab), "train", "-c", "tiny.yaml",
                             "--set", "model.dropout=0.0", "--set", "cluster.ranks=2",
                             "--out", "two"], cwd=work, capture_output=True, text=True,
                            timeout=300, env={**os.environ, **MPI_TEST_ENV})
    assert result.returncode == 0, result.stderr
    scores = []
    for run in ("one", "two"):
        with h5py.File(work / run / "run.h5", "r") as f:
            scores.append(list(f["eval"]["bleu"][...]))
    assert len(scores[0]) == 2 and scores[0] == scores[1]
    assert scores[0][-1] > 0, "a zero BLEU would not tell a sum from a single rank's counts"


def test_eval_and_translate_take_the_runs_precision_or_precision(attnlab, trained):
    """fp32 unless --precision says bf16 (the run trained in fp32); bf16 scores the same model
    within rounding but not bit for bit; a precision that does not exist is a usage error."""
    attnlab_in(attnlab, trained, "eval", "run", "--split", "test", "--group", "eval_test_fp32")
    with h5py.File(trained / "run" / "run.h5", "r") as f:
        fp32 = dict(f["eval_test_fp32"].attrs)
    assert fp32["precision"] == "fp32"
    unknown = attnlab_in(attnlab, trained, "eval", "run", "--precision", "fp16", check=False)
    assert unknown.returncode == 2
    assert "--precision must be one of fp32 | bf16, got 'fp16'" in unknown.stderr
    newest_or_best = attnlab_in(attnlab, trained, "eval", "run", "--checkpoint", "last",
                                check=False)
    assert newest_or_best.returncode == 2
    assert "--checkpoint must be one of newest | best, got 'last'" in newest_or_best.stderr
    if not NATIVE_BF16:
        pytest.skip(NO_BF16)
    attnlab_in(attnlab, trained, "eval", "run", "--split", "test", "--group", "eval_test_bf16",
               "--precision", "bf16")
    with h5py.File(trained / "run" / "run.h5", "r") as f:
        bf16 = dict(f["eval_test_bf16"].attrs)
    assert bf16["precision"] == "bf16"
    assert bf16["nll"] != fp32["nll"]
    assert bf16["nll"] == pytest.approx(fp32["nll"], rel=0.02)
    translated = subprocess.run([str(attnlab), "translate", "run", "--precision", "bf16"],
                                cwd=trained, input="In the beginning\n", capture_output=True,
                                text=True, timeout=120)
    assert translated.returncode == 0, translated.stderr
    assert len(translated.stdout.splitlines()) == 1


@pytest.mark.parametrize("flag,value,key", [("--alpha", "-1", "eval.length_penalty"),
                                            ("--beam", "0", "eval.beam"),
                                            ("--max-len-offset", "-2", "eval.max_len_offset"),
                                            ("--average", "-1", "eval.average_last")])
def test_decoding_flags_follow_the_rule_of_their_config_key(attnlab, trained, flag, value, key):
    """translate and eval refuse a flag's value exactly as the config refuses it for the key the
    flag overrides: one rule, with the same words."""
    config = attnlab_in(attnlab, trained, "config", "--set", f"{key}={value}", check=False)
    assert config.returncode == 2
    rule = config.stderr.strip().split(f"{key}: ")[-1]
    assert rule.startswith("expected ") and rule.endswith(f"got {value}"), config.stderr
    for command in ("translate", "eval"):
        result = subprocess.run([str(attnlab), command, "run", flag, value], cwd=trained,
                                input="In the beginning\n", capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 2, result.stderr
        assert result.stderr == f"attnlab {command}: {flag} sets {key}, which {rule}\n"
        assert result.stdout == ""
