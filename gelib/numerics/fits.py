"""Power-law rates: the slope of ``log y`` against ``log n``.

The controls of Table 1 decay like ``n^{-1/2}`` (up to ``n^{o(1)}`` or
``sqrt(log n)`` factors) at fixed ratios of the dimensions; chapters fit the
exponent by least squares on the log-log scale and compare it with the
prediction (:func:`~gelib.numerics.fit_power_law`). Its 95 % interval treats the points as
independent when every size is drawn afresh; when the smaller sizes are
leading blocks of one draw per seed (:class:`gelib.sweeps.NestedDraws`), the
points of one seed are correlated across sizes and ``nested=True`` fits one
slope per seed and takes the Student-t interval across seeds.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

__all__ = [
    "PowerFit",
    "fit_power_law",
]


@dataclasses.dataclass(frozen=True)
class PowerFit:
    """``y ~ prefactor * x^slope``, with the 95 % confidence half-width of the slope.

    ``per_seed`` holds the slope of every seed when the fit is nested
    (:func:`~gelib.numerics.fit_power_law` with ``nested=True``), ``None`` for a pooled fit;
    ``dof`` the degrees of freedom of the Student-t interval (``None`` when not known).
    """

    slope: float
    prefactor: float
    ci95: float
    per_seed: tuple[float, ...] | None = None
    dof: int | None = None

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=float) ** self.slope

    def half_width(self, level: float = 0.95) -> float:
        """The slope's Student-t half-width at another two-sided ``level`` (``ci95`` at 0.95)."""
        if self.dof is None:
            raise ValueError("this fit does not know its degrees of freedom")
        ratio = scipy.stats.t.ppf((1 + level) / 2, self.dof) / scipy.stats.t.ppf(0.975, self.dof)
        return float(self.ci95 * ratio)


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
            float(np.mean(slopes)), float(np.exp(np.mean(intercepts))), half, tuple(float(v) for v in slopes), seeds - 1
        )
    if y.ndim == 2:
        x = np.repeat(x, y.shape[1])
        y = y.ravel()
    res = scipy.stats.linregress(np.log(x), np.log(y))
    dof = x.size - 2
    half = float(scipy.stats.t.ppf(0.975, dof) * res.stderr) if dof > 0 else float("nan")
    return PowerFit(float(res.slope), float(np.exp(res.intercept)), half, dof=dof)
