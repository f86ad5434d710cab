"""Spectra of two models side by side: histograms (linear and log), CDF differences, per-head panels."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ..spectra import ks, rel_w1
from .style import COLORS

__all__ = [
    "spectra_histograms",
    "log_histograms",
    "spectra_pair",
    "log_quantile_figure",
    "distance_title",
    "cdf_differences",
    "pair_and_heads",
]


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


def log_quantile_figure(
    a: ArrayLike, b: ArrayLike, labels: Sequence[str], mean: float | None = None, title: str = ""
) -> Figure:
    """Two spectra over several decades: log histograms (left) and quantiles against quantiles (right).

    ``a`` and ``b`` (any shape, all seeds pooled) are drawn by :func:`~gelib.plotting.log_histograms` with
    the labels ``labels``, and, given ``mean``, a dashed black line at ``log10(mean)``
    (labelled with the mean); ``title`` heads the left panel. The right panel, on log-log axes,
    sets the quantiles of ``a`` (y) against those of ``b`` (x) at the probabilities
    ``(i + 1/2) / size`` of ``b``, with the diagonal. Returns the figure.
    """
    fig, (ax0, ax1) = plt.subplots(
        1, 2, figsize=(9.5, 3.6), gridspec_kw=dict(width_ratios=(1.6, 1)), layout="constrained"
    )
    log_histograms(ax0, {labels[0]: a, labels[1]: b})
    if mean is not None:
        ax0.axvline(np.log10(mean), color="black", ls="--", lw=1, label="mean $m_1$")
        ax0.legend()
    ax0.set_title(title)
    a, b = np.asarray(a), np.asarray(b)
    probs = (np.arange(b.size) + 0.5) / b.size
    ax1.loglog(np.quantile(b, probs), np.quantile(a, probs), ".", ms=2)
    ax1.axline((1.0, 1.0), (2.0, 2.0), color="black", lw=0.8)  # the diagonal
    ax1.set(xlabel=f"{labels[1]} quantile", ylabel=f"{labels[0]} quantile")
    return fig


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
