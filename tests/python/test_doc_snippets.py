"""Every command and snippet of docs/*.md and analysis/README.md is checked by a test.

Python snippets run here on committed run files (docs/results/table3-small/runs). Shell lines run
in test_doc_commands.py (or the page says beside them why not); here each is also checked by what
it is, which covers the ones not run: an `attnlab` command and its options exist in docs/cli.md, a
make target and its variables exist in the Makefile, a cluster/local-slurm.sh subcommand exists in
the script (the real cluster runs in test_slurm_*.py), a fuzz target exists, and the layering grep
of design.md finds exactly the files its table names. A line of a kind this file does not know
fails the test, so a new command in the docs comes with its check. The README has its own checks
(test_readme.py).
"""

import re
import shlex
import subprocess
import sys

import pytest

from conftest import ROOT, run_attnlab
from test_doc_commands import page_commands

PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "analysis" / "README.md"]
COMMITTED_SWEEP = ROOT / "docs" / "results" / "table3-small" / "runs"
MAKEFILE = (ROOT / "Makefile").read_text()
CLI = (ROOT / "docs" / "cli.md").read_text()


def blocks(page, language):
    """The fenced blocks of `language` (indented ones inside list items too)."""
    text = page.read_text(encoding="utf-8")
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, flags=re.S | re.M)
    return [re.sub(rf"^{indent}", "", body, flags=re.M) for indent, body in found]


def shell_lines(page):
    """(words, line) of each command of the page's sh blocks (test_doc_commands.py's reading)."""
    return [(shlex.split(command), command) for command, _ in page_commands(page)]


def python_snippets():
    return [pytest.param(page, i, code, id=f"{page.name}#{i}")
            for page in PAGES for i, code in enumerate(blocks(page, "python"))]


@pytest.fixture(scope="module")
def checkpoint(attnlab, tmp_path_factory):
    """A checkpoint of a few steps of the reverse task, for the snippets that read one."""
    out = tmp_path_factory.mktemp("snippet") / "run"
    run_attnlab(attnlab, "train", "-c", ROOT / "experiments" / "tasks" / "reverse.yaml",
                "--set", "train.steps=2", "--set", "data.synthetic.train_size=100",
                "--set", "data.synthetic.dev_size=10", "--out", out)
    (path,) = sorted((out / "ckpt").glob("step_*.h5"))
    return str(path)


@pytest.mark.parametrize("page,index,code", python_snippets())
def test_every_python_snippet_runs(page, index, code, request):
    import h5py  # noqa: F401 - the snippets assume it
    paths = sorted(str(p) for p in COMMITTED_SWEEP.glob("*/run.h5"))
    assert paths, f"{COMMITTED_SWEEP} holds no run.h5"
    if "torch" in code:
        pytest.importorskip("torch", reason="python3-torch is not installed: the PyTorch "
                                            "loading snippet is not run")
    # The snippets name their inputs as a reader would: `path`/`p`/`paths` of run files (`p` a
    # checkpoint in the snippets that read /params), and a sweep directory "runs/<sweep>", which
    # here is the committed sweep.
    code = re.sub(r'"runs/[a-z0-9_-]+"', repr(str(COMMITTED_SWEEP)), code)
    reads_checkpoint = '["params"]' in code
    scope = {"path": paths[0], "p": request.getfixturevalue("checkpoint") if reads_checkpoint
             else paths[0], "paths": paths[:3], "__name__": "snippet"}
    sys.path.insert(0, str(ROOT))
    try:
        exec(compile(f"import h5py\nimport pandas as pd\n{code}", f"{page}#{index}", "exec"),
             scope)  # noqa: S102 - our own docs
    finally:
        sys.path.remove(str(ROOT))


def cli_options(command):
    section = re.search(rf"^## attnlab {command}\n.*?```text\n(.*?)```", CLI, flags=re.S | re.M)
    assert section, f"`attnlab {command}` is not in docs/cli.md"
    return section.group(1)


def check_attnlab(words):
    command, options = words[1], [w.split("=")[0] for w in words[2:] if w.startswith("-")]
    text = cli_options(command)
    for option in options:
        assert re.search(rf"(^|\s|\[ ){re.escape(option)}(\s|\]|,|$)", text, re.M), \
            f"`attnlab {command} {option}` is not in its --help (docs/cli.md)"


def check_make(words):
    targets = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, re.M))
    for word in words[1:]:
        if "=" in word:
            variable = word.split("=")[0]
            assert re.search(rf"^{variable} \??:?=", MAKEFILE, re.M), \
                f"`make {word}`: the Makefile has no variable {variable}"
        else:
            assert word in targets, f"`make {word}`: no such target"


def check_local_slurm(words):
    script = (ROOT / "cluster" / "local-slurm.sh").read_text()
    subcommands = set(re.findall(r"^  ([a-z]+)\) [a-z]+ ;;", script, re.M))
    assert words[1] in subcommands, f"cluster/local-slurm.sh has no subcommand {words[1]}"
    for option in (w for w in words[2:] if w.startswith("--")):
        assert option in script, f"cluster/local-slurm.sh does not take {option}"


def check_fuzz_binary(words):
    target = re.fullmatch(r"build-fuzz/fuzz/fuzz_([a-z_]+)", words[0]).group(1)
    assert re.search(rf"^FUZZ_TARGETS \?= .*\b{target}\b", MAKEFILE, re.M), \
        f"{words[0]}: {target} is not a fuzz target"


def check_line(words, line):
    if words[0] == "eval" and "cluster/local-slurm.sh" in line:
        inner = re.search(r'\$\((.*)\)', line).group(1)
        return check_local_slurm(shlex.split(inner))
    if words[0] == "./build/attnlab":
        return check_attnlab(words)
    if words[0] == "make":
        return check_make(words)
    if words[0] == "cluster/local-slurm.sh":
        return check_local_slurm(words)
    if words[0].startswith("build-fuzz/fuzz/"):
        return check_fuzz_binary(words)
    if words[0] == "grep" and "#include" in line:
        return None  # test_the_layering_grep_finds_what_the_table_says runs it
    raise AssertionError(f"no check for the docs line: {line}")


@pytest.mark.parametrize("page", [p for p in PAGES if shell_lines(p)], ids=lambda p: p.name)
def test_every_shell_line_is_checked(page):
    for words, line in shell_lines(page):
        check_line(words, line)


def test_the_layering_grep_finds_what_the_table_says():
    """design.md's grep for outside libraries' headers lists exactly the files its table names,
    plus the Boost.Math use it names in the text below the table."""
    design = (ROOT / "docs" / "design.md").read_text()
    command = next(line for words, line in shell_lines(ROOT / "docs" / "design.md")
                   if words[0] == "grep")
    found = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    files = {line.split(":")[0] for line in found.stdout.splitlines()}
    section = design.split("**One door per outside library.**", 1)[1].split("To check the rule")[0]
    # The table's "the only place" column, and the files the text under the table names.
    places = [row.split("|")[2] for row in section.splitlines() if row.startswith("| ")]
    prose = "\n".join(row for row in section.splitlines() if not row.startswith("|"))
    named = {path for text in [*places, prose]
             for path in re.findall(r"`(core/[a-z0-9_/]+\.(?:cpp|h))`", text)}
    assert files == named, (f"files including an outside library but not in the table: "
                            f"{sorted(files - named)}; in the table but not found: "
                            f"{sorted(named - files)}")
