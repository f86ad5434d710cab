"""Readout learning on attention features, as spectral functionals.

A reconstruction (the book's appendix, :ref:`conv-learning`): only the
captions of the paper's Figures 2-3 and its Table D.3 survive, so the setup
below is ours.

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
averaged over the leading axes) or a limit :class:`~gelib.freeprob.Law`, so the
same code gives the MHA markers and the GE curves.

Parameter counts and the width-allocation paths of Table D.3 are here too,
and the readout problem on one layer (width boundaries, simulation,
crossings). The markers against their curves are in :mod:`gelib.learning_markers`,
the two chapters' figures in :mod:`gelib.plotting.learning_plots`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
import scipy.interpolate
import scipy.optimize
import scipy.stats
from numpy.typing import ArrayLike

from .config import AttentionConfig, ConfigError
from .freeprob import Law
from .keys import stream

if TYPE_CHECKING:
    from typing import TypeGuard

__all__ = [
    "Reading",
    "TABLE_D1_READING",
    "expect",
    "training_loss",
    "initial_rate",
    "coefficient_error",
    "arrival_time",
    "edge_coefficient",
    "edge_loss",
    "edge_noise",
    "loss_teacher_std",
    "error_teacher_std",
    "arrival_teacher_std",
    "seed_bar",
    "consistent_seeds",
    "n_params",
    "fixed_output_path",
    "fixed_budget_path",
    "shared_widths",
    "sharing_layers",
    "PathPoint",
    "scaled_count",
    "shrink",
    "scale_note",
    "study_note",
    "layer_table",
    "range_table",
    "on_width_boundary",
    "readout_error",
    "path_errors",
    "spread_off_boundary",
    "simulate_readout",
    "teacher_errors",
    "Crossing",
    "unit_crossings",
    "level_crossings",
    "compare_paths",
    "refined_paths",
    "error_map_grid",
]


def _is_law(mu) -> TypeGuard[Law]:
    return hasattr(mu, "integrate") and hasattr(mu, "atoms")


def expect(
    mu: ArrayLike | Law,
    phi: Callable[[np.ndarray], ArrayLike],
    phi0: ArrayLike | None = None,
    zero_tol: float = 1e-10,
) -> np.ndarray:
    """``int phi dmu`` for eigenvalues (array ``(..., n)``) or a limit law.

    ``phi`` maps an array of points (last axis) to ``(k, points)`` or
    ``(points,)``; ``phi0`` (shape ``(k,)`` or ``()``) replaces ``phi(0)`` at
    zero eigenvalues (those below ``zero_tol`` times the largest). For arrays
    the result is averaged over every axis but ``phi``'s leading one; it has
    shape ``(k,)`` or ``()``.
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


def training_loss(mu: ArrayLike | Law, t: ArrayLike) -> np.ndarray:
    """Relative training loss ``L(t) / L(0)`` (``sigma = 0``) at times ``t``.

    ``mu``: eigenvalues (``(..., n)``) or a limit law, as in :func:`expect`;
    ``t`` a number or shape ``(k,)``; the result has shape ``(k,)`` (``(1,)``
    for a number).
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    num = expect(mu, lambda x: x * np.exp(-2 * t[:, None] * x), phi0=np.zeros_like(t))
    return num / expect(mu, lambda x: x, phi0=0.0)


def initial_rate(mu: ArrayLike | Law) -> float:
    """The initial rate ``-d/dt [L(t) / L(0)]`` at ``t = 0`` of :func:`training_loss`: ``2 m_2 / m_1``.

    ``L(t) / L(0) = int x e^{-2 t x} dmu / m_1``, whose derivative at 0 is
    ``-2 m_2 / m_1``: at equal mean eigenvalue, the wider spectrum starts
    faster.  ``mu``: eigenvalues (``(..., n)``, averaged as in :func:`expect`)
    or a limit law (its exact moments)."""
    if _is_law(mu):
        m1, m2 = mu.moments(2)
    else:
        lam = np.asarray(mu, dtype=float)
        m1, m2 = float(lam.mean()), float((lam**2).mean())
    return float(2 * m2 / m1)


def coefficient_error(mu: ArrayLike | Law, t: ArrayLike, n: int, d_o: int, sigma: float = 0.0) -> np.ndarray:
    """Relative coefficient error ``E||theta(t) - theta*||^2 / E||theta*||^2`` at times ``t``.

    ``t = np.inf`` gives the end of training (the minimum-norm interpolator).
    ``mu``: eigenvalues (``(..., n)``) or a limit law, as in :func:`expect`;
    ``t`` a number or shape ``(k,)``; the result has shape ``(k,)`` (``(1,)``
    for a number).
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


