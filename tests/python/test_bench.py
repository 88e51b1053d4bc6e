"""bench/run_bench.py and the bench binaries: the page renders from raw results alone (the
committed page unchanged, the bf16 section with its ratios and verdicts from a small synthetic
run, one line saying why where bf16 was not measured), bf16 rows run in the same alternation as
the fp32 ones, and attnlab_train_bench / attnlab_kernels record their precision and refuse or
leave out bf16 on a CPU without native bf16 products."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT
from test_bf16 import NATIVE_BF16, without_native_bf16

BENCH = ROOT / "bench"
PAGE = ROOT / "docs" / "results" / "bench.md"


def load_run_bench():
    sys.path.insert(0, str(BENCH))  # run_bench imports bench_configs from its own directory
    try:
        spec = importlib.util.spec_from_file_location("run_bench", BENCH / "run_bench.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


run_bench = load_run_bench()


def bench_binary(name):
    binary = BUILD / "bench" / name
    assert binary.is_file(), f"{binary} is missing: build first (make build)"
    return binary


def render(raw, tmp_path):
    """The page run_bench.py --render-from writes from a page holding only `raw`."""
    source, output = tmp_path / "raw.md", tmp_path / "page.md"
    source.write_text(f"{run_bench.RAW_BEGIN}\n{json.dumps(raw)}\n{run_bench.RAW_END}\n")
    done = subprocess.run([sys.executable, str(BENCH / "run_bench.py"), "--render-from",
                           str(source), "--output", str(output)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return output.read_text()


def result(impl, config, tokens_per_s, precision="fp32", **fields):
    """One bench process's JSON with every field the page reads; 2048 tokens per step."""
    step = 2048 / tokens_per_s
    values = {
        "impl": impl, "config": config, "threads": 1, "precision": precision,
        "tokens_per_s": tokens_per_s, "tokens_per_cpu_s": tokens_per_s, "step_s": step,
        "step_cpu_s": step, "forward_s": step / 3, "backward_s": step / 2,
        "optimizer_s": step / 6, "loss": 9.4, "peak_rss_mib": 300.0, "flops_per_token": 1e8,
        "sgemm_peak_gflops": 100.0, "sgemm_peak_cpu_gflops": 100.0, "bf16_peak_gflops": 0.0,
        "bf16_peak_cpu_gflops": 0.0, "mfu": 0.5, "mfu_cpu": 0.5, "greedy_s": 1.0,
        "greedy_cpu_s": 1.0, "greedy_tokens": 1024, "beam": 0, "beam_s": 0.0, "beam_cpu_s": 0.0,
        "beam_tokens": 0, "decode_batch": 32, "openblas_core": "Cooperlake",
        "torch_version": "1.13.0a0", "onednn_isa": "",
    }
    if impl == "attnlab" and precision == "bf16":
        values.update(bf16_peak_gflops=200.0, bf16_peak_cpu_gflops=200.0,
                      onednn_isa="avx512_core_bf16")
    values.update(fields)
    return values


def synthetic_raw(bf16_reason=""):
    """Three configurations at one thread; the bf16 ratios chosen to land on both verdicts:
    bf16/fp32 2.0x on base (met) and 1.4x on small (missed), bf16/autocast 2.0x on tiny and
    1.6x on base (met) and 1.4x on small (missed), base bf16 MFU 75% (met)."""
    tokens = {  # attnlab fp32, PyTorch fp32, attnlab bf16, PyTorch autocast-bf16
        "tiny": (1000.0, 500.0, 1600.0, 800.0),
        "small": (300.0, 250.0, 420.0, 300.0),
        "base": (40.0, 30.0, 80.0, 50.0),
    }
    rows, results = [], {}
    for config, (fp32, torch_fp32, bf16, torch_bf16) in tokens.items():
        rows.append({"config": config, "threads": 1, "steps": 2, "warmup": 1, "repeats": 1,
                     "decode": True, "beam": 0})
        results[f"{config} t1"] = {
            "attnlab": [result("attnlab", config, fp32)],
            "torch": [result("torch", config, torch_fp32)],
            "attnlab_bf16": [] if bf16_reason else [
                result("attnlab", config, bf16, "bf16", mfu=0.75, mfu_cpu=0.8,
                       greedy_s=0.0, greedy_tokens=0)],
            "torch_bf16": [] if bf16_reason else [
                result("torch", config, torch_bf16, "bf16", greedy_s=0.0, greedy_tokens=0)],
        }
    kernels = {"1": [
        {"name": "sgemm_peak/1024x1024x1024", "real_time": 22.0, "cpu_time": 22.0,
         "time_unit": "ms", "FLOPS": 9.6e10},
        {"name": "bf16_peak/1024x1024x1024", "real_time": 11.0, "cpu_time": 11.0,
         "time_unit": "ms", "FLOPS": 2.0e11},
    ]}
    context = {"mode": "full run", "date": "2026-12-03 03:00", "commit": "0123456789ab",
               "minutes": 1.0, "cpu": "test CPU", "cores": 2, "load_start": "0.00 0.00 0.00",
               "load_end": "0.00 0.00 0.00", "coretype": "",
               "coretype_source": "chosen by OpenBLAS",
               "bf16": {"reason": bf16_reason}}
    return {"rows": rows, "results": results, "kernels": kernels, "context": context}


