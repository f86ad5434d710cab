"""One figure style for the whole book, and the plots every chapter shares."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from .rates import PowerFit, fit_power_law

__all__ = ["use_style", "spectra_histograms", "log_histograms", "spectra_pair", "label_ns", "rate_plot",
           "close", "COLORS"]

COLORS = ("#1f5a96", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#555555")


def use_style() -> None:
    """The book's matplotlib style (lower-case labels are the chapters' job)."""
    mpl.rcParams.update({
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
    })


def spectra_histograms(ax, spectra: dict, bins: int = 60, range_=None, density_curve=None):
    """Overlaid step histograms of eigenvalues (``{label: array}``, all seeds pooled).

    ``density_curve``: optional ``(x, density, label)`` drawn in black over them.
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


def log_histograms(ax, spectra: dict, bins: int = 60):
    """Step histograms of ``log10`` eigenvalues (``{label: array}``, all seeds pooled).

    For spectra that spread over several decades, where a logarithmic axis
    shows their shape better than :func:`spectra_histograms` (linear bins).
    Eigenvalues are clipped at ``1e-12`` (exact zeros); the range runs from
    the 0.2 % quantile to the largest value.
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


def spectra_pair(axes, a, b, labels, title: str = "", slope: float | None = None):
    """Two spectra side by side: histograms (``axes[0]``) and quantiles (``axes[1]``).

    ``a`` and ``b`` have shape ``(seeds, n)``; the histograms pool all seeds,
    the quantile-quantile plot shows seed 0 of ``a`` against seed 0 of ``b``
    with the diagonal (and, given ``slope``, the dashed line ``y = slope x``).
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


def label_ns(ax, ns) -> None:
    """Tick exactly the sizes ``ns`` of a sweep on a logarithmic x-axis."""
    ax.set_xticks(ns, [str(v) for v in ns])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())


def rate_plot(ax, ns, values, predicted_slope: float, label: str, color=None) -> PowerFit:
    """Log-log plot of a control quantity against ``n`` with its fitted and predicted slope.

    ``values`` has shape ``(len(ns), seeds)``; markers show the mean over
    seeds with the min-max range, the solid line the fit, the dashed line the
    predicted slope through the same geometric-mean point.
    """
    ns = np.asarray(ns, dtype=float)
    values = np.asarray(values, dtype=float).reshape(len(ns), -1)
    fit = fit_power_law(ns, values)
    mean = values.mean(axis=1)
    line = ax.errorbar(ns, mean, yerr=[mean - values.min(1), values.max(1) - mean], fmt="o",
                       ms=4, capsize=2, color=color, label=label)
    c = line[0].get_color()
    grid = np.geomspace(ns[0], ns[-1], 50)
    ax.plot(grid, fit(grid), color=c, lw=1.2,
            label=f"fit: slope {fit.slope:.2f} ± {fit.ci95:.2f}")
    anchor = np.exp(np.mean(np.log(mean)) - predicted_slope * np.mean(np.log(ns)))
    ax.plot(grid, anchor * grid**predicted_slope, color=c, ls="--", lw=1.0,
            label=f"predicted slope {predicted_slope:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("context length $n$")
    ax.legend()
    return fit


def close(fig) -> None:
    """Close a figure after it was glued, so it is not displayed twice."""
    plt.close(fig)
