#!/usr/bin/python3
"""Measured data-parallel scaling on this machine against `attnlab plan`'s cost model.

Trains two models of experiments/small/table3-scale.yaml (its base, d_model 64, and a wider one)
on Bible en->es for a few hundred steps in three layouts, side by side and `--reps` times each:

    1 rank            attnlab train, one process, one thread
    2 ranks, 1 node   mpirun -np 2 --bind-to none (shared memory between the ranks)
    2 nodes           a sweep of one run on the two-node Slurm of `local-slurm.sh up --nodes 2`
                      (cluster/profiles/local-2nodes.yaml: one rank per node, TCP over the nodes'
                      veth pairs and bridge)

Time per step is the mean over the steady steps of the run's /train series (log.every 10; the
first 10% of the steps are left out). It also measures the link between the two nodes (TCP bulk
transfer and round trips with Python sockets, and MPI_Allreduce of each model's gradient with a
small C probe built here by mpicc, across the nodes and within one node), then runs `attnlab plan`
with the per-core rate of the 1-rank runs and those link values to get the model's predictions,
and writes:

    docs/results/scaling/measurements.csv   one row per training run (raw)
    docs/results/scaling/network.csv        one row per link measurement (raw)
    docs/results/scaling/plan.csv           attnlab plan's numbers the tables use
    docs/results/scaling/meta.json          machine, binary, load, what was paused
    docs/results/scaling.md                 the generated blocks between <!-- begin generated -->
                                            markers; the prose around them is kept

Each training run and each link probe is one window during which the processes named by --pause or
by SCALING_PAUSE (substrings of their command lines, as pgrep -f matches them; SCALING_PAUSE holds
them separated by ':' and keeps them off this script's own command line, where a `pkill -f
PATTERN` meant for those processes would also hit this script) are stopped with SIGSTOP; they get
SIGCONT after the window, on an error and on exit, and --resume-seconds between windows. Do not
name libFuzzer targets: libFuzzer times each input on the wall clock, so a pause longer than its
-timeout ends it with a false timeout finding when it continues. The
page's numbers come only from the CSV files: `--render-only` rewrites the page from them, and
tests/python/test_scaling_page.py checks that the page is what they give.

    SCALING_PAUSE=PATTERN[:PATTERN...] /usr/bin/python3 bench/scaling.py [--binary build/attnlab]
    /usr/bin/python3 bench/scaling.py --render-only

`make bench-scaling` builds attnlab and runs this script (about 45 minutes on a 2-core machine).
"""

import argparse
import atexit
import csv
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results" / "scaling"
PAGE = ROOT / "docs" / "results" / "scaling.md"
SCALE = ROOT / "experiments" / "small" / "table3-scale.yaml"
PAPER = ROOT / "experiments" / "paper" / "table3.yaml"
EXAMPLE_HPC = ROOT / "cluster" / "profiles" / "example-hpc.yaml"
TWO_NODES = ROOT / "cluster" / "profiles" / "local-2nodes.yaml"
LOCAL_SLURM = ROOT / "cluster" / "local-slurm.sh"

# The two widths measured: table3-scale.yaml's base, and 4x its width (d_k = d_v = d_model / h).
MODELS = {
    "base": {},
    "wide": {"model.d_model": 256, "model.d_ff": 1024, "model.d_k": 32, "model.d_v": 32},
}
MODEL_TEXT = {"base": "d_model 64, d_ff 256", "wide": "d_model 256, d_ff 1024"}
# Steps per run: about one to two minutes of one rank here.
DEFAULT_STEPS = {"base": 300, "wide": 80}
LAYOUTS = ["1rank", "2ranks1node", "2nodes"]
LAYOUT_TEXT = {"1rank": "1 rank", "2ranks1node": "2 ranks, 1 node", "2nodes": "2 nodes x 1 rank"}
# What `attnlab plan` is asked for each layout: (cores_per_node, nodes, network).
PLAN_LAYOUT = {"1rank": (1, 1), "2ranks1node": (2, 1), "2nodes": (1, 2)}
# A typical CPU cluster, for the paper's Table 3 (an assumption stated on the page, not a
# measurement): two 24-core sockets per node, 100 Gb/s InfiniBand (12.5 GB/s, 2 us per message).
ASSUMED_CLUSTER = {"cores_per_node": 48, "network_bandwidth": 12.5, "network_latency_us": 2.0}
NODE_COUNTS = [1, 2, 4, 8, 16, 32, 64]
# A run counts when other processes used at most this many cores (beside the ranks) during it:
# the machine is shared, and a run that others slowed down measures them, not the layout.
CLEAN_OTHERS = 0.1
PAPER_STEPS = 100000
BULK_BYTES = 64 * 2**20
BULK_REPS = 5
ROUND_TRIPS = 1000
ALLREDUCE_REPS = 30