def section(page, heading):
    """The lines under `heading` up to the next heading of any level."""
    lines = page.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def table_row(lines, prefix):
    matches = [line for line in lines if line.startswith(prefix)]
    assert len(matches) == 1, (prefix, lines)
    return [cell.strip() for cell in matches[0].strip("|").split("|")]


def test_committed_page_renders_unchanged_from_its_raw_results(tmp_path):
    output = tmp_path / "bench.md"
    subprocess.run([sys.executable, str(BENCH / "run_bench.py"), "--render-from", str(PAGE),
                    "--output", str(output)], check=True, capture_output=True, timeout=60)
    assert output.read_text() == PAGE.read_text()


def test_verdicts_state_the_shortfall_with_the_digits_that_show_it():
    # 1.997x against 2x is 0.15% short and needs 2 / 1.997 = 1.0015x: never "MISSED by 0%".
    assert run_bench.verdict(1.997, 2.0) == "MISSED by 0.15% (needs 1.0015x faster)"
    assert run_bench.verdict(1.5, 2.0) == "MISSED by 25% (needs 1.33x faster)"
    assert run_bench.verdict(2.5, 2.0) == "met, 1.25x the target"
    # Limits (lower is better): 0.502 against 0.5 is 0.40% over.
    assert run_bench.verdict(0.502, 0.5, higher_is_better=False) == (
        "MISSED by 0.40% (needs 1.0040x less)")
    assert run_bench.verdict(0.64, 0.5, higher_is_better=False) == "MISSED by 28% (needs 1.28x less)"
    assert run_bench.verdict(0.25, 0.5, higher_is_better=False) == "met, 2.00x below the limit"


def test_an_mfu_above_100_percent_gets_no_verdict(tmp_path):
    # A step cannot run its products faster than the peak product: 114.5% says the peak was
    # measured low, and neither "met" nor "MISSED" may stand on it.
    assert run_bench.mfu_verdict(1.145, 0.8) == (
        "not judged: an MFU of 114.5% means the peak was measured below the rate the step reached")
    assert run_bench.mfu_verdict(1.0, 0.8) == "met, 1.25x the target"
    assert run_bench.mfu_verdict(0.869, 0.9) == "MISSED by 3% (needs 1.04x faster)"
    raw = synthetic_raw()
    raw["results"]["base t1"]["attnlab_bf16"][0].update(mfu=1.2, mfu_cpu=1.145)
    raw["results"]["base t1"]["attnlab"][0].update(mfu=1.03, mfu_cpu=1.03)
    page = render(raw, tmp_path)
    bf16 = table_row(section(page, "### bf16 model FLOPs utilisation"), "| base | 1 |")
    assert bf16[6] == (">= 80% (CPU): not judged: an MFU of 114.5% means the peak was measured "
                       "below the rate the step reached")
    fp32 = table_row(section(page, "## Model FLOPs utilisation"), "| base | 1 |")
    assert fp32[6].startswith(">= 90%: not judged: an MFU of 103.0%")


