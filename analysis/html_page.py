"""The report as one self-contained, browsable HTML page (report.html): interactive curves, the
per-seed results beside the paper's effect, the table with sortable columns and the attention maps
with their tokens.

Plotly's JavaScript (Debian's python3-plotly) is inlined, so the page opens offline and from a
cluster's file system; the only other script is the small column sort below. Every number comes
from the same loaded sweep and Table as report.md (analysis.sweep, analysis.table, the cells of
analysis.render), so the page and the Markdown agree. Curves take every run that has logged
something, running ones included; the table and the seed dots take completed runs only, as the
table's means do.
"""

import datetime
import html
import math
import os
import pathlib

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io
from plotly.offline import get_plotlyjs

from analysis import render
from analysis.figures import STACK_TITLES, probe_maps
from analysis.runfile import RunStatus

PAGE = "report.html"
PLOT_CONFIG = {"displaylogo": False, "responsive": True}

# Sorts a table.sortable by the clicked column: numbers by value (the first number in the cell,
# thousands separators ignored, so "63.280 ± 1.2" sorts as 63.28), other text alphabetically;
# empty cells stay last in both directions. A second click reverses the order.
SORT_SCRIPT = """
(function () {
  function number(text) {
    var leading = /^[<>]?\\s*([-+]?(\\d+\\.?\\d*|\\.\\d+)(e[-+]?\\d+)?)/i;
    var match = text.replace(/,/g, "").trim().match(leading);
    return match ? parseFloat(match[1]) : null;
  }
  function compare(a, b) {
    var x = number(a), y = number(b);
    if (x !== null && y !== null) return x - y;
    if (x !== null) return -1;
    if (y !== null) return 1;
    return a.localeCompare(b);
  }
  function sortBy(table, column, header) {
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r, s) {
      var a = r.cells[column].textContent.trim(), b = s.cells[column].textContent.trim();
      if (a === "" || b === "") return (a === "") - (b === "");
      return ascending ? compare(a, b) : compare(b, a);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (header, column) {
      header.addEventListener("click", function () { sortBy(table, column, header); });
    });
  });
})();
"""

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table.sortable { border-collapse: collapse; font-size: 0.85em; }
table.sortable th, table.sortable td { border: 1px solid #ccc; padding: 0.2em 0.5em;
  white-space: nowrap; }
