"""bench/scaling.py's raw files (CSV) and the page it renders from them alone
(docs/results/scaling.md, the blocks between its generated markers)."""

import csv
import json
import re
import statistics

from scaling_config import (CLEAN_OTHERS, LAYOUT_SHAPE, LAYOUTS, LAYOUT_TEXT, MODELS, PAPER_STEPS,
                            PLAN_LAYOUT)

from analysis.formatting import percent  # scaling_config puts the checkout on the path


# --- CSV files ------------------------------------------------------------------------------------

RUN_FIELDS = ["model", "layout", "rep", "order", "started", "steps", "steady_from", "step_s",
              "step_s_median", "flops_per_step", "rate_gflops_core", "params", "world_size", "threads",
              "wall_s", "cpu_s", "nodes_seen", "rank_sessions", "load1_before", "busy_before",
              "waited_s", "others_cores", "others_top", "paused"]
NET_FIELDS = ["quantity", "path", "rep", "value", "unit", "started", "load1_before",
              "busy_before", "paused"]
PLAN_FIELDS = ["source", "model", "profile", "cores_per_node", "bandwidth_gbs", "latency_us",
               "rate_gflops_core", "steps", "gflop_step", "params", "nodes", "compute_s",
               "comm_s", "efficiency"]


def write_csv(path, fields, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: row.get(k, "") for k in fields})


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))



# --- the page -------------------------------------------------------------------------------------


def median(values):
    return statistics.median(float(v) for v in values)


def is_clean(run):
    return float(run["others_cores"]) <= CLEAN_OTHERS


def used_runs(runs, model, layout):
    """The runs of (model, layout) that count: the clean ones, or all when none is clean."""
    rows = [r for r in runs if r["model"] == model and r["layout"] == layout]
    clean = [r for r in rows if is_clean(r)]
    return clean or rows


def run_medians(runs):
    """{(model, layout): {step_s, lo, hi, n, cpu_cores, ...}} from measurements.csv rows, over
    the runs that count (used_runs)."""
    out = {}
    for model in MODELS:
        for layout in LAYOUTS:
            rows = used_runs(runs, model, layout)
            if not rows:
                continue
            steps = [float(r["step_s"]) for r in rows]
            total = len([r for r in runs if r["model"] == model and r["layout"] == layout])
            out[(model, layout)] = {
                "step_s": median(steps), "lo": min(steps), "hi": max(steps), "n": len(rows),
                "total": total, "clean": is_clean(rows[0]),
                "cpu_cores": median(float(r["cpu_s"]) / float(r["wall_s"]) for r in rows),
                "rate": median(r["rate_gflops_core"] for r in rows),
                "flops_per_step": median(r["flops_per_step"] for r in rows),
                "params": int(rows[0]["params"]),
                "others": median(r["others_cores"] for r in rows),
            }
    return out


def plan_value(plan, source, model, profile, nodes):
    (row,) = [p for p in plan if p["source"] == source and p["model"] == model
              and p["profile"] == profile and int(p["nodes"]) == nodes]
    return row


def prediction(plan, model, layout, network="measured"):
    cores, nodes = PLAN_LAYOUT[layout]
    row = plan_value(plan, "local", model, f"{cores} core(s)/node, {network} network", nodes)
    return float(row["compute_s"]), float(row["comm_s"])