def test_bf16_section_renders_ratios_and_verdicts(tmp_path):
    page = render(synthetic_raw(), tmp_path)
    assert "## bf16 matrix products (attnlab --precision bf16, PyTorch autocast-bf16)" in page
    assert "oneDNN (avx512_core_bf16)" in page

    speedup = section(page, "### attnlab bf16 / attnlab fp32 (target tokens/s)")
    tiny = table_row(speedup, "| tiny | 1 |")
    assert tiny[2:7] == ["1600.0", "1000.0", "1.60x", "-", "-"]
    small = table_row(speedup, "| small | 1 |")
    assert small[4:6] == ["1.40x", ">= 1.5x"] and small[6].startswith("MISSED by 7%")
    base = table_row(speedup, "| base | 1 |")
    assert base[4:6] == ["2.00x", ">= 1.8x"] and base[6] == "met, 1.11x the target"
    # 200 GFLOP/s over 40 fp32 tok/s at 1e8 FLOPs each: 50x at 100% bf16 MFU.
    assert base[8] == "50.00x"

    versus = section(page, "### attnlab bf16 / PyTorch autocast-bf16 (target tokens/s)")
    assert table_row(versus, "| tiny | 1 |")[4:7] == ["2.00x", ">= 1.5x", "met, 1.33x the target"]
    assert table_row(versus, "| small | 1 |")[6].startswith("MISSED by 7%")
    base = table_row(versus, "| base | 1 |")
    assert base[4:7] == ["1.60x", ">= 1.5x", "met, 1.07x the target"]
    assert base[9] == "1.67x"  # PyTorch autocast-bf16 / PyTorch fp32: 50 / 30

    mfu = section(page, "### bf16 model FLOPs utilisation")
    base = table_row(mfu, "| base | 1 |")
    assert base[2:4] == ["200.0 / 200.0", "2.00x"]
    assert base[4] == "75.0% / 80.0%" and base[5] == "2.5% / 2.5%"
    assert base[6] == ">= 80% (CPU): met, 1.00x the target"  # mfu_cpu 80%, wall mfu 75%
    assert table_row(mfu, "| small | 1 |")[6] == ""
    assert any("1 thread: bf16 200.0, sgemm 96.0 GFLOP/s" in line for line in mfu)

    split = section(page, "### bf16 step time split")
    assert table_row(split, "| base | 1 | attnlab_bf16 |")[6] == "25600.0"
    assert table_row(split, "| base | 1 | torch_bf16 |")[6] == "40960.0"
    # The fp32 tables hold only the fp32 processes.
    training = section(page, "## Training throughput (target tokens/s)")
    assert table_row(training, "| base | 1 |")[2:5] == ["40.0", "30.0", "1.33x"]
    assert "attnlab_bf16" not in "\n".join(section(page, "## Step time split"))


def test_page_says_in_one_line_why_bf16_was_not_measured(tmp_path):
    reason = "this CPU has neither avx512_bf16 nor amx_bf16 (/proc/cpuinfo)"
    page = render(synthetic_raw(bf16_reason=reason), tmp_path)
    lines = section(page, "## bf16 matrix products (attnlab --precision bf16, PyTorch "
                          "autocast-bf16)")
    assert [line for line in lines if line] == [
        f"Not measured: {reason}; the bf16 rows were skipped."]
    assert "### attnlab bf16" not in page
    # The fp32 content is all there.
    assert table_row(section(page, "## Training throughput (target tokens/s)"),
                     "| small | 1 |")[2:5] == ["300.0", "250.0", "1.20x"]


def test_pages_from_before_bf16_rows_have_no_bf16_section(tmp_path):
    raw = synthetic_raw()
    del raw["context"]["bf16"]
    for key in raw["results"]:
        del raw["results"][key]["attnlab_bf16"], raw["results"][key]["torch_bf16"]
    page = render(raw, tmp_path)
    assert "## bf16" not in page and "attnlab bf16" not in page and "Not measured" not in page


def cpuinfo(vendor, family, model, name, flags):
    return (f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"model name\t: {name}\nstepping\t: 1\nflags\t\t: fpu {flags}\n\nprocessor\t: 1\n")