table.sortable th { background: #f0f0f0; cursor: pointer; user-select: none; }
table.sortable th[aria-sort=ascending]::after { content: " \\25B2"; }
table.sortable th[aria-sort=descending]::after { content: " \\25BC"; }
table.sortable td:nth-child(n+3) { text-align: right; }
.note { color: #555; font-size: 0.9em; max-width: 60em; }
.scroll { overflow-x: auto; }
"""


def _palette(count):
    colors = plotly.colors.qualitative.Plotly
    return [colors[i % len(colors)] for i in range(count)]


def _translucent(color, alpha):
    red, green, blue = plotly.colors.hex_to_rgb(color)
    return f"rgba({red},{green},{blue},{alpha})"


def curve_figure(sweep, kind, column, title, y_title, log_y):
    """One line per row (mean over its seeds at each step), the seeds' min..max as a band, and
    each seed's own line, hidden until the row's "seeds" legend entry is clicked. None when
    nothing is logged.

    Traces per row with logged values and k runs: the mean, two for the band when k > 1 (its
    upper edge and the lower edge filled up to it), and k seed lines."""
    frame = sweep.series(kind)
    if frame.empty or column not in frame:
        return None
    frame = frame.dropna(subset=[column])
    runs = sweep.runs.set_index("run_id")
    figure = go.Figure()
    for row, color in zip(sweep.rows, _palette(len(sweep.rows))):
        part = frame[frame["row"] == row.key]
        if part.empty:
            continue
        by_step = part.groupby("step")[column]
        steps = by_step.mean().index.to_numpy()
        run_ids = sorted(part["run_id"].unique(), key=lambda r: runs.at[r, "seed"])
        unfinished = sum(runs.at[r, "status"] != RunStatus.COMPLETED for r in run_ids)
        label = f"{row.key} (n={len(run_ids)}" + (f", {unfinished} not completed)"
                                                  if unfinished else ")")
        if len(run_ids) > 1:
            figure.add_scatter(x=steps, y=by_step.max().to_numpy(), mode="lines",
                               line={"width": 0}, legendgroup=row.key, showlegend=False,
                               hoverinfo="skip", name=f"{row.key} seed max")
            figure.add_scatter(x=steps, y=by_step.min().to_numpy(), mode="lines",
                               line={"width": 0}, fill="tonexty",
                               fillcolor=_translucent(color, 0.2), legendgroup=row.key,
                               showlegend=False, hoverinfo="skip", name=f"{row.key} seed min")
        figure.add_scatter(x=steps, y=by_step.mean().to_numpy(), mode="lines", name=label,
                           legendgroup=row.key, line={"color": color, "width": 2},
                           hovertemplate=f"{html.escape(row.key)}<br>step %{{x}}<br>"
                           f"mean %{{y:.4g}}<extra></extra>")
        # One legend entry shows or hides every seed line of the row.
        for index, run_id in enumerate(run_ids):
            seed_part = part[part["run_id"] == run_id]
            status = runs.at[run_id, "status"]
            figure.add_scatter(x=seed_part["step"].to_numpy(), y=seed_part[column].to_numpy(),
                               mode="lines", visible="legendonly", name=f"{row.key}: seeds",
                               legendgroup=f"{row.key}: seeds", showlegend=index == 0,
                               line={"color": color, "width": 1, "dash": "dot"},
                               hovertemplate=f"{html.escape(str(runs.at[run_id, 'name']))} "
                               f"({status})<br>step %{{x}}<br>%{{y:.4g}}<extra></extra>")
    figure.update_layout(title=title, xaxis_title="training step", yaxis_title=y_title,
                         legend_title_text="row (band = seed min..max); click 'seeds' to draw "
                         "each seed",
                         height=520)
    if log_y:
        figure.update_yaxes(type="log")
    return figure


def _record(table, row_key):
    return next(r for r in table.records if r["row"] == row_key)


def effect_figure(sweep, table):
    """Dev PPL of every completed seed of each row as its change from the base row's mean (%),
    the row's mean, and the paper's change from its base where the sweep gives paper values; the
    latest dev PPL of runs still training as open circles. None without a dev PPL for the base.

    Traces: completed seeds, row means, then (when present) runs not completed and the paper."""
    metric = next((m for m in table.metrics if m.name == "ppl"), None)
    if metric is None:
        return None
    base = _record(table, sweep.base)
    base_mean, base_paper = base.get("ppl_mean", math.nan), base.get("paper_ppl", math.nan)
    if not np.isfinite(base_mean) or base_mean <= 0:
        return None
    keys = [row.key for row in sweep.rows]

    def change(value, reference):
        return 100.0 * (value / reference - 1.0)

    seeds, means, unfinished, paper = ([], [], []), ([], []), ([], [], []), ([], [])
    for position, key in enumerate(keys):
        frame = sweep.runs[sweep.runs["row"] == key].sort_values("seed")
        done = frame[(frame["status"] == RunStatus.COMPLETED) & frame[metric.run_key].notna()]
        for index, (_, run) in enumerate(done.iterrows()):
            # Seeds side by side over +-0.15 around the row's position.
            offset = 0.0 if len(done) == 1 else 0.3 * (index / (len(done) - 1) - 0.5)
            seeds[0].append(position + offset)
            seeds[1].append(change(run[metric.run_key], base_mean))
            seeds[2].append(f"{run['name']}: dev PPL {run[metric.run_key]:.3f}")
        record = _record(table, key)
        if np.isfinite(record.get("ppl_mean", math.nan)):
            means[0].append(position)
            means[1].append(change(record["ppl_mean"], base_mean))
        for _, run in frame[frame["status"] != RunStatus.COMPLETED].iterrows():
            data = sweep.data.get(run["run_id"])
            if data is None or "ppl" not in data.eval or data.eval.empty:
                continue
            latest = data.eval.iloc[-1]
            unfinished[0].append(position)
            unfinished[1].append(change(float(latest["ppl"]), base_mean))
            unfinished[2].append(f"{run['name']} ({run['status']}): dev PPL "
                                 f"{float(latest['ppl']):.3f} at step {int(latest['step'])}")
        theirs = record.get("paper_ppl", math.nan)
        if np.isfinite(theirs) and np.isfinite(base_paper) and base_paper > 0:
            paper[0].append(position)
            paper[1].append(change(theirs, base_paper))
    figure = go.Figure()
    figure.add_scatter(x=seeds[0], y=seeds[1], mode="markers", name="completed seeds",
                       text=seeds[2], hovertemplate="%{text}<br>%{y:+.2f}%<extra></extra>",
                       marker={"size": 8, "color": "#1f77b4"})
    figure.add_scatter(x=means[0], y=means[1], mode="markers", name="row mean (as the table)",
                       hovertemplate="mean %{y:+.2f}%<extra></extra>",
                       marker={"symbol": "line-ew-open", "size": 28, "color": "#1f77b4",
                               "line": {"width": 2}})
    if unfinished[0]:
        figure.add_scatter(x=unfinished[0], y=unfinished[1], mode="markers", text=unfinished[2],
                           name="not completed (latest evaluation)",
                           hovertemplate="%{text}<br>%{y:+.2f}%<extra></extra>",
                           marker={"size": 8, "symbol": "circle-open", "color": "#7f7f7f"})
    if paper[0]:
        figure.add_scatter(x=paper[0], y=paper[1], mode="markers", name="paper",
                           hovertemplate="paper %{y:+.2f}%<extra></extra>",
                           marker={"size": 11, "symbol": "diamond", "color": "#d62728"})
    figure.add_hline(y=0.0, line={"color": "#888", "width": 1, "dash": "dash"})
    figure.update_layout(
        title=f"Dev PPL per seed: change from the mean of {sweep.base} (%), and the paper's",
        yaxis_title=f"dev PPL / mean dev PPL of {sweep.base} − 1 (%)", height=480,
        xaxis={"tickvals": list(range(len(keys))), "ticktext": keys, "tickangle": -45})
    return figure


def _labels(tokens, count):
    """Token labels for `count` positions; positions when the probe's tokens do not match."""
    if len(tokens) == count:
        return [str(t) for t in tokens]
    return [str(i) for i in range(count)]


def attention_figures(sweep, rows):
    """For each chosen row, the first completed seed with a probe: one heat map per
    (stack, layer, head) of the probe sentence, grouped one figure per stack with a menu that
    picks the layer and head. Each map is coloured from 0 to its own largest weight (as the
    PNGs). Returns [(title, figure)]."""
    out = []
    for maps in probe_maps(sweep, rows):
        row_key, run_id, probe_name, stack = maps.row_key, maps.run_id, maps.probe_name, maps.stack
        layers, query_tokens, key_tokens = maps.layers, maps.query_tokens, maps.key_tokens
        figure, names = go.Figure(), []
        for layer, weights in enumerate(layers):
            for head in range(weights.shape[0]):
                head_map = weights[head]
                queries = _labels(query_tokens, head_map.shape[0])
                keys = _labels(key_tokens, head_map.shape[1])
                peak = float(head_map.max())
                # Numeric axes labelled with the tokens: a categorical axis would merge
                # repeated tokens into one position.
                figure.add_heatmap(
                    z=head_map, zmin=0.0, zmax=peak if peak > 0 else 1.0,
                    colorscale="Viridis", visible=not names,
                    text=[[f"{q} → {k}" for k in keys] for q in queries],
                    hovertemplate="%{text}<br>weight %{z:.3f}<extra></extra>")
                names.append(f"layer {layer}, head {head} (max {peak:.2f})")
        buttons = [{"label": name, "method": "update",
                    "args": [{"visible": [i == chosen for i in range(len(names))]},
                             {"title.text": f"{STACK_TITLES[stack]}: {name}"}]}
                   for chosen, name in enumerate(names)]
        size = max(len(query_tokens), len(key_tokens), 1)
        figure.update_layout(
            title={"text": f"{STACK_TITLES[stack]}: {names[0]}", "y": 0.98, "yanchor": "top"},
            # The menu sits between the title and the map.
            updatemenus=[{"buttons": buttons, "x": 0.0, "xanchor": "left", "y": 1.02,
                          "yanchor": "bottom"}],
            margin={"t": 110},
            height=min(900, max(460, 280 + 18 * size)),
            width=min(1100, max(780, 340 + 20 * size)),
            xaxis={"title": "key (token)", "tickvals": list(range(len(key_tokens))),
                   "ticktext": [str(t) for t in key_tokens], "tickangle": -90},
            yaxis={"title": "query (token)", "autorange": "reversed",
                   "tickvals": list(range(len(query_tokens))),
                   "ticktext": [str(t) for t in query_tokens]})
        seed = sweep.data[run_id].attrs.get("seed")
        out.append((f"{row_key}, seed {seed}, {probe_name}: {STACK_TITLES[stack]}", figure))
    return out


def _figure_html(figure):
    return plotly.io.to_html(figure, full_html=False, include_plotlyjs=False, config=PLOT_CONFIG)


def table_html(header, rows, table_id):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                     for row in rows)
    return (f'<table class="sortable" id="{table_id}"><thead><tr>{head}</tr></thead>'
            f"<tbody>\n{body}\n</tbody></table>")


def _paragraphs(lines):
    """Report lines (Markdown bullets and paragraphs, **bold** dropped) as HTML."""
    out = []
    for line in lines:
        text = html.escape(line.replace("**", ""))
        if line.lstrip().startswith("- "):
            out.append(f"<li>{text.lstrip()[2:]}</li>")
        elif line.strip():
            out.append(f"<p>{text}</p>")
    return "\n".join(out)


def _unfinished_html(sweep):
    """One line per run that is not completed, with the last step it logged."""
    lines = []
    for _, run in sweep.incomplete().iterrows():
        data = sweep.data.get(run["run_id"])
        step = ""
        if data is not None and "step" in data.train and not data.train.empty:
            planned = data.config.get("train.steps")
            step = f", step {int(data.train['step'].iloc[-1])}" + (
                f" of {planned}" if planned else "")
        lines.append(f"- {run['name']} (id {run['run_id']}): {run['status']}{step}")
    return _paragraphs(lines)


def page_html(sweep, table, attention_rows, conclusions=(), refresh_seconds=None):
    """The whole page as text; `refresh_seconds` makes the browser reload it that often (a
    report being kept current by --watch)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    counts = sweep.runs["status"].value_counts().to_dict()
    status = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    refresh = (f'<meta http-equiv="refresh" content="{int(refresh_seconds)}">'
               if refresh_seconds else "")
    written = f"written {now:%Y-%m-%d %H:%M:%S} UTC" + (
        f"; reloads every {int(refresh_seconds)} s while `attnlab report --watch` keeps it "
        "current" if refresh_seconds else "")
    parts = [f"<h1>Sweep {html.escape(sweep.name)}</h1>",
             f'<p class="note">{html.escape(str(sweep.directory))}: {len(sweep.runs)} runs '
             f"({html.escape(status)}), {len(sweep.rows)} rows; {html.escape(written)}.</p>"]
    if not sweep.incomplete().empty:
        parts += ["<h2>Runs not completed</h2>", f"<ul>{_unfinished_html(sweep)}</ul>"]
    curves = [curve_figure(sweep, "eval", "ppl", "Dev perplexity", "dev perplexity (log scale)",
                           True),
              curve_figure(sweep, "train", "nll", "Training NLL (without label smoothing)",
                           "nats / target token", False)]
    curves = [figure for figure in curves if figure is not None]
    if curves:
        parts.append("<h2>Curves</h2>")
        parts += [_figure_html(figure) for figure in curves]
    effect = effect_figure(sweep, table)
    if effect is not None:
        parts += ["<h2>Seeds against the paper</h2>", _figure_html(effect)]
    if conclusions:
        parts += ["<h2>Conclusions</h2>", f'<ul class="note">{_paragraphs(conclusions)}</ul>']
    header, rows = render.cells(table)
    parts += ["<h2>Table</h2>", '<p class="note">Click a column header to sort by it.</p>',
              f'<div class="scroll">{table_html(header, rows, "results")}</div>',
              f'<div class="note">{_paragraphs(render.notes(table))}</div>']
    maps = attention_figures(sweep, attention_rows)
    if maps:
        parts.append("<h2>Attention of the probe sentence</h2>")
        for title, figure in maps:
            parts += [f"<h3>{html.escape(title)}</h3>", _figure_html(figure)]
    body = "\n".join(parts)
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">{refresh}"
            f"<title>Sweep {html.escape(sweep.name)}</title><style>{STYLE}</style>"
            f'<script type="text/javascript">{get_plotlyjs()}</script></head>\n'
            f"<body>\n{body}\n<script>{SORT_SCRIPT}</script>\n</body></html>\n")


def write_page(path, text):
    """Writes beside `path` and renames: a browser reloading it never reads half a page."""
    path = pathlib.Path(path)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
    return str(path)
