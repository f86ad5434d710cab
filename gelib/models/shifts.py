"""First-moment shifts along the chain of Table 1, in closed form (leading order).

The mean eigenvalue of ``Y Y^T / n`` is, after averaging over ``V`` and
``W^O`` (independent of the attention in an untied layer), ``d_O / n`` times
the mean energy ``E |row|^2`` of one row of the attention part, the same
factor for every model of the chain. Each model's row energy is explicit.
Given the query ``q``, the scores ``s_j = q . k_j / sqrt(d_K)`` are i.i.d.
``N(0, sigma^2)`` with ``sigma^2 = |q|^2 / d_K = 1 + t``, ``t ~ chi^2_{d_K} /
d_K - 1``. Write ``f(x) = exp(beta x - beta^2/2) - 1``, ``u = e^{beta^2}``,
``e_1 = u - 1``, and ``E e^{c t} = 1 + c^2 / d_K + O(d_K^-2)``:

* ``Y^G[Sigma_G]`` and ``Y^G``: exactly ``e_1 = beta^2 + alpha^2``;
* ``Y-ring^f`` and ``Y^G[Sigma_f]`` (same row covariance): ``E_k Var_q(f | k)``, the variance over
  the query given the key (centring subtracts the mean over the query, ``1 m^T``); ``s_j`` given
  ``k_j`` is ``N(0, |k_j|^2 / d_K)``, the same law with the key's norm in place of the query's, so
  ``E_k Var_q(f | k) = E[e^{beta^2 (1 + 2t)} - e^{beta^2 t}] = e_1 + beta^4 (4u - 1) / d_K``;
* ``Y^f``: ``E f^2 = E[e^{beta^2 (1 + 2t)} - 2 e^{beta^2 t / 2} + 1]
  = e_1 + beta^4 (4u - 1/2) / d_K``;
* ``sqrt(n) A^perp`` (MHA): its row is ``(f_j - fbar) / (1 + fbar) / sqrt(n)``
  (``fbar`` the row mean of ``f``, the softmax denominator's fluctuation), whose
  energy by the delta method is ``e^{beta^2 (1 + t)} - 1`` as ``n -> oo``,
  ``e_1 + u beta^4 / d_K`` on average, plus ``-u (2u - 1) e_1 / n`` from
  ``E[fbar^2]``, ``E[f_j^2 fbar] = E f^3 / n`` and ``E[f_j^2 fbar^2]`` (at
  ``sigma = 1``: ``E f^2 = e_1``, ``E f^3 = u^3 - 3u + 2``).

:func:`~gelib.models.step_shifts` gives the relative shift of each step, earlier model over
later model minus one; they add up to :func:`gelib.spectra.mean_shift`, the
shift from MHA to ``Y^G``. Only the denominator replacement has a ``1/n``
term; the Gaussian-rows and query-substitution steps have none at all (their
row covariances are equal). The neglected orders are ``d_K^-2``, ``n^-2`` and
``(n d_K)^-1``. The whole chain's shift is available exactly, at finite ``n`` and
``d_K`` (:func:`~gelib.models.mha_shift_exact`), and so are two steps:
:func:`~gelib.models.denominator_shift_exact` (one-dimensional integrals of
Laplace transforms of the log-normal row terms) and
:func:`~gelib.models.centering_shift_exact` (closed form by the chi-square moment
generating function); :func:`~gelib.models.centering_log_norm` is the mean logarithm of
the norm that centering subtracts, which a fitted slope sees.
"""

from __future__ import annotations

import math

from .predictions import key_norm_mgf as _chi2_mgf  # E e^{c t}, t = chi^2_{d_K} / d_K - 1
from .predictions import sigma_mean_ratio

__all__ = [
    "STEPS",
    "denominator_shift",
    "step_shifts",
    "denominator_shift_exact",
    "mha_shift_exact",
    "centering_shift_exact",
    "step_shifts_exact",
    "centering_log_norm",
]

