"""Helpers moved out of the limit-law and spectral-shapes chapters, each against an independent computation."""

import math

import jax
import numpy as np
import pytest

from gelib import AttentionConfig, figure_data
from gelib.attention_law import attention_law, chain, closed_form_variances, reduced_s_series
from gelib.freeprob import s_transform_series
from gelib.spectra import attention_spectrum


@pytest.mark.parametrize(
    "cfg",
    [
        AttentionConfig(n=1024, d=1024, h=16, d_k=64, d_o=1024),
        AttentionConfig(n=512, d=768, h=4, d_k=64, d_v=96, d_o=768, beta=1.0),
        AttentionConfig(n=256, d=512, h=4, h_kv=2, d_k=32, d_v=48, d_o=384, beta=0.7),
        AttentionConfig(n=256, d=256, h=8, d_k=16, d_o=128, beta=1.4),
    ],
)
def test_closed_form_variances_are_the_laws_exact_moments(cfg):
    # second method: the exact moment algebra of the chain of compressions (the solver's moments)
    var_v, var_out = closed_form_variances(cfg)
    ch = chain(cfg)
    for law, formula in ((ch.value, var_v), (ch.output, var_out)):
        m1, m2 = law.moments(2)
        assert formula == pytest.approx(m2 - m1**2, rel=1e-12)


def test_closed_form_variances_at_fixed_width_fall_to_the_beta4_floor():
    # d_K = d_V = rho n / h: Var mu_V = rho s^2 / h + beta^4 (the limit-law chapter's exercise)
    s = math.expm1(1.0)
    for h in (1, 4, 16, 64):
        var_v, _ = closed_form_variances(AttentionConfig(n=1024, d=1024, h=h, d_k=1024 // h, d_o=1024))
        assert var_v == pytest.approx(s**2 / h + 1.0, rel=1e-12)
    with pytest.raises(ValueError, match="untied"):
        closed_form_variances(AttentionConfig(n=256, d=256, h=4, d_k=64, tie_kv=True))


def test_reduced_s_series_is_the_output_covariances_s_transform():
    # second method: the output law is the compression of mu_VO with ratio d_O / n, and a compression gives
    # S_out(u) (d_O / n + u) = S_VO(u n / d_O): the series of mu_VO's own moments, coefficient j times (n / d_O)^j
    cfg = AttentionConfig(n=1024, d=2048, h=4, d_k=256, d_o=512)
    series = reduced_s_series(cfg, 8)
    vo = s_transform_series(chain(cfg).output_covariance.moments(8)) * (cfg.n / cfg.d_o) ** np.arange(8)
    np.testing.assert_allclose(series, vo, rtol=1e-9)
    # and, as the chapter checks, it does not see d_O
    for d_o in (1024, 2048):
        np.testing.assert_allclose(reduced_s_series(cfg.replace(d_o=d_o), 8), series, rtol=1e-9)


def test_attention_spectrum_against_a_numpy_softmax():
    cfg = AttentionConfig(n=96, d=96, h=1, d_k=24, beta=1.3)
    key = jax.random.key(3)
    ev = attention_spectrum(key, cfg)
    q, k = np.asarray(jax.random.normal(key, (2, cfg.n, cfg.d_k)))  # the same draw, then NumPy
    s = cfg.beta * q @ k.T / math.sqrt(cfg.d_k)
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    y = math.sqrt(cfg.n) * (a - 1 / cfg.n)
    assert ev.shape == (cfg.n,) and np.all(np.diff(ev) >= 0)
    np.testing.assert_allclose(ev, np.linalg.eigvalsh(y @ y.T), rtol=1e-9, atol=1e-9)
    # rows of A^perp sum to zero: one eigenvalue is 0; the mean is ||sqrt(n) A^perp||_F^2 / n
    assert ev[0] == pytest.approx(0.0, abs=1e-9) and ev.mean() == pytest.approx(np.sum(y**2) / cfg.n, rel=1e-10)


def test_attention_spectrum_mean_near_its_laws():
    cfg = AttentionConfig(n=256, d=256, h=1, d_k=64, beta=1.0)
    means = [attention_spectrum(jax.random.key(s), cfg).mean() for s in range(4)]
    law_mean = attention_law(cfg).moments(1)[0]
    assert law_mean == pytest.approx(math.expm1(1.0), rel=1e-12)
    assert np.mean(means) == pytest.approx(law_mean, rel=0.05)  # a finite-size shift of a few per cent


def test_d1_layer_against_the_dimensions_it_promises():
    for h in (1, 4, 16):
        c = figure_data.d1_layer(h, 256, beta=0.5)
        assert c == AttentionConfig(n=256, d=256, h=h, d_k=256 // h, d_v=256 // h, d_o=256, beta=0.5)
        assert c.h * c.d_v == c.n
    wide = figure_data.d1_layer(4, 256, d_o=512, h_kv=2)
    assert (wide.d, wide.d_o, wide.h_kv, wide.d_k) == (512, 512, 2, 64)
    assert figure_data.d1_layer(4, 256, tie_kv=True).tie_kv
