"""The commit a build records (run logs, checkpoints, --version) is read at build time by
cmake/git_commit.cmake: checked here on a scratch repository (commit, dirty tree, new commit, no
repository, unchanged value leaves the header untouched) and on the built program."""

import hashlib
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, run_attnlab

SCRIPT = ROOT / "cmake" / "git_commit.cmake"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def generate(source, output):
    subprocess.run(["cmake", f"-DSOURCE_DIR={source}", f"-DOUTPUT={output}", "-P", str(SCRIPT)],
                   check=True, capture_output=True)
    return output.read_text()


def define(value, diff_sha256=""):
    return (f'#define ATTNLAB_GIT_COMMIT "{value}"\n'
            f'#define ATTNLAB_GIT_DIFF_SHA256 "{diff_sha256}"\n')


def test_the_header_follows_the_tree_and_is_rewritten_only_on_change(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.org")
    git(repo, "config", "user.name", "t")
    (repo / "a.txt").write_text("one\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    first = git(repo, "rev-parse", "--short=12", "HEAD")
    header = tmp_path / "out" / "attnlab_git_commit.h"
    assert generate(repo, header) == define(first)
    stamp = header.stat().st_mtime_ns
    assert generate(repo, header) == define(first)
    assert header.stat().st_mtime_ns == stamp, "an unchanged commit rewrote the header"

    (repo / "a.txt").write_text("two\n")
    # The changes' hash: SHA-256 of `git diff HEAD --binary`, computed here with hashlib.
    diff = subprocess.run(["git", "-C", str(repo), "diff", "HEAD", "--binary"], check=True,
                          capture_output=True).stdout
    assert generate(repo, header) == define(first + "-dirty", hashlib.sha256(diff).hexdigest())
    (repo / "a.txt").write_text("three\n")
    assert define(first + "-dirty", hashlib.sha256(diff).hexdigest()) != generate(repo, header), \
        "other changes on the same commit gave the same hash"
    (repo / "untracked.txt").write_text("not part of the build\n")
    git(repo, "commit", "-q", "-am", "two")
    second = git(repo, "rev-parse", "--short=12", "HEAD")
    assert second != first
    assert generate(repo, header) == define(second)

    plain = tmp_path / "plain"
    plain.mkdir()
    assert generate(plain, tmp_path / "plain.h") == define("unknown")


def test_the_program_reports_the_commit_it_was_built_from(attnlab):
    try:
        head = git(ROOT, "rev-parse", "--short=12", "HEAD")
    except subprocess.CalledProcessError:
        pytest.skip("not a git checkout")
    version = run_attnlab(attnlab, "--version").stdout
    match = re.search(r"\(git ([0-9a-f]{12})(-dirty)?\)", version)
    assert match, version
    assert match.group(1) == head, "the binary is older than HEAD: rebuild (make build)"