#: The steps of Table 1, in order, as ``(name, earlier model, later model)`` (model names of :mod:`gelib.models`).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("denominator", "mha", "yf"),
    ("centering", "yf", "yf_ring"),
    ("gaussian_rows", "yf_ring", "yg_sigma_f"),
    ("covariance", "yg_sigma_f", "yg_sigma_g"),
    ("query_substitution", "yg_sigma_g", "yg"),
)


def denominator_shift(n: float, d_k: float, beta: float = 1.0) -> float:
    """Leading-order relative shift of the mean eigenvalue from ``Y^f`` to ``sqrt(n) A^perp``.

    ``E m_MHA / E m_f - 1 = -beta^4 (3u - 1/2) / (e_1 d_K) - u (2u - 1) / n``,
    ``u = e^{beta^2}``, ``e_1 = u - 1``: about ``-(4.45 / d_K + 12.1 / n)`` at
    ``beta = 1``. The softmax denominator divides each row by ``1 + fbar``,
    which is correlated with the row's energy (through ``E f^3``, and through
    the query's norm): rows of large energy are shrunk most. Derivation in the
    module docstring; remainder ``O(d_K^-2 + n^-2 + (n d_K)^-1)``.
    """
    u = math.exp(beta**2)
    return beta**4 * (0.5 - 3 * u) / ((u - 1) * d_k) - u * (2 * u - 1) / n


def step_shifts(n: float, d_k: float, beta: float = 1.0) -> dict[str, float]:
    """Leading-order relative shift of the mean eigenvalue at each step of :data:`~gelib.models.shifts.STEPS`
    (earlier model over later model, minus one), for an untied layer.

    ``denominator``: :func:`denominator_shift`; ``centering``:
    ``beta^4 / (2 e_1 d_K)``; ``gaussian_rows``: 0; ``covariance``:
    ``beta^4 (4u - 1) / (e_1 d_K)``; ``query_substitution``: 0. Their sum is
    :func:`gelib.spectra.mean_shift` ``= u (beta^4 / d_K - (2u - 1) e_1 / n) / e_1``
    to leading order.
    """
    u = math.exp(beta**2)
    e1 = u - 1
    return {
        "denominator": denominator_shift(n, d_k, beta),
        "centering": beta**4 / (2 * e1 * d_k),
        "gaussian_rows": 0.0,
        "covariance": beta**4 * (4 * u - 1) / (e1 * d_k),
        "query_substitution": 0.0,
    }


def centering_shift_exact(d_k: float, beta: float = 1.0) -> float:
    """Exact relative shift of the mean eigenvalue from ``Y-ring^f`` to ``Y^f`` (untied layer).

    The row energies are ``E f^2`` and ``E_k Var_q(f | k)``; their difference is the mean
    square ``E mu^2`` of the key means that centring subtracts (:func:`gelib.models.kernel_mean`), so
    ``E m_f / E m_ring - 1 = E mu^2 / E_k Var_q(f | k)`` with ``E mu^2 = E e^{beta^2 t} - 2 E e^{beta^2 t / 2} + 1``
    and ``E_k Var_q(f | k) = e^{beta^2} E e^{2 beta^2 t} - E e^{beta^2 t}`` (``t = chi^2_{d_K}/d_K - 1``,
    exact moment generating function). Independent of ``n``; ``beta^4 / (2 e_1 d_K)`` to
    leading order (:func:`~gelib.models.step_shifts`). Infinite (the energies are) unless ``4 beta^2 < d_K``.
    """
    b2 = beta**2
    if 4 * b2 >= d_k:  # E f^2 and E Var(f | sigma) are infinite
        return math.inf
    m2 = _chi2_mgf(b2, d_k) - 2 * _chi2_mgf(b2 / 2, d_k) + 1
    var = math.exp(b2) * _chi2_mgf(2 * b2, d_k) - _chi2_mgf(b2, d_k)
    return m2 / var