def arrival_time(mu: ArrayLike | Law, epsilon: float = 0.1, t_max: float | None = None) -> float:
    """First time with ``L(t) / L(0) <= epsilon``, to relative precision 1e-10.

    ``mu``: eigenvalues (any shape, pooled) or a limit law.

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
        raise ValueError(
            f"the mean eigenvalue is {m1:g}: with every eigenvalue at 0 the loss is 0 "
            "from the start and L(t) / L(0) is undefined"
        )
    if lowest < -1e-10 * m1:
        raise ValueError(
            f"the spectrum reaches {lowest:g} < 0: not the spectrum of a Gram matrix "
            "(the loss would grow along negative eigenvalues)"
        )
    t_max = 1e12 / m1 if t_max is None else float(t_max)

    def excess(logt):
        return training_loss(mu, [math.exp(logt)])[0] - epsilon

    step, log_t_max = math.log(4.0), math.log(t_max)
    lo = hi = min(math.log(1.0 / m1), log_t_max)
    f_hi = excess(hi)
    if f_hi == 0:
        return math.exp(hi)
    if f_hi > 0:  # above epsilon at 1 / m1: later
        while f_hi > 0:
            if hi >= log_t_max:
                raise ValueError(
                    f"L(t) / L(0) is still {f_hi + epsilon:.3g} > epsilon = {epsilon:g} at t = "
                    f"{math.exp(hi):.3g} (t_max = {t_max:g}, 1 / m1 = {1 / m1:.3g}): the weight "
                    "l dmu sits on eigenvalues far below the mean"
                )
            lo, hi = hi, min(hi + step, log_t_max)
            f_hi = excess(hi)
    else:  # below epsilon at 1 / m1: earlier (L(0) = 1 > epsilon)
        lo = hi - step
        while excess(lo) <= 0:
            lo, hi = lo - step, lo
    return math.exp(scipy.optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=1e-14))


# --- the hard edge at 0: the width boundaries' asymptotics -----------------------------


def edge_coefficient(law: Law, depth: float = 1e-12) -> float:
    """``c = lim_{l -> 0} rho(l) sqrt(l)``: the hard edge at 0 of a law on a width boundary.

    On a width boundary (:func:`on_width_boundary`) the density of the law of ``Y Y^T / n`` is
    ``c l^{-1/2} (1 + O(l))`` next to 0; ``c`` is read from the density at ``depth`` times the
    right end of the support component at 0, where the ``O(l)`` term is below ``depth`` relative.
    Raises :class:`ValueError` for a law whose support does not reach 0 (no hard edge).
    """
    lo, hi = law.edges()[0]
    if lo > 0:
        raise ValueError(f"the support starts at {lo:g} > 0: no hard edge at 0")
    x = depth * hi
    return float(law.density(np.array([x]))[0]) * math.sqrt(x)


def edge_loss(law: Law, t: ArrayLike) -> np.ndarray:
    """The relative training loss at large ``t`` on a hard edge: ``c sqrt(pi) / (2 m_1 (2t)^{3/2})``.

    From ``L(t) / L(0) = int l e^{-2tl} dmu / m_1`` with ``rho(l) = c l^{-1/2}`` near 0
    (:func:`edge_coefficient`): ``(c / m_1) int_0^inf l^{1/2} e^{-2tl} dl``. The relative
    error against :func:`training_loss` is ``O(1 / t)`` (the next term of the density).
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    return edge_coefficient(law) * math.sqrt(math.pi) / (2 * law.moments(1)[0] * (2 * t) ** 1.5)


def edge_noise(law: Law, t: ArrayLike, sigma: float) -> np.ndarray:
    """The coefficient error's noise term at large ``t`` on a hard edge: ``2 sqrt(pi) (2 - sqrt 2) c sigma^2 sqrt(t)``.

    From ``sigma^2 int (1 - e^{-tl})^2 / l dmu`` with ``rho(l) = c l^{-1/2}`` near 0
    (:func:`edge_coefficient`; substitute ``u = tl`` and integrate by parts once). The rest of
    the spectrum adds a bounded amount, so the relative error against :func:`coefficient_error`'s
    noise term is ``O(t^{-1/2})``.
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    return 2 * math.sqrt(math.pi) * (2 - math.sqrt(2)) * edge_coefficient(law) * sigma**2 * np.sqrt(t)


# --- one teacher per seed: the spread of a single draw --------------------------------


def loss_teacher_std(mu: ArrayLike | Law, t: ArrayLike, n: int) -> np.ndarray:
    """The relative spread of one teacher's relative training loss, over the teacher (``sigma = 0``).

    For one teacher ``theta*`` the relative loss is ``A / B`` with ``A = sum_i l_i e^{-2 t l_i} z_i^2``
    and ``B = sum_i l_i z_i^2`` over the ``n`` eigenvalues ``l_i`` of ``Y Y^T / n``, ``z_i`` i.i.d.
    standard normal (``sqrt(d_o)`` times the teacher's coordinates in the eigenbasis of
    ``H = Y^T Y / n``, whose nonzero eigenvalues are ``G``'s). To leading order in ``1 / n``
    (the delta method) its standard deviation over the teacher, relative to its mean, is
    ``sqrt((2 / n) (I[a^2] / I[a]^2 + I[b^2] / I[b]^2 - 2 I[ab] / (I[a] I[b])))`` with
    ``a = l e^{-2tl}``, ``b = l`` and ``I`` the integral against the law ``mu`` (:func:`expect`):
    ``O(n^{-1/2})``, where the spread over softmax layers of a functional smooth on the bulk of
    the spectrum is ``O(1 / n)``. ``mu``, ``t`` and the shape of the result as in :func:`training_loss`.
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))

    def phi(x):
        a = x * np.exp(-2 * t[:, None] * x)
        return np.stack([a, a * a, a * x, np.broadcast_to(x, a.shape), np.broadcast_to(x * x, a.shape)])

    ia, iaa, iab, ib, ibb = expect(mu, phi, phi0=np.zeros((5, t.size)))
    return np.sqrt(2 / n * np.maximum(iaa / ia**2 + ibb / ib**2 - 2 * iab / (ia * ib), 0.0))


