#!/usr/bin/python3
"""attnlab vs PyTorch on the same CPU: runs both benches alternately and writes the results.

Every (configuration, threads) row runs attnlab_train_bench and bench/torch_reference.py in fresh
processes, alternating which goes first, `repeats` times; the report shows medians over those
processes and the ratio attnlab/PyTorch, checks the targets of issue 10, and records the machine,
the OpenBLAS kernel each side loaded, the thread settings and the load average (the machine may be
shared). The kernel microbenchmarks (attnlab_kernels) run once per thread count.

Where the CPU has native bf16 products (avx512_bf16 or amx_bf16 in /proc/cpuinfo), every row also
runs attnlab_train_bench --precision bf16 and the PyTorch reference under bf16 autocast, in the
same alternation, training only; the page compares them with the fp32 rows of the same run.
Elsewhere (or with --no-bf16) the page says why they were skipped.

    /usr/bin/python3 bench/run_bench.py [--build-dir build] [--quick] [--no-bf16] [--output FILE.md]

`make bench` builds the binaries and runs this script.
"""

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_configs import DECODER_STEP_PRODUCTS, decode_gemm_seconds, decode_macs
from scaling_pause import busy_cores

ROOT = Path(__file__).resolve().parent.parent
# The checkout's analysis package, for its number formatting.
sys.path.insert(0, str(ROOT))
from analysis.formatting import fixed  # noqa: E402

# Targets of issue 10: attnlab/PyTorch training throughput per configuration, greedy decoding
# speed, and peak training RSS (attnlab/PyTorch at most this). MFU on base at one thread: issue
# 44's "one thread keeps what it has" (issue 10 asked for 60%).
THROUGHPUT_TARGETS = {"tiny": 2.0, "small": 1.5, "base": 1.25}
MFU_TARGET = 0.90
# Decoding targets: greedy at least PyTorch's speed per FLOP (its sentences/s ratio at least the
# FLOP ratio of the re-run loop over the KV cache), beam 4 at least 5x PyTorch on small and base.
GREEDY_PER_FLOP_TARGET = 1.0
BEAM_TARGET = {"small": 5.0, "base": 5.0}
RSS_TARGET = 0.5
# Decoding: source tokens and new tokens per sentence (the benches' defaults).
DECODE_SOURCE, NEW_TOKENS = 32, 32
# Targets of bf16 products: attnlab bf16 / attnlab fp32 throughput per configuration (none on
# tiny), attnlab bf16 / PyTorch autocast-bf16 on every configuration, and bf16 MFU on base at one
# thread over the measured bf16 peak (issue 44's 80%; the bf16 issue asked for 70%).
BF16_SPEEDUP_TARGETS = {"small": 1.5, "base": 1.8}
BF16_TORCH_TARGET = 1.5
BF16_MFU_TARGET = 0.80
# Targets of threads (issue 44): tokens/s at 2 threads over 1 thread per configuration, in both
# precisions, and never below 1.0x.
THREAD_SPEEDUP_TARGETS = {"tiny": 1.5, "small": 1.8, "base": 1.8}
THREAD_SPEEDUP_FLOOR = 1.0
# Busy cores over the seconds before the bench starts (/proc/stat) at or above this mean other
# processes were running; pages without that measurement read the 1-minute load average instead.
LOADED_BUSY_CORES = 0.3
LOADED_MACHINE = 0.5
BUSY_SECONDS = 3
# The implementations of a run: fp32 always, the bf16 pair where the CPU runs bf16 natively.
FP32_IMPLS = ("attnlab", "torch")
BF16_IMPLS = ("attnlab_bf16", "torch_bf16")
# At 2 threads attnlab also runs as on cores of its own: idle threads spin this many rounds
# before they sleep (libgomp's GOMP_SPINCOUNT; docs/design.md, "Threads"). Training only.
DEDICATED_SPINCOUNT = "100000"
SPIN_IMPLS = {"attnlab": "attnlab_spin", "attnlab_bf16": "attnlab_bf16_spin"}


class Row:
    """One (configuration, threads) pair and how hard to measure it."""

    def __init__(self, config, threads, steps, warmup, repeats, decode, beam=4):
        self.config, self.threads = config, threads
        self.steps, self.warmup, self.repeats, self.decode = steps, warmup, repeats, decode
        self.beam = beam  # 0 skips beam search

    @property
    def key(self):
        return f"{self.config} t{self.threads}"


def plan(args):
    """The rows of a full run (about 15 minutes on an idle 2-core machine) or of --quick."""
    if args.quick:
        return [Row("tiny", 1, 2, 1, 1, True, args.beam), Row("tiny", 2, 2, 1, 1, False),
                Row("small", 1, 2, 1, 1, True, args.beam)]
    rows = []
    for config in args.configs:
        for threads in args.threads:
            if config == "base":
                # One warm-up step excluded, two measured, one process pair per thread count;
                # one decode of each search (PyTorch's beam loop takes about a minute on base).
                rows.append(Row(config, threads, 2, 1, 1, threads == 1, args.beam))
            else:
                rows.append(Row(config, threads, 3, 1, args.repeats, threads == 1, args.beam))
    return rows


def openblas_coretype():
    """OPENBLAS_CORETYPE as set by the user, else the one cluster/env.sh picks for this CPU."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"], "from the environment"
    picked = subprocess.run(["bash", str(ROOT / "cluster" / "env.sh")], capture_output=True,
                            text=True, check=False).stdout.strip()
    return picked, "from cluster/env.sh" if picked else "chosen by OpenBLAS"


def cpuinfo_field(cpuinfo_text, name):
    """The first processor's `name` field in /proc/cpuinfo text ("" when absent)."""
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""


def bf16_unsupported_reason(cpuinfo_text):
    """Why bf16 rows cannot run on a CPU with this /proc/cpuinfo ("" when they can): attnlab's
    bf16 products need avx512_bf16 or amx_bf16, as blas::bf16_unsupported_reason says."""
    flags = set(cpuinfo_field(cpuinfo_text, "flags").split())
    if flags & {"avx512_bf16", "amx_bf16"}:
        return ""
    return "this CPU has neither avx512_bf16 nor amx_bf16 (/proc/cpuinfo)"


