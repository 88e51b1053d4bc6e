#!/usr/bin/python3
"""Measured data-parallel scaling on this machine against `attnlab plan`'s cost model.

Trains two models of experiments/small/table3-scale.yaml (its base, d_model 64, and a wider one)
on Bible en->es for a few hundred steps in four layouts, side by side and `--reps` times each:

    1 rank            attnlab train, one process, one thread
    1 rank x 2 threads  the same process with cluster.threads_per_rank 2 (the same two cores as
                      the next layout, as threads instead of ranks)
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
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

# The modules beside this file; tests load this file by its path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scaling_config import (ALLREDUCE_REPS, ASSUMED_CLUSTER, BULK_BYTES, BULK_REPS, DEFAULT_STEPS,
                            EXAMPLE_HPC, LAYOUTS, LOCAL_SLURM, MODELS, MODEL_TEXT, PAGE, PAPER,
                            RESULTS, ROOT, ROUND_TRIPS)  # noqa: E402
from scaling_link import build_probe, net_client, net_server, probe_json  # noqa: E402
from scaling_page import (NET_FIELDS, PLAN_FIELDS, RUN_FIELDS, is_clean, median, used_runs,
                          write_csv, write_page)  # noqa: E402
from scaling_pause import Pauser, Window, cleanup, resume_from_state  # noqa: E402
from scaling_runs import (paper_sweep, read_run, run_dir_of, run_local, run_plan, run_slurm,
                          train_env, write_experiment, write_profile)  # noqa: E402


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
    """Everything of the module docstring: the training runs of each layout and the link probes
    (on the two-node Slurm), attnlab plan's predictions from them, meta.json and the page."""
    started_at = time.monotonic()
    work = fresh_work_dir(Path(args.work))
    binary = Path(args.binary).resolve()
    env = train_env()
    patterns = pause_patterns(args)
    pauser = pauser_resumed_on_exit(patterns, work)
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    steps = steps_per_model(args.steps)
    files = {m: write_experiment(work, m, steps[m]) for m in MODELS}
    probe = build_probe(work) if not args.no_probe else None
    runs, net = measure_on_slurm(args, binary, env, pauser, files, probe)

    # attnlab plan with the measured rate and link.
    bandwidth, latency = link_between_nodes(net)
    rates = {m: median(r["rate_gflops_core"] for r in used_runs(runs, m, "1rank"))
             for m in MODELS}
    plan_rows = local_plan_rows(binary, work, files, rates, bandwidth, latency)
    # The paper's Table 3 on a CPU cluster, at the per-core rate of the wider model here.
    rate = rates["wide"]
    plan_rows += paper_plan_rows(binary, work, rate)
    exact = exact_plan(binary, rate)
    results = Path(args.results)
    write_csv(results / "plan.csv", PLAN_FIELDS, plan_rows)
    write_exact_plan(results, rate, exact)

    meta = machine_facts(binary, env)
    meta.update(run_facts(args, steps, started_at, load_start, patterns, pauser))
    (results / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    blocks = write_page(Path(args.page), results)
    print("\n\n".join(blocks.values()))
    print(f"\nwrote {args.page} and {results}/ in {meta['minutes']:.1f} minutes")


def fresh_work_dir(work):
    """`work`, emptied: runs and scratch files of an earlier measurement are removed."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    return work


def pause_patterns(args):
    """The command-line substrings of the processes to pause: --pause, then SCALING_PAUSE."""
    return args.pause + [p for p in os.environ.get("SCALING_PAUSE", "").split(":") if p]


def pauser_resumed_on_exit(patterns, work):
    """The Pauser of `patterns`; what it stopped gets SIGCONT when this script exits, and on
    SIGTERM, SIGINT or SIGHUP, which then end the script."""
    pauser = Pauser(patterns, work / "paused.pids")
    atexit.register(pauser.resume)

    def on_signal(signum, _frame):
        pauser.resume()
        raise SystemExit(f"stopped by signal {signum}")

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    return pauser


def steps_per_model(spec):
    """DEFAULT_STEPS with the overrides of --steps ("base=300,wide=80")."""
    steps = dict(DEFAULT_STEPS)
    for item in spec.split(",") if spec else []:
        model, value = item.split("=")
        steps[model] = int(value)
    return steps


def measure_on_slurm(args, binary, env, pauser, files, probe):
    """(runs, net): the training runs of every layout, then the link probes, with the two-node
    Slurm up; afterwards paused processes continue and Slurm goes down (unless --keep-slurm)."""
    senv = slurm_up(args)
    senv.update({k: v for k, v in env.items() if k.startswith(("OMP_", "OPENBLAS_"))})
    net = []
    try:
        runs = measure_layouts(args, binary, env, senv, pauser, files)
        params = {m: next(int(r["params"]) for r in runs if r["model"] == m) for m in MODELS}
        for rep in range(1, args.net_reps + 1):
            net += measure_link(args, pauser, rep, probe, params, env)
            write_csv(Path(args.results) / "network.csv", NET_FIELDS, net)
    finally:
        cleanup()
        pauser.resume()
        if not args.keep_slurm:
            slurm_down(args)
    return runs, net


def measure_layouts(args, binary, env, senv, pauser, files):
    """Rows of measurements.csv (rewritten after each run): each round trains every (model,
    layout) that has fewer than --reps clean runs, starting one further along the list than the
    round before; at most --max-reps rounds."""
    runs = []
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
            row = train_once(args, binary, env, senv, pauser, files[model], model, layout, rep,
                             order)
            runs.append(row)
            print(f"[{row['started']}] rep {rep} {model:5s} {layout:12s} {row['step_s']} s/step, "
                  f"cpu {row['cpu_s']} s over {row['wall_s']} s, sessions "
                  f"{row['rank_sessions']}, busy before {row['busy_before']}, others "
                  f"{row['others_cores']} cores ({row['others_top']})", flush=True)
            write_csv(Path(args.results) / "measurements.csv", RUN_FIELDS, runs)
    return runs


def train_once(args, binary, env, senv, pauser, model_files, model, layout, rep, order):
    """One training run of `model` in `layout` inside a pause window: its measurements.csv row."""
    experiment, sweep, _plan = model_files
    out = Path(args.work) / "runs" / f"{model}-{layout}-{rep}"
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    with Window(pauser, args.resume_seconds, args.quiet, args.quiet_wait) as window:
        if layout == "2nodes":
            usage = run_slurm(binary, sweep, out, senv, args.max_window, window, args.slurm_net)
            run = read_run(run_dir_of(out, sweep))
        else:
            usage = run_local(binary, experiment, layout, out, env, args.max_window, window)
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
    return row


def link_between_nodes(net):
    """(GB/s, us): the medians of the TCP bulk transfers and of the half round trips between
    the two nodes."""
    bandwidth = median(r["value"] for r in net if r["quantity"] == "TCP bulk transfer, 64 MiB"
                       and r["path"] == "2 nodes (veth)")
    latency = median(r["value"] for r in net if r["quantity"] == "TCP round trip, 8 bytes, / 2"
                     and r["path"] == "2 nodes (veth)")
    return bandwidth, latency


def local_plan_rows(binary, work, files, rates, bandwidth, latency):
    """plan.csv rows of source "local": attnlab plan for each model on this machine's profiles
    (1 or 2 cores per node; the measured link or the default one) at the model's 1-rank rate."""
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
    return plan_rows


def paper_plan_rows(binary, work, rate):
    """plan.csv rows of source "paper": attnlab plan for the paper's base and big models at
    `rate` on example-hpc.yaml as it is and on an assumed 48-core-node cluster."""
    plan_rows = []
    assumed = write_profile(work / "assumed-cluster.yaml", ASSUMED_CLUSTER["cores_per_node"],
                            ASSUMED_CLUSTER["network_bandwidth"],
                            ASSUMED_CLUSTER["network_latency_us"], base=EXAMPLE_HPC)
    for label, profile in ((f"{EXAMPLE_HPC.relative_to(ROOT)} as it is", EXAMPLE_HPC),
                           ("an assumed 48-core-node cluster (example-hpc.yaml with cores_per_node "
                            "48, 12.5 GB/s, 2 us)", assumed)):
        for row_name in ("base", "big"):
            result = run_plan(binary, paper_sweep(work, row_name), profile, rate)
            (_runs, steps_, gflop, params_) = result["rows"][row_name]
            header = re.search(r"cluster: (\d+) cores per node, (\S+) GB/s and (\S+) us",
                               result["text"])
            for nodes, (compute, comm, eff) in sorted(result["nodes"].items()):
                plan_rows.append(dict(
                    source="paper", model=row_name, profile=label, cores_per_node=header.group(1),
                    bandwidth_gbs=header.group(2), latency_us=header.group(3),
                    rate_gflops_core=f"{rate:.4f}", steps=steps_, gflop_step=gflop,
                    params=params_, nodes=nodes, compute_s=compute, comm_s=comm, efficiency=eff))
    return plan_rows


def exact_plan(binary, rate):
    """The exact command of the page, on the whole Table 3 sweep: it must work without the
    data."""
    return subprocess.run([str(binary), "plan", str(PAPER.relative_to(ROOT)), "--profile",
                           str(EXAMPLE_HPC.relative_to(ROOT)), "--rate", f"{rate:.2f}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def write_exact_plan(results, rate, exact):
    """plan-table3.txt: the command of exact_plan, its exit code and its output."""
    (results / "plan-table3.txt").write_text(
        f"$ attnlab plan {PAPER.relative_to(ROOT)} --profile {EXAMPLE_HPC.relative_to(ROOT)} "
        f"--rate {rate:.2f}\n(exit {exact.returncode})\n{exact.stdout}{exact.stderr}")


def run_facts(args, steps, started_at, load_start, patterns, pauser):
    """What meta.json says of this measurement beside the machine: when, how long, which runs,
    the load at the start and what was paused."""
    described = ", ".join(f"{m}: {MODEL_TEXT[m]}, {steps[m]} steps" for m in MODELS)
    return {
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
    }


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
