"""A sweep directory (runs/<sweep>/) loaded into pandas: one row per run, rows of the table,
the base row, and what is missing.

With a manifest.yaml, the manifest is the list of runs: a run without a run.h5 is missing,
and the table's rows and groups are the sweep's. Without one, every <dir>/run.h5 is a run and
runs that differ only in seed form a row.
"""

import dataclasses
import enum
import pathlib
import re

import numpy as np
import pandas as pd

from analysis.convergence import FAILED, IMPROVING, assess_run
from analysis.errors import AnalysisError
from analysis.manifest import read_manifest
from analysis.runfile import RunStatus, pending_splits, read_run
from analysis.source_attention import dev_cross_attention

MANIFEST = "manifest.yaml"
RUN_FILE = "run.h5"
# Root attributes copied into the runs frame.
RUN_ATTRS = ("run_id", "sweep_id", "status", "seed", "world_size", "threads", "host", "created",
             "git_commit", "git_diff_sha256", "schema_version")
# Config keys that say where and under which name a run goes, not what it is.
_PLACEMENT_KEYS = re.compile(r"^(name|seed|log\.dir|cluster\..*)$")


class LoadStatus(enum.StrEnum):
    """The status Sweep.runs gives a run in place of its file's RunStatus when the file is of no
    use: not written yet, unreadable, or holding a half-written series. Such a run is incomplete
    and left out of every mean. The frame holds plain names (`.value`), as for the file's status."""
    MISSING = "missing"
    UNREADABLE = "unreadable"
    DAMAGED = "damaged"
    # Training completed, but eval.decode_splits are not all decoded (runfile.pending_splits).
    UNDECODED = "undecoded"


@dataclasses.dataclass
class Row:
    """One line of the table: the runs of one configuration over seeds."""
    key: str          # the run name without ".seed<n>"
    group: str        # the sweep's group label ("A", "base", "" for grid sweeps)
    overrides: dict   # the keys the row sets -> value
    paper: dict       # {"ppl", "bleu", "params"} when the sweep gives them
    run_ids: list     # every run the sweep declares for this row
    versus: str = ""  # the row it is compared with (sweep.rows[].versus); "" = the base row


@dataclasses.dataclass
class Sweep:
    directory: pathlib.Path
    name: str
    manifest: object      # Manifest or None
    runs: pd.DataFrame    # one row per run (declared or found)
    data: dict            # run_id -> RunData for every run whose file was read
    rows: list            # Row, in the sweep's order
    base: str             # key of the reference row
    base_note: str        # how the base row was chosen
    notes: list           # things the report must say (extra directories, ...)

    def row(self, key):
        for row in self.rows:
            if row.key == key:
                return row
        raise KeyError(key)

    def reference(self, row_key):
        """The key of the row `row_key` is compared with: its `versus` row, else the base row."""
        return self.row(row_key).versus or self.base

    def completed_runs(self, row_key=None):
        """The completed runs (status RunStatus.COMPLETED), of the row `row_key` when given."""
        return self._of_row(self.runs[self.runs["status"] == RunStatus.COMPLETED], row_key)

    def incomplete(self, row_key=None):
        """The runs that are not completed (missing, running, failed, preempted, unreadable,
        damaged), of the row `row_key` when given."""
        return self._of_row(self.runs[self.runs["status"] != RunStatus.COMPLETED], row_key)

    @staticmethod
    def _of_row(frame, row_key):
        return frame if row_key is None else frame[frame["row"] == row_key]

    def completed(self, row_key):
        """Run ids of the row's completed runs, in seed order."""
        return list(self.completed_runs(row_key).sort_values("seed")["run_id"])

    def statuses(self, row_key):
        """{convergence status: count} over the row's completed runs (analysis/convergence.py)."""
        frame = self.completed_runs(row_key)
        if "convergence_status" not in frame:
            return {}
        return frame["convergence_status"].value_counts().to_dict()

    def unconverged(self, row_key):
        """Completed runs of the row that learned but neither converged nor ran a fixed budget
        to its end (status "stopped while improving")."""
        frame = self.completed_runs(row_key)
        if "convergence_status" not in frame:
            return list(frame["run_id"])
        return list(frame[frame["convergence_status"] == IMPROVING]["run_id"])

    def failed(self, row_key):
        """{run id: (diagnostic, dev cross-attention)} of the row's completed runs that failed to
        learn."""
        frame = self.completed_runs(row_key)
        if "convergence_status" not in frame:
            return {}
        failed = frame[frame["convergence_status"] == FAILED]
        return {run_id: (diagnostic, float(cross)) for run_id, diagnostic, cross in
                zip(failed["run_id"], failed["failure_diagnostic"], failed["dev_cross_attention"])}

    def dirty(self, row_key):
        """Run ids of the row's completed runs built from a working tree with uncommitted
        changes (a git_commit ending in -dirty)."""
        frame = self.completed_runs(row_key)
        if "git_commit" not in frame:
            return []
        return list(frame[frame["git_commit"].astype(str).str.endswith("-dirty")]["run_id"])

    def series(self, kind):
        """A tidy frame of /train or /eval over all read runs: run_id, row, group, seed, then
        the series' columns (one row per run and step)."""
        return series_frame(self, kind)


