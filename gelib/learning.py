"""Readout learning on attention features, as spectral functionals.

A reconstruction (``shared/MATH.md`` section 5): only the captions of the
paper's Figures 2-3 and its Table D.3 survive, so the setup below is ours.

A linear readout ``theta`` in ``R^{d_o}`` is trained on the frozen features
``Y`` (``n x d_o``, the layer's output) by gradient flow on
``(1/2n) ||Y theta - y||^2`` from ``theta = 0``, with targets
``y = Y theta* + sigma eps``, ``theta* ~ N(0, I / d_o)``, ``eps ~ N(0, I_n)``.
With ``G = Y Y^T / n`` (law ``mu``, ``n`` eigenvalues) the residual is
``e^{-tG} y``, and averaging over ``theta*`` and ``eps`` gives exactly

* relative training loss (``sigma = 0``)
  ``L(t) / L(0) = int l e^{-2tl} dmu / int l dmu``;
* coefficient error ``E ||theta(t) - theta*||^2 / E ||theta*||^2``
  ``= (n / d_o) int e^{-2tl} dmu + (1 - n / d_o)``
  ``+ sigma^2 int (1 - e^{-tl})^2 / l dmu``: bias (the ``(d_o - n)_+`` null
  directions of ``Y^T Y`` never learn; when ``d_o < n`` the ``n - d_o`` zero
  eigenvalues of ``G`` are subtracted again) plus noise (zero at ``l = 0``);
* arrival time: the first ``t`` with ``L(t) / L(0) <= epsilon`` (it exists
  whenever the mean eigenvalue is positive).

Each takes either sampled eigenvalues (an array; the functional is their mean,
averaged over the leading axes) or a limit :class:`~gelib.law.Law`, so the
same code gives the MHA markers and the GE curves.

Parameter counts and the width-allocation paths of Table D.3 are here too.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.optimize

from .config import AttentionConfig, ConfigError

__all__ = [
    "expect",
    "training_loss",
    "coefficient_error",
    "arrival_time",
    "n_params",
    "fixed_output_path",
    "fixed_budget_path",
    "shared_widths",
    "PathPoint",
]


def _is_law(mu) -> bool:
    return hasattr(mu, "integrate") and hasattr(mu, "atoms")


def expect(mu, phi, phi0=None, zero_tol: float = 1e-10) -> np.ndarray:
    """``int phi dmu`` for eigenvalues (array ``(..., n)``) or a limit law.

    ``phi`` maps an array of points (last axis) to ``(k, points)`` or
    ``(points,)``; ``phi0`` replaces ``phi(0)`` at zero eigenvalues (those
    below ``zero_tol`` times the largest). For arrays the result is averaged
    over every axis but ``phi``'s leading one.
    """
    if _is_law(mu):
        return np.asarray(mu.integrate(phi, phi0=phi0))
    lam = np.asarray(mu, dtype=float).reshape(-1)
    zero = lam <= zero_tol * max(lam.max(), 0.0)
    vals = np.asarray(phi(np.where(zero, 1.0, lam)), dtype=float)
    if zero.any():
        at_zero = np.asarray(phi(np.zeros(1)), dtype=float)[..., 0] if phi0 is None else np.asarray(phi0, float)
        vals = np.where(zero, at_zero[..., None], vals)
    return vals.mean(axis=-1)


def training_loss(mu, t) -> np.ndarray:
    """Relative training loss ``L(t) / L(0)`` (``sigma = 0``) at times ``t``."""
    t = np.atleast_1d(np.asarray(t, dtype=float))
    num = expect(mu, lambda x: x * np.exp(-2 * t[:, None] * x), phi0=np.zeros_like(t))
    return num / expect(mu, lambda x: x, phi0=0.0)


def coefficient_error(mu, t, n: int, d_o: int, sigma: float = 0.0) -> np.ndarray:
    """Relative coefficient error ``E||theta(t) - theta*||^2 / E||theta*||^2`` at times ``t``.

    ``t = np.inf`` gives the end of training (the minimum-norm interpolator).
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    finite = np.isfinite(t)
    tf = np.where(finite, t, 0.0)

    def decay(x):
        return np.where(finite[:, None], np.exp(-2 * tf[:, None] * x), 0.0)

    def noise(x):
        return np.where(finite[:, None], -np.expm1(-tf[:, None] * x), 1.0) ** 2 / x

    # at a zero eigenvalue nothing is learned: decay 1, noise 0
    bias = (n / d_o) * expect(mu, decay, phi0=np.ones_like(t)) + (1 - n / d_o)
    var = sigma**2 * expect(mu, noise, phi0=np.zeros_like(t)) if sigma else 0.0
    return bias + var


def _mean_and_min(mu) -> tuple[float, float]:
    """Mean eigenvalue ``m1`` and the smallest point of the spectrum."""
    if _is_law(mu):
        pts = [lo for lo, _ in mu.edges()] + [loc for loc, _ in mu.atoms()]
        return float(mu.moments(1)[0]), min(pts)
    lam = np.asarray(mu, dtype=float).reshape(-1)
    return float(lam.mean()), float(lam.min())


