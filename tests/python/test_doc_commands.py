"""Every command of the `sh` blocks of README.md, docs/*.md and analysis/README.md runs, or the
page says beside it why it does not.

A page's commands run in order (a later one reads what an earlier one wrote), each as written by
bash, in a scratch checkout: the tree's directories linked in read-only, ./build/attnlab the binary
under test, data/bible a copy of the committed Bible slice (tests/fixtures/bible), the systems
docs/metrics.md scores (SYSTEMS), and runs/ and runs-slurm/ otherwise empty. Each must exit 0,
print the line EXPECTED gives for it and write the files WRITES lists for it. (A sweep from a build
with uncommitted changes gets --allow-dirty, as every sweep of the suite does:
conftest.sweep_args.) A command that would take minutes or needs what a test machine lacks runs in
the form SUBSTITUTIONS gives, with the reason there. A command that cannot run at all is marked on
its page, with the reason: `# not run: REASON` at the end of its line, or
`<!-- not run: REASON -->` on the line before its block for the whole block. A command neither run
nor marked fails here, and so does an entry of any table that no page has any more, so the tables
follow the pages.
"""

import re
import shlex
import shutil
import subprocess

import pytest

from conftest import ROOT, attnlab_env, sweep_args

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "analysis" / "README.md"]
FIXTURE_BIBLE = ROOT / "tests" / "fixtures" / "bible"
REVERSE = ROOT / "experiments" / "tasks" / "reverse.yaml"
# What the scratch checkout links in from the tree (nothing writes there).
LINKED = ("analysis", "bench", "cluster", "core", "docs", "experiments", "tests", "tools")

# The reverse task at a size that trains in about a second, named like the README's study: the
# README's local sweep trains this (the study itself is expanded by the --dry-run line before it).
TINY_STUDY = f"""\
base: {REVERSE}
name: study
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4, d_k: 8, d_v: 8}}
data: {{synthetic: {{train_size: 2000, dev_size: 50}}}}
train: {{batch_tokens: 400, steps: 12, checkpoint_every: 6}}
eval: {{every: 6}}
log: {{every: 2}}
cluster: {{ranks: 1, threads_per_rank: 1}}
sweep:
  rows:
    - {{name: base, group: base}}
    - {{name: pre-LN, group: norm, set: {{model.norm: pre}}}}
"""
TINY_STUDY_PATH = "tiny/study.yaml"

# The files docs/metrics.md's `attnlab bleu` lines score: the reference is the Bible slice's test
# set, each system that reference with every n-th word dropped (n given), so that the systems
# differ from the reference and from each other by known amounts.
SYSTEMS = {"ref.txt": None, "hyp.txt": 4, "base.txt": 3, "sys1.txt": 5, "sys2.txt": 2,
           "runs/base/hyp.test.txt": 3, "runs/h16/hyp.test.txt": 5}

TRAIN_REVERSE = "./build/attnlab train -c experiments/tasks/reverse.yaml --out runs/reverse"
LOCAL_STUDY = "./build/attnlab sweep experiments/small/study.yaml --launcher local --out runs"
LAYERING_GREP = ("grep -rn --include='*.cpp' --include='*.h' '#include <\\(cblas\\|oneapi/dnnl"
                 "\\|mpi\\|hdf5\\|yaml-cpp\\|boost\\|sentencepiece\\|unicode/\\)' core tests bench")
SLURM_STUDY = ("./build/attnlab sweep experiments/small/study.yaml --launcher slurm "
               "--profile cluster/profiles/local.yaml")

