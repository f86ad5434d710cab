"""Exact finite-size predictions of gelib.models: the kernel error, the kernel z-scores, the row mean.

Each is checked against something it was not computed from: a quadrature over
the chi^2 law of ``|k|^2``, a Monte Carlo average over keys with a tolerance from
its standard error, the first-order formula in its limit, or a direct computation.
"""

import math

import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from gelib import AttentionConfig
from gelib import models as M
from gelib.sampling import sample_fast


def _pieces(d_k, beta):
    """(E D_jj^2, E D_jl^2) from kernel_error_exact, linear in n: E||D||^2 / n = E D_jj^2 + (n - 1) E D_jl^2."""
    one, two = (M.kernel_error_exact(n, d_k, beta) ** 2 for n in (1, 2))
    return one, two - one


@pytest.mark.parametrize("d_k, beta", [(16, 1.0), (64, 1.0), (40, 0.9)])
def test_kernel_error_diagonal_matches_a_quadrature(d_k, beta):
    # D_jj depends on s = |k_j|^2 only: keys sqrt(s) e_1 on a grid, integrated against the chi^2 density
    s = np.linspace(1e-9, 40 * d_k / (1 - 8 * beta**2 / d_k), 8001)
    keys = np.sqrt(s)[:, None] * np.eye(1, d_k)
    k_jj = np.asarray(jax.vmap(lambda k: M.kernel_f(k[None], beta)[0, 0])(keys))  # one key at a time: the diagonal
    d_jj = k_jj - (beta**2 * s / d_k + math.expm1(beta**2) - beta**2)
    quad = scipy.integrate.simpson(d_jj**2 * scipy.stats.chi2.pdf(s, d_k), x=s)
    assert _pieces(d_k, beta)[0] == pytest.approx(quad, rel=1e-6)


def test_kernel_error_off_diagonal_matches_monte_carlo():
    d_k, beta, n, batches = 40, 0.9, 300, 24
    off = ~np.eye(n, dtype=bool)
    est, means = [], []
    for b in range(batches):  # independent batches of keys; within a batch all pairs j != l
        k = jax.random.normal(jax.random.key(100 + b), (n, d_k))
        d = np.asarray(M.kernel_f(k, beta) - M.kernel_g(k, beta))
        est.append(np.mean(d[off] ** 2))
        means.append(np.mean(d[off]))
    means = np.array(means)  # E D_jl: kernel_g's off-diagonal has mean zero
    se_mean = means.std(ddof=1) / math.sqrt(batches)
    assert abs(means.mean() - M.kernel_f_offdiagonal_mean(d_k, beta)) < 4 * se_mean
    assert M.kernel_f_offdiagonal_mean(d_k, beta) > 10 * se_mean  # a mean that is really there
    est = np.array(est)
    se = est.std(ddof=1) / math.sqrt(batches)
    assert abs(est.mean() - _pieces(d_k, beta)[1]) < 4 * se, (est.mean(), _pieces(d_k, beta)[1], se)


def test_kernel_error_exact_against_the_sampled_kernel_error():
    cfg = AttentionConfig(n=128, d=128, h=4, d_k=64, d_v=4, d_o=4, beta=1.0)
    err2 = np.concatenate([np.asarray(M.kernel_error(sample_fast(jax.random.key(s), cfg), cfg)) ** 2 for s in range(8)])
    se = err2.std(ddof=1) / math.sqrt(err2.size)
    assert abs(err2.mean() - M.kernel_error_exact(cfg.n, cfg.d_k, cfg.beta) ** 2) < 4 * se


def test_kernel_error_exact_tends_to_the_first_order_formula():
    # at fixed n / d_k the relative correction is O(1/d_k): it halves when d_k doubles
    excess = [
        M.kernel_error_exact(2 * d, d, 1.0) / M.kernel_error_first_order(2 * d, d, 1.0) - 1 for d in (2**12, 2**13)
    ]
    assert 0 < excess[1] < 0.005
    assert excess[0] / excess[1] == pytest.approx(2.0, rel=0.05)
    assert M.kernel_error_exact(100, 8, 1.0) == math.inf  # 8 beta^2 >= d_k


