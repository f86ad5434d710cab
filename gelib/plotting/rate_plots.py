"""Controls and distances against ``n``, with their fitted power-law rates and predictions."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.axes
import matplotlib.figure
import numpy as np
import scipy.stats
from matplotlib.axes import Axes
from numpy.typing import ArrayLike

from ..moment_checks import MomentSweep
from ..numerics import PowerFit, fit_power_law
from ..spectra import TW1_MEAN, TW1_STD
from ..sweeps import DistanceRates, RegimeCheck, sweep_distances
from .style import COLORS, label_ns

__all__ = [
    "rate_plot",
    "rate_panels",
    "law_distance_rates",
    "edge_rates_figure",
    "plot_distance_rates",
    "plot_moment_rates",
    "regime_plot",
    "regime_figure",
]


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
    so the slope and its interval are per seed (:func:`gelib.numerics.fit_power_law`).
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


def law_distance_rates(
    axes: Sequence[Axes],
    ns: Sequence[int],
    to_law: Mapping[int, Mapping[str, object]],
    models: Mapping[str, str],
    quantities: Mapping[str, str],
    predicted_slope: float = -0.5,
) -> dict[tuple[str, str], PowerFit]:
    """Distances of simulated spectra to their limit law against ``n``, divided by ``sqrt(log n)``.

    One panel per quantity (``{attribute: y-label}``, an attribute of
    :class:`gelib.freeprob.ToLaw` such as ``"shape"`` or ``"ks"``), one :func:`~gelib.plotting.rate_plot` per
    model (``{model: label}``, in the book's colours) in each: ``to_law[n][model]`` holds the
    per-seed distances at size ``n`` (:func:`gelib.freeprob.shape_to_law`), divided by
    ``sqrt(log n)`` before the fit, so that a rate ``sqrt(log n / n)`` shows as the predicted
    slope ``-1/2``. Returns the fits by ``(quantity, model)``.
    """
    root_log = np.sqrt(np.log(ns))[:, None]
    fits = {}
    for ax, (q, ylabel) in zip(axes, quantities.items()):
        for (m, label), color in zip(models.items(), COLORS):
            values = np.array([getattr(to_law[n][m], q) for n in ns]) / root_log  # (len(ns), seeds)
            fits[q, m] = rate_plot(ax, ns, values, predicted_slope, label, color=color)
        ax.set_ylabel(ylabel + r" / $\sqrt{\log n}$")
    return fits


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


def plot_distance_rates(
    axes: Sequence[matplotlib.axes.Axes],
    pairs: Mapping[int, np.ndarray],
    predicted_slope: float = -1.0,
    nested: bool = False,
) -> DistanceRates:
    """The two-panel rate figure of a step of Table 1: relative W1 (``axes[0]``) and KS (``axes[1]``) against ``n``.

    ``pairs[n]`` has shape ``(seeds, 2, n)`` (see :func:`~gelib.sweeps.sweep_distances`).
    Each panel is a :func:`gelib.plotting.rate_plot` with the predicted slope,
    its y-label and the sizes of the sweep as ticks. ``nested``: seed ``s`` of
    every size is cut out of one draw (:class:`gelib.sweeps.NestedDraws`), so
    the fits are per seed (:func:`~gelib.numerics.fit_power_law`). Returns the distances and
    the two fits.
    """

    ns = tuple(int(n) for n in pairs)
    w1, ks = sweep_distances(pairs)
    fits = {
        "w1": rate_plot(axes[0], ns, w1, predicted_slope, "relative W1", nested=nested),
        "ks": rate_plot(axes[1], ns, ks, predicted_slope, "KS", color=COLORS[1], nested=nested),
    }
    axes[0].set_ylabel("relative W1")
    axes[1].set_ylabel("KS distance")
    for ax in axes:
        label_ns(ax, ns)
    return DistanceRates(ns, w1, ks, fits)


def plot_moment_rates(axes, sweep: MomentSweep, predicted_slope: float = -1.0, guide_slope: float | None = -0.5):
    """One log-log panel per moment (``axes[j - 1]`` for ``m_j``): ``|log-ratio|`` of every step against ``n``.

    Small dots: the seeds; markers: their mean; solid lines: the fits of
    :class:`~gelib.moment_checks.MomentSweep`; black lines: the ``predicted_slope`` (dashed) and
    ``guide_slope`` (dotted, e.g. Table 1's ``n^{-1/2}``), drawn from the
    largest mean at the smallest ``n``. One legend for all panels, below them
    (the figure needs ``layout="constrained"``). Returns ``axes``.
    """

    ns = np.asarray(sweep.ns, dtype=float)
    grid = np.geomspace(ns[0], ns[-1], 20)
    for j, ax in enumerate(axes[: sweep.k]):
        top = 0.0
        for c, (name, _, _) in enumerate(sweep.steps):
            size = np.abs(sweep.differences[name][:, :, j])
            mean, color = size.mean(axis=1), COLORS[c % len(COLORS)]
            top = max(top, mean[0])
            ax.plot(np.repeat(ns, size.shape[1]), size.ravel(), ".", ms=3, alpha=0.35, color=color)
            ax.plot(ns, mean, "o", ms=5, color=color, label=name.replace("_", " "))
            if sweep.fits[name][j] is not None:
                # not None (just checked): mypy does not narrow an indexed expression
                ax.plot(grid, sweep.fits[name][j](grid), color=color, lw=1.1)  # type: ignore[misc]
        for slope, style in ((predicted_slope, "--"), (guide_slope, ":")):
            if slope is not None:
                ax.plot(
                    grid, 2 * top * (grid / ns[0]) ** slope, color="black", ls=style, lw=1.0, label=f"slope ${slope:g}$"
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        label_ns(ax, sweep.ns)
        ax.set_title(f"$m_{j + 1}$")
        ax.set_ylabel("|log-ratio|")
    for ax in axes[-2:]:
        ax.set_xlabel("context length $n$")
    axes[0].figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncol=4, fontsize=8)
    return axes


def regime_plot(ax: Axes, check: RegimeCheck, scale: float = 1.0, ylabel: str = "") -> None:
    """A :class:`~gelib.sweeps.RegimeCheck` against ``n``: per regime, the mean over seeds with its 95 %
    interval (markers; open where the size is not tested) and the prediction (line), ``scale`` times
    the values (100 for percent). The x axis is logarithmic; the y axis is logarithmic when every
    prediction is positive, linear otherwise (a zero line is drawn)."""
    positive = all(np.all(p > 0) for p in check.predicted.values())
    labels = {"ratio": "$d_K/n$ fixed", "fixed": "$d_K$ fixed"}
    for (r, v), color in zip(check.values.items(), COLORS):
        ns, mean = np.array(check.ns[r]), scale * v.mean(axis=1)
        t = scipy.stats.t.ppf(0.975, v.shape[1] - 1)  # the 95 % Student-t interval over seeds
        half = scale * t * v.std(axis=1, ddof=1) / math.sqrt(v.shape[1])
        dks, ratios = sorted(set(check.d_k[r])), sorted({round(n / d) for n, d in zip(check.ns[r], check.d_k[r])})
        label = (
            f"$d_K = {dks[0]}$" if len(dks) == 1 else f"$d_K = n/{ratios[0]}$" if len(ratios) == 1 else labels.get(r, r)
        )
        ax.plot(ns, scale * check.predicted[r], "-", color=color, lw=1.2, label=f"{label}: prediction")
        for tested in (True, False):
            sel = check.testable[r] == tested
            if sel.any():
                ax.errorbar(
                    ns[sel],
                    mean[sel],
                    half[sel],
                    fmt="o",
                    color=color,
                    capsize=3,
                    mfc=color if tested else "none",
                    label=f"{label}: measured" if tested else None,
                )
    ax.set_xscale("log", base=2)
    if positive:
        ax.set_yscale("log")
    else:
        ax.axhline(0.0, color="grey", lw=0.8)
    label_ns(ax, sorted({n for ns in check.ns.values() for n in ns}))
    ax.set_xlabel("$n$")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)


def regime_figure(*panels: tuple[RegimeCheck, float, str]) -> matplotlib.figure.Figure:
    """One :func:`regime_plot` per panel ``(check, scale, ylabel)``, side by side; returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels) + 0.5, 3.6), layout="constrained", squeeze=False)
    for ax, (check, scale, ylabel) in zip(axes[0], panels):
        regime_plot(ax, check, scale, ylabel)
    return fig