def _run_record(run_id, name, row, group, seed, path):
    return {"run_id": run_id, "name": name, "row": row, "group": group, "seed": seed,
            "path": str(path), "status": LoadStatus.MISSING.value}


# Table metrics of a run: the first /summary attribute present, else the last /eval value.
DERIVED = {"dev_ppl": (("final_dev_ppl",), "ppl"),
           "dev_accuracy": (("final_dev_accuracy",), "accuracy"),
           "dev_bleu": (("final_dev_bleu",), "bleu")}
# Test metrics of a run: its beam-search decoding of the test split (/eval_test, written by
# `attnlab eval --split test` or by eval.decode_splits), when that scored the parameters of the
# run's final evaluation.
TEST_DERIVED = {"test_bleu": "bleu", "test_ppl": "ppl"}


def final_decoding(data, split):
    """The attributes of /eval_<split> when it decoded the parameters the run's final evaluation
    scored (eval.checkpoint best: /summary best_step; newest: its last step, with the same
    eval.average_last), else None: a decoding of other parameters is not the run's result."""
    decoding = getattr(data, "decodings", {}).get(f"eval_{split}")
    if not decoding or "step" not in decoding:
        return None
    best = str(data.config.get("eval.checkpoint", "newest")) == "best"
    final_step = data.summary.get("best_step" if best else "steps")
    if final_step is None or int(decoding["step"]) != int(final_step):
        return None
    averaged = 0 if best else int(data.config.get("eval.average_last", 0) or 0)
    if int(decoding.get("average_last", 0) or 0) != averaged:
        return None
    return decoding


def derived_metrics(data):
    out = {}
    for name, (keys, column) in DERIVED.items():
        value = next((data.summary[k] for k in keys if k in data.summary), None)
        if value is None and column and column in data.eval and len(data.eval):
            value = float(data.eval[column].iloc[-1])
        out[name] = np.nan if value is None else float(value)
    test = final_decoding(data, "test")
    for name, key in TEST_DERIVED.items():
        out[name] = float(test[key]) if test is not None and key in test else np.nan
    flops = data.summary.get("train_flops")
    if flops is None and "flops_per_token" in data.summary:
        tokens = data.summary.get("train_tokens")
        if tokens is None and "tokens" in data.train and len(data.train):
            tokens = data.train["tokens"].iloc[-1]
        flops = None if tokens is None else float(data.summary["flops_per_token"]) * float(tokens)
    out["train_flops"] = np.nan if flops is None else float(flops)
    return out


def _merge_run(record, data, unigram_ppl=None):
    for key in RUN_ATTRS:
        if key in data.attrs:
            record[key] = data.attrs[key]
    record.update({k: v for k, v in data.config.items() if k not in ("seed", "name")})
    record.update(data.summary)
    record.update(derived_metrics(data))
    convergence = assess_run(data, unigram_ppl)
    record["convergence_status"] = convergence.status
    record["converged"] = convergence.converged
    record["convergence"] = convergence.reason
    record["failure_diagnostic"] = convergence.diagnostic
    record["tail_fall_nats"] = convergence.tail_fall_nats
    record["dev_evaluations"] = convergence.evaluations
    cross = dev_cross_attention(data)
    record["dev_cross_attention"] = np.nan if cross is None else cross
    world = float(data.attrs.get("world_size", 1) or 1)
    threads = float(data.attrs.get("threads", 1) or 1)
    seconds = data.summary.get("train_seconds")
    record["core_hours"] = (float(seconds) * world * threads / 3600.0
                            if seconds is not None else np.nan)


