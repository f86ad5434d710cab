"""The figures of the learning chapters (the paper's Figures 2 and 3).

One function per figure, each taking the curves (limit law) and the markers
(softmax layers) the chapter computed with :mod:`gelib.learning` and
:mod:`gelib.learning_markers`, and returning the matplotlib figure.

The curves are the limit law at Table D.3's dimensions. Markers simulated
at shrunk dimensions (a factor ``s < 1``, :func:`gelib.learning.shrink`) come
with ``own``, the limit law at their own dimensions, drawn beside them as a
thin dashed line of the same colour (:func:`~gelib.plotting.own_curve`); a head count ``h``
of a shrunk layer is drawn at ``h / s``, where the table's layer with the
same ``h d_V / n`` sits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ..attention_law import chain
from ..config import AttentionConfig
from ..learning import Crossing, PathPoint
from ..learning_markers import Convergence, ShiftedValues
from ..spectra import Summary
from .law_plots import density_curves
from .style import COLORS, log2_axis, tex_sci

__all__ = [
    "allocation_figure",
    "ge_and_mha",
    "OWN_STYLE",
    "OWN_LABEL",
    "own_curve",
    "sharing_across_figure",
    "sharing_within_figure",
    "loss_figure",
    "width_boundary_segments",
    "width_boundaries",
    "budget_paths",
    "error_map_figure",
    "paths_figure",
    "ratio_figure",
    "convergence_figure",
    "shift_figure",
    "learning_view",
]


def allocation_figure(splits: Sequence[AttentionConfig], outputs: Sequence[AttentionConfig]) -> Figure:
    """How the head allocation and the output width enter the limit law: four :func:`density_curves` panels.

    Parameters
    ----------
    splits
        Layers that split one total value width ``h d_V`` into heads: the top
        panels show their value laws ``mu_V`` (linear axis) and output laws
        (log axis), labelled by ``h`` and ``d_V``.
    outputs
        Layers that differ in the output width ``d_O`` (at ``h = 4`` in the
        titles): the bottom panels show their laws ``mu_VO`` and output laws
        (log axes), labelled by ``d_O / n``.

    Returns
    -------
    matplotlib.figure.Figure
        The 2 x 2 figure. The laws are :func:`gelib.attention_law.chain`'s.
    """
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.4))
    split_chains = [chain(c) for c in splits]
    output_chains = [chain(c) for c in outputs]
    split_labels = [f"h = {c.h}, $d_V$ = n/{c.n // c.d_v}" for c in splits]
    out_labels = [f"$d_O$ = {o.d_o / o.n:g} n" for o in outputs]
    panels = (
        (axes[0, 0], [c.value for c in split_chains], split_labels, r"$\mu_V$ at fixed $h d_V = n$", False),
        (axes[0, 1], [c.output for c in split_chains], split_labels, "output law at fixed $h d_V = n$", True),
        (axes[1, 0], [c.output_covariance for c in output_chains], out_labels, r"$\mu_{VO}$, $h = 4$", True),
        (axes[1, 1], [c.output for c in output_chains], out_labels, "output law, $h = 4$", True),
    )
    for ax, laws, labels, title, log in panels:
        density_curves(ax, laws, labels, title, log=log)
    fig.tight_layout()
    return fig


def ge_and_mha(
    ax: Axes,
    x: ArrayLike,
    curve: ArrayLike,
    marks: Sequence[tuple[float, Summary]] = (),
    *,
    color: str,
    label: str | None = None,
    mark_label: str | None = None,
    offset: float = 1.0,
    ms: float = 4,
    **curve_kw: Any,
) -> Axes:
    """A GE curve and its softmax markers, in one colour.

    ``curve`` (shape ``(k,)``, as ``x``) is drawn as a line, with a gap at
    infinite values (a divergence); ``marks`` is a sequence of
    ``(x, summary)`` pairs (:class:`gelib.spectra.Summary`), drawn as open
    circles with their 95 % interval, at ``x * offset`` (to separate two
    series on a logarithmic axis). Extra keywords go to the line. Returns ``ax``.
    """
    y = np.asarray(curve, dtype=float)
    kw = dict(lw=1.6) | curve_kw
    ax.plot(x, np.where(np.isfinite(y), y, np.nan), "-", color=color, label=label, **kw)
    if len(marks):
        xs, ss = zip(*marks)
        ax.errorbar(
            np.asarray(xs, dtype=float) * offset,
            [s.mean for s in ss],
            yerr=[s.ci95 for s in ss],
            fmt="o",
            ms=ms,
            capsize=2,
            color=color,
            mfc="white",
            label=mark_label,
        )
    return ax


def _times_n(x: float) -> str:
    """``2 -> '2n'``, ``0.5 -> 'n/2'``, ``1 -> 'n'``: a width as a multiple of ``n``, for labels."""
    if x == 1:
        return "n"
    return f"{x:g}n" if x > 1 else f"n/{1 / x:g}"


#: The style of the limit law at the markers' own (shrunk) dimensions.
OWN_STYLE: dict[str, Any] = dict(ls=(0, (4, 2)), lw=1.0, alpha=0.9)
OWN_LABEL = "dashed: GE at the markers' dimensions"


def own_curve(ax: Axes, x: ArrayLike, y: ArrayLike, color: str, label: str | None = None) -> None:
    """The limit law at the markers' own dimensions: a thin dashed line in ``color``, gaps at infinite values.

    ``label`` (e.g. ``OWN_LABEL``) goes to a grey legend entry of the same style, which
    stands for the dashed curves of every colour.
    """
    y = np.asarray(y, dtype=float)
    ax.plot(x, np.where(np.isfinite(y), y, np.nan), color=color, **OWN_STYLE)
    if label is not None:
        ax.plot([], [], color="grey", label=label, **OWN_STYLE)


def _at(marks, s: float) -> list:
    """``(x, summary)`` pairs with ``x`` divided by ``s`` (a shrunk head count where Table D.3's sits)."""
    return [(x / s, m) for x, m in marks]


def sharing_across_figure(
    fixed_widths: Sequence[AttentionConfig],
    fixed_budget: Sequence[AttentionConfig],
    curve_w: ArrayLike,
    curve_b: ArrayLike,
    marks_w: Sequence[tuple[float, Summary]],
    marks_b: Sequence[tuple[float, Summary]],
    note: str,
    epsilon: float,
    own: dict | None = None,
    s: float = 1.0,
    table_d1: Sequence[tuple[str, float, float]] = (),
) -> Figure:
    """Figure 3(a): arrival time to ``epsilon`` against ``h_KV``, at fixed widths and at fixed ``N_par``.

    ``curve_w`` and ``curve_b`` are the GE arrival times of the layers
    ``fixed_widths`` and ``fixed_budget`` (ordered as ``h_KV`` falls from ``h``
    to 1); ``marks_w``, ``marks_b`` lists of ``(x, summary)`` of the softmax
    markers, ``x`` where they are drawn (``h_KV / s`` for a shrunk layer). The
    unshared layer is marked by a diamond, the widths ``w = d_K = d_V`` of the
    fixed-budget layers are annotated. ``own`` (if given) holds ``"groups"``
    (the markers' own ``h_KV``, drawn at ``h_KV / s``) and ``"w"``, ``"b"``: the
    arrival times of their own layers, drawn dashed. ``table_d1``: rows
    ``(label, value, half-width)`` of the paper's Table D.1, drawn as bands in
    the colours of the two series. Returns the figure.
    """
    groups = [c.h_kv for c in fixed_widths]
    first = fixed_widths[0]
    curve_w, curve_b = np.asarray(curve_w, dtype=float), np.asarray(curve_b, dtype=float)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for color, curve, marks, label in (
        (COLORS[0], curve_w, marks_w, f"GE, fixed widths $d_K = d_V = {first.d_k}$"),
        (COLORS[1], curve_b, marks_b, "GE, fixed $N_{par}$ (widths grow)"),
    ):
        ge_and_mha(ax, groups, curve, marks, color=color, offset=0.96 if color == COLORS[0] else 1.04, label=label)
    if own is not None:
        x_own = np.asarray(own["groups"]) / s
        own_curve(ax, x_own, own["w"], COLORS[0], OWN_LABEL)
        own_curve(ax, x_own, own["b"], COLORS[1])
    for color, (label, value, half) in zip(COLORS, table_d1):
        ax.axhspan(value - half, value + half, color=color, alpha=0.12, lw=0, label=f"Table D.1: {label}")
    ax.plot([first.h], [curve_w[0]], "D", color="black", ms=8, mfc="none", label="unshared ($h_{KV} = h$)")
    for c, y in zip(fixed_budget, curve_b):
        ax.annotate(
            f"$w = {c.d_k}$",
            (c.h_kv, y),
            textcoords="offset points",
            xytext=(0, 7),
            ha="center",
            fontsize=7,
            color=COLORS[1],
        )
    log2_axis(ax, groups)
    ax.set_xlabel(f"key/value groups $h_{{KV}}$ (of $h = {first.h}$ query heads)")
    ax.set_ylabel(f"arrival time ($\\epsilon = {epsilon:g}$)")
    ax.margins(y=0.15)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"Figure 3(a), $d_O = {_times_n(first.d_o / first.n)}$\n{note}", fontsize=8)
    return fig


