"""The book's figure style: its colours, :func:`~gelib.plotting.use_style`, and small axis helpers."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

__all__ = [
    "COLORS",
    "use_style",
    "label_ns",
    "close",
    "log2_axis",
    "tex_sci",
]


#: The book's colour cycle (colour-blind-safe enough for six series).
COLORS = ("#1f5a96", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#555555")


def use_style() -> None:
    """The book's matplotlib style (lower-case labels are the chapters' job)."""
    mpl.rcParams.update(
        {
            "figure.figsize": (7.0, 3.6),
            "figure.dpi": 110,
            "savefig.dpi": 150,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.25,
            # matplotlib re-exports rcsetup's cycler at run time; its stub (__init__.pyi) omits it
            "axes.prop_cycle": mpl.cycler(color=COLORS),  # type: ignore[attr-defined]
            "legend.frameon": False,
            "font.size": 10,
            "axes.titlesize": 10,
        }
    )


def label_ns(ax: Axes, ns: Sequence[int]) -> None:
    """Tick exactly the sizes ``ns`` of a sweep on a logarithmic x-axis."""
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


def close(fig: Figure) -> None:
    """Close a figure after it was glued, so it is not displayed twice."""
    plt.close(fig)


def log2_axis(ax: Axes, ticks: Sequence[float], labels: Sequence[str] | None = None) -> None:
    """A base-2 logarithmic x-axis ticked exactly at ``ticks`` (labels: the values, or ``labels``)."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks), [str(t) for t in ticks] if labels is None else list(labels))
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


def tex_sci(x: float) -> str:
    """``x`` in scientific notation for a TeX label, 3 significant digits.

    >>> tex_sci(393216.0)
    '3.93 \\\\times 10^{5}'
    >>> tex_sci(2.5)
    '2.5'
    """
    mant, ex = f"{x:.3g}e0".split("e")[:2]
    return f"{mant} \\times 10^{{{int(ex)}}}" if int(ex) else mant