def _choose_base(rows, explicit):
    if explicit:
        for row in rows:
            if row.key == explicit:
                return row.key, f"base row '{explicit}', chosen with --base"
        raise AnalysisError(f"--base {explicit}: no such row (rows: "
                            f"{', '.join(r.key for r in rows)})")
    for row in rows:
        if row.group.lower() == "base" or row.key.lower() == "base":
            return row.key, f"base row '{row.key}', declared by the sweep"
    for row in rows:
        if not row.overrides:
            return row.key, f"base row '{row.key}', the row that changes nothing"
    return rows[0].key, (f"base row '{rows[0].key}': the sweep declares no base row, so the first "
                         "row is the reference")


def _mark_half_written(record, loaded, notes):
    """A run file with a half-written series is damaged, never an empty run: its status says so
    (so it is left out of every mean) and a note names the groups."""
    if not loaded.damaged:
        return
    record["status"] = LoadStatus.DAMAGED.value
    notes.append(f"damaged run file (a rerun of the sweep resumes and repairs it), left out of "
                 f"every mean: {record['name']} (id {record['run_id']}): "
                 + "; ".join(loaded.damaged))


def _mark_undecoded(record, loaded, notes):
    """A run stopped while decoding its eval.decode_splits is not done: its file says completed,
    its status here says undecoded (left out of every mean) and a note names the splits."""
    pending = pending_splits(loaded)
    if not pending:
        return
    record["status"] = LoadStatus.UNDECODED.value
    notes.append(f"training completed but {', '.join(pending)} not decoded (training the run "
                 f"again decodes them), left out of every mean: {record['name']} "
                 f"(id {record['run_id']})")


def _load_from_manifest(directory, manifest, with_attention, unigram_ppl=None):
    records, data, rows, order, notes_damaged = [], {}, {}, [], []
    notes_incomplete = []
    for run in manifest.runs:
        record = _run_record(run.id, run.name, run.row, run.group, run.seed,
                             directory / run.id / RUN_FILE)
        for key, value in run.paper.items():
            record[f"paper.{key}"] = value
        if run.row not in rows:
            rows[run.row] = Row(key=run.row, group=run.group, overrides=dict(run.overrides),
                                paper=dict(run.paper), run_ids=[], versus=run.versus)
            order.append(run.row)
        rows[run.row].run_ids.append(run.id)
        path = directory / run.id / RUN_FILE
        if path.exists():
            try:
                loaded = read_run(path, with_attention=with_attention)
            except AnalysisError as error:
                # One damaged file leaves its run out of the means; the rest are reported.
                record["status"] = LoadStatus.UNREADABLE.value
                notes_damaged.append(f"{run.name} (id {run.id}): {error}")
            else:
                data[run.id] = loaded
                _merge_run(record, loaded, unigram_ppl)
                _mark_half_written(record, loaded, notes_incomplete)
                _mark_undecoded(record, loaded, notes_incomplete)
        records.append(record)
    declared = {run.id for run in manifest.runs}
    extra = sorted(p.parent.name for p in directory.glob(f"*/{RUN_FILE}")
                   if p.parent.name not in declared)
    for key in order:
        if rows[key].versus and rows[key].versus not in rows:
            raise AnalysisError(f"{manifest.path}: row {key} is compared with "
                                f"'{rows[key].versus}', which the manifest does not list")
    notes = [f"unreadable run file, left out of every mean: {line}" for line in notes_damaged]
    notes += notes_incomplete
    if extra:
        notes.append("run directories not in the manifest (left out): " + ", ".join(extra))
    return records, data, [rows[k] for k in order], notes


