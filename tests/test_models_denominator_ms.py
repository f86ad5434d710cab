"""The exact per-step shifts, the mean square of the denominator ratio and the relative spread of
the quadratic forms, each against something it was not computed from.

* :func:`gelib.models.step_shifts_exact` against the functions it names, the whole chain's exact
  shift (:func:`gelib.models.mha_shift_exact`: the steps' ratios multiply to it) and the leading
  orders of :func:`gelib.models.step_shifts`;
* :func:`gelib.models.denominator_deviation_ms` against a NumPy Monte Carlo of ``C_ii`` and against
  its own expansions in ``1 / d_K`` (derived here from the chi-square moment generating function);
* the ``c_ms`` field of :func:`gelib.models.denominator_terms` against a NumPy computation from the draw;
* :func:`gelib.models.form_relative_std` against its composition, and its ``n -> oo`` limit at a
  fixed key width against a closed form derived here (not zero), at ``d_K = n/2`` against ``n^{-1/2}``.
"""

import math

import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from gelib import models as M
from gelib import sweeps
from gelib.sampling import sample_fast

# ---------------------------------------------------------------------------------------------
# 1. step_shifts_exact


@pytest.mark.parametrize("n, d_k, beta", [(512, 256, 1.0), (256, 16, 0.7)])
def test_step_shifts_exact_names_and_values(n, d_k, beta):
    exact = M.step_shifts_exact(n, d_k, beta)
    assert list(exact) == [name for name, _, _ in M.STEPS]
    assert exact["gaussian_rows"] == 0.0 and exact["query_substitution"] == 0.0
    assert exact["denominator"] == M.denominator_shift_exact(n, d_k, beta)
    assert exact["centering"] == M.centering_shift_exact(d_k, beta)
    assert exact["covariance"] == M.sigma_mean_ratio(d_k, beta) - 1
    # Each step is a ratio of mean row energies (earlier over later); they telescope to MHA over Y^G,
    # which mha_shift_exact computes from E m_G = e^{beta^2} - 1 (the centering step's E Var_q(f | k) and
    # sigma_mean_ratio's E kernel_f diagonal are the same energy, through two different formulas).
    chain = math.prod(1 + s for s in exact.values()) - 1
    assert chain == pytest.approx(M.mha_shift_exact(n, d_k, beta), rel=1e-10)


def test_step_shifts_exact_approach_the_leading_order():
    # The leading orders drop O(d_K^-2 + n^-2 + (n d_K)^-1): relative to the O(1/d_K + 1/n) shifts that is
    # O(1/d_K + 1/n), so eight times n and d_K should shrink the relative difference about eightfold.
    def rel(n, d_k):
        exact, lead = M.step_shifts_exact(n, d_k), M.step_shifts(n, d_k)
        return {k: abs(exact[k] / lead[k] - 1) for k in exact if lead[k] != 0}

    small, large = rel(512, 256), rel(4096, 2048)
    assert set(small) == {"denominator", "centering", "covariance"}
    for step in small:
        assert large[step] < small[step] / 4, (step, small[step], large[step])
        assert large[step] < 0.05, (step, large[step])


# ---------------------------------------------------------------------------------------------
# 2. denominator_deviation_ms


def _c2(rho, beta):
    """The n^-2 coefficient of E[(1/X - 1)^2 | rho] (X = a (1 + e), E e^2 = w/n, E e^3 = w^2 (w + 3)/n^2,
    E e^4 = 3 w^2 / n^2 + O(n^-3); a = e^{beta^2 (rho - 1)/2}, w = e^{beta^2 rho} - 1): expanding
    1/X = (1 - e + e^2 - e^3 + e^4 ...) / a one order further than the library does."""
    b2 = beta**2
    a, w = np.exp(b2 * (rho - 1) / 2), np.expm1(b2 * rho)
    return -2 * (1 / a - 1) * w**3 / a + w**2 * (3 - 2 * w) / a**2


def _mean_abs_c2(d_k, beta):
    """E |c2(rho)| over rho = chi^2_{d_K} / d_K, by quadrature (30 standard deviations of rho)."""
    pdf = lambda r: abs(_c2(r, beta)) * scipy.stats.chi2.pdf(r * d_k, d_k) * d_k  # noqa: E731
    return scipy.integrate.quad(pdf, 0, 1 + 30 * math.sqrt(2 / d_k), limit=200)[0]


