"""Reading one run file (runs/<sweep>/<run_id>/run.h5, schema "attnlab-run" version 1).

The writing side is core/io/run_log.h. A run may still be writing its file: it is opened without
HDF5's file lock, and a series is read up to its shortest column (its complete rows).
"""

import dataclasses
import enum
import faulthandler
import os
import re
import signal
import time

import h5py
import numpy as np
import pandas as pd

from analysis.errors import AnalysisError
from analysis.manifest import load_yaml

SCHEMA = "attnlab-run"
SCHEMA_VERSIONS = (1,)

# /summary final_checkpoint_kind (core/io/run_state.h): the parameters a final evaluation scored.
FINAL_CHECKPOINT_KINDS = ("newest", "best", "average")
# Run logs written before final_checkpoint_kind and final_checkpoint_step existed say it only in
# the prose final_checkpoint: "newest (step 800)", "best (step 600)", "best (step 800, the
# newest)", "average of 5 (steps 600, 700, 800)".
_OLD_FINAL_CHECKPOINT = re.compile(r"(best|newest) \(step (\d+)(?:, the newest)?\)")
STACKS = ("encoder_self", "decoder_self", "decoder_cross")


class RunStatus(enum.StrEnum):
    """The root attribute `status`, named as core/io/run_state.cpp's run_status_names() writes it
    (tests/python/test_run_schema.py checks that the two lists are the same). A member equals its
    name, so it compares with a frame's column: `runs["status"] == RunStatus.COMPLETED`."""
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    PREEMPTED = "preempted"


@dataclasses.dataclass
class Diagnostic:
    """/diagnostics/<metric>: `values` (rows, shape...) measured at `steps` (rows,)."""
    steps: np.ndarray
    values: np.ndarray
    labels: list  # names along the first value axis (e.g. "encoder.layers.0"), may be empty


@dataclasses.dataclass
class AttentionProbe:
    """/attention/<probe>: maps[stack][layer] is (H, rows, cols)."""
    source_tokens: list
    target_tokens: list
    maps: dict


@dataclasses.dataclass
class RunData:
    path: str
    attrs: dict       # root attributes (schema, run_id, seed, status, world_size, threads, ...)
    config: dict      # flattened config key -> value
    summary: dict     # /summary attributes
    train: pd.DataFrame
    eval: pd.DataFrame
    diagnostics: dict  # metric -> Diagnostic
    attention: dict    # probe -> AttentionProbe
    # `attnlab eval` results: group name ("eval_test", or --group's) -> its attributes (bleu,
    # ppl, step, beam, checkpoint, hypotheses, ...).
    decodings: dict = dataclasses.field(default_factory=dict)
    # Series groups a kill left half-defined: "/eval: datasets (...) without the attribute
    # 'columns' ..." (as attnlab's readers say it). Their rows are not in train/eval; a resume
    # drops them and records that in attrs["repairs"].
    damaged: list = dataclasses.field(default_factory=list)

    @property
    def status(self):
        return self.attrs.get("status", "unknown")

    @property
    def final_parameters(self):
        return final_parameters(self.summary, self.path)


def final_parameters(summary, where):
    """(kind, step) of the parameters a run's final evaluation scored, from its /summary: kind
    one of FINAL_CHECKPOINT_KINDS, step theirs (the newest averaged one; None for an average in a
    log older than final_checkpoint_step). None before the run completed."""
    kind = summary.get("final_checkpoint_kind")
    if kind is not None:
        if kind not in FINAL_CHECKPOINT_KINDS or "final_checkpoint_step" not in summary:
            raise AnalysisError(f"{where}: /summary final_checkpoint_kind {kind!r} is not one of "
                                f"{', '.join(FINAL_CHECKPOINT_KINDS)} with final_checkpoint_step")
        return kind, int(summary["final_checkpoint_step"])
    prose = summary.get("final_checkpoint")
    if prose is None:
        return None
    old = _OLD_FINAL_CHECKPOINT.fullmatch(str(prose))
    if old is not None:
        return old.group(1), int(old.group(2))
    if str(prose).startswith("average of "):
        return "average", None
    raise AnalysisError(f"{where}: /summary final_checkpoint {prose!r} names no parameters this "
                        f"analysis knows")