def _mha_energy(n: int, d_k: float, beta: float, nodes: int) -> float:
    """``E[n sum_j p_j^2 - 1]``, the mean row energy of ``sqrt(n) A^perp``, exactly (see
    :func:`~gelib.models.denominator_shift_exact`)."""
    import numpy as np
    import scipy.integrate
    import scipy.special
    import scipy.stats

    b2 = beta**2
    z, wz = scipy.special.roots_hermitenorm(80)
    wz = wz / wz.sum()
    sd = math.sqrt(2 / d_k)  # Gauss-Legendre over sigma^2 in [1 - 10 sd, 1 + 14 sd], weighted by its density
    u, wu = scipy.special.roots_legendre(nodes)
    lo, hi = max(0.0, 1 - 10 * sd), 1 + 14 * sd
    sig2 = lo + (hi - lo) * (u + 1) / 2
    wx = wu * (hi - lo) / 2 * scipy.stats.chi2.pdf(sig2 * d_k, d_k) * d_k

    def energy(s2: float) -> float:
        big_x = np.exp(beta * math.sqrt(s2) * z - b2 / 2)  # X at the Gauss-Hermite nodes

        def integrand(s: float) -> float:
            e = np.exp(-s * big_x / n)
            return s * float(wz @ (big_x**2 * e)) * float(wz @ e) ** (n - 1)

        return scipy.integrate.quad(integrand, 0, np.inf, limit=200)[0] - 1

    return float(sum(w * energy(s2) for s2, w in zip(sig2, wx)))


def denominator_shift_exact(n: int, d_k: float, beta: float = 1.0, nodes: int = 96) -> float:
    """Exact relative shift of the mean eigenvalue from ``Y^f`` to ``sqrt(n) A^perp`` (untied layer), at finite ``n``.

    Row ``i`` of ``sqrt(n) A^perp`` has energy ``n sum_j p_j^2 - 1`` with ``p_j = X_j / S``,
    ``X_j = e^{beta s_j - beta^2/2}`` and ``S = sum_j X_j`` (``n`` terms, i.i.d. given ``sigma``).
    With ``1 / S^2 = int_0^oo t e^{-t S} dt``,
    ``n^2 E[X_1^2 / S^2 | sigma] = int_0^oo s E[X^2 e^{-s X / n}] (E e^{-s X / n})^{n - 1} ds``,
    a one-dimensional integral whose inner expectations over the Gaussian score are
    Gauss-Hermite sums; the law of ``sigma^2 = chi^2_{d_K} / d_K`` is integrated by Gauss-Legendre
    quadrature (``nodes`` points over 24 standard deviations). ``Y^f``'s row energy ``E f^2`` is exact by the
    moment generating function. Returns ``E m_MHA / E m_f - 1``, which :func:`denominator_shift`
    approximates to first order in ``1 / d_K`` and ``1 / n``.
    """
    b2 = beta**2
    e_f = math.exp(b2) * _chi2_mgf(2 * b2, d_k) - 2 * _chi2_mgf(b2 / 2, d_k) + 1
    return _mha_energy(n, d_k, beta, nodes) / e_f - 1


def mha_shift_exact(n: int, d_k: float, beta: float = 1.0, nodes: int = 96) -> float:
    """Exact relative shift of the mean eigenvalue from ``Y^G`` to ``sqrt(n) A^perp`` (untied layer), at finite ``n``.

    ``E m_MHA / E m_G - 1``: the mean row energy of ``sqrt(n) A^perp``
    (:func:`~gelib.models.denominator_shift_exact`'s integral) over that of ``Y^G``, which is exactly
    ``e^{beta^2} - 1`` at every size (:func:`gelib.moment_checks.first_moment_bias`). Both means
    carry the same factor ``d_O / n`` from ``V`` and ``W^O``, whatever the head sharing, so
    this is the whole chain's shift that :func:`gelib.spectra.mean_shift` gives to first
    order. Every order is in it; the remaining difference between a measured mean of
    per-seed ratios and this ratio of means is of the order of the squared relative
    fluctuation of one seed's mean eigenvalue.
    """
    return _mha_energy(n, d_k, beta, nodes) / math.expm1(beta**2) - 1


