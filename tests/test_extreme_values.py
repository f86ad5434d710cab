"""The extreme-value level of max |C - 1| (Table 1, row 2) and the rate check that uses it.

The expected maximum of Gaussians against a Monte-Carlo maximum (tolerance from its standard
error), its Gumbel expansion against both, the lower bound on the middle term at a fixed key
width against a Monte-Carlo mean, and gelib.sweeps.rate_check on constructed maxima: the right
rate passes, a -1/4 rate and a level without its extreme-value factor fail (at the same noise), and the
check's summary says which slopes its width cannot tell from the derived one.
"""

import dataclasses
import math

import jax
import numpy as np
import pytest

from gelib import models as M
from gelib.keys import stream
from gelib.sweeps import rate_check


def _mc_max_abs(m, reps, key):
    """Mean and standard error of max_{i <= m} |Z_i| over reps draws."""
    x = np.asarray(jax.random.normal(key, (reps, m))).__abs__().max(axis=1)
    return x.mean(), x.std(ddof=1) / math.sqrt(reps)


def test_gaussian_max_abs_mean_of_one_entry_is_sqrt_2_over_pi():
    assert math.isclose(M.gaussian_max_abs_mean(1), math.sqrt(2 / math.pi), rel_tol=1e-10)
    with pytest.raises(ValueError):
        M.gaussian_max_abs_mean(0)


@pytest.mark.parametrize("m", [16, 1024])
def test_gaussian_max_abs_mean_matches_a_monte_carlo_maximum(m):
    mean, se = _mc_max_abs(m, 2000, stream(0, "max-abs", m))
    assert abs(M.gaussian_max_abs_mean(m) - mean) <= 4 * se
    # the leading term alone, sqrt(2 log 2m), is far outside: the test tells the next order apart
    assert abs(math.sqrt(2 * math.log(2 * m)) - mean) > 4 * se


def test_gumbel_expansion_approaches_the_exact_maximum():
    # one-sided maximum of m normals is the expansion at m; |Z| over m is the expansion at 2m
    errors = [M.gaussian_max_expansion(2 * m) / M.gaussian_max_abs_mean(m) - 1 for m in (50, 500, 5000, 500000)]
    assert all(0 < e < 0.025 for e in errors), errors  # an overestimate, of relative order 1/log m
    assert all(a > b for a, b in zip(errors, errors[1:])), errors  # shrinking as m grows
    x = np.asarray(jax.random.normal(stream(0, "max-one-sided"), (2000, 1000))).max(axis=1)
    assert abs(M.gaussian_max_expansion(1000) - x.mean()) <= 0.01 * x.mean() + 4 * x.std(ddof=1) / math.sqrt(x.size)
    with pytest.raises(ValueError):
        M.gaussian_max_expansion(2.0)


def test_denominator_max_deviation_is_the_root_mean_square_times_the_expected_maximum():
    level = M.denominator_max_deviation(128, 64, 1.0, 4)
    expected = math.sqrt(M.denominator_deviation_ms(128, 64, 1.0)) * M.gaussian_max_abs_mean(512)
    assert math.isclose(level, expected, rel_tol=1e-12)
    # a maximum over more entries (more heads) is larger, at the same mean square
    assert M.denominator_max_deviation(128, 64, 1.0, 16) > level


@pytest.mark.parametrize("d_k, beta", [(64, 1.0), (32, 0.8)])
def test_denominator_middle_bound_matches_a_monte_carlo_mean(d_k, beta):
    rho = np.sum(np.asarray(jax.random.normal(stream(0, "rho", d_k), (50000, d_k))) ** 2, axis=1) / d_k
    c = np.exp(-(beta**2) * (rho - 1) / 2)  # C_ii as n -> oo at fixed d_K
    x = (c - 1) ** 4 / c**2
    mean, se = x.mean(), x.std(ddof=1) / math.sqrt(x.size)
    assert abs(M.denominator_middle_bound(1, d_k, beta) ** 2 - mean) <= 4 * se
    assert math.isclose(M.denominator_middle_bound(400, d_k, beta), 20 * M.denominator_middle_bound(1, d_k, beta))
    # leading order sqrt(3 n) beta^4 / (2 d_K), within its O(1/d_K) correction
    assert math.isclose(M.denominator_middle_bound(1, d_k, beta), math.sqrt(3) * beta**4 / (2 * d_k), rel_tol=4 / d_k)


