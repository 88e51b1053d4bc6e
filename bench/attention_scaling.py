#!/usr/bin/env python3
"""Attention time and memory against sequence length, standard vs tiled kernel.

Runs the attnlab_attention_bench binary (bench/attention_bench.cpp) once with JSON output and
writes docs/results/attention-scaling.md: per sequence length n and batch B, forward+backward time
and the extra memory of each kernel, plus the log-log growth exponents (the paper's Table 1 says
self-attention costs O(n^2 d) operations per layer; the standard kernel also stores O(n^2)
probabilities, the tiled one O(n)).

    python3 bench/attention_scaling.py --build-dir build [--threads 1] [--output FILE]

(`make bench` runs it; the script first builds the attnlab_attention_bench target.)
"""
import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ("standard", "tiled")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=str(ROOT / "build"),
                        help="CMake build directory holding bench/attnlab_attention_bench")
    parser.add_argument("--threads", type=int, default=1, help="OpenBLAS/OpenMP threads")
    parser.add_argument("--output", default=str(ROOT / "docs" / "results" / "attention-scaling.md"))
    parser.add_argument("--filter", default="", help="--benchmark_filter passed to the binary")
    parser.add_argument("--repetitions", type=int, default=3,
                        help="runs per case; the table shows their median")
    return parser.parse_args(argv)


def openblas_coretype():
    """OPENBLAS_CORETYPE as set by the user, else the one cluster/env.sh picks for this CPU."""
    if os.environ.get("OPENBLAS_CORETYPE"):
        return os.environ["OPENBLAS_CORETYPE"]
    return subprocess.run(["bash", str(ROOT / "cluster" / "env.sh")], capture_output=True,
                          text=True, check=False).stdout.strip()


def machine():
    model = platform.processor() or "unknown CPU"
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    for line in lscpu.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    return f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}"