def arrival_time(mu, epsilon: float = 0.1, t_max: float | None = None) -> float:
    """First time with ``L(t) / L(0) <= epsilon``, to relative precision 1e-10.

    ``L(t) / L(0) = int l e^{-2tl} dmu / m1`` falls from 1 to 0 for any
    spectrum in ``[0, inf)`` with mean ``m1 > 0`` (zero eigenvalues carry no
    loss at any time, so an atom at 0 does not stop it), so the arrival time
    exists for every ``epsilon`` in (0, 1).  It is bracketed from the natural
    time scale ``1 / m1``, moving by factors of 4 until the loss crosses
    ``epsilon``, then found by Brent's method in ``log t`` (about 15
    evaluations of the loss).  Raises :class:`ValueError` for a spectrum that
    is all zeros or has negative eigenvalues (``L`` undefined, resp. not
    decreasing), and when the loss is still above ``epsilon`` at ``t_max``
    (default ``1e12 / m1``: nearly all of the weight ``l dmu`` sits on
    eigenvalues below ``1e-12 m1``).
    """
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must lie in (0, 1), got {epsilon}")
    m1, lowest = _mean_and_min(mu)
    if not m1 > 0:
        raise ValueError(f"the mean eigenvalue is {m1:g}: with every eigenvalue at 0 the loss is 0 "
                         "from the start and L(t) / L(0) is undefined")
    if lowest < -1e-10 * m1:
        raise ValueError(f"the spectrum reaches {lowest:g} < 0: not the spectrum of a Gram matrix "
                         "(the loss would grow along negative eigenvalues)")
    t_max = 1e12 / m1 if t_max is None else float(t_max)

    def excess(logt):
        return training_loss(mu, [math.exp(logt)])[0] - epsilon

    step, log_t_max = math.log(4.0), math.log(t_max)
    lo = hi = min(math.log(1.0 / m1), log_t_max)
    f_hi = excess(hi)
    if f_hi == 0:
        return math.exp(hi)
    if f_hi > 0:                    # above epsilon at 1 / m1: later
        while f_hi > 0:
            if hi >= log_t_max:
                raise ValueError(
                    f"L(t) / L(0) is still {f_hi + epsilon:.3g} > epsilon = {epsilon:g} at t = "
                    f"{math.exp(hi):.3g} (t_max = {t_max:g}, 1 / m1 = {1 / m1:.3g}): the weight "
                    "l dmu sits on eigenvalues far below the mean")
            lo, hi = hi, min(hi + step, log_t_max)
            f_hi = excess(hi)
    else:                           # below epsilon at 1 / m1: earlier (L(0) = 1 > epsilon)
        lo = hi - step
        while excess(lo) <= 0:
            lo, hi = lo - step, lo
    return math.exp(scipy.optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-14))


# --- parameter counts and width allocation (Table D.3) ------------------------------


def n_params(cfg: AttentionConfig) -> int:
    """Attention parameters ``N_par = h d d_K + h_KV d (d_K + d_V) + h d_V d_O``.

    With K=V tying the keys and values share ``h_KV d d_K`` weights.
    """
    kv = cfg.h_kv * cfg.d * (cfg.d_k if cfg.tie_kv else cfg.d_k + cfg.d_v)
    return cfg.h * cfg.d * cfg.d_k + kv + cfg.h * cfg.d_v * cfg.d_o


@dataclasses.dataclass(frozen=True)
class PathPoint:
    cfg: AttentionConfig
    n_params: int


def fixed_output_path(base: AttentionConfig, heads) -> list[PathPoint]:
    """Figure 2(c), fixed output: ``h`` varies, widths and ``d_O`` fixed."""
    return [PathPoint(c, n_params(c)) for c in (base.replace(h=h, h_kv=h) for h in heads)]


def fixed_budget_path(base: AttentionConfig, heads, budget: int | None = None) -> list[PathPoint]:
    """Figure 2(c), fixed budget: ``h`` varies and ``d_O`` absorbs the change in ``N_par``.

    ``d_O = (budget - h d d_K - h d (d_K + d_V)) / (h d_V)``, rounded; the
    default budget is ``N_par`` of ``base``.
    """
    budget = n_params(base) if budget is None else budget
    out = []
    for h in heads:
        c = base.replace(h=h, h_kv=h, d_o=1)
        rest = budget - (n_params(c) - h * c.d_v)
        d_o = round(rest / (h * c.d_v))
        if d_o < 1:
            raise ConfigError(f"a budget of {budget} parameters leaves no output width at h = {h}")
        c = c.replace(d_o=d_o)
        out.append(PathPoint(c, n_params(c)))
    return out


def shared_widths(base: AttentionConfig, kv_groups, budget: int | None = None) -> list[PathPoint]:
    """Figure 3(a), fixed ``N_par``: as ``h_KV`` falls, ``d_K = d_V = w`` grows.

    ``N_par = w (h d + 2 h_KV d + h d_O)`` is linear in ``w``; ``w`` is the
    nearest integer to ``budget / (h d + 2 h_KV d + h d_O)``.
    """
    budget = n_params(base) if budget is None else budget
    out = []
    for g in kv_groups:
        w = round(budget / (base.h * base.d + 2 * g * base.d + base.h * base.d_o))
        c = base.replace(h_kv=g, d_k=w, d_v=w)
        out.append(PathPoint(c, n_params(c)))
    return out