def sharing_within_figure(
    layers: Sequence[AttentionConfig],
    curves: dict,
    marks: dict,
    note: str,
    sigma: float,
    horizon: float,
    table_d1: Sequence[tuple[str, float, float]] = (),
) -> Figure:
    """Figure 3(b): the coefficient error at ``t = horizon`` of two sharing schemes against the head count.

    ``layers`` gives the head counts and widths of the sweep (one layer per
    point); ``curves[scheme]`` the GE coefficient errors (label noise ``sigma``)
    and ``marks[scheme]`` lists of ``(h, summary)`` of the softmax markers, on a
    logarithmic axis. ``table_d1``: rows ``(label, value, half-width)`` of the
    paper's Table D.1, drawn as grey bands. Returns the figure.
    """
    import matplotlib.ticker as mticker

    heads = [c.h for c in layers]
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    for color, name in zip(COLORS, curves):
        ge_and_mha(
            ax,
            heads,
            curves[name],
            marks[name],
            color=color,
            ms=5,
            marker=".",
            label=f"GE, {name}",
            mark_label=f"MHA, {name}",
        )
    for label, value, half in table_d1:
        ax.axhspan(value - half, value + half, color="grey", alpha=0.3, lw=0, label=f"Table D.1: {label}")
    log2_axis(ax, heads, [f"{c.h}\n$d_K$={c.d_k}" for c in layers])
    ax.set_xlabel("head count $h$ (head width $d_K = n / 2h$)")
    ax.set_ylabel(f"coefficient error at $t = {tex_sci(horizon)}$, $\\sigma = {sigma:g}$")
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(mticker.LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.legend(fontsize=8)
    c = layers[0]
    ax.set_title(f"Figure 3(b), $d = {_times_n(c.d / c.n)}$, $d_O = {_times_n(c.d_o / c.n)}$\n{note}", fontsize=8)
    return fig


def _table_d1_lines(ax: Axes, data: dict) -> None:
    """The paper's Table D.1 rows of a panel (``data["table_d1"]``, :func:`gelib.figure_data.panel`):
    the value its largest error bar belongs to, a grey dash-dotted line in a band of that half-width."""
    for row in data.get("table_d1", []):
        value, half = row["value"], row["half_width"]
        ax.axhspan(value - half, value + half, color="grey", alpha=0.2, lw=0)
        ax.axhline(value, color="grey", ls="-.", lw=1, label=f"Table D.1: {value:.4g} ± {half:.2g} (its largest bar)")


def _series(data: dict, kind: str) -> list[dict]:
    """The series of a panel of one kind (``"ge"`` or ``"mha"``), in order."""
    return [sr for sr in data["series"] if sr["kind"] == kind]


def _marks(data: dict, i: int) -> list[tuple[float, Summary]]:
    """The ``i``-th MHA series of a panel as ``(x, summary)`` pairs (none if there is no such series)."""
    mha = _series(data, "mha")
    if i >= len(mha):
        return []
    return [(x, Summary(y, c, np.nan, 0)) for x, y, c in zip(mha[i]["x"], mha[i]["y"], mha[i]["ci95"])]


def _panel_curve(ax: Axes, data: dict, i: int, color: str, cur: dict, **kw) -> None:
    """The ``i``-th GE curve ``cur`` of a panel and its MHA markers (:func:`ge_and_mha`, line width 1.5)."""
    ge_and_mha(ax, cur["x"], cur["y"], _marks(data, i), color=color, lw=1.5, **kw)


def loss_figure(
    data: dict,
    layers: Sequence[AttentionConfig],
    note: str,
    own: dict | None = None,
    marker_layers: Sequence[AttentionConfig] | None = None,
) -> Figure:
    """Figure 2(a): the relative training loss ``L(t) / L(0)`` of several layers, log-log.

    ``data``: the panel as :func:`gelib.figure_data.panel` gives it (``"2a"``), its GE series
    (one per layer of ``layers``, in order, ``x`` the times) drawn solid, its MHA series
    (:func:`gelib.figure_data.add_markers`, in the same order) as markers, simulated on
    ``marker_layers`` (default ``layers``), whose own GE losses at the same times are
    ``own[h]`` (drawn dashed, if given). A dotted line marks the reading's ``epsilon``,
    a dash-dotted one Table D.1's value. Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    for i, (c, cfg, sim, cur) in enumerate(zip(COLORS, layers, marker_layers or layers, _series(data, "ge"))):
        _panel_curve(
            ax,
            data,
            i,
            c,
            cur,
            label=f"GE, $h = {cfg.h}$ ($h d_V/n = {cfg.h * cfg.d_v / cfg.n:g}$)",
            mark_label=f"MHA, $h = {sim.h}$, $n = {sim.n}$",
        )
        if own is not None:
            own_curve(ax, cur["x"], own[cfg.h], c, OWN_LABEL if i == 0 else None)
    eps = data["reading"]["epsilon"]
    ax.axhline(eps, color="grey", ls=":", lw=1)
    ax.text(_series(data, "ge")[0]["x"][0], 1.3 * eps, f"$\\epsilon = {eps:g}$", color="grey", fontsize=8)
    _table_d1_lines(ax, data)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(eps / 3, 1.3)
    ax.set_xlabel("training time $t$")
    ax.set_ylabel(r"relative training loss $\mathcal{L}(t)/\mathcal{L}(0)$")
    c0 = layers[0]
    ax.set_title(f"Figure 2(a) — {note}; $d_O = {_times_n(c0.d_o / c0.n)}$, $d_K = d_V = {c0.d_k}$", fontsize=8)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16))  # below: the curves fill the axes
    return fig


def width_boundary_segments(
    n: int, d_v: int, h_span: tuple[float, float], y_span: tuple[float, float]
) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The width boundaries (:func:`gelib.learning.on_width_boundary`) on an ``(h, d_O / n)`` map,
    as segments ``((h0, h1), (y0, y1))`` clipped to the map's spans.

    The two smallest of ``n``, ``d_O`` and ``h d_V`` coincide on three half-lines meeting at
    ``(n / d_V, 1)`` (the Y-shaped ridge): ``h d_V = n`` above ``d_O = n``, ``d_O = n`` right of
    ``h d_V = n``, and ``h d_V = d_O`` below both. The rest of each full line is no boundary
    (there the third width is the smallest). A half-line outside the spans is left out.
    """
    h0, h1 = h_span
    y0, y1 = y_span
    hc = n / d_v  # where the three meet
    out = []
    if h0 <= hc <= h1 and y1 > 1:
        out.append(((hc, hc), (max(1.0, y0), y1)))  # h d_V = n, d_O >= n
    if y0 <= 1 <= y1 and h1 > hc:
        out.append(((max(hc, h0), h1), (1.0, 1.0)))  # d_O = n, h d_V >= n
    lo, hi = max(h0, y0 * hc), min(h1, hc, y1 * hc)
    if lo < hi:
        out.append(((lo, hi), (lo / hc, hi / hc)))  # h d_V = d_O <= n
    return out


def width_boundaries(
    ax: Axes,
    n: int,
    hs: Sequence[float] | np.ndarray,
    d_v: int = 64,
    label: bool = True,
    y_span: tuple[float, float] | None = None,
) -> None:
    """The dotted width boundaries on an ``(h, d_O / n)`` map: the three half-lines of
    :func:`width_boundary_segments` (``h d_V = n`` for ``d_O >= n``, ``d_O = n`` for ``h d_V >= n``,
    ``h d_V = d_O`` below both).

    ``hs``: the head counts of the map, 1-D and increasing (the segments span them, half a step
    beyond); ``y_span``: the map's range of ``d_O / n`` (default: the axes' y limits).
    """
    kw: dict[str, Any] = dict(color="black", ls=":", lw=1.1)
    step = 0.5 * (hs[1] - hs[0]) if len(hs) > 1 else 0.5
    span = (float(ax.get_ylim()[0]), float(ax.get_ylim()[1])) if y_span is None else y_span
    for i, (x, y) in enumerate(width_boundary_segments(n, d_v, (hs[0] - step, hs[-1] + step), span)):
        ax.plot(x, y, **kw, label="width boundaries" if label and i == 0 else None)


def budget_paths(ax: Axes, fixed_output: Sequence[PathPoint], fixed_budget: Sequence[PathPoint]) -> None:
    """The fixed-output and fixed-budget paths on an ``(h, d_O / n)`` map."""
    n = fixed_output[0].cfg.n
    ms = 3 if len(fixed_output) + len(fixed_budget) <= 60 else 0  # a dot per layer, unless they crowd
    ax.plot(
        [p.cfg.h for p in fixed_output],
        [p.cfg.d_o / n for p in fixed_output],
        "-s",
        color=COLORS[0],
        ms=ms,
        lw=1.6,
        label="fixed-output path",
    )
    ax.plot(
        [p.cfg.h for p in fixed_budget],
        [p.cfg.d_o / n for p in fixed_budget],
        "-o",
        color=COLORS[1],
        ms=ms,
        lw=1.6,
        label=f"fixed-budget path ($N_{{par}} = {tex_sci(fixed_budget[0].n_params)}$)",
    )


def error_map_figure(
    data: dict, fixed_output: Sequence[PathPoint], fixed_budget: Sequence[PathPoint], note: str
) -> Figure:
    """Figure 2(b): ``log10`` of the coefficient error over ``(h, d_O / n)``, with the boundaries and the paths.

    ``data``: the map as :func:`gelib.figure_data.panel` gives it (``"2b"``): one GE series per
    output width, in increasing ``d_O`` (``data["dimensions"]["d_o"]``), each over the same
    increasing, equally spaced head counts ``x`` (:func:`~gelib.learning.error_map_grid`);
    the colour scale spans the map's finite values, and an infinite cell (on the ridge
    where the two smallest widths meet, read at the end of training) takes the top colour.
    Returns the figure.
    """
    c0 = fixed_output[0].cfg
    n = c0.n
    rows = _series(data, "ge")
    hs, d_os = np.asarray(rows[0]["x"], dtype=float), np.atleast_1d(data["dimensions"]["d_o"])
    z = np.log10(np.minimum(np.array([sr["y"] for sr in rows], dtype=float), 1e300))
    step = hs[1] - hs[0] if len(hs) > 1 else 1
    log_do = np.log(d_os / n)
    edges_h = np.r_[hs - 0.5 * step, hs[-1] + 0.5 * step]
    half = np.diff(log_do) / 2 if len(d_os) > 1 else np.array([0.5])
    edges_do = np.exp(np.r_[log_do[0] - half[0], log_do[:-1] + half, log_do[-1] + half[-1]])
    finite = z[z < 300]
    fig, ax = plt.subplots(figsize=(6.8, 4.6))
    im = ax.pcolormesh(edges_h, edges_do, z, cmap="viridis", vmin=finite.min(), vmax=finite.max(), shading="flat")
    width_boundaries(ax, n, hs, c0.d_v, y_span=(float(edges_do[0]), float(edges_do[-1])))
    budget_paths(ax, fixed_output, fixed_budget)
    ax.set_yscale("log")
    ax.set_xlabel("head count $h$")
    ax.set_ylabel("output width $d_O / n$")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    fig.colorbar(im, ax=ax, extend="max" if finite.size < z.size else "neither", label="$\\log_{10}$ coefficient error")
    ax.legend(loc="lower center", ncol=3, fontsize=7, bbox_to_anchor=(0.5, -0.32))
    r = data["reading"]
    ax.set_title(
        f"Figure 2(b) — {note}; $d_K = d_V = {c0.d_v}$, $\\sigma = {r['sigma']:g}$, $t = {r['horizon']:g}$",
        fontsize=8,
    )
    fig.subplots_adjust(bottom=0.25)
    return fig


def paths_figure(
    data: dict, bounds: Sequence[Sequence[int]], note: str, own: Sequence | None = None, s: float = 1.0
) -> Figure:
    """Figure 2(c): the coefficient error along the two paths, at the reading's time.

    ``data``: the panel as :func:`gelib.figure_data.panel` gives it (``"2c"``), one GE series
    per path (a gap at an infinite value), drawn solid, and their MHA series in the same
    order (:func:`gelib.figure_data.add_markers`, each at Table D.3's head count ``h / s``);
    ``bounds[i]``: the head counts of path ``i`` on a width boundary (dotted verticals);
    ``own[i] = (h, errors)`` (if given): the GE errors of the markers' own (shrunk) path,
    drawn dashed at ``h / s``. Table D.1's value is dash-dotted. Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.8, 4.4))
    for i, (c, cur) in enumerate(zip(COLORS, _series(data, "ge"))):
        mha = _series(data, "mha")
        _panel_curve(
            ax,
            data,
            i,
            c,
            cur,
            marker=".",
            ms=4,
            label=f"GE, {cur['label']}",
            mark_label=f"MHA, {mha[i]['label']}" if i < len(mha) else None,
        )
        for h in bounds[i]:
            ax.axvline(h, color=c, ls=":", lw=1)
        if own is not None:
            own_curve(ax, np.asarray(own[i][0]) / s, own[i][1], c, OWN_LABEL if i == 0 else None)
    _table_d1_lines(ax, data)
    ax.set_yscale("log")
    ax.set_xlabel("head count $h$" if s == 1 else f"head count $h$ (markers: $h / s$, $s = 1/{1 / s:g}$)")
    ax.set_ylabel("coefficient error $\\mathcal{E}$")
    ax.legend(fontsize=7)
    r = data["reading"]
    ax.set_title(f"Figure 2(c) — {note}; $\\sigma = {r['sigma']:g}$, $t = {r['horizon']:g}$", fontsize=8)
    return fig


def ratio_figure(
    data: dict,
    crossings: Sequence[Crossing],
    layer: AttentionConfig,
    note: str,
    pair: str = "(64, 192)\\,/\\,(128, 128)",
    own: tuple | None = None,
    marker_layer: AttentionConfig | None = None,
) -> Figure:
    """Figure 2(d): the error ratio of two layers across ``beta``, against the unit line.

    Where ``data`` has ``"roots"`` (:func:`gelib.figure_data.d2_roots`), each temperature where
    the ratio takes Table D.1's value is a grey dash-dotted vertical. The ``beta`` axis is
    logarithmic where the curve spans a factor 10 or more.

    ``data``: the panel as :func:`gelib.figure_data.panel` gives it (``"2d"``): its GE ratio
    (solid) and its MHA series (the softmax ratios, :func:`gelib.figure_data.add_markers`);
    each crossing of 1 (``crossings``) is a dotted vertical, Table D.1's value dash-dotted.
    ``layer`` names ``n`` and ``h`` in the title, ``pair`` (TeX) the two layers on the
    y-axis. ``own = (betas, ratios)`` (if given): the GE ratio at the markers' own
    dimensions (``marker_layer``), drawn dashed in the markers' colour. Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ge, mha = _series(data, "ge")[0], _series(data, "mha")
    ax.plot(ge["x"], ge["y"], color=COLORS[0], lw=1.6, label="GE")
    if mha and mha[0]["x"]:
        ax.errorbar(
            mha[0]["x"],
            mha[0]["y"],
            yerr=mha[0]["ci95"],
            fmt="o",
            ms=5,
            capsize=2,
            color=COLORS[1],
            mfc="white",
            label="MHA" + ("" if marker_layer is None else f" ($n = {marker_layer.n}$, $h = {marker_layer.h}$)"),
        )
    if own is not None:
        own_curve(ax, own[0], own[1], COLORS[1])
        ax.lines[-1].set_label("GE at the markers' dimensions")
    ax.axhline(1.0, color="black", lw=1)
    _table_d1_lines(ax, data)
    at = lambda xs: ", ".join(f"{x:.3f}" for x in xs)  # noqa: E731
    for i, c in enumerate(crossings):
        ax.axvline(
            c.x,
            color=COLORS[0],
            ls=":",
            lw=1,
            label=None if i else f"crossing of 1, $\\beta = {at(c.x for c in crossings)}$",
        )
    d1 = data.get("roots", {}).get("table_d1", [])
    for i, b in enumerate(d1):
        ax.axvline(b, color="grey", ls="-.", lw=0.8, label=None if i else f"Table D.1's value, $\\beta = {at(d1)}$")
    x = np.asarray(ge["x"], dtype=float)
    if x.size and x.min() > 0 and x.max() >= 10 * x.min():
        ax.set_xscale("log")
    ax.set_xlabel(r"inverse temperature $\beta$")
    ax.set_ylabel(f"error ratio ${pair}$")
    r = data["reading"]
    ax.set_title(f"Figure 2(d) — {note}; $n_{{(d)}} = {layer.n}$, $h = {layer.h}$, $t = {r['horizon']:g}$", fontsize=8)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16))  # below: the verticals fill the axes
    return fig


