"""Power-law rates: the slope of ``log y`` against ``log n``.

The controls of Table 1 decay like ``n^{-1/2}`` (up to ``n^{o(1)}`` or
``sqrt(log n)`` factors) at fixed ratios of the dimensions; chapters fit the
exponent by least squares on the log-log scale and compare it with the
prediction (:func:`fit_power_law`). Spectral distances between two models
over a sweep, and their two-panel rate figure, are :func:`sweep_distances`
and :func:`plot_distance_rates`; :func:`sample_covariance_error` is the exact
``N^{-1/2}`` rate of a Gaussian sample covariance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    # annotations only (matplotlib is imported by the plots, not by the fits); where it is named,
    # Sphinx reads the annotations as written, so they spell out matplotlib.axes.Axes
    import matplotlib.axes

__all__ = [
    "PowerFit",
    "fit_power_law",
    "sample_covariance_error",
    "sweep_distances",
    "DistanceRates",
    "plot_distance_rates",
]


@dataclasses.dataclass(frozen=True)
class PowerFit:
    """``y ~ prefactor * x^slope``, with the 95 % confidence half-width of the slope."""

    slope: float
    prefactor: float
    ci95: float

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=float) ** self.slope


def fit_power_law(x: ArrayLike, y: ArrayLike) -> PowerFit:
    """Least-squares fit of ``log y = slope log x + c`` over all points.

    ``x`` has shape ``(k,)``; ``y`` shape ``(k,)`` or, with several values per
    ``x``, ``(k, seeds)``: every value is one point of the fit.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if y.ndim == 2:
        x = np.repeat(x, y.shape[1])
        y = y.ravel()
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("a power-law fit needs positive x and y")
    res = scipy.stats.linregress(np.log(x), np.log(y))
    dof = x.size - 2
    half = float(scipy.stats.t.ppf(0.975, dof) * res.stderr) if dof > 0 else float("nan")
    return PowerFit(float(res.slope), float(np.exp(res.intercept)), half)


def sample_covariance_error(sigma: np.ndarray, rows: ArrayLike) -> np.ndarray:
    """Expected relative error of the sample covariance of ``N`` Gaussian rows: ``N^{-1/2}`` with its constant.

    For i.i.d. rows ``y ~ N(0, Sigma)`` (``Sigma`` of shape ``(d, d)``) and
    ``hat Sigma = (1/N) sum_i y_i y_i^T``, exactly
    ``E ||hat Sigma - Sigma||_F^2 = ((tr Sigma)^2 + tr(Sigma^2)) / N``; returns
    ``sqrt`` of it over ``||Sigma||_F`` for each ``N`` in ``rows`` (same shape as ``rows``).
    """
    sigma = np.asarray(sigma, dtype=float)
    tr, tr2 = np.trace(sigma), np.sum(sigma * sigma)
    return np.sqrt((tr**2 + tr2) / np.asarray(rows)) / np.linalg.norm(sigma)


def sweep_distances(pairs: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Relative W1 and KS distances between two models' spectra at every size of a sweep.

    ``pairs[n]`` has shape ``(seeds, 2, n)``: per seed, the eigenvalues of
    model ``a`` and of the reference ``b``. Returns ``rel_w1(a, b)`` and
    ``ks(a, b)`` (:mod:`gelib.spectra`), each of shape ``(len(pairs), seeds)`` in
    the order of ``pairs``: the ``values`` of :func:`fit_power_law` and of
    :func:`gelib.plotting.rate_plot`.
    """
    from .spectra import ks, rel_w1

    ev = [np.asarray(p) for p in pairs.values()]
    if any(e.ndim != 3 or e.shape[1] != 2 for e in ev):
        raise ValueError(f"each entry must have shape (seeds, 2, n), got {[e.shape for e in ev]}")
    return (np.array([rel_w1(e[:, 0], e[:, 1]) for e in ev]), np.array([ks(e[:, 0], e[:, 1]) for e in ev]))


@dataclasses.dataclass(frozen=True)
class DistanceRates:
    """Spectral distances between two models over a sweep, with their power-law fits.

    ``w1`` and ``ks`` have shape ``(len(ns), seeds)``; ``fits`` maps ``"w1"`` and
    ``"ks"`` to their :class:`PowerFit` against ``n``.
    """

    ns: tuple[int, ...]
    w1: np.ndarray
    ks: np.ndarray
    fits: dict


def plot_distance_rates(
    axes: Sequence[matplotlib.axes.Axes], pairs: Mapping[int, np.ndarray], predicted_slope: float = -1.0
) -> DistanceRates:
    """The two-panel rate figure of a step of Table 1: relative W1 (``axes[0]``) and KS (``axes[1]``) against ``n``.

    ``pairs[n]`` has shape ``(seeds, 2, n)`` (see :func:`sweep_distances`).
    Each panel is a :func:`gelib.plotting.rate_plot` with the predicted slope,
    its y-label and the sizes of the sweep as ticks. Returns the distances and
    the two fits.
    """
    from .plotting import COLORS, label_ns, rate_plot

    ns = tuple(int(n) for n in pairs)
    w1, ks = sweep_distances(pairs)
    fits = {
        "w1": rate_plot(axes[0], ns, w1, predicted_slope, "relative W1"),
        "ks": rate_plot(axes[1], ns, ks, predicted_slope, "KS", color=COLORS[1]),
    }
    axes[0].set_ylabel("relative W1")
    axes[1].set_ylabel("KS distance")
    for ax in axes:
        label_ns(ax, ns)
    return DistanceRates(ns, w1, ks, fits)