# (page, command as written) -> (command run, why). Only where the command as written would take
# minutes or needs a Slurm cluster.
SUBSTITUTIONS = {
    ("README.md", TRAIN_REVERSE): (
        f"{TRAIN_REVERSE} --set train.steps=20 --set eval.every=20 --set log.every=10",
        "the full run trains for minutes: 20 steps"),
    ("README.md", LOCAL_STUDY): (
        f"./build/attnlab sweep {TINY_STUDY_PATH} --launcher local --out runs",
        "the study trains for hours: TINY_STUDY, two reverse-task runs of the same name"),
    ("README.md", f"{SLURM_STUDY} --out runs-slurm"): (
        f"{SLURM_STUDY} --out runs-slurm --dry-run",
        "submitting needs Slurm: test_slurm_sweep.py submits to cluster/local-slurm.sh"),
    ("docs/cluster.md", SLURM_STUDY): (
        f"{SLURM_STUDY} --dry-run",
        "submitting needs Slurm: test_slurm_sweep.py submits to cluster/local-slurm.sh"),
    ("docs/cluster.md", "./build/attnlab sweep SWEEP --launcher slurm "
                   "--profile cluster/profiles/local-2nodes.yaml"): (
        "./build/attnlab sweep experiments/small/study-long.yaml --launcher slurm "
        "--profile cluster/profiles/local-2nodes.yaml --dry-run",
        "SWEEP stands for any sweep file of 2-rank runs; submitting needs the two-node Slurm: "
        "test_slurm_multinode.py submits with this profile"),
}

# (page, command as written) -> a regular expression its output (stdout and stderr) matches.
EXPECTED = {
    # README.md: the tour.
    ("README.md", TRAIN_REVERSE): r"completed",
    ("README.md", "./build/attnlab inspect runs/reverse"): r"status\s+completed",
    ("README.md", "./build/attnlab inspect runs/reverse --csv eval"): r"^step,",
    ("README.md", "./build/attnlab config -c experiments/small/tiny.yaml --set model.norm=pre"):
        r"^  norm: pre\b",
    ("README.md", "./build/attnlab params -c experiments/small/study.yaml"): r"pre-LN\.seed1",
    ("README.md", "./build/attnlab data bible --out data/bible"):
        r"data/bible: up to date \(DATA_CARD\.md checksums match\)",
    ("README.md", f"{LOCAL_STUDY} --dry-run"): r"would launch 8 run\(s\) with the local launcher",
    ("README.md", LOCAL_STUDY): r"launching 2 run\(s\)",
    ("README.md", "./build/attnlab status runs/study"): r"2 runs: 2 completed",
    ("README.md", "./build/attnlab report runs/study"): r"^report written to runs/study/report$",
    ("README.md", f"{SLURM_STUDY} --out runs-slurm"):
        r"wrote \S*runs-slurm/study/slurm/array-1\.sbatch \(8 array tasks",
    ("README.md", "./build/attnlab status runs-slurm/study"): r"8 runs: 8 not started",
    ("README.md", "./build/attnlab cancel runs-slurm/study"): r"has no Slurm submissions",
    ("README.md", "bash cluster/env.sh"): r"\A(SkylakeX|Zen|Haswell|)\n?\Z",
    ("README.md", "source cluster/env.sh"): r"\A\Z",
    # docs/cluster.md
    ("docs/cluster.md", f"{SLURM_STUDY} --dry-run"):
        r"wrote \S*runs/study/slurm/array-1\.sbatch \(8 array tasks",
    ("docs/cluster.md", SLURM_STUDY): r"wrote \S*runs/study/slurm/array-1\.sbatch \(8 array tasks",
    ("docs/cluster.md", "./build/attnlab status runs/study"): r"8 runs: 8 not started",
    ("docs/cluster.md", "./build/attnlab cancel runs/study"): r"has no Slurm submissions",
    ("docs/cluster.md", "./build/attnlab sweep SWEEP --launcher slurm "
                   "--profile cluster/profiles/local-2nodes.yaml"):
        r"profile cluster/profiles/local-2nodes\.yaml",
    # docs/config.md
    ("docs/config.md", "./build/attnlab config -c experiments/small/tiny.yaml --set model.heads=8 "
                  "--flat"): r"^model\.heads=8$",
    # docs/metrics.md
    ("docs/metrics.md", "./build/attnlab bleu ref.txt hyp.txt"): r"^BLEU = \d+\.\d+ ",
    ("docs/metrics.md", "./build/attnlab bleu ref.txt hyp.txt --metrics bleu,chrf,chrf++ --json"):
        r'"name": "chrF2\+\+", "score": \d',
    ("docs/metrics.md", "./build/attnlab bleu ref.txt base.txt sys1.txt sys2.txt --paired-bs"):
        r"^sys2\.txt +\S+ \(.*\(p = ",
    ("docs/metrics.md", "./build/attnlab bleu ref.txt base.txt sys1.txt --metrics bleu,chrf "
                        "--paired-ar"):
        r"^Paired approximate randomization test with 10000 trials$",
    ("docs/metrics.md", "./build/attnlab bleu data/bible/test.es runs/base/hyp.test.txt "
                        "runs/h16/hyp.test.txt --metrics bleu,chrf --paired-bs"):
        r"^runs/h16/hyp\.test\.txt +\S+ \(.*\(p = ",
    # docs/design.md: the layering grep (test_doc_snippets.py checks what it finds).
    ("docs/design.md", LAYERING_GREP): r"^core/\S+:\d+:#include <",
}