def error_teacher_std(mu: ArrayLike | Law, t: float, n: int, d_o: int, sigma: float = 0.0) -> float:
    """The standard deviation of one draw's coefficient error ``||theta(t) - theta*||^2``, exactly.

    Over one teacher ``theta* ~ N(0, I / d_o)`` and one noise draw, on the features whose
    ``Y Y^T / n`` has the law (or eigenvalues) ``mu``; normalised as :func:`coefficient_error`
    (``E ||theta*||^2 = 1``). In the eigenbasis of ``H = Y^T Y / n`` the ``d_o`` coordinates of
    ``theta(t) - theta*`` are independent centred normals of variances
    ``v(l) = e^{-2tl} / d_o + sigma^2 (1 - e^{-tl})^2 / (n l)`` (``1 / d_o`` at ``l = 0``), so the
    error is ``sum_j v_j chi^2_1`` with mean :func:`coefficient_error` and variance
    ``2 sum_j v_j^2 = 2 (n I[v^2] + (d_o - n) / d_o^2)`` (``I``: the integral against ``mu``; the
    last term counts the zeros of ``H`` beyond ``G``'s, as in :func:`coefficient_error`).
    """
    t = float(t)

    def v(x):
        decay = np.exp(-2 * t * x) if math.isfinite(t) else np.zeros_like(x)
        gain = -np.expm1(-t * x) if math.isfinite(t) else np.ones_like(x)
        return decay / d_o + sigma**2 * gain**2 / (n * x)

    iv2 = float(expect(mu, lambda x: v(x) ** 2, phi0=1.0 / d_o**2))
    return math.sqrt(2 * max(n * iv2 + (d_o - n) / d_o**2, 0.0))


def arrival_teacher_std(mu: ArrayLike | Law, epsilon: float, n: int) -> float:
    """The relative spread of one teacher's arrival time, to leading order in ``1 / n``.

    A teacher moves its loss curve by ``delta R`` (:func:`loss_teacher_std`); at the arrival
    time ``t_eps`` (:func:`arrival_time`) this moves the crossing by ``delta R / |R'(t_eps)|``,
    with ``R'(t) = -2 I[l^2 e^{-2tl}] / I[l]`` exactly. Returns that standard deviation over
    ``t_eps``.
    """
    t = arrival_time(mu, epsilon)
    slope = 2 * float(expect(mu, lambda x: x * x * np.exp(-2 * t * x), phi0=0.0)) / float(expect(mu, lambda x: x, 0.0))
    return float(loss_teacher_std(mu, t, n)[0]) * epsilon / (slope * t)


def seed_bar(relative_std: float, seeds: int, level: float = 0.95) -> tuple[float, float, float]:
    """The Student-t half-width (``level``, 95 %) of a mean over ``seeds`` draws of spread ``relative_std``.

    Returns ``(half, lo, hi)``: ``half = t_{(1 + level) / 2, seeds - 1} relative_std / sqrt(seeds)``,
    the half-width at the true spread, and the range in which the half-width computed from the
    draws' sample standard deviation falls with probability ``level`` (normal draws: the sample
    variance is ``relative_std^2 chi^2_{seeds-1} / (seeds - 1)``).
    """
    if seeds < 2:
        raise ValueError(f"an interval over seeds needs at least 2 seeds, got {seeds}")
    k = seeds - 1
    half = float(scipy.stats.t.ppf((1 + level) / 2, k)) * relative_std / math.sqrt(seeds)
    lo, hi = (math.sqrt(float(scipy.stats.chi2.ppf(q, k)) / k) for q in ((1 - level) / 2, (1 + level) / 2))
    return half, half * lo, half * hi


def consistent_seeds(relative_bar: float, relative_stds: Iterable[float], max_seeds: int = 20) -> list[int]:
    """The seed counts ``2 .. max_seeds`` at which a bar of ``relative_bar`` is a likely draw.

    A count is listed when ``relative_bar`` lies inside the 95 % range of :func:`seed_bar` for at
    least one of ``relative_stds`` (the spread at each candidate point of a panel).
    """
    stds = list(relative_stds)
    return [
        s
        for s in range(2, max_seeds + 1)
        if any(lo <= relative_bar <= hi for _, lo, hi in (seed_bar(sd, s) for sd in stds))
    ]


# --- the reading of the paper's Table D.1 -----------------------------------------------


@dataclasses.dataclass(frozen=True)
class Reading:
    """How the learning figures read their curves: one set of choices for every panel.

    ``epsilon``: the arrival time is the first ``t`` with ``L(t) / L(0) <= epsilon``
    (noiseless relative loss, :func:`arrival_time`); ``sigma``: the label noise of the
    coefficient error; ``horizon``: the time at which the coefficient error is read
    (:func:`coefficient_error` at ``t = horizon``).
    """

    epsilon: float
    sigma: float
    horizon: float


