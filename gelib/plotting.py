"""One figure style for the whole book, and the plots every chapter shares.

Most functions draw on the axes they are given and return them; the
``*_figure`` functions make a whole figure of a chapter (its panels, layout
and labels) and return it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from .config import AttentionConfig
from .freeprob import Law
from .law import Chain, chain
from .rates import PowerFit, fit_power_law
from .spectra import TW1_MEAN, TW1_STD, Summary, ks, rel_w1
from .tables import LEVEL_TITLES

__all__ = [
    "edge_rates_figure",
    "use_style",
    "spectra_histograms",
    "log_histograms",
    "spectra_pair",
    "distance_title",
    "cdf_differences",
    "pair_and_heads",
    "label_ns",
    "rate_plot",
    "close",
    "COLORS",
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
            "axes.prop_cycle": mpl.cycler(color=COLORS),
            "legend.frameon": False,
            "font.size": 10,
            "axes.titlesize": 10,
        }
    )


def spectra_histograms(
    ax: Axes,
    spectra: dict,
    bins: int = 60,
    range_: tuple[float, float] | None = None,
    density_curve: tuple[ArrayLike, ArrayLike, str] | None = None,
) -> Axes:
    """Overlaid step histograms of eigenvalues (``{label: array}``, any shape, all seeds pooled).

    ``density_curve``: optional ``(x, density, label)`` drawn in black over them
    (``x`` and ``density`` of shape ``(k,)``); ``range_`` the histograms' range
    (default: 0 to 1.05 times the largest 99.9 % quantile). Returns ``ax``.
    """
    pooled = {k: np.ravel(v) for k, v in spectra.items()}
    if range_ is None:
        hi = max(np.quantile(v, 0.999) for v in pooled.values())
        range_ = (0.0, float(hi) * 1.05)
    for label, v in pooled.items():
        ax.hist(v, bins=bins, range=range_, density=True, histtype="step", lw=1.4, label=label)
    if density_curve is not None:
        x, dens, label = density_curve
        ax.plot(x, dens, color="black", lw=1.2, label=label)
    ax.set_xlabel("eigenvalue of $Y Y^T / n$")
    ax.set_ylabel("density")
    ax.legend()
    return ax


def log_histograms(ax: Axes, spectra: dict, bins: int = 60) -> Axes:
    """Step histograms of ``log10`` eigenvalues (``{label: array}``, any shape, all seeds pooled).

    For spectra that spread over several decades, where a logarithmic axis
    shows their shape better than :func:`spectra_histograms` (linear bins).
    Eigenvalues are clipped at ``1e-12`` (exact zeros); the range runs from
    the 0.2 % quantile to the largest value. Returns ``ax``.
    """
    pooled = {k: np.log10(np.clip(np.ravel(v), 1e-12, None)) for k, v in spectra.items()}
    lo = min(float(np.quantile(v, 0.002)) for v in pooled.values())
    hi = max(float(v.max()) for v in pooled.values())
    for label, v in pooled.items():
        ax.hist(v, bins=bins, range=(lo, hi), density=True, histtype="step", lw=1.4, label=label)
    ax.set_xlabel("$\\log_{10}$ of an eigenvalue of $Y Y^T / n$")
    ax.set_ylabel("density")
    ax.legend()
    return ax


def spectra_pair(
    axes: Sequence[Axes],
    a: ArrayLike,
    b: ArrayLike,
    labels: Sequence[str],
    title: str = "",
    slope: float | None = None,
) -> Sequence[Axes]:
    """Two spectra side by side: histograms (``axes[0]``) and quantiles (``axes[1]``).

    ``a`` and ``b`` have shape ``(seeds, n)``; the histograms pool all seeds,
    the quantile-quantile plot shows seed 0 of ``a`` against seed 0 of ``b``
    with the diagonal (and, given ``slope``, the dashed line ``y = slope x``).
    ``labels`` names ``a`` and ``b``. Returns ``axes``.
    """
    spectra_histograms(axes[0], {labels[0]: a, labels[1]: b})
    axes[0].set_title(title)
    x, y = np.sort(np.ravel(np.asarray(a)[0])), np.sort(np.ravel(np.asarray(b)[0]))
    axes[1].plot(y, x, ".", ms=3)
    lim = np.array([0, max(x[-1], y[-1]) * 1.02])
    axes[1].plot(lim, lim, color="black", lw=0.8)
    if slope is not None:
        axes[1].plot(lim, slope * lim, color="black", lw=0.8, ls="--")
    axes[1].set_xlabel(f"eigenvalue, {labels[1]}")
    axes[1].set_ylabel(f"eigenvalue, {labels[0]}")
    return axes


def distance_title(a: ArrayLike, ref: ArrayLike, **extra: float) -> str:
    """``"rel. W1 = x %, KS = y"`` between the spectra ``a`` and ``ref`` (relative to
    ``ref``'s mean, :func:`gelib.spectra.rel_w1`; both of shape ``(n,)`` or ``(seeds, n)``,
    averaged over seeds), then ``", name = value"`` for every keyword (3 significant
    digits): a title for the explorers' spectra.
    """
    parts = [
        f"rel. W1 = {100 * float(np.mean(rel_w1(a, ref))):.2f} %",
        f"KS = {float(np.mean(ks(a, ref))):.3f}",
        *(f"{name} = {value:.3g}" for name, value in extra.items()),
    ]
    return ", ".join(parts)


def cdf_differences(
    ax: Axes, base: ArrayLike, others: dict, band: float | None = None, band_label: str | None = None
) -> Axes:
    """The empirical distribution function of the spectrum ``base`` (shape ``(n,)``) minus
    that of every spectrum in ``others`` (``{label: (n,)}``), on the pooled eigenvalues
    (symmetric-log axis, linear below 1 % of their median), with the band ``+-band``
    shaded when given (an interlacing bound such as ``h/n``, labelled ``band_label``).
    The largest absolute value of a curve is the KS distance. Returns ``ax``.
    """
    base = np.ravel(base)
    grid = np.sort(np.concatenate([base, *(np.ravel(v) for v in others.values())]))

    def cdf(ev):
        return np.searchsorted(np.sort(ev), grid, side="right") / ev.size

    for label, ev in others.items():
        ax.plot(grid, cdf(base) - cdf(np.ravel(ev)), lw=1.0, label=label)
    if band is not None:
        ax.axhspan(-band, band, color="0.85", zorder=0, label=band_label or f"$\\pm${band:.3g}")
    ax.set_xscale("symlog", linthresh=1e-2 * float(np.median(grid)))
    ax.set(xlabel="eigenvalue of $Y Y^T / n$", ylabel="difference of distribution functions")
    ax.legend(fontsize=8)
    return ax


def pair_and_heads(
    spectra: dict,
    per_head: ArrayLike,
    ylabel: str,
    title: str = "",
    reference: float | None = None,
    reference_label: str = "reference",
) -> Figure:
    """The figure of the step explorers: two spectra (``{label: eigenvalues}``, model first,
    the reference second) as log-histograms titled with their distances
    (:func:`distance_title`, with ``h/n``), and one bar per head of a control quantity
    ``per_head`` (shape ``(h,)``, titled ``title``), with a dashed line at ``reference``
    (labelled ``reference_label``) when it is given and finite. Returns the figure.
    """
    (a, b), per_head = spectra.values(), np.asarray(per_head)
    fig, (ax0, ax1) = plt.subplots(
        1, 2, figsize=(9.5, 3.4), gridspec_kw=dict(width_ratios=(1.7, 1)), layout="constrained"
    )
    log_histograms(ax0, spectra, bins=50)
    ax0.set_title(distance_title(a, b, **{"h/n": per_head.size / np.shape(a)[-1]}))
    ax1.bar(np.arange(per_head.size), per_head, color=COLORS[0])
    if reference is not None and np.isfinite(reference):
        ax1.axhline(reference, color="black", ls="--", lw=1, label=reference_label)
        ax1.legend()
    ax1.set(xlabel="head", ylabel=ylabel, title=title)
    return fig


def label_ns(ax: Axes, ns: Sequence[int]) -> None:
    """Tick exactly the sizes ``ns`` of a sweep on a logarithmic x-axis."""
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


def rate_plot(
    ax: Axes,
    ns: ArrayLike,
    values: ArrayLike,
    predicted_slope: float,
    label: str,
    color: str | None = None,
    nested: bool = False,
) -> PowerFit:
    """Log-log plot of a control quantity against ``n`` with its fitted and predicted slope.

    ``ns`` has shape ``(k,)`` and ``values`` shape ``(k, seeds)``; markers show the mean over
    seeds with the min-max range, the solid line the fit, the dashed line the
    predicted slope through the same geometric-mean point. ``nested``: column
    ``j`` of every size is cut out of one draw (:class:`gelib.sweeps.NestedDraws`),
    so the slope and its interval are per seed (:func:`gelib.rates.fit_power_law`).
    """
    ns = np.asarray(ns, dtype=float)
    values = np.asarray(values, dtype=float).reshape(len(ns), -1)
    fit = fit_power_law(ns, values, nested=nested)
    mean = values.mean(axis=1)
    line = ax.errorbar(
        ns, mean, yerr=[mean - values.min(1), values.max(1) - mean], fmt="o", ms=4, capsize=2, color=color, label=label
    )
    c = line[0].get_color()
    grid = np.geomspace(ns[0], ns[-1], 50)
    ax.plot(grid, fit(grid), color=c, lw=1.2, label=f"fit: slope {fit.slope:.2f} ± {fit.ci95:.2f}")
    anchor = np.exp(np.mean(np.log(mean)) - predicted_slope * np.mean(np.log(ns)))
    ax.plot(
        grid, anchor * grid**predicted_slope, color=c, ls="--", lw=1.0, label=f"predicted slope {predicted_slope:g}"
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("context length $n$")
    ax.legend()
    return fit


def close(fig: Figure) -> None:
    """Close a figure after it was glued, so it is not displayed twice."""
    plt.close(fig)


# --- limit-law panels ---
# Histograms of spectra with their limit laws over them (the limit-law,
# spectral-shapes and finite-size chapters); the laws are gelib.freeprob.Law.

__all__ += ["at_atoms", "law_histograms", "density_curves", "rate_panels"]


def at_atoms(eigs: ArrayLike, law: Law, tol: float = 1e-6) -> np.ndarray:
    """Mask of the eigenvalues that sit at an atom of ``law``: ``|x - loc| <= tol * law.sigma``
    for some atom location ``loc``. ``eigs`` of any shape; the mask has its shape."""
    eigs = np.asarray(eigs, dtype=float)
    hit = np.zeros(eigs.shape, bool)
    for loc, _ in law.atoms():
        hit |= np.abs(eigs - loc) <= tol * law.sigma
    return hit


def law_histograms(
    ax: Axes,
    spectra: dict,
    law: Law | dict[str, Law],
    *,
    title: str = "",
    bins: int = 50,
    log: bool = False,
    colors: Sequence[str] = COLORS,
    atoms: str = "stems",
    left_cut: float | None = None,
    styles: dict | None = None,
    headroom: float = 1.3,
    legend: bool = False,
    xlabel: str | None = None,
    tol: float = 1e-6,
) -> Axes:
    """Histograms of eigenvalues with the density of their limit law in black over them.

    ``spectra`` is ``{label: eigenvalues}`` (any shape, all seeds pooled);
    ``law`` one :class:`~gelib.freeprob.Law` for all of them or ``{label: Law}``
    (one per histogram; equal laws are drawn once). The histogram of each
    spectrum counts the eigenvalues that are not at an atom of its law
    (:func:`at_atoms`), normalised by the *total* number of eigenvalues, so
    that its area is the fraction of continuous eigenvalues, as the area under
    the density is the continuous mass ``1 - sum of the atoms``.

    * ``log=False``: a linear axis over the support (4 % padding), heights
      ``counts / (size * bin width)`` against the density ``rho(x)``.
    * ``log=True``: a logarithmic axis and geometric bins; both sides show the
      density of ``log x``, i.e. ``x rho(x)`` against ``counts / (size * d log x)``.
      The bins start at the ``left_cut`` quantile of the continuous
      eigenvalues above ``1e-8 sigma`` (smaller ones count as numerical zeros),
      and the axis is cut there; or (``left_cut=None``) at the larger of 2/3
      of the left edge of the support and half their 0.2 % quantile. They end
      at 1.1 times the largest right edge.
    * ``atoms="stems"``: every atom drawn as a black stem whose height is its
      mass, on a twin axis (an atom at 0 on a log axis at the left end), with a
      coloured tick at the fraction of each spectrum found at it;
      ``atoms="legend"``: the law's mass at 0 appended to the label instead.
    * ``styles``: ``{label: (linestyle, legend name)}`` for laws not drawn as
      solid "limit law" (e.g. a tied law, dashed).

    The y-axis reaches ``headroom`` times the highest curve (log) or 1.6 times
    its 98 % quantile (linear). Returns ``ax``.
    """
    if atoms not in ("stems", "legend"):
        raise ValueError(f"atoms must be 'stems' or 'legend', got {atoms!r}")
    laws = law if isinstance(law, dict) else {label: law for label in spectra}
    styles = styles or {}
    eigs = {label: np.ravel(np.asarray(e, dtype=float)) for label, e in spectra.items()}
    free = {label: e[~at_atoms(e, laws[label], tol)] for label, e in eigs.items()}
    lo = min(laws[label].edges()[0][0] for label in eigs)
    hi = max(laws[label].edges()[-1][1] for label in eigs)
    if log:
        # eigenvalues below 1e-8 sigma count as numerical zeros for the range
        pooled = np.concatenate([f[f > 1e-8 * laws[label].sigma] for label, f in free.items()])
        if left_cut is None:
            lo = max(lo / 1.5, np.quantile(pooled, 0.002) / 2)
        else:
            lo = float(np.quantile(pooled, left_cut))
        b = np.geomspace(lo, hi * 1.1, bins + 1)
        width = np.diff(np.log(b))
    else:
        pad = 0.04 * (hi - lo)
        b = np.linspace(lo - pad, hi + pad, bins + 1)
        width = np.diff(b)
    for (label, e), color in zip(eigs.items(), colors):
        counts, _ = np.histogram(free[label], bins=b)
        extra = ""
        if atoms == "legend":
            mass = float(laws[label].point_mass(0.0))
            extra = f" (+ atom {mass:.2f} at 0)" if mass else ""
        ax.stairs(counts / e.size / width, b, color=color, lw=1.3, label=label + extra)
    drawn, curves, entries = [], [], []
    for label in eigs:
        ls, name = styles.get(label, ("-", "limit law"))
        if (ls, name) not in entries:
            entries.append((ls, name))
        if laws[label] in drawn:
            continue
        drawn.append(laws[label])
        mu = laws[label]
        x = np.union1d(mu.grid(400), np.geomspace(lo, hi, 300)) if log else mu.grid(400)
        x = x[x >= lo]
        curve = x * mu.density(x) if log else mu.density(x)
        curves.append(curve)
        ax.plot(x, curve, color="black", lw=1.1, ls=ls)
    for ls, name in entries:
        ax.plot([], [], color="black", lw=1.1, ls=ls, label=name)
    if log:
        ax.set_xscale("log")
        if left_cut is not None:
            ax.set_xlim(b[0], b[-1])
        ax.set_ylim(0, headroom * max(c.max() for c in curves))
    else:
        ax.set_ylim(0, max(np.quantile(c, 0.98) for c in curves) * 1.6)
    if atoms == "stems" and any(mu.atoms() for mu in drawn):
        twin = ax.twinx()
        for mu in drawn:
            for loc, mass in mu.atoms():
                where = loc if (loc > 0 or not log) else b[0]  # an atom at 0: at the left end
                twin.vlines(where, 0, mass, color="black", lw=2.5)
                twin.plot(where, mass, "v", color="black", ms=5)
                for (label, e), color in zip(eigs.items(), colors):
                    if laws[label] == mu:
                        twin.plot(where, np.mean(np.abs(e - loc) <= tol * mu.sigma), "_", color=color, ms=14, mew=2)
        twin.set_ylim(0, 1.05)
        twin.set_ylabel("atom mass", fontsize=8)
        twin.grid(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel or ("eigenvalue (log scale)" if log else "eigenvalue"))
    if legend:
        ax.legend(fontsize=8, loc="upper left")
    return ax


def density_curves(ax: Axes, laws: Sequence[Law], labels: Sequence[str], title: str = "", log: bool = False) -> Axes:
    """The densities of several laws (``log=True``: the density of ``log x``,
    ``x rho(x)``, on a logarithmic axis, from ``1e-4 sigma``); each label notes
    the law's atom at 0. Returns ``ax``."""
    tops = []
    for law, label in zip(laws, labels):
        x = law.grid(300)
        x = x[x > 1e-4 * law.sigma] if log else x
        y = x * law.density(x) if log else law.density(x)
        atoms = "".join(f", atom {m:.2f} at 0" for loc, m in law.atoms() if loc == 0.0)
        ax.plot(x, y, lw=1.3, label=label + atoms)
        tops.append(y.max() if log else np.quantile(y, 0.95))
    ax.set_ylim(0, (1.15 if log else 1.5) * max(tops))
    if log:
        ax.set_xscale("log")
    ax.set_title(title)
    ax.set_xlabel("eigenvalue (log scale)" if log else "eigenvalue")
    ax.set_ylabel("density of log(eigenvalue)" if log else "density")
    ax.legend(fontsize=8)
    return ax