NS = (64, 128, 256, 512)
LEVELS = np.array([M.denominator_max_deviation(n, n / 2, 1.0, 4) for n in NS])


def _maxima(levels, key, seeds=8, spread=0.1):
    """Constructed maxima: the levels times independent log-normal noise of the spread of the chapter's."""
    return levels[:, None] * np.exp(spread * np.asarray(jax.random.normal(key, (len(levels), seeds))))


def test_rate_check_passes_maxima_at_their_level():
    oks = [rate_check(NS, _maxima(LEVELS, stream(1, "right", s)), LEVELS).ok for s in range(20)]
    assert sum(oks) >= 16, oks  # a 95 % test: about one failure in twenty
    check = rate_check(NS, _maxima(LEVELS, stream(1, "right", 0)), LEVELS)
    assert -0.43 < check.predicted < -0.38  # -1/2 flattened by the growing maximum, not -1/2
    assert np.all(np.abs(check.level - 1) < 0.15)


def test_rate_check_fails_at_a_quarter_power():
    wrong = LEVELS[0] * (np.array(NS) / NS[0]) ** -0.25  # a constructed n^{-1/4} decay
    fails = [not rate_check(NS, _maxima(wrong, stream(1, "quarter", s)), LEVELS).ok for s in range(20)]
    assert all(fails), fails


def test_rate_check_fails_a_level_without_its_extreme_value_factor():
    """Maxima that fall exactly like n^{-1/2}, at the noise of the other tests (0.1): the level's growing
    maximum makes them too steep. The two slopes are 0.096 apart over these four lengths (the default
    scale's); with the chapter's 8 seeds the half-width is about 0.05, and most draws fail (92 % of 200;
    here at least 15 of 20); with 16 seeds (half-width 0.034) every one of 200 does. The summary says the
    same: at a distance beyond the half-width, "would fail"."""
    steep = LEVELS[0] * (np.array(NS) / NS[0]) ** -0.5
    for seeds, least in ((8, 15), (16, 20)):
        checks = [rate_check(NS, _maxima(steep, stream(1, "steep", seeds, s), seeds), LEVELS) for s in range(20)]
        assert sum(not c.ok for c in checks) >= least, [c.fit for c in checks if c.ok]
    right = rate_check(NS, _maxima(LEVELS, stream(1, "right", 0)), LEVELS).summary()
    assert right["from_half"] == pytest.approx(abs(right["pred"] + 0.5)) and 0.09 < right["from_half"] < 0.1
    assert right["half"] == right["quarter"] == "would fail"


def test_rate_check_summary_says_which_slope_it_cannot_tell_apart():
    """Over the ci scale's three lengths (64-256) the derived slope is 0.104 from an uncorrected n^{-1/2}
    and 0.146 from n^{-1/4}; with the ci build's half-width, 0.115, the summary says "would pass" for the
    first and "would fail" for the second. At a noise giving about that half-width (0.135, 8 seeds),
    maxima falling like n^{-1/2} indeed pass the check in many draws (9 of these 20)."""
    ns, levels = NS[:3], LEVELS[:3]
    fit = rate_check(ns, _maxima(levels, stream(1, "ci", 0)), levels)
    check = dataclasses.replace(fit, fit=dataclasses.replace(fit.fit, ci95=0.115))
    g = check.summary()
    assert g["from_half"] == pytest.approx(0.104, abs=0.002) and g["from_quarter"] == pytest.approx(0.146, abs=0.002)
    assert (g["half"], g["quarter"]) == ("would pass", "would fail")
    assert g["level_first"] == check.level[0] and g["level_last"] == check.level[-1] and g["pred"] == check.predicted
    steep = levels[0] * (np.array(ns) / ns[0]) ** -0.5
    passes = sum(rate_check(ns, _maxima(steep, stream(1, "ci-steep", s), spread=0.135), levels).ok for s in range(20))
    assert passes >= 4, passes  # the check cannot tell them apart here


def test_rate_check_rejects_misshapen_input():
    with pytest.raises(ValueError):
        rate_check(NS, LEVELS[:, None], LEVELS)  # one seed: no interval
    with pytest.raises(ValueError):
        rate_check(NS, _maxima(LEVELS, stream(1, "shape")), LEVELS[:3])
