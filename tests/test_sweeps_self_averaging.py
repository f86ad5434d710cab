"""gelib.sweeps.sigma_moments and group_spread: the self-averaging measurements of Table 1's rows 4 and 6.

sigma_moments is checked against the traces of gelib.models.sigma computed directly, and its first moment
against the exact expectation over K, V, W^O (e^{beta^2} - 1 for Sigma_G, E K_f[jj] for Sigma_f) by a z-test
over independent draws; group_spread against a plain NumPy computation.
"""

import functools
import math

import jax
import numpy as np
import pytest

from gelib import keys, models, sweeps
from gelib.sampling import sample_fast

CFG = sweeps.proportional(64, h=2, d_k=1 / 2, d_v=1 / 4, d_o=1, beta=0.8)


@pytest.mark.parametrize("kernel", [models.kernel_f, models.kernel_g])
def test_sigma_moments_are_the_traces_of_sigma(kernel):
    key = jax.random.key(3)
    s = np.asarray(models.sigma(kernel, sample_fast(key, CFG), CFG))
    out = sweeps.sigma_moments(kernel, CFG, key)
    assert float(out["m1"]) == pytest.approx(np.trace(s) / CFG.d_o, rel=1e-10)
    assert float(out["m2"]) == pytest.approx(np.sum(s * s) / CFG.d_o, rel=1e-10)


@pytest.mark.parametrize(
    "kernel, exact",
    [(models.kernel_g, math.expm1(CFG.beta**2)), (models.kernel_f, models.kernel_f_diagonal_mean(CFG.d_k, CFG.beta))],
)
def test_first_moment_is_exact_over_draws(kernel, exact):
    """E tr(Sigma)/d_O = E kernel[jj] exactly: the mean over 64 draws within 4 standard errors."""
    sweep = sweeps.run(functools.partial(sweeps.sigma_moments, kernel), [CFG], 64, keys.stream(0, "sa-test"))
    m1 = sweep.field("m1")[0]
    assert abs(m1.mean() - exact) < 4 * m1.std(ddof=1) / math.sqrt(m1.size), (m1.mean(), exact)


def test_group_spread():
    values = np.random.default_rng(0).standard_normal((3, 32))
    spread = sweeps.group_spread(values)
    assert spread.shape == (3, 8)
    np.testing.assert_allclose(spread[1, 2], np.std(values[1, 8:12], ddof=1))
    assert sweeps.group_spread(values, groups=4).shape == (3, 4)
    with pytest.raises(ValueError, match="multiple"):
        sweeps.group_spread(values[:, :30])
    with pytest.raises(ValueError):
        sweeps.group_spread(values[:, :8])  # one draw per group: no spread
