"""Whether a model's decoder starts to read its source: a Markdown table of the trainer's
diagnostics (log.diagnostics_every) for a few runs side by side.

Per chosen step it gives the dev loss, the decoder-encoder attention entropy of every decoder
layer (nats, mean over heads, measured on the first dev batch: log of that batch's source length
is uniform attention) and the gradient norm of those layers' W_Q and W_K, which is what reaches
the attention logits through the softmax. A layer whose entropy stays at uniform while its W_Q/W_K
gradient stays small has not begun to attend.

    python3 -m analysis.early_diagnostics "base=RUN_DIR" "C N=4=RUN_DIR" --steps 400,1200,2400
"""

import argparse
import sys

import numpy as np

from analysis.errors import AnalysisError, command_line, report_error
from analysis.runfile import read_labeled_runs

CROSS = "decoder_cross."


def _rows(data, name):
    """{step: row} of one /diagnostics metric and its labels."""
    metric = data.diagnostics.get(name)
    if metric is None:
        raise AnalysisError(f"{data.path}: no /diagnostics/{name} (train with "
                            "log.diagnostics_every > 0)")
    return dict(zip((int(s) for s in metric.steps), metric.values)), list(metric.labels)


def _cross_layers(labels):
    return [i for i, label in enumerate(labels) if str(label).startswith(CROSS)]


def _at(rows, step, path, what):
    if step not in rows:
        raise AnalysisError(f"{path}: {what} has no row at step {step} (steps: "
                            f"{', '.join(map(str, sorted(rows)))})")
    return rows[step]


def measures(data, step):
    """(dev loss, decoder-encoder entropy per layer, its W_Q/W_K gradient norm per layer) at
    `step` of one run."""
    entropy, labels = _rows(data, "attention_entropy")
    gradient, gradient_labels = _rows(data, "qk_grad_norm")
    layers = _cross_layers(labels)
    evaluation = data.eval[data.eval["step"] == step]
    if evaluation.empty:
        raise AnalysisError(f"{data.path}: no dev evaluation at step {step}")
    per_layer = np.asarray(_at(entropy, step, data.path, "attention_entropy"))[layers]
    norms = np.asarray(_at(gradient, step, data.path, "qk_grad_norm"))
    return (float(evaluation["loss"].iloc[0]), per_layer.mean(axis=-1),
            norms[_cross_layers(gradient_labels)])


def _norm(value):
    return f"{value:.3f}".lstrip("0") if value < 1 else f"{value:.3f}"


def table(runs, steps):
    """Markdown lines: runs = [(label, run data)]; one block of rows per step."""
    lines = ["| step | | " + " | ".join(label for label, _ in runs) + " |",
             "|---|---|" + "---|" * len(runs)]
    for step in steps:
        values = [measures(data, step) for _, data in runs]
        shown = f"{step:,}"
        lines.append(f"| {shown} | dev loss | " + " | ".join(f"{v[0]:.3f}" for v in values) + " |")
        lines.append(f"| {shown} | decoder-encoder entropy, nats, per layer | " + " | ".join(
            " ".join(f"{e:.2f}" for e in v[1]) for v in values) + " |")
        lines.append(f"| {shown} | its W_Q, W_K gradient norm, per layer | " + " | ".join(
            " ".join(_norm(g) for g in v[2]) for v in values) + " |")
    return lines


@command_line("analysis.early_diagnostics")
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR (a run trained with "
                        "log.diagnostics_every > 0)")
    parser.add_argument("--steps", default="400,1200,2400",
                        help="comma-separated steps, each a diagnostics and a dev-evaluation step")
    args = parser.parse_args(argv)
    try:
        runs = read_labeled_runs(args.runs)
        try:
            steps = [int(s) for s in args.steps.split(",")]
        except ValueError:
            raise AnalysisError(f"--steps {args.steps}: expected steps like 400,1200,2400") \
                from None
        print("\n".join(table(runs, steps)))
    except AnalysisError as error:
        return report_error("analysis.early_diagnostics", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
