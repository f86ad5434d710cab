"""Second moments of the rows, Sigma and the Gaussian-output helpers of gelib.models.

Each helper is checked against something it was not computed from: a plain
NumPy loop, the models built by ``build``, a closed form, a quadrature or a
Monte Carlo average with a tolerance that follows from its standard error.
"""

import math

import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from gelib import AttentionConfig, sweeps
from gelib import models as M
from gelib import spectra as S
from gelib.sampling import sample_fast

# Sizes all different so that a swapped axis fails; GQA so that the grouping matters.
CFG = AttentionConfig(n=13, d=31, h=6, h_kv=3, d_k=9, d_v=7, d_o=11, beta=0.9)


def numpy_sigma(kernel, draw, cfg):
    """(1/n) sum_r W_r^T V_g^T kernel(K_g) V_g W_r, head by head in NumPy."""
    out = np.zeros((cfg.d_o, cfg.d_o))
    for r in range(cfg.h):
        g = r * cfg.h_kv // cfg.h
        v, w = np.asarray(draw.v[g]), np.asarray(draw.w_o[r])
        out += w.T @ (v.T @ np.asarray(kernel(draw.k[g], cfg.beta)) @ v / cfg.n) @ w
    return out


def build_gaussian(key, cfg):
    """The per-head Gaussian matrices G_r that build('yg_sigma_*', key=key) draws, (h, n, d_v)."""
    rows_key, _ = jax.random.split(key)
    return np.stack([jax.random.normal(jax.random.fold_in(rows_key, r), (cfg.n, cfg.d_v)) for r in range(cfg.h)])


def test_value_second_moments_and_sigma_match_a_numpy_loop():
    draw = sample_fast(jax.random.key(0), CFG)
    for kernel in (M.kernel_f, M.kernel_g):
        m = np.asarray(M.value_second_moments(kernel, draw, CFG))
        assert m.shape == (CFG.h_kv, CFG.d_v, CFG.d_v)
        for g in range(CFG.h_kv):
            v = np.asarray(draw.v[g])
            np.testing.assert_allclose(m[g], v.T @ np.asarray(kernel(draw.k[g], CFG.beta)) @ v / CFG.n, rtol=1e-12)
        np.testing.assert_allclose(M.sigma(kernel, draw, CFG), numpy_sigma(kernel, draw, CFG), rtol=1e-11, atol=1e-13)


def test_psd_roots_square_to_the_matrix():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 4))
    m = a @ np.swapaxes(a, 1, 2)  # rank 4 < 5: one zero eigenvalue, possibly -1e-16
    root = np.asarray(M.psd_roots(m))
    np.testing.assert_allclose(root @ root, m, atol=1e-12)
    np.testing.assert_allclose(root, np.swapaxes(root, 1, 2), atol=1e-14)
    assert np.all(np.linalg.eigvalsh(root) > -1e-12)


