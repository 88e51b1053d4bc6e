"""bench/scaling.py's training runs (one process, mpirun on one node, a sweep on the two-node
Slurm) read back into step times, and `attnlab plan`'s predictions for the same layouts."""

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

from scaling_config import LAYOUT_SHAPE, MODELS, PAPER, ROOT, SCALE, TWO_NODES
from scaling_pause import CLEANUP, read_proc


# --- the runs -------------------------------------------------------------------------------------


def train_env():
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.setdefault("OMP_WAIT_POLICY", "passive")  # as the local and Slurm launchers set it
    if "OPENBLAS_CORETYPE" not in env:
        kernel = subprocess.run(["bash", str(ROOT / "cluster" / "env.sh")], capture_output=True,
                                text=True, timeout=30).stdout.strip()
        if kernel:
            env["OPENBLAS_CORETYPE"] = kernel
    return env


def yaml_flow(value):
    return json.dumps(value)  # JSON is YAML


def write_experiment(work, model, steps):
    """The experiment file of one model (every layout trains this file) and a one-run sweep of it
    for Slurm and for attnlab plan."""
    overrides = {}
    for key, value in MODELS[model].items():
        section, name = key.split(".")
        overrides.setdefault(section, {})[name] = value
    text = [f"base: {SCALE}", f"name: scaling-{model}"]
    if "model" in overrides:
        text.append(f"model: {yaml_flow(overrides['model'])}")
    text += [f"train: {{steps: {steps}, checkpoint_every: 0}}",
             "eval: {every: 0}", "log: {every: 10}", "cluster: {ranks: 1, threads_per_rank: 1}"]
    experiment = work / f"{model}.yaml"
    experiment.write_text("\n".join(text) + "\n")
    sweep = work / f"{model}-2nodes.yaml"
    sweep.write_text(f"base: {experiment.name}\nname: scaling-{model}-2nodes\n"
                     "cluster: {ranks: 2}\nsweep:\n  seeds: [1]\n")
    plan = work / f"{model}-plan.yaml"
    plan.write_text(f"base: {experiment.name}\nname: scaling-{model}-plan\nsweep:\n  seeds: [1]\n")
    return experiment, sweep, plan


