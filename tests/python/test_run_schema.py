"""The HDF5 schema of docs/hdf5-schema.md, checked from h5py on a run directory.

By default the run directory comes from tests/io/sample_run.cpp, built in $ATTNLAB_BUILD_DIR
(default: build/). Set ATTNLAB_RUN_FILE=runs/<sweep>/<run_id>/run.h5 to check a real run's file
instead; its ckpt/ directory, if any, is checked too.
"""

import hashlib
import os
import struct
import pathlib
import re
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from analysis.runfile import RunStatus

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA_DOC = ROOT / "docs" / "hdf5-schema.md"

ROOT_ATTRIBUTES = {
    "schema": str, "schema_version": np.integer, "attnlab_version": str, "git_commit": str,
    "git_diff_sha256": str,
    "created": str, "host": str, "world_size": np.integer, "threads": np.integer,
    "seed": np.integer, "run_id": str, "sweep_id": str, "status": str, "config_yaml": str,
    "command_line": str,
}
TRAIN_COLUMNS = {"step", "tokens", "loss", "nll", "lr", "grad_norm", "tokens_per_sec", "wall_time"}
EVAL_COLUMNS = {"step", "loss", "nll", "ppl"}
STACKS = {"encoder_self", "decoder_self", "decoder_cross"}


def build_dir():
    return pathlib.Path(os.environ.get("ATTNLAB_BUILD_DIR", ROOT / "build"))


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    given = os.environ.get("ATTNLAB_RUN_FILE")
    if given:
        return pathlib.Path(given)
    writer = build_dir() / "tests" / "io" / "attnlab_io_sample_run"
    if not writer.exists():
        pytest.skip(f"{writer} is not built (cmake --build {build_dir()} first)")
    run_dir = tmp_path_factory.mktemp("run")
    subprocess.run([str(writer), str(run_dir)], check=True)
    return run_dir / "run.h5"


@pytest.fixture(scope="module")
def run(run_file):
    with h5py.File(run_file, "r") as f:
        yield f


def complete_rows(group):
    return min(len(group[c]) for c in group.attrs["columns"])


def test_root_attributes_have_their_types(run):
    for name, kind in ROOT_ATTRIBUTES.items():
        assert name in run.attrs, f"root attribute {name} missing"
        assert isinstance(run.attrs[name], kind), f"{name} is {type(run.attrs[name])}"
    # The changes' hash is there exactly for a build with uncommitted changes.
    dirty = run.attrs["git_commit"].endswith("-dirty")
    assert bool(re.fullmatch(r"[0-9a-f]{64}", run.attrs["git_diff_sha256"])) == dirty
    assert dirty or run.attrs["git_diff_sha256"] == ""
    assert run.attrs["schema"] == "attnlab-run"
    assert run.attrs["schema_version"] == 1
    assert run.attrs["status"] in set(RunStatus)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run.attrs["created"])
    assert run.attrs["world_size"] >= 1 and run.attrs["threads"] >= 1
    assert run.attrs["config_yaml"].strip() and run.attrs["run_id"]


def test_the_analysis_names_the_statuses_attnlab_writes(run_file, attnlab, tmp_path):
    """analysis.runfile.RunStatus is core/io/run_state.cpp's list of statuses, in its order:
    attnlab, reading a run file whose status it does not know, names the ones it knows."""
    unknown = tmp_path / "run.h5"
    shutil.copy(run_file, unknown)
    with h5py.File(unknown, "a") as file:
        file.attrs["status"] = "no such status"
    result = subprocess.run([str(attnlab), "inspect", str(unknown)], capture_output=True,
                            text=True, timeout=60)
    known = re.search(r"status 'no such status' must be one of (.+)$", result.stderr, re.M)
    assert result.returncode != 0 and known, result.stderr
    assert known.group(1).split(" | ") == [status.value for status in RunStatus]


def test_sections_exist(run):
    for section in ("config", "train", "eval", "diagnostics", "summary", "attention"):
        assert isinstance(run.get(section), h5py.Group), f"/{section} missing"


def test_config_attributes_are_numbers_or_text(run):
    config = dict(run["config"].attrs)
    assert config, "/config is empty"
    for key, value in config.items():
        assert re.fullmatch(r"[a-z_][a-z0-9_.]*", key), key
        assert isinstance(value, (np.integer, np.floating, str)), f"{key}: {type(value)}"
    # A number written in the YAML is stored as a number (model.heads is in every config).
    assert isinstance(config["model.heads"], np.integer)


@pytest.mark.parametrize("section, required", [("train", TRAIN_COLUMNS), ("eval", EVAL_COLUMNS)])
def test_series_are_equal_length_columns_with_rising_steps(run, section, required):
    group = run[section]
    columns = list(group.attrs["columns"])
    assert set(columns) == set(group.keys()), "the columns attribute must list every dataset"
    assert required <= set(columns), f"/{section} lacks {required - set(columns)}"
    lengths = {c: len(group[c]) for c in columns}
    finished = run.attrs["status"] != "running"
    assert max(lengths.values()) - min(lengths.values()) <= (0 if finished else 1), lengths
    rows = complete_rows(group)
    assert rows > 0, f"/{section} has no rows"
    for column in columns:
        dataset = group[column]
        assert dataset.ndim == 1 and dataset.maxshape == (None,) and dataset.chunks is not None
        expected = np.int64 if column == "step" else np.float64
        assert dataset.dtype == expected, f"{section}/{column} is {dataset.dtype}"
    steps = group["step"][:rows]
    assert steps[0] >= 0 and np.all(np.diff(steps) > 0), "steps must rise strictly"


