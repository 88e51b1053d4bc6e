"""`python3 -m analysis.report runs/<sweep> [--out DIR] [--format md,tex,csv,html] [--watch]`: the
sweep's table (report.md, table.tex, table.csv and runs.csv), figures (PNG) and the browsable page
(report.html, analysis/html_page.py). With --watch it writes them again every --interval seconds
until Ctrl-C, running runs included, and the page reloads itself in the browser.

Exit codes: 0 written (an incomplete sweep is reported, with a warning on stderr), 2 bad input
(no such or empty directory, unreadable or truncated run file, unknown schema version, bad
arguments), 1 anything else.
"""

import argparse
import datetime
import os
import pathlib
import platform
import signal
import sys
import time

if __package__ in (None, ""):  # run as a file (python3 analysis/report.py): the checkout's root
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from analysis import figures, html_page, render, width_effects  # noqa: E402
from analysis.conclusions import conclusion_lines, discussion_lines  # noqa: E402
from analysis.errors import AnalysisError, command_line, report_error  # noqa: E402
from analysis.notes import read_notes  # noqa: E402
from analysis.stats import MULTIPLICITY  # noqa: E402
from analysis.sweep import load_runs, load_sweep  # noqa: E402
from analysis.table import TESTS, build_table  # noqa: E402

FORMATS = ("md", "tex", "csv", "html")
# Seconds between two writes of a watched report: a sweep's runs evaluate every few minutes, and
# reading a large sweep and drawing its figures takes tens of seconds on a busy machine.
WATCH_INTERVAL = 60.0
# How often a watch waiting for its next write looks whether it was asked to stop (seconds).
WATCH_POLL = 0.2


def _formats(text):
    chosen = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown format(s) {', '.join(unknown) or '(none)'}; "
                                         f"choose from {','.join(FORMATS)}")
    return chosen


def _positive(text):
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="attnlab report", description="Tables (paper layout), statistics and figures of a "
        "sweep directory runs/<sweep>.")
    parser.add_argument("sweep", nargs="+", help="the sweep directory (holding manifest.yaml "
                        "and <run_id>/run.h5), or one or more run directories (a run, a pair)")
    parser.add_argument("--out", help="output directory (default: <sweep>/report)")
    parser.add_argument("--format", type=_formats, default=list(FORMATS),
                        help="comma-separated outputs: md (report.md), tex (table.tex), csv "
                        "(table.csv, runs.csv), html (report.html: interactive curves, per-seed "
                        "results, the sortable table and attention maps, self-contained) "
                        "(default: all)")
    parser.add_argument("--base", help="row to compare against (default: the sweep's base row)")
    parser.add_argument("--attention", default="base",
                        help="rows whose attention maps are drawn: base, all, none, or "
                             "comma-separated row names (default: base)")
    parser.add_argument("--no-figures", action="store_true",
                        help="tables only: no PNG figures, and no attention maps in report.html "
                        "(PNG figures are drawn for report.md, so only with the md format)")
    parser.add_argument("--multiplicity", choices=sorted(MULTIPLICITY), default="holm",
                        help="adjustment of p over each metric's comparisons: holm (family-wise "
                             "error, default) or bh (Benjamini-Hochberg false discovery rate)")
    parser.add_argument("--test", choices=list(TESTS),
                        help="the p a verdict uses: welch+permutation (the larger of the two) or "
                        "welch (Welch's alone, for seeds the permutation test cannot resolve: 3 "
                        "against 3 cannot go below p = 0.1; its p is still shown) (default: the "
                        "sweep file's sweep.test, from the manifest, else welch+permutation; a "
                        "different one than the sweep declared is refused)")
    parser.add_argument("--equivalence-margin", type=_positive, default=2.0, metavar="PCT",
                        help="dev PPL within +/- PCT %% of base (TOST on log PPL) is 'level' "
                             "(default: 2)")
    parser.add_argument("--unigram-ppl", type=_positive, metavar="PPL",
                        help="a unigram model's dev PPL of the target side: a run no better "
                             "failed to learn")
    parser.add_argument("--notes", help="a Markdown file whose text goes into report.md as its "
                        "Discussion section (prose about the measured table)")
    parser.add_argument("--watch", action="store_true",
                        help="keep writing the report while the sweep trains (running runs "
                        "included; report.html reloads itself in the browser) until Ctrl-C")
    parser.add_argument("--interval", type=_seconds, metavar="SECONDS",
                        help="with --watch: seconds between two writes, and between two reloads "
                        f"of report.html (default: {WATCH_INTERVAL:g})")
    args = parser.parse_args(argv)
    if args.interval is not None and not args.watch:
        parser.error("--interval: only with --watch")
    if args.interval is None:
        args.interval = WATCH_INTERVAL
    return args


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 1.0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds, at least 1")
    return value


