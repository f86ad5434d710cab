"""Closed forms for the controls of Table 1: the tolerances come from the mathematics.

Hermite coefficients of ``f`` (:func:`~gelib.models.hermite_coefficients`); the mean
diagonal of the exact kernel over Gaussian keys (:func:`~gelib.models.kernel_f_diagonal_mean`);
the exact variance of the quadratic forms over
the query, for given keys and for Wishart keys (:func:`~gelib.models.form_variance`,
:func:`~gelib.models.form_variance_wishart`); the kernel error, exactly and to first order
(:func:`~gelib.models.kernel_error_exact`, :func:`~gelib.models.kernel_error_first_order`); the ratio of the
mean eigenvalues of the two Gaussian-row models (:func:`~gelib.models.sigma_mean_ratio`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .construction import f, kernel_f

__all__ = [
    "f_moment_mc",
    "key_norm_mgf",
    "kernel_f_diagonal_mean",
    "kernel_f_diagonal_variance",
    "kernel_f_offdiagonal_mean",
    "kernel_error_first_order",
    "kernel_error_crossover",
    "sigma_mean_ratio",
    "denominator_deviation_ms",
    "hermite_coefficients",
    "form_variance",
    "form_variance_wishart",
    "form_relative_std",
    "form_relative_std_limit",
    "kernel_error_exact",
    "gaussian_max_abs_mean",
    "gaussian_max_expansion",
    "denominator_max_deviation",
    "denominator_middle_bound",
]


def f_moment_mc(key: jax.Array, p: int, beta: float, size: int = 2**18) -> tuple[float, float]:
    """``E f(a)^p`` for ``a ~ N(0, 1)`` by Monte Carlo, tilted: the estimate and its standard error.

    A plain average of ``f(a)^p`` is carried by rare draws near ``a ~ p beta`` (its variance
    involves ``E f^{2p}``); instead ``a ~ N(mu, 1)`` with ``mu = (p - 1/2) beta`` (``size``
    draws from ``key``), each weighted by the density ratio ``e^{-mu a + mu^2 / 2}``, which keeps
    the estimate unbiased and its relative variance of order one. The standard error is the
    weighted sample's standard deviation over ``sqrt(size)``. The closed forms are
    ``E f^2 = e^{beta^2} - 1`` and ``E f^4 = e^{6 beta^2} - 4 e^{3 beta^2} + 6 e^{beta^2} - 3``.
    """
    mu = (p - 0.5) * beta  # the tilt: draw where f(a)^p is large, reweight to N(0, 1)
    a = mu + jax.random.normal(key, (size,))
    x = np.asarray(f(a, beta) ** p * jnp.exp(-mu * a + mu**2 / 2))
    return float(x.mean()), float(x.std() / np.sqrt(x.size))


def kernel_f_diagonal_mean(d_k: float, beta: float) -> float:
    """``E[kernel_f(K)_jj]`` over Gaussian keys (``|k_j|^2 ~ chi^2_{d_k}``).

    ``e^{-beta^2} ((1 - 4 gamma)^{-d_k/2} - (1 - 2 gamma)^{-d_k/2})`` with
    ``gamma = beta^2 / d_k``, ``= e^{beta^2} - 1 + beta^4 (4 e^{beta^2} - 1) / d_k
    + O(d_k^{-2})``; infinite when ``4 gamma >= 1``. Divided by the diagonal
    ``e^{beta^2} - 1`` of :func:`kernel_g` it is the predicted ratio of the mean
    eigenvalues of ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]``.
    """
    gamma = beta**2 / d_k
    if 4 * gamma >= 1:
        return math.inf
    return math.exp(-(beta**2)) * ((1 - 4 * gamma) ** (-d_k / 2) - (1 - 2 * gamma) ** (-d_k / 2))


def key_norm_mgf(c: float, d_k: float) -> float:
    """``E exp(c (|k|^2 / d_k - 1))`` for a Gaussian key ``k ~ N(0, I_{d_k})``: ``e^{-c} (1 - 2c / d_k)^{-d_k/2}``.

    The factor by which longer-than-average keys inflate a moment at finite ``d_k``
    (``1 + c^2 / d_k + O(d_k^-2)``); infinite unless ``2c < d_k``.
    """
    if 2 * c >= d_k:
        return math.inf
    return math.exp(-c - d_k / 2 * math.log1p(-2 * c / d_k))


def kernel_f_diagonal_variance(d_k: int, beta: float) -> float:
    """``Var(kernel_f(K)_jj)`` over Gaussian keys.

    With ``x = e^{beta^2 (|k_j|^2 / d_k - 1)}`` the diagonal entry is ``e^{beta^2} x^2 - x``, so
    ``E K_jj^2 = e^{2 beta^2} E x^4 - 2 e^{beta^2} E x^3 + E x^2`` (:func:`key_norm_mgf`), less the square
    of :func:`kernel_f_diagonal_mean`. Infinite unless ``8 beta^2 < d_k``.
    """
    b2 = beta**2
    mgf = [key_norm_mgf(t * b2, d_k) for t in (2, 3, 4)]
    if math.isinf(mgf[-1]):
        return math.inf
    return math.exp(2 * b2) * mgf[2] - 2 * math.exp(b2) * mgf[1] + mgf[0] - kernel_f_diagonal_mean(d_k, beta) ** 2


def kernel_f_offdiagonal_mean(d_k: int, beta: float) -> float:
    """``E kernel_f(K)_jl`` for ``j != l`` over Gaussian keys.

    ``e^{-beta^2} ((1 - 2 gamma)^{-d_k/2} - (1 - gamma)^{-d_k})`` with ``gamma = beta^2 / d_k``; about
    ``beta^4 / (2 d_k)`` (from ``rho_jl^2 / 2``). :func:`kernel_g`'s off-diagonal entries have mean zero,
    so this is also the mean off-diagonal entry of the kernel error. Infinite unless ``2 gamma < 1``.
    """
    gamma = beta**2 / d_k
    if 2 * gamma >= 1:
        return math.inf
    return math.exp(-(beta**2) - d_k / 2 * math.log1p(-2 * gamma)) - math.exp(-(beta**2) - d_k * math.log1p(-gamma))


def kernel_error_first_order(n: int, d_k: int, beta: float) -> float:
    """First-order prediction of :func:`kernel_error`, ``||kernel_f - kernel_g||_F / sqrt(n)``, over Gaussian keys.

    With ``|k_j|^2 / d_k = 1 + eps_j`` and ``rho_jl = k_j . k_l / d_k``, the
    difference ``D`` has ``D_jj ~ 2 beta^2 (e^{beta^2} - 1) eps_j`` and, off the
    diagonal, ``D_jl ~ beta^4 [rho_jl (eps_j + eps_l) / 2 + rho_jl^2 / 2]``, of mean square
    ``beta^8 (1 + 3/4) / d_k^2`` (``E rho^2 (eps_j + eps_l)^2 ~ 4 / d_k^2``, ``E rho^4 ~ 3 / d_k^2``),
    so ``||D||_F^2 / n ~ 8 beta^4 (e^{beta^2} - 1)^2 / d_k + (7/4) beta^8 n / d_k^2``;
    returns its square root, ``O(n^{-1/2})`` at fixed ``d_k / n``.
    """
    return math.sqrt(8 * beta**4 * math.expm1(beta**2) ** 2 / d_k + 1.75 * beta**8 * n / d_k**2)


def kernel_error_crossover(d_k: float, beta: float) -> float:
    """The context length at which the two terms of :func:`~gelib.models.kernel_error_first_order` are equal.

    ``8 beta^4 (e^{beta^2} - 1)^2 / d_k = (7/4) beta^8 n / d_k^2`` at
    ``n = 8 (e^{beta^2} - 1)^2 d_k / (1.75 beta^4)``: at a fixed key width the first term
    (the key norms) dominates below it, the second (the overlaps, growing with ``n``) above.
    """
    return 8 * math.expm1(beta**2) ** 2 * d_k / (1.75 * beta**4)


def sigma_mean_ratio(d_k: float, beta: float) -> float:
    """The predicted ratio of the mean eigenvalues of ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]``.

    ``tr Sigma ~ d_o E[kernel_jj]``, so the ratio is
    :func:`~gelib.models.kernel_f_diagonal_mean` over the diagonal ``e^{beta^2} - 1`` of
    :func:`kernel_g`: ``1 + beta^4 (4 e^{beta^2} - 1) / (d_k (e^{beta^2} - 1)) + O(d_k^{-2})``
    (infinite when ``4 beta^2 >= d_k``).
    """
    return kernel_f_diagonal_mean(d_k, beta) / math.expm1(beta**2)


def denominator_deviation_ms(n: int, d_k: float, beta: float = 1.0) -> float:
    """``E (C_ii - 1)^2``, the mean square of the denominator ratio's deviation, up to ``O(n^-2)``, exact in ``d_K``.

    ``C_ii = 1 / X`` with ``X = (1/n) sum_j e^{beta s_ij - beta^2/2}`` (:func:`gelib.models.denominator_terms`).
    Given the query, ``rho = |q|^2 / d_K`` and the ``n`` terms are i.i.d. log-normal:
    ``E[X | rho] = a = e^{beta^2 (rho - 1) / 2}`` and ``Var[X | rho] = v = a^2 (e^{beta^2 rho} - 1) / n``.
    Expanding ``1/X`` about ``a`` to second order, ``E[(1/X - 1)^2 | rho] = (1/a - 1)^2 + v (3 - 2a) / a^4
    + O(n^-2)``, and the law of ``rho`` (``chi^2_{d_K} / d_K``) enters through the moment generating function
    ``M(c) = E e^{c (rho - 1)}`` (:func:`~gelib.models.key_norm_mgf`):

    ``E (C - 1)^2 = [M(-beta^2) - 2 M(-beta^2/2) + 1]
    + [3 e^{beta^2} - 2 e^{beta^2} M(beta^2/2) - 3 M(-beta^2) + 2 M(-beta^2/2)] / n + O(n^-2)``.

    Infinite unless ``beta^2 < d_K`` (``M(beta^2/2)``: the expansion needs the keys' log-normal
    terms to have a finite variance averaged over the query). The first bracket, the query norm's
    share, is ``beta^4 / (2 d_K) + O(d_K^-2)``: it vanishes only when ``d_K`` grows. The second is
    ``e^{beta^2} - 1 + O(1/d_K)``, the sampling of ``n`` keys. At a fixed ``d_K`` the deviation tends to
    a non-zero constant (and the middle term of the denominator step, whose operator norm is at least
    ``(sum_i (C_ii - 1)^4 / C_ii^2)^{1/2}``, grows like ``sqrt(n)``); under the proportional limit it
    falls like ``1/n``.
    """
    b2 = beta**2
    if b2 >= d_k:
        return math.inf
    m = lambda c: key_norm_mgf(c, d_k)  # noqa: E731
    query = m(-b2) - 2 * m(-b2 / 2) + 1
    keys = 3 * math.exp(b2) - 2 * math.exp(b2) * m(b2 / 2) - 3 * m(-b2) + 2 * m(-b2 / 2)
    return query + keys / n


def hermite_coefficients(fn: Callable[[jax.Array], ArrayLike], degree: int, nodes: int = 80) -> np.ndarray:
    """Hermite coefficients ``c_k = E[fn(x) He_k(x)] / k!``, ``k = 0..degree``, for ``x ~ N(0, 1)``.

    ``He_k`` are the probabilists' Hermite polynomials, so that
    ``fn = sum_k c_k He_k`` in ``L^2(N(0, 1))`` and ``E[fn(x) fn(y)] = sum_k k! c_k^2 rho^k``
    for standard Gaussians with correlation ``rho``. Gauss-Hermite quadrature
    with ``nodes`` nodes (exact for polynomials ``fn`` of degree below
    ``2 nodes - degree``). For :func:`f` the coefficients are ``beta^k / k!``
    (``k >= 1``). ``fn`` maps an array of nodes (``(nodes,)``) to an array of
    values of that shape. Returns shape ``(degree + 1,)``.
    """
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)  # expectations under N(0, 1)
    values = np.asarray(fn(jnp.asarray(x)))
    ks = np.arange(degree + 1)
    c = np.array([np.sum(w * values * np.polynomial.hermite_e.hermeval(x, np.eye(degree + 1)[k])) for k in ks])
    return c / np.array([math.factorial(k) for k in ks], dtype=float)


def _pieces(k_g: jax.Array, beta):
    """``(E, s)`` with ``E[e_{j_1} ... e_{j_r}] = e^{-r beta^2 / 2} prod_i s_{j_i} prod_{i < i'} E_{j_i j_i'}``.

    ``e_j = e^{beta a_j - beta^2 / 2}`` with ``a = K q / sqrt(d_k)``, ``q ~ N(0, I)``; with
    ``G = beta^2 K K^T / d_k`` the Gaussian integral ``E e^{c . q} = e^{|c|^2 / 2}`` gives
    ``E = exp(G)`` (``(n, n)``, entrywise) and ``s = exp(diag(G) / 2)`` (``(n,)``).
    """
    g = beta**2 * (k_g @ k_g.T) / k_g.shape[-1]
    return jnp.exp(g), jnp.exp(jnp.diagonal(g) / 2)


def form_variance(k_g: jax.Array, b: jax.Array, beta: float, chunk: int = 8) -> tuple[jax.Array, jax.Array]:
    """Exact mean and variance over ``q ~ N(0, I)`` of ``Q(q) = f-ring(q)^T B f-ring(q) / n``, keys ``k_g`` fixed.

    ``k_g`` (``(n, d_k)``), ``B`` symmetric (``(n, n)``), ``f-ring = f(K q / sqrt d_k) - mu``
    (``mu`` = :func:`~gelib.models.kernel_mean`, so ``f-ring = e - E e`` with ``e_j = e^{beta a_j - beta^2/2}``).
    The mean is ``tr(B kernel_f(K)) / n``. With ``y = e^T B e`` and ``z = (E e)^T B e``,
    ``n Q = y - 2 z + const``, and ``E y^2``, ``E y z``, ``E z^2`` are sums of the Gaussian
    integrals of ``_pieces``. ``E y z`` and ``E z^2`` cost ``O(n^3)``. The first,
    ``E y^2 = e^{-2 beta^2} sum_{jl} B'_jl sum_{mp} B'_mp E_jm E_lm E_jp E_lp`` with
    ``B' = B o E o s s^T``, is a complete graph on four indices: ``O(n^4)``
    flops (as matrix products, ``chunk`` rows ``j`` at a time), about a second at
    ``n = 256`` on a CPU. Finite for every ``beta``. Returns ``(mean, variance)``, scalars.
    """
    return _form_variance(k_g, b, beta, chunk)


@functools.partial(jax.jit, static_argnames="chunk")
def _form_variance(k_g, b, beta, chunk):
    n = k_g.shape[0]
    e0, s0 = _pieces(k_g, beta)
    bp = b * e0 * jnp.outer(s0, s0)
    v = (b @ s0) * s0

    def rows(j):  # sum_l B'_jl x_jl^T B' x_jl with x_jl = E_j o E_l, for a chunk of rows j
        x = e0[j][:, None, :] * e0[None, :, :]  # (chunk, n, n)
        return jnp.einsum("jl,jlm,jlm->j", bp[j], x @ bp, x)

    pad = -n % chunk
    idx = jnp.concatenate([jnp.arange(n), jnp.zeros(pad, int)]).reshape(-1, chunk)
    weight = jnp.concatenate([jnp.ones(n), jnp.zeros(pad)]).reshape(-1, chunk)
    yy = jnp.sum(jax.lax.map(rows, idx) * weight)
    yz = jnp.sum(bp * (e0 @ (v[:, None] * e0)))
    zz = v @ e0 @ v
    second = jnp.exp(-2 * beta**2) * (yy - 4 * yz + 4 * zz)  # E (y - 2z)^2
    first = jnp.exp(-(beta**2)) * (jnp.sum(bp) - 2 * jnp.sum(v))  # E (y - 2z)
    mean = jnp.sum(b * kernel_f(k_g, beta)) / n
    return mean, (second - first**2) / n**2


def form_variance_wishart(k_g: jax.Array, beta: float, d_v: int) -> jax.Array:
    """``E_V Var_q(Q)`` for ``B = V V^T / d_v`` with ``V`` (``n x d_v``) of i.i.d. ``N(0, 1)`` entries: ``O(n^2 d_k)``.

    The average over ``V`` of :func:`~gelib.models.form_variance`'s variance, keys ``k_g``
    (``(n, d_k)``) fixed. ``E_V[B_jl B_mp] = delta_jl delta_mp + (delta_jm delta_lp
    + delta_jp delta_lm) / d_v`` leaves
    ``[(1 + 2 / d_v) sum_{jm} E f_j^2 f_m^2 - (tr K_f)^2 - 2 tr(K_f^2) / d_v] / n^2``
    (``K_f`` = :func:`kernel_f`, ``f = f-ring``), and ``E f_j^2 f_m^2`` with ``f_j = e_j - E e_j`` is
    nine Gaussian integrals (``_pieces``). It is the expectation of the
    mean squared deviation ``(Q - tr(B K_f) / n)^2`` of a row over ``q`` and ``V``. A scalar.
    """
    return _form_variance_wishart(k_g, beta, d_v)


def form_relative_std(k_g: jax.Array, beta: float, d_v: int) -> float:
    """The exact relative standard deviation of the quadratic forms for ``B = V V^T / d_v``, keys ``k_g`` fixed.

    ``sqrt(E_V Var_q(Q)) / E Q`` with :func:`~gelib.models.form_variance_wishart` and the mean
    ``E Q = tr(K_f) / n`` (``K_f`` = :func:`~gelib.models.kernel_f`; over ``V``, ``E B = I``). As ``n``
    grows at a fixed key width it tends to a non-zero limit (the forms become functions of ``|q|^2 / d_k``
    alone; the Poincaré bound makes the limit ``O(d_k^{-1/2})``); at finite ``n`` it also carries an
    ``O(n^{-1/2})`` part from the sampling of the keys, which dominates when the log-normal terms are heavy.
    """
    mean = float(jnp.trace(kernel_f(k_g, beta))) / k_g.shape[0]
    return math.sqrt(float(form_variance_wishart(k_g, beta, d_v))) / mean


def form_relative_std_limit(d_k: float, beta: float) -> float:
    """The limit of :func:`form_relative_std` as ``n`` (and ``d_v``) grow at a fixed key width ``d_k``.

    With ``B -> I`` the form is the mean of ``n`` terms ``f-ring_j^2`` over the keys, which tends to
    ``g(rho) = E_k[f-ring^2 | q]``, a function of ``rho = |q|^2 / d_k`` alone (law of large numbers over the
    keys; ``f-ring = e^{beta s - beta^2/2} - e^{beta^2 (|k|^2/d_k - 1)/2}``, ``s = q . k / sqrt(d_k)``). Gaussian
    integrals over ``k`` give ``g = A_1 e^{c_1 rho} - A_2 e^{c_2 rho} + M(beta^2)`` with ``A_1 = e^{-beta^2}``,
    ``c_1 = 2 beta^2``, ``A_2 = 2 e^{-beta^2} (1 - beta^2/d_k)^{-d_k/2}``, ``c_2 = beta^2 / (2 (1 - beta^2/d_k))``
    and ``M`` = :func:`~gelib.models.key_norm_mgf`; the limit is the standard deviation of ``g`` over the law
    ``chi^2_{d_k}/d_k`` of ``rho`` divided by its mean (which is the row energy ``E_k Var_q(f | k)``), by
    ``E e^{c rho} = (1 - 2c/d_k)^{-d_k/2}``. Not zero at any finite ``d_k``, ``O(d_k^{-1/2})``; infinite unless
    ``8 beta^2 < d_k``.
    """
    b2, d = beta**2, d_k
    if 8 * b2 >= d:
        return math.inf
    e = lambda c: (1 - 2 * c / d) ** (-d / 2)  # noqa: E731
    cov = lambda a, c: e(a + c) - e(a) * e(c)  # noqa: E731
    a1, c1 = math.exp(-b2), 2 * b2
    a2, c2 = 2 * math.exp(-b2) * (1 - b2 / d) ** (-d / 2), b2 / (2 * (1 - b2 / d))
    mean = a1 * e(c1) - a2 * e(c2) + key_norm_mgf(b2, d)
    return math.sqrt(a1**2 * cov(c1, c1) - 2 * a1 * a2 * cov(c1, c2) + a2**2 * cov(c2, c2)) / mean


@jax.jit
def _form_variance_wishart(k_g, beta, d_v):
    n, d_k = k_g.shape
    g = beta**2 * (k_g @ k_g.T) / d_k
    dg = jnp.diagonal(g)
    total: float | jax.Array = 0.0
    # (e_j - E e_j)^2 = e_j^2 - 2 (E e_j) e_j + (E e_j)^2, with E e_j = e^{-beta^2/2} e^{G_jj / 2}: terms (a, c_a, p_a)
    for a, ca, pa in ((2, 1, 0), (1, -2, 1), (0, 1, 2)):
        for b, cb, pb in ((2, 1, 0), (1, -2, 1), (0, 1, 2)):
            quad = (a * a + pa) * dg[:, None] + (b * b + pb) * dg[None, :] + 2 * a * b * g
            total = total + ca * cb * jnp.sum(jnp.exp(quad / 2 - 2 * beta**2))
    kf = kernel_f(k_g, beta)
    return ((1 + 2 / d_v) * total - jnp.trace(kf) ** 2 - 2 * jnp.sum(kf * kf) / d_v) / n**2


def _pair_mgf(p: int, a: float, b: float, c: float, d_k: int) -> float:
    """``E[g^p exp(a s_1 + b s_2 + c g)]`` for i.i.d. ``k_i ~ N(0, I_{d_k})``, ``s_i = |k_i|^2``, ``g = k_1 . k_2``.

    Per coordinate the exponent is ``x^T A x / 2`` with ``A = [[2a, c], [c, 2b]]``, so the
    expectation is ``Delta^{-d_k/2}`` with ``Delta = (1 - 2a)(1 - 2b) - c^2``; the powers of
    ``g`` are derivatives in ``c`` (``p = 0, 1, 2``).
    """
    delta = (1 - 2 * a) * (1 - 2 * b) - c * c
    if delta <= 0:
        return math.inf
    base = math.exp(-d_k / 2 * math.log(delta))
    return (base, d_k * c * base / delta, d_k * base / delta + d_k * (d_k + 2) * c * c * base / delta**2)[p]


def kernel_error_exact(n: int, d_k: int, beta: float) -> float:
    """Exact root mean square of :func:`kernel_error` over Gaussian keys: ``sqrt(E ||kernel_f - kernel_g||_F^2 / n)``.

    ``D = kernel_f(K) - kernel_g(K)`` has entries that are functions of two keys
    only, each a sum of terms ``w g^p exp(a s_j + b s_l + c g)`` (``s = |k|^2``,
    ``g = k_j . k_l``, ``p <= 1``); so ``E D_jl^2`` and ``E D_jj^2`` are finite sums of the
    Gaussian integrals of ``_pair_mgf``, and ``E ||D||_F^2 / n = E D_jj^2 + (n - 1) E D_jl^2``.
    To leading order this is :func:`~gelib.models.kernel_error_first_order`; the exact value also
    carries the ``O(1/d_k)`` corrections (the log-normal tails of ``e^{beta a}``, the
    mean of ``D_jj``) that steepen the decay at small ``n``. Infinite unless
    ``8 beta^2 < d_k`` (``E D_jj^2`` contains ``E e^{4 beta^2 s / d_k}``).
    """
    b2 = beta**2
    gam = b2 / d_k
    if 8 * gam >= 1:
        return math.inf
    e = math.exp(-b2)
    # off the diagonal, (w, p, a, b, c) for
    # e^{-beta^2} e^{beta^2 (s_j + s_l) / (2 d_k)} (e^{beta^2 g / d_k} - 1) - beta^2 g / d_k
    off = [
        (e, 0, gam / 2, gam / 2, gam),
        (-e, 0, gam / 2, gam / 2, 0.0),
        (-gam, 1, 0.0, 0.0, 0.0),
    ]
    # on the diagonal (g = s_j, b = c = 0), for
    # e^{-beta^2} (e^{2 beta^2 s / d_k} - e^{beta^2 s / d_k}) - beta^2 s / d_k - alpha^2
    diag = [
        (e, 0, 2 * gam, 0.0, 0.0),
        (-e, 0, gam, 0.0, 0.0),
        (-(math.expm1(b2) - b2), 0, 0.0, 0.0, 0.0),
        (-gam, 1, 0.0, 0.0, 0.0),
    ]

    def second_moment(terms, on_diagonal):
        total = 0.0
        for w1, p1, a_1, b_1, c_1 in terms:
            for w2, p2, a_2, b_2, c_2 in terms:
                p, a = p1 + p2, a_1 + a_2
                if on_diagonal:  # E[s^p e^{a s}] = d (d + 2) ... (1 - 2a)^{-d/2 - p}
                    val = math.exp(-d_k / 2 * math.log1p(-2 * a)) * math.prod(d_k + 2 * i for i in range(p))
                    total += w1 * w2 * val / (1 - 2 * a) ** p
                else:
                    total += w1 * w2 * _pair_mgf(p, a, b_1 + b_2, c_1 + c_2, d_k)
        return total

    return math.sqrt(second_moment(diag, True) + (n - 1) * second_moment(off, False))


# --- the maximum of the denominator deviations (Table 1, row 2): an extreme-value level -----------


def gaussian_max_abs_mean(m: int) -> float:
    """``E max_{i <= m} |Z_i|`` for ``m`` i.i.d. standard normals, exactly (by quadrature).

    ``P(max |Z_i| <= x) = (2 Phi(x) - 1)^m``, so ``E max = int_0^oo 1 - (2 Phi(x) - 1)^m dx``; the
    integrand is evaluated as ``-expm1(m log erf(x / sqrt 2))``, accurate where it is tiny, and the
    integral is cut at ``x = 40`` (its tail there is below ``m 1e-300``). It grows like
    ``sqrt(2 log 2m)``, to the next order :func:`gaussian_max_expansion` of ``2m`` (the tail of
    ``|Z|`` is twice that of ``Z``).
    """
    import scipy.integrate
    import scipy.special

    if m < 1:
        raise ValueError(f"need m >= 1 entries, got {m}")
    below = lambda x: -np.expm1(m * np.log(scipy.special.erf(x / math.sqrt(2)))) if x > 0 else 1.0  # noqa: E731
    peak = math.sqrt(2 * math.log(2 * m + 1))  # the integrand falls from 1 to 0 near here
    return float(sum(scipy.integrate.quad(below, a, b, limit=200)[0] for a, b in ((0, peak), (peak, 40.0))))


def gaussian_max_expansion(m: float) -> float:
    """The extreme-value expansion of ``E max_{i <= m} Z_i`` for ``m`` i.i.d. standard normals.

    With ``a = sqrt(2 log m)``, the maximum is ``b_m + G / a`` up to ``o(1/a)``, ``G`` standard
    Gumbel (mean Euler's ``gamma``) and ``b_m = a - (log log m + log 4 pi) / (2 a)`` (Cramer's
    normalisation: ``m (1 - Phi(b_m)) -> 1``), so
    ``E max = a - (log log m + log 4 pi - 2 gamma) / (2 a) + o(1/a)``, an overestimate by 2 % at
    ``m = 100``, 1 % at ``m = 1000`` and 0.3 % at ``m = 10^6``; :func:`gaussian_max_abs_mean` is the exact
    value for ``|Z|`` (whose expansion is this one at ``2m``).
    """
    if m <= math.e:
        raise ValueError(f"the expansion needs log log m > 0, got m = {m}")
    a = math.sqrt(2 * math.log(m))
    return a - (math.log(math.log(m)) + math.log(4 * math.pi) - 2 * np.euler_gamma) / (2 * a)


def denominator_max_deviation(n: int, d_k: float, beta: float, h: int) -> float:
    """The level of ``max_{r, i} |C_r,ii - 1|`` over ``h`` heads and ``n`` rows (Table 1, row 2).

    ``1 / C_r,ii`` is an average of ``n`` i.i.d. terms given the query, so ``C_r,ii - 1`` is nearly
    Gaussian with mean square :func:`denominator_deviation_ms`, and the ``h n`` entries are nearly
    independent (the heads are independent; the rows of one head share only the keys). The maximum of
    ``h n`` such entries is then ``sqrt(E (C - 1)^2)`` times :func:`gaussian_max_abs_mean` of ``h n``.
    The local slope of this level against ``n`` is the prediction for the slope of the measured maximum:
    ``-1/2`` from the mean square at fixed ``d_K / n``, flattened by the maximum's slowly growing factor.
    """
    return math.sqrt(denominator_deviation_ms(n, d_k, beta)) * gaussian_max_abs_mean(int(h * n))


def denominator_middle_bound(n: float, d_k: float, beta: float = 1.0) -> float:
    """The lower bound ``||M_r|| >= sqrt(n E[(C - 1)^4 / C^2])`` on the middle term of one head at a fixed key width.

    The middle term ``M_r = (C_r - I) f(S_r) / sqrt(n)`` maps ``1 / sqrt(n)`` to the vector
    ``-(C_ii - 1)^2 / C_ii`` (row ``i`` of ``f(S_r)`` sums to ``n (1 / C_ii - 1)``), so its operator norm is
    at least ``(sum_i (C_ii - 1)^4 / C_ii^2)^{1/2}``. As ``n -> oo`` at fixed ``d_K`` the sampling of the
    keys averages out and ``C_ii = e^{-x}``, ``x = beta^2 (rho - 1) / 2``, ``rho = |q_i|^2 / d_K``, so
    ``(C - 1)^4 / C^2 = sum_k binom(4, k) (-1)^k e^{(k - 2) x}``, whose mean is a sum of
    ``key_norm_mgf`` values. Returns ``sqrt(n)`` times the root of that mean:
    ``~ sqrt(3 n) beta^4 / (2 d_K)``, growing like ``sqrt(n)`` (the sampling of ``n`` keys adds to it).
    """
    b2 = beta**2
    fourth = sum(math.comb(4, k) * (-1) ** k * key_norm_mgf((k - 2) * b2 / 2, d_k) for k in range(5))
    return math.sqrt(n * fourth)
