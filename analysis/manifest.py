"""runs/<sweep>/manifest.yaml: the runs a sweep declares (written by core/config/sweep.cpp).

    sweep: NAME
    source: FILE
    sets: [KEY=VALUE, ...]
    seeds: {min: 2, max: 5, until: resolved, effect: 0.02, confidence: 0.95}   (adaptive only)
    seed_decisions: {ROW: "3 seeds: why", ...}                                 (adaptive only)
    runs:
      - id: "0123abcd4567"
        name: a-h-1.seed1
        group: A
        seed: 1
        overrides: {model.heads: 1, model.d_k: 512}
        paper: {ppl: 5.29, bleu: 24.9}          (only when the sweep file gives paper values)
"""

import dataclasses
import re

from analysis.errors import AnalysisError
from analysis.flowyaml import FlowError, parse_flow

_SEED_SUFFIX = re.compile(r"\.seed[0-9]+$")


@dataclasses.dataclass
class ManifestRun:
    id: str
    name: str
    group: str
    seed: int
    overrides: dict  # key -> value (parsed YAML scalar or list), in the sweep's order
    paper: dict      # subset of {"ppl", "bleu", "params"} (params in millions)

    @property
    def row(self):
        """The table row this run belongs to: its name without the ".seed<n>" suffix."""
        return _SEED_SUFFIX.sub("", self.name)


@dataclasses.dataclass
class Manifest:
    path: str
    sweep: str
    source: str
    sets: list
    runs: list  # ManifestRun, in the sweep's order
    seeds: dict = dataclasses.field(default_factory=dict)  # adaptive seeds' rule, {} otherwise
    seed_decisions: dict = dataclasses.field(default_factory=dict)  # row -> its seed decision


_RUN_KEYS = {"id", "name", "group", "seed", "overrides", "paper"}


def _split_entry(text, path, number):
    key, colon, value = text.partition(":")
    if not colon or not key.strip():
        raise AnalysisError(f"{path}:{number}: expected 'key: value', found {text.strip()!r}")
    try:
        return key.strip(), parse_flow(value.strip()) if value.strip() else None
    except FlowError as error:
        raise AnalysisError(f"{path}:{number}: {error}") from None


def _finish_run(fields, path, number):
    missing = sorted({"id", "name", "seed"} - fields.keys())
    if missing:
        raise AnalysisError(f"{path}:{number}: run entry without {', '.join(missing)}")
    overrides = fields.get("overrides") or {}
    paper = fields.get("paper") or {}
    if not isinstance(overrides, dict) or not isinstance(paper, dict):
        raise AnalysisError(f"{path}:{number}: overrides and paper must be {{key: value}} maps")
    return ManifestRun(id=str(fields["id"]), name=str(fields["name"]),
                       group=str(fields.get("group") or ""), seed=int(fields["seed"]),
                       overrides=overrides, paper={k: float(v) for k, v in paper.items()})


def parse_manifest(text, path="manifest.yaml"):
    """The Manifest in `text`; AnalysisError names path:line for anything unexpected."""
    top = {}
    runs = []
    current = None
    current_line = 0
    in_runs = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            if current is not None:
                runs.append(_finish_run(current, path, current_line))
                current = None
            key, value = _split_entry(line, path, number)
            top[key] = value
            in_runs = key == "runs"
            continue
        if not in_runs:
            raise AnalysisError(f"{path}:{number}: unexpected indented line outside 'runs:'")
        body = line.strip()
        if body.startswith("- "):
            if current is not None:
                runs.append(_finish_run(current, path, current_line))
            current, current_line = {}, number
            body = body[2:]
        elif current is None:
            raise AnalysisError(f"{path}:{number}: expected '- id: ...' to start a run entry")
        key, value = _split_entry(body, path, number)
        if key not in _RUN_KEYS:
            raise AnalysisError(f"{path}:{number}: unknown run key '{key}' (expected "
                                f"{', '.join(sorted(_RUN_KEYS))})")
        current[key] = value
    if current is not None:
        runs.append(_finish_run(current, path, current_line))
    if "sweep" not in top:
        raise AnalysisError(f"{path}: not an attnlab sweep manifest (no 'sweep:' line)")
    ids = [run.id for run in runs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise AnalysisError(f"{path}: run id(s) listed twice: {', '.join(duplicates)}")
    return Manifest(path=str(path), sweep=str(top["sweep"]), source=str(top.get("source") or ""),
                    sets=list(top.get("sets") or []), runs=runs,
                    seeds=dict(top.get("seeds") or {}),
                    seed_decisions={str(k): str(v)
                                    for k, v in (top.get("seed_decisions") or {}).items()})


def read_manifest(path):
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise AnalysisError(f"{path}: cannot read the manifest: {error.strerror}") from None
    return parse_manifest(text, path)