# (page, command as written) -> the files (in the scratch checkout) its comment on the page says
# it writes.
WRITES = {
    ("README.md", "./build/attnlab report runs/study"):
        ["runs/study/report/report.md", "runs/study/report/report.html"],
    ("docs/cluster.md", f"{SLURM_STUDY} --dry-run"): ["runs/study/slurm/array-1.sbatch"],
}

MARK = re.compile(r"\(?not run: (\S.*?)\)?\s*(?:-->)?$")


def split_comment(line):
    """(code, comment) of a shell line: the comment starts at a # outside quotes, at the start
    of the line or after a blank."""
    quote, escaped = None, False
    for i, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def page_commands(page):
    """(command, reason it is not run or None) of the page's sh blocks, in order: continuation
    lines joined, blanks collapsed, comment-only lines dropped."""
    text = page.read_text(encoding="utf-8")
    commands = []
    for match in re.finditer(r"^( *)```sh\n(.*?)^\1```", text, flags=re.S | re.M):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        block_mark = MARK.search(before) if before.startswith("<!--") else None
        pending, comments, block = "", [], []
        for raw in match.group(2).splitlines():
            code, comment = split_comment(raw.strip())
            if not code and not pending:
                # A comment line goes on with the comment of the command above it.
                mark = MARK.search(comment)
                if mark and block:
                    block[-1] = (block[-1][0], mark.group(1))
                continue
            comments.append(comment)
            if code.endswith("\\"):
                pending += code[:-1] + " "
                continue
            command, pending = " ".join((pending + code).split()), ""
            line_marks = [m.group(1) for m in map(MARK.search, comments) if m]
            comments = []
            reason = line_marks[0] if line_marks else block_mark and block_mark.group(1)
            block.append((command, reason))
        commands += block
        assert not pending, f"{page_name(page)}: a block ends in a continuation line"
    return commands


def page_name(page):
    return str(page.relative_to(ROOT))


def pages_with_commands():
    return [page for page in PAGES if page_commands(page)]


