"""`make install`: the install rules put attnlab and what it runs besides itself under a prefix,
and the installed program works from a directory outside the checkout with nothing of the
checkout on its paths: --help, `report` on a copy of committed runs (the installed analysis
package), `data text` (the installed corpus script)."""

import os
import shutil
import subprocess

import pytest

from conftest import BUILD, ROOT

PILOT = ROOT / "docs" / "results" / "pilot-bf16" / "runs"


@pytest.fixture(scope="module")
def prefix(attnlab, tmp_path_factory):
    """The build installed under a fresh prefix, as `make install PREFIX=...` does."""
    prefix = tmp_path_factory.mktemp("prefix")
    result = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(prefix)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return prefix


def run_installed(prefix, cwd, *args):
    """The installed attnlab found on PATH, started in `cwd`, with an environment that names
    nothing of the checkout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "ATTNLAB_BUILD_DIR") and str(ROOT) not in value}
    env["PATH"] = f"{prefix / 'bin'}:/usr/bin:/bin"
    env.setdefault("OMP_NUM_THREADS", "1")
    return subprocess.run(["attnlab", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_install_puts_the_program_and_its_python_under_the_prefix(prefix):
    share = prefix / "share" / "attnlab"
    assert os.access(prefix / "bin" / "attnlab", os.X_OK)
    for relative in ("analysis/report.py", "analysis/html_page.py", "analysis/studies/cli.py",
                     "experiments/data/text.py", "experiments/data/bible.py",
                     "experiments/data/datacard.py", "experiments/base.yaml",
                     "cluster/env.sh", "cluster/profiles/local.yaml"):
        assert (share / relative).is_file(), relative
    assert os.access(share / "cluster" / "env.sh", os.X_OK)
    assert not list(share.rglob("__pycache__")), "compiled caches were installed"


def test_installed_attnlab_runs_outside_the_checkout(prefix, tmp_path):
    work = tmp_path / "elsewhere"
    shutil.copytree(PILOT, work / "runs" / "pilot")
    help_text = run_installed(prefix, work, "--help")
    assert help_text.returncode == 0 and "report" in help_text.stdout, help_text.stderr

    report = run_installed(prefix, work, "report", "runs/pilot", "--format", "md,html",
                           "--no-figures")
    assert report.returncode == 0, report.stdout + report.stderr
    assert "report written to runs/pilot/report" in report.stdout
    assert "| precision-bf16 |" in (work / "runs" / "pilot" / "report" / "report.md").read_text()
    assert (work / "runs" / "pilot" / "report" / "report.html").is_file()

    # The corpus script runs from the installed tree: its own error about the missing file, not
    # the program's "cannot find experiments/data/text.py".
    data = run_installed(prefix, work, "data", "text", "--src", "absent.en", "--tgt", "absent.es",
                         "--out", "corpus")
    assert data.returncode != 0
    assert "absent.en" in data.stderr and "cannot find" not in data.stderr, data.stderr


# A tiny reverse-task sweep that names the installed experiments and profile (relative paths in a
# sweep file are relative to the file, and the profile to the working directory).
TINY_SWEEP = """\
base: {share}/experiments/tasks/reverse.yaml
name: installed
model: {{encoder_layers: 1, decoder_layers: 1, d_model: 32, d_ff: 64, heads: 4, d_k: 8, d_v: 8}}
data: {{synthetic: {{train_size: 200, dev_size: 20}}}}
train: {{batch_tokens: 400, steps: 4}}
cluster: {{ranks: 2, threads_per_rank: 1}}
sweep:
  seeds: [1]
"""


def test_the_commands_a_sweep_writes_name_the_installed_program(prefix, tmp_path):
    """An installed attnlab's sweep writes commands that run as written: the local plan starts
    the installed binary under mpirun, and the Slurm script runs it and sources the installed
    cluster/env.sh."""
    share = prefix / "share" / "attnlab"
    (tmp_path / "installed.yaml").write_text(TINY_SWEEP.format(share=share))
    binary = str(prefix / "bin" / "attnlab")
    local = run_installed(prefix, tmp_path, "sweep", "installed.yaml", "--launcher", "local",
                          "--dry-run", "--out", "runs")
    assert local.returncode == 0, local.stdout + local.stderr
    assert "mpirun -np 2 " in local.stdout and f"{binary} train -c " in local.stdout, local.stdout
    slurm = run_installed(prefix, tmp_path, "sweep", "installed.yaml", "--launcher", "slurm",
                          "--profile", share / "cluster" / "profiles" / "local.yaml", "--dry-run",
                          "--out", "runs-slurm")
    assert slurm.returncode == 0, slurm.stdout + slurm.stderr
    script = (tmp_path / "runs-slurm" / "installed" / "slurm" / "array-1.sbatch").read_text()
    assert f"source '{share / 'cluster' / 'env.sh'}'" in script, script
    assert binary in script, script


def test_make_install_installs_the_build_under_prefix():
    """`make install` builds the program and runs the install rules under PREFIX (the rules
    themselves are what the tests above install); /usr/local without one."""
    def plan(*variables):
        result = subprocess.run(["make", "-n", "install", "BUILD_DIR=build", *variables], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout
    assert "cmake --install build --prefix /opt/attnlab" in plan("PREFIX=/opt/attnlab")
    assert "cmake --install build --prefix /usr/local" in plan()
    assert "--target attnlab" in plan()