def bf16_plan(args, cpuinfo=Path("/proc/cpuinfo")):
    """(implementations to run, why bf16 is skipped or "")."""
    if args.no_bf16:
        return FP32_IMPLS, "skipped with --no-bf16"
    try:
        reason = bf16_unsupported_reason(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError as error:
        reason = f"{cpuinfo} is unreadable ({error.strerror})"
    return (FP32_IMPLS, reason) if reason else (FP32_IMPLS + BF16_IMPLS, "")


def child_env(threads, coretype, impl="attnlab"):
    """The environment of one bench process. attnlab's as the program sets its own
    (cluster::settle_thread_environment): OpenMP's threads split the products, OpenBLAS runs one
    thread, idle threads sleep (unless the user chose a policy). PyTorch's: its usual OpenMP and
    OpenBLAS threads, both at the row's count."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    if impl.startswith("attnlab"):
        env["OPENBLAS_NUM_THREADS"] = "1"
        if not env.get("OMP_WAIT_POLICY"):
            env["OMP_WAIT_POLICY"] = "passive"
        if impl in SPIN_IMPLS.values():
            env["GOMP_SPINCOUNT"] = DEDICATED_SPINCOUNT
    else:
        env["OPENBLAS_NUM_THREADS"] = str(threads)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def run_json(command, env, log):
    """Runs one bench process; returns its JSON line (the last line of stdout)."""
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    log(f"    {result['impl']:8s} {result.get('precision', 'fp32')} {result['config']:5s} "
        f"t{result['threads']}: "
        f"{result['tokens_per_s']:8.1f} tok/s, step {result['step_s']:.3f} s, "
        f"RSS {result['peak_rss_mib']:.0f} MiB  ({seconds:.0f} s)"
        + (f", GOMP_SPINCOUNT={env['GOMP_SPINCOUNT']}" if "GOMP_SPINCOUNT" in env else ""))
    return result


def bench_commands(row, build_dir):
    common = ["--config", row.config, "--threads", str(row.threads), "--steps", str(row.steps),
              "--warmup", str(row.warmup)]
    decode = ["--decode-repeats", "1" if row.decode else "0", "--beam", str(row.beam)]
    # bf16 rows time training only: the targets are about training, and PyTorch 1.13's eval
    # fast path cannot decode under autocast.
    training = ["--decode-repeats", "0", "--beam", "0"]
    bf16 = training + ["--precision", "bf16"]
    attnlab = [str(build_dir / "bench" / "attnlab_train_bench")] + common
    torch = [sys.executable, str(ROOT / "bench" / "torch_reference.py")] + common
    return {"attnlab": attnlab + decode, "torch": torch + decode,
            "attnlab_bf16": attnlab + bf16, "torch_bf16": torch + bf16,
            "attnlab_spin": attnlab + training, "attnlab_bf16_spin": attnlab + bf16}


def run_order(impls, repeat, index):
    """The implementations in the order row `index` runs them in round `repeat`: rotated, so each
    goes first as often as the others (with fp32 only: attnlab, torch / torch, attnlab)."""
    shift = (repeat + index) % len(impls)
    return list(impls[shift:]) + list(impls[:shift])


def measure(rows, args, coretype, log, impls=FP32_IMPLS):
    """{row key: {impl: [results]}} for the implementations `impls`, alternated."""
    results = {row.key: {impl: [] for impl in impls} for row in rows}
    for repeat in range(max(row.repeats for row in rows)):
        for index, row in enumerate(rows):
            if repeat >= row.repeats:
                continue
            log(f"  round {repeat + 1}, {row.key}")
            commands = bench_commands(row, args.build_dir)
            for impl in run_order(impls, repeat, index):
                if impl.startswith("torch") and args.no_torch:
                    continue
                if impl in SPIN_IMPLS.values() and row.threads == 1:
                    continue  # one thread has no idle thread to spin
                env = child_env(row.threads, coretype, impl)
                results[row.key][impl].append(run_json(commands[impl], env, log))
    return results


def med(runs, field):
    values = [r[field] for r in runs if r.get(field) is not None]
    return statistics.median(values) if values else float("nan")


def missed(percent, factor, change):
    """'MISSED by 28% (needs 1.39x faster)'; a shortfall under half a percent keeps the digits that
    show it, so that a row just below its target never reads 'MISSED by 0%'."""
    digits = 0 if percent >= 0.5 else 2
    return f"MISSED by {percent:.{digits}f}% (needs {factor:.{digits + 2}f}x {change})"


def verdict(ratio, target, higher_is_better=True):
    """'met, 1.14x the target' or 'MISSED by 28% (needs 1.39x faster)'."""
    if ratio != ratio:  # NaN: nothing to compare
        return "n/a"
    if higher_is_better:
        if ratio >= target:
            return f"met, {ratio / target:.2f}x the target"
        return missed(100 * (1 - ratio / target), target / ratio, "faster")
    if ratio <= target:
        return f"met, {target / ratio:.2f}x below the limit"
    return missed(100 * (ratio / target - 1), ratio / target, "less")


def mfu_verdict(mfu, target):
    """The verdict on an MFU: a step cannot run its products faster than the peak product, so an
    MFU above 100% says the peak was measured low (too few or too early products), and no verdict
    stands on it."""
    if mfu > 1.0:
        return (f"not judged: an MFU of {100 * mfu:.1f}% means the peak was measured below the "
                "rate the step reached")
    return verdict(mfu, target)


def run_kernels(build_dir, threads, coretype, quick, log):
    """attnlab_kernels at `threads`, as Google Benchmark JSON."""
    command = [str(build_dir / "bench" / "attnlab_kernels"), f"--threads={threads}",
               "--benchmark_format=json", f"--benchmark_min_time={0.02 if quick else 0.2}"]
    if quick:
        command.append("--benchmark_filter=tiny|peak|L=(32|128)")
    log(f"  kernels, {threads} thread(s)")
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env=child_env(threads, coretype))
    if done.returncode != 0:
        raise RuntimeError(f"attnlab_kernels exited with {done.returncode}:\n{done.stderr}")
    return json.loads(done.stdout)["benchmarks"]


# The vector features the kernels choose between (sgemm's and the bf16 products' code paths).
VECTOR_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def amd_generation(family, flags):
    """The Zen generation of an AMD CPU family (AMD's family numbers: 17h Zen and Zen 2, 19h Zen 3
    and Zen 4, which alone of the two has AVX-512, 1Ah Zen 5); "" for others."""
    if family == 23:
        return "Zen or Zen 2"
    if family == 25:
        return "Zen 4" if "avx512f" in flags else "Zen 3"
    if family == 26:
        return "Zen 5"
    return ""


def cpu_description(cpuinfo_text):
    """The page's CPU: a virtual machine often shows only "AMD EPYC" as the model name, which
    does not say which of three machines made the page, so the family, model and stepping and
    the vector features follow it, and for AMD the generation they mean."""
    name = cpuinfo_field(cpuinfo_text, "model name") or platform.processor() or "unknown CPU"
    flags = set(cpuinfo_field(cpuinfo_text, "flags").split())
    identity = [f"{key} {cpuinfo_field(cpuinfo_text, field)}"
                for key, field in (("family", "cpu family"), ("model", "model"),
                                   ("stepping", "stepping"))
                if cpuinfo_field(cpuinfo_text, field)]
    family = cpuinfo_field(cpuinfo_text, "cpu family")
    if cpuinfo_field(cpuinfo_text, "vendor_id") == "AuthenticAMD" and family.isdigit():
        generation = amd_generation(int(family), flags)
        if generation:
            identity.insert(0, generation)
    features = [feature for feature in VECTOR_FEATURES if feature in flags]
    details = ", ".join(identity)
    details += "; " if details else ""
    details += ", ".join(features) if features else "none of " + ", ".join(VECTOR_FEATURES)
    return f"{name} ({details})"


def machine(cpuinfo=Path("/proc/cpuinfo")):
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return cpu_description(text), os.cpu_count()


def git_commit():
    done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "unknown"


def fmt(value, decimals=1):
    """A measured number as every page writes it (analysis.formatting), "n/a" when missing."""
    return fixed(value, decimals, missing="n/a")


def training_table(rows, results):
    lines = ["| config | threads | attnlab tok/s | PyTorch tok/s | ratio | target | verdict | "
             "tok/CPU-s ratio | ceiling |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        a, t = results[row.key]["attnlab"], results[row.key]["torch"]
        ratio = med(a, "tokens_per_s") / med(t, "tokens_per_s")
        cpu_ratio = med(a, "tokens_per_cpu_s") / med(t, "tokens_per_cpu_s")
        target = THROUGHPUT_TARGETS[row.config]
        # The ratio attnlab would reach running every counted FLOP at the sgemm peak (100% MFU).
        ceiling = (med(a, "sgemm_peak_cpu_gflops") * 1e9
                   / (med(t, "tokens_per_cpu_s") * med(a, "flops_per_token")))
        lines.append(f"| {row.config} | {row.threads} | {fmt(med(a, 'tokens_per_s'))} | "
                     f"{fmt(med(t, 'tokens_per_s'))} | {fmt(ratio, 2)}x | >= {target}x | "
                     f"{verdict(ratio, target)} | {fmt(cpu_ratio, 2)}x | "
                     f"{fmt(ceiling, 2)}x |")
    return lines


def split_table(rows, results, impls=FP32_IMPLS):
    lines = ["| config | threads | impl | forward ms | backward ms | optimizer ms | step ms | "
             "step CPU ms | communication |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for impl in impls:
            runs = results[row.key].get(impl, [])
            if not runs:
                continue
            ms = {f: 1000 * med(runs, f) for f in
                  ("forward_s", "backward_s", "optimizer_s", "step_s", "step_cpu_s")}
            lines.append(f"| {row.config} | {row.threads} | {impl} | {fmt(ms['forward_s'])} | "
                         f"{fmt(ms['backward_s'])} | {fmt(ms['optimizer_s'])} | "
                         f"{fmt(ms['step_s'])} | {fmt(ms['step_cpu_s'])} | 0 (one process) |")
    return lines


def mfu_table(rows, results):
    lines = ["| config | threads | FLOPs/token | sgemm peak GFLOP/s (wall / CPU) | attnlab MFU "
             "(wall / CPU) | PyTorch MFU (wall / CPU) | target |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        a, t = results[row.key]["attnlab"], results[row.key]["torch"]
        flops = med(a, "flops_per_token")
        peak, peak_cpu = med(a, "sgemm_peak_gflops"), med(a, "sgemm_peak_cpu_gflops")
        torch_mfu = med(t, "tokens_per_s") * flops / (peak * 1e9)
        torch_mfu_cpu = med(t, "tokens_per_cpu_s") * flops / (peak_cpu * 1e9)
        target = ""
        if row.config == "base" and row.threads == 1:
            target = f">= {MFU_TARGET:.0%}: {mfu_verdict(med(a, 'mfu'), MFU_TARGET)}"
        lines.append(f"| {row.config} | {row.threads} | {flops / 1e6:.1f} M | {fmt(peak)} / "
                     f"{fmt(peak_cpu)} | {fmt(100 * med(a, 'mfu'))}% / "
                     f"{fmt(100 * med(a, 'mfu_cpu'))}% | {fmt(100 * torch_mfu)}% / "
                     f"{fmt(100 * torch_mfu_cpu)}% | {target} |")
    return lines


def rss_table(rows, results):
    """Peak RSS against PyTorch's in each precision a row measured: attnlab fp32 against PyTorch
    fp32, attnlab bf16 against PyTorch autocast-bf16 (the target holds in both)."""
    lines = ["| config | threads | precision | attnlab MiB | PyTorch MiB | ratio | target | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for precision, ours, theirs in (("fp32", "attnlab", "torch"),
                                        ("bf16", "attnlab_bf16", "torch_bf16")):
            a, t = results[row.key].get(ours, []), results[row.key].get(theirs, [])
            if not a or not t:
                continue
            ratio = med(a, "peak_rss_mib") / med(t, "peak_rss_mib")
            lines.append(f"| {row.config} | {row.threads} | {precision} | "
                         f"{fmt(med(a, 'peak_rss_mib'), 0)} | {fmt(med(t, 'peak_rss_mib'), 0)} | "
                         f"{fmt(ratio, 2)}x | <= {RSS_TARGET}x | "
                         f"{verdict(ratio, RSS_TARGET, higher_is_better=False)} |")
    return lines


MEMORY_PARTS = (("parameters", "memory_parameters_mib"), ("gradients", "memory_gradients_mib"),
                ("Adam", "memory_adam_mib"), ("activations", "memory_activations_mib"),
                ("logits", "memory_logits_mib"), ("scratch", "memory_scratch_mib"))


def rss_breakdown_table(rows, results, impl="attnlab"):
    """attnlab's peak RSS by component at one thread: what the model, Adam and the step's
    workspace allocate (training_memory, core/train/memory_estimate.h) and the rest of the peak
    (libraries, OpenBLAS's buffers, the batches, decoding's workspace comes later)."""
    lines = ["| config | peak RSS MiB | " + " | ".join(f"{name} MiB" for name, _ in MEMORY_PARTS)
             + " | other MiB |",
             "|---|---|" + "---|" * len(MEMORY_PARTS) + "---|"]
    for row in rows:
        runs = results[row.key].get(impl, [])
        if row.threads != 1 or not runs or "memory_parameters_mib" not in runs[0]:
            continue
        rss = med(runs, "peak_rss_mib")
        parts = [med(runs, field) for _, field in MEMORY_PARTS]
        lines.append(f"| {row.config} | {fmt(rss, 0)} | "
                     + " | ".join(fmt(part, 0) for part in parts)
                     + f" | {fmt(rss - sum(parts), 0)} |")
    return lines if len(lines) > 2 else []


def rss_breakdown_section(rows, results):
    """The breakdown under its heading; nothing for pages whose runs did not record it."""
    table = rss_breakdown_table(rows, results)
    if not table:
        return []
    return ["### attnlab's peak RSS by component (one thread)",
            "What the model, Adam and one step's workspace allocate, from the model's own carving "
            "(`attnlab params` prints the same for a config); 'other' is the rest of the peak: "
            "the libraries, OpenBLAS's buffers and the batches.", "", *table, ""]


def decode_product_rates(kernels, config, streamed=False):
    """The FLOP/s decode_gemm_seconds needs, from attnlab_kernels at one thread: the sgemm peak and
    the decoder step's products of one row per sentence, each at its decode_gemm row's rate (one
    weight, hot in the caches) or, `streamed`, all at the decode_step row's (every layer's
    weights once, as a step reads them); None when the run measured none (pages from before
    these rows)."""
    entries = {e["name"]: e.get("FLOPS") for e in kernels.get("1", kernels.get(1, []))}
    names = {"peak": "sgemm_peak/1024x1024x1024"}
    for product in DECODER_STEP_PRODUCTS:
        names[product] = (f"{config}/decode_step" if streamed
                          else f"{config}/decode_gemm/{product}")
    rates = {key: entries.get(name) for key, name in names.items()}
    return rates if all(rates.values()) else None


def decode_table(rows, results, kernels):
    lines = ["| config | search | attnlab sent/s | PyTorch sent/s | ratio | sent/CPU-s ratio "
             "| FLOP ratio | per FLOP | per-FLOP ceiling | streamed ceiling | target | verdict "
             "| tokens (attnlab / PyTorch) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if not row.decode:
            continue
        a, t = results[row.key]["attnlab"], results[row.key]["torch"]
        if not a:
            continue
        searches = ["greedy"] + (["beam"] if a[0]["beam"] > 0 else [])
        for field in searches:
            batch = a[0]["decode_batch"]
            mine, theirs = batch / med(a, f"{field}_s"), batch / med(t, f"{field}_s")
            ratio = mine / theirs
            cpu_ratio = med(t, f"{field}_cpu_s") / med(a, f"{field}_cpu_s")
            flop_ratio = per_flop = ceiling = streamed_ceiling = math.nan
            if field == "greedy":
                # PyTorch's loop re-runs the decoder over the prefix: per FLOP, attnlab's speed
                # is its sentences/s ratio over the FLOP ratio (CPU time when the machine is
                # shared).
                rerun = decode_macs(row.config, DECODE_SOURCE, NEW_TOKENS, cached=False)
                cached = decode_macs(row.config, DECODE_SOURCE, NEW_TOKENS, cached=True)
                flop_ratio = rerun / cached
                per_flop = cpu_ratio / flop_ratio
                # attnlab's speed if its decoding were its products alone, at their measured
                # rates, per FLOP over PyTorch's (CPU time): hot weights, then streamed ones.
                ceiling, streamed_ceiling = (
                    med(t, f"{field}_cpu_s") / flop_ratio
                    / (batch * decode_gemm_seconds(row.config, DECODE_SOURCE, NEW_TOKENS, rates))
                    if rates else math.nan
                    for rates in (decode_product_rates(kernels, row.config),
                                  decode_product_rates(kernels, row.config, streamed=True)))
                goal, measured = GREEDY_PER_FLOP_TARGET, per_flop
                search = "greedy"
            else:
                goal, measured = BEAM_TARGET.get(row.config), cpu_ratio
                search = f"beam {a[0]['beam']}"
            target = (f">= {goal:g} per FLOP" if field == "greedy" else
                      f">= {goal:g}x" if goal else "-")
            lines.append(f"| {row.config} | {search} | {fmt(mine)} | {fmt(theirs)} | "
                         f"{fmt(ratio, 1)}x | {fmt(cpu_ratio, 1)}x | "
                         f"{fmt(flop_ratio, 1) + 'x' if flop_ratio == flop_ratio else '-'} | "
                         + "".join(f"{fmt(x, 2) if x == x else '-'} | "
                                   for x in (per_flop, ceiling, streamed_ceiling))
                         + f"{target} | "
                         f"{verdict(measured, goal) if goal else '-'} | "
                         f"{fmt(med(a, field + '_tokens'), 0)} / "
                         f"{fmt(med(t, field + '_tokens'), 0)} |")
    return lines


def machine_loaded(context):
    """Whether other processes ran when the bench started: the cores they kept busy just before
    it, or (older pages) the 1-minute load average."""
    if "busy_start" in context:
        return float(context["busy_start"]) >= LOADED_BUSY_CORES
    try:
        return float(str(context["load_start"]).split()[0]) >= LOADED_MACHINE
    except (KeyError, ValueError, IndexError):
        return True


def threads_table(rows, results, context):
    """Per configuration and implementation: tokens/s at 1 and 2 threads, the speed-up and its
    verdict, the CPU-time efficiency, and OpenBLAS's own sgemm speed-up (PyTorch's torch.mm on
    OpenBLAS's threads, 1024^3) beside attnlab's."""
    by_key = {(row.config, row.threads): row for row in rows}
    loaded = machine_loaded(context)
    lines = ["| config | impl | 1 thread tok/s | 2 threads tok/s | speed-up | target | verdict | "
             "CPU efficiency | OpenBLAS sgemm 2/1 | speed-up / OpenBLAS's |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    # The spinning rows set their 2 threads against the same implementation's 1 thread.
    one_thread_impl = {spin: impl for impl, spin in SPIN_IMPLS.items()}
    configs = sorted({row.config for row in rows}, key=list(THREAD_SPEEDUP_TARGETS).index)
    for config in configs:
        one, two = by_key.get((config, 1)), by_key.get((config, 2))
        if not one or not two:
            continue
        torch_one, torch_two = results[one.key].get("torch", []), results[two.key].get("torch", [])
        openblas = ratio_of(med(torch_two, "openblas_sgemm_peak_gflops"),
                            med(torch_one, "openblas_sgemm_peak_gflops"))
        for impl in ("attnlab", "attnlab_spin", "attnlab_bf16", "attnlab_bf16_spin", "torch",
                     "torch_bf16"):
            r1 = results[one.key].get(one_thread_impl.get(impl, impl), [])
            r2 = results[two.key].get(impl, [])
            if not r1 or not r2:
                continue
            speedup = ratio_of(med(r2, "tokens_per_s"), med(r1, "tokens_per_s"))
            # Work per CPU second at 2 threads over 1: 1.0 when the second thread costs nothing.
            efficiency = ratio_of(med(r2, "tokens_per_cpu_s"), med(r1, "tokens_per_cpu_s"))
            target, judged = "-", "-"
            if impl.startswith("attnlab"):
                goal = THREAD_SPEEDUP_TARGETS[config]
                target = f">= {goal}x"
                judged = ("not judged: the machine was loaded" if loaded
                          else verdict(speedup, goal))
            elif speedup == speedup and speedup < THREAD_SPEEDUP_FLOOR:
                judged = "slower than 1 thread"
            lines.append(f"| {config} | {impl} | {fmt(med(r1, 'tokens_per_s'))} | "
                         f"{fmt(med(r2, 'tokens_per_s'))} | {fmt(speedup, 2)}x | {target} | "
                         f"{judged} | {fmt(100 * efficiency)}% | {fmt(openblas, 2)}x | "
                         f"{fmt(ratio_of(speedup, openblas), 2)} |")
    return lines


def threads_section(rows, results, context):
    lines = threads_table(rows, results, context)
    if len(lines) == 2:
        return []
    return [
        "## Threads: 2 threads over 1 (target tokens/s)",
        "attnlab keeps one thread pool: OpenMP's. OpenBLAS runs one thread, and blas::gemm splits "
        "every large product into one block of rows or columns per thread (core/tensor/blas.cpp); "
        "attention's per-head products go to the threads whole; idle threads sleep "
        "(OMP_WAIT_POLICY=passive). The _spin rows run attnlab as on cores of its own "
        f"(GOMP_SPINCOUNT={DEDICATED_SPINCOUNT}: idle threads spin that many rounds before they "
        "sleep; docs/design.md says when to set it), their 2 threads against the same "
        "precision's 1 thread. 'CPU efficiency': tokens per CPU second at 2 threads over 1 "
        "thread (100% when the second thread costs no extra work). 'OpenBLAS sgemm 2/1': "
        "OpenBLAS's own threaded sgemm (PyTorch's torch.mm, 1024^3) at 2 threads over 1, the "
        "scaling a product reaches on these cores; the last column sets attnlab's speed-up "
        "against it. Targets: >= 1.8x on small and base, >= 1.5x on tiny, in fp32 and bf16; "
        "never below 1.0x."
        + (" The machine was loaded when the bench started, so wall-clock speed-ups are not "
           "judged; the CPU efficiency stands." if machine_loaded(context) else ""),
        "",
        *lines,
        "",
    ]


def ratio_of(numerator, denominator):
    """numerator/denominator, NaN when either is missing or the denominator is 0."""
    if denominator != denominator or numerator != numerator or denominator == 0:
        return float("nan")
    return numerator / denominator


def bf16_speedup_table(rows, results):
    lines = ["| config | threads | attnlab bf16 tok/s | attnlab fp32 tok/s | ratio | target | "
             "verdict | tok/CPU-s ratio | ceiling | loss bf16 / fp32 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        b, a = results[row.key].get("attnlab_bf16", []), results[row.key]["attnlab"]
        ratio = ratio_of(med(b, "tokens_per_s"), med(a, "tokens_per_s"))
        cpu_ratio = ratio_of(med(b, "tokens_per_cpu_s"), med(a, "tokens_per_cpu_s"))
        # The ratio bf16 would reach running every counted FLOP at the bf16 peak (CPU time).
        ceiling = ratio_of(med(b, "bf16_peak_cpu_gflops") * 1e9,
                           med(a, "tokens_per_cpu_s") * med(b, "flops_per_token"))
        target = BF16_SPEEDUP_TARGETS.get(row.config)
        goal = f">= {target}x" if target else "-"
        lines.append(f"| {row.config} | {row.threads} | {fmt(med(b, 'tokens_per_s'))} | "
                     f"{fmt(med(a, 'tokens_per_s'))} | {fmt(ratio, 2)}x | {goal} | "
                     f"{verdict(ratio, target) if target else '-'} | {fmt(cpu_ratio, 2)}x | "
                     f"{fmt(ceiling, 2)}x | {fmt(med(b, 'loss'), 5)} / "
                     f"{fmt(med(a, 'loss'), 5)} |")
    return lines


def bf16_torch_table(rows, results):
    lines = ["| config | threads | attnlab bf16 tok/s | PyTorch autocast-bf16 tok/s | ratio | "
             "target | verdict | tok/CPU-s ratio | ceiling | PyTorch autocast-bf16 / fp32 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        b = results[row.key].get("attnlab_bf16", [])
        tb, t = results[row.key].get("torch_bf16", []), results[row.key]["torch"]
        ratio = ratio_of(med(b, "tokens_per_s"), med(tb, "tokens_per_s"))
        cpu_ratio = ratio_of(med(b, "tokens_per_cpu_s"), med(tb, "tokens_per_cpu_s"))
        ceiling = ratio_of(med(b, "bf16_peak_cpu_gflops") * 1e9,
                           med(tb, "tokens_per_cpu_s") * med(b, "flops_per_token"))
        torch_gain = ratio_of(med(tb, "tokens_per_s"), med(t, "tokens_per_s"))
        lines.append(f"| {row.config} | {row.threads} | {fmt(med(b, 'tokens_per_s'))} | "
                     f"{fmt(med(tb, 'tokens_per_s'))} | {fmt(ratio, 2)}x | "
                     f">= {BF16_TORCH_TARGET}x | {verdict(ratio, BF16_TORCH_TARGET)} | "
                     f"{fmt(cpu_ratio, 2)}x | {fmt(ceiling, 2)}x | "
                     f"{fmt(torch_gain, 2)}x |")
    return lines


def bf16_mfu_table(rows, results):
    lines = ["| config | threads | bf16 peak GFLOP/s (wall / CPU) | bf16 / sgemm peak (CPU) | "
             "attnlab bf16 MFU (wall / CPU) | PyTorch autocast-bf16 MFU (wall / CPU) | target |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        b, tb = results[row.key].get("attnlab_bf16", []), results[row.key].get("torch_bf16", [])
        flops = med(b, "flops_per_token")
        peak, peak_cpu = med(b, "bf16_peak_gflops"), med(b, "bf16_peak_cpu_gflops")
        peak_gain = ratio_of(peak_cpu, med(b, "sgemm_peak_cpu_gflops"))
        torch_mfu = ratio_of(med(tb, "tokens_per_s") * flops, peak * 1e9)
        torch_mfu_cpu = ratio_of(med(tb, "tokens_per_cpu_s") * flops, peak_cpu * 1e9)
        target = ""
        if row.config == "base" and row.threads == 1:
            target = (f">= {BF16_MFU_TARGET:.0%} (CPU): "
                      f"{mfu_verdict(med(b, 'mfu_cpu'), BF16_MFU_TARGET)}")
        lines.append(f"| {row.config} | {row.threads} | {fmt(peak)} / {fmt(peak_cpu)} | "
                     f"{fmt(peak_gain, 2)}x | {fmt(100 * med(b, 'mfu'))}% / "
                     f"{fmt(100 * med(b, 'mfu_cpu'))}% | {fmt(100 * torch_mfu)}% / "
                     f"{fmt(100 * torch_mfu_cpu)}% | {target} |")
    return lines


def kernel_peaks(kernels):
    """'1 thread: bf16 201.9, sgemm 95.7 GFLOP/s' per thread count of attnlab_kernels' peaks."""
    parts = []
    for threads, entries in kernels.items():
        rates = {e["name"].split("/")[0]: e["FLOPS"] / 1e9 for e in entries
                 if e["name"] in ("bf16_peak/1024x1024x1024", "sgemm_peak/1024x1024x1024")
                 and "FLOPS" in e}
        if "bf16_peak" in rates:
            sgemm = fmt(rates.get("sgemm_peak", float("nan")))
            parts.append(f"{threads} thread{'s' if str(threads) != '1' else ''}: bf16 "
                         f"{rates['bf16_peak']:.1f}, sgemm {sgemm} GFLOP/s")
    return "; ".join(parts)


