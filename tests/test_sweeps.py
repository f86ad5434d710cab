"""Sweeps over the context length (gelib.sweeps): keys, records and their read-back."""

import math

import jax
import numpy as np
import pytest
import scipy.stats

from gelib import AttentionConfig, ConfigError
from gelib import models as M
from gelib.keys import stream
from gelib.sampling import sample_fast
from gelib.spectra import ks, rel_w1, spectrum
from gelib.sweeps import PowerFit, Sweep, log_factor_allowance, proportional, run, slope_within

BASE = proportional(24, h=3, d_k=1 / 4, d_v=1 / 3, d_o=1 / 2, beta=0.8)
LAYERS = [BASE.at_length(n) for n in (12, 24)]


def _data(k):
    return tuple(np.asarray(jax.random.key_data(k)).ravel().tolist())


def spectra_measure(c, k):
    """A real measurement: the spectra of two models of one draw, and per-head values."""
    draw = sample_fast(k, c)
    ev = spectrum(M.build_all(("mha", "yf"), draw, c))
    return dict(ev_mha=ev[0], ev_f=ev[1], top=float(ev[0][-1]), heads=M.centering_terms(draw, c)["per_query_norm"])


def test_proportional_layers_have_the_stated_widths_and_match_at_length():
    c = proportional(100, h=2, d_k=0.125, d_v=0.3, d_o=1.5, beta=1.2, h_kv=1)
    assert (c.n, c.d, c.d_k, c.d_v, c.d_o, c.h, c.h_kv, c.beta) == (100, 150, 12, 30, 150, 2, 1, 1.2)
    assert proportional(10, h=1, d_k=0.01, d_v=0.5, d_o=0.5).d_k == 1  # at least 1
    assert proportional(40, h=1, d_k=0.5, d_v=0.5, d_o=0.5).d == 40  # d = max(n, d_o)
    big = proportional(512, h=4, d_k=1 / 2, d_v=1 / 4, d_o=3 / 2)
    for n in (64, 128, 256):  # exact ratios: at_length gives the same layer as a fresh construction
        assert big.at_length(n) == proportional(n, h=4, d_k=1 / 2, d_v=1 / 4, d_o=3 / 2)
    with pytest.raises(ConfigError):
        proportional(16, h=3, d_k=0.5, d_v=0.5, d_o=1.0, h_kv=2)


def test_each_draw_gets_the_stream_of_its_length_and_seed():
    key = stream(7, "sweep")
    sw = run(lambda c, k: {"key": _data(k)}, LAYERS, 3, key)
    assert sw.ns == (12, 24) and sw.seeds == 3
    for c in LAYERS:
        for s in range(3):
            got = sw.record(c.n, s)["key"]
            assert got == _data(stream(7, "sweep", c.n, s))
            assert got == _data(jax.random.fold_in(jax.random.fold_in(key, c.n), s))
    assert len({sw.record(n, s)["key"] for n in sw.ns for s in range(3)}) == 6


def test_a_longer_sweep_extends_a_shorter_one_draw_by_draw():
    key = stream(1, "sweep")
    small = run(spectra_measure, LAYERS[:1], 2, key)
    large = run(spectra_measure, [LAYERS[1], LAYERS[0]], 3, key)
    assert large.ns == (24, 12)  # the order given
    for s in range(2):
        np.testing.assert_array_equal(small.record(12, s)["ev_mha"], large.record(12, s)["ev_mha"])


def test_draws_of_a_sweep_are_independent():
    # sqrt(m) times the mean of m standard normals is N(0, 1) for each draw; with
    # independent keys the 5 x 40 values are i.i.d. N(0, 1) (repeated or
    # correlated keys would shrink or inflate their spread).
    m = 64
    layers = [AttentionConfig(n=n, d=n, h=1, d_k=1) for n in (2, 3, 5, 8, 13)]
    sw = run(lambda c, k: {"z": float(jax.random.normal(k, (m,)).mean()) * math.sqrt(m)}, layers, 40, stream(2))
    z = sw.field("z").ravel()
    assert z.size == 200 and len(set(z.tolist())) == 200
    assert scipy.stats.kstest(z, "norm").pvalue > 1e-4
    chi2 = np.sum(z**2)  # ~ chi-square with 200 degrees of freedom
    assert scipy.stats.chi2.ppf(1e-4, 200) < chi2 < scipy.stats.chi2.isf(1e-4, 200)