def read_run(run_dir):
    """Time per step and rate of a finished run, from its run.h5 (read by analysis.runfile)."""
    # Imported here so that --render-only needs only csv.
    import numpy as np
    from analysis.runfile import RunStatus, read_run as read_run_file
    data = read_run_file(Path(run_dir) / "run.h5", with_attention=False)
    status = data.status
    world = int(data.attrs["world_size"])
    threads = int(data.attrs["threads"])
    summary = data.summary
    steps = data.train["step"].to_numpy(dtype=float)
    wall = data.train["wall_time"].to_numpy(dtype=float)
    tokens = data.train["tokens"].to_numpy(dtype=float)
    if status != RunStatus.COMPLETED:
        raise RuntimeError(f"{run_dir}: status {status}")
    skip = max(5, int(steps[-1]) // 10)
    first = int(np.searchsorted(steps, skip))
    span = steps[-1] - steps[first]
    seconds = wall[-1] - wall[first]
    flops_per_token = summary["train_flops"] / summary["train_tokens"]
    return {
        "world_size": world,
        "threads": threads,
        "steps": int(steps[-1]),
        "steady_from": int(steps[first]),
        "step_s": seconds / span,
        "step_s_median": float(np.median(np.diff(wall[first:]) / np.diff(steps[first:]))),
        "flops_per_step": summary["train_flops"] / int(summary["steps"]),
        # What attnlab plan's measured_rate computes, over the steady steps, per core (the
        # ranks times their threads).
        "rate_gflops_core": (flops_per_token * (tokens[-1] - tokens[first]) / seconds
                             / (world * threads) / 1e9),
        "params": int(summary["params"]),
    }


def our_processes(marker, binary=None):
    """{pid: autogroup} of the processes whose command line contains `marker` (the run's
    directory), only those running `binary` when given."""
    found = {}
    real = os.path.realpath(binary) if binary else None
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        cmdline = read_proc(entry, "cmdline")
        if cmdline is None or marker.encode() not in cmdline:
            continue
        try:
            if real and os.path.realpath(f"/proc/{entry}/exe") != real:
                continue
        except OSError:
            continue
        group = (read_proc(entry, "autogroup") or b"?").decode().split()[0]
        found[int(entry)] = group
    return found


def wait_child(pid, timeout, on_timeout, poll=None):
    """os.wait4 on our child pid with a time limit: (status, cpu seconds, wall seconds); calls
    `poll` about once a second while it runs."""
    start = time.monotonic()
    killed = False
    last_poll = 0.0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done == pid:
            return status, usage.ru_utime + usage.ru_stime, time.monotonic() - start
        if poll and time.monotonic() - last_poll > 1.0:
            poll()
            last_poll = time.monotonic()
        if not killed and time.monotonic() - start > timeout:
            on_timeout()
            killed = True
        time.sleep(0.1)


def run_local(binary, experiment, layout, out_dir, env, timeout, window):
    """One training run started here (1 rank of 1 or 2 threads, or 2 ranks under mpirun); returns
    its rusage too.

    Each rank runs in a session of its own (setsid -w), as the ranks slurmd starts do: with the
    kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled) CPU time is shared
    between sessions first, so two ranks in one session would get one session's share against
    every other session's process, and the two launchers would not be compared alike."""
    ranks, threads = LAYOUT_SHAPE[layout]
    env = dict(env, OMP_NUM_THREADS=str(threads))
    command = ["setsid", "-w", str(binary), "train", "-c", str(experiment), "--set",
               f"cluster.ranks={ranks}", "--set", f"cluster.threads_per_rank={threads}", "--out",
               str(out_dir)]
    if ranks > 1:
        command = ["mpirun", "-np", str(ranks), "--bind-to", "none"] + (
            ["--allow-run-as-root"] if os.geteuid() == 0 else []) + command
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    groups = {}

    def poll():
        groups.update(our_processes(str(out_dir), binary))

    def stop_ranks():
        # Ours, by pid: the launcher and every rank of this run.
        for pid in [child.pid, *our_processes(str(out_dir))]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    with open(str(out_dir) + ".log", "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    CLEANUP.append(stop_ranks)
    status, cpu, wall = wait_child(child.pid, timeout, stop_ranks, poll)
    CLEANUP.remove(stop_ranks)
    child.returncode = os.waitstatus_to_exitcode(status)
    window.finish(cpu, ours=lambda pid, entry: str(out_dir) in entry[2])
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}: see {out_dir}.log")
    return {"cpu_s": cpu, "wall_s": wall, "nodes_seen": "local",
            "rank_sessions": len(set(groups.values()))}


def netns_inode(name):
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except OSError:
        return None


def run_slurm(binary, sweep, out_dir, env, timeout, window, net):
    """The one-run sweep through the two-node Slurm; CPU time of the ranks sampled from /proc."""
    submit = subprocess.run([str(binary), "sweep", str(sweep), "--launcher", "slurm", "--profile",
                             str(TWO_NODES), "--out", str(out_dir)], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=120)
    match = re.search(r"submitted job array (\d+)", submit.stdout)
    if submit.returncode != 0 or not match:
        raise RuntimeError(f"sweep submission failed:\n{submit.stdout}\n{submit.stderr}")
    job = match.group(1)

    def cancel():
        subprocess.run(["scancel", job], env=env, timeout=30)

    CLEANUP.append(cancel)
    start = time.monotonic()
    real = os.path.realpath(binary)
    nodes = {netns_inode(f"{net}-n{i}"): f"n{i}" for i in (1, 2)}
    ranks = {}  # pid -> (cpu seconds, node, first seen, last seen)
    groups = {}  # pid -> autogroup
    while True:
        now = time.monotonic()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.path.realpath(f"/proc/{entry}/exe") != real:
                    continue
                cmdline = read_proc(entry, "cmdline") or b""
                if str(out_dir).encode() not in cmdline:
                    continue
                stat = read_proc(entry, "stat").decode()
                node = nodes.get(os.stat(f"/proc/{entry}/ns/net").st_ino, "?")
            except (OSError, AttributeError):
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            first = ranks.get(int(entry), (0, node, now, now))[2]
            ranks[int(entry)] = (cpu, node, first, now)
            groups[int(entry)] = (read_proc(entry, "autogroup") or b"?").decode().split()[0]
        queue = subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True,
                               env=env, timeout=30).stdout.strip()
        if not queue:
            break
        if now - start > timeout:
            subprocess.run(["scancel", job], env=env, timeout=30)
            raise RuntimeError(f"job {job} ran over {timeout} s")
        time.sleep(0.25)
    CLEANUP.remove(cancel)
    cpu = sum(r[0] for r in ranks.values())
    wall = (max(r[3] for r in ranks.values()) - min(r[2] for r in ranks.values())) if ranks else 0
    window.finish(cpu, ours=lambda pid, entry: str(out_dir) in entry[2])
    status = subprocess.run([str(binary), "status", str(out_dir / sweep_name(sweep))],
                            capture_output=True, text=True, env=env, timeout=60).stdout
    if "1 runs: 1 completed" not in status:
        raise RuntimeError(f"the 2-node run did not complete:\n{status}")
    return {"cpu_s": cpu, "wall_s": wall,
            "nodes_seen": "+".join(sorted({r[1] for r in ranks.values()})),
            "rank_sessions": len(set(groups.values()))}


