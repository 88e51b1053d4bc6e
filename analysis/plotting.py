"""How every analysis figure is drawn and saved, in one place: the Agg backend (figures are files,
never windows), the resolution, the colours and line styles, the plain-number log axis, and
saving a figure (then closing it, so a long report does not hold every figure in memory).

Import pyplot from here (`from analysis.plotting import plt`): importing this module chooses the
backend before pyplot is loaded.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["DPI", "plt", "colors", "graded_colors", "styles", "log_axis", "save"]

DPI = 110  # every PNG of the analysis, at bbox_inches="tight"


def colors(count):
    """`count` colours of matplotlib's tab10 cycle (strong colours for lines of equal standing;
    they repeat after ten)."""
    cmap = plt.get_cmap("tab10")
    return [cmap(i % cmap.N) for i in range(count)]


def graded_colors(keys):
    """{key: colour} along viridis (dark to light, stopping before the palest yellow) for keys
    in an order that means something (learning rates, warm-ups)."""
    keys = list(keys)
    return dict(zip(keys, plt.get_cmap("viridis")(np.linspace(0.0, 0.85, len(keys)))))


def styles(count):
    """Line styles that, with tab10's strong colours, tell up to 40 lines apart (the pale half of
    tab20 is hard to read)."""
    return [("-", "--", ":", "-.")[(i // 10) % 4] for i in range(count)]


def log_axis(axis):
    """A log y axis labelled with plain numbers (12, 11.5) instead of powers of ten."""
    axis.set_yscale("log")
    formatter = matplotlib.ticker.FormatStrFormatter("%g")
    axis.yaxis.set_major_formatter(formatter)
    axis.yaxis.set_minor_formatter(formatter)


def save(figure, path):
    """Writes `figure` to `path` (PNG at DPI, cropped to what is drawn), closes it and returns the
    path as text."""
    figure.savefig(path, dpi=DPI, bbox_inches="tight")
    plt.close(figure)
    return str(path)
