"""What bench/scaling.py measures and where it writes: paths, the two models, the four
layouts, the assumed cluster for the paper's Table 3, and the limits of a clean run."""

import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
# The checkout's analysis package (run files, number formatting) for the modules beside this one.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
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
LAYOUTS = ["1rank", "1rank2threads", "2ranks1node", "2nodes"]
LAYOUT_TEXT = {"1rank": "1 rank", "1rank2threads": "1 rank x 2 threads",
               "2ranks1node": "2 ranks, 1 node", "2nodes": "2 nodes x 1 rank"}
# (ranks, threads per rank) of each layout: the same two cores as 1 x 2 or 2 x 1 on one node.
LAYOUT_SHAPE = {"1rank": (1, 1), "1rank2threads": (1, 2), "2ranks1node": (2, 1), "2nodes": (2, 1)}
# What `attnlab plan` is asked for each layout: (cores_per_node, nodes, network). Its cost model
# counts cores, so 1 x 2 and 2 x 1 on one node get the same prediction.
PLAN_LAYOUT = {"1rank": (1, 1), "1rank2threads": (2, 1), "2ranks1node": (2, 1), "2nodes": (1, 2)}
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

