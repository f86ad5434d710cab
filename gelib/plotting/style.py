"""The book's figure style: its colours, :func:`~gelib.plotting.use_style`, and small axis helpers.

A figure is drawn for the column the book shows it in: at a 1280 px window
the theme shows a figure :data:`~gelib.plotting.style.FIGURE_COLUMN_PX` CSS px wide. Text of
``pt`` points in a figure ``w`` inches wide shown ``W`` px wide is
``pt / 72 * W / w`` px high (its em size), so the book caps a figure's width
at :data:`~gelib.plotting.style.MAX_WIDTH_IN` and its text at no less than :data:`~gelib.plotting.style.MIN_FONT_PT`:
at most one figure inch per 100 CSS px, no text under :data:`~gelib.plotting.style.MIN_TEXT_PX`
(:func:`~gelib.plotting.fit_figure`, applied when a figure is displayed). Every PNG the book
writes of a figure (:func:`~gelib.plotting.book_png`, the notebook's PNG formatter that
:func:`~gelib.plotting.use_style` registers where IPython runs) carries its smallest font
size in a PNG text chunk, :data:`~gelib.plotting.style.MIN_FONT_KEY`, beside its dpi (pHYs), so
that a browser check can compute the displayed size of its smallest text.
"""

from __future__ import annotations

import base64
import io
import math
import sys
from collections.abc import Sequence

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib import ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

__all__ = [
    "COLORS",
    "use_style",
    "label_ns",
    "close",
    "log2_axis",
    "tex_sci",
    "FIGURE_COLUMN_PX",
    "MIN_TEXT_PX",
    "MAX_WIDTH_IN",
    "MIN_FONT_PT",
    "PNG_DPI",
    "MIN_FONT_KEY",
    "min_font_pt",
    "fit_figure",
    "png_metadata",
    "book_png",
    "register_png_formatter",
]