def _python_value(value):
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return _python_value(value[()])
        return [_python_value(item) for item in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _config_value(value):
    """A /config attribute: numbers stay numbers; text is YAML (quoted strings, lists, bools)."""
    value = _python_value(value)
    if isinstance(value, str) and value[:1] in ('"', "[", "{", "'") or value in ("true", "false"):
        try:
            return load_yaml(value, "/config")
        except AnalysisError:
            return value
    return value


def interrupted_definition(group):
    """The damage text of a series group with datasets but no `columns` attribute (a writer was
    killed inside the series' first append, before its row was flushed), or None."""
    if "columns" in group.attrs:
        return None
    names = sorted(name for name in group if isinstance(group[name], h5py.Dataset))
    if not names:
        return None
    rows = max(group[name].shape[0] if group[name].ndim else 0 for name in names)
    return (f"{group.name}: datasets ({', '.join(names)}) without the attribute 'columns' "
            f"(holding at most {rows} row{'' if rows == 1 else 's'}): its definition was "
            f"interrupted before its first row was flushed")


def _series(group, where, damaged):
    """A series group as a DataFrame of its complete rows, columns in their stored order. A
    half-defined group holds no complete row: it is empty here and its damage goes to `damaged`."""
    damage = interrupted_definition(group)
    if damage is not None:
        damaged.append(damage)
    columns = ([_python_value(c) for c in np.atleast_1d(group.attrs["columns"])]
               if "columns" in group.attrs else [])
    missing = [c for c in columns if c not in group]
    if missing:
        raise AnalysisError(f"{where}: columns {missing} are listed but not stored")
    if not columns:
        return pd.DataFrame({"step": pd.Series([], dtype="int64")})
    rows = min(group[c].shape[0] for c in columns)
    frame = pd.DataFrame({c: np.asarray(group[c][:rows]) for c in columns
                          if group[c].ndim == 1})
    if "step" in frame:
        frame["step"] = frame["step"].astype("int64")
    return frame


def _diagnostics(group, path):
    out = {}
    for metric in group:
        item = group[metric]
        if not isinstance(item, h5py.Group) or "step" not in item or "value" not in item:
            continue
        rows = min(item["step"].shape[0], item["value"].shape[0])
        labels = item.attrs.get("labels", item["value"].attrs.get("labels", []))
        out[metric] = Diagnostic(steps=np.asarray(item["step"][:rows], dtype=np.int64),
                                 values=np.asarray(item["value"][:rows], dtype=np.float64),
                                 labels=[_python_value(x) for x in np.atleast_1d(labels)]
                                 if len(np.atleast_1d(labels)) else [])
    return out


def _attention(group):
    probes = {}
    for probe in group:
        item = group[probe]
        if not isinstance(item, h5py.Group):
            continue
        maps = {}
        for stack in item:
            if not isinstance(item[stack], h5py.Group):
                continue
            layers = {}
            for name in item[stack]:
                if name.startswith("layer_"):
                    layers[int(name[len("layer_"):])] = np.asarray(item[stack][name][...],
                                                                 dtype=np.float64)
            maps[stack] = [layers[i] for i in sorted(layers)]
        probes[probe] = AttentionProbe(
            source_tokens=_python_value(item.attrs.get("source_tokens", [])) or [],
            target_tokens=_python_value(item.attrs.get("target_tokens", [])) or [],
            maps=maps)
    return probes


def check_schema(attrs, path):
    """Raises AnalysisError unless the root attributes are those of a run file this reads."""
    schema = attrs.get("schema")
    if schema != SCHEMA:
        raise AnalysisError(f"{path}: not an attnlab run file (root attribute 'schema' is "
                            f"{schema!r}, expected {SCHEMA!r})")
    version = attrs.get("schema_version")
    if version not in SCHEMA_VERSIONS:
        raise AnalysisError(f"{path}: unknown schema_version {version!r} (this analysis reads "
                            f"version {', '.join(map(str, SCHEMA_VERSIONS))})")


def pending_splits(run):
    """eval.decode_splits a completed run has not yet decoded at the step of its final parameters
    (best_step for eval.checkpoint best, else steps), as core/io/run_log.h's
    RunContents::pending_splits says: `attnlab train` decodes them after writing "completed", so
    such a run was stopped before it was done. [] for a run that is not completed."""
    if run.status != RunStatus.COMPLETED:
        return []
    final = run.summary.get("best_step" if run.config.get("eval.checkpoint") == "best"
                            else "steps")
    pending = []
    for split in run.config.get("eval.decode_splits") or []:
        step = run.decodings.get(f"eval_{split}", {}).get("step")
        if final is None or step is None or int(step) != int(final):
            pending.append(split)
    return pending


def read_run(path, with_attention=True):
    """Everything in one run file. AnalysisError for a file that is unreadable (truncated,
    not HDF5, or so damaged that reading it crashes HDF5), not an attnlab run, or of a schema
    version this analysis does not know."""
    path = str(path)
    _read_in_child(path, with_attention)
    return _read_run(path, with_attention)


def read_labeled_runs(specs):
    """[(label, RunData)] of command-line LABEL=RUN_DIR pairs (the label may hold '=' and
    spaces; the run directory holds run.h5)."""
    runs = []
    for spec in specs:
        label, separator, path = spec.rpartition("=")
        if not separator or not label:
            raise AnalysisError(f"{spec}: expected LABEL=RUN_DIR")
        runs.append((label, read_run(f"{path.rstrip('/')}/run.h5", with_attention=False)))
    return runs


def read_checkpoint_params(path, names):
    """{name: float64 array} of the parameters `names` of a checkpoint (ckpt/step_<n>.h5,
    core/io/checkpoint.h), or None when it holds none of them (the first name is missing: another
    architecture). AnalysisError for a file that is not a readable checkpoint."""
    try:
        with h5py.File(path, "r", locking=False) as file:
            if "params" not in file:
                raise AnalysisError(f"{path}: not an attnlab checkpoint (no /params group)")
            params = file["params"]
            if names[0] not in params:
                return None
            return {name: np.asarray(params[name][()], dtype=np.float64) for name in names}
    except (OSError, KeyError, ValueError) as error:
        raise AnalysisError(f"{path}: unreadable checkpoint: {error}") from None


# A read of an intact run file takes milliseconds; one that runs longer is looping in HDF5.
READ_TIMEOUT_SECONDS = 30.0


def _read_in_child(path, with_attention, timeout=READ_TIMEOUT_SECONDS):
    """HDF5 parses some internal structures of a file (heaps, B-trees) without checksums, so one
    flipped bit can crash or hang it, and with it this process. The first read of each file
    happens in a forked child: a crash or a hang there becomes an AnalysisError naming the file
    (as attnlab's own readers do, core/util/isolated.h), and the caller goes on with other runs."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: read, report, exit without running the parent's cleanup
        os.close(read_end)
        faulthandler.disable()
        for crash in (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
            signal.signal(crash, signal.SIG_DFL)
        code = 0
        try:
            _read_run(path, with_attention)
        except AnalysisError as error:
            os.write(write_end, str(error).encode("utf-8", "replace")[:60000])
            code = 3
        except BaseException:  # noqa: BLE001 - any other failure is reported by its exit code
            code = 4
        os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + timeout
    pause = 0.0002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            raise AnalysisError(f"{path}: reading it did not finish in {timeout:.0f} s (a damaged "
                                f"file that makes HDF5 loop?); the reader was stopped")
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode("utf-8", "replace")
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        raise AnalysisError(f"{path}: reading it crashed HDF5 (signal {number}, "
                            f"{signal.Signals(number).name}): the file is damaged")
    code = os.WEXITSTATUS(status)
    if code == 3:
        raise AnalysisError(message)
    if code != 0:
        raise AnalysisError(f"{path}: unreadable run file (reading it failed with exit code "
                            f"{code})")


def _read_run(path, with_attention):
    try:
        file = h5py.File(path, "r", locking=False)
    except (OSError, ValueError) as error:
        raise AnalysisError(f"{path}: cannot be opened as HDF5 (truncated or corrupt file?): "
                            f"{error}") from None
    try:
        with file:
            attrs = {k: _python_value(v) for k, v in file.attrs.items()}
            check_schema(attrs, path)
            for group in ("config", "train", "eval", "summary"):
                if group not in file:
                    raise AnalysisError(f"{path}: missing the /{group} group of schema version "
                                        f"{attrs['schema_version']}")
            config = {k: _config_value(v) for k, v in file["config"].attrs.items()}
            summary = {k: _python_value(v) for k, v in file["summary"].attrs.items()}
            damaged = []
            train = _series(file["train"], f"{path}:/train", damaged)
            evaluation = _series(file["eval"], f"{path}:/eval", damaged)
            for metric in file.get("diagnostics", {}).values():
                damage = (interrupted_definition(metric) if isinstance(metric, h5py.Group)
                          else None)
                if damage is not None:
                    damaged.append(damage)
            diagnostics = _diagnostics(file["diagnostics"], path) if "diagnostics" in file else {}
            attention = (_attention(file["attention"])
                         if with_attention and "attention" in file else {})
            decodings = {name: {k: _python_value(v) for k, v in group.attrs.items()}
                         for name, group in file.items()
                         if isinstance(group, h5py.Group) and "bleu_signature" in group.attrs}
    except AnalysisError:
        raise
    except UnicodeDecodeError as error:
        # The file is intact: a string in it is not UTF-8 (a config value attnlab accepted
        # before it checked YAML files' encoding).
        raise AnalysisError(f"{path}: a text attribute is not valid UTF-8 (byte offset "
                            f"{error.start} of its value); the HDF5 file itself is readable "
                            f"(h5dump -A shows the attributes)") from None
    except (OSError, KeyError, ValueError, RuntimeError) as error:
        raise AnalysisError(f"{path}: unreadable run file (truncated or corrupt?): {error}") \
            from None
    return RunData(path=path, attrs=attrs, config=config, summary=summary, train=train,
                   eval=evaluation, diagnostics=diagnostics, attention=attention,
                   decodings=decodings, damaged=damaged)
