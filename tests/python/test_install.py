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