def _attention_rows(sweep, choice):
    if choice == "none":
        return []
    if choice == "base":
        return [sweep.base]
    if choice == "all":
        return [r.key for r in sweep.rows]
    wanted = [name.strip() for name in choice.split(",") if name.strip()]
    known = {r.key for r in sweep.rows}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise AnalysisError(f"--attention: no row(s) {', '.join(unknown)} (rows: "
                            f"{', '.join(sorted(known))})")
    return wanted


def verdict_test(sweep, requested):
    """The p the verdicts use: the one the sweep declared before its runs (sweep.test, in the
    manifest), which --test may repeat but not change; else --test; else welch+permutation."""
    declared = sweep.manifest.test if sweep.manifest is not None else ""
    if declared and requested and requested != declared:
        raise AnalysisError(f"--test {requested}: the sweep declared test {declared} before its "
                            f"runs (sweep.test in {sweep.manifest.source or 'its sweep file'}, "
                            f"{sweep.manifest.path}); its verdicts use that test")
    return declared or requested or "welch+permutation"


def write_report(args):
    """Writes every output of `args`; returns (output directory, the Table, incomplete?)."""
    if args.out and pathlib.Path(args.out).exists() and not pathlib.Path(args.out).is_dir():
        raise AnalysisError(f"--out {args.out}: a file is there; the report is written to a "
                            f"directory (give a new or an existing directory)")
    first = pathlib.Path(args.sweep[0])
    if len(args.sweep) == 1 and not (first / "run.h5").is_file():
        sweep = load_sweep(first, base=args.base, with_attention=not args.no_figures,
                           unigram_ppl=args.unigram_ppl)
    else:
        sweep = load_runs(args.sweep, with_attention=not args.no_figures,
                          unigram_ppl=args.unigram_ppl)
    out = pathlib.Path(args.out) if args.out else sweep.directory / "report"
    notes = read_notes(args.notes, out) if args.notes else None
    out.mkdir(parents=True, exist_ok=True)
    table = build_table(sweep, multiplicity=args.multiplicity,
                        margin_pct=args.equivalence_margin, test=verdict_test(sweep, args.test))
    if sweep.manifest is not None and sweep.manifest.test:
        table.method.append(f"The test was declared in the sweep file before its runs "
                            f"(sweep.test: {sweep.manifest.test}).")
    figure_files, figure_notes = [], []
    if not args.no_figures and "md" in args.format:  # the PNGs are report.md's figures
        figure_files, figure_notes = figures.all_figures(
            sweep, out, _attention_rows(sweep, args.attention))
        # Block A across widths needs the table's effects, not only the runs.
        figure_files += width_effects.heads_across_widths(table, out)[0]
    if "csv" in args.format:
        render.write_csv(table, out / "table.csv")
        render.runs_frame(sweep).to_csv(out / "runs.csv", index=False, float_format="%.10g")
    if "tex" in args.format:
        (out / "table.tex").write_text(render.latex(table), encoding="utf-8")
    if "html" in args.format:
        rows = [] if args.no_figures else _attention_rows(sweep, args.attention)
        html_page.write_page(out / html_page.PAGE, html_page.page_html(
            sweep, table, rows, conclusion_lines(sweep, table),
            refresh_seconds=args.interval if args.watch else None))
    if "md" in args.format:
        (out / "report.md").write_text(_markdown_report(sweep, table, out, figure_files,
                                                        figure_notes, notes), encoding="utf-8")
    return out, table


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _distinct(runs, column):
    if column not in runs:
        return []
    return sorted({str(v) for v in runs[column].dropna() if str(v)})