@pytest.mark.parametrize("d_k, beta", [(16, 1.0), (64, 1.0), (16, 0.7)])
def test_denominator_deviation_ms_against_monte_carlo(d_k, beta):
    """mean_ij (C_ii - 1)^2 with C_ii = 1 / mean_j e^{beta s_ij - beta^2/2}, over independent (Q, K) draws."""
    n, draws = 256, 100
    rng = np.random.default_rng(23)
    ms = np.empty(draws)
    for r in range(draws):
        q, k = rng.standard_normal((2, n, d_k))
        c = 1 / np.mean(np.exp(beta * (q @ k.T) / math.sqrt(d_k) - beta**2 / 2), axis=1)
        ms[r] = np.mean((c - 1) ** 2)
    se = ms.std(ddof=1) / math.sqrt(draws)  # rows of one draw share K: the draws are the independent units
    pred = M.denominator_deviation_ms(n, d_k, beta)
    # Allowance for the neglected O(n^-2): its coefficient c2 (above) has E|c2| <= e^{3 beta^2} / 2 here
    # (checked), and the n^-3 terms carry the fourth cumulant of the row terms, about e^{6 beta^2} / n^3,
    # below e^{3 beta^2} / (2 n^2) for n > 2 e^{3 beta^2} (40 at beta = 1). So e^{3 beta^2} / n^2 covers both.
    assert _mean_abs_c2(d_k, beta) <= math.exp(3 * beta**2) / 2
    assert n > 2 * math.exp(3 * beta**2)
    tol = 4 * se + math.exp(3 * beta**2) / n**2
    assert abs(ms.mean() - pred) < tol, (ms.mean(), pred, se)
    # power: the check sees the 1/n term (the sampling of the n keys), not only the query norm's share
    assert abs(pred - M.denominator_deviation_ms(math.inf, d_k, beta)) > 2 * tol


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5])
def test_denominator_deviation_ms_limits(beta):
    b2 = beta**2
    mgf = M.key_norm_mgf
    for d_k in (8.0, 64, 1000):
        assert M.denominator_deviation_ms(math.inf, d_k, beta) == pytest.approx(
            mgf(-b2, d_k) - 2 * mgf(-b2 / 2, d_k) + 1, rel=1e-14
        )
    # M(c) = e^{-c} (1 - 2c/d)^{-d/2} = 1 + c^2/d + (4c^3/3 + c^4/2)/d^2 + O(d^-3) gives
    #   n = oo:           b^4 / (2d) * (1 + (7 b^4/8 - 2 b^2) / d + O(d^-2)),
    #   the 1/n term:     e^{b^2} - 1 - (e^{b^2} + 5) b^4 / (2d) + O(d^-2).
    for d_k in (1024, 4096, 16384):
        query = M.denominator_deviation_ms(math.inf, d_k, beta)
        keys = M.denominator_deviation_ms(1, d_k, beta) - query  # the coefficient of 1/n (exactly linear in 1/n)
        assert query == pytest.approx(beta**4 / (2 * d_k), rel=3 * b2 / d_k)  # relative error O(1/d_K)
        assert d_k * (query / (beta**4 / (2 * d_k)) - 1) == pytest.approx(7 * b2**2 / 8 - 2 * b2, abs=100 / d_k)
        assert d_k * (keys - math.expm1(b2)) == pytest.approx(-(math.exp(b2) + 5) * b2**2 / 2, abs=100 / d_k)
    # the 1/n coefficient at n = 512 and n = 1024 differs by exactly (1/512 - 1/1024) times it
    d1, d2 = M.denominator_deviation_ms(512, 64, beta), M.denominator_deviation_ms(1024, 64, beta)
    keys = M.denominator_deviation_ms(1, 64, beta) - M.denominator_deviation_ms(math.inf, 64, beta)
    assert d1 - d2 == pytest.approx(keys / 1024, rel=1e-10)
    assert keys > 0


# ---------------------------------------------------------------------------------------------
# 3. denominator_terms' c_ms


@pytest.mark.parametrize("beta, h_kv", [(1.0, 2), (0.6, 1)])
def test_denominator_terms_c_ms_from_the_draw(beta, h_kv):
    cfg = sweeps.proportional(64, h=2, d_k=1 / 2, d_v=1 / 2, d_o=1, beta=beta, h_kv=h_kv)
    assert cfg.dtype == "float64"
    draw = sample_fast(jax.random.key(0), cfg)
    terms = M.denominator_terms(draw, cfg)
    assert terms["c_ms"].shape == (cfg.h,)
    expected = []
    for r in range(cfg.h):
        g = r // cfg.group_size  # the head's key group
        s = np.asarray(M.scores(draw.q[r], draw.k[g]))
        c = cfg.n * math.exp(beta**2 / 2) / np.sum(np.exp(beta * s), axis=1)
        expected.append(np.mean((c - 1) ** 2))
    np.testing.assert_allclose(np.asarray(terms["c_ms"]), expected, rtol=1e-10)
    # the heads differ (each its own queries): a field that ignored the head index would fail above
    assert abs(expected[0] - expected[1]) > 1e-6 * expected[0]


# ---------------------------------------------------------------------------------------------
# 4. form_relative_std


