"""Largest eigenvalues against a law's right edge (gelib.spectra.edge_statistics).

Independent truths: Johnstone's Tracy-Widom centring and scale for the largest
eigenvalue of a real Wishart matrix, the mean of TW_1, and the BBP transition:
a spike theta > sqrt(c) of the covariance leaves the Marchenko-Pastur bulk, at
(1 + theta)(1 + c / theta), and one below it does not.
"""

import math

import numpy as np
import pytest

from gelib import spectra as S
from gelib.freeprob import marchenko_pastur


def johnstone(p: int, n: int, half: float = 0.0) -> tuple[float, float]:
    """Centring and scale of the largest eigenvalue of ``X X^T / n`` (``X`` ``p x n``),
    with El Karoui's ``-1/2`` corrections when ``half = 0.5`` (then the centring is
    within ``O(n^{-2/3}) sigma`` of the finite-``n`` mean of ``sigma TW_1``)."""
    a, b = math.sqrt(n - half), math.sqrt(p - half)
    return (a + b) ** 2 / n, (a + b) * (1 / a + 1 / b) ** (1 / 3) / n


def wishart(rng, p: int, n: int, seeds: int, spikes=()) -> np.ndarray:
    """Eigenvalues ``(seeds, p)`` of ``X X^T / n`` with covariance ``I + sum theta_i e_i e_i^T``."""
    x = rng.standard_normal((seeds, p, n))
    x[:, : len(spikes)] *= np.sqrt(1 + np.asarray(spikes))[:, None]
    return np.linalg.eigvalsh(x @ x.transpose(0, 2, 1) / n)


@pytest.mark.parametrize("p, n", [(300, 600), (500, 250)])
def test_edge_scale_is_johnstones(p, n):
    edge, sigma = S.edge_scale(marchenko_pastur(p / n), p)
    mu, scale = johnstone(p, n)
    assert edge == pytest.approx(mu, rel=1e-9)
    assert sigma == pytest.approx(scale, rel=1e-3)


def test_pure_wishart_top_eigenvalue_is_tracy_widom_and_nothing_leaves():
    p, n, seeds = 150, 300, 40
    ev = wishart(np.random.default_rng(0), p, n, seeds)
    st = S.edge_statistics(ev, marchenko_pastur(p / n))
    assert st.top.shape == st.beyond.shape == (seeds,)
    np.testing.assert_array_equal(st.top, ev[:, -1])
    # the limit edge sits above the finite-n centring by a known shift, in units of sigma_n
    mu, _ = johnstone(p, n, half=0.5)
    expected = S.TW1_MEAN + (mu - st.edge) / st.scale
    assert abs(st.scaled.mean() - expected) <= 3 * S.TW1_STD / math.sqrt(seeds), (st.scaled.mean(), expected)
    assert np.all(st.beyond == 0)
    assert np.all(np.abs(st.deviation) <= 8 * st.scale / st.edge)


def test_spikes_above_bbp_are_counted_and_those_below_are_not():
    p, n, seeds, c = 150, 300, 6, 0.5
    spikes = (3.0, 2.0, 0.3)  # sqrt(c) = 0.71: two above the threshold, one below
    ev = wishart(np.random.default_rng(1), p, n, seeds, spikes)
    st = S.edge_statistics(ev, marchenko_pastur(c))
    np.testing.assert_array_equal(st.beyond, 2)
    for k, theta in enumerate(spikes[:2]):  # where BBP puts them, within Gaussian O(n^{-1/2}) fluctuations
        where = (1 + theta) * (1 + c / theta)
        assert np.all(np.abs(ev[:, -1 - k] - where) <= 5 * (1 + theta) * math.sqrt(2 / n)), (ev[:, -1 - k], where)


def test_a_hard_or_missing_square_root_edge_is_refused():
    class Flat:  # uniform density on [0, 1]: the density does not vanish at the edge
        def edges(self):
            return [(0.0, 1.0)]

        def density(self, x):
            return np.ones_like(np.asarray(x, dtype=float))

    with pytest.raises(ValueError, match="square-root edge"):
        S.edge_scale(Flat(), 100)


def test_edge_rate_of_wishart_matrices_is_minus_two_thirds():
    c, seeds = 0.5, 16
    rng = np.random.default_rng(2)
    ps = (40, 80, 160, 320)
    devs = [S.edge_statistics(wishart(rng, p, int(p / c), seeds), marchenko_pastur(c)).deviation for p in ps]
    fit = S.edge_rate(ps, devs)
    assert 0 < fit.ci95 < 0.3, fit
    assert abs(fit.slope + 2 / 3) <= fit.ci95, fit
    # the fitted root-mean-square at the middle length: sqrt(E TW_1^2) sigma_p / E (Johnstone's scale),
    # within three standard errors of a root-mean-square over all the draws (kappa = 1.29 for TW_1)
    mid = math.sqrt(ps[0] * ps[-1])
    edge, sigma = S.edge_scale(marchenko_pastur(c), mid)
    tw_rms = math.hypot(S.TW1_MEAN, S.TW1_STD)
    assert fit(mid) == pytest.approx(tw_rms * sigma / edge, rel=3 * math.sqrt(1.29 / (4 * seeds * len(ps)))), fit
