"""Everything the README points at exists, and what it says matches what the tree does.

Its commands are run by test_doc_commands.py (the tour, in order, in a scratch checkout). Here:
every `attnlab` command and option the README uses is in docs/cli.md, every make target is in the
Makefile, every path and link exists, `make run` does what the README says, the plan line of its
prose runs, and every measured number is quoted from the page it links."""

import os
import re
import shlex
import shutil
import subprocess

import pytest

from conftest import ROOT, run_attnlab
from test_doc_commands import page_commands

README = ROOT / "README.md"
CLI = ROOT / "docs" / "cli.md"
MAKEFILE = ROOT / "Makefile"
STUDY = "experiments/small/study.yaml"
STUDY_LONG = "experiments/small/study-long.yaml"

def readme():
    return README.read_text()


def readme_commands():
    """The words of each command of the README's sh blocks."""
    return [shlex.split(command) for command, _ in page_commands(README)]


def attnlab_invocations():
    """(command, [options]) of every `./build/attnlab` line of the README's shell blocks and every
    `attnlab <command>` named in its prose."""
    found = []
    for words in readme_commands():
        if words[0] == "./build/attnlab":
            found.append((words[1], [w.split("=")[0] for w in words[2:] if w.startswith("-")]))
    for text in re.findall(r"`(?:\./build/)?attnlab ([a-z]+)((?: [^`]*)?)`", readme()):
        command, rest = text
        found.append((command, re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", rest)))
    return found


def cli_sections():
    """{command: its --help text} from docs/cli.md."""
    page = CLI.read_text()
    return dict(re.findall(r"^## attnlab ([a-z]+)\n.*?```text\n(.*?)```", page, flags=re.S | re.M))


def make_targets():
    return set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE.read_text(), re.M))


# Static checks.

def test_every_attnlab_command_and_option_is_in_the_cli_reference():
    sections = cli_sections()
    invocations = attnlab_invocations()
    assert len(invocations) >= 15, invocations
    for command, options in invocations:
        assert command in sections, f"README uses `attnlab {command}`, not in docs/cli.md"
        for option in options:
            assert re.search(rf"(^|\s|\[ ){re.escape(option)}(\s|\]|$)", sections[command], re.M), \
                f"README uses `attnlab {command} {option}`, not in its --help (docs/cli.md)"


def test_every_make_target_exists():
    targets = make_targets()
    used = {words[1] for words in readme_commands() if words[0] == "make" and len(words) > 1}
    used |= set(re.findall(r"`make ([a-z-]+)", readme()))
    assert {"run", "test", "deps", "build"} <= used
    assert used <= targets, used - targets
    assert re.search(r"^\.DEFAULT_GOAL := all$", MAKEFILE.read_text(), re.M) and "all" in targets


# Paths a reader gets only after running something: they are checked by what makes them.
GENERATED = ("runs/", "runs-slurm/", "build/", "build-asan/", "data/bible/", ".ci/")


