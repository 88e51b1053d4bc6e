"""bench/scaling.py's probes of the link between the two nodes: TCP bulk transfer and round trips
with Python sockets, and MPI_Allreduce of each model's gradient with a small C probe."""

import json
import shutil
import socket
import struct
import subprocess
import time


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


