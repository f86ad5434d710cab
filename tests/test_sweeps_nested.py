"""Nested sweeps over n (gelib.sweeps): one draw per seed, every size cut out of it."""

import jax
import numpy as np
import pytest

from bookrun.explore import explorer
from gelib import AttentionConfig, ConfigError
from gelib.sampling import restrict, sample_fast
from gelib.sweeps import NestedDraws, explorer_sliders, main_layer

BASE = AttentionConfig(n=12, d=18, h=4, h_kv=2, d_k=6, d_v=8, d_o=18, beta=0.8)
BIG = BASE.at_length(24)


def sweep(gaussians=True, seeds=3):
    return NestedDraws.sample(
        BIG,
        [jax.random.key(10 + s) for s in range(seeds)],
        [jax.random.key(20 + s) for s in range(seeds)],
        gaussians=gaussians,
    )


def test_each_seed_is_one_draw_of_the_big_layer():
    sw = sweep()
    assert sw.seeds == 3 and BIG.n == 24 and BIG.d_k == 12
    for s in range(3):
        ref = sample_fast(jax.random.key(10 + s), BIG)
        for a, b in zip(sw.draws[s], ref):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sw.gaussians[s], jax.random.normal(jax.random.key(20 + s), (4, 24, 16)))


def test_smaller_layers_are_the_leading_blocks():
    sw = sweep()
    c = BASE.at_length(12)
    for s, (draw, gauss, noise) in enumerate(sw.each(c)):
        ref = restrict(sw.draws[s], c)
        for a, b in zip(draw, ref):
            np.testing.assert_array_equal(a, b)
        assert draw.q.shape == (4, 12, 6) and draw.w_o.shape == (4, 8, 18)
        np.testing.assert_array_equal(gauss, np.asarray(sw.gaussians[s])[:, :12, :8])
        assert noise is sw.noise[s]
    # the blocks of the nested layers coincide: a smaller layer is inside a larger one
    small, mid = sw.draw(BASE.at_length(6), 1), sw.draw(BASE.at_length(12), 1)
    np.testing.assert_array_equal(small.k, mid.k[:, :6, :3])
    # W^O keeps variance 1 / (h d_v) in every layer
    w = np.concatenate([np.ravel(sw.draw(c, s).w_o) for s in range(3)])
    assert abs(np.var(w) * c.h * c.d_v - 1) < 0.3


def test_fits_and_the_explorer_layer():
    sw = sweep()
    inside = BASE.replace(d_k=4)
    assert sw.fits(inside) and sw.fits(BIG)
    for outside in (BASE.at_length(48), BASE.replace(h=8, h_kv=2), BASE.replace(h_kv=4), BASE.replace(d_v=17)):
        assert not sw.fits(outside)
    # a layer that fits is cut out of seed 0 (keys ignored) ...
    draw, gauss, noise = sw.layer(inside, jax.random.key(1), jax.random.key(2))
    np.testing.assert_array_equal(draw.k, restrict(sw.draws[0], inside).k)
    assert noise is sw.noise[0]
    # ... any other is sampled afresh from the keys given
    out = BASE.at_length(48)
    draw, gauss, noise = sw.layer(out, jax.random.key(1), jax.random.key(2))
    np.testing.assert_array_equal(draw.q, sample_fast(jax.random.key(1), out).q)
    np.testing.assert_array_equal(gauss, jax.random.normal(jax.random.key(2), (4, 48, 32)))
    with pytest.raises(ConfigError):
        sw.gaussian(out)


def test_without_gaussian_rows():
    sw = sweep(gaussians=False, seeds=1)
    assert sw.gaussians is None and sw.seed(BASE).gaussian is None
    with pytest.raises(ValueError):
        sw.gaussian(BASE)
    with pytest.raises(ValueError):
        NestedDraws.sample(BIG, [jax.random.key(0)], [])


def test_main_layer_and_sliders():
    cfg = main_layer(dict(n=16, h=4, h_kv=2, d_k=8, d_v=4, d_o=24, beta=1.5, seeds=3, ns=(8, 16)))
    assert cfg == AttentionConfig(n=16, d=24, h=4, h_kv=2, d_k=8, d_v=4, d_o=24, beta=1.5)
    assert main_layer(dict(n=16, h=2, d_k=8)) == AttentionConfig(n=16, d=16, h=2, d_k=8)
    ex = explorer(lambda **kw: kw, show=False, **explorer_sliders(cfg))
    assert ex.defaults() == dict(beta=1.5, h=4, d_k=8, d_v=4, n=16)
    assert ex.sliders["n"] == (16, 16, 1024, 32)  # the range grows to include the default