def test_the_cpu_line_says_which_machine_made_the_page():
    describe = run_bench.cpu_description
    # Three machines a hypervisor shows alike as "AMD EPYC", told apart by family and AVX-512.
    assert describe(cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC", "avx2 fma")) == (
        "AMD EPYC (Zen 3, family 25, model 1, stepping 1; avx2)")
    assert describe(cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC", "avx2 avx512f avx512_bf16")) == (
        "AMD EPYC (Zen 4, family 25, model 17, stepping 1; avx2, avx512f, avx512_bf16)")
    assert describe(cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC", "avx2 avx512f avx512_bf16")) == (
        "AMD EPYC (Zen 5, family 26, model 2, stepping 1; avx2, avx512f, avx512_bf16)")
    # Intel: no generation is guessed; AMX shows in the features.
    assert describe(cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Processor",
                            "avx2 avx512f avx512_bf16 amx_tile amx_bf16")) == (
        "Intel(R) Xeon(R) Processor (family 6, model 143, stepping 1; "
        "avx2, avx512f, avx512_bf16, amx_bf16)")
    assert describe("vendor_id\t: AuthenticAMD\nmodel name\t: Old\nflags\t: fpu sse2\n") == (
        "Old (none of avx2, avx512f, avx512_bf16, amx_bf16)")