def _load_without_manifest(directory, with_attention, paths=None, unigram_ppl=None):
    paths = sorted(directory.glob(f"*/{RUN_FILE}")) if paths is None else paths
    if not paths:
        raise AnalysisError(f"{directory}: neither a {MANIFEST} nor any <run>/{RUN_FILE}: "
                            "not a sweep directory (or the sweep has not started)")
    records, data, rows, order, half_written = [], {}, {}, [], []
    loaded_runs = [(p, read_run(p, with_attention=with_attention)) for p in paths]
    # Keys that vary across runs (apart from placement and seed) define the rows.
    keys = sorted({k for _, d in loaded_runs for k in d.config if not _PLACEMENT_KEYS.match(k)})
    varying = [k for k in keys
               if len({repr(d.config.get(k)) for _, d in loaded_runs}) > 1]
    for path, loaded in loaded_runs:
        run_id = str(loaded.attrs.get("run_id") or path.parent.name)
        overrides = {k: loaded.config.get(k) for k in varying}
        key = ",".join(f"{k.split('.')[-1]}={loaded.config.get(k)}" for k in varying) or "all"
        seed = int(loaded.attrs.get("seed", 0))
        record = _run_record(run_id, f"{key}.seed{seed}", key, "", seed, path)
        _merge_run(record, loaded, unigram_ppl)
        _mark_half_written(record, loaded, half_written)
        if key not in rows:
            rows[key] = Row(key=key, group="", overrides=overrides, paper={}, run_ids=[])
            order.append(key)
        rows[key].run_ids.append(run_id)
        if run_id in data:
            raise AnalysisError(f"{path}: run id '{run_id}' also belongs to "
                                f"{data[run_id].path}")
        data[run_id] = loaded
        records.append(record)
    notes = [f"no {MANIFEST}: rows are the configurations found (differing in "
             f"{', '.join(varying) or 'nothing but the seed'})"] + half_written
    return records, data, [rows[k] for k in order], notes


def load_sweep(directory, base=None, with_attention=True, unigram_ppl=None):
    """Loads runs/<sweep>/ (see the module comment). AnalysisError for a missing or empty
    directory and for any run file that cannot be read, naming the file. unigram_ppl: a unigram
    model's dev PPL of the target side, below which a run has learned something
    (analysis/convergence.py)."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise AnalysisError(f"{directory}: no such directory")
    manifest_path = directory / MANIFEST
    if manifest_path.exists():
        manifest = read_manifest(manifest_path)
        if not manifest.runs:
            raise AnalysisError(f"{manifest_path}: the manifest lists no runs")
        records, data, rows, notes = _load_from_manifest(directory, manifest, with_attention,
                                                        unigram_ppl)
        name = manifest.sweep
    else:
        manifest = None
        records, data, rows, notes = _load_without_manifest(directory, with_attention,
                                                           unigram_ppl=unigram_ppl)
        name = directory.name
    runs = pd.DataFrame.from_records(records)
    if "seed" in runs:
        runs["seed"] = runs["seed"].astype("int64")
    base_key, base_note = _choose_base(rows, base)
    return Sweep(directory=directory, name=name, manifest=manifest, runs=runs, data=data,
                 rows=rows, base=base_key, base_note=base_note, notes=notes)


def load_runs(paths, with_attention=True, unigram_ppl=None):
    """Single runs or a pair, without a sweep: each path a run directory or its run.h5. Rows are
    the configurations found (as for a directory without a manifest); the first run's directory
    stands for the sweep's."""
    files = []
    for path in map(pathlib.Path, paths):
        file = path / RUN_FILE if path.is_dir() else path
        if not file.is_file():
            raise AnalysisError(f"{path}: not a run (no {RUN_FILE})")
        files.append(file)
    directory = files[0].parent
    records, data, rows, notes = _load_without_manifest(directory, with_attention, files,
                                                       unigram_ppl)
    runs = pd.DataFrame.from_records(records)
    if "seed" in runs:
        runs["seed"] = runs["seed"].astype("int64")
    base_key, base_note = _choose_base(rows, None)
    name = directory.name if len(files) == 1 else f"{len(files)} runs"
    return Sweep(directory=directory, name=name, manifest=None, runs=runs, data=data, rows=rows,
                 base=base_key, base_note=base_note, notes=notes)


def series_frame(sweep, kind):
    if kind not in ("train", "eval"):
        raise ValueError(f"series kind must be 'train' or 'eval', not {kind!r}")
    frames = []
    index = sweep.runs.set_index("run_id")
    for run_id, data in sweep.data.items():
        frame = getattr(data, kind)
        if frame.empty:
            continue
        frame = frame.copy()
        if kind == "eval" and "tokens" not in frame and {"step", "tokens"} <= set(data.train):
            # Tokens seen at each evaluation, from the training log (logged every few steps).
            frame["tokens"] = np.interp(frame["step"], data.train["step"], data.train["tokens"])
        frame.insert(0, "seed", index.at[run_id, "seed"])
        frame.insert(0, "group", index.at[run_id, "group"])
        frame.insert(0, "row", index.at[run_id, "row"])
        frame.insert(0, "run_id", run_id)
        frames.append(frame)
    if not frames:
        return pd.DataFrame(columns=["run_id", "row", "group", "seed", "step"])
    return pd.concat(frames, ignore_index=True)