# --- pausing other processes ----------------------------------------------------------------------


def read_proc(pid, name):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


def process_table():
    """{pid: (ppid, comm, cmdline, cpu_seconds)} of every process readable now."""
    ticks = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = read_proc(entry, "stat")
        cmdline = read_proc(entry, "cmdline")
        if stat is None or cmdline is None:
            continue
        stat = stat.decode(errors="replace")
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        table[int(entry)] = (int(fields[1]), comm,
                             cmdline.replace(b"\0", b" ").decode(errors="replace").strip(), cpu)
    return table


def family(table, pid):
    """pid, its ancestors and its descendants."""
    related = {pid}
    up = pid
    while up in table and table[up][0] > 0:
        up = table[up][0]
        related.add(up)
    children = {}
    for p, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(p)
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in related:
                related.add(child)
                todo.append(child)
    return related


class Pauser:
    """SIGSTOP / SIGCONT of the processes whose command line contains one of `patterns` (never
    this script, its ancestors or its children). The stopped pids are kept in `state_file` too, so
    that `--resume-paused` can continue them if this script itself was killed."""

    def __init__(self, patterns, state_file):
        self.patterns = [p for p in patterns if p]
        self.state_file = Path(state_file)
        self.stopped = []
        self.log = []  # (pattern, pid, command) of everything ever stopped

    def matching(self):
        table = process_table()
        mine = family(table, os.getpid())
        found = []
        for pid, (_ppid, _comm, cmdline, _cpu) in sorted(table.items()):
            if pid in mine:
                continue
            for pattern in self.patterns:
                if pattern in cmdline:
                    found.append((pattern, pid, cmdline))
                    break
        return found

    def stop(self):
        if not self.patterns:
            return []
        for pattern, pid, cmdline in self.matching():
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            self.stopped.append(pid)
            if pid not in {p for _, p, _ in self.log}:
                self.log.append((pattern, pid, cmdline[:160]))
        self.state_file.write_text("".join(f"{pid}\n" for pid in self.stopped))
        return list(self.stopped)

    def resume(self):
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.stopped = []
        if self.state_file.exists():
            self.state_file.unlink()


# What ends the measurement running now (our own processes, by pid or job id) if this script is
# stopped in the middle of it.
CLEANUP = []


def cleanup():
    while CLEANUP:
        try:
            CLEANUP.pop()()
        except Exception as error:  # noqa: BLE001 - best effort on the way out
            print(f"cleanup: {error}", file=sys.stderr)


def resume_from_state(state_file):
    path = Path(state_file)
    if not path.exists():
        print(f"nothing to resume: {path} does not exist")
        return
    for line in path.read_text().split():
        try:
            os.kill(int(line), signal.SIGCONT)
            print(f"SIGCONT {line}")
        except ProcessLookupError:
            print(f"{line} is gone")
    path.unlink()


