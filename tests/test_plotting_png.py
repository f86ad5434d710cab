"""The book's figure PNGs: fitted to the column, their smallest font size and dpi in the file."""

from __future__ import annotations

import io
import types

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from matplotlib import ticker
from matplotlib.figure import Figure
from PIL import Image

import gelib.plotting as gp


def _png_info(data: bytes) -> dict:
    image = Image.open(io.BytesIO(data))
    return {**image.text, "dpi": image.info.get("dpi")}


def _figure(width=5.0, label_pt=10.0):
    fig, ax = plt.subplots(figsize=(width, 3.0))
    ax.plot([1, 2, 3])
    ax.set_xlabel("n", fontsize=label_pt)
    ax.tick_params(labelsize=12)
    ax.set_title("a title", fontsize=12)
    return fig


def test_a_5pt_label_reports_5():
    fig = _figure(label_pt=5.0)
    try:
        assert gp.min_font_pt(fig) == 5.0
        info = _png_info(gp.book_png(fig, dpi=120, fit=False))
        assert info[gp.MIN_FONT_KEY] == "5"
        assert info["dpi"] == pytest.approx((120, 120), abs=0.1)  # pHYs
    finally:
        plt.close(fig)


def test_hidden_and_empty_text_do_not_count():
    fig = _figure(label_pt=11.0)
    try:
        fig.axes[0].text(0.5, 0.5, "hidden", fontsize=3).set_visible(False)
        fig.axes[0].text(0.5, 0.5, "  ", fontsize=2)
        assert gp.min_font_pt(fig) == 11.0
        fig.axes[0].text(0.5, 0.5, "shown", fontsize=4)
        assert gp.min_font_pt(fig) == 4.0
    finally:
        plt.close(fig)


def test_fit_floors_text_and_caps_width():
    fig = _figure(width=10.0, label_pt=5.0)
    try:
        fig.axes[0].legend(["a line"], fontsize=6)
        gp.fit_figure(fig)
        w, h = fig.get_size_inches()
        assert w == pytest.approx(gp.MAX_WIDTH_IN) and h == pytest.approx(3.0 * gp.MAX_WIDTH_IN / 10.0)
        assert gp.min_font_pt(fig) == gp.MIN_FONT_PT
        info = _png_info(gp.book_png(fig))
        assert float(info[gp.MIN_FONT_KEY]) == gp.MIN_FONT_PT
        # shown at the column's width: the smallest text at least MIN_TEXT_PX
        natural = Image.open(io.BytesIO(gp.book_png(fig))).width
        shown = min(natural / 2, gp.FIGURE_COLUMN_PX)  # a 200 dpi PNG is shown at half its pixels at most
        assert gp.MIN_FONT_PT / 72 * gp.PNG_DPI * shown / natural >= gp.MIN_TEXT_PX - 0.5
    finally:
        plt.close(fig)


def test_log_minor_labels_thinned():
    fig, ax = plt.subplots()
    try:
        ax.set_xscale("log")
        ax.set_xlim(250, 900)  # less than half a decade: matplotlib labels 3, 4, 6 x 10^2 ...
        ax.plot([250, 900], [1, 2])
        fig.draw_without_rendering()
        before = [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
        gp.fit_figure(fig)
        fig.draw_without_rendering()
        after = [t.get_text() for t in ax.xaxis.get_minorticklabels() if t.get_text()]
        assert isinstance(ax.xaxis.get_minor_formatter(), ticker.LogFormatterSciNotation)
        assert len(after) < len(before) and after, (before, after)
    finally:
        plt.close(fig)


def test_register_png_formatter():
    registered = {}

    class PNG:
        def for_type(self, typ, func):
            registered[typ] = func

    shell = types.SimpleNamespace(display_formatter=types.SimpleNamespace(formatters={"image/png": PNG()}))
    assert gp.register_png_formatter(shell)
    fig = _figure(label_pt=9.0)
    try:
        import base64

        data = base64.b64decode(registered[Figure](fig))
        assert _png_info(data)[gp.MIN_FONT_KEY] == "9"
    finally:
        plt.close(fig)
    assert not gp.register_png_formatter(types.SimpleNamespace())  # no IPython display: nothing registered


def test_title_wider_than_its_axes_is_broken_once():
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3), layout="constrained")
    try:
        long = "n = 256: rel. W1 = 0.365 %, KS = 0.0039, and a few more words $a, b$"
        a.set_title(long)
        b.set_title("short, title")
        gp.fit_figure(fig)
        assert a.get_title().count("\n") == 1 and a.get_title().replace("\n", " ") == long
        assert b.get_title() == "short, title"  # it fits: left as it is
        assert "$a,\nb$" not in a.get_title()  # never inside TeX math
    finally:
        plt.close(fig)


