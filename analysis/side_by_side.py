"""The command line of a page that sets two sweeps side by side (the bf16 replica beside its
table, the budget check beside the table, two editions of a table): two sweep directories and
--out, both loaded without attention, the page's files written into --out."""

import argparse
import pathlib

from analysis.sweep import load_sweep


def two_sweeps_main(argv, module, description, first, second, write):
    """Parses `argv` for `python3 -m <module>` (first and second: (name, help) of the two sweep
    directories), loads both and calls write(first sweep, second sweep, out directory), which
    returns the paths it wrote."""
    parser = argparse.ArgumentParser(prog=f"python3 -m {module}", description=description)
    for name, text in (first, second):
        parser.add_argument(name, help=text)
    parser.add_argument("--out", required=True, help="directory for the page's files")
    args = vars(parser.parse_args(argv))
    sweeps = [load_sweep(pathlib.Path(args[name]), with_attention=False)
              for name, _ in (first, second)]
    out = pathlib.Path(args["out"])
    out.mkdir(parents=True, exist_ok=True)
    written = write(*sweeps, out)
    print(f"wrote {' and '.join(str(path) for path in written)}")
    return 0