def make_checkout(where, attnlab):
    """The scratch checkout the commands run in (see the module's docstring)."""
    for name in LINKED:
        (where / name).symlink_to(ROOT / name)
    (where / "build").mkdir()
    (where / "build" / "attnlab").symlink_to(attnlab.resolve())
    shutil.copytree(FIXTURE_BIBLE, where / "data" / "bible")
    (where / "tiny").mkdir()
    (where / TINY_STUDY_PATH).write_text(TINY_STUDY)
    reference = (FIXTURE_BIBLE / "test.es").read_text(encoding="utf-8").splitlines()
    for name, every in SYSTEMS.items():
        lines = [" ".join(word for i, word in enumerate(line.split(), 1) if not every or i % every)
                 for line in reference]
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        (where / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def test_the_tables_name_only_commands_the_pages_have():
    commands = {(page_name(page), command): reason
                for page in PAGES for command, reason in page_commands(page)}
    for table in (SUBSTITUTIONS, EXPECTED, WRITES):
        stale = set(table) - set(commands)
        assert not stale, f"no page has these commands any more: {sorted(stale)}"
    both = [key for key in EXPECTED if commands[key]]
    assert not both, f"marked not run on the page but given a line to print here: {both}"


# The start of a line a reader would copy into a shell.
COMMAND_START = re.compile(r"^(\./build/attnlab|attnlab|make|/usr/bin/python3|python3|bash|source|"
                           r"eval|grep|cluster/[\w.-]+\.sh)( |$)")
# What makes a line a synopsis: a placeholder (RUN_DIR, <sweep>), an optional part or "...".
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z_]+\b|<[a-z]+>|\[|\.\.\.")


def test_commands_outside_sh_blocks_are_synopses():
    """A full command in a block without a language would escape the runs above: there, only
    usage synopses with placeholders (analysis/README.md's) are allowed."""
    full = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for _, language, body in re.findall(r"^( *)```(\w*)\n(.*?)^\1```", text,
                                            flags=re.S | re.M):
            for line in body.splitlines() if not language else []:
                code = split_comment(line.strip())[0]
                if COMMAND_START.match(code) and not PLACEHOLDER.search(code):
                    full.append(f"{page_name(page)}: {code}")
    assert not full, f"commands outside sh blocks (put them in one): {full}"
    assert PLACEHOLDER.search("python3 -m analysis.runpage RUN_DIR --out PAGE.md")
    assert not PLACEHOLDER.search("python3 -m analysis.rate_cuts docs/results/study/runs")


def test_the_comment_splitter_and_marks():
    assert split_comment("eval \"$(x up)\"  # a # b") == ('eval "$(x up)"', "a # b")
    assert split_comment("grep '#include <a\\|b>' core") == ("grep '#include <a\\|b>' core", "")
    assert split_comment("echo a\\#b") == ("echo a\\#b", "")
    assert MARK.search("<!-- not run: needs Slurm -->").group(1) == "needs Slurm"
    assert MARK.search("the kernel; not run: needs Slurm").group(1) == "needs Slurm"
    assert MARK.search("(not run: needs Slurm)").group(1) == "needs Slurm"
    assert not MARK.search("runs are not run twice")


@pytest.mark.parametrize("page", [pytest.param(p, marks=[pytest.mark.slow]
                                               if p == ROOT / "README.md" else [], id=page_name(p))
                                  for p in pages_with_commands()])
def test_every_command_runs_or_is_marked(page, attnlab, tmp_path):
    commands = [command for command, reason in page_commands(page) if not reason]
    unchecked = [command for command in commands if (page_name(page), command) not in EXPECTED]
    assert not unchecked, (
        f"{page_name(page)}: neither run by this test (give the line each prints in EXPECTED) nor "
        f"marked `# not run: REASON` on the page: {unchecked}")
    checkout = make_checkout(tmp_path, attnlab)
    for command in commands:
        key = (page_name(page), command)
        ran, why = SUBSTITUTIONS.get(key, (command, "as written"))
        words = shlex.split(ran)
        if words[0] == "./build/attnlab":  # a development build's sweeps get --allow-dirty
            ran = shlex.join([words[0], *sweep_args(attnlab, words[1:])])
        result = subprocess.run(["bash", "-c", ran], cwd=checkout, capture_output=True, text=True,
                                env=attnlab_env(), timeout=300)
        output = result.stdout + result.stderr
        what = f"{page_name(page)}: `{ran}` ({why})"
        assert result.returncode == 0, f"{what} exited {result.returncode}:\n{output}"
        assert re.search(EXPECTED[key], output, re.M), \
            f"{what} does not print /{EXPECTED[key]}/:\n{output}"
        for path in WRITES.get(key, []):
            assert (checkout / path).is_file(), f"{what} did not write {path}"