def rate_panels(
    axes: Sequence[Axes],
    ns: Sequence[int],
    values: dict,
    predicted_slope: float,
    guide_slope: float | None = None,
    ylabels: Sequence[str | None] | None = None,
) -> list[PowerFit]:
    """One :func:`rate_plot` per axis: ``values`` is ``{label: array (len(ns), seeds)}``;
    with ``guide_slope`` a dotted black line of that slope through the geometric
    mean of the means; the sizes ``ns`` ticked (:func:`label_ns`). Returns the fits."""
    fits = []
    ylabels = ylabels or [None] * len(values)
    for ax, (label, v), ylabel in zip(axes, values.items(), ylabels):
        fits.append(rate_plot(ax, ns, v, predicted_slope, label))
        if guide_slope is not None:
            grid = np.geomspace(ns[0], ns[-1], 20)
            m = np.asarray(v, dtype=float).reshape(len(ns), -1).mean(axis=1)
            anchor = np.exp(np.mean(np.log(m)) - guide_slope * np.mean(np.log(ns)))
            ax.plot(grid, anchor * grid**guide_slope, color="black", ls=":", lw=1.0, label=f"slope ${guide_slope:g}$")
        label_ns(ax, ns)
        if ylabel:
            ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
    return fits


# --- the limit-law chapter's figures ---