def convergence_figure(results: Sequence[Convergence], note: str) -> Figure:
    """How the markers' departures from their curves shrink with ``n`` (log-log).

    ``results``: :class:`gelib.learning_markers.Convergence` per functional; each is drawn as
    ``|departure|`` against ``n`` with its 95 % interval (bars clipped at 0), labelled with
    its fitted slope, next to a dashed ``n^{-rate}`` guide through the middle point of the first
    resolved result (:attr:`~gelib.learning_markers.Convergence.resolved`; the first result if
    none is). Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    offsets = np.linspace(0.96, 1.04, max(len(results), 1))
    for c, off, r in zip(COLORS, offsets, results):
        y = np.abs([d.mean for d in r.departures])
        ci = np.array([d.ci95 for d in r.departures])
        state = "" if r.resolved else ", not resolved"
        ax.errorbar(
            np.asarray(r.ns, dtype=float) * off,
            y,
            yerr=[np.minimum(ci, 0.9 * y), ci],
            fmt="o-",
            ms=4,
            lw=1,
            capsize=2,
            color=c,
            label=f"{r.label}: slope ${r.slope:.2f} \\pm {r.ci95:.2f}${state}",
        )
    if results:
        r0 = next((r for r in results if r.resolved), results[0])
        mid = len(r0.ns) // 2
        ns = np.asarray(r0.ns, dtype=float)
        y_mid = abs(r0.departures[mid].mean)
        ax.plot(ns, y_mid * (ns / ns[mid]) ** -r0.rate, color="grey", ls="--", lw=1, label=f"$n^{{-{r0.rate:g}}}$")
        log2_axis(ax, list(r0.ns))
    ax.set_yscale("log")
    ax.set_xlabel("context length $n$ (fixed ratios)")
    ax.set_ylabel("|departure| from the shifted prediction")
    ax.set_title(f"At fixed ratios the departures shrink — {note}", fontsize=8)
    ax.legend(fontsize=7)
    return fig


def learning_view(laws, layers: dict[str, AttentionConfig], reading) -> Figure:
    """The explorer figure of the learning chapters: the limit law of each layer and its learning.

    ``laws``: a :class:`~gelib.learning_markers.LimitLaws` (or any callable giving a layer's
    :class:`~gelib.freeprob.Law`); ``layers``: ``{label: layer}``; ``reading``: a
    :class:`~gelib.learning.Reading`. Three panels: the relative training loss ``L(t) / L(0)``
    with the reading's ``epsilon`` and each arrival time (:func:`gelib.learning.arrival_time`), the
    coefficient error against time with the reading's horizon (:func:`gelib.learning.coefficient_error`),
    and the density of each law, log-log (a hard edge at 0 is a straight line: slope -1/2 where the
    two smallest of ``n``, ``h d_V`` and ``d_O`` coincide, -2/3 where all three do; atoms in the
    legend). Nothing is sampled: a redraw costs the laws only. Returns the figure.
    """
    from ..learning import arrival_time, coefficient_error, training_loss

    fig, (a_loss, a_err, a_law) = plt.subplots(1, 3, figsize=(11.5, 3.5), layout="constrained")
    t = np.geomspace(1e-2, 10 * reading.horizon, 200)
    for color, (label, cfg) in zip(COLORS, layers.items()):
        law = laws(cfg)
        arrive = arrival_time(law, reading.epsilon)
        a_loss.loglog(t, training_loss(law, t), color=color, label=f"{label}: arrives at {arrive:.3g}")
        a_loss.axvline(arrive, color=color, ls=":", lw=1)
        err = coefficient_error(law, t, cfg.n, cfg.d_o, reading.sigma)
        at_h = float(coefficient_error(law, reading.horizon, cfg.n, cfg.d_o, reading.sigma)[0])
        a_err.semilogx(t, err, color=color, label=f"{label}: {at_h:.3g} at $t = {tex_sci(reading.horizon)}$")
        grid = law.grid(200)
        grid, dens = grid[grid > 0], law.density(grid[grid > 0])
        atoms = "".join(f", atom {m:.2g} at {loc:.2g}" for loc, m in law.atoms())
        a_law.loglog(grid[dens > 0], dens[dens > 0], color=color, label=f"{label}{atoms}")
    a_loss.axhline(reading.epsilon, color="grey", ls=":", lw=1)
    a_loss.set_ylim(reading.epsilon / 3, 1.3)
    a_loss.set(
        xlabel="training time $t$",
        ylabel=r"$\mathcal{L}(t)/\mathcal{L}(0)$",
        title=f"training loss ($\\epsilon = {tex_sci(reading.epsilon)}$)",
    )
    a_err.axvline(reading.horizon, color="grey", ls=":", lw=1)
    a_err.set(
        xlabel="training time $t$",
        ylabel="coefficient error",
        title=f"coefficient error ($\\sigma = {reading.sigma:g}$)",
    )
    a_law.set(
        xlabel=r"eigenvalue $\lambda$ of $YY^\top/n$",
        ylabel="density",
        title="limit law (GE), log-log; a hard edge at 0\n" r"has slope $-1/2$ ($-2/3$ if $n = h d_V = d_O$)",
    )
    for ax in (a_loss, a_err, a_law):
        ax.legend(fontsize=7)
        ax.title.set_fontsize(9)
    return fig


def shift_figure(paths: dict[str, ShiftedValues], band: float, note: str) -> Figure:
    """Figure 2(c) at Table D.3's dimensions, with the GE curves shifted by each layer's own ``b(n, d_K)``.

    ``paths[name]``: :func:`gelib.learning_markers.shifted_values` of the coefficient error along
    a path, drawn against the layers' head counts. Left: the GE
    curves (solid) and the shifted ones (dashed, same colour), where softmax markers of those
    dimensions sit if the first-moment shift is all that moves them; right: the relative change
    ``shifted / GE - 1`` in %, with ``± band`` (Table D.1's relative half-width of the panel, in %)
    shaded around 0. Returns the figure.
    """
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.8))
    for c, (name, v) in zip(COLORS, paths.items()):
        h = v.h
        ax.plot(h, v.ge, color=c, lw=1.4, label=f"GE, {name}")
        ax.plot(h, v.shifted, color=c, lw=1.2, ls="--", label=f"GE shifted by $b$, {name}")
        ax2.plot(h, 100 * v.change, color=c, marker=".", ms=4, lw=1, label=name)
    ax.set_yscale("log")
    ax.set_xlabel("head count $h$")
    ax.set_ylabel("coefficient error $\\mathcal{E}$")
    ax.legend(fontsize=7)
    ax2.axhspan(-band, band, color="grey", alpha=0.25, lw=0, label=f"Table D.1's 95 % bar, $\\pm${band:.2f} %")
    ax2.axhline(0, color="grey", lw=0.8)
    ax2.set_xlabel("head count $h$")
    ax2.set_ylabel("shifted / GE $-$ 1 (%)")
    # the legend below the curves and the bar band: the lower part of the axes is left empty for it
    change = 100 * np.concatenate([v.change for v in paths.values()])
    lo, hi = min(float(np.nanmin(change)), -band), max(float(np.nanmax(change)), band)
    ax2.set_ylim(lo - 0.6 * (hi - lo), hi + 0.1 * (hi - lo))
    ax2.legend(fontsize=7, loc="lower center", ncol=1)
    b = np.concatenate([v.b for v in paths.values()])
    shift = 100 * float(np.nanmax(b))
    fig.suptitle(f"Figure 2(c) with the first-moment shift $b = {shift:+.2f}$ % — {note}", fontsize=8)
    return fig