def bf16_section(rows, results, kernels, context):
    """The bf16 comparison; nothing for pages written before bf16 rows existed."""
    if "bf16" not in context:
        return []
    title = "## bf16 matrix products (attnlab --precision bf16, PyTorch autocast-bf16)"
    reason = context["bf16"].get("reason", "")
    if reason:
        return [title, f"Not measured: {reason}; the bf16 rows were skipped.", ""]
    isa = next((r.get("onednn_isa", "") for key in results
                for r in results[key].get("attnlab_bf16", [])), "") or "n/a"
    torch_any = next((r for key in results for r in results[key].get("torch_bf16", [])), {})
    peaks = kernel_peaks(kernels)
    return [
        title,
        "attnlab runs every float product with bf16 operands (rounded to nearest even) and fp32 "
        f"accumulation through oneDNN ({isa}); weights, gradients, Adam, LayerNorm, softmax and "
        "the loss stay fp32. PyTorch "
        f"{torch_any.get('torch_version', 'n/a')} trains under "
        "`torch.autocast(\"cpu\", dtype=torch.bfloat16)` (forward and loss; its matmuls run in "
        "bf16 through its own oneDNN). Same rows, steps and fresh processes as the fp32 rows "
        "above, in the same run, all four implementations rotated; training only (no decoding).",
        "",
        "### attnlab bf16 / attnlab fp32 (target tokens/s)",
        "'ceiling': the ratio bf16 would reach if every counted FLOP ran at the measured bf16 "
        "peak (100% MFU, CPU time) against the fp32 row; 'loss': the last training step's, as a "
        "check that both compute the same model.",
        "",
        *bf16_speedup_table(rows, results),
        "",
        "### attnlab bf16 / PyTorch autocast-bf16 (target tokens/s)",
        "'ceiling' as above, against PyTorch autocast-bf16; the last column is what autocast "
        "gains PyTorch over its fp32 row.",
        "",
        *bf16_torch_table(rows, results),
        "",
        "### bf16 model FLOPs utilisation",
        "Same FLOPs per token as the fp32 table; peak = best 1024^3 product through "
        "blas::gemm_bf16 (operand rounding included) in the same process and thread count. The "
        "verdict reads the CPU-time MFU: the peak is the best of a few 10 ms products, and on a "
        "shared machine a peak whose wall time was stretched by other processes inflates wall "
        "MFU (even past 100%), while CPU time counts only this process's cycles."
        + (f" attnlab_kernels' peaks in this run: {peaks}." if peaks else ""),
        "",
        *bf16_mfu_table(rows, results),
        "",
        "### bf16 step time split",
        *split_table(rows, results, BF16_IMPLS),
        "",
    ]