#: The reading of the paper's Table D.1 (:data:`gelib.presets.TABLE_D1`) at Table D.3's
#: dimensions, with the book's features, loss and time unit (``G = Y Y^T / n``, gradient flow
#: on ``(1/2n) ||Y theta - y||^2`` at rate 1, ``theta* ~ N(0, I / d_O)``). Two numbers are
#: fitted, one per row, and two are conventions (the book's appendix, :ref:`what Table D.1 fixes <conv-table-d1>`):
#:
#: * ``epsilon = 1e-4``, fitted to Figure 3(a): its unshared layer lies on the width boundary
#:   ``h d_V = n``, the law has a hard edge at 0, the loss falls like ``t^{-3/2}`` and the
#:   arrival time grows like ``epsilon^{-2/3}``; at the edge a learning rate ``eta`` acts as
#:   the threshold ``epsilon eta^{-3/2}``, so the time unit is a convention;
#: * ``sigma^2 sqrt(horizon)``, fitted to Figure 3(b): its layers lie on the boundary
#:   ``h d_V = d_O``, the end-of-training error is infinite and the noise term grows like
#:   ``sigma^2 sqrt(t)``, so only that product is identified;
#: * ``horizon = 1e4``, a convention, bounded below: at it Figure 2(d)'s ratio takes Table D.1's
#:   value at two ``beta`` of :data:`gelib.figure_data.D2_BETA_RANGE` (:func:`gelib.figure_data.d2_roots`);
#:   the smallest horizon at which it still does is not computed.
TABLE_D1_READING = Reading(epsilon=1e-4, sigma=0.25, horizon=1e4)


# --- parameter counts and width allocation (Table D.3) ------------------------------


def n_params(cfg: AttentionConfig) -> int:
    """Attention parameters ``N_par = h d d_K + h_KV d (d_K + d_V) + h d_V d_O``.

    With K=V tying the keys and values share ``h_KV d d_K`` weights.
    """
    kv = cfg.h_kv * cfg.d * (cfg.d_k if cfg.tie_kv else cfg.d_k + cfg.d_v)
    return cfg.h * cfg.d * cfg.d_k + kv + cfg.h * cfg.d_v * cfg.d_o


@dataclasses.dataclass(frozen=True)
class PathPoint:
    """One layer of a width-allocation path and its parameter count ``N_par`` (:func:`n_params`)."""

    cfg: AttentionConfig
    n_params: int


def fixed_output_path(base: AttentionConfig, heads: Iterable[int]) -> list[PathPoint]:
    """Figure 2(c), fixed output: ``h`` varies, widths and ``d_O`` fixed."""
    return [PathPoint(c, n_params(c)) for c in (base.replace(h=h, h_kv=h) for h in heads)]


def fixed_budget_path(base: AttentionConfig, heads: Iterable[int], budget: int | None = None) -> list[PathPoint]:
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


def shared_widths(base: AttentionConfig, kv_groups: Iterable[int], budget: int | None = None) -> list[PathPoint]:
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