def test_the_page_names_the_cpu_from_cpuinfo(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC", "avx2 avx512f"))
    assert run_bench.machine(path) == ("AMD EPYC (Zen 5, family 26, model 2, stepping 1; "
                                       "avx2, avx512f)", os.cpu_count())


def test_bf16_rows_follow_the_cpu_flags(tmp_path):
    reason = run_bench.bf16_unsupported_reason
    assert reason("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n") == ""
    assert reason("flags\t\t: fpu avx2 amx_tile amx_bf16\n") == ""
    assert "neither avx512_bf16 nor amx_bf16" in reason("flags\t\t: fpu avx2 avx512f\n")

    class Args:
        no_bf16 = False

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: fpu avx512f avx512_bf16\n")
    assert run_bench.bf16_plan(Args, cpuinfo) == (run_bench.FP32_IMPLS + run_bench.BF16_IMPLS,
                                                  "")
    cpuinfo.write_text("flags\t\t: fpu avx2\n")
    impls, why = run_bench.bf16_plan(Args, cpuinfo)
    assert impls == run_bench.FP32_IMPLS and "neither avx512_bf16" in why
    Args.no_bf16 = True
    assert run_bench.bf16_plan(Args, tmp_path / "absent") == (run_bench.FP32_IMPLS,
                                                              "skipped with --no-bf16")


def test_bf16_rows_alternate_with_the_fp32_rows():
    # fp32 alone: the order of the runs before bf16 rows existed.
    assert run_bench.run_order(run_bench.FP32_IMPLS, 0, 0) == ["attnlab", "torch"]
    assert run_bench.run_order(run_bench.FP32_IMPLS, 0, 1) == ["torch", "attnlab"]
    impls = run_bench.FP32_IMPLS + run_bench.BF16_IMPLS
    firsts = [run_bench.run_order(impls, repeat, 0)[0] for repeat in range(4)]
    assert sorted(firsts) == sorted(impls)
    assert all(sorted(run_bench.run_order(impls, r, i)) == sorted(impls)
               for r in range(3) for i in range(3))


def test_bf16_commands_train_only_at_bf16():
    row = run_bench.Row("small", 2, 3, 1, 3, True, 4)
    commands = run_bench.bench_commands(row, BUILD)
    for impl in ("attnlab", "torch"):
        assert "--precision" not in commands[impl]
        assert commands[impl][-4:] == ["--decode-repeats", "1", "--beam", "4"]
    for impl in run_bench.BF16_IMPLS:
        command = commands[impl]
        assert command[-6:] == ["--decode-repeats", "0", "--beam", "0", "--precision", "bf16"]
        assert command[command.index("--threads") + 1] == "2"
    assert commands["torch_bf16"][1].endswith("torch_reference.py")


def run_train_bench(*args):
    command = [str(bench_binary("attnlab_train_bench")), "--config", "tiny", "--steps", "1",
               "--warmup", "0", "--decode-repeats", "0", "--beam", "0", "--peak-repeats", "1",
               *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_train_bench_records_fp32_precision():
    done = run_train_bench()
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["precision"] == "fp32"
    assert line["bf16_peak_gflops"] == 0 and line["onednn_isa"] == ""
    assert line["sgemm_peak_gflops"] > 0


@pytest.mark.skipif(not NATIVE_BF16, reason="this CPU has neither avx512_bf16 nor amx_bf16")
def test_train_bench_records_bf16_precision_and_its_peak():
    done = run_train_bench("--precision", "bf16")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["precision"] == "bf16"
    assert line["onednn_isa"].startswith("avx512_core")
    assert line["bf16_peak_gflops"] > 0 and line["sgemm_peak_gflops"] > 0
    # MFU is over the bf16 peak in a bf16 run.
    expected = line["tokens_per_s"] * line["flops_per_token"] / (line["bf16_peak_gflops"] * 1e9)
    assert line["mfu"] == pytest.approx(expected, rel=1e-3)


def test_train_bench_rejects_an_unknown_precision():
    done = run_train_bench("--precision", "fp16")
    assert done.returncode == 1
    assert "--precision 'fp16' must be one of fp32 | bf16" in done.stderr


def test_train_bench_refuses_bf16_on_a_cpu_without_it(tmp_path):
    command = [str(bench_binary("attnlab_train_bench")), "--config", "tiny", "--steps", "1",
               "--decode-repeats", "0", "--precision", "bf16"]
    done = subprocess.run(without_native_bf16(command, tmp_path), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "--precision bf16 but this CPU has no native bfloat16 products" in done.stderr
    assert "neither avx512_bf16 nor amx_bf16" in done.stderr
    assert "use --precision fp32" in done.stderr
    assert done.stdout == ""


def run_kernels_peaks(tmp_path, native):
    command = [str(bench_binary("attnlab_kernels")), "--benchmark_filter=_peak/",
               "--benchmark_min_time=0.01", "--benchmark_format=json"]
    if not native:
        command = without_native_bf16(command, tmp_path)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return report["context"]["bf16"], [b["name"] for b in report["benchmarks"]]


@pytest.mark.skipif(not NATIVE_BF16, reason="this CPU has neither avx512_bf16 nor amx_bf16")
def test_kernels_measure_the_bf16_peak_beside_sgemm(tmp_path):
    context, names = run_kernels_peaks(tmp_path, native=True)
    assert context.startswith("oneDNN avx512_core")
    assert names == ["sgemm_peak/1024x1024x1024", "bf16_peak/1024x1024x1024"]


def test_kernels_leave_bf16_out_on_a_cpu_without_it(tmp_path):
    context, names = run_kernels_peaks(tmp_path, native=False)
    assert "neither avx512_bf16 nor amx_bf16" in context
    assert names == ["sgemm_peak/1024x1024x1024"]


def two_thread_raw(busy_start="0.02"):
    """synthetic_raw plus a 2-thread row per configuration, the speed-ups chosen for both
    verdicts: attnlab fp32 1.6x on tiny (met, 1.5x), 1.7x on small (missed, 1.8x), 1.9x on base
    (met); attnlab bf16 1.2x on base (missed); PyTorch 0.8x on tiny (slower than one thread); with
    idle threads spinning (the _spin rows, 2 threads only) attnlab fp32 1.85x on small (met) and
    bf16 1.5x on base (missed). Each second thread costs a quarter more CPU time; OpenBLAS's own
    sgemm scales 1.9x."""
    raw = synthetic_raw()
    speedups = {"tiny": (1.6, 0.8, 1.5), "small": (1.7, 1.2, 1.8), "base": (1.9, 1.5, 1.2)}
    spinning = {"tiny": (1.7, 1.6), "small": (1.85, 1.9), "base": (1.95, 1.5)}
    for config, (attnlab, torch, bf16) in speedups.items():
        raw["rows"].append({"config": config, "threads": 2, "steps": 2, "warmup": 1,
                            "repeats": 1, "decode": False, "beam": 0})
        one = raw["results"][f"{config} t1"]
        two = {}
        spin_fp32, spin_bf16 = spinning[config]
        for impl, factor in (("attnlab", attnlab), ("torch", torch), ("attnlab_bf16", bf16),
                             ("torch_bf16", torch), ("attnlab_spin", spin_fp32),
                             ("attnlab_bf16_spin", spin_bf16)):
            base = one[impl.removesuffix("_spin")][0]
            two[impl] = [dict(base, threads=2, tokens_per_s=base["tokens_per_s"] * factor,
                              tokens_per_cpu_s=base["tokens_per_cpu_s"] / 1.25,
                              openblas_sgemm_peak_gflops=190.0)]
        one["torch"][0]["openblas_sgemm_peak_gflops"] = 100.0
        raw["results"][f"{config} t2"] = two
    raw["context"]["busy_start"] = busy_start
    return raw


def test_threads_section_judges_each_speed_up_against_its_target(tmp_path):
    page = render(two_thread_raw(), tmp_path)
    rows = section(page, "## Threads: 2 threads over 1 (target tokens/s)")
    tiny = table_row(rows, "| tiny | attnlab |")
    assert tiny[2:6] == ["1000.0", "1600.0", "1.60x", ">= 1.5x"] and tiny[6].startswith("met")
    assert tiny[7:10] == ["80.0%", "1.90x", "0.84"]
    small = table_row(rows, "| small | attnlab |")
    assert small[4:6] == ["1.70x", ">= 1.8x"] and small[6].startswith("MISSED by 6%")
    assert table_row(rows, "| base | attnlab |")[6].startswith("met")
    assert table_row(rows, "| base | attnlab_bf16 |")[6].startswith("MISSED by 33%")
    # The spinning rows: 2 threads with GOMP_SPINCOUNT against the default's 1 thread.
    small_spin = table_row(rows, "| small | attnlab_spin |")
    assert small_spin[2:6] == ["300.0", "555.0", "1.85x", ">= 1.8x"]
    assert small_spin[6].startswith("met")
    assert table_row(rows, "| base | attnlab_bf16_spin |")[6].startswith("MISSED by 17%")
    assert "GOMP_SPINCOUNT=100000" in "\n".join(rows)
    assert table_row(rows, "| tiny | torch |")[4:7] == ["0.80x", "-", "slower than 1 thread"]
    assert table_row(rows, "| small | torch |")[6] == "-"
    assert "No other process ran when the bench started" in page


def test_threads_section_does_not_judge_wall_clock_on_a_loaded_machine(tmp_path):
    page = render(two_thread_raw(busy_start="0.95"), tmp_path)
    rows = section(page, "## Threads: 2 threads over 1 (target tokens/s)")
    assert table_row(rows, "| tiny | attnlab |")[6] == "not judged: the machine was loaded"
    assert table_row(rows, "| tiny | attnlab |")[7] == "80.0%"
    assert "The machine is shared" in page
    assert "other processes kept 0.95 cores busy over the 3 s before the bench started" in page


def test_pages_without_a_busy_measurement_read_the_load_average(tmp_path):
    raw = two_thread_raw()
    del raw["context"]["busy_start"]
    raw["context"]["load_start"] = "1.50 1.20 1.00"
    rows = section(render(raw, tmp_path), "## Threads: 2 threads over 1 (target tokens/s)")
    assert table_row(rows, "| base | attnlab |")[6] == "not judged: the machine was loaded"


def test_one_thread_pages_have_no_threads_section(tmp_path):
    assert "## Threads" not in render(synthetic_raw(), tmp_path)


def test_attnlab_runs_as_the_program_sets_itself_and_pytorch_as_usual(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    attnlab = run_bench.child_env(2, "Zen", "attnlab_bf16")
    assert (attnlab["OMP_NUM_THREADS"], attnlab["OPENBLAS_NUM_THREADS"],
            attnlab["OMP_WAIT_POLICY"]) == ("2", "1", "passive")
    torch = run_bench.child_env(2, "Zen", "torch")
    assert (torch["OMP_NUM_THREADS"], torch["OPENBLAS_NUM_THREADS"]) == ("2", "2")
    assert "OMP_WAIT_POLICY" not in torch
    assert "GOMP_SPINCOUNT" not in attnlab
    spinning = run_bench.child_env(2, "Zen", "attnlab_bf16_spin")
    assert (spinning["OMP_WAIT_POLICY"], spinning["GOMP_SPINCOUNT"]) == ("passive", "100000")
    assert "GOMP_SPINCOUNT" not in torch
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    assert run_bench.child_env(2, "Zen")["OMP_WAIT_POLICY"] == "active"


def test_rss_verdicts_hold_in_both_precisions(tmp_path):
    # base: fp32 700 / 1,500 MiB = 0.47x (met); bf16 780 / 1,200 = 0.65x (missed: needs 1.30x
    # less); small has no bf16 runs, so it has no bf16 row.
    raw = synthetic_raw()
    base = raw["results"]["base t1"]
    for impl, mib in (("attnlab", 700.0), ("torch", 1500.0), ("attnlab_bf16", 780.0),
                      ("torch_bf16", 1200.0)):
        base[impl][0]["peak_rss_mib"] = mib
    raw["results"]["small t1"]["attnlab_bf16"] = []
    rows = section(render(raw, tmp_path), "## Peak RSS while training (VmHWM after the training "
                                          "steps)")
    fp32 = table_row(rows, "| base | 1 | fp32 |")
    assert fp32[3:6] == ["700", "1500", "0.47x"] and fp32[7].startswith("met")
    bf16 = table_row(rows, "| base | 1 | bf16 |")
    assert bf16[3:6] == ["780", "1200", "0.65x"] and bf16[7].startswith("MISSED by 30%")
    assert not [line for line in rows if line.startswith("| small | 1 | bf16 |")]
    assert table_row(rows, "| small | 1 | fp32 |")[5] == "1.00x"


def test_rss_breakdown_sets_each_component_beside_the_peak(tmp_path):
    raw = synthetic_raw()
    parts = {"memory_parameters_mib": 100.0, "memory_gradients_mib": 100.0,
             "memory_adam_mib": 200.0, "memory_activations_mib": 150.0,
             "memory_logits_mib": 50.0, "memory_scratch_mib": 20.0}
    raw["results"]["base t1"]["attnlab"][0].update(parts, peak_rss_mib=700.0)
    page = render(raw, tmp_path)
    rows = section(page, "### attnlab's peak RSS by component (one thread)")
    assert table_row(rows, "| base |") == ["base", "700", "100", "100", "200", "150", "50", "20",
                                           "80"]
    assert not [line for line in rows if line.startswith("| tiny |")]  # no breakdown recorded


def test_decoding_verdicts_are_per_flop_for_greedy_and_5x_for_beam(tmp_path):
    # small: PyTorch's greedy takes 6.4x attnlab's CPU time and its re-run loop does FLOP ratio
    # F times the KV cache's multiply-adds, so attnlab runs 6.4 / F of PyTorch's speed per FLOP;
    # beam 4 takes 5.5x (met) on small and 4.4x (missed) on base.
    raw = synthetic_raw()
    flop_ratio = {}
    for config, greedy_ratio, beam_ratio in (("small", 6.4, 5.5), ("base", 12.0, 4.4)):
        raw["rows"] = [r for r in raw["rows"] if r["config"] != "tiny"]
        for r in raw["rows"]:
            r["beam"] = 4
        run = raw["results"][f"{config} t1"]
        run["attnlab"][0].update(greedy_s=1.0, greedy_cpu_s=1.0, beam=4, beam_s=2.0,
                                 beam_cpu_s=2.0, beam_tokens=1024)
        run["torch"][0].update(greedy_s=greedy_ratio, greedy_cpu_s=greedy_ratio, beam=4,
                               beam_s=2.0 * beam_ratio, beam_cpu_s=2.0 * beam_ratio,
                               beam_tokens=1024)
        rerun = run_bench.decode_macs(config, run_bench.DECODE_SOURCE, run_bench.NEW_TOKENS,
                                      cached=False)
        cached = run_bench.decode_macs(config, run_bench.DECODE_SOURCE, run_bench.NEW_TOKENS,
                                       cached=True)
        flop_ratio[config] = rerun / cached
    lines = section(render(raw, tmp_path), "## Decoding speed (sentences/s, one thread)")
    small = table_row(lines, "| small | greedy |")
    per_flop = 6.4 / flop_ratio["small"]
    assert small[6] == f"{flop_ratio['small']:.1f}x" and small[7] == f"{per_flop:.2f}"
    assert small[10] == ">= 1 per FLOP" and small[11].startswith("MISSED by")
    base = table_row(lines, "| base | greedy |")
    assert base[7] == f"{12.0 / flop_ratio['base']:.2f}" and base[11].startswith("met")
    assert base[8:10] == ["-", "-"]  # no decode_gemm or decode_step rows measured: no ceilings
    assert table_row(lines, "| small | beam 4 |")[10:12] == [">= 5x", "met, 1.10x the target"]
    assert table_row(lines, "| base | beam 4 |")[11].startswith("MISSED by 12%")


def base_greedy_row(tmp_path, rates):
    """The base greedy row rendered from attnlab's 1 CPU s and PyTorch's 8 for the batch, with the
    kernel rows `rates` ({name: FLOP/s}), and the rerun and cached multiply-adds per sentence."""
    raw = synthetic_raw()
    raw["rows"] = [r for r in raw["rows"] if r["config"] == "base"]
    run = raw["results"]["base t1"]
    run["attnlab"][0].update(greedy_s=1.0, greedy_cpu_s=1.0)
    run["torch"][0].update(greedy_s=8.0, greedy_cpu_s=8.0)
    raw["kernels"] = {"1": [{"name": n, "real_time": 1.0, "cpu_time": 1.0, "time_unit": "ms",
                             "FLOPS": rate} for n, rate in rates.items()]}
    rerun = run_bench.decode_macs("base", run_bench.DECODE_SOURCE, run_bench.NEW_TOKENS,
                                  cached=False)
    cached = run_bench.decode_macs("base", run_bench.DECODE_SOURCE, run_bench.NEW_TOKENS,
                                   cached=True)
    greedy = table_row(section(render(raw, tmp_path), "## Decoding speed (sentences/s, one "
                                                      "thread)"), "| base | greedy |")
    return greedy, rerun, cached


def test_decoding_ceiling_prices_each_product_at_its_measured_rate(tmp_path):
    # Every product at 50 GFLOP/s: decoding's 2 * cached multiply-adds per sentence take
    # 2 * cached / 5e10 s, 32 sentences 32 times that. PyTorch takes 8 CPU s for the batch, so
    # the ceiling is 8 / (32 * 2 * cached / 5e10) over the FLOP ratio rerun / cached, which is
    # 8 * 5e10 / (64 * rerun). Then the vocabulary projection alone at 25 GFLOP/s: its
    # 32 * d * vocab multiply-adds per sentence take twice as long as before.
    names = ["sgemm_peak/1024x1024x1024"] + [
        f"base/decode_gemm/{n}" for n in ("projection", "fc1", "fc2", "logits")]
    rates = {n: 5e10 for n in names}
    greedy, rerun, cached = base_greedy_row(tmp_path, rates)
    assert greedy[8] == f"{8 * 5e10 / (64 * rerun):.2f}"
    rates[names[-1]] = 2.5e10
    d, vocab = 512, 37000  # base's d_model and vocabulary (bench_configs.py)
    slower = 2 * cached + 2 * d * vocab * run_bench.NEW_TOKENS
    greedy, _, _ = base_greedy_row(tmp_path, rates)
    assert greedy[8] == f"{8 * 5e10 / (32 * slower) / (rerun / cached):.2f}"
    assert greedy[9] == "-"  # no decode_step row: no streamed ceiling


def test_streamed_ceiling_prices_every_decoder_step_product_at_the_decode_step_rate(tmp_path):
    # The source side at the sgemm peak (50 GFLOP/s), every product of a decoder step at
    # decode_step's 10 GFLOP/s whatever the decode_gemm rows say (here 80): a sentence's time is
    # 2 * source / 5e10 + 2 * step / 1e10 for its source-side and decoder-step multiply-adds.
    rates = {"sgemm_peak/1024x1024x1024": 5e10, "base/decode_step": 1e10}
    rates.update({f"base/decode_gemm/{n}": 8e10 for n in ("projection", "fc1", "fc2", "logits")})
    greedy, rerun, cached = base_greedy_row(tmp_path, rates)
    d, f, layers, vocab = 512, 2048, 6, 37000  # base (bench_configs.py)
    step_macs = run_bench.NEW_TOKENS * (layers * (6 * d * d + 2 * d * f) + d * vocab)
    sentence_s = 2 * (cached - step_macs) / 5e10 + 2 * step_macs / 1e10
    assert greedy[9] == f"{8 / (32 * sentence_s) / (rerun / cached):.2f}"
    hot_s = 2 * (cached - step_macs) / 5e10 + 2 * step_macs / 8e10
    assert greedy[8] == f"{8 / (32 * hot_s) / (rerun / cached):.2f}"