def test_a_figure_laid_out_by_hand_keeps_its_layout():
    """A wide figure whose margins were set by hand (``subplots_adjust``, as Figure 2(b)'s map with
    its legend below) is scaled, not re-laid out: constrained layout divided by zero on that map."""
    fig, ax = plt.subplots(figsize=(10, 4.6))
    ax.plot([0, 1], [0, 1], label="a")
    fig.legend(loc="lower center", ncol=3)
    fig.subplots_adjust(bottom=0.25)
    gp.fit_figure(fig)
    assert fig.get_layout_engine() is None
    assert fig.subplotpars.bottom == pytest.approx(0.25)
    assert fig.get_size_inches()[0] == pytest.approx(gp.style.MAX_WIDTH_IN)
    plain, _ = plt.subplots(figsize=(10, 4.6))
    gp.fit_figure(plain)
    assert type(plain.get_layout_engine()).__name__ == "ConstrainedLayoutEngine"
    plt.close("all")


@pytest.mark.parametrize("by_hand", [False, True])
def test_what_sticks_out_of_the_figure_is_fitted_too(by_hand):
    """A legend beside the axes, outside the figure, widens the tight PNG past the column: the fitted
    PNG is at most MAX_WIDTH_IN wide all the same (measured in the file: pixels over its dpi), and
    its text keeps its size, so that shown in the column it is as large as the file says."""
    fig, ax = plt.subplots(figsize=(gp.MAX_WIDTH_IN, 3.0))
    if by_hand:
        fig.subplots_adjust(left=0.1, right=0.95)
    ax.plot([1, 2, 3], label="a long legend entry, outside the axes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=9)
    try:
        loose = Image.open(io.BytesIO(gp.book_png(fig, dpi=100, fit=False))).size[0] / 100
        assert loose > gp.MAX_WIDTH_IN * 1.2  # the case: the legend adds more than a fifth
        data = gp.book_png(fig, dpi=100)
        image = Image.open(io.BytesIO(data))
        pad = 2 * plt.rcParams["savefig.pad_inches"]  # the tight box's margin, as FIGURE_COLUMN_PX allows for
        assert image.size[0] / 100 <= gp.MAX_WIDTH_IN + pad + 0.02, image.size  # + rounding to pixels
        assert float(image.text[gp.MIN_FONT_KEY]) >= gp.MIN_FONT_PT
    finally:
        plt.close(fig)


def test_a_figure_title_wider_than_the_figure_is_broken_and_fitted():
    """A suptitle longer than the figure is wide is broken at a comma, so that the tight PNG fits the
    column (shrinking the figure cannot narrow a text whose size is in points)."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.8))
    for ax in axes:
        ax.plot([1, 2, 3])
    long = "Figure 2(c) with the first-moment shift $b = +2.14$ %, at Table D.3's dimensions, every scale, n = 4096"
    fig.suptitle(long + ", the paper's markers against the shifted curves", fontsize=8)
    try:
        image = Image.open(io.BytesIO(gp.book_png(fig, dpi=100)))
        assert "\n" in fig._suptitle.get_text()
        assert image.size[0] / 100 <= gp.MAX_WIDTH_IN + 2 * plt.rcParams["savefig.pad_inches"] + 0.02, image.size
    finally:
        plt.close(fig)


def test_fitting_is_idempotent_where_the_tight_box_cannot_be_narrowed():
    """Text placed in the figure's own coordinates narrows with the figure, so its tight box may never
    reach the column: the figure then keeps its size, and two PNGs of it are the same bytes (a glued
    figure and its display must be one file: the front page shows the glued one)."""
    fig = plt.figure(figsize=(gp.MAX_WIDTH_IN, 4.0))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    for y in (0.2, 0.5, 0.8):
        ax.text(0.98, y, "a label that runs far past the right edge of the figure", fontsize=9)
    try:
        first = gp.book_png(fig, dpi=50)
        assert gp.book_png(fig, dpi=50) == first
        assert tuple(fig.get_size_inches()) == (gp.MAX_WIDTH_IN, 4.0)
    finally:
        plt.close(fig)