def git_commit():
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True, check=False).stdout.strip()
    measured = ["core/ops/attention.cpp", "core/ops/attention_tiled.h",
                "core/ops/attention_tiled.cpp", "core/ops/ops.h", "core/tensor",
                "bench/attention_bench.cpp"]
    dirty = subprocess.run(["git", "status", "--porcelain", "--"] + measured, cwd=ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()
    note = " (with uncommitted changes to the measured kernels or the bench)" if dirty else ""
    return (commit or "unknown") + note


def run_bench(binary, threads, bench_filter, repetitions):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["OPENBLAS_NUM_THREADS"] = str(threads)
    coretype = openblas_coretype()
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "attention.json"
        command = [str(binary), f"--threads={threads}", "--benchmark_format=console",
                   f"--benchmark_repetitions={repetitions}",
                   "--benchmark_report_aggregates_only=true", f"--benchmark_out={out}",
                   "--benchmark_out_format=json"]
        if bench_filter:
            command.append(f"--benchmark_filter={bench_filter}")
        subprocess.run(command, env=env, check=True, stdout=sys.stderr)
        shown = [Path(binary).name] + [c.replace(str(out), "<out>.json") for c in command[1:]]
        return json.loads(out.read_text()), shown, coretype


def parse_results(report):
    """{(kernel, n, B): {'real_ms', 'cpu_ms', 'extra', 'rss'}}: the medians of the JSON report."""
    rows = {}
    for entry in report["benchmarks"]:
        if entry.get("run_type") == "aggregate" and entry.get("aggregate_name") != "median":
            continue
        name = entry["run_name"]  # standard_attention/n:256/B:1/real_time
        parts = dict(p.split(":") for p in name.split("/")[1:] if ":" in p)
        kernel = name.split("_")[0]
        assert entry["time_unit"] == "ms", entry["time_unit"]
        rows[(kernel, int(parts["n"]), int(parts["B"]))] = {
            "real_ms": entry["real_time"], "cpu_ms": entry["cpu_time"],
            "extra": entry["extra_bytes"], "rss": entry["rss_delta_bytes"],
            "iterations": entry["iterations"]}
    return rows


def slope(points):
    """Least-squares slope of log(y) on log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points if y > 0]
    if len(ys) != len(xs) or len(xs) < 2:
        return float("nan")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) /
            sum((x - mx) ** 2 for x in xs))


def mib(value):
    return f"{value / 2 ** 20:.3f}" if value < 2 ** 20 else f"{value / 2 ** 20:.1f}"


def render(rows, command, coretype, threads, context):
    lines = [
        "# Attention time and memory against sequence length (standard vs tiled)",
        "",
        "Generated by `bench/attention_scaling.py` from `bench/attention_bench.cpp`; do not edit.",
        "",
        f"- Machine: {machine()}",
        f"- Date: {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"- Commit: {git_commit()}",
        f"- Threads: {threads} (OpenBLAS kernel {context.get('openblas_core', 'n/a')}, "
        f"OPENBLAS_CORETYPE={coretype or '(unset)'})",
        f"- Command: `{' '.join(command)}`"
        " (through `python3 bench/attention_scaling.py --build-dir <build>`)",
        "",
        "One self-attention (T = S = n), 8 heads, d_k = d_v = 64, float, no mask, no dropout: "
        "forward then backward (dq, dk, dv). `standard` is `ops::attention_forward/backward` "
        "(core/ops/attention.cpp: stores the (B,H,n,n) probabilities and uses a (B,H,n,n) "
        "scratch in backward); `tiled` is `ops::attention_tiled_forward/backward` "
        "(core/ops/attention_tiled.cpp: 64-key tiles, online softmax, stores the (B,H,n) "
        "logsumexp and recomputes probabilities in backward).",
        "",
        "*extra MiB* is computed from the buffers each kernel needs beyond q, k, v, out and their "
        "gradients (identical for both); *RSS MiB* is the measured growth of the resident set "
        "across allocating those buffers and the first forward+backward (buffers under 64 KiB "
        "come from the already-resident heap and show as 0). Times are per forward+backward, the "
        "median over the repetitions in the command; *wall* is real time, *CPU* the process CPU "
        "time (the machine is shared, so CPU time is the steadier of the two).",
        "",
        "| n | B | standard wall ms | tiled wall ms | standard CPU ms | tiled CPU ms "
        "| tiled/standard CPU | standard extra MiB | tiled extra MiB | standard RSS MiB "
        "| tiled RSS MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = sorted({(n, b) for (_, n, b) in rows}, key=lambda k: (k[1], k[0]))
    for n, b in keys:
        s, t = rows.get(("standard", n, b)), rows.get(("tiled", n, b))
        if s is None or t is None:
            continue
        lines.append(
            f"| {n} | {b} | {s['real_ms']:.2f} | {t['real_ms']:.2f} | {s['cpu_ms']:.2f} | "
            f"{t['cpu_ms']:.2f} | {t['cpu_ms'] / s['cpu_ms']:.2f} | {mib(s['extra'])} | "
            f"{mib(t['extra'])} | {mib(s['rss'])} | {mib(t['rss'])} |")
    lines += ["", "## Growth exponents", "",
              "Least-squares slope of log(quantity) on log(n) over n >= 256 (where the n^2 terms "
              "dominate): 2 means quadratic, 1 linear, 0 constant.", "",
              "| B | kernel | CPU time | extra memory |", "|---:|---|---:|---:|"]
    for b in sorted({b for (_, _, b) in rows}):
        for kernel in KERNELS:
            pts = sorted((n, r) for (k, n, bb), r in rows.items()
                         if k == kernel and bb == b and n >= 256)
            lines.append(f"| {b} | {kernel} | {slope([(n, r['cpu_ms']) for n, r in pts]):.2f} | "
                         f"{slope([(n, r['extra']) for n, r in pts]):.2f} |")
    lines += [
        "",
        "## Reading",
        "",
        "- Time: both kernels do O(n^2 d) multiply-adds per head (Table 1's self-attention row), "
        "so both grow about quadratically; tiled also recomputes the probabilities in backward "
        "and runs 64 x 64 tile products, which cost more per FLOP than the standard kernel's "
        "large (n x n) products.",
        "- Memory: the standard kernel's extra memory is 2 x B x H x n^2 floats (probabilities "
        "saved for backward plus the backward scratch), exponent 2; the tiled kernel keeps "
        "B x H x n floats of logsumexp plus a fixed per-worker tile scratch, exponent at most 1 "
        "(near 0 while the fixed scratch dominates). In a model with `model.attention: tiled` "
        "every attention block saves a (B,H,T) logsumexp instead of (B,H,T,S) probabilities.",
        "",
    ]
    return "\n".join(lines)


def main(argv):
    args = parse_args(argv)
    binary = Path(args.build_dir) / "bench" / "attnlab_attention_bench"
    built = subprocess.run(["cmake", "--build", args.build_dir, "--target",
                            "attnlab_attention_bench"], stdout=sys.stderr, check=False)
    if built.returncode != 0 or not binary.exists():
        sys.exit(f"attention_scaling: could not build {binary} "
                 f"(cmake --build {args.build_dir} --target attnlab_attention_bench)")
    report, command, coretype = run_bench(binary, args.threads, args.filter, args.repetitions)
    rows = parse_results(report)
    text = render(rows, command, coretype, args.threads, report.get("context", {}))
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"attention_scaling: wrote {output}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