def sweep_name(sweep):
    return re.search(r"^name: (\S+)", Path(sweep).read_text(), re.M).group(1)


def run_dir_of(out_dir, sweep):
    (run,) = [d for d in (out_dir / sweep_name(sweep)).iterdir() if (d / "run.h5").is_file()]
    return run


# --- attnlab plan ---------------------------------------------------------------------------------


NODES_LINE = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+([\d.]+)%\s+(.+?)\s*$")


def run_plan(binary, sweep, profile, rate):
    """attnlab plan's numbers: {rows: {row: (runs, steps, gflop_step, params)}, nodes: {n:
    (compute s, allreduce s, efficiency)}, text: its output}."""
    result = subprocess.run([str(binary), "plan", str(sweep), "--profile", str(profile),
                             "--rate", repr(rate)], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"attnlab plan {sweep} failed:\n{result.stdout}\n{result.stderr}")
    lines = result.stdout.splitlines()
    rows, nodes = {}, {}
    table = lines.index(next(x for x in lines if x.startswith("row ")))
    for line in lines[table + 1:]:
        if not line.strip():
            break
        words = line.split()
        # name runs done cap expected GFLOP/step params wall(2 words) core-hours left; the
        # steps are the expected ones (the cap here: these runs have no stop rule)
        rows[words[0]] = (int(words[1]), int(words[4]), float(words[5]), int(words[6]))
    header = lines.index(next(x for x in lines if x.strip().startswith("nodes")))
    for line in lines[header + 1:]:
        match = NODES_LINE.match(line)
        if match:
            nodes[int(match.group(1))] = (float(match.group(2)), float(match.group(3)),
                                          float(match.group(4)) / 100)
    return {"rows": rows, "nodes": nodes, "text": result.stdout}


def write_profile(path, cores, bandwidth=None, latency=None, base=None):
    lines = [base.read_text().rstrip("\n")] if base else []
    lines.append(f"cores_per_node: {cores}")
    if bandwidth is not None:
        lines.append(f"network_bandwidth: {bandwidth!r}")
    if latency is not None:
        lines.append(f"network_latency_us: {latency!r}")
    path.write_text("\n".join(lines) + "\n")
    return path


def paper_sweep(work, row_name):
    """A sweep of one row of experiments/paper/table3.yaml (plan shows the scaling of the first
    row only)."""
    import yaml
    paper = yaml.safe_load(PAPER.read_text())
    (row,) = [r for r in paper["sweep"]["rows"] if r["name"] == row_name]
    path = work / f"paper-{row_name}.yaml"
    path.write_text(yaml.safe_dump({"base": str((PAPER.parent / paper["base"]).resolve()),
                                    "name": f"table3-{row_name}", "sweep": {"rows": [row]}}))
    return path


