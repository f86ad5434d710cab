"""The copy stream of the query-substitution chapter: gelib.sweeps.copy_errors."""

import jax
import numpy as np
import pytest

from gelib import AttentionConfig
from gelib.models import conditional_covariances, kernel_f, kernel_g, sigma
from gelib.numerics import fit_power_law
from gelib.sampling import sample_fast
from gelib.spectra import summarize
from gelib.sweeps import copy_errors, sample_covariance_error

CFG = AttentionConfig(n=16, d=16, h=2, d_k=8, d_v=8, d_o=12)
PAIR = ("yg_sigma_g", "yg")


def keys(seed, copies):
    return [(jax.random.key(1000 * seed + 2 * t), jax.random.key(1000 * seed + 2 * t + 1)) for t in range(copies)]


def test_copy_errors_against_the_covariances_by_hand():
    draw = sample_fast(jax.random.key(1), CFG)
    out = copy_errors(draw, CFG, PAIR, keys(0, 4), [1, 2, 4])
    sg, sf = (np.asarray(sigma(k, draw, CFG)) for k in (kernel_g, kernel_f))
    est = conditional_covariances(PAIR, draw, CFG, keys(0, 4), [1, 2, 4])
    np.testing.assert_array_equal(out.rows, [16, 32, 64])
    assert out.errors.shape == out.errors_f.shape == (3, 2)
    np.testing.assert_allclose(out.errors[2, 1], np.linalg.norm(est[2, 1] - sg) / np.linalg.norm(sg), rtol=1e-10)
    np.testing.assert_allclose(out.errors_f[0, 0], np.linalg.norm(est[0, 0] - sf) / np.linalg.norm(sg), rtol=1e-10)
    np.testing.assert_allclose(out.predicted, sample_covariance_error(sg, out.rows), rtol=1e-12)
    assert out.floor == pytest.approx(np.linalg.norm(sf - sg) / np.linalg.norm(sg), rel=1e-12)


def test_copy_errors_follow_the_exact_expectation_per_seed():
    """Squared errors over their exact expectation average to 1, and one slope per seed gives -1/2."""
    runs = [copy_errors(sample_fast(jax.random.key(10 + s), CFG), CFG, PAIR, keys(s, 16), [1, 4, 16]) for s in range(6)]
    ratio = np.array([r.errors**2 / r.predicted[:, None] ** 2 for r in runs])  # (seeds, k, models)
    for i in range(ratio.shape[1]):  # E err^2 is exact: the seed mean lies within 2.5 of its 95 % intervals of 1
        for j in range(ratio.shape[2]):
            s = summarize(ratio[:, i, j])
            assert abs(s.mean - 1) <= 2.5 * s.ci95, (i, j, s)
    fit = fit_power_law(runs[0].rows, np.stack([r.errors[:, 1] for r in runs], axis=1), nested=True)
    assert len(fit.per_seed) == 6 and abs(fit.slope + 0.5) <= 2.5 * fit.ci95