__all__ += ["chain_figure", "allocation_figure"]


def chain_figure(
    levels: dict[str, ArrayLike],
    laws: dict[str, Law],
    softmax: ArrayLike | None = None,
    titles: dict[str, str] = LEVEL_TITLES,
    log_levels: Sequence[str] = ("mu_VO", "out"),
) -> Figure:
    """The chain of compressions level by level: one :func:`law_histograms` panel per level, on a 2 x 3 grid.

    Parameters
    ----------
    levels
        ``{level: eigenvalues}`` of one draw (any shape, flattened), e.g. from
        :func:`gelib.levels.level_spectra`.
    laws
        ``{level: law}``: one panel per law, in this order (at most five with
        ``softmax``, six without), the eigenvalues of the level against it.
    softmax
        Eigenvalues of ``Y Y^T / n`` of one draw of the softmax layer, drawn in
        the sixth panel against ``laws["out"]`` (log axis, second colour).
    titles
        ``{level: panel title}``.
    log_levels
        The levels drawn on a logarithmic axis as densities of ``log x`` (40
        bins; the others linear, 25 bins).

    Returns
    -------
    matplotlib.figure.Figure
        The figure; the first panel of each row has the y-label of its kind
        ("density" or "density of log(eigenvalue)"), the first panel a legend.
    """
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.2))
    for ax, name in zip(axes.flat, laws):
        log = name in log_levels
        law_histograms(ax, {"one draw": levels[name]}, laws[name], title=titles[name], bins=40 if log else 25, log=log)
    drawn = len(laws)
    if softmax is not None:
        law_histograms(
            axes.flat[drawn],
            {"MHA, one draw": softmax},
            laws["out"],
            title=r"output: softmax MHA $Y Y^T / n$",
            bins=40,
            colors=COLORS[1:],
            log=True,
        )
        drawn += 1
    for ax in axes.flat[drawn:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("density of log(eigenvalue)" if ax.get_xscale() == "log" else "density")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


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
        The 2 x 2 figure. The laws are :func:`gelib.law.chain`'s.
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


# --- learning curves ---

__all__ += ["ge_and_mha", "log2_axis", "tex_sci"]


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


__all__ += ["law_figure"]


def law_figure(
    ch: Chain, reference: Chain | None = None, labels: Sequence[str] = ("this layer", "main layer")
) -> Figure:
    """The value law and the output law of one layer, for the limit law's explorer.

    Left, :math:`\\mu_V` on a linear axis; right, the output law as the density
    of ``log x`` on a logarithmic axis (:func:`density_curves`). The edges of
    each law's support are dotted vertical lines, its atoms are named in the
    legend, and the title gives the output law's mean and support. With
    ``reference`` (the chapter's main layer) its two laws are drawn in grey
    for comparison.

    Parameters
    ----------
    ch
        The chain of laws of the layer (:func:`gelib.law.chain`).
    reference
        Another layer's chain, drawn beneath.
    labels
        Legend labels of ``ch`` and ``reference``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    pairs = [(ch, labels[0])] + ([(reference, labels[1])] if reference is not None else [])
    for ax, level, title, log in (
        (axes[0], "value", r"value law $\mu_V$", False),
        (axes[1], "output", r"output law of $Y Y^T / n$", True),
    ):
        laws = [getattr(c, level) for c, _ in pairs]
        density_curves(ax, laws, [label for _, label in pairs], title=title, log=log)
        curves = list(ax.get_lines())
        if reference is not None:
            curves[-1].set(color="0.6", ls="--", zorder=1)
        for line, law in zip(curves, laws):
            for left, right in law.edges():
                for x in (left, right):
                    if x > 0 or not log:
                        ax.axvline(x, color=line.get_color(), ls=":", lw=0.9)
        ax.legend(fontsize=8)
    out = ch.output
    support = " $\\cup$ ".join(f"$[{tex_sci(a)}, {tex_sci(b)}]$" for a, b in out.edges())
    atom = out.point_mass(0.0)
    fig.suptitle(
        f"output law: mean ${tex_sci(out.moments(1)[0])}$, support {support}"
        + (f", atom {atom:.3f} at 0" if atom > 0 else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def edge_rates_figure(axes, rates: dict, labels: dict[str, str] | None = None) -> None:
    """Two panels of :func:`gelib.spectra.edge_rates`: the root-mean-square of ``(lambda_max - E) / E``
    against ``n`` with the fits and the Tracy-Widom prediction ``sqrt(E TW_1^2) sigma_n / E``
    (log-log), and the eigenvalues beyond ``E + margin sigma_n`` per seed."""
    ax, bx = axes
    for m, (stats, fit) in rates.items():
        ns = [st.n for st in stats]
        label = (labels or {}).get(m, m)
        ax.loglog(ns, [np.sqrt(np.mean(st.deviation**2)) for st in stats], "o", label=label)
        ax.loglog(ns, fit(ns), "-", color=ax.lines[-1].get_color(), label=f"slope {fit.slope:.2f} ± {fit.ci95:.2f}")
        bx.plot(ns, [st.beyond.mean() for st in stats], "o-", label=label)
    tw = math.hypot(TW1_MEAN, TW1_STD)  # sqrt(E TW_1^2)
    ax.loglog(ns, [tw * st.scale / st.edge for st in stats], "k--", label="Tracy-Widom, $n^{-2/3}$")
    ax.set(xlabel="n", ylabel=r"rms of $(\lambda_{max} - E)/E$")
    bx.set(xscale="log", xlabel="n", ylabel=rf"eigenvalues beyond $E + {stats[0].margin:g}\sigma_n$, per seed")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.18))  # below: the data fill the panel
    bx.legend(fontsize=8)
    label_ns(ax, ns)
    label_ns(bx, ns)