def test_fields_are_read_back_as_the_direct_loop_computes_them():
    key = stream(3, "sweep")
    sw = run(spectra_measure, LAYERS, 2, key)
    direct = {(c.n, s): spectra_measure(c, stream(key, c.n, s)) for c in LAYERS for s in range(2)}
    top = sw.field("top")
    assert top.shape == (2, 2)
    np.testing.assert_allclose(top, [[direct[n, s]["top"] for s in range(2)] for n in sw.ns], rtol=1e-12)
    np.testing.assert_allclose(sw.field("ev_mha", np.max), top, rtol=1e-12)  # reduce per draw
    heads = sw.field("heads")
    assert heads.shape == (2, 2, 3)  # per-head values keep their axis
    np.testing.assert_allclose(sw.field("heads", np.median), np.median(heads, axis=-1))
    at = sw.at(24)
    assert at["ev_mha"].shape == (2, 24)
    np.testing.assert_allclose(at["ev_f"][1], direct[24, 1]["ev_f"], rtol=1e-12)
    d = sw.apply(rel_w1, "ev_mha", "ev_f")
    np.testing.assert_allclose(
        d, [[rel_w1(direct[n, s]["ev_mha"], direct[n, s]["ev_f"]) for s in range(2)] for n in sw.ns], rtol=1e-12
    )
    assert np.all(sw.apply(ks, "ev_mha", "ev_mha") == 0) and np.all(sw.apply(ks, "ev_mha", "ev_f") > 0)
    pairs = sw.pairs("ev_mha", "ev_f")
    assert list(pairs) == [12, 24] and pairs[12].shape == (2, 2, 12)
    np.testing.assert_array_equal(pairs[24][:, 1], at["ev_f"])
    assert sw.config(12) == LAYERS[0]


def test_misuse_fails_with_a_message():
    sw = run(spectra_measure, LAYERS, 1, stream(4))
    with pytest.raises(ValueError, match="shapes"):
        sw.field("ev_mha")  # 12 and 24 eigenvalues: ragged
    with pytest.raises(KeyError, match="not in the sweep"):
        sw.at(48)
    with pytest.raises(ValueError, match="distinct"):
        run(spectra_measure, [LAYERS[0], LAYERS[0]], 1, stream(4))
    with pytest.raises(ValueError, match="seeds"):
        run(spectra_measure, LAYERS, 0, stream(4))
    with pytest.raises(ValueError, match="fields"):
        run(lambda c, k: {"a": 1} if c.n == 12 else {"b": 1}, LAYERS, 1, stream(4))
    assert isinstance(sw, Sweep)


def test_slope_within_allows_the_confidence_interval_plus_the_margins():
    fit = lambda slope, ci: PowerFit(slope=slope, prefactor=1.0, ci95=ci)  # noqa: E731
    assert slope_within(fit(-0.5, 0.0), -0.5, 0.0, 0.0)
    assert slope_within(fit(-0.3, 0.05), -0.5, 0.15, 0.2)  # -0.3 <= -0.5 + 0.05 + 0.2
    assert not slope_within(fit(-0.2, 0.05), -0.5, 0.15, 0.2)
    assert slope_within(fit(-0.7, 0.05), -0.5, 0.15, 0.2)  # -0.7 >= -0.5 - 0.05 - 0.15
    assert not slope_within(fit(-0.75, 0.05), -0.5, 0.15, 0.2)
    assert not slope_within(fit(0.0, 0.1), -0.5, 0.15, 0.2)  # a constant error: the wrong normalisation


def test_log_factor_allowance_is_the_secant_slope_of_the_log_factor():
    # a noiseless n^-1 log n fitted over ns: its slope is -1 plus the allowance, exactly
    ns = np.array([100.0, 400.0, 1600.0])
    fit = np.polyfit(np.log(ns), np.log(np.log(ns) / ns), 1)[0]
    # least squares over three equally spaced log n is the secant through the end points
    assert fit == pytest.approx(-1 + log_factor_allowance(ns), rel=1e-9)
    assert log_factor_allowance((100, 1600), 0.5) == pytest.approx(
        0.5 * (np.log(np.log(1600) / np.log(100))) / np.log(16), rel=1e-12
    )
    with pytest.raises(ValueError):
        log_factor_allowance((1, 1))