def render_table(runs, plan):
    """The measured vs predicted table (markdown lines)."""
    medians = run_medians(runs)
    lines = ["| model | layout | runs used | measured s/step (min..max) | CPU cores busy "
             "| predicted compute s | predicted allreduce s | predicted s/step | error "
             "| speedup measured / predicted | efficiency measured / predicted |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for model in MODELS:
        one = medians.get((model, "1rank"))
        p_one = sum(prediction(plan, model, "1rank")) if one else None
        for layout in LAYOUTS:
            m = medians.get((model, layout))
            if m is None:
                continue
            compute, comm = prediction(plan, model, layout)
            total = compute + comm
            ranks, threads = LAYOUT_SHAPE[layout]
            cores = ranks * threads
            if one and layout != "1rank":
                speed = one["step_s"] / m["step_s"]
                p_speed = p_one / total
                scaling = (f"{speed:.2f}x / {p_speed:.2f}x",
                           f"{100 * speed / cores:.0f}% / {100 * p_speed / cores:.0f}%")
            else:
                scaling = ("1 / 1", "-")
            used = f"{m['n']} of {m['total']}" + ("" if m["clean"] else " (none clean)")
            lines.append(
                f"| {model} ({m['params']:,} params) | {LAYOUT_TEXT[layout]} | {used} | "
                f"{m['step_s']:.3f} ({m['lo']:.3f}..{m['hi']:.3f}) | {m['cpu_cores']:.2f} | "
                f"{compute:.4f} | {comm:.4f} | {total:.3f} | {percent(total / m['step_s'] - 1)} | "
                f"{scaling[0]} | {scaling[1]} |")
    return "\n".join(lines)


def render_flops(runs, plan):
    medians = run_medians(runs)
    lines = ["| model | steps per run | counted GFLOP per step (the runs) | plan's GFLOP per step "
             "| plan / counted | rate, 1 rank (GFLOP/s per core) | given to plan as --rate |",
             "|---|---|---|---|---|---|---|"]
    for model in MODELS:
        one = medians.get((model, "1rank"))
        if one is None:
            continue
        p = plan_value(plan, "local", model, "1 core(s)/node, measured network", 1)
        steps = int(median(r["steps"] for r in used_runs(runs, model, "1rank")))
        counted = one["flops_per_step"] / 1e9
        lines.append(f"| {model} | {steps} | {counted:.3f} | {float(p['gflop_step']):.3f} | "
                     f"{float(p['gflop_step']) / counted:.3f} | {one['rate']:.2f} | "
                     f"{float(p['rate_gflops_core']):.2f} |")
    return "\n".join(lines)


def net_stats(net, quantity, path):
    values = [float(r["value"]) for r in net if r["quantity"] == quantity and r["path"] == path]
    return (median(values), min(values), max(values), len(values)) if values else None


def render_network(net, runs, plan):
    lines = ["| quantity | between | median | min..max | n |", "|---|---|---|---|---|"]
    seen = []
    for r in net:
        key = (r["quantity"], r["path"])
        if key not in seen:
            seen.append(key)
    for quantity, path in seen:
        med, lo, hi, n = net_stats(net, quantity, path)
        unit = next(r["unit"] for r in net if r["quantity"] == quantity)
        digits = 2 if unit in ("GB/s",) else 1 if unit == "us" else 3
        lines.append(f"| {quantity} ({unit}) | {path} | {med:.{digits}f} | "
                     f"{lo:.{digits}f}..{hi:.{digits}f} | {n} |")
    lines += ["", "| model | gradient MB | model's allreduce s: measured link / profile defaults "
              "| measured MPI_Allreduce s: 2 nodes / 1 node | measured s/step: 2 nodes - 2 ranks "
              "on 1 node |", "|---|---|---|---|---|"]
    medians = run_medians(runs)
    for model in MODELS:
        p = plan_value(plan, "local", model, "1 core(s)/node, measured network", 2)
        d = plan_value(plan, "local", model, "1 core(s)/node, default network", 2)
        grad = 4 * int(p["params"])
        across = net_stats(net, f"MPI_Allreduce of the {model} gradient", "2 nodes (veth)")
        within = net_stats(net, f"MPI_Allreduce of the {model} gradient", "2 ranks, 1 node")
        two = medians.get((model, "2nodes"))
        local = medians.get((model, "2ranks1node"))
        mpi = (f"{across[0] / 1e3:.4f} / {within[0] / 1e3:.4f}" if across and within else "-")
        diff = f"{two['step_s'] - local['step_s']:+.4f}" if two and local else "-"
        lines.append(f"| {model} | {grad / 1e6:.2f} | {float(p['comm_s']):.4f} / "
                     f"{float(d['comm_s']):.4f} | {mpi} | {diff} |")
    return "\n".join(lines)


def duration(seconds):
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def render_paper(plan):
    lines = []
    profiles = []
    for p in plan:
        if p["source"] == "paper" and p["profile"] not in profiles:
            profiles.append(p["profile"])
    for profile in profiles:
        rows = [p for p in plan if p["source"] == "paper" and p["profile"] == profile]
        first = rows[0]
        lines += [f"**{profile}**: {first['cores_per_node']} cores per node, "
                  f"{float(first['bandwidth_gbs']):g} GB/s and {float(first['latency_us']):g} us "
                  f"between nodes, {float(first['rate_gflops_core']):.2f} GFLOP/s per core.", "",
                  "| row | params | GFLOP/step | nodes | compute s/step | allreduce s/step | "
                  "efficiency | wall, 100k steps | core-hours, 100k steps | wall, the row's steps "
                  "| core-hours, the row's steps |", "|---" * 11 + "|"]
        for p in rows:
            step = float(p["compute_s"]) + float(p["comm_s"])
            core_h = int(p["nodes"]) * int(p["cores_per_node"]) / 3600
            steps = int(p["steps"])
            lines.append(
                f"| {p['model']} | {int(p['params']) / 1e6:.1f}M | {float(p['gflop_step']):.0f} | "
                f"{p['nodes']} | {float(p['compute_s']):.4g} | {float(p['comm_s']):.4g} | "
                f"{100 * float(p['efficiency']):.1f}% | {duration(step * PAPER_STEPS)} | "
                f"{step * PAPER_STEPS * core_h:,.0f} | {duration(step * steps)} ({steps // 1000}k) "
                f"| {step * steps * core_h:,.0f} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def others_seen(runs):
    seen = {}
    for r in runs:
        for item in filter(None, r["others_top"].split("; ")):
            name, share = item.rsplit(" ", 1)
            count, top = seen.get(name, (0, 0.0))
            seen[name] = (count + 1, max(top, float(share)))
    return ", ".join(f"{name}: {count}, {top:.2f}" for name, (count, top) in
                     sorted(seen.items(), key=lambda kv: (-kv[1][0], kv[0]))) or "none"


def render_machine(meta, runs, net):
    loads = [float(r["load1_before"]) for r in runs] + [float(r["load1_before"]) for r in net]
    others = [float(r["others_cores"]) for r in runs]
    busy = [float(r["busy_before"]) for r in runs]
    sessions = sorted({(LAYOUT_TEXT[r["layout"]], r["rank_sessions"]) for r in runs})
    lines = [
        f"- CPU: {meta['cpu']}, {meta['cores']} cores ({meta['threads_per_core']} thread per "
        f"core), {meta['hypervisor']}; AVX2 {meta['avx2']}, FMA {meta['fma']}, "
        f"AVX-512F {meta['avx512f']}; L3 {meta['l3']}",
        f"- OpenBLAS kernel {meta['openblas_core']}; one thread per rank except in 1 rank x 2 "
        f"threads (OMP_NUM_THREADS = cluster.threads_per_rank, OPENBLAS_NUM_THREADS = 1, "
        f"OMP_WAIT_POLICY = passive); {meta['mpi']}; "
        f"{meta['kernel']}",
        f"- Binary: `{meta['binary_version']}`; runs of `{meta['runs_source']}`",
        f"- Written by `bench/scaling.py` on {meta['date']} in {meta['minutes']:.0f} minutes: "
        f"{len(runs)} training runs in rounds, each round training in turn (the order rotated "
        f"per round) every (model, layout) that still had fewer than {meta['reps']} clean runs "
        f"(runs during which other processes used at most {CLEAN_OTHERS} cores); then the link "
        f"probes",
        f"- Load: 1-minute load average {meta['load_start']} at the start (before anything was "
        f"paused), {min(loads):.2f}..{max(loads):.2f} when each window began (it lags: it still "
        f"counts the paused processes); the machine's busy cores over the 2 s before each "
        f"training run, with the processes below paused, {min(busy):.2f}..{max(busy):.2f} "
        f"(median {median(busy):.2f}); other processes' CPU during the training windows "
        f"{min(others):.2f}..{max(others):.2f} cores (median {median(others):.2f}), measured "
        f"as the machine's busy time (/proc/stat) minus the ranks' own",
        f"- Scheduling: autogroup is {meta['autogroup']} (CPU time is shared between sessions "
        f"first); sessions the ranks ran in, per layout: "
        f"{', '.join(f'{layout}: {n}' for layout, n in sessions)}",
        f"- Paused (SIGSTOP) during every window, resumed between windows: "
        f"{meta['paused_text']}",
        f"- Other processes that took at least 5% of a core during a training window (name: "
        f"windows, largest share in cores): {others_seen(runs)}",
    ]
    return "\n".join(lines)


def render_findings(runs, plan, net):
    medians = run_medians(runs)
    out = []
    for model in MODELS:
        one, threaded, local, two = (medians.get((model, k)) for k in LAYOUTS)
        if not (one and local and two):
            continue
        p_one = sum(prediction(plan, model, "1rank"))
        p_local = sum(prediction(plan, model, "2ranks1node"))
        p_two = sum(prediction(plan, model, "2nodes"))
        out.append(
            f"- {model}: 1 rank {one['step_s']:.3f} s/step against {p_one:.3f} predicted "
            f"({percent(p_one / one['step_s'] - 1)}); 2 ranks on one node {local['step_s']:.3f} "
            f"s/step, a speedup of {one['step_s'] / local['step_s']:.2f}x where the model says "
            f"{p_one / p_local:.2f}x; 2 nodes {two['step_s']:.3f} s/step "
            f"({one['step_s'] / two['step_s']:.2f}x; model {p_one / p_two:.2f}x), "
            f"{two['step_s'] - local['step_s']:+.4f} s/step against 2 ranks on one node, where "
            f"the model's allreduce is {prediction(plan, model, '2nodes')[1]:.4f} s.")
        if threaded:
            faster = "threads" if threaded["step_s"] < local["step_s"] else "ranks"
            out.append(
                f"  The same two cores as 1 rank x 2 threads: {threaded['step_s']:.3f} s/step "
                f"({one['step_s'] / threaded['step_s']:.2f}x over 1 rank) against "
                f"{local['step_s']:.3f} s/step as 2 ranks x 1 thread "
                f"({one['step_s'] / local['step_s']:.2f}x): {faster} are faster here, by "
                f"{percent(max(threaded['step_s'], local['step_s']) / min(threaded['step_s'], local['step_s']) - 1)}.")
        across = net_stats(net, f"MPI_Allreduce of the {model} gradient", "2 nodes (veth)")
        within = net_stats(net, f"MPI_Allreduce of the {model} gradient", "2 ranks, 1 node")
        half = one["step_s"] / 2
        out.append(
            f"  What did not halve (measured s/step minus half the 1-rank step): "
            f"{local['step_s'] - half:+.4f} s on one node"
            + (f" (its MPI_Allreduce alone: {within[0] / 1e3:.4f} s)" if within else "")
            + f", {two['step_s'] - half:+.4f} s on two nodes"
            + (f" (MPI_Allreduce alone: {across[0] / 1e3:.4f} s)" if across else "") + ".")
        if across and within:
            default = plan_value(plan, "local", model, "1 core(s)/node, default network", 2)
            out.append(
                f"  MPI_Allreduce of its {4 * one['params'] / 1e6:.1f} MB gradient alone: "
                f"{across[0]:.2f} ms across the nodes (the model: "
                f"{1e3 * prediction(plan, model, '2nodes')[1]:.2f} ms with the measured link, "
                f"{1e3 * float(default['comm_s']):.2f} ms with the profile's defaults) and "
                f"{within[0]:.2f} ms between 2 ranks of one node (the model: 0).")
    return "\n".join(out)


def render_blocks(results):
    """Every generated block of the page, from the CSV files and meta.json in `results`."""
    runs = read_csv(results / "measurements.csv")
    net = read_csv(results / "network.csv")
    plan = read_csv(results / "plan.csv")
    meta = json.loads((results / "meta.json").read_text())
    return {
        "machine": render_machine(meta, runs, net),
        "table": render_table(runs, plan),
        "findings": render_findings(runs, plan, net),
        "flops": render_flops(runs, plan),
        "network": render_network(net, runs, plan),
        "paper": render_paper(plan),
        "paper_command": "```text\n" + (results / "plan-table3.txt").read_text().rstrip("\n")
                         + "\n```",
    }


BLOCK = re.compile(r"<!-- begin generated: (\w+) -->\n(.*?)<!-- end generated: \1 -->", re.S)


def page_blocks(text):
    return {name: body.rstrip("\n") for name, body in BLOCK.findall(text)}


SKELETON = """# Data-parallel scaling: measured here vs. `attnlab plan`

{blocks}
"""


def write_page(page, results):
    blocks = render_blocks(results)
    if page.exists():
        text = page.read_text()
    else:
        text = SKELETON.format(blocks="\n\n".join(
            f"<!-- begin generated: {name} -->\n<!-- end generated: {name} -->" for name in blocks))
    for name, body in blocks.items():
        marker = f"<!-- begin generated: {name} -->\n"
        if marker not in text:
            text = text.rstrip("\n") + f"\n\n{marker}<!-- end generated: {name} -->\n"
        text = BLOCK.sub(lambda m: (f"<!-- begin generated: {m.group(1)} -->\n{blocks[m.group(1)]}"
                                    f"\n<!-- end generated: {m.group(1)} -->"
                                    if m.group(1) in blocks else m.group(0)), text)
    page.write_text(text)
    return blocks