def test_kernel_f_zscores():
    k = jax.random.normal(jax.random.key(1), (6, 16))
    q = jax.random.normal(jax.random.key(2), (60_000, 16))
    z, bound = M.kernel_f_zscores(k, q, 0.5)
    assert z.shape == (21,)
    assert bound == pytest.approx(scipy.stats.norm.isf(0.025 / 21))
    assert np.max(np.abs(z)) < bound
    z_wrong, _ = M.kernel_f_zscores(k, 1.1 * q, 0.5)  # queries of the wrong law: another kernel
    assert np.max(np.abs(z_wrong)) > 3 * bound


def test_row_mean_effect_matches_a_direct_computation():
    cfg = AttentionConfig(n=24, d=24, h=3, d_k=10, d_v=6, d_o=20, beta=1.2)
    keys = [jax.random.key(7), jax.random.key(8)]
    out = M.row_mean_effect(cfg, keys)
    assert out.shape == (2, 3)
    q, k, v, w_o = (np.asarray(a) for a in sample_fast(keys[1], cfg))
    y, m = np.zeros((cfg.n, cfg.d_o)), np.zeros(cfg.d_o)  # Y^f and its row mean, written out in NumPy
    for r in range(cfg.h):
        f = np.expm1(cfg.beta * q[r] @ k[r].T / math.sqrt(cfg.d_k) - cfg.beta**2 / 2)
        y += f @ v[r] @ w_o[r] / math.sqrt(cfg.n)
        mu = np.expm1(cfg.beta**2 * (np.sum(k[r] ** 2, axis=1) / cfg.d_k - 1) / 2)  # E_q f(s_j), keys fixed
        m += mu @ v[r] @ w_o[r] / math.sqrt(cfg.n)
    top = [np.linalg.eigvalsh(x @ x.T / cfg.n)[-1] for x in (y, y - m)]
    np.testing.assert_allclose(out[1], [m @ m, *top], rtol=1e-10)
    assert np.all(np.isfinite(out))


def test_row_mean_norms_match_output_row_mean_and_their_exact_expectation():
    cfg = AttentionConfig(n=40, d=40, h=2, d_k=12, d_v=8, d_o=30, beta=1.0)
    keys = [jax.random.key(200 + s) for s in range(400)]
    norms = M.row_mean_norms(cfg, keys)
    m = np.asarray(M.output_row_mean(sample_fast(keys[3], cfg), cfg))
    assert norms[3] == pytest.approx(m @ m, rel=1e-12)
    se = norms.std(ddof=1) / math.sqrt(norms.size)
    assert abs(norms.mean() - M.centering_mean_norm2(cfg)) < 4 * se
    assert M.centering_mean_norm2(cfg) == pytest.approx(cfg.d_o * M.centering_norm2(cfg.n, cfg.d_k, cfg.beta) / cfg.n)


@pytest.mark.parametrize("d_k, beta", [(64, 1.0), (16, 0.5), (128, 1.5)])
def test_the_kernel_error_crossover_is_where_its_two_first_order_terms_are_equal(d_k, beta):
    n = M.kernel_error_crossover(d_k, beta)
    keys = 8 * beta**4 * math.expm1(beta**2) ** 2 / d_k  # the key-norm term of the mean square
    assert M.kernel_error_first_order(n, d_k, beta) ** 2 == pytest.approx(2 * keys, rel=1e-12)
    # below it the key-norm term dominates, above it the overlap term
    assert (
        M.kernel_error_first_order(n / 2, d_k, beta) ** 2 < 2 * keys < M.kernel_error_first_order(2 * n, d_k, beta) ** 2
    )