@pytest.mark.parametrize("h_kv", [3, 1])
def test_gaussian_row_outputs_are_the_built_sigma_models(h_kv):
    # same G as build(...): the same outputs, through a different square root
    cfg = CFG.replace(h_kv=h_kv)
    draw = sample_fast(jax.random.key(1), cfg)
    key = jax.random.key(2)
    g = build_gaussian(key, cfg)
    y = np.asarray(M.gaussian_row_outputs((M.kernel_f, M.kernel_g), draw, g, cfg))
    assert y.shape == (2, cfg.n, cfg.d_o)
    np.testing.assert_allclose(y[0], M.build("yg_sigma_f", draw, cfg, key=key), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(y[1], M.build("yg_sigma_g", draw, cfg, key=key), rtol=1e-9, atol=1e-11)
    m = M.value_second_moments(M.kernel_g, draw, cfg)
    np.testing.assert_allclose(M.output(M.gaussian_heads(g, m, cfg), draw.w_o), y[1], rtol=1e-12, atol=1e-13)


def test_quadratic_forms_have_their_conditional_mean():
    # Gaussian rows u ~ N(0, M): E|u|^2 = tr M, Var |u|^2 = 2 tr M^2 (exactly)
    cfg = AttentionConfig(n=4000, d=4000, h=2, h_kv=1, d_k=6, d_v=5, d_o=3, beta=0.7)
    draw = sample_fast(jax.random.key(3), cfg.replace(n=50, d=50))  # keys of 50 tokens
    m = M.value_second_moments(M.kernel_f, draw, cfg.replace(n=50, d=50))
    g = jax.random.normal(jax.random.key(4), (cfg.h, cfg.n, cfg.d_v))
    u = M.gaussian_heads(g, m, cfg)
    forms, exact = (np.asarray(a) for a in M.quadratic_forms(u, m, cfg))
    assert forms.shape == (cfg.h, cfg.n) and exact.shape == (cfg.h,)
    tr, tr2 = np.trace(np.asarray(m[0])), np.sum(np.asarray(m[0]) ** 2)
    np.testing.assert_allclose(exact, tr / cfg.d_v, rtol=1e-12)
    se = math.sqrt(2 * tr2 / cfg.n) / cfg.d_v
    assert np.all(np.abs(forms.mean(axis=1) - exact) < 4.5 * se)
    np.testing.assert_allclose(forms.var(axis=1), 2 * tr2 / cfg.d_v**2, rtol=0.15)


def test_form_deviation_is_the_relative_mean_absolute_deviation():
    exact = np.array([2.0, 5.0])
    forms = exact[:, None] * np.array([[0.9, 1.1, 0.7, 1.3], [1.0, 1.0, 1.2, 0.8]])
    np.testing.assert_allclose(M.form_deviation(forms, exact), [0.2, 0.1], rtol=1e-12)


def test_output_row_mean_is_the_mean_of_the_rows_over_fresh_queries():
    cfg = AttentionConfig(n=16, d=16, h=4, h_kv=2, d_k=8, d_v=6, d_o=5, beta=1.0)
    draw = sample_fast(jax.random.key(5), cfg)
    m = np.asarray(M.output_row_mean(draw, cfg))
    queries = jax.random.normal(jax.random.key(100), (400, *draw.q.shape))  # 400 fresh copies of Q
    rows = jax.vmap(lambda q: M.build("yf", draw._replace(q=q), cfg))(queries)
    rows = np.asarray(rows).reshape(-1, cfg.d_o)  # 400 n i.i.d. rows of Y^f given K, V, W^O
    se = rows.std(axis=0) / math.sqrt(len(rows))
    z = (rows.mean(axis=0) - m) / se
    assert np.max(np.abs(z)) < 4.0, z
    assert np.linalg.norm(m) > 5 * np.linalg.norm(se)  # the mean is really there, not zero


def test_kernel_f_estimate_agrees_with_the_closed_form():
    k = jax.random.normal(jax.random.key(6), (6, 16))
    q = jax.random.normal(jax.random.key(7), (200_000, 16))
    mc, se = M.kernel_f_estimate(k, q, 0.8)
    z = ((mc - np.asarray(M.kernel_f(k, 0.8))) / se)[np.triu_indices(6)]
    assert np.max(np.abs(z)) < 4.0, z
    # the standard errors shrink like N^{-1/2}
    _, se_small = M.kernel_f_estimate(k, q[:50_000], 0.8)
    np.testing.assert_allclose(np.median(se_small / se), 2.0, rtol=0.1)


def _chi2_expectation(values, s, d_k):
    """E fn(|k|^2) for k ~ N(0, I_{d_k}) from fn on the grid s, by Simpson's rule."""
    return scipy.integrate.simpson(values * scipy.stats.chi2.pdf(s, d_k), x=s)


@pytest.mark.parametrize("d_k, beta", [(16, 1.0), (64, 1.0), (40, 1.5)])
def test_kernel_moments_over_keys_match_a_quadrature(d_k, beta):
    # keys k_j = sqrt(s_j) e_1 on a grid of |k|^2 = s_j; the exponential tilt of the
    # chi^2 density stays integrable (4 beta^2 < d_k), its mass is far below s.max()
    s = np.linspace(1e-9, 40 * d_k / (1 - 4 * beta**2 / d_k), 6001)
    keys = np.sqrt(s)[:, None] * np.eye(1, d_k)
    diag = np.diagonal(np.asarray(M.kernel_f(keys, beta)))
    mu = np.asarray(M.kernel_mean(keys, beta))
    assert M.kernel_f_diagonal_mean(d_k, beta) == pytest.approx(_chi2_expectation(diag, s, d_k), rel=1e-6)
    assert M.centering_norm2(1, d_k, beta) == pytest.approx(_chi2_expectation(mu**2, s, d_k), rel=1e-6)  # E mu_j^2
    assert M.sigma_mean_ratio(d_k, beta) * math.expm1(beta**2) == pytest.approx(M.kernel_f_diagonal_mean(d_k, beta))
    if 8 * beta**2 < d_k:  # the variance of the diagonal over the keys
        second = _chi2_expectation(diag**2, s, d_k)
        assert M.kernel_f_diagonal_variance(d_k, beta) == pytest.approx(
            second - M.kernel_f_diagonal_mean(d_k, beta) ** 2, rel=1e-6
        )
    x = np.exp(beta**2 * (s / d_k - 1))  # the key-norm factor E x^t at t = 1, 2
    for t in (1, 2):
        assert M.key_norm_mgf(t * beta**2, d_k) == pytest.approx(_chi2_expectation(x**t, s, d_k), rel=1e-6)


def test_kernel_moment_limits():
    assert M.kernel_f_diagonal_mean(4, 1.0) == math.inf  # 4 beta^2 >= d_k
    assert M.kernel_f_diagonal_variance(8, 1.0) == math.inf and M.key_norm_mgf(1.0, 2) == math.inf
    assert M.centering_norm2(1, 2, 1.0) == math.inf  # 2 beta^2 >= d_k
    # leading orders in 1/d_k, by Richardson extrapolation of d_k x (value - limit) at d_k and 2 d_k
    for beta in (0.5, 1.0):
        e = math.exp(beta**2)

        def lead(fn, d_k, beta=beta):
            return 2 * (2 * d_k) * fn(2 * d_k, beta) - d_k * fn(d_k, beta)

        assert lead(lambda d, b: M.sigma_mean_ratio(d, b) - 1, 10**4) == pytest.approx(
            beta**4 * (4 * e - 1) / (e - 1), rel=1e-5
        )
        assert lead(lambda d, b: M.centering_norm2(1, d, b), 10**4) == pytest.approx(beta**4 / 2, rel=1e-5)


def test_kernel_error_first_order_predicts_the_kernel_error():
    # small beta and large d_k: the neglected terms are small
    cfg = AttentionConfig(n=400, d=400, h=4, d_k=200, d_v=8, d_o=8, beta=0.5)
    err = np.concatenate([np.asarray(M.kernel_error(sample_fast(jax.random.key(10 + s), cfg), cfg)) for s in range(3)])
    ratio = err.mean() / M.kernel_error_first_order(cfg.n, cfg.d_k, cfg.beta)
    assert 0.9 < ratio < 1.15, ratio


def test_hermite_coefficients():
    he = np.polynomial.hermite_e
    # a polynomial given in the Hermite basis comes back exactly
    c = M.hermite_coefficients(lambda x: he.hermeval(x, [0.5, 2.0, 0.0, 1.0]), 5)
    np.testing.assert_allclose(c, [0.5, 2.0, 0.0, 1.0, 0.0, 0.0], atol=1e-12)
    # x^2 = He_2 + He_0
    np.testing.assert_allclose(M.hermite_coefficients(lambda x: x**2, 3), [1.0, 0.0, 1.0, 0.0], atol=1e-12)
    # f(x) = e^{beta x - beta^2/2} - 1: c_k = beta^k / k! for k >= 1
    c = M.hermite_coefficients(lambda x: M.f(x, 1.3), 8)
    exact = [0.0] + [1.3**k / math.factorial(k) for k in range(1, 9)]
    np.testing.assert_allclose(c, exact, atol=1e-10)


def test_conditional_covariances_first_copy_and_convergence_to_sigma_g():
    cfg = AttentionConfig(n=64, d=64, h=2, h_kv=1, d_k=32, d_v=12, d_o=6, beta=0.8)
    draw = sample_fast(jax.random.key(11), cfg)
    copy_keys = [(jax.random.key(1000 + t), jax.random.key(2000 + t)) for t in range(64)]
    est = M.conditional_covariances(("yg_sigma_g", "yg"), draw, cfg, copy_keys, [1, 64])
    assert est.shape == (2, 2, cfg.d_o, cfg.d_o)
    # one copy: Y^T Y / n of the models built directly
    q = jax.random.normal(copy_keys[0][0], draw.q.shape)
    y = np.asarray(M.build_all(("yg_sigma_g", "yg"), draw._replace(q=q), cfg, key=copy_keys[0][1]))
    np.testing.assert_allclose(est[0], np.einsum("mno,mnp->mop", y, y) / cfg.n, rtol=1e-12)
    # 64 n rows: both converge to Sigma_G with the error of a Gaussian sample covariance
    sigma_g = np.asarray(M.sigma(M.kernel_g, draw, cfg))
    expected = sweeps.sample_covariance_error(sigma_g, 64 * cfg.n)
    for j in range(2):
        ratio = np.linalg.norm(est[1, j] - sigma_g) / np.linalg.norm(sigma_g) / expected
        assert 0.6 < ratio < 1.4, ratio
    with pytest.raises(ValueError):
        M.conditional_covariances(("yg",), draw, cfg, copy_keys[:4], [8])


def test_step_distances_of_rescaled_spectra():
    rng = np.random.default_rng(4)
    a = np.sort(rng.exponential(size=(5, 40)), axis=-1)
    spectra_ = {"a": a, "b": 1.1 * a, "c": 1.21 * a}
    steps = [("a", "b"), ("b", "c"), ("a", "c")]
    step_w1, step_ks, raw_w1, shift = S.step_distances(spectra_, steps)
    # b = 1.1 a: rel. W1 = 0.1 / 1.1 of b's mean; the shift is earlier over later, a / b - 1
    assert step_w1[("a", "b")].mean == pytest.approx(100 * 0.1 / 1.1, rel=1e-12)
    assert step_w1[("a", "b")].count == 5
    assert shift[("a", "b")].mean == pytest.approx(1 / 1.1 - 1, rel=1e-12)
    assert shift[("a", "c")].mean == pytest.approx(1 / 1.21 - 1, rel=1e-12)
    assert shift[("a", "c")].ci95 == pytest.approx(0.0, abs=1e-12)  # the same ratio on every seed
    np.testing.assert_allclose(raw_w1[("a", "c")], raw_w1[("a", "b")] + raw_w1[("b", "c")], rtol=1e-12)
    assert 0 < step_ks[("a", "b")].mean <= 1


def test_sigma_f_exists_for_every_beta():
    # a covariance given the keys: finite and positive semi-definite at beta^2 / d_k = 0.72, where the
    # per-query reading's second moment E M(q)^2 is infinite
    cfg = AttentionConfig(n=8, d=8, h=1, d_k=2, beta=1.2)
    s = np.asarray(M.sigma(M.kernel_f, sample_fast(jax.random.key(0), cfg), cfg))
    assert np.all(np.isfinite(s))
    assert np.linalg.eigvalsh(s).min() > -1e-10 * np.linalg.eigvalsh(s).max()


def test_form_comparison_against_the_models_and_the_sample_of_rows():
    """form_comparison: the true rows' output is build('yf_ring'); the forms are |u|^2/d_v of the head outputs;
    the returned exact means and variances describe the sample of the n rows of each head (a z-test per model
    with the returned variance, |z| < 4), at beta = 1/2 where the true rows' forms have a light tail."""
    cfg = AttentionConfig(n=256, d=256, h=4, h_kv=2, d_k=32, d_v=16, d_o=64, beta=0.5)
    key = jax.random.key(11)
    draw = sample_fast(key, cfg)
    gauss = jax.random.normal(jax.random.fold_in(key, 1), (cfg.h, cfg.n, cfg.d_v))
    outputs, forms, exact, rel_var = (np.asarray(a) for a in M.form_comparison(draw, gauss, cfg))
    assert outputs.shape == (2, cfg.n, cfg.d_o) and forms.shape == (2, cfg.h, cfg.n)
    assert exact.shape == (cfg.h,) and rel_var.shape == (2, cfg.h)
    np.testing.assert_allclose(outputs[0], np.asarray(M.build("yf_ring", draw, cfg)), rtol=1e-10, atol=1e-12)
    u = np.asarray(M.head_outputs("yf_ring", draw, cfg))
    np.testing.assert_allclose(forms[0], np.sum(u**2, axis=-1) / cfg.d_v, rtol=1e-10)
    for model in range(2):  # the mean over the n * h rows of forms / exact - 1, against the returned variance
        dev = forms[model] / exact[:, None] - 1  # (h, n); rows independent given K, V
        se = math.sqrt(np.sum(rel_var[model]) / cfg.n) / cfg.h
        assert abs(dev.mean()) < 4 * se, (model, dev.mean(), se)
        # and the sample variance of the Gaussian rows' forms matches the returned one: a Gaussian quadratic form
        # sum_i l_i z_i^2 has excess kurtosis 12 sum l^4 / (sum l^2)^2 <= 12, so the relative standard error of a
        # sample variance of n values is at most sqrt(14 / (n - 1)); 4 of them per head
        if model == 1:
            ratio = dev.var(axis=1, ddof=1) / rel_var[1]
            assert np.all(np.abs(ratio - 1) < 4 * math.sqrt(14 / (cfg.n - 1))), ratio