def _dirty_text(sweep):
    """How many completed runs came from a dirty build, with the hashes of their changes, and
    whether the sweep was launched with --allow-dirty."""
    dirty = [run_id for row in sweep.rows for run_id in sweep.dirty(row.key)]
    allowed = (" (the sweep was launched with --allow-dirty)"
               if sweep.manifest is not None and sweep.manifest.allow_dirty else "")
    if not dirty:
        return "none" + allowed
    runs = sweep.runs.set_index("run_id")
    hashes = sorted({str(runs.at[r, "git_diff_sha256"])[:12] for r in dirty
                     if "git_diff_sha256" in runs and isinstance(runs.at[r, "git_diff_sha256"], str)
                     and runs.at[r, "git_diff_sha256"]})
    changes = (f"; changes with SHA-256 {', '.join(hashes)}..." if hashes
               else "; their run files predate the hash of the changes")
    return f"{len(dirty)} of {len(sweep.runs)}{changes}{allowed}"


def _provenance(sweep):
    """Where, when and from which build the runs were made, and what they cost: read from the run
    files' root attributes and summaries, so a committed report carries its own context."""
    runs = sweep.runs
    created = _distinct(runs, "created")
    seconds = runs["train_seconds"].sum() if "train_seconds" in runs else float("nan")
    core_hours = runs["core_hours"].sum() if "core_hours" in runs else float("nan")
    lines = ["## Provenance", "",
             f"- runs made on: {', '.join(_distinct(runs, 'host')) or 'unknown'}; "
             f"attnlab commit(s): {', '.join(_distinct(runs, 'git_commit')) or 'unknown'}",
             f"- runs created: {created[0]} to {created[-1]}" if created else "- runs created: unknown",
             f"- runs built from a working tree with uncommitted changes (§): {_dirty_text(sweep)}",
             f"- training wall time summed over runs: {seconds / 60.0:.1f} min "
             f"({core_hours:.2f} core-hours)",
             f"- report written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC "
             f"on {platform.node()} ({_cpu_model()}, {os.cpu_count()} logical CPUs)", ""]
    return lines