#: The book's colour cycle (colour-blind-safe enough for six series).
COLORS = ("#1f5a96", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#555555")


def use_style() -> None:
    """The book's matplotlib style (lower-case labels are the chapters' job)."""
    mpl.rcParams.update(
        {
            "figure.figsize": (6.4, 3.4),
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
            "legend.fontsize": 9,
        }
    )
    register_png_formatter()


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


#: The width (CSS px) at which the book's theme shows a figure in a 1280 px window
#: (measured in Chromium: 660 px, in a text column of 740 px).
FIGURE_COLUMN_PX = 660
#: The smallest text (CSS px, the font's em size) a figure shows at :data:`~gelib.plotting.style.FIGURE_COLUMN_PX`:
#: 11 px, whose x-height (about 6 px) is that of the page's footnote text.
MIN_TEXT_PX = 11.0
#: The widest figure, in inches, so that one inch is shown at least 100 CSS px wide.
MAX_WIDTH_IN = 6.4
#: The smallest font size of a figure's text, in points, ``MIN_TEXT_PX`` at ``MAX_WIDTH_IN``.
MIN_FONT_PT = math.ceil(MIN_TEXT_PX * 72 * MAX_WIDTH_IN / FIGURE_COLUMN_PX * 2) / 2  # 8.0
#: The resolution of the book's PNGs, shown in the column at half their width and at full size on a click.
PNG_DPI = 200
#: The PNG text chunk that holds a figure's smallest font size in points.
MIN_FONT_KEY = "gelib-min-font-pt"


def _texts(fig: Figure) -> list[Text]:
    """The figure's visible, non-empty texts (tick labels, titles, legends, annotations)."""

    def shown(t: Text) -> bool:
        return t.get_visible() and (t.axes is None or t.axes.get_visible()) and bool(t.get_text().strip())

    return [t for t in fig.findobj(Text) if shown(t)]


def min_font_pt(fig: Figure) -> float | None:
    """The smallest font size (points) of any visible text of ``fig``, None where it has none."""
    fig.draw_without_rendering()  # the tick labels as they will be drawn
    sizes = [float(t.get_fontsize()) for t in _texts(fig)]
    return float(min(sizes)) if sizes else None


class _SparseLogFormatter(ticker.LogFormatterSciNotation):
    """Minor tick labels of a log axis that do not run together: none over more than a
    decade, the mantissas 2 and 5 within one, 2, 3, 5 and 7 within a third of one."""

    def set_locs(self, locs=None):
        super().set_locs(locs)
        lo, hi = self.axis.get_view_interval() if self.axis is not None else (1.0, 10.0)
        decades = math.log10(max(hi, lo) / max(min(hi, lo), 1e-300)) if min(hi, lo) > 0 else 2.0
        self._sublabels = {1} if decades > 1 else ({1, 2, 5} if decades > 1 / 3 else {1, 2, 3, 5, 7})


def _laid_out_by_hand(fig: Figure) -> bool:
    """Whether ``fig``'s subplot margins were set by hand (``subplots_adjust``): kept, not re-laid out."""
    pars = fig.subplotpars
    defaults: dict[str, object] = {str(k): v for k, v in mpl.rcParams.items()}
    return any(
        not math.isclose(getattr(pars, k), float(str(defaults[f"figure.subplot.{k}"])))
        for k in ("left", "right", "bottom", "top", "wspace", "hspace")
    )


def fit_figure(fig: Figure) -> Figure:
    """Fit ``fig`` to the book's column, in place: at most :data:`~gelib.plotting.style.MAX_WIDTH_IN` wide (scaled
    down, aspect kept; laid out by constrained layout where it had no layout), no text under
    :data:`~gelib.plotting.style.MIN_FONT_PT`, and the minor tick labels of log axes thinned."""
    w, h = fig.get_size_inches()
    if w > MAX_WIDTH_IN:
        fig.set_size_inches(MAX_WIDTH_IN, h * MAX_WIDTH_IN / w)
        if fig.get_layout_engine() is None and fig.axes and all(ax.get_subplotspec() for ax in fig.axes):
            if not _laid_out_by_hand(fig):
                fig.set_layout_engine("constrained")
                try:
                    fig.draw_without_rendering()
                except (ValueError, ZeroDivisionError):  # constrained layout cannot place it: as it was
                    fig.set_layout_engine("none")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log" and type(axis.get_minor_formatter()) is ticker.LogFormatterSciNotation:
                axis.set_minor_formatter(_SparseLogFormatter(labelOnlyBase=False))
    fig.draw_without_rendering()
    for ax in fig.axes:  # new ticks take the axis' label size: floor it first
        for axis in (ax.xaxis, ax.yaxis):
            major, minor = axis.get_major_ticks(), axis.get_minor_ticks()
            if major and float(major[0].label1.get_fontsize()) < MIN_FONT_PT:
                axis.set_tick_params(which="major", labelsize=MIN_FONT_PT)
            if minor and float(minor[0].label1.get_fontsize()) < MIN_FONT_PT:
                axis.set_tick_params(which="minor", labelsize=MIN_FONT_PT)
    for t in _texts(fig):
        if float(t.get_fontsize()) < MIN_FONT_PT:
            t.set_fontsize(MIN_FONT_PT)
    _wrap_titles(fig)
    _fit_tight_width(fig)
    return fig


def _tight_width_in(fig: Figure) -> float | None:
    """The width, in inches, of the box a tight PNG of ``fig`` takes (its artists outside the figure
    included: a legend beside the axes, a label past the edge), or None without a renderer."""
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    if get_renderer is None:
        return None
    fig.draw_without_rendering()
    return float(fig.get_tightbbox(get_renderer()).width)


def _fit_tight_width(fig: Figure, tries: int = 5) -> None:
    """Narrow ``fig`` until its tight box is at most :data:`~gelib.plotting.style.MAX_WIDTH_IN` wide. What
    sticks out of the figure keeps its size in points while the axes narrow with the figure, so the
    tight width is close to linear in the figure's width: secant steps on that line, the first one
    taking off the excess. Where that does not converge in ``tries`` (text placed in the figure's own
    coordinates narrows with it), or would crush the figure below half its width, the figure keeps
    its size: fitting twice gives the same PNG."""
    size = fig.get_size_inches().copy()
    h = size[1]
    w, tight = size[0], _tight_width_in(fig)
    prev = None
    for _ in range(tries):
        if tight is None or tight <= MAX_WIDTH_IN * 1.001:
            return
        slope = 1.0 if prev is None or prev[1] == tight else (tight - prev[1]) / (w - prev[0])
        new_w = w - (tight - MAX_WIDTH_IN) / max(slope, 0.1)
        if new_w <= 0.5 * size[0]:
            break
        prev = (w, tight)
        fig.set_size_inches(new_w, h)
        w, tight = new_w, _tight_width_in(fig)
    if tight is not None and tight > MAX_WIDTH_IN * 1.001:
        fig.set_size_inches(*size)


def _break_line(text: str) -> str | None:
    """``text`` broken once, at the ``", "``, ``": "`` or ``"; "`` nearest its middle outside
    TeX math (``$...$``), or None where it has no such place."""
    places = [
        i for i in range(len(text) - 1) if text[i] in ",:;" and text[i + 1] == " " and text[:i].count("$") % 2 == 0
    ]
    if not places:
        return None
    i = min(places, key=lambda j: abs(j - len(text) / 2))
    return text[: i + 1] + "\n" + text[i + 2 :]


def _wrap_titles(fig: Figure) -> None:
    """Break an axes title of one line that is wider than its axes, or a figure title wider than the
    figure, into two (:func:`_break_line`)."""
    get_renderer = getattr(fig.canvas, "get_renderer", None)
    if get_renderer is None:
        return
    fig.draw_without_rendering()
    renderer = get_renderer()
    # each axes' title against its axes, and the figure's own title (suptitle) against the figure
    titles = [(ax.title, ax.get_window_extent(renderer).width) for ax in fig.axes]
    suptitle = getattr(fig, "_suptitle", None)  # the Text of fig.suptitle (matplotlib has no public getter)
    if suptitle is not None:
        titles.append((suptitle, fig.bbox.width))
    for title, room in titles:
        text = title.get_text()
        if not text or "\n" in text or not title.get_visible():
            continue
        if title.get_window_extent(renderer).width > 1.02 * room:
            broken = _break_line(text)
            if broken is not None:
                title.set_text(broken)


def png_metadata(fig: Figure) -> dict[str, str]:
    """The PNG text chunk of ``fig``: ``{MIN_FONT_KEY: smallest font size in points}`` (none without text)."""
    size = min_font_pt(fig)
    return {} if size is None else {MIN_FONT_KEY: f"{size:g}"}


def book_png(fig: Figure, dpi: float = PNG_DPI, fit: bool = True) -> bytes:
    """The book's PNG of ``fig``: fitted (:func:`~gelib.plotting.fit_figure`, unless ``fit`` is false), a tight
    box, ``dpi`` in its pHYs chunk and its smallest font size in :data:`~gelib.plotting.style.MIN_FONT_KEY`, undated."""
    if fit:
        fit_figure(fig)
    buf = io.BytesIO()
    fig.savefig(
        buf,
        format="png",
        dpi=dpi,
        bbox_inches="tight",
        facecolor=fig.get_facecolor(),
        edgecolor=fig.get_edgecolor(),
        metadata={"Software": None, **png_metadata(fig)},
    )
    return buf.getvalue()


def _png_base64(fig: Figure) -> str | None:
    if not fig.axes and not fig.texts:
        return None  # an empty figure displays nothing, as with the inline backend
    return base64.b64encode(book_png(fig)).decode("ascii")


def register_png_formatter(shell: object = None) -> bool:
    """Make the notebook's PNG of every matplotlib figure :func:`~gelib.plotting.book_png`'s (fitted, with its
    metadata), where an IPython shell runs (``shell`` or the current one); True if registered.
    Without IPython (a script, a test) nothing happens: gelib does not import IPython."""
    if shell is None:
        if "IPython" not in sys.modules:
            return False
        shell = sys.modules["IPython"].get_ipython()
    formatters = getattr(getattr(shell, "display_formatter", None), "formatters", None)
    if not formatters or "image/png" not in formatters:
        return False
    if not plt.get_fignums():  # load the backend now: the inline backend sets its own formatter when loaded
        plt.switch_backend(mpl.rcParams["backend"])
    formatters["image/png"].for_type(Figure, _png_base64)
    return True
