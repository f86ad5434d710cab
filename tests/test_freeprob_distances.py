"""W1 between two laws (law_w1) against closed forms and against samples of the quantile
functions; the per-seed distances to a law (distances_to_law)."""

import numpy as np
import pytest
import scipy.stats

from gelib.freeprob import (
    affine,
    compress,
    distances_to_law,
    ks_to_law,
    law_w1,
    marchenko_pastur,
    polynomial,
    scale,
    shape_to_law,
    w1_to_law,
)


@pytest.mark.parametrize("ratio", [0.3, 1.0, 2.5])  # no atom, a hard edge at 0, an atom 0.6 at 0
@pytest.mark.parametrize("factor", [0.5, 1.7])
def test_a_rescaled_law_is_its_mean_times_the_factor_away(ratio, factor):
    # W1(c X, X) = int |c Q(u) - Q(u)| du = |c - 1| E X for X >= 0; MP has mean 1
    mp = marchenko_pastur(ratio)
    assert law_w1(scale(mp, factor), mp) == pytest.approx(abs(factor - 1), rel=1e-5)
    assert law_w1(mp, scale(mp, factor)) == pytest.approx(abs(factor - 1), rel=1e-5)


def test_dividing_by_the_scales_leaves_the_shape():
    mp = marchenko_pastur(0.4)
    assert law_w1(scale(mp, 3.0), mp, 3.0, 1.0) < 1e-12
    # a shift moves every quantile by the same amount
    assert law_w1(affine(mp, 1.0, 0.25), mp) == pytest.approx(0.25, rel=1e-5)


def test_against_scipy_on_the_quantile_functions():
    # two laws of different shapes whose distribution functions cross (W1 above the
    # gap of the means), one with an atom 2/3 at 0; W1 of the two empirical laws of
    # N quantiles (midpoint rule in u) converges to W1 of the laws like 1/N
    a = compress(affine(marchenko_pastur(2.0), 1.0, 0.7), 1.5)
    b = polynomial(marchenko_pastur(3.0), [0.0, 0.5, 0.25])
    assert b.atoms() and not a.atoms()
    u = (np.arange(20000) + 0.5) / 20000
    want = scipy.stats.wasserstein_distance(a.quantile(u), b.quantile(u))
    got = law_w1(a, b)
    assert got == pytest.approx(want, rel=1e-4)
    assert law_w1(b, a) == pytest.approx(got, rel=1e-12)
    gap = abs(a.moments(1)[0] - b.moments(1)[0])
    assert got > 1.1 * gap


def test_distances_to_law_per_seed():
    # rows: the law's own quantiles, scaled by c; relative W1 -> |c - 1| (a rescaling),
    # KS -> 0 for c = 1; the law has mean 2.5, so "relative" divides by it
    law = scale(marchenko_pastur(0.5), 2.5)
    q = law.quantile((np.arange(400) + 0.5) / 400)
    rows = np.stack([q, 1.2 * q, 0.9 * q])
    w, k = distances_to_law(rows, law)
    assert w.shape == k.shape == (3,)
    np.testing.assert_allclose(w, [0.0, 0.2, 0.1], atol=3e-3)
    assert k[0] <= 1 / 400 + 1e-9 and k[1] > 0.05
    assert w[1] == pytest.approx(w1_to_law(rows[1], law) / 2.5, rel=1e-12)
    assert k[2] == pytest.approx(ks_to_law(rows[2], law), rel=1e-12)


def test_shape_to_law_splits_the_shift_from_the_shape():
    # the law's quantiles scaled by c: shift c - 1, W1 = |c - 1| (a rescaling), shape 0; noisy rows
    # of an MP law with an atom at 0 obey |shift| <= W1 <= |shift| + shape
    law = scale(marchenko_pastur(0.5), 2.5)
    q = law.quantile((np.arange(400) + 0.5) / 400)
    got = shape_to_law(np.stack([q, 1.2 * q]), law)
    assert got.shift == pytest.approx([0.0, 0.2], abs=1e-3)
    assert got.w1[1] == pytest.approx(0.2, abs=1e-3) and got.shape[1] == pytest.approx(1.2 * got.shape[0])
    assert np.all(got.shape < 3e-3)
    x = np.random.default_rng(1).standard_normal((3, 300, 120))
    atom = marchenko_pastur(300 / 120)
    noisy = shape_to_law(np.linalg.eigvalsh(x @ np.swapaxes(x, 1, 2) / 120), atom)
    assert noisy.sandwiched() and np.all(noisy.shape > 0) and np.all(noisy.ks > 0)
    assert np.allclose(noisy.w1, distances_to_law(np.linalg.eigvalsh(x @ np.swapaxes(x, 1, 2) / 120), atom)[0])
