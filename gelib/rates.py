"""Power-law rates: the slope of ``log y`` against ``log n``.

The controls of Table 1 decay like ``n^{-1/2}`` (up to ``n^{o(1)}`` or
``sqrt(log n)`` factors) at fixed ratios of the dimensions; chapters fit the
exponent by least squares on the log-log scale and compare it with the
prediction.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.stats

__all__ = ["PowerFit", "fit_power_law"]


@dataclasses.dataclass(frozen=True)
class PowerFit:
    """``y ~ prefactor * x^slope``, with the 95 % confidence half-width of the slope."""

    slope: float
    prefactor: float
    ci95: float

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=float) ** self.slope


def fit_power_law(x, y) -> PowerFit:
    """Least-squares fit of ``log y = slope log x + c`` over all points.

    ``y`` may hold several values per ``x`` (shape ``(len(x), seeds)``); every
    value is one point of the fit.
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