def _markdown_report(sweep, table, out, figure_files, figure_notes, notes=None):
    counts = sweep.runs["status"].value_counts().to_dict()
    status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    lines = [f"# Sweep {sweep.name}", "",
             f"Directory `{sweep.directory}`; {len(sweep.runs)} runs ({status}); "
             f"{len(sweep.rows)} rows.", ""]
    if sweep.manifest is not None and sweep.manifest.source:
        lines += [f"Sweep file: `{sweep.manifest.source}`"
                  + (f"; sets: {', '.join(sweep.manifest.sets)}" if sweep.manifest.sets else ""),
                  ""]
    conclusions = conclusion_lines(sweep, table)
    if conclusions:
        lines += ["## Conclusions", ""] + conclusions + [""]
    lines += _provenance(sweep)
    if table.incomplete:
        lines += ["**This sweep is incomplete.**", ""]
    lines += sweep.notes + ([""] if sweep.notes else [])
    if sweep.manifest is not None and sweep.manifest.seed_decisions:
        rule = sweep.manifest.seeds
        looks = max(1, int(rule.get("max", 1)) - int(rule.get("min", 1)) + 1)
        confidence = float(rule.get("confidence", 0.95))
        until = rule.get("until", "sequential")
        spent = (f"at {1 - (1 - confidence) / looks:.2%}, alpha {1 - confidence:g} spent evenly "
                 f"over the {looks} looks" if until == "sequential" else
                 f"at {confidence:.0%} (`until: resolved`: a test at full alpha at every look, "
                 "which alone would raise the false-positive rate above alpha)")
        lines += ["## Seeds per row", "",
                  f"Adaptive seeds: {rule.get('min')} to {rule.get('max')} per row; a row gets "
                  f"another seed while Welch's interval on its dev-PPL difference from the base "
                  f"row, {spent}, holds 0 and is wider than {float(rule.get('effect', 0.02)):.1%} "
                  "of the base mean on each side (core/cluster/adaptive_seeds.h). The table's p "
                  f"are multiplied by the {looks} looks, which keeps alpha however the rows "
                  "stopped (tests/python/test_adaptive_seeds.py).", ""]
        lines += [f"- {row}: {decision}" for row, decision in sweep.manifest.seed_decisions.items()]
        lines.append("")
    lines += ["## Table (paper Table 3 layout)", "", render.markdown(table),
              "## Runs (cost per run, Table 2 style)", "", render.runs_markdown(sweep)]
    if notes:
        lines += ["## Discussion", "", notes, ""]
    else:
        generated = discussion_lines(sweep, table)
        if generated:
            lines += ["## Discussion (generated)", "",
                      "Counted from the conclusions above; a notes file (--notes) replaces it "
                      "with the author's own.", ""] + generated
    concentration = figures.cross_attention_concentration(sweep) if figure_files else []
    if concentration:
        lines += ["## Attention", ""] + concentration + [""]
    lines += ["## Figures", ""]
    for path in figure_files:
        name = pathlib.Path(path).relative_to(out)
        lines += [f"![{name.stem}]({name})", ""]
    for note in figure_notes:
        lines.append(f"- skipped: {note}")
    return "\n".join(lines) + "\n"


def watch(args):
    """Writes the report every args.interval seconds until Ctrl-C (SIGINT) or SIGTERM. A write
    that fails (a sweep that has not started, a run file caught mid-write) is reported and tried
    again at the next interval, so the watch outlives a sweep's early minutes.

    The first signal lets the write under way finish and ends the watch; a second one ends it at
    once. A signal only sets a flag: a KeyboardInterrupt raised anywhere could land in a fork
    handler that Python ignores (reading a run file forks), and the watch would go on."""
    stop = []

    def request_stop(number, _frame):
        if stop:
            raise KeyboardInterrupt
        stop.append(number)

    previous = {number: signal.signal(number, request_stop)
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop:
            started = time.monotonic()
            try:
                out, table = write_report(args)
            except AnalysisError as error:
                print(f"attnlab report: {error} (trying again in {args.interval:g} s)",
                      file=sys.stderr, flush=True)
            else:
                counts = table.sweep.runs["status"].value_counts().to_dict()
                status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                print(f"{datetime.datetime.now():%H:%M:%S} report written to {out} ({status}); "
                      f"next in {args.interval:g} s, Ctrl-C stops", flush=True)
            while not stop and time.monotonic() - started < args.interval:
                time.sleep(min(WATCH_POLL, max(0.0, args.interval -
                                               (time.monotonic() - started))))
    except KeyboardInterrupt:
        pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    print("attnlab report: stopped watching (the report stays as last written)",
          file=sys.stderr)
    return 0


@command_line("attnlab report")
def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit_request:  # argparse: 2 for usage errors, 0 for --help
        return int(exit_request.code or 0)
    if args.watch:
        return watch(args)
    try:
        out, table = write_report(args)
    except AnalysisError as error:
        return report_error("attnlab report", error)
    if table.incomplete:
        for line in table.incomplete:
            print(f"attnlab report: {line}", file=sys.stderr)
    print(f"report written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
