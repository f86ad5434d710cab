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
    "width_boundaries",
    "budget_paths",
    "error_map_figure",
    "paths_figure",
    "ratio_figure",
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
    curves_w: dict,
    curves_b: dict,
    marks_w: dict,
    marks_b: dict,
    note: str,
    own: dict | None = None,
    s: float = 1.0,
) -> Figure:
    """Figure 3(a): arrival time against ``h_KV``, at fixed widths and at fixed ``N_par``.

    One panel per threshold ``epsilon`` (the keys of ``curves_w``):
    ``curves_w[eps]`` and ``curves_b[eps]`` are the GE arrival times of the
    layers ``fixed_widths`` and ``fixed_budget`` (ordered as ``h_KV`` falls
    from ``h`` to 1); ``marks_w[eps]``, ``marks_b[eps]`` lists of
    ``(h_KV, summary)`` of the softmax markers. The unshared layer is marked
    by a diamond, the widths ``w = d_K = d_V`` of the fixed-budget layers are
    annotated. The markers' ``h_KV`` are drawn at ``h_KV / s``; ``own`` (if
    given) holds ``"groups"`` (their ``h_KV``) and ``"w"``, ``"b"``: the
    arrival times of their own layers per threshold, drawn dashed. Returns
    the figure.
    """
    groups = [c.h_kv for c in fixed_widths]
    first = fixed_widths[0]
    fig, axes = plt.subplots(1, len(curves_w), figsize=(11, 4.2), squeeze=False)
    for ax, e in zip(axes[0], curves_w):
        ge_and_mha(
            ax,
            groups,
            curves_w[e],
            _at(marks_w[e], s),
            color=COLORS[0],
            offset=0.96,
            label=f"GE, fixed widths $d_K = d_V = {first.d_k}$",
        )
        ge_and_mha(
            ax,
            groups,
            curves_b[e],
            _at(marks_b[e], s),
            color=COLORS[1],
            offset=1.04,
            label="GE, fixed $N_{par}$ (widths grow)",
        )
        if own is not None:
            x_own = np.asarray(own["groups"]) / s
            own_curve(ax, x_own, own["w"][e], COLORS[0], OWN_LABEL)
            own_curve(ax, x_own, own["b"][e], COLORS[1])
        ax.plot([first.h], [curves_w[e][0]], "D", color="black", ms=8, mfc="none", label="unshared ($h_{KV} = h$)")
        for c, y in zip(fixed_budget, curves_b[e]):
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
        ax.set_title(f"$\\epsilon = {e:g}$")
        ax.margins(y=0.25)
    axes[0, 0].set_ylabel("arrival time")
    axes[0, 0].legend(fontsize=8, loc="lower left")
    fig.suptitle(f"Figure 3(a) — {note}; $d_O = {_times_n(first.d_o / first.n)}$; markers: MHA", fontsize=10)
    return fig


