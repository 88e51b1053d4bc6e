"""bench/scaling.py's measurement windows: the processes it pauses (SIGSTOP/SIGCONT) so that
a run measures the layout rather than the machine's other load, and the CPU load seen around
each window."""

import os
import signal
import sys
import time
from pathlib import Path


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