def cpu_busy_seconds():
    """Seconds of CPU time the whole machine spent busy (all cores), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def busy_cores(seconds):
    """Cores the machine keeps busy over the next `seconds`."""
    before = cpu_busy_seconds()
    time.sleep(seconds)
    return (cpu_busy_seconds() - before) / seconds


class Window:
    """One measurement window: others paused, load and the machine's CPU use recorded. Before it
    starts, with the others paused, the machine must be quieter than `quiet` busy cores over 2 s;
    otherwise the paused processes run again and it tries again 10 s later, for at most
    `quiet_wait` seconds (then it measures anyway and the CSV says how busy it was)."""

    def __init__(self, pauser, resume_seconds, quiet=None, quiet_wait=0.0):
        self.pauser, self.resume_seconds = pauser, resume_seconds
        self.quiet, self.quiet_wait = quiet, quiet_wait

    def __enter__(self):
        self.load_before = os.getloadavg()[0]
        waited = 0.0
        while True:
            self.paused = len(self.pauser.stop())
            time.sleep(0.5)  # let the stopped processes leave the cores
            self.busy_before = busy_cores(2.0) if self.quiet is not None else float("nan")
            if self.quiet is None or self.busy_before <= self.quiet or waited >= self.quiet_wait:
                break
            self.pauser.resume()
            time.sleep(10)
            waited += 12.5
        self.waited = waited
        self.table = process_table()
        self.busy = cpu_busy_seconds()
        self.start = time.monotonic()
        return self

    def finish(self, ours_cpu, ours=lambda pid, entry: False):
        """Call at the end of the measurement: the load other processes put on the machine."""
        wall = time.monotonic() - self.start
        busy = cpu_busy_seconds() - self.busy
        table = process_table()
        others = {}
        for pid, (ppid, comm, cmdline, cpu) in table.items():
            if ours(pid, (ppid, comm, cmdline, cpu)):
                continue
            used = cpu - (self.table[pid][3] if pid in self.table else 0.0)
            if used > 0.05 * wall:  # at least 5% of one core
                others[comm] = others.get(comm, 0.0) + used
        self.others_cores = max(0.0, busy - ours_cpu) / wall
        self.others_top = "; ".join(f"{name} {used / wall:.2f}" for name, used in
                                    sorted(others.items(), key=lambda kv: -kv[1])[:3])
        self.window_wall = wall

    def __exit__(self, *exc):
        self.pauser.resume()
        if exc[0] is None:
            time.sleep(self.resume_seconds)
        return False


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
    """Time per step and rate of a finished run, from its run.h5."""
    import h5py  # Debian's python3-h5py; imported here so that --render-only needs only csv
    import numpy as np
    with h5py.File(Path(run_dir) / "run.h5", "r") as f:
        status = f.attrs["status"]
        status = status.decode() if isinstance(status, bytes) else str(status)
        world = int(f.attrs["world_size"])
        summary = dict(f["summary"].attrs)
        steps = np.asarray(f["train"]["step"][...], dtype=float)
        wall = np.asarray(f["train"]["wall_time"][...], dtype=float)
        tokens = np.asarray(f["train"]["tokens"][...], dtype=float)
    if status != "completed":
        raise RuntimeError(f"{run_dir}: status {status}")
    skip = max(5, int(steps[-1]) // 10)
    first = int(np.searchsorted(steps, skip))
    span = steps[-1] - steps[first]
    seconds = wall[-1] - wall[first]
    flops_per_token = summary["train_flops"] / summary["train_tokens"]
    return {
        "world_size": world,
        "steps": int(steps[-1]),
        "steady_from": int(steps[first]),
        "step_s": seconds / span,
        "step_s_median": float(np.median(np.diff(wall[first:]) / np.diff(steps[first:]))),
        "flops_per_step": summary["train_flops"] / int(summary["steps"]),
        # What attnlab plan's measured_rate computes, over the steady steps, per core.
        "rate_gflops_core": flops_per_token * (tokens[-1] - tokens[first]) / seconds / world / 1e9,
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


def run_local(binary, experiment, ranks, out_dir, env, timeout, window):
    """One training run started here (1 rank, or 2 under mpirun); returns its rusage too.

    Each rank runs in a session of its own (setsid -w), as the ranks slurmd starts do: with the
    kernel's autogroup scheduling (/proc/sys/kernel/sched_autogroup_enabled) CPU time is shared
    between sessions first, so two ranks in one session would get one session's share against
    every other session's process, and the two launchers would not be compared alike."""
    command = ["setsid", "-w", str(binary), "train", "-c", str(experiment), "--set",
               f"cluster.ranks={ranks}", "--out", str(out_dir)]
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


# --- the link between the nodes -------------------------------------------------------------------


def recv_exactly(conn, size):
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = conn.recv_into(view[got:], min(size - got, 1 << 20))
        if n == 0:
            raise ConnectionError("closed")
        got += n
    return bytes(buffer)


def net_server(address):
    """Serves bulk transfers (B size: read size bytes, answer K) and echo round trips (P count)
    until Q; runs inside node 1's network namespace."""
    host, port = address.rsplit(":", 1)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(4)
    print("ready", flush=True)
    sink = bytearray(1 << 20)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while True:
                head = conn.recv(1)
                if not head:
                    break
                if head == b"Q":
                    return
                (count,) = struct.unpack("!Q", recv_exactly(conn, 8))
                if head == b"B":
                    left = count
                    while left:
                        n = conn.recv_into(sink, min(left, len(sink)))
                        if n == 0:
                            raise ConnectionError("closed")
                        left -= n
                    conn.sendall(b"K")
                elif head == b"P":
                    for _ in range(count):
                        conn.sendall(recv_exactly(conn, 8))


