"""Twin runs of two sweeps: a run of one sweep and the run of another with the same row and seed
whose configurations differ only in the keys a comparison is about (precision for the bf16
replica, the budget for the budget check). Both comparisons report the second sweep beside the
table, never mixed into it, and both must refuse a pair that differs in anything else.
"""

from analysis.errors import AnalysisError

# Keys that say where and under what name a run ran, not what it computed (as run ids leave
# them out, core/config/sweep.h).
_NOT_COMPUTATION = ("name", "log.dir")


def computation(config, compared):
    """The keys of `config` that decide what a run computes, without the `compared` ones."""
    return {k: v for k, v in config.items()
            if k not in _NOT_COMPUTATION and not k.startswith("cluster.") and k not in compared}


def twins(table, other, compared, what, check=None):
    """{(row, seed): (table run id, other run id)} over the completed runs of `other` whose twin
    (same row and seed) has completed in `table`; a run whose twin has not completed waits.
    AnalysisError when a twin differs in a key outside `compared` (`what` names the comparison,
    e.g. "precision"). check(run, twin), when given, may raise for a pair it refuses."""
    pairs = {}
    completed = other.completed_runs().set_index("run_id")
    for run_id in completed.index:
        ours = other.data[run_id]
        row = completed.at[run_id, "row"]
        seed = int(ours.config.get("seed", ours.attrs.get("seed", -1)))
        candidates = table.completed_runs(row)
        candidates = candidates[candidates["seed"] == seed]
        if candidates.empty:
            continue
        twin = table.data[candidates["run_id"].iloc[0]]
        if check is not None:
            check(ours, twin)
        mine, theirs = computation(ours.config, compared), computation(twin.config, compared)
        differing = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        if differing:
            raise AnalysisError(f"{ours.path} and its twin {twin.path} ({row}, seed {seed}) "
                                f"differ in {', '.join(differing)}, not in {what} alone")
        pairs[(row, seed)] = (candidates["run_id"].iloc[0], run_id)
    return pairs