def test_every_path_and_link_exists():
    text = readme()
    missing = []
    links = re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", text)
    for target, anchor in links:
        path = ROOT / target
        if target.startswith(GENERATED):
            continue
        if not path.exists():
            missing.append(f"link {target}")
        elif anchor:
            headings = re.findall(r"^#+ (.*)$", path.read_text(), re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
            if anchor not in slugs:
                missing.append(f"heading #{anchor} in {target}")
    mentioned = set(re.findall(r"(?<![\w./<-])((?:[\w.-]+/)+[\w.-]+\.(?:yaml|md|py|sh|h5|txt))",
                               text))
    mentioned |= set(re.findall(r"`((?:core|tests|docs|analysis|cluster|tools|experiments)"
                                r"/[\w./-]*)`", text))
    assert len(mentioned) >= 15, mentioned
    for path in sorted(mentioned):
        if "<" not in path and not path.startswith(GENERATED) and not (ROOT / path).exists():
            missing.append(f"path {path}")
    assert not missing, "the README points at what does not exist: " + ", ".join(
        dict.fromkeys(missing))


def test_the_data_card_is_written_by_attnlab_data_bible():
    # The README links data/bible/DATA_CARD.md, which `attnlab data bible` (make run) writes.
    # bible.py names the card through datacard.py, which text.py (attnlab data text) shares.
    shared = (ROOT / "experiments" / "data" / "datacard.py").read_text()
    assert re.search(r'^CARD = "DATA_CARD.md"$', shared, re.M), "datacard.py no longer names it"
    script = (ROOT / "experiments" / "data" / "bible.py").read_text()
    assert re.search(r"^from datacard import \([^)]*\bCARD\b", script, re.M), \
        "bible.py no longer writes it"
    assert (ROOT / "tests" / "python" / "test_bible_data.py").is_file()


def test_make_run_does_what_the_readme_says():
    # make -n prints the commands with every variable expanded, running none of them.
    result = subprocess.run(["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    plan = result.stdout
    steps = ["dpkg-query", "cmake --build", "attnlab data bible --out data/bible",
             f"attnlab sweep {STUDY} --launcher local", "analysis.report runs/study",
             "runs/study/report/report.md"]
    positions = []
    for step in steps:
        assert step in plan, f"make run does not run {step!r}:\n{plan}"
        positions.append(plan.index(step))
    assert positions == sorted(positions), f"make run's steps are out of order:\n{plan}"
    text = readme()
    for part in ("attnlab data bible --out data/bible", STUDY, STUDY_LONG,
                 "experiments/small/budget.yaml",
                 "runs/study/report/report.md", "attnlab report runs/study"):
        assert part in text


# The values each axis takes in the study (width, label smoothing and the norm's place, on one
# rank a run, two runs at once) and in its longer form (the mission's five axes on two ranks),
# whose values the README lists.
STUDY_AXES = {
    STUDY: {"model.d_model": {"64", "32"}, "model.heads": {"8"}, "model.norm": {"post", "pre"},
            "model.positions": {"sinusoidal"}, "model.attention_scale": {"rsqrt_dk"},
            "train.label_smoothing": {"0.1", "0.0"}},
    STUDY_LONG: {"model.d_model": {"64"}, "model.heads": {"8", "1", "4"},
                 "model.norm": {"post", "pre"}, "model.positions": {"sinusoidal", "learned"},
                 "model.attention_scale": {"rsqrt_dk", "none", "inv_dk"},
                 "train.label_smoothing": {"0.1", "0.0"}},
}
STUDY_RANKS = {STUDY: 1, STUDY_LONG: 2}


@pytest.mark.parametrize("sweep_file", sorted(STUDY_AXES))
def test_the_studies_have_their_axes_and_ranks(attnlab, tmp_path, sweep_file):
    out = run_attnlab(attnlab, "sweep", ROOT / sweep_file, "--launcher", "local", "--dry-run",
                      "--out", tmp_path, timeout=120).stdout
    plan = [line for line in out.splitlines() if " train -c " in line]
    ranks = STUDY_RANKS[sweep_file]
    assert plan and all(("mpirun -np 2 " in line) == (ranks == 2) for line in plan), out
    # d_k = d_v = d_model / h in every run, read back from the config each run gets; every run
    # differs from the base in at most one axis.
    configs = sorted(tmp_path.glob("*/*/config.yaml"))
    assert len(configs) == len(plan), configs
    axes = {key: set() for key in STUDY_AXES[sweep_file]}
    paper = {"model.d_model": "64", "model.heads": "8", "model.norm": "post",
             "model.positions": "sinusoidal", "model.attention_scale": "rsqrt_dk",
             "train.label_smoothing": "0.1"}
    for config in configs:
        lines = run_attnlab(attnlab, "config", "-c", config, "--flat").stdout.splitlines()
        flat = dict(line.split("=", 1) for line in lines)
        heads, d_model = int(flat["model.heads"]), int(flat["model.d_model"])
        assert int(flat["model.d_k"]) * heads == d_model, (config, flat)
        assert int(flat["model.d_v"]) * heads == d_model, (config, flat)
        changed = [key for key in axes if flat[key] != paper[key]]
        assert len(changed) <= 1, (config, changed)
        for key, seen in axes.items():
            seen.add(flat[key])
    assert axes == STUDY_AXES[sweep_file], axes


def test_measured_numbers_are_quoted_from_the_linked_pages():
    section = readme().split("\n## Measured results\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "](" in line]
    assert len(rows) >= 2, section
    for row in rows:
        pages = re.findall(r"\]\(([^)#]+)", row)
        text = "".join((ROOT / page).read_text() for page in pages if (ROOT / page).is_file())
        cells = row.split(" | ")
        # Numbers in what/result cells, not inside the link targets or file names.
        body = re.sub(r"\[[^\]]*\]\([^)]*\)|`[^`]*`", "", " | ".join(cells[:-1]))
        for number in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?:x|%)?(?![\w.])", body):
            assert number in text, f"README quotes {number}, not found in {pages}: {row}"


def test_openblas_kernel_table_matches_env_sh():
    result = subprocess.run(["bash", "cluster/env.sh"], cwd=ROOT, capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"},
                            timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in {"SkylakeX", "Zen", "Haswell", ""}
    for name in ("SkylakeX", "Zen", "Haswell"):
        assert f"| `{name}` |" in readme()
        assert name in (ROOT / "cluster" / "env.sh").read_text()


def test_config_keys_named_in_the_readme_exist():
    page = (ROOT / "docs" / "config.md").read_text().split("\n## Every key\n", 1)[1]
    types = dict(re.findall(r"^\| ([a-z_][a-z0-9_.]*) \| (.*?) \| ", page, re.M))
    named = re.findall(r"`([a-z_]+(?:\.[a-z_]+)*)(?:: ([^`]+))?`", readme())
    checked = 0
    for key, value in named:
        matches = [k for k in types if k == key or k.endswith("." + key)]
        sections = {k.split(".")[0] for k in types if "." in k}
        if "." in key and key.split(".")[0] not in sections:
            continue  # a file name such as `table.csv`
        if "." not in key and not value:
            continue  # a plain word in backticks: a file, a command, a column
        if "." in key and not matches:
            assert any(k.startswith(key + ".") for k in types), \
                f"README names `{key}`, not a key or section in docs/config.md"
            checked += 1
            continue
        assert matches, f"README names `{key}: {value}`, not a key in docs/config.md"
        if value:
            choices = {c.strip() for c in types[matches[0]].replace("\\|", "|").split("|")}
            for item in (v.strip() for v in value.split("|")):
                assert item in choices or item.startswith("<"), \
                    f"README gives `{key}` the value {item!r}; docs/config.md allows {choices}"
        checked += 1
    assert checked >= 5, named


def test_the_plan_line_of_the_prose_runs_as_written(attnlab, tmp_path):
    """The README's `attnlab plan` line, word for word, in a directory laid out as a checkout
    whose runs/ holds the committed logs of that sweep: the per-core rate comes from its finished
    runs. (Without logs the rate comes from a calibration run on the sweep's corpus, data/bible;
    test_sweep_local.py calibrates a sweep with the same stop and plateau rules.)"""
    (line,) = re.findall(r"`\./build/attnlab (plan [^`]*)`", readme())
    words = shlex.split(line)
    sweep = words[1]
    for top in ("experiments", "cluster"):
        (tmp_path / top).symlink_to(ROOT / top)
    name = re.search(r"^name: (\S+)$", (ROOT / sweep).read_text(), re.M).group(1)
    shutil.copytree(ROOT / "docs" / "results" / name / "runs", tmp_path / "runs" / name)
    result = subprocess.run([str(attnlab), *words], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "calibrating" not in result.stdout, result.stdout
    for part in ("total: ", "core-hours", "left: ", "one run of base spread over nodes"):
        assert part in result.stdout, result.stdout