def net_client(address, bulk_bytes, bulk_reps, round_trips, quit_after):
    """Bulk transfer times and round-trip times to the server, as JSON on stdout."""
    host, port = address.rsplit(":", 1)
    conn = socket.create_connection((host, int(port)), timeout=60)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    chunk = bytes(1 << 20)
    bulk = []
    for _ in range(bulk_reps):
        start = time.perf_counter()
        conn.sendall(b"B" + struct.pack("!Q", bulk_bytes))
        left = bulk_bytes
        while left:
            conn.sendall(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))
        assert recv_exactly(conn, 1) == b"K"
        bulk.append(time.perf_counter() - start)
    conn.sendall(b"P" + struct.pack("!Q", round_trips + 50))
    rtt = []
    message = b"12345678"
    for i in range(round_trips + 50):
        start = time.perf_counter()
        conn.sendall(message)
        recv_exactly(conn, 8)
        if i >= 50:
            rtt.append(time.perf_counter() - start)
    if quit_after:
        conn.sendall(b"Q")
    conn.close()
    print(json.dumps({"bulk_s": bulk, "bulk_bytes": bulk_bytes, "rtt_s": rtt}))


ALLREDUCE_PROBE = r"""
/* MPI_Allreduce (sum, in place, float) of N floats, as attnlab's gradient allreduce; written and
   built by bench/scaling.py. Prints the per-call time (max over ranks) of each repetition. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long n = atol(argv[1]);
  int reps = atoi(argv[2]), warm = 3;
  float* buf = malloc(n * sizeof(float));
  double* t = calloc(reps, sizeof(double));
  for (long i = 0; i < n; ++i) buf[i] = 1e-3f;
  for (int r = -warm; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (r >= 0) t[r] = MPI_Wtime() - t0;
  }
  MPI_Allreduce(MPI_IN_PLACE, t, reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  char host[256] = "";
  gethostname(host, sizeof host);
  if (rank == 0) {
    printf("{\"floats\": %ld, \"ranks\": %d, \"host\": \"%s\", \"seconds\": [", n, size, host);
    for (int r = 0; r < reps; ++r) printf("%s%.9f", r ? ", " : "", t[r]);
    printf("]}\n");
  }
  free(buf);
  free(t);
  MPI_Finalize();
  return 0;
}
"""


def build_probe(work):
    if shutil.which("mpicc") is None:
        return None
    source = work / "allreduce_probe.c"
    source.write_text(ALLREDUCE_PROBE)
    binary = work / "allreduce_probe"
    subprocess.run(["mpicc", "-O2", "-o", str(binary), str(source)], check=True, timeout=120)
    return binary


def probe_json(text):
    line = [x for x in text.splitlines() if x.startswith("{")]
    if not line:
        raise RuntimeError(f"no result from the probe:\n{text}")
    return json.loads(line[-1])


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


# --- CSV files ------------------------------------------------------------------------------------

