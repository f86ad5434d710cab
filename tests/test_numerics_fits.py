"""Power-law fits (gelib.numerics.fits) against exact power laws and the coverage of their intervals."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.stats  # noqa: E402

from gelib import numerics  # noqa: E402


def test_fit_power_law_recovers_an_exact_power_law():
    x = np.array([16.0, 64.0, 256.0, 1024.0])
    fit = numerics.fit_power_law(x, 3.0 * x**-0.5)
    assert fit.slope == pytest.approx(-0.5, abs=1e-12)
    assert fit.prefactor == pytest.approx(3.0, rel=1e-12)
    assert fit.ci95 == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(fit(x), 3.0 * x**-0.5, rtol=1e-12)


def test_fit_power_law_with_seeds_and_its_interval_covers_the_truth():
    # log-normal noise of known size: the t-interval of the slope covers -1 in
    # about 95 % of repetitions (binomial bound for 200 repetitions: >= 85 %)
    rng = np.random.default_rng(0)
    x = np.array([100.0, 200.0, 400.0, 800.0, 1600.0])
    covered = 0
    for _ in range(200):
        y = 2.0 * x[:, None] ** -1.0 * np.exp(0.1 * rng.standard_normal((5, 4)))
        fit = numerics.fit_power_law(x, y)
        covered += abs(fit.slope + 1.0) <= fit.ci95
    assert covered >= 170


def test_fit_power_law_refuses_non_positive_values():
    with pytest.raises(ValueError):
        numerics.fit_power_law([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        numerics.fit_power_law([1.0, 2.0], [1.0, 0.0], nested=True)


def test_nested_fit_is_the_t_interval_of_independent_per_seed_slopes():
    rng = np.random.default_rng(11)
    x = np.array([32.0, 64.0, 128.0, 256.0, 512.0])
    y = 1.5 * x[:, None] ** -0.5 * np.exp(0.2 * rng.standard_normal((5, 7)))
    fit = numerics.fit_power_law(x, y, nested=True)
    lines = np.array([np.polyfit(np.log(x), np.log(y[:, j]), 1) for j in range(7)])  # (slope, intercept) per seed
    np.testing.assert_allclose(fit.per_seed, lines[:, 0], rtol=1e-10)
    assert fit.slope == pytest.approx(lines[:, 0].mean(), rel=1e-12)
    assert fit.prefactor == pytest.approx(np.exp(lines[:, 1].mean()), rel=1e-12)
    lo, hi = scipy.stats.t.interval(0.95, 6, loc=lines[:, 0].mean(), scale=scipy.stats.sem(lines[:, 0]))
    assert fit.ci95 == pytest.approx((hi - lo) / 2, rel=1e-10)
    assert scipy.stats.t.ppf(0.975, 6) == pytest.approx(2.4469, abs=1e-4)  # the quantile of a t table
    # same x for every seed: the mean of the per-seed slopes is the pooled slope; only the interval differs
    pooled = numerics.fit_power_law(x, y)
    assert fit.slope == pytest.approx(pooled.slope, rel=1e-12) and pooled.per_seed is None
    assert fit.prefactor == pytest.approx(pooled.prefactor, rel=1e-12)
    assert fit.ci95 != pytest.approx(pooled.ci95, rel=1e-3)


def test_nested_fit_needs_seeds_and_one_seed_has_no_interval():
    x = np.array([16.0, 32.0, 64.0])
    with pytest.raises(ValueError):
        numerics.fit_power_law(x, x**-1.0, nested=True)  # (k,): no seeds
    with pytest.raises(ValueError):
        numerics.fit_power_law(x, np.ones((4, 3)), nested=True)  # rows are not the sizes
    one = numerics.fit_power_law(x, 2.0 * x[:, None] ** -1.0, nested=True)
    assert one.slope == pytest.approx(-1.0, abs=1e-12) and np.isnan(one.ci95)


def test_nested_interval_covers_the_truth_where_the_pooled_one_undercovers():
    # each seed has its own offset and its own tilt of log y against log x, shared by all its
    # sizes (as leading blocks of one draw are), plus a little independent noise per point.
    # The per-seed slopes are i.i.d. normal across seeds, so their t-interval covers -0.5 in
    # exactly 95 % of repetitions (400 repetitions: binomial sd 1.1 %); the pooled fit counts
    # k * seeds = 25 points as independent and its interval is far too narrow.
    rng = np.random.default_rng(12)
    x = np.array([64.0, 128.0, 256.0, 512.0, 1024.0])
    centred = np.log(x) - np.log(x).mean()
    covered = {"nested": 0, "pooled": 0}
    for _ in range(400):
        offset, tilt = 0.02 * rng.standard_normal(5), 0.1 * rng.standard_normal(5)
        noise = 0.02 * rng.standard_normal((5, 5))
        y = 2.0 * x[:, None] ** -0.5 * np.exp(offset + tilt * centred[:, None] + noise)
        for name, nested in (("nested", True), ("pooled", False)):
            fit = numerics.fit_power_law(x, y, nested=nested)
            covered[name] += abs(fit.slope + 0.5) <= fit.ci95
    assert 0.91 <= covered["nested"] / 400 <= 0.99, covered
    assert covered["pooled"] / 400 < 0.75, covered


def test_half_width_at_another_level():
    rng = np.random.default_rng(5)
    x = np.array([10.0, 20.0, 40.0, 80.0])
    y = x[:, None] ** -0.5 * np.exp(0.1 * rng.normal(size=(4, 6)))
    for nested, dof in ((True, 5), (False, 4 * 6 - 2)):
        fit = numerics.fit_power_law(x, y, nested=nested)
        assert fit.dof == dof
        assert fit.half_width(0.95) == pytest.approx(fit.ci95, rel=1e-12)
        ratio = scipy.stats.t.ppf(0.995, dof) / scipy.stats.t.ppf(0.975, dof)
        assert fit.half_width(0.99) == pytest.approx(fit.ci95 * ratio, rel=1e-12)
    with pytest.raises(ValueError, match="degrees of freedom"):
        numerics.PowerFit(slope=-1.0, prefactor=1.0, ci95=0.1).half_width(0.99)
