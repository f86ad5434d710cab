"""The S-transform's Taylor series from moments against closed forms and the solver."""

import numpy as np
import pytest

from gelib.freeprob import affine, compress, dirac, marchenko_pastur, s_transform_series


@pytest.mark.parametrize("c", [0.25, 1.0, 3.0])
def test_marchenko_pastur(c):
    # S_{MP_c}(u) = 1 / (1 + c u) = sum_j (-c)^j u^j
    got = s_transform_series(marchenko_pastur(c).moments(8))
    np.testing.assert_allclose(got, (-c) ** np.arange(8), rtol=1e-10, atol=1e-12)


def test_point_mass_and_scaling():
    np.testing.assert_allclose(s_transform_series(dirac(2.0).moments(5)), [0.5, 0, 0, 0, 0], atol=1e-14)
    base = affine(marchenko_pastur(0.5), 0.7, 0.3).moments(6)
    # scaling a law by a divides its S-transform by a
    scaled = base * 3.0 ** np.arange(1, 7)
    np.testing.assert_allclose(s_transform_series(scaled), s_transform_series(base) / 3.0, rtol=1e-10)


def test_compression_rule_and_the_solver():
    # S_{C_lam(mu)}(u) = S_mu(u / lam) / (lam + u), order by order
    mu, lam, K = affine(marchenko_pastur(0.5), 0.7, 0.3), 1.8, 7
    s_mu = s_transform_series(mu.moments(K)) / lam ** np.arange(K)  # S_mu(u / lam)
    inv = (-1.0) ** np.arange(K) / lam ** np.arange(1, K + 1)  # 1 / (lam + u)
    want = np.convolve(s_mu, inv)[:K]
    np.testing.assert_allclose(s_transform_series(compress(mu, lam).moments(K)), want, rtol=1e-9)
    # and the series summed at small u against the solver's S-transform
    law, u = compress(mu, lam), -0.02
    series = np.polyval(s_transform_series(law.moments(12))[::-1], u)
    assert series == pytest.approx(law.s_transform(np.array([u])).real[0], rel=1e-8)
