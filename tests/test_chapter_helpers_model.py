"""Helpers moved out of the model chapter, each against an independent computation."""

import math
import time

import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

from gelib import AttentionConfig
from gelib import models as M
from gelib.sampling import sampling_seconds
from gelib.spectra import mean_check, summarize


def _f_moment_closed(p, beta):
    # E f^p with f = u - 1, E u^k = e^{k (k - 1) beta^2 / 2}: the binomial expansion
    return sum(math.comb(p, k) * (-1) ** (p - k) * math.exp(k * (k - 1) * beta**2 / 2) for k in range(p + 1))


@pytest.mark.parametrize("p, beta", [(2, 1.0), (3, 1.0), (4, 1.0), (4, 0.5), (4, 1.5)])
def test_f_moment_mc_against_the_closed_form(p, beta):
    mc, se = M.f_moment_mc(jax.random.key(p), p, beta, size=2**16)
    exact = _f_moment_closed(p, beta)
    assert abs(mc - exact) < 5 * se
    # the tilt keeps the relative error of order one: a few per cent with 2^16 draws, even at beta = 1.5
    assert se / exact < 0.05


def test_f_moment_mc_is_the_tilted_average():
    # the estimate is the weighted mean of f(a)^p over a ~ N(mu, 1): the same draws, reweighted by hand
    key, p, beta = jax.random.key(7), 4, 1.0
    mu = (p - 0.5) * beta
    a = np.asarray(mu + jax.random.normal(key, (1000,)))
    x = (np.exp(beta * a - beta**2 / 2) - 1) ** p * scipy.stats.norm.pdf(a) / scipy.stats.norm.pdf(a, loc=mu)
    mc, se = M.f_moment_mc(key, p, beta, size=1000)
    assert mc == pytest.approx(x.mean(), rel=1e-10) and se == pytest.approx(x.std() / math.sqrt(1000), rel=1e-10)


@pytest.mark.parametrize("p, beta, d_k", [(2, 1.0, 32), (4, 1.0, 32), (4, 0.5, 16), (2, 1.5, 64)])
def test_key_norm_mgf_is_the_score_moment_over_its_lognormal_limit(p, beta, d_k):
    # the model chapter's ratio: E u^p over Gaussian queries and keys, u = e^{beta S - beta^2 / 2}, divided by
    # the log-normal e^{p (p - 1) beta^2 / 2}. Given q, E e^{t S} = e^{t^2 |q|^2 / (2 d_K)}; averaged over
    # |q|^2 ~ chi^2_{d_K} by quadrature here
    t = p * beta
    integrand = lambda x: np.exp(t**2 * x / (2 * d_k) + scipy.stats.chi2.logpdf(x, d_k))
    mgf = scipy.integrate.quad(integrand, 0, 40 * d_k, points=[d_k], epsabs=0, epsrel=1e-11, limit=200)[0]
    e_up = math.exp(-p * beta**2 / 2) * mgf
    ratio = e_up / math.exp(p * (p - 1) * beta**2 / 2)
    assert M.key_norm_mgf((p * beta) ** 2 / 2, d_k) == pytest.approx(ratio, rel=1e-8)


def test_mean_check_against_numpy():
    cfg = AttentionConfig(n=64, d=96, h=4, d_k=16)
    rng = np.random.default_rng(0)
    exact = cfg.first_moment * (1 + M.mha_shift_exact(cfg.n, cfg.d_k, cfg.beta))
    spectra = rng.exponential(exact, size=(12, cfg.n))
    s, rel_err, tol = mean_check(spectra, cfg)
    means = spectra.mean(axis=1)
    assert s == summarize(means) and s.count == 12
    assert rel_err == pytest.approx(means.mean() / exact - 1, rel=1e-12)
    sem = means.std(ddof=1) / math.sqrt(12)
    assert tol == pytest.approx(scipy.stats.t.ppf(0.995, 11) * sem / exact, rel=1e-12)
    # a tied layer: against the limit m_1, with 1 / sqrt(n) added to the tolerance
    tied = cfg.replace(tie_kv=True)
    s_t, err_t, tol_t = mean_check(spectra, tied)
    assert err_t == pytest.approx(means.mean() / tied.first_moment - 1, rel=1e-12)
    assert tol_t == pytest.approx(scipy.stats.t.ppf(0.995, 11) * sem / tied.first_moment + 1 / 8, rel=1e-12)
    assert mean_check(spectra, cfg).rel_err == rel_err  # a named tuple


def test_sampling_seconds_leaves_out_the_compiling_call(monkeypatch):
    import gelib.sampling as S

    calls = []

    def slow_first(key, cfg):  # 0.3 s the first time, 10 ms after: the median of the rest is 10 ms
        calls.append(1)
        time.sleep(0.3 if len(calls) == 1 else 0.01)
        return jax.numpy.zeros(1)

    monkeypatch.setattr(S, "sample_fast", slow_first)
    (fast,) = sampling_seconds(jax.random.key(0), AttentionConfig(n=16, d=16, h=1, d_k=4), ("fast",), reps=3)
    assert len(calls) == 4 and 0.009 < fast < 0.1
    cfg = AttentionConfig(n=32, d=48, h=2, d_k=8)
    t_fast, t_lit = sampling_seconds(jax.random.key(0), cfg, reps=1)
    assert t_fast > 0 and t_lit > 0
