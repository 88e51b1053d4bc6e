"""runs/<sweep>/manifest.yaml: the runs a sweep declares (written by core/config/sweep.cpp).

    sweep: NAME
    source: FILE
    sets: [KEY=VALUE, ...]
    test: welch                                 (sweep.test, only when not welch+permutation)
    seeds: {min: 2, max: 5, until: resolved, effect: 0.02, confidence: 0.95}   (adaptive only)
    seed_decisions: {ROW: "3 seeds: why", ...}                                 (adaptive only)
    runs:
      - id: "0123abcd4567"
        name: a-h-1.seed1
        group: A
        seed: 1
        overrides: {model.heads: 1, model.d_k: 512}
        versus: c-d_model-128                   (only for a row not compared with base)
        paper: {ppl: 5.29, bleu: 24.9}          (only when the sweep file gives paper values)
"""

import dataclasses
import re

import yaml

from analysis.errors import AnalysisError

_SEED_SUFFIX = re.compile(r"\.seed[0-9]+$")
# The C loader when Debian's PyYAML has it (it does), else the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass
class ManifestRun:
    id: str
    name: str
    group: str
    seed: int
    overrides: dict  # key -> value (parsed YAML scalar or list), in the sweep's order
    paper: dict      # subset of {"ppl", "bleu", "params"} (params in millions)
    versus: str = ""  # the row this run's row is compared with; "" = the base row

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
    allow_dirty: bool = False  # launched with --allow-dirty (core/cluster/provenance.h)
    # sweep.test: the p the verdicts use, declared in the sweep file before any run ("" = the
    # default, welch+permutation); analysis/report.py uses it.
    test: str = ""


_RUN_KEYS = {"id", "name", "group", "seed", "overrides", "paper", "versus"}


def load_yaml(text, path):
    """One YAML document with PyYAML's safe loader; AnalysisError names path:line:column."""
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise AnalysisError(f"{where}: {error.problem}") from None
    except yaml.YAMLError as error:
        raise AnalysisError(f"{path}: {error}") from None


def _run(entry, path, index):
    where = f"{path}: runs[{index}]"
    if not isinstance(entry, dict):
        raise AnalysisError(f"{where}: expected a mapping (id, name, seed, ...)")
    unknown = sorted(set(entry) - _RUN_KEYS)
    if unknown:
        raise AnalysisError(f"{where}: unknown run key '{unknown[0]}' (expected "
                            f"{', '.join(sorted(_RUN_KEYS))})")
    missing = sorted({"id", "name", "seed"} - entry.keys())
    if missing:
        raise AnalysisError(f"{where}: run entry without {', '.join(missing)}")
    overrides = entry.get("overrides") or {}
    paper = entry.get("paper") or {}
    if not isinstance(overrides, dict) or not isinstance(paper, dict):
        raise AnalysisError(f"{where}: overrides and paper must be {{key: value}} maps")
    return ManifestRun(id=str(entry["id"]), name=str(entry["name"]),
                       group=str(entry.get("group") or ""), seed=int(entry["seed"]),
                       overrides=overrides, paper={k: float(v) for k, v in paper.items()},
                       versus=str(entry.get("versus") or ""))


def parse_manifest(text, path="manifest.yaml"):
    """The Manifest in `text`; AnalysisError names the path (and line) of anything unexpected."""
    top = load_yaml(text, path)
    if not isinstance(top, dict) or "sweep" not in top:
        raise AnalysisError(f"{path}: not an attnlab sweep manifest (no 'sweep:' line)")
    entries = top.get("runs") or []
    if not isinstance(entries, list):
        raise AnalysisError(f"{path}: runs: expected a list of run entries")
    runs = [_run(entry, path, index) for index, entry in enumerate(entries)]
    ids = [run.id for run in runs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise AnalysisError(f"{path}: run id(s) listed twice: {', '.join(duplicates)}")
    return Manifest(path=str(path), sweep=str(top["sweep"]), source=str(top.get("source") or ""),
                    sets=list(top.get("sets") or []), runs=runs,
                    seeds=dict(top.get("seeds") or {}),
                    seed_decisions={str(k): str(v)
                                    for k, v in (top.get("seed_decisions") or {}).items()},
                    allow_dirty=top.get("allow_dirty") is True,
                    test=str(top.get("test") or ""))


def read_manifest(path):
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError as error:
        raise AnalysisError(f"{path}: cannot read the manifest: {error.strerror}") from None
    return parse_manifest(text, path)
