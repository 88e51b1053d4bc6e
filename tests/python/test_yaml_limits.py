"""Every YAML file attnlab reads (experiments, sweeps, cluster profiles, manifests) goes through
one reader with limits: hostile or broken files end in one clear error with exit 2, quickly,
instead of a crash, a hang or a silent first-wins."""

import time

import pytest

from conftest import ROOT, run_attnlab

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"
ALIAS_LOOP = "partition: &loop [a, *loop]\n"
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))


def sweep_file(tmp_path, section):
    path = tmp_path / "s.yaml"
    path.write_text(f"base: {TASK}\nname: s\nsweep:\n{section}")
    return path


def refused(attnlab, *args):
    started = time.monotonic()
    result = run_attnlab(attnlab, *args, check=False, timeout=60)
    assert time.monotonic() - started < 20, "a hostile file must be refused quickly"
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    return result.stderr


@pytest.mark.parametrize("text, expected", [(ALIAS_LOOP, "nested deeper than"),
                                            (LAUGHS, "once aliases are expanded")])
def test_alias_loops_and_alias_bombs_in_a_profile(attnlab, tmp_path, text, expected):
    profile = tmp_path / "profile.yaml"
    profile.write_text(text)
    sweep = sweep_file(tmp_path, "  seeds: [1]\n")
    error = refused(attnlab, "sweep", sweep, "--launcher", "slurm", "--profile", profile,
                    "--dry-run", "--out", tmp_path / "runs")
    assert str(profile) in error and expected in error


def test_an_alias_loop_in_a_manifest(attnlab, tmp_path):
    sweep_dir = tmp_path / "runs" / "s"
    sweep_dir.mkdir(parents=True)
    (sweep_dir / "manifest.yaml").write_text("sweep: s\nruns: &r [*r]\n")
    error = refused(attnlab, "status", sweep_dir)
    assert "manifest.yaml" in error and "nested deeper than" in error


# Ten keys with ten values each: 10^10 runs.
TEN_BY_TEN = "  grid: {" + ", ".join(
    f"{key}: [{', '.join(str(v) for v in values)}]" for key, values in [
        ("model.heads", range(1, 11)), ("model.d_ff", range(1, 11)),
        ("model.d_model", range(1, 11)), ("model.d_k", range(1, 11)),
        ("model.d_v", range(1, 11)), ("train.steps", range(1, 11)),
        ("train.batch_tokens", range(1, 11)), ("train.lr.warmup", range(1, 11)),
        ("model.dropout", [i / 10 for i in range(10)]),
        ("train.label_smoothing", [i / 10 for i in range(10)])]) + "}\n"


@pytest.mark.parametrize("section, expected", [
    ("  seeds: [1]\n  seeds: [2]\n", "key 'seeds' appears twice"),
    ("  grid: {model.norm: [post], model.norm: [pre]}\n", "key 'model.norm' appears twice"),
    ("  seeds: [1]\n---\nname: other\n", "a second YAML document"),
    (TEN_BY_TEN, "more than 100000 runs"),
])
def test_sweep_sections_are_strict_and_bounded(attnlab, tmp_path, section, expected):
    error = refused(attnlab, "sweep", sweep_file(tmp_path, section), "--dry-run",
                    "--out", tmp_path / "runs")
    assert expected in error


def test_base_chains_that_multiply_stop(attnlab, tmp_path):
    (tmp_path / "f21.yaml").write_text(f"base: {TASK}\n")
    for i in range(20, -1, -1):
        (tmp_path / f"f{i}.yaml").write_text(f"base: [f{i + 1}.yaml, f{i + 1}.yaml]\n")
    error = refused(attnlab, "config", "-c", tmp_path / "f0.yaml")
    assert "read more than 256 files" in error


def test_a_nul_byte_is_not_yaml(attnlab, tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"name: a\x00b\n")
    error = refused(attnlab, "config", "-c", path)
    assert "NUL byte" in error