def sharing_within_figure(layers: Sequence[AttentionConfig], curves: dict, marks: dict, note: str) -> Figure:
    """Figure 3(b): arrival time of two sharing schemes against the head count, in two time units.

    ``layers`` gives the head counts and widths of the sweep (one layer per
    point); ``curves[unit][scheme]`` the GE arrival times and
    ``marks[unit][scheme]`` lists of ``(h, summary)`` of the softmax markers,
    for the time units ``"raw"`` (left, logarithmic) and ``"scaled"``
    (right, time multiplied by ``m_1``). Returns the figure.
    """
    import matplotlib.ticker as mticker

    heads = [c.h for c in layers]
    ylabels = {"raw": "arrival time (raw)", "scaled": "arrival time × $m_1$ (scaled)"}
    fig, axes = plt.subplots(1, len(curves), figsize=(11, 4.2), squeeze=False)
    c: str | AttentionConfig  # a colour in the loop, then the first layer
    for ax, unit in zip(axes[0], curves):
        for c, name in zip(COLORS, curves[unit]):
            ge_and_mha(
                ax,
                heads,
                curves[unit][name],
                marks[unit][name],
                color=c,
                ms=5,
                marker=".",
                label=f"GE, {name}",
                mark_label=f"MHA, {name}",
            )
        log2_axis(ax, heads, [f"{c.h}\n$d_K$={c.d_k}" for c in layers])
        ax.set_xlabel("head count $h$ (head width $d_K = n / 2h$)")
        ax.set_ylabel(ylabels.get(unit, unit))
        if unit == "raw":
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(mticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    axes[0, -1].legend(fontsize=8)
    c = layers[0]
    fig.suptitle(f"Figure 3(b) — {note}; $d = {_times_n(c.d / c.n)}$, $d_O = {_times_n(c.d_o / c.n)}$", fontsize=10)
    return fig


def loss_figure(
    layers: Sequence[AttentionConfig],
    t: Sequence[float] | np.ndarray,
    curves: dict,
    marks: dict,
    note: str,
    epsilon: float = 0.1,
    own: dict | None = None,
    marker_layers: Sequence[AttentionConfig] | None = None,
) -> Figure:
    """Figure 2(a): the relative training loss ``L(t) / L(0)`` of several layers, log-log.

    ``curves[h]``: the GE loss (shape ``(k,)``) of the layer with ``h`` heads at
    the times ``t`` (shape ``(k,)``); ``marks[h]``: ``(time, summary)`` pairs of its softmax markers,
    simulated on ``marker_layers`` (default ``layers``), whose own GE losses at ``t``
    are ``own[h]`` (drawn dashed, if given). A dotted line marks the threshold ``epsilon``.
    Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for c, cfg, sim in zip(COLORS, layers, marker_layers or layers):
        ge_and_mha(
            ax,
            t,
            curves[cfg.h],
            marks[cfg.h],
            color=c,
            lw=1.5,
            label=f"GE, $h = {cfg.h}$ ($h d_V/n = {cfg.h * cfg.d_v / cfg.n:g}$)",
            mark_label=f"MHA, $h = {sim.h}$, $n = {sim.n}$",
        )
        if own is not None:
            own_curve(ax, t, own[cfg.h], c, OWN_LABEL if cfg is layers[0] else None)
    ax.axhline(epsilon, color="grey", ls=":", lw=1)
    ax.text(t[0], 1.1 * epsilon, f"$\\epsilon = {epsilon:g}$", color="grey", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-4, 1.3)
    ax.set_xlabel("training time $t$")
    ax.set_ylabel(r"relative training loss $\mathcal{L}(t)/\mathcal{L}(0)$")
    c0 = layers[0]
    ax.set_title(f"Figure 2(a) — {note}; $d_O = {_times_n(c0.d_o / c0.n)}$, $d_K = d_V = {c0.d_k}$")
    ax.legend(fontsize=8, ncol=2)
    return fig


def width_boundaries(ax: Axes, n: int, hs: Sequence[float] | np.ndarray, d_v: int = 64, label: bool = True) -> None:
    """The dotted width boundaries ``d_O = n``, ``h d_V = n`` and ``h d_V = d_O`` on an ``(h, d_O / n)`` map.

    ``hs``: the head counts of the map, 1-D and increasing (the diagonal spans them).
    """
    kw: dict[str, Any] = dict(color="black", ls=":", lw=1.1)
    ax.axhline(1.0, **kw)
    ax.axvline(n / d_v, **kw)
    hh = np.linspace(hs[0] - 0.5, hs[-1] + 0.5, 50)
    ax.plot(hh, hh * d_v / n, **kw, label="width boundaries" if label else None)


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


_READING_TITLES = {"end": "end of training ($t = \\infty$)", "early": "early stopping ($t = {t:g}$)"}


def error_map_figure(
    hs: ArrayLike,
    d_os: ArrayLike,
    maps: dict,
    fixed_output: Sequence[PathPoint],
    fixed_budget: Sequence[PathPoint],
    t_early: float,
    sigma: float,
    note: str,
    vmax: dict | None = None,
) -> Figure:
    """Figure 2(b): ``log10`` of the coefficient error over ``(h, d_O / n)``, with the boundaries and the paths.

    ``hs`` (increasing, equally spaced) and ``d_os`` (increasing) are 1-D, as
    from :func:`~gelib.learning.error_map_grid`; ``maps[reading]`` (``"end"``, ``"early"``) has
    shape ``(len(d_os), len(hs))``;
    infinite cells (on the Y-shaped ridge where the two smallest widths
    meet) take the top colour. ``vmax[reading]``: the top of each colour
    scale. Returns the figure.
    """
    vmax = {"end": 1.0, "early": 0.05} if vmax is None else vmax
    c0 = fixed_output[0].cfg
    n = c0.n
    hs, d_os = np.asarray(hs), np.asarray(d_os)
    step = hs[1] - hs[0] if len(hs) > 1 else 1
    log_do = np.log(d_os / n)
    edges_h = np.r_[hs - 0.5 * step, hs[-1] + 0.5 * step]
    edges_do = np.exp(
        np.r_[log_do[0] - np.diff(log_do)[0] / 2, (log_do[1:] + log_do[:-1]) / 2, log_do[-1] + np.diff(log_do)[-1] / 2]
    )
    fig, axes = plt.subplots(1, len(maps), figsize=(11, 4.4), sharey=True, squeeze=False)
    for ax, reading in zip(axes[0], maps):
        im = ax.pcolormesh(
            edges_h,
            edges_do,
            np.log10(np.minimum(maps[reading], 1e300)),
            cmap="viridis",
            vmin=-1.6,
            vmax=vmax[reading],
            shading="flat",
        )
        width_boundaries(ax, n, hs, c0.d_v)
        budget_paths(ax, fixed_output, fixed_budget)
        ax.set_yscale("log")
        ax.set_xlabel("head count $h$")
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        ax.set_title(_READING_TITLES[reading].format(t=t_early))
        fig.colorbar(im, ax=ax, extend="max", label="$\\log_{10}$ coefficient error")
    axes[0, 0].set_ylabel("output width $d_O / n$")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, bbox_to_anchor=(0.45, 0.0))
    fig.suptitle(f"Figure 2(b) — {note}; $d_K = d_V = {c0.d_v}$, $\\sigma = {sigma:g}$", fontsize=10)
    fig.subplots_adjust(bottom=0.2)
    return fig


def paths_figure(
    curves: dict, marks: dict, t_early: float, sigma: float, note: str, own: dict | None = None, s: float = 1.0
) -> Figure:
    """Figure 2(c): the coefficient error along the paths, one panel per reading.

    ``curves[path]`` holds ``"h"``, the errors of each reading (``"end"``,
    ``"early"``; infinite values leave a gap) and ``"bounds"``, the head
    counts on a width boundary (dotted verticals); ``marks[path][reading]``
    lists ``(h, summary)`` of the softmax markers, drawn at ``h / s``;
    ``own[path]`` (if given) as ``curves[path]`` for the markers' own
    layers, drawn dashed at ``h / s``. Returns the figure.
    """
    readings = list(next(iter(marks.values())))
    fig, axes = plt.subplots(1, len(readings), figsize=(11, 4.2), squeeze=False)
    for ax, reading in zip(axes[0], readings):
        for c, (name, cur) in zip(COLORS, curves.items()):
            ge_and_mha(
                ax,
                cur["h"],
                cur[reading],
                _at(marks[name][reading], s),
                color=c,
                lw=1.5,
                marker=".",
                ms=4,
                label=f"GE, {name}",
                mark_label=f"MHA, {name}",
            )
            for h in cur["bounds"]:
                ax.axvline(h, color=c, ls=":", lw=1)
            if own is not None:
                own_curve(ax, own[name]["h"] / s, own[name][reading], c, OWN_LABEL if c == COLORS[0] else None)
        ax.set_xlabel("head count $h$" if s == 1 else f"head count $h$ (markers: $h / s$, $s = 1/{1 / s:g}$)")
        ax.set_title(_READING_TITLES[reading].format(t=t_early))
        if reading == "end":
            ax.set_yscale("log")
    axes[0, 0].set_ylabel("coefficient error $\\mathcal{E}$")
    axes[0, -1].legend(fontsize=8)
    fig.suptitle(f"Figure 2(c) — {note}; $\\sigma = {sigma:g}$", fontsize=10)
    return fig


def ratio_figure(
    betas: ArrayLike,
    ratios: dict,
    marks: Sequence[tuple[float, Summary]],
    crossings: Sequence[Crossing],
    layer: AttentionConfig,
    t_early: float,
    note: str,
    pair: str = "(64, 192)\\,/\\,(128, 128)",
    own: tuple | None = None,
    marker_layer: AttentionConfig | None = None,
) -> Figure:
    """Figure 2(d): the error ratio of two layers across ``beta``, against the unit line.

    ``ratios["end"]`` (solid) and ``ratios["early"]`` (dashed) are the GE
    ratios on ``betas`` (shape ``(k,)`` each); ``marks`` lists ``(beta, summary)`` of the softmax
    ratios (end of training); each crossing of the end-of-training curve is
    a dotted vertical. ``layer`` names ``n`` and ``h`` in the title, ``pair``
    (TeX) the two layers on the y-axis. ``own = (betas, ratios)`` (if given):
    the GE ratio at the markers' own dimensions (``marker_layer``), drawn
    dashed in the markers' colour. Returns the figure.
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.plot(betas, ratios["end"], color=COLORS[0], lw=1.6, label="GE, end of training")
    ax.plot(betas, ratios["early"], color=COLORS[0], lw=1.2, ls="--", label=f"GE, early stopping ($t = {t_early:g}$)")
    if len(marks):
        bs, ss = zip(*marks)
        ax.errorbar(
            bs,
            [s.mean for s in ss],
            yerr=[s.ci95 for s in ss],
            fmt="o",
            ms=5,
            capsize=2,
            color=COLORS[1],
            mfc="white",
            label="MHA, end of training"
            + ("" if marker_layer is None else f" ($n = {marker_layer.n}$, $h = {marker_layer.h}$)"),
        )
    if own is not None:
        own_curve(ax, own[0], own[1], COLORS[1])
        ax.lines[-1].set_label("GE at the markers' dimensions")
    ax.axhline(1.0, color="black", lw=1)
    for c in crossings:
        ax.axvline(c.x, color=COLORS[0], ls=":", lw=1, label=f"crossing, $\\beta^* = {c.x:.3f}$")
    ax.set_xlabel(r"inverse temperature $\beta$")
    ax.set_ylabel(f"error ratio ${pair}$")
    ax.set_title(f"Figure 2(d) — {note}; $n_{{(d)}} = {layer.n}$, $h = {layer.h}$")
    ax.legend(fontsize=8)
    return fig
