"""The reference pages stay true to the program: docs/cli.md and docs/config.md equal what
tools/gen_docs.py generates from the built binary now; the sweep example in docs/config.md expands;
and docs/cluster.md's example profile renders, through `attnlab sweep --launcher slurm --dry-run`,
the #SBATCH lines the page shows, its key table lists exactly the keys the program accepts, and
the values the page says are refused are refused."""

import difflib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, run_attnlab

DOCS = ROOT / "docs"
GENERATOR = ROOT / "tools" / "gen_docs.py"
REVERSE = ROOT / "experiments" / "tasks" / "reverse.yaml"


def code_blocks(markdown, language):
    """Bodies of the fenced blocks of `language` in `markdown`, in order."""
    return re.findall(r"^```" + language + r"\n(.*?)^```", markdown, flags=re.S | re.M)


def test_generated_pages_are_current(attnlab, tmp_path):
    result = subprocess.run([sys.executable, str(GENERATOR), "--attnlab", str(attnlab),
                             "--out-dir", str(tmp_path)], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("cli.md", "config.md"):
        fresh = (tmp_path / name).read_text()
        committed = (DOCS / name).read_text() if (DOCS / name).is_file() else ""
        diff = "".join(difflib.unified_diff(
            committed.splitlines(keepends=True), fresh.splitlines(keepends=True),
            f"docs/{name} (committed)", f"docs/{name} (from the binary)"))
        assert not diff, (f"docs/{name} is stale; run /usr/bin/python3 tools/gen_docs.py "
                          f"and commit it:\n{diff[:4000]}")


def test_cli_page_covers_every_command(attnlab):
    top = run_attnlab(attnlab, "--help").stdout
    listed = re.findall(r"^  (\S+)\s", top.split("commands:\n", 1)[1].split("\n\n", 1)[0], re.M)
    page = (DOCS / "cli.md").read_text()
    assert len(listed) >= 10, top
    for command in listed:
        assert f"\n## attnlab {command}\n" in page, f"docs/cli.md has no section for {command}"


def test_config_page_lists_every_key(attnlab):
    reference = run_attnlab(attnlab, "config", "--reference").stdout
    keys = re.findall(r"^\| ([a-z_][a-z0-9_.]*) \|", reference, re.M)
    page = (DOCS / "config.md").read_text()
    # The five axes of the studies are among them.
    assert {"model.heads", "model.d_k", "model.norm", "model.positions", "model.attention_scale",
            "train.label_smoothing"} <= set(keys), keys
    table = page.split("\n## Every key\n", 1)[1]
    rows = [line for line in table.splitlines() if re.match(r"^\| [a-z_][a-z0-9_.]* \|", line)]
    assert [row.split(" | ")[0][2:] for row in rows] == keys
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)
        assert len(cells) == 6, f"not four cells: {row}"


def test_config_page_sweep_example_expands(attnlab, tmp_path):
    page = (DOCS / "config.md").read_text()
    (example,) = [b for b in code_blocks(page, "yaml") if "sweep:" in b]
    assert "base: reverse.yaml" in example
    sweep_file = tmp_path / "reverse_heads.yaml"
    sweep_file.write_text(example.replace("base: reverse.yaml", f"base: {REVERSE}"))
    out = run_attnlab(attnlab, "sweep", sweep_file, "--dry-run", "--out", tmp_path / "runs",
                      timeout=120).stdout
    assert "sweep reverse-heads: 4 runs" in out, out
    assert "would launch 4 run(s)" in out, out
    manifest = (tmp_path / "runs" / "reverse-heads" / "manifest.yaml").read_text()
    assert manifest.count("model.heads") == 4, manifest


# The cluster profile page.

def cluster_page():
    return (DOCS / "cluster.md").read_text()


def documented_profile_keys():
    table = cluster_page().split("## Keys", 1)[1].split("\n\n")
    rows = [block for block in table if block.startswith("| key |")][0].splitlines()[2:]
    return [re.match(r"\| `([a-z_]+)` \|", row).group(1) for row in rows]


def four_run_sweep(tmp_path):
    sweep_file = tmp_path / "four.yaml"
    sweep_file.write_text(f"base: {REVERSE}\nname: four\nsweep:\n  seeds: [1, 2, 3, 4]\n")
    return sweep_file


def dry_run_slurm(attnlab, tmp_path, profile_text, check=True):
    profile = tmp_path / "profile.yaml"
    profile.write_text(profile_text)
    return run_attnlab(attnlab, "sweep", four_run_sweep(tmp_path), "--launcher", "slurm",
                       "--profile", profile, "--dry-run", "--out", tmp_path / "runs",
                       timeout=120, check=check)


def test_cluster_example_renders_the_lines_shown(attnlab, tmp_path):
    blocks = code_blocks(cluster_page(), "yaml")
    (example,) = blocks
    out = dry_run_slurm(attnlab, tmp_path, example).stdout
    assert "4 array tasks" in out, out
    script = (tmp_path / "runs" / "four" / "slurm" / "array-1.sbatch").read_text()
    (shown,) = [b for b in code_blocks(cluster_page(), "text") if "#SBATCH" in b]
    rendered = [line for line in script.splitlines() if line.startswith("#SBATCH")]
    for line in shown.splitlines():
        assert line in rendered, f"{line!r} is not in the rendered script:\n{script}"
    # The lines come in the same order as in the script.
    positions = [rendered.index(line) for line in shown.splitlines()]
    assert positions == sorted(positions), rendered
    assert "export OPENBLAS_CORETYPE='Haswell'" in script
    assert "module load openmpi/4.1 hdf5/1.12" in script
    assert 'srun --mpi=pmix --ntasks="$ranks"' in script


def test_cluster_key_table_matches_the_program(attnlab, tmp_path):
    result = dry_run_slurm(attnlab, tmp_path, "no_such_key: 1\n", check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    accepted = result.stderr.split("a profile has ", 1)[1].strip().split(", ")
    assert sorted(accepted) == sorted(documented_profile_keys())


@pytest.mark.parametrize("line", [
    "time: 4h", "mem: 8 GB", "partition: cpu;rm", "launcher: ssh", "ranks: -1",
    "overcommit: maybe", "sbatch: ['--x=$(id)']", "env: {1BAD: x}", "sbatch: [-N2]",
])
def test_cluster_values_the_page_refuses_are_refused(attnlab, tmp_path, line):
    key = line.split(":", 1)[0]
    assert key in documented_profile_keys()
    result = dry_run_slurm(attnlab, tmp_path, line + "\n", check=False)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "profile.yaml" in result.stderr and key in result.stderr, result.stderr


def test_cluster_defaults_are_the_documented_ones(attnlab, tmp_path):
    # An empty profile: time 01:00:00, signal 120 s, no throttle, srun, the experiment's ranks.
    dry_run_slurm(attnlab, tmp_path, "")
    script = (tmp_path / "runs" / "four" / "slurm" / "array-1.sbatch").read_text()
    assert "#SBATCH --time=01:00:00\n" in script
    assert "#SBATCH --signal=B:USR1@120\n" in script
    assert "#SBATCH --array=0-3\n" in script
    assert "--partition" not in script and "--mem" not in script
    assert f"source '{ROOT}/cluster/env.sh'" in script
    page = cluster_page()
    assert "| `time` | Slurm time | `01:00:00` |" in page
    assert "| `signal_seconds` | integer >= 0 | `120` |" in page