def kernel_table(kernels):
    lines = ["| threads | benchmark | wall ms | CPU ms | rate |", "|---|---|---|---|---|"]
    for threads, entries in kernels.items():
        for e in entries:
            scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[e.get("time_unit", "ns")]
            if "FLOPS" in e:
                rate = f"{e['FLOPS'] / 1e9:.1f} GFLOP/s"
                if "probs_MB" in e:
                    rate += f", probs {e['probs_MB']:.1f} MB"
            elif "bytes_per_second" in e:
                rate = f"{e['bytes_per_second'] / 1e9:.2f} GB/s"
            elif "items_per_second" in e:
                rate = f"{e['items_per_second'] / 1e3:.1f} k rows/s"
            else:
                rate = ""
            lines.append(f"| {threads} | {e['name']} | {e['real_time'] * scale:.3f} | "
                         f"{e['cpu_time'] * scale:.3f} | {rate} |")
    return lines


def report(rows, results, kernels, context):
    a_any = next(r for key in results for r in results[key]["attnlab"])
    t_any = next((r for key in results for r in results[key]["torch"]), {})
    lines = [
        "# attnlab vs PyTorch: training and decoding on the same CPU",
        "",
        f"Written by `bench/run_bench.py` ({context['mode']}) on {context['date']}, "
        f"commit {context['commit']}, in {context['minutes']:.1f} minutes.",
        "",
        "## Machine and settings",
        f"- CPU: {context['cpu']}, {context['cores']} cores",
        f"- Load average (1/5/15 min) at start: {context['load_start']}, at end: "
        f"{context['load_end']}"
        + (f"; other processes kept {context['busy_start']} cores busy over the "
           f"{BUSY_SECONDS} s before the bench started (/proc/stat). " if "busy_start" in context
           else ". ")
        + ("The machine is shared: other processes took part of the cores, so wall-clock numbers "
           "carry their noise; both sides ran alternately under the same load, and the CPU-time "
           "columns (process CPU seconds) are less sensitive to it." if machine_loaded(context)
           else "No other process ran when the bench started (the load at the end is the "
                "bench's own)."),
        f"- OpenBLAS kernel: attnlab {a_any['openblas_core']}, PyTorch "
        f"{t_any.get('openblas_core', 'n/a')}; OPENBLAS_CORETYPE={context['coretype'] or '(unset)'}"
        f" ({context['coretype_source']})",
        "- Threads: attnlab as the program runs itself: OMP_NUM_THREADS = the row's thread count, "
        "OPENBLAS_NUM_THREADS = 1, OMP_WAIT_POLICY = passive, and blas::set_threads; PyTorch: "
        "OMP_NUM_THREADS = OPENBLAS_NUM_THREADS = the row's thread count, "
        "torch.set_num_threads (and one inter-op thread)",
        f"- PyTorch {t_any.get('torch_version', 'n/a')} (Debian python3-torch) on the same "
        "OpenBLAS; attnlab built Release",
        "- Model: the paper's post-LN Transformer, tied embeddings (scaled by sqrt(d_model)), "
        "sinusoidal positions, dropout 0.1 on sub-layer outputs and embedding sums, label "
        "smoothing 0.1, Adam (0.9, 0.98, 1e-9). nn.Transformer's extra dropouts (attention "
        "probabilities, inside the FFN) are switched off so both sides compute the same model; "
        "parameter counts agree. Random token batches without padding.",
        "- Each row: fresh processes, implementations alternated; medians over processes of the "
        "median step (warm-up steps excluded). Decoding: batch 32, source 32, 32 new tokens; "
        "attnlab with its KV cache, PyTorch with nn.Transformer's standard loop (the decoder "
        "re-run over the prefix at every step).",
        "",
        "## Training throughput (target tokens/s)",
        "Ratio = attnlab/PyTorch of the wall-clock medians; 'tok/CPU-s ratio' the same in process "
        "CPU time; 'ceiling' the ratio attnlab would reach if every counted FLOP ran at the "
        "measured sgemm peak (100% MFU, CPU time): a target above it cannot be met by faster "
        "non-GEMM code alone with the same OpenBLAS.",
        "",
        *training_table(rows, results),
        "",
        *threads_section(rows, results, context),
        "## Step time split",
        *split_table(rows, results),
        "",
        "## Model FLOPs utilisation",
        "FLOPs per target token from core/model/param_count.h (matmuls only, forward + backward = "
        "3x forward); peak = best 1024^3 sgemm through blas::gemm in the same process and thread "
        "count. PyTorch's MFU uses the same FLOP count and peak.",
        "",
        *mfu_table(rows, results),
        "",
        "## Peak RSS while training (VmHWM after the training steps)",
        "bf16 rows: attnlab --precision bf16 against PyTorch autocast-bf16, from the runs of the "
        "bf16 section below.",
        "",
        *rss_table(rows, results),
        "",
        *rss_breakdown_section(rows, results),
        "## Decoding speed (sentences/s, one thread)",
        "'FLOP ratio': multiply-adds of PyTorch's re-run loop over those of attnlab's KV cache "
        "for one sentence (bench/bench_configs.py): the speed-up the cache gives at equal "
        "efficiency per FLOP. 'per FLOP': attnlab's speed per FLOP over PyTorch's, the CPU-time "
        "ratio over the FLOP ratio; the target is at least 1 (PyTorch's efficiency). 'per-FLOP "
        "ceiling': the same if attnlab's decoding took only the time of its matrix products at "
        "the rates attnlab_kernels measured for them (a decoder step's products have one row "
        "per sentence: the decode_gemm rows, on oneDNN's fp32 engine with packed weights as a "
        "decoder step runs them, with decode_gemm_unpacked and decode_gemm_openblas beside them "
        "for comparison; the source side at the sgemm peak), everything "
        "else free. Each decode_gemm row runs one weight again and again, hot in the caches; a "
        "decoder step reads every layer's weights once (base: 164 MB), so 'streamed ceiling' "
        "prices every product of the step at the decode_step row's rate (all of one step's "
        "products, each layer with weights of its own): a target above it cannot be met with "
        "these products at this batch. The "
        "verdicts use CPU-time ratios, which a shared machine leaves comparable. Beam 4's target "
        "is at least 5x PyTorch on small and base.",
        "",
        *decode_table(rows, results, kernels),
        "",
        *bf16_section(rows, results, kernels, context),
        "## Kernel microbenchmarks (attnlab_kernels)",
        *kernel_table(kernels),
        "",
    ]
    notes = ROOT / "bench" / "PROFILE.md"
    if notes.exists():
        lines += [notes.read_text(encoding="utf-8").rstrip(), ""]
    kept = ("name", "real_time", "cpu_time", "time_unit", "FLOPS", "probs_MB",
            "bytes_per_second", "items_per_second")
    raw = {"rows": [vars(row) for row in rows], "results": results,
           "kernels": {str(k): [{f: e[f] for f in kept if f in e} for e in v]
                       for k, v in kernels.items()},
           "context": context}
    lines += ["<details><summary>Raw results (JSON; <code>run_bench.py --render-from</code> "
              "re-renders this page from it)</summary>", "", RAW_BEGIN,
              json.dumps(raw), RAW_END, "", "</details>", ""]
    return "\n".join(lines)