def test_train_values_are_plausible(run):
    train = run["train"]
    rows = complete_rows(train)
    assert np.all(np.isfinite(train["loss"][:rows]))
    assert np.all(train["lr"][:rows] >= 0)
    assert np.all(np.diff(train["tokens"][:rows]) > 0), "tokens trained on must grow"
    evaluation = run["eval"]
    rows = complete_rows(evaluation)
    np.testing.assert_allclose(evaluation["ppl"][:rows], np.exp(evaluation["nll"][:rows]),
                               rtol=1e-6)


def test_diagnostics_rows_match_steps_and_labels(run):
    for name, group in run["diagnostics"].items():
        assert list(group.attrs["columns"]) == ["step", "value"], name
        rows = complete_rows(group)
        steps, values = group["step"], group["value"]
        assert steps.dtype == np.int64 and values.dtype == np.float64
        assert values.ndim >= 2 and values.maxshape[0] is None
        assert np.all(np.diff(steps[:rows]) > 0)
        if "labels" in group.attrs:
            assert len(group.attrs["labels"]) == values.shape[1], name


def test_attention_maps_match_their_probe_and_rows_sum_to_one(run):
    for probe_name, probe in run["attention"].items():
        source = list(probe.attrs["source_tokens"])
        target = list(probe.attrs["target_tokens"])
        assert source and target and all(isinstance(t, str) for t in source + target)
        shapes = {"encoder_self": (len(source), len(source)),
                  "decoder_self": (len(target), len(target)),
                  "decoder_cross": (len(target), len(source))}
        assert set(probe.keys()) <= STACKS, f"{probe_name}: unknown stacks"
        for stack, layers in probe.items():
            for layer_name, dataset in layers.items():
                assert re.fullmatch(r"layer_\d+", layer_name)
                assert dataset.dtype == np.float32 and dataset.ndim == 3
                assert dataset.shape[1:] == shapes[stack], f"{stack}/{layer_name}"
                weights = dataset[()]
                assert np.all(weights >= 0)
                np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)


def test_summary_holds_numbers_and_text(run):
    for name, value in run["summary"].attrs.items():
        assert isinstance(value, (np.floating, str)), f"{name}: {type(value)}"
    if run.attrs["status"] == "completed":
        assert len(run["summary"].attrs) > 0


def metadata_sha256(checkpoint):
    """docs/hdf5-schema.md's digest of a checkpoint's metadata, computed from what h5py reads."""
    text = "".join(f"{key}={checkpoint.attrs[key]}\n" for key in
                   ("step", "architecture", "config_yaml", "attnlab_version", "git_commit"))
    for name, value in sorted(checkpoint["scalars"].attrs.items()):
        bits = struct.unpack("<Q", struct.pack("<d", float(value)))[0]
        text += f"scalars/{name}={bits}\n"
    for name, value in sorted(checkpoint["data_position"].attrs.items()):
        text += f"data_position/{name}={int(value)}\n"
    return hashlib.sha256(text.encode()).hexdigest()


def test_checkpoints_hold_params_and_moments_by_name(run_file):
    checkpoints = sorted((run_file.parent / "ckpt").glob("step_*.h5"))
    if os.environ.get("ATTNLAB_RUN_FILE") and not checkpoints:
        pytest.skip("the run has no checkpoints")
    assert checkpoints, "the sample run writes a checkpoint"
    for path in checkpoints:
        with h5py.File(path, "r") as f:
            assert f.attrs["schema"] == "attnlab-checkpoint"
            assert f.attrs["schema_version"] == 2
            assert f.attrs["step"] == int(path.stem.split("_")[1])
            assert f.attrs["metadata_sha256"] == metadata_sha256(f)
            assert f.attrs["architecture"] and isinstance(f.attrs["config_yaml"], str)
            assert isinstance(f.get("scalars"), h5py.Group)
            for value in f["data_position"].attrs.values():
                assert isinstance(value, np.integer)
            params = f["params"]
            assert len(params) > 0
            assert all("/" not in name for name in params)  # dotted names, not nested groups
            for group in ("adam_m", "adam_v"):
                assert set(f[group].keys()) == set(params.keys()), group
            for group in ("params", "adam_m", "adam_v"):
                for name, dataset in f[group].items():
                    assert dataset.dtype == np.float32, name
                    assert dataset.fletcher32, f"{group}/{name} has no checksum"
                    assert dataset.shape == params[name].shape


def test_the_documented_h5py_example_runs(run_file):
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    section = text.split("## Reading a run in h5py", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {"path": str(run_file)}
    exec(compile(example, str(SCHEMA_DOC), "exec"), scope)  # noqa: S102 - our own docs
    train, dev = scope["train"], scope["dev"]
    assert "step" in train.columns and len(train) > 0
    assert train["step"].is_monotonic_increasing and "ppl" in dev
    assert scope["cross"].shape == (scope["cross"].shape[0], len(scope["target"]),
                                    len(scope["source"]))


@pytest.mark.skipif(shutil.which("h5dump") is None, reason="h5dump is not installed")
def test_h5dump_reads_the_file(run_file):
    subprocess.run(["h5dump", "-H", str(run_file)], check=True, stdout=subprocess.DEVNULL)