def test_form_relative_std_is_its_composition():
    k = np.random.default_rng(4).standard_normal((48, 12))
    for beta, d_v in ((1.0, 6), (0.5, 24)):
        mean = float(np.trace(np.asarray(M.kernel_f(k, beta)))) / 48
        expected = math.sqrt(float(M.form_variance_wishart(k, beta, d_v))) / mean
        assert M.form_relative_std(k, beta, d_v) == pytest.approx(expected, rel=1e-12)


def _fixed_width_limit(d_k, beta):
    """gelib's closed form of the fixed-width limit, after checking its mean against the row energy that
    centering_shift_exact uses (a second derivation of the same Gaussian integrals)."""
    b2 = beta**2
    energy = math.exp(b2) * M.key_norm_mgf(2 * b2, d_k) - M.key_norm_mgf(b2, d_k)
    e = lambda c: (1 - 2 * c / d_k) ** (-d_k / 2)  # noqa: E731
    a2, c2 = 2 * math.exp(-b2) * (1 - b2 / d_k) ** (-d_k / 2), b2 / (2 * (1 - b2 / d_k))
    mean = math.exp(-b2) * e(2 * b2) - a2 * e(c2) + M.key_norm_mgf(b2, d_k)
    assert mean == pytest.approx(energy, rel=1e-12)
    return M.form_relative_std_limit(d_k, beta)


def test_form_relative_std_limit_against_monte_carlo():
    """The limit is sd(g) / E g with g(rho) = E_k[f-ring^2 | q]: a Monte Carlo over queries of the mean of
    f-ring^2 over many keys (the key average's own noise adds a known O(1/keys) variance, subtracted)."""
    d_k, beta, queries, keys = 64, 1.0, 400, 20_000
    rng = np.random.default_rng(5)
    k = rng.standard_normal((keys, d_k))
    mu = np.exp(beta**2 * (np.sum(k**2, 1) / d_k - 1) / 2)  # E_q e^{beta s - beta^2/2} given the key
    g, noise = [], []
    for _ in range(queries):
        q = rng.standard_normal(d_k)
        terms = (np.exp(beta * (k @ q) / math.sqrt(d_k) - beta**2 / 2) - mu) ** 2
        g.append(terms.mean())
        noise.append(terms.var() / keys)
    g = np.array(g)
    var_g = g.var(ddof=1) - np.mean(noise)  # the variance of g(rho), less the sampling of the keys
    est = math.sqrt(var_g) / g.mean()
    # a sample standard deviation of N draws has relative standard error sqrt((kappa - 1) / (4 N)), kappa the
    # kurtosis of g; g is a log-normal-like function of rho with relative spread ~0.5, kappa <= 9: 4 such errors
    kurt = scipy.stats.kurtosis(g, fisher=False)
    assert kurt < 9, kurt
    assert est == pytest.approx(M.form_relative_std_limit(d_k, beta), rel=4 * math.sqrt(8 / (4 * queries)))


def _mean_square_std(n, d_k, beta, draws=2):
    """form_relative_std^2 at d_V = n/8, averaged over ``draws`` key draws (NumPy keys: no compilation)."""
    rng = np.random.default_rng(n + d_k)
    return np.mean([M.form_relative_std(rng.standard_normal((n, d_k)), beta, n // 8) ** 2 for _ in range(draws)])


def test_form_relative_std_does_not_vanish_at_a_fixed_key_width():
    """d_K = 16, beta = 0.5 (at beta = 1 and d_K = 16 the fourth moment of f over the keys is infinite,
    and the values jump from one key draw to the next): v^2 = L^2 + O(1/n), the O(1/n) from the diagonal
    j = m of the four-index sum and from 2 / d_V; L > 0 is the closed form above."""
    lim2 = _fixed_width_limit(16, 0.5) ** 2
    assert lim2 > 0.2  # L = 0.52
    fixed = {n: _mean_square_std(n, 16, 0.5) for n in (128, 512)}
    assert fixed[512] > lim2 and fixed[128] > fixed[512]
    excess = (fixed[128] - lim2) / (fixed[512] - lim2)
    assert 2.5 < excess < 6, excess  # O(1/n): fourfold from 128 to 512
    assert math.sqrt(fixed[128] / fixed[512]) < 1.5  # far from the factor 2 of n^{-1/2}


def test_form_relative_std_falls_like_n_to_the_minus_half_at_proportional_key_width():
    # d_K = n/2: L^2 = O(1/d_K) and the diagonal part O(1/n), so v^2 n tends to a constant (the same beta)
    scaled = {n: _mean_square_std(n, n // 2, 0.5) * n for n in (128, 512)}
    assert scaled[128] / scaled[512] == pytest.approx(1.0, abs=0.2), scaled
