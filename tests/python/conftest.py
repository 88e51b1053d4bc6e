"""Shared fixtures: where the built attnlab binary is, and how to run it."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("ATTNLAB_BUILD_DIR", ROOT / "build"))


# Open MPI as root on a small shared machine: allow root, more ranks than cores, no pinning; one
# thread per rank.
MPI_TEST_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_rmaps_base_oversubscribe": "1",
                "OMPI_MCA_hwloc_base_binding_policy": "none",
                "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@pytest.fixture(scope="session")
def attnlab():
    """Path of the attnlab binary; the suite fails (not skips) when it has not been built."""
    binary = BUILD / "attnlab"
    assert binary.is_file(), f"{binary} is missing: build first (make build)"
    return binary


def attnlab_env(env=None):
    """This process's environment with one thread per rank (unless set), plus `env`: what every
    attnlab the tests start runs with, so that runs compared with each other also share
    OPENBLAS_CORETYPE (kernels differ in their last bits)."""
    full_env = dict(os.environ)
    full_env.setdefault("OMP_NUM_THREADS", "1")
    full_env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if env:
        full_env.update(env)
    return full_env


_DIRTY = {}


def built_dirty(binary):
    """Whether `binary` was built from a working tree with uncommitted changes (its --version)."""
    if binary not in _DIRTY:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
        _DIRTY[binary] = "-dirty)" in version
    return _DIRTY[binary]


def sweep_args(binary, args):
    """`attnlab sweep` refuses to launch from a build with uncommitted changes unless
    --allow-dirty is given (core/cluster/provenance.h); the suite tests sweeps, and the binary
    under test is often a development build, so its sweeps are launched with the flag then
    (test_sweep_local.py checks the refusal itself)."""
    args = [str(a) for a in args]
    if args[:1] == ["sweep"] and "--allow-dirty" not in args and built_dirty(binary):
        args.append("--allow-dirty")
    return args


def run_attnlab(binary, *args, env=None, timeout=600, check=True, allow_dirty=True):
    """Runs attnlab with one thread per rank and returns the CompletedProcess (a sweep from a
    dirty build with --allow-dirty unless `allow_dirty` is False)."""
    words = sweep_args(binary, args) if allow_dirty else [str(a) for a in args]
    result = subprocess.run([str(binary), *words], capture_output=True, text=True,
                            env=attnlab_env(env), timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"attnlab {' '.join(map(str, args))} exited {result.returncode}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: sweeps, Slurm clusters and recomputed reports; `make test-fast` leaves "
                   "them out (`make test` runs everything)")