RUN_FIELDS = ["model", "layout", "rep", "order", "started", "steps", "steady_from", "step_s",
              "step_s_median", "flops_per_step", "rate_gflops_core", "params", "world_size",
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


def fmt(value, digits=3):
    return f"{float(value):.{digits}f}"


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


def pct(value):
    return f"{100 * value:+.0f}%"


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
            ranks = 1 if layout == "1rank" else 2
            if one and layout != "1rank":
                speed = one["step_s"] / m["step_s"]
                p_speed = p_one / total
                scaling = (f"{speed:.2f}x / {p_speed:.2f}x",
                           f"{100 * speed / ranks:.0f}% / {100 * p_speed / ranks:.0f}%")
            else:
                scaling = ("1 / 1", "-")
            used = f"{m['n']} of {m['total']}" + ("" if m["clean"] else " (none clean)")
            lines.append(
                f"| {model} ({m['params']:,} params) | {LAYOUT_TEXT[layout]} | {used} | "
                f"{m['step_s']:.3f} ({m['lo']:.3f}..{m['hi']:.3f}) | {m['cpu_cores']:.2f} | "
                f"{compute:.4f} | {comm:.4f} | {total:.3f} | {pct(total / m['step_s'] - 1)} | "
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
        f"- OpenBLAS kernel {meta['openblas_core']}; one thread per rank (OMP_NUM_THREADS = "
        f"OPENBLAS_NUM_THREADS = 1, OMP_WAIT_POLICY = passive); {meta['mpi']}; "
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
        one, local, two = (medians.get((model, k)) for k in LAYOUTS)
        if not (one and local and two):
            continue
        p_one = sum(prediction(plan, model, "1rank"))
        p_local = sum(prediction(plan, model, "2ranks1node"))
        p_two = sum(prediction(plan, model, "2nodes"))
        out.append(
            f"- {model}: 1 rank {one['step_s']:.3f} s/step against {p_one:.3f} predicted "
            f"({pct(p_one / one['step_s'] - 1)}); 2 ranks on one node {local['step_s']:.3f} "
            f"s/step, a speedup of {one['step_s'] / local['step_s']:.2f}x where the model says "
            f"{p_one / p_local:.2f}x; 2 nodes {two['step_s']:.3f} s/step "
            f"({one['step_s'] / two['step_s']:.2f}x; model {p_one / p_two:.2f}x), "
            f"{two['step_s'] - local['step_s']:+.4f} s/step against 2 ranks on one node, where "
            f"the model's allreduce is {prediction(plan, model, '2nodes')[1]:.4f} s.")
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


# --- machine facts --------------------------------------------------------------------------------


def autogroup_enabled():
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return False


def machine_facts(binary, env):
    info = open("/proc/cpuinfo").read()
    flags = set(re.search(r"^flags\s*:(.*)$", info, re.M).group(1).split())
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout

    def field(name):
        match = re.search(rf"^{name}:\s*(.+)$", lscpu, re.M)
        return match.group(1).strip() if match else "?"

    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True).stdout
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    return {
        "cpu": re.search(r"^model name\s*:\s*(.+)$", info, re.M).group(1).strip(),
        "cores": os.cpu_count(),
        "threads_per_core": field("Thread\\(s\\) per core"),
        "hypervisor": f"{field('Hypervisor vendor')} guest" if "hypervisor" in flags else "bare",
        "avx2": "yes" if "avx2" in flags else "no",
        "fma": "yes" if "fma" in flags else "no",
        "avx512f": "yes" if "avx512f" in flags else "no",
        "l3": field("L3 cache"),
        "openblas_core": env.get("OPENBLAS_CORETYPE", "chosen by OpenBLAS"),
        "mpi": mpi.splitlines()[0] if mpi else "?",
        "kernel": f"Linux {platform.release()}",
        "binary_version": version.strip(),
        "autogroup": "on" if autogroup_enabled() else "off",
    }


# --- main -----------------------------------------------------------------------------------------


def slurm_env(args):
    return dict(os.environ, ATTNLAB_SLURM_DIR=args.slurm_dir,
                ATTNLAB_SLURM_PORT=str(args.slurm_port), ATTNLAB_SLURM_NET=args.slurm_net,
                ATTNLAB_SLURM_SUBNET=args.slurm_subnet)


def slurm_up(args):
    env = slurm_env(args)
    up = subprocess.run([str(LOCAL_SLURM), "up", "--nodes", "2"], env=env, capture_output=True,
                        text=True, timeout=120)
    if up.returncode != 0:
        raise RuntimeError(f"local-slurm.sh up --nodes 2 failed:\n{up.stdout}\n{up.stderr}")
    env["SLURM_CONF"] = f"{args.slurm_dir}/slurm.conf"
    return env


def slurm_down(args):
    subprocess.run([str(LOCAL_SLURM), "down"], env=slurm_env(args), capture_output=True,
                   timeout=180)


def measure(args):
    started_at = time.monotonic()
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    binary = Path(args.binary).resolve()
    env = train_env()
    patterns = args.pause + [p for p in os.environ.get("SCALING_PAUSE", "").split(":") if p]
    pauser = Pauser(patterns, work / "paused.pids")
    atexit.register(pauser.resume)

    def on_signal(signum, _frame):
        pauser.resume()
        raise SystemExit(f"stopped by signal {signum}")

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)

    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    steps = dict(DEFAULT_STEPS)
    for item in args.steps.split(",") if args.steps else []:
        model, value = item.split("=")
        steps[model] = int(value)
    files = {m: write_experiment(work, m, steps[m]) for m in MODELS}
    probe = build_probe(work) if not args.no_probe else None

    senv = slurm_up(args)
    senv.update({k: v for k, v in env.items() if k.startswith(("OMP_", "OPENBLAS_"))})
    runs, net = [], []
    try:
        configs = [(m, layout) for m in MODELS for layout in LAYOUTS]
        order = 0
        for rep in range(1, args.max_reps + 1):
            shift = (rep - 1) % len(configs)
            wanted = [c for c in configs[shift:] + configs[:shift]
                      if len([r for r in runs if (r["model"], r["layout"]) == c
                              and is_clean(r)]) < args.reps]
            if not wanted:
                break
            for model, layout in wanted:
                order += 1
                experiment, sweep, _plan = files[model]
                out = work / "runs" / f"{model}-{layout}-{rep}"
                stamp = datetime.datetime.now().strftime("%H:%M:%S")
                with Window(pauser, args.resume_seconds, args.quiet, args.quiet_wait) as window:
                    if layout == "2nodes":
                        usage = run_slurm(binary, sweep, out, senv, args.max_window, window,
                                          args.slurm_net)
                        run = read_run(run_dir_of(out, sweep))
                    else:
                        ranks = 1 if layout == "1rank" else 2
                        usage = run_local(binary, experiment, ranks, out, env, args.max_window,
                                          window)
                        run = read_run(out)
                row = dict(model=model, layout=layout, rep=rep, order=order, started=stamp,
                           **run, **usage, load1_before=f"{window.load_before:.2f}",
                           busy_before=f"{window.busy_before:.2f}", waited_s=f"{window.waited:.0f}",
                           others_cores=f"{window.others_cores:.3f}",
                           others_top=window.others_top, paused=window.paused)
                for key in ("step_s", "step_s_median"):
                    row[key] = f"{row[key]:.5f}"
                for key in ("rate_gflops_core", "cpu_s", "wall_s"):
                    row[key] = f"{row[key]:.3f}"
                row["flops_per_step"] = f"{row['flops_per_step']:.6g}"
                runs.append(row)
                print(f"[{stamp}] rep {rep} {model:5s} {layout:12s} {row['step_s']} s/step, "
                      f"cpu {row['cpu_s']} s over {row['wall_s']} s, sessions "
                      f"{row['rank_sessions']}, busy before {row['busy_before']}, others "
                      f"{row['others_cores']} cores ({row['others_top']})", flush=True)
                write_csv(Path(args.results) / "measurements.csv", RUN_FIELDS, runs)
        params = {m: next(int(r["params"]) for r in runs if r["model"] == m) for m in MODELS}
        for rep in range(1, args.net_reps + 1):
            net += measure_link(args, pauser, rep, probe, params, env)
            write_csv(Path(args.results) / "network.csv", NET_FIELDS, net)
    finally:
        cleanup()
        pauser.resume()
        if not args.keep_slurm:
            slurm_down(args)

    # attnlab plan with the measured rate and link.
    bandwidth = median(r["value"] for r in net if r["quantity"] == "TCP bulk transfer, 64 MiB"
                       and r["path"] == "2 nodes (veth)")
    latency = median(r["value"] for r in net if r["quantity"] == "TCP round trip, 8 bytes, / 2"
                     and r["path"] == "2 nodes (veth)")
    rates = {m: median(r["rate_gflops_core"] for r in used_runs(runs, m, "1rank"))
             for m in MODELS}
    plan_rows = []
    profiles = {}
    for cores in (1, 2):
        for network, bw, lat in (("measured", bandwidth, latency), ("default", None, None)):
            name = f"{cores} core(s)/node, {network} network"
            profiles[name] = write_profile(work / f"profile-{cores}-{network}.yaml", cores, bw,
                                           lat)
    for model in MODELS:
        for name, profile in profiles.items():
            result = run_plan(binary, files[model][2], profile, rates[model])
            (runs_, steps_, gflop, params_) = next(iter(result["rows"].values()))
            cores = int(name[0])
            for nodes in (1, 2):
                compute, comm, eff = result["nodes"][nodes]
                plan_rows.append(dict(
                    source="local", model=model, profile=name, cores_per_node=cores,
                    bandwidth_gbs=bandwidth if "measured" in name else 10,
                    latency_us=latency if "measured" in name else 5,
                    rate_gflops_core=f"{rates[model]:.4f}", steps=steps_, gflop_step=gflop,
                    params=params_, nodes=nodes, compute_s=compute, comm_s=comm, efficiency=eff))
    # The paper's Table 3 on a CPU cluster, at the per-core rate of the wider model here.
    rate = rates["wide"]
    assumed = write_profile(work / "assumed-cluster.yaml", ASSUMED_CLUSTER["cores_per_node"],
                            ASSUMED_CLUSTER["network_bandwidth"],
                            ASSUMED_CLUSTER["network_latency_us"], base=EXAMPLE_HPC)
    paper_text = {}
    for label, profile in ((f"{EXAMPLE_HPC.relative_to(ROOT)} as it is", EXAMPLE_HPC),
                           ("an assumed 48-core-node cluster (example-hpc.yaml with cores_per_node "
                            "48, 12.5 GB/s, 2 us)", assumed)):
        for row_name in ("base", "big"):
            result = run_plan(binary, paper_sweep(work, row_name), profile, rate)
            paper_text[f"{label} / {row_name}"] = result["text"]
            (_runs, steps_, gflop, params_) = result["rows"][row_name]
            header = re.search(r"cluster: (\d+) cores per node, (\S+) GB/s and (\S+) us",
                               result["text"])
            for nodes, (compute, comm, eff) in sorted(result["nodes"].items()):
                plan_rows.append(dict(
                    source="paper", model=row_name, profile=label, cores_per_node=header.group(1),
                    bandwidth_gbs=header.group(2), latency_us=header.group(3),
                    rate_gflops_core=f"{rate:.4f}", steps=steps_, gflop_step=gflop,
                    params=params_, nodes=nodes, compute_s=compute, comm_s=comm, efficiency=eff))
    # The exact command of the page, on the whole Table 3 sweep: it must work without the data.
    exact = subprocess.run([str(binary), "plan", str(PAPER.relative_to(ROOT)), "--profile",
                            str(EXAMPLE_HPC.relative_to(ROOT)), "--rate", f"{rate:.2f}"],
                           capture_output=True, text=True, cwd=ROOT, timeout=120)
    results = Path(args.results)
    write_csv(results / "plan.csv", PLAN_FIELDS, plan_rows)
    (results / "plan-table3.txt").write_text(
        f"$ attnlab plan {PAPER.relative_to(ROOT)} --profile {EXAMPLE_HPC.relative_to(ROOT)} "
        f"--rate {rate:.2f}\n(exit {exact.returncode})\n{exact.stdout}{exact.stderr}")

    meta = machine_facts(binary, env)
    described = ", ".join(f"{m}: {MODEL_TEXT[m]}, {steps[m]} steps" for m in MODELS)
    meta.update({
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "minutes": (time.monotonic() - started_at) / 60,
        "reps": args.reps,
        "runs_source": f"experiments/small/table3-scale.yaml ({described}; eval.every 0, "
                       "log.every 10, checkpoint_every 0) on Bible en->es",
        "load_start": load_start,
        "paused_text": ", ".join(
            f"`{p}` ({len([x for x in pauser.log if x[0] == p])} processes)"
            for p in patterns) or "nothing",
        "paused_processes": [list(x) for x in pauser.log],
    })
    (results / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    blocks = write_page(Path(args.page), results)
    print("\n\n".join(blocks.values()))
    print(f"\nwrote {args.page} and {results}/ in {meta['minutes']:.1f} minutes")


def measure_link(args, pauser, rep, probe, params, env):
    """TCP bulk and round trips over the veth (node 2 -> node 1) and over loopback inside node 1,
    and MPI_Allreduce of each model's gradient across the nodes and within one node."""
    rows = []
    n1, n2 = f"/run/netns/{args.slurm_net}-n1", f"/run/netns/{args.slurm_net}-n2"
    me = [sys.executable, str(Path(__file__).resolve())]
    port = 47000 + rep
    for path, client_ns, address in (("2 nodes (veth)", n2, f"{args.slurm_subnet}.11:{port}"),
                                     ("loopback in node 1", n1, f"127.0.0.1:{port + 100}")):
        with Window(pauser, args.resume_seconds, args.quiet, args.quiet_wait) as window:
            stamp = datetime.datetime.now().strftime("%H:%M:%S")
            host = address.split(":")[0]
            bind = "0.0.0.0" if host != "127.0.0.1" else host
            server = subprocess.Popen(["nsenter", f"--net={n1}", *me, "--net-server",
                                       f"{bind}:{address.split(':')[1]}"],
                                      stdout=subprocess.PIPE, text=True)
            try:
                assert server.stdout.readline().strip() == "ready"
                client = subprocess.run(["nsenter", f"--net={client_ns}", *me, "--net-client",
                                         address], capture_output=True, text=True, timeout=300)
                if client.returncode != 0:
                    raise RuntimeError(f"net client failed: {client.stderr}")
            finally:
                server.wait(timeout=60)
            result = json.loads(client.stdout)
        common = dict(path=path, rep=rep, started=stamp, load1_before=f"{window.load_before:.2f}",
                      busy_before=f"{window.busy_before:.2f}", paused=window.paused)
        rows.append(dict(common, quantity="TCP bulk transfer, 64 MiB",
                         value=f"{result['bulk_bytes'] / median(result['bulk_s']) / 1e9:.4f}",
                         unit="GB/s"))
        rows.append(dict(common, quantity="TCP round trip, 8 bytes, / 2",
                         value=f"{median(result['rtt_s']) / 2 * 1e6:.2f}", unit="us"))
    if probe is None:
        return rows
    for model, count in params.items():
        for path in ("2 nodes (veth)", "2 ranks, 1 node"):
            with Window(pauser, args.resume_seconds, args.quiet, args.quiet_wait) as window:
                stamp = datetime.datetime.now().strftime("%H:%M:%S")
                if path == "2 ranks, 1 node":
                    command = ["mpirun", "-np", "2", "--bind-to", "none"] + (
                        ["--allow-run-as-root"] if os.geteuid() == 0 else []) + [
                        str(probe), str(count), str(ALLREDUCE_REPS)]
                    result = subprocess.run(command, capture_output=True, text=True, env=env,
                                            timeout=240)
                    text = result.stdout
                else:
                    senv = dict(env, SLURM_CONF=f"{args.slurm_dir}/slurm.conf")
                    output = Path(args.work) / f"probe-{model}-{rep}.out"
                    result = subprocess.run(
                        ["sbatch", "--wait", "-p", "attnlab", "-N", "2", "-n", "2",
                         "--ntasks-per-node=1", "-c", "1", "-t", "5", f"--output={output}",
                         "--wrap", "export OMPI_MCA_btl_tcp_if_include=eth0 "
                         "OMPI_MCA_oob_tcp_if_include=eth0; srun --mpi=pmix "
                         f"{probe} {count} {ALLREDUCE_REPS}"],
                        capture_output=True, text=True, env=senv, timeout=240)
                    text = output.read_text() if output.exists() else ""
                if result.returncode != 0:
                    raise RuntimeError(f"allreduce probe failed: {result.stdout}{result.stderr}"
                                       f"{text}")
                data = probe_json(text)
            rows.append(dict(path=path, rep=rep, started=stamp,
                             load1_before=f"{window.load_before:.2f}",
                             busy_before=f"{window.busy_before:.2f}", paused=window.paused,
                             quantity=f"MPI_Allreduce of the {model} gradient",
                             value=f"{median(data['seconds']) * 1e3:.4f}", unit="ms"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "build" / "attnlab"))
    parser.add_argument("--reps", type=int, default=3,
                        help="clean runs wanted of every (model, layout)")
    parser.add_argument("--max-reps", type=int, default=6,
                        help="rounds at most: a round trains each (model, layout) that still "
                             "lacks clean runs once")
    parser.add_argument("--net-reps", type=int, default=3, help="rounds of the link probes")
    parser.add_argument("--steps", default="", help="e.g. base=300,wide=80")
    parser.add_argument("--pause", action="append", default=[], metavar="PATTERN",
                        help="SIGSTOP processes whose command line contains PATTERN during each "
                             "window, SIGCONT after it (repeatable)")
    parser.add_argument("--resume-seconds", type=float, default=15,
                        help="paused processes run this long between windows")
    parser.add_argument("--quiet", type=float, default=0.3,
                        help="busy cores the machine may show (others paused) before a window")
    parser.add_argument("--quiet-wait", type=float, default=60,
                        help="seconds to wait at most for that before measuring anyway")
    parser.add_argument("--max-window", type=float, default=280,
                        help="a run longer than this is stopped and the measurement fails")
    parser.add_argument("--work", default="/tmp/attnlab-scaling", help="runs and scratch files")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--page", default=str(PAGE))
    parser.add_argument("--no-probe", action="store_true", help="no MPI_Allreduce probe")
    parser.add_argument("--keep-slurm", action="store_true", help="leave the 2-node Slurm up")
    parser.add_argument("--slurm-dir", default="/tmp/attnlab-slurm-scaling")
    parser.add_argument("--slurm-port", type=int, default=6837)
    parser.add_argument("--slurm-net", default="atscale")
    parser.add_argument("--slurm-subnet", default="10.77.5")
    parser.add_argument("--render-only", action="store_true",
                        help="rewrite the page from the CSV files, measure nothing")
    parser.add_argument("--resume-paused", action="store_true",
                        help="SIGCONT the pids a killed run of this script left stopped")
    parser.add_argument("--net-server", help=argparse.SUPPRESS)
    parser.add_argument("--net-client", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.net_server:
        net_server(args.net_server)
    elif args.net_client:
        net_client(args.net_client, BULK_BYTES, BULK_REPS, ROUND_TRIPS, quit_after=True)
    elif args.resume_paused:
        resume_from_state(Path(args.work) / "paused.pids")
    elif args.render_only:
        blocks = write_page(Path(args.page), Path(args.results))
        print("\n\n".join(blocks.values()))
    else:
        measure(args)


if __name__ == "__main__":
    main()
