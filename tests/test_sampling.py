"""The literal and the fast sampling paths."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gelib import AttentionConfig, spectra
from gelib.sampling import input_matrix, sample, sample_fast, sample_literal
from gelib.spectra import model_spectra

CFG = AttentionConfig(n=11, d=17, h=6, h_kv=3, d_k=5, d_v=7, d_o=13)


def test_shapes_and_determinism():
    a = sample_fast(jax.random.key(1), CFG)
    b = sample_fast(jax.random.key(1), CFG)
    c = sample_fast(jax.random.key(2), CFG)
    assert a.q.shape == (6, 11, 5) and a.k.shape == (3, 11, 5)
    assert a.v.shape == (3, 11, 7) and a.w_o.shape == (6, 7, 13)
    assert a.q.dtype == jnp.float64
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.allclose(a.q, c.q)
    lit = sample_literal(jax.random.key(1), CFG)
    assert lit.x.shape == (11, 17) and lit.w_q.shape == (6, 17, 5)
    assert sample(jax.random.key(3), CFG.replace(dtype="float32")).q.dtype == jnp.float32


def test_tying_uses_the_keys_as_values():
    cfg = CFG.replace(d_v=5, tie_kv=True)
    for draw in (sample_fast(jax.random.key(0), cfg), sample_literal(jax.random.key(0), cfg).draw):
        np.testing.assert_array_equal(draw.v, draw.k)


def test_input_rows_are_orthogonal():
    x = input_matrix(jax.random.key(0), 13, 29)
    np.testing.assert_allclose(x @ x.T / 29, np.eye(13), atol=1e-12)


def test_literal_projections_are_standard_gaussian():
    # Q_r = X W^Q_r with X X^T/d = I and W ~ N(0, 1/d): the n rows of Q_r are
    # i.i.d. N(0, I_dk), exactly. The sample covariance of N rows has
    # E||S - I||_F^2 = (dk^2 + dk) / N for Gaussian rows.
    cfg = AttentionConfig(n=40, d=60, h=1, d_k=6)
    qs = jnp.concatenate([sample_literal(jax.random.key(s), cfg).draw.q[0] for s in range(50)])
    n_rows, dk = qs.shape
    cov = np.asarray(qs.T @ qs / n_rows)
    expected = np.sqrt((dk**2 + dk) / n_rows)
    assert np.linalg.norm(cov - np.eye(dk)) < 3 * expected


@pytest.mark.parametrize("tie_kv, route", [(False, "direct"), (True, "direct"), (False, "qr"), (False, "bartlett")])
def test_both_paths_give_the_same_spectral_law(tie_kv, route):
    # Per seed, the first two moments of the MHA spectrum; across seeds their
    # means must agree between paths within a two-sample z bound (4 sigma).
    # The literal path always forms Y = U W^O; the fast path forms Y Y^T by
    # `route` (spectra.output_route, spectra.reduced_output_grams).
    cfg = {
        "direct": AttentionConfig(n=24, d=40, h=3, d_k=8, d_o=20, tie_kv=tie_kv),
        "qr": AttentionConfig(n=8, d=96, h=8, d_k=4, d_v=8, d_o=48),
        "bartlett": AttentionConfig(n=24, d=40, h=2, d_k=8, d_o=32),
    }[route]
    assert spectra.output_route(cfg, 1) == route
    seeds = 40
    stats = {}
    for path, key in (("fast", jax.random.key(10)), ("literal", jax.random.key(11))):
        ev = model_spectra(key, cfg, ("mha",), seeds, path=path, progress=False)["mha"]
        stats[path] = np.stack([ev.mean(1), (ev**2).mean(1)], axis=1)
    diff = stats["fast"].mean(0) - stats["literal"].mean(0)
    se = np.sqrt(stats["fast"].var(0, ddof=1) / seeds + stats["literal"].var(0, ddof=1) / seeds)
    assert np.all(np.abs(diff) < 4 * se), (diff, se)


def test_unknown_path():
    with pytest.raises(ValueError, match="path"):
        sample(jax.random.key(0), CFG, path="slow")


def test_restrict_cuts_an_exact_smaller_draw():
    from gelib import ConfigError
    from gelib.sampling import restrict

    big = AttentionConfig(n=40, d=60, h=3, d_k=12, d_v=14, d_o=60)
    small = AttentionConfig(n=20, d=30, h=3, d_k=6, d_v=7, d_o=30)
    draws = [sample_fast(jax.random.key(s), big) for s in range(40)]
    cut = [restrict(d, small) for d in draws]
    assert cut[0].q.shape == (3, 20, 6) and cut[0].v.shape == (3, 20, 7) and cut[0].w_o.shape == (3, 7, 30)
    np.testing.assert_array_equal(cut[0].k, draws[0].k[:, :20, :6])
    # W^O's block has variance 1 / (h d_v) of the small layer: h d_v w^2 averages to 1 over
    # 40 x 630 entries, standard error sqrt(2 / 25200) = 0.009.
    w = np.concatenate([np.ravel(c.w_o) for c in cut])
    assert abs(np.mean(w**2) * small.h * small.d_v - 1) < 4 * math.sqrt(2 / w.size)
    with pytest.raises(ConfigError, match="does not fit"):
        restrict(draws[0], big.replace(n=41, d=61))
    with pytest.raises(ConfigError, match="h/h_kv"):
        restrict(draws[0], small.replace(h=6))