def sharing_layers(base: AttentionConfig) -> tuple[list[AttentionConfig], list[AttentionConfig]]:
    """Figure 3(a)'s two curves from the unshared layer ``base``: ``h_KV = h, h/2, ..., 1`` (``h`` a power of two).

    Returns the layers at fixed widths (``base`` with ``h_kv`` replaced) and those at fixed
    ``N_par``, whose heads widen as sharing frees parameters (:func:`~gelib.learning.shared_widths`).
    """
    groups = [base.h // 2**k for k in range(int(math.log2(base.h)) + 1)]
    return [base.replace(h_kv=g) for g in groups], [p.cfg for p in shared_widths(base, groups)]


# --- scaled layers and tables ---------------------------------------------------------


def scaled_count(value: int, s: float, minimum: int = 1) -> int:
    """``value * s`` as an integer: a head count of Table D.3 at the shrink factor ``s``.

    Raises :class:`ValueError` when ``value * s`` is not an integer (to
    ``1e-9``) or is below ``minimum``: the dimensions of Table D.3 scale
    only by powers of two.
    """
    v = value * s
    if v < minimum or abs(v - round(v)) > 1e-9:
        raise ValueError(f"{value} x {s:g} = {v:g} is not an integer >= {minimum}: use n = 4096 / 2^k for a small k")
    return round(v)


def shrink(cfg: AttentionConfig, s: float) -> AttentionConfig:
    """A layer of Table D.3 shrunk by ``s``: ``n``, ``d``, ``d_O``, ``h`` and ``h_KV`` times ``s``, head widths kept.

    Each product must be an integer (:func:`scaled_count`; ``h_KV`` at least
    1), so ``s`` is a power of two for the table's dimensions; ``s = 1``
    returns ``cfg``. This is how the learning chapters shrink the simulated
    layers on a CPU: ``h d_V / n``, ``d_O / n`` and ``d / n`` are kept, ``d_K / n``
    grows by ``1 / s``, so the limit law changes (:func:`gelib.learning_markers.law_parameters`).

    >>> shrink(AttentionConfig(n=4096, d=4096, h=64, d_k=64, d_o=8192), 1 / 16).describe()
    'n=256, d=256, h/h_kv=4/4 (none), d_k=64, d_v=64, d_o=512, beta=1'
    """
    if s == 1:
        return cfg
    n, d, d_o, h, h_kv = (scaled_count(v, s) for v in (cfg.n, cfg.d, cfg.d_o, cfg.h, cfg.h_kv))
    return cfg.replace(n=n, d=d, d_o=d_o, h=h, h_kv=h_kv)


def scale_note(scale: str, n: int, n_paper: int = 4096, markers: bool = True, dashed: bool = True) -> str:
    """The figure subtitle: curves at Table D.3's dimensions, markers at the scale's ``n`` (``n_paper`` there).

    ``n`` is the markers' own context length and ``n_paper`` that of the figure's Table D.3 row (8192 for
    Figure 2(d)); ``dashed``: the figure draws the limit law at the markers' own dimensions, dashed, beside
    them (``False`` where the markers share the curves' limit law, as in Figure 3(b)); ``markers=False``:
    for a figure drawn at Table D.3's dimensions only, with no markers and no curve of the shrunk layers
    (the map of Figure 2(b)).

    >>> scale_note("ci", 256)
    'scale ci: curves at Table D.3, markers (and dashed) at n = 256, Table D.3 × 1/16'
    >>> scale_note("ci", 512, n_paper=8192)
    'scale ci: curves at Table D.3, markers (and dashed) at n = 512, Table D.3 × 1/16'
    >>> scale_note("ci", 256, dashed=False)
    'scale ci: curves at Table D.3, markers at n = 256, Table D.3 × 1/16'
    >>> scale_note("paper", 4096)
    'scale paper: curves and markers at Table D.3 (n = 4096)'
    >>> scale_note("ci", 256, markers=False)
    'scale ci: at Table D.3 (n = 4096), no markers'
    """
    if not markers:
        return f"scale {scale}: at Table D.3 (n = {n_paper}), no markers"
    s = n / n_paper
    if s == 1:
        return f"scale {scale}: curves and markers at Table D.3 (n = {n})"
    what = "markers (and dashed)" if dashed else "markers"
    return f"scale {scale}: curves at Table D.3, {what} at n = {n}, Table D.3 × {_factor(s)}"


def _factor(s: float) -> str:
    """``0.125 -> '1/8'``, ``2 -> '2'``: a scale factor as the subtitles write it."""
    return f"{s:g}" if s >= 1 else f"1/{1 / s:g}"


def study_note(scale: str, ns: Sequence[int], s: float) -> str:
    """The subtitle of a study at several sizes with fixed ratios (no curves): the markers' ``ns`` and the
    factor ``s`` by which their layers' head counts shrink Table D.3's (:func:`shrink`), whose ratios they keep.

    >>> study_note("ci", (128, 256, 512), 1 / 8)
    'scale ci: no curves; markers at n = 128, 256, 512, the ratios of Table D.3 × 1/8'
    """
    return f"scale {scale}: no curves; markers at n = {', '.join(map(str, ns))}, the ratios of Table D.3 × {_factor(s)}"


def layer_table(groups: dict[str, Sequence[AttentionConfig]]) -> str:
    """A Markdown table with one row per layer: ``h``, ``h_KV``, ``d_K = d_V``, tying, ``d_O``, ``N_par``.

    ``groups`` maps a row label to its layers (shown in order); the layers
    are assumed to have ``d_V = d_K``.
    """
    rows = ["| layer | $h$ | $h_{KV}$ | $d_K = d_V$ | tied | $d_O$ | $N_{\\rm par}$ |", "|---|---|---|---|---|---|---|"]
    for name, cfgs in groups.items():
        for c in cfgs:
            rows.append(
                f"| {name} | {c.h} | {c.h_kv} | {c.d_k} | {'yes' if c.tie_kv else 'no'} | {c.d_o} | {n_params(c):,} |"
            )
    return "\n".join(rows)


def range_table(groups: dict[str, Sequence[AttentionConfig]]) -> str:
    """A Markdown table with one row per group of layers: the range of each dimension.

    Columns ``n``, ``d`` (of the first layer), then ``h``, ``d_K``, ``d_V``,
    ``h d_V / n``, ``d_O / n`` and ``N_par`` from the first to the last layer
    of the group (one value when they agree).
    """

    def span(a, b, f="{}"):
        return f.format(a) if a == b else f"{f.format(a)}-{f.format(b)}"

    rows = [
        "| panel | $n$ | $d$ | $h$ | $d_K$ | $d_V$ | $h d_V / n$ | $d_O / n$ | $N_{\\rm par}$ |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, cfgs in groups.items():
        c0, c1 = cfgs[0], cfgs[-1]
        rows.append(
            f"| {name} | {c0.n} | {c0.d} | {span(c0.h, c1.h)} | {span(c0.d_k, c1.d_k)} | "
            f"{span(c0.d_v, c1.d_v)} | {span(c0.h * c0.d_v / c0.n, c1.h * c1.d_v / c1.n, '{:.3g}')} | "
            f"{span(c0.d_o / c0.n, c1.d_o / c1.n, '{:.3g}')} | "
            f"{span(n_params(c0), n_params(c1), '{:.3g}')} |"
        )
    return "\n".join(rows)


# --- the readout problem on one layer: width boundaries, simulation, crossings --------


def on_width_boundary(cfg: AttentionConfig) -> bool:
    """Whether the two smallest of ``n``, ``d_O`` and ``h d_V`` coincide.

    Then the rank of ``Y`` is that common width in two ways, the law of
    ``Y Y^T / n`` has a hard edge at 0 and the end-of-training noise term
    ``sigma^2 int lambda^{-1} dmu`` is infinite (double descent); these are
    Figure 2's *width boundaries* (``d_V < n`` assumed, as in Table D.3).
    """
    a, b, _ = sorted((cfg.n, cfg.d_o, cfg.h * cfg.d_v))
    return a == b


def readout_error(mu: ArrayLike | Law, cfg: AttentionConfig, t: float, sigma: float) -> float:
    """The coefficient error :func:`coefficient_error` of ``cfg``'s readout at one time ``t``.

    ``mu``: the limit law of ``cfg`` or sampled eigenvalues of its ``Y Y^T / n``
    (``(..., n)``).
    At ``t = inf`` (end of training) on a width boundary
    (:func:`on_width_boundary`) the limit is infinite and ``inf`` is returned
    without evaluating ``mu``.
    """
    if math.isinf(t) and on_width_boundary(cfg):
        return math.inf
    return float(coefficient_error(mu, t, cfg.n, cfg.d_o, sigma)[0])


def path_errors(points: Sequence[PathPoint], laws: Callable[[AttentionConfig], Law], t: float, sigma: float) -> dict:
    """The GE coefficient error along a path, read at the time ``t`` with label noise ``sigma``.

    Returns ``h`` and ``d_o`` (arrays along the path), ``error``: :func:`readout_error`
    at ``t`` on ``laws(cfg)`` (shape ``(k,)``), and ``bounds``: the head counts on a width
    boundary (:func:`on_width_boundary`).
    """
    cfgs = [p.cfg for p in points]
    return dict(
        h=np.array([c.h for c in cfgs]),
        d_o=np.array([c.d_o for c in cfgs]),
        error=np.array([readout_error(laws(c), c, t, sigma) for c in cfgs]),
        bounds=[c.h for c in cfgs if on_width_boundary(c)],
    )


def level_crossings(x: ArrayLike, values: ArrayLike, level: float) -> list[tuple[float, float]]:
    """The neighbouring points of a sampled curve between which it crosses ``level``.

    ``x`` (increasing) and ``values`` have shape ``(k,)``; ``inf`` counts as above any level.
    Returns ``(x[i], x[i + 1])`` for every ``i`` where one value is at least ``level`` and the
    other below it, in order: on a path of head counts evaluated at every ``h`` around the
    crossing (:func:`refined_paths` with ``levels``), the two head counts it falls between.
    """
    x, above = np.asarray(x), np.asarray(values, dtype=float) >= level
    return [(x[i].item(), x[i + 1].item()) for i in np.flatnonzero(above[1:] != above[:-1])]


def spread_off_boundary(points: Sequence[PathPoint], k: int) -> list[PathPoint]:
    """Up to ``k`` points spread evenly along a path, none on a width boundary.

    The points off the boundaries keep their order; the last one is always
    taken (``k = 1`` gives it alone), the first one when ``k >= 2``.
    """
    ok = [p for p in points if not on_width_boundary(p.cfg)]
    idx = np.unique(np.round(np.linspace(len(ok) - 1, 0, k)).astype(int))  # k = 1: the last point
    return [ok[i] for i in idx]


def simulate_readout(
    y: ArrayLike, theta_star: np.ndarray, noise: np.ndarray, sigma: float, t: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient flow on ``(1/2n) ||Y theta - y||^2`` from ``theta = 0``, solved exactly.

    ``y`` is the feature matrix (``(n, d_o)``), ``theta_star`` ``(reps, d_o)``
    teachers and ``noise`` ``(reps, n)``; the targets of row ``r`` are
    ``Y theta*_r + sigma noise_r``. In the eigenbasis ``(lambda, u)`` of
    ``H = Y^T Y / n``, ``theta(t) = u (1 - e^{-t lambda}) / lambda u^T Y^T y / n``
    (the factor is ``t`` at ``lambda = 0``; at ``t = inf`` it is ``1 / lambda``,
    and 0 at ``lambda = 0``: the minimum-norm least-squares fit). Eigenvalues
    below ``1e-10`` of the largest count as 0. Returns the losses at ``t`` and
    the squared coefficient errors ``||theta(t) - theta*||^2``, one per row
    (shape ``(reps,)`` each).
    """
    y = np.asarray(y, dtype=float)
    n = y.shape[0]
    lam, vecs = np.linalg.eigh(y.T @ y / n)
    targets = theta_star @ y.T + sigma * noise
    b = (targets @ y / n) @ vecs
    pos = lam > 1e-10 * lam.max()
    safe = np.where(pos, lam, 1.0)
    if math.isinf(t):
        gain = np.where(pos, 1.0 / safe, 0.0)
    else:
        gain = np.where(pos, -np.expm1(-t * lam) / safe, t)
    theta = (gain * b) @ vecs.T
    loss = np.sum((theta @ y.T - targets) ** 2, axis=1) / (2 * n)
    return loss, np.sum((theta - theta_star) ** 2, axis=1)


def teacher_errors(key: jax.Array, y: ArrayLike, t: float, sigma: float, reps: int) -> np.ndarray:
    """Squared coefficient errors of ``reps`` random teachers on the features ``y`` (``n x d_o``), ``(reps,)``.

    Teachers ``theta* ~ N(0, I / d_o)`` (so ``E ||theta*||^2 = 1``) and
    noise ``eps ~ N(0, I_n)`` are drawn from the streams ``"teacher"`` and
    ``"noise"`` of ``key`` (:func:`gelib.keys.stream`);
    :func:`simulate_readout` trains each readout to time ``t``. Their mean
    estimates :func:`coefficient_error` on the eigenvalues of ``Y Y^T / n``.
    """
    n, d_o = np.shape(y)
    theta_star = np.asarray(jax.random.normal(stream(key, "teacher"), (reps, d_o), jnp.float64)) / math.sqrt(d_o)
    noise = np.asarray(jax.random.normal(stream(key, "noise"), (reps, n), jnp.float64))
    return simulate_readout(y, theta_star, noise, sigma, t)[1]


@dataclasses.dataclass(frozen=True)
class Crossing:
    """A point ``x`` where a curve crosses 1, and ``f(x) - 1`` of the exact curve (``None`` if not polished)."""

    x: float
    residual: float | None


def unit_crossings(
    grid: ArrayLike,
    values: ArrayLike,
    exact: Callable[[float], float] | None = None,
    touch: float = 1e-3,
    xtol: float = 1e-7,
    level: float = 1.0,
) -> list[Crossing]:
    """Every point where a positive curve sampled on ``grid`` crosses ``level`` (1 by default).

    ``grid`` (increasing) and ``values`` have shape ``(k,)``.

    Between neighbouring grid points where ``log(values / level)`` changes sign
    (points with ``|log(value / level)| < touch``, where the curve merely touches
    the level, are skipped), the root of a cubic spline of ``log(values / level)``
    through the grid (Brent's method); if ``exact`` (the curve itself) is given, the
    root is then polished by the secant method on ``log(exact(x) / level)`` to ``xtol``
    and its residual ``exact(x) - level`` recorded.
    """
    grid = np.asarray(grid, dtype=float)
    logr = np.log(np.asarray(values, dtype=float) / level)
    spline = scipy.interpolate.CubicSpline(grid, logr)
    live = np.flatnonzero(np.abs(logr) > touch)
    out = []
    for i, j in zip(live[:-1], live[1:]):
        if np.sign(logr[i]) == np.sign(logr[j]):
            continue
        x = scipy.optimize.brentq(spline, grid[i], grid[j])
        if exact is None:
            out.append(Crossing(float(x), None))
            continue
        x = scipy.optimize.root_scalar(
            lambda u: math.log(exact(u) / level), x0=x, x1=x + 0.01, method="secant", xtol=xtol
        ).root
        out.append(Crossing(float(x), float(exact(x) - level)))
    return out


def compare_paths(h_fo: ArrayLike, err_fo: ArrayLike, h_fb: ArrayLike, err_fb: ArrayLike, d_o_fb: ArrayLike) -> dict:
    """Where the fixed-budget path has the lower error than the fixed-output path (Figure 2(c)).

    ``h_*``: head counts of each path, ``err_*`` its errors (``inf`` allowed:
    an infinite error loses to any finite one), ``d_o_fb`` the output widths
    of the fixed-budget path (``h_fo`` and ``err_fo`` of shape ``(k_fo,)``,
    ``h_fb``, ``err_fb`` and ``d_o_fb`` of shape ``(k_fb,)``). At their common
    head counts, returns

    * ``tail``: the smallest ``h`` from which the fixed-budget path wins at
      every common head count (``None`` if it loses at the last one);
      ``tail_do``: its ``d_O`` there;
    * ``local``: the head counts below ``tail`` where it wins anyway,
      ``nlocal``, their number, and ``local_lo``, ``local_hi`` the first and
      the last of them (``None`` if there are none);
    * ``best_fo``, ``best_fb``: the head count of each path's smallest finite
      error, ``min_fo``, ``min_fb`` those errors.
    """
    h_fo, err_fo, h_fb, err_fb, d_o_fb = map(np.asarray, (h_fo, err_fo, h_fb, err_fb, d_o_fb))
    common = np.intersect1d(h_fo, h_fb)
    a = np.array([err_fo[h_fo == h][0] for h in common])
    b = np.array([err_fb[h_fb == h][0] for h in common])
    loses = ~(np.isfinite(b) & (b < a))
    if not loses.any():
        tail = int(common[0])
    elif loses[-1]:
        tail = None
    else:
        tail = int(common[np.flatnonzero(loses)[-1] + 1])

    local = [int(h) for h in common[~loses] if tail is None or h < tail]

    def finite(v):
        return np.where(np.isfinite(v), v, np.nan)

    return dict(
        tail=tail,
        tail_do=int(d_o_fb[h_fb == tail][0]) if tail is not None else None,
        local=local,
        nlocal=len(local),
        local_lo=min(local, default=None),
        local_hi=max(local, default=None),
        best_fo=int(h_fo[np.nanargmin(finite(err_fo))]),
        best_fb=int(h_fb[np.nanargmin(finite(err_fb))]),
        min_fo=float(np.nanmin(finite(err_fo))),
        min_fb=float(np.nanmin(finite(err_fb))),
    )


def refined_paths(
    make: dict[str, Callable[[Sequence[int]], Sequence[PathPoint]]],
    heads: dict[str, Sequence[int]],
    laws: Callable[[AttentionConfig], Law],
    t: float,
    sigma: float,
    step: int,
    levels: Sequence[float] = (),
) -> tuple[dict, dict]:
    """The errors along two paths on a grid of head counts, refined where the findings are.

    ``make[name](hs)`` gives the path's points at the head counts ``hs``
    (e.g. ``functools.partial(fixed_output_path, base)``), ``heads[name]`` all
    its head counts (increasing, consecutive); the two names, in order, are
    the fixed-output and the fixed-budget path of :func:`compare_paths`.
    The errors (:func:`path_errors` at time ``t``, noise ``sigma``) are evaluated
    every ``step`` head counts (counted from the smaller first head count; each
    path's ends too), then at every head count within ``step`` of a path's smallest
    error, between neighbouring common grid points where the winner changes, and
    between neighbouring grid points of a path where its error crosses one of
    ``levels`` (:func:`level_crossings`). So the findings of :func:`compare_paths`
    (the best head counts, ``tail``, ``local_lo``, ``local_hi``) and the crossings of
    ``levels`` are those of the full paths (``step = 1``) unless a change of winner,
    a deeper minimum or a crossing and its return lie entirely between two grid
    points. Returns ``(curves, findings)``: ``curves[name]`` as :func:`path_errors`
    on the head counts evaluated, ``findings`` as :func:`compare_paths`.
    """
    (a, b) = names = list(make)
    full = {k: np.asarray(heads[k]) for k in names}
    h0 = min(full[k][0] for k in names)  # one grid for both paths, so that they share its points
    grid = {k: np.unique(np.r_[full[k][(full[k] - h0) % step == 0], full[k][[0, -1]]]) for k in names}
    curves = {k: path_errors(make[k](grid[k].tolist()), laws, t, sigma) for k in names}
    extra: dict[str, set[int]] = {k: set() for k in names}
    for k in names:
        err = curves[k]["error"]
        best = curves[k]["h"][np.nanargmin(np.where(np.isfinite(err), err, np.nan))]
        extra[k].update(range(best - step + 1, best + step))  # around the path's smallest error
        for level in levels:  # between grid points where the path crosses a level
            for lo, hi in level_crossings(curves[k]["h"], err, level):
                extra[k].update(range(int(lo) + 1, int(hi)))
    common = np.intersect1d(curves[a]["h"], curves[b]["h"])
    ea, eb = ([curves[k]["error"][curves[k]["h"] == h][0] for h in common] for k in names)
    wins = np.isfinite(eb) & (np.asarray(eb) < np.asarray(ea))  # as in compare_paths
    for i in np.flatnonzero(np.diff(wins)):  # between grid points where the winner changes
        for k in names:
            extra[k].update(range(common[i] + 1, common[i + 1]))
    out = {}
    for k in names:
        hs = np.union1d(grid[k], [h for h in extra[k] if full[k][0] <= h <= full[k][-1]]).astype(int)
        new = [int(h) for h in hs if h not in grid[k]]
        more = path_errors(make[k](new), laws, t, sigma) if new else None
        merged = {}
        for field in ("h", "d_o", "error"):
            v = np.r_[curves[k][field], more[field]] if more else curves[k][field]
            merged[field] = v[np.argsort(np.r_[grid[k], new])]
        merged["bounds"] = sorted(curves[k]["bounds"] + (more["bounds"] if more else []))
        out[k] = merged
    return out, compare_paths(out[a]["h"], out[a]["error"], out[b]["h"], out[b]["error"], out[b]["d_o"])


def error_map_grid(
    n: int,
    h_lo: int,
    h_hi: float,
    h_step: int,
    log2_step: float,
    d_v: int = 64,
    log2_range: tuple[float, float] = (-2.75, 3.5),
) -> tuple[np.ndarray, np.ndarray]:
    """The head counts and output widths of the coefficient-error map (Figure 2(b)).

    Head counts from ``h_lo`` to ``h_hi`` every ``h_step``, placed so that
    ``h = n / d_v`` (the boundary ``h d_V = n``) is a column; output widths
    ``d_O = n 2^{k log2_step}`` (rounded) for the integers ``k`` with
    ``k log2_step`` in ``log2_range``, so that ``d_O = n`` is a row.
    Returns ``(h, d_O)``, 1-D integer arrays.
    """
    h_edge = n // d_v
    hs = np.r_[np.arange(h_edge, h_lo - 1, -h_step)[::-1], np.arange(h_edge + h_step, h_hi + 1, h_step)]
    hs = hs[hs >= 1].astype(int)
    lo, hi = log2_range
    exps = np.arange(math.ceil(lo / log2_step), math.floor(hi / log2_step) + 1)
    return hs, np.round(n * 2.0 ** (exps * log2_step)).astype(int)
