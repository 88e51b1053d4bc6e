"""`python3 -m analysis.studies runs/studies [--run] [--page docs/results/studies.md]`: the four
seed-note studies of experiments/studies/ (analysis/studies/cli.py)."""

import pathlib
import sys

if __package__ in (None, ""):  # run as a path (python3 analysis/studies): the checkout's root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))

from analysis.studies.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