RAW_BEGIN, RAW_END = "```json", "```"


def load_raw(path):
    """rows, results, kernels and context from the raw block of a results page."""
    text = path.read_text(encoding="utf-8")
    start = text.rindex(RAW_BEGIN) + len(RAW_BEGIN)
    raw = json.loads(text[start:text.index(RAW_END, start)])
    rows = [Row(**fields) for fields in raw["rows"]]
    return rows, raw["results"], raw["kernels"], raw["context"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "results" / "bench.md")
    parser.add_argument("--quick", action="store_true", help="a short run (tiny and small)")
    parser.add_argument("--repeats", type=int, default=3, help="process pairs per tiny/small row")
    parser.add_argument("--configs", default="tiny,small,base")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--beam", type=int, default=4, help="beam size; 0 skips beam search")
    parser.add_argument("--no-torch", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-kernels", action="store_true")
    parser.add_argument("--no-bf16", action="store_true",
                        help="skip the bf16 rows even where the CPU has native bf16 products")
    parser.add_argument("--render-from", type=Path,
                        help="rewrite --output from the raw results of an earlier page, no runs")
    args = parser.parse_args()
    args.configs = [c for c in args.configs.split(",") if c]
    args.threads = [int(t) for t in args.threads.split(",") if t]
    args.build_dir = args.build_dir.resolve()
    if args.render_from:
        text = report(*load_raw(args.render_from))
        args.output.write_text(text, encoding="utf-8")
        print(f"run_bench: rendered {args.output} from {args.render_from}")
        return 0
    for binary in ("attnlab_train_bench", "attnlab_kernels"):
        if not (args.build_dir / "bench" / binary).exists():
            sys.exit(f"run_bench: {args.build_dir / 'bench' / binary} is missing; "
                     "build it first (make bench does)")

    probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True,
                           check=False)
    if probe.returncode != 0 and not args.no_torch:
        sys.exit(f"run_bench: {sys.executable} cannot import torch; install Debian's "
                 "python3-torch (apt-get install python3-torch) and run with /usr/bin/python3")

    def log(message):
        print(message, flush=True)

    started = time.monotonic()
    load_start = "%.2f %.2f %.2f" % os.getloadavg()
    busy_start = f"{busy_cores(BUSY_SECONDS):.2f}"
    # The commit the binaries were just built from: others may commit while the bench runs.
    commit = git_commit()
    coretype, coretype_source = openblas_coretype()
    rows = plan(args)
    impls, bf16_reason = bf16_plan(args)
    if any(row.threads > 1 for row in rows):
        impls = impls + tuple(SPIN_IMPLS[impl] for impl in impls if impl in SPIN_IMPLS)
    log(f"run_bench: {len(rows)} rows, OPENBLAS_CORETYPE={coretype or '(unset)'} "
        f"({coretype_source}), load {load_start}, busy cores {busy_start}, bf16 rows: {bf16_reason or 'yes'}")
    results = measure(rows, args, coretype, log, impls)
    kernels = {}
    if not args.no_kernels:
        for threads in sorted({row.threads for row in rows}):
            kernels[threads] = run_kernels(args.build_dir, threads, coretype, args.quick, log)
    cpu, cores = machine()
    context = {
        "mode": "--quick" if args.quick else "full run",
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "commit": commit, "minutes": (time.monotonic() - started) / 60,
        "cpu": cpu, "cores": cores, "load_start": load_start, "busy_start": busy_start,
        "load_end": "%.2f %.2f %.2f" % os.getloadavg(),
        "coretype": coretype, "coretype_source": coretype_source,
        "bf16": {"reason": bf16_reason},
    }
    text = report(rows, results, kernels, context)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    log(f"run_bench: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