def step_shifts_exact(n: int, d_k: float, beta: float = 1.0) -> dict[str, float]:
    """Exact relative shift of the mean eigenvalue at each step of :data:`~gelib.models.shifts.STEPS`, finite ``n``.

    Earlier model over later model, minus one, for an untied layer (the convention of
    :func:`~gelib.models.step_shifts`, whose leading orders these are):
    :func:`~gelib.models.denominator_shift_exact`, :func:`~gelib.models.centering_shift_exact`, zero for
    the Gaussian rows (``Y-ring^f`` and ``Y^G[Sigma_f]`` have the same row covariance),
    :func:`~gelib.models.sigma_mean_ratio` minus one for the
    covariance approximation (the exact mean diagonals of the two kernels), and zero for the query
    substitution (``Y^G[Sigma_G]`` and ``Y^G`` have the same row covariance). Only the first depends
    on ``n``; at a fixed ``d_K`` the others do not shrink as ``n`` grows.
    """
    return {
        "denominator": denominator_shift_exact(n, d_k, beta),
        "centering": centering_shift_exact(d_k, beta),
        "gaussian_rows": 0.0,
        "covariance": sigma_mean_ratio(d_k, beta) - 1,
        "query_substitution": 0.0,
    }


def centering_log_norm(n: int, d_k: float, beta: float = 1.0, nodes: int = 96) -> float:
    """``E log |m_r|_2``, exactly: the mean logarithm of the norm of one head's subtracted row means.

    ``m_r`` has ``n`` i.i.d. entries ``m = e^{beta^2 (rho - 1) / 2} - 1`` with ``rho = chi^2_{d_K}/d_K``
    (:func:`gelib.models.row_mean`). By ``log x = int_0^oo (e^{-s} - e^{-s x}) / s ds``, for
    ``X = |m_r|_2^2`` and any scale ``c > 0``,
    ``E log X = log c + int_0^oo (e^{-s} - phi(s / c)^n) / s ds`` with ``phi(t) = E e^{-t m^2}``, a
    one-dimensional integral; ``phi`` is a Gauss-Legendre sum over the density of ``rho``
    (``nodes`` points over 24 standard deviations), and ``c`` is ``n`` times the median of
    ``m^2``. Returns half of it. Finite for every ``beta``, also where ``E |m_r|_2^2``
    (:func:`gelib.models.centering_norm2`) is infinite. A slope fitted to ``log |m_r|_2``
    estimates the slope of this mean, not of ``log (E |m_r|_2^2) / 2``; the two differ by
    the bias of a logarithm, ``O(1/n)``.
    """
    import numpy as np
    import scipy.integrate
    import scipy.special
    import scipy.stats

    sd = math.sqrt(2 / d_k)
    u, wu = scipy.special.roots_legendre(nodes)
    lo, hi = max(0.0, 1 - 10 * sd), 1 + 14 * sd
    rho = lo + (hi - lo) * (u + 1) / 2
    w = wu * (hi - lo) / 2 * scipy.stats.chi2.pdf(rho * d_k, d_k) * d_k
    w = w / w.sum()
    m2 = np.expm1(beta**2 * (rho - 1) / 2) ** 2
    c = n * float(scipy.stats.chi2.median(1)) * float(np.expm1(beta**2 / math.sqrt(2 * d_k) / 2)) ** 2
    c = max(c, 1e-300)

    def integrand(s: float) -> float:
        log_phi = math.log(max(float(w @ np.exp(-s / c * m2)), 1e-300))
        return (math.exp(-s) - math.exp(n * log_phi)) / s

    total = sum(scipy.integrate.quad(integrand, a, b, limit=200)[0] for a, b in ((0, 1), (1, 100), (100, np.inf)))
    return 0.5 * (math.log(c) + total)
