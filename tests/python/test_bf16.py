"""Mixed precision (train.precision: bf16) end to end: the shipped reverse task trained with bf16
matrix products reaches the exact-match accuracy fp32 reaches (>= 98%), the run records its
precision and engine; on a CPU without native bfloat16 products, asking for bf16 is refused with
exit code 2 and a message naming the key, the CPU's flags and the fix."""

import subprocess

import h5py
import pytest

from conftest import ROOT, run_attnlab

TASK = ROOT / "experiments" / "tasks" / "reverse.yaml"


def cpu_flags():
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


NATIVE_BF16 = bool(cpu_flags() & {"avx512_bf16", "amx_bf16"})
NO_BF16 = "this CPU has neither avx512_bf16 nor amx_bf16 (/proc/cpuinfo)"


@pytest.mark.slow
@pytest.mark.skipif(not NATIVE_BF16, reason=NO_BF16)
def test_reverse_task_learns_in_bf16(attnlab, tmp_path):
    out = tmp_path / "bf16"
    result = run_attnlab(attnlab, "train", "-c", TASK, "--set", "train.precision=bf16",
                         "--out", out, timeout=600)
    assert "bf16 products: oneDNN avx512_core" in result.stderr, result.stderr
    with h5py.File(out / "run.h5", "r") as f:
        summary = f["summary"].attrs
        assert summary["final_dev_accuracy"] >= 0.98, summary["final_dev_accuracy"]
        assert summary["matmul_engine"].startswith("bf16 products: oneDNN")
        assert f["config"].attrs["train.precision"] == "bf16"


def without_native_bf16(command, tmp_path):
    """`command` as a CPU without native bf16 would run it: directly where the CPU lacks it, else
    in a mount namespace whose /proc/cpuinfo has the flags avx512_bf16 and amx_bf16 removed."""
    if not NATIVE_BF16:
        return command
    with open("/proc/cpuinfo") as cpuinfo:
        text = cpuinfo.read()
    fake = tmp_path / "cpuinfo"
    fake.write_text(text.replace(" avx512_bf16", "").replace(" amx_bf16", ""))
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("the CPU has native bf16 and no mount namespace can hide it (needs root)")
    script = 'mount --bind "$0" /proc/cpuinfo && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", script, str(fake), *command]


def test_bf16_is_refused_on_a_cpu_without_it(attnlab, tmp_path):
    out = tmp_path / "refused"
    command = [str(attnlab), "train", "-c", str(TASK), "--set", "train.precision=bf16",
               "--out", str(out)]
    result = subprocess.run(without_native_bf16(command, tmp_path), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "train.precision is bf16 but this CPU has no native bfloat16 products" in result.stderr
    assert "neither avx512_bf16 nor amx_bf16" in result.stderr
    assert "--set train.precision=fp32" in result.stderr
    assert not (out / "run.h5").exists()
