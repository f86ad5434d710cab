"""Power-law rates: the slope of ``log y`` against ``log n``.

The controls of Table 1 decay like ``n^{-1/2}`` (up to ``n^{o(1)}`` or
``sqrt(log n)`` factors) at fixed ratios of the dimensions; chapters fit the
exponent by least squares on the log-log scale and compare it with the
prediction (:func:`fit_power_law`). Its 95 % interval treats the points as
independent when every size is drawn afresh; when the smaller sizes are
leading blocks of one draw per seed (:class:`gelib.sweeps.NestedDraws`), the
points of one seed are correlated across sizes and ``nested=True`` fits one
slope per seed and takes the Student-t interval across seeds. Spectral
distances between two models over a sweep, and their two-panel rate figure,
are :func:`sweep_distances` and :func:`plot_distance_rates`;
:func:`sample_covariance_error` is the exact ``N^{-1/2}`` rate of a Gaussian
sample covariance; :func:`agree_at_every_size` compares measured means with
their predictions at every size of a sweep, jointly.
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
    "Agreement",
    "agree_at_every_size",
]


@dataclasses.dataclass(frozen=True)
class PowerFit:
    """``y ~ prefactor * x^slope``, with the 95 % confidence half-width of the slope.

    ``per_seed`` holds the slope of every seed when the fit is nested
    (:func:`fit_power_law` with ``nested=True``), ``None`` for a pooled fit.
    """

    slope: float
    prefactor: float
    ci95: float
    per_seed: tuple[float, ...] | None = None

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=float) ** self.slope


def fit_power_law(x: ArrayLike, y: ArrayLike, nested: bool = False) -> PowerFit:
    """Least-squares fit of ``log y = slope log x + c``.

    ``x`` has shape ``(k,)``; ``y`` shape ``(k,)`` or, with several values per
    ``x``, ``(k, seeds)``.

    *Pooled* (``nested=False``, for sweeps that draw every ``(x, seed)``
    independently): every value is one point of a single fit, and ``ci95`` is
    the t-interval of its slope with ``k * seeds - 2`` degrees of freedom.

    *Nested* (``nested=True``, for sweeps whose smaller sizes are leading blocks
    of one draw per seed, :class:`gelib.sweeps.NestedDraws`): the values of one
    seed are correlated across ``x`` and the pooled interval, which counts them
    as independent, is not valid (too narrow when the seeds differ in slope).
    Each column of ``y`` (a seed) gets its own least-squares slope ``s_j`` and
    intercept ``c_j``; the slope is their mean, ``ci95`` the Student-t
    half-width ``t_{0.975, seeds-1} sd(s_j) / sqrt(seeds)`` across seeds (NaN for
    one seed), the prefactor ``exp(mean c_j)``, and ``per_seed`` the ``s_j``. With
    the same ``x`` for every seed the mean slope and prefactor equal the pooled
    ones: only the interval differs.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("a power-law fit needs positive x and y")
    if nested:
        if y.ndim != 2 or y.shape[0] != x.size:
            raise ValueError(f"a nested fit needs y of shape (len(x), seeds) = ({x.size}, seeds), got {y.shape}")
        slopes, intercepts = np.polynomial.polynomial.polyfit(np.log(x), np.log(y), 1)[::-1]
        seeds = y.shape[1]
        half = (
            float(scipy.stats.t.ppf(0.975, seeds - 1) * np.std(slopes, ddof=1) / np.sqrt(seeds))
            if seeds > 1
            else float("nan")
        )
        return PowerFit(
            float(np.mean(slopes)), float(np.exp(np.mean(intercepts))), half, tuple(float(v) for v in slopes)
        )
    if y.ndim == 2:
        x = np.repeat(x, y.shape[1])
        y = y.ravel()
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
    axes: Sequence[matplotlib.axes.Axes],
    pairs: Mapping[int, np.ndarray],
    predicted_slope: float = -1.0,
    nested: bool = False,
) -> DistanceRates:
    """The two-panel rate figure of a step of Table 1: relative W1 (``axes[0]``) and KS (``axes[1]``) against ``n``.

    ``pairs[n]`` has shape ``(seeds, 2, n)`` (see :func:`sweep_distances`).
    Each panel is a :func:`gelib.plotting.rate_plot` with the predicted slope,
    its y-label and the sizes of the sweep as ticks. ``nested``: seed ``s`` of
    every size is cut out of one draw (:class:`gelib.sweeps.NestedDraws`), so
    the fits are per seed (:func:`fit_power_law`). Returns the distances and
    the two fits.
    """
    from .plotting import COLORS, label_ns, rate_plot

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


@dataclasses.dataclass(frozen=True)
class Agreement:
    """Measured means against predictions at every size of a sweep (:func:`agree_at_every_size`).

    ``z`` holds ``(mean - predicted) / se`` per size, ``threshold`` the Bonferroni-adjusted
    Student-t quantile and ``ok`` whether every ``|z|`` is within it.
    """

    z: np.ndarray
    threshold: float
    ok: bool


def agree_at_every_size(values: ArrayLike, predicted: ArrayLike, level: float = 0.95) -> Agreement:
    """Whether the mean over seeds agrees with its prediction at every size, jointly at ``level``.

    ``values`` has shape ``(k, seeds)`` (independent seeds), ``predicted`` shape ``(k,)``. At
    each size the mean over seeds lies within ``t se`` of the prediction, ``se`` the standard
    error across seeds and ``t`` the Student-t quantile ``1 - (1 - level) / (2k)`` with
    ``seeds - 1`` degrees of freedom (Bonferroni: the ``k`` tests fail together with
    probability at most ``1 - level`` when the predictions are right).
    """
    values = np.asarray(values, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if values.ndim != 2 or values.shape[0] != predicted.size or values.shape[1] < 2:
        raise ValueError(f"values must have shape (len(predicted), seeds >= 2), got {values.shape}")
    k, seeds = values.shape
    se = values.std(axis=1, ddof=1) / np.sqrt(seeds)
    z = (values.mean(axis=1) - predicted) / se
    threshold = float(scipy.stats.t.ppf(1 - (1 - level) / (2 * k), seeds - 1))
    return Agreement(z, threshold, bool(np.all(np.abs(z) <= threshold)))
