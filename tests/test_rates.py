"""Power-law fits, the sample-covariance rate and the distance-rate figure (gelib.rates)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.stats  # noqa: E402

from gelib import rates, spectra  # noqa: E402


def test_fit_power_law_recovers_an_exact_power_law():
    x = np.array([16.0, 64.0, 256.0, 1024.0])
    fit = rates.fit_power_law(x, 3.0 * x**-0.5)
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
        fit = rates.fit_power_law(x, y)
        covered += abs(fit.slope + 1.0) <= fit.ci95
    assert covered >= 170


def test_fit_power_law_refuses_non_positive_values():
    with pytest.raises(ValueError):
        rates.fit_power_law([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError):
        rates.fit_power_law([1.0, 2.0], [1.0, 0.0], nested=True)


def test_nested_fit_is_the_t_interval_of_independent_per_seed_slopes():
    rng = np.random.default_rng(11)
    x = np.array([32.0, 64.0, 128.0, 256.0, 512.0])
    y = 1.5 * x[:, None] ** -0.5 * np.exp(0.2 * rng.standard_normal((5, 7)))
    fit = rates.fit_power_law(x, y, nested=True)
    lines = np.array([np.polyfit(np.log(x), np.log(y[:, j]), 1) for j in range(7)])  # (slope, intercept) per seed
    np.testing.assert_allclose(fit.per_seed, lines[:, 0], rtol=1e-10)
    assert fit.slope == pytest.approx(lines[:, 0].mean(), rel=1e-12)
    assert fit.prefactor == pytest.approx(np.exp(lines[:, 1].mean()), rel=1e-12)
    lo, hi = scipy.stats.t.interval(0.95, 6, loc=lines[:, 0].mean(), scale=scipy.stats.sem(lines[:, 0]))
    assert fit.ci95 == pytest.approx((hi - lo) / 2, rel=1e-10)
    assert scipy.stats.t.ppf(0.975, 6) == pytest.approx(2.4469, abs=1e-4)  # the quantile of a t table
    # same x for every seed: the mean of the per-seed slopes is the pooled slope; only the interval differs
    pooled = rates.fit_power_law(x, y)
    assert fit.slope == pytest.approx(pooled.slope, rel=1e-12) and pooled.per_seed is None
    assert fit.prefactor == pytest.approx(pooled.prefactor, rel=1e-12)
    assert fit.ci95 != pytest.approx(pooled.ci95, rel=1e-3)


def test_nested_fit_needs_seeds_and_one_seed_has_no_interval():
    x = np.array([16.0, 32.0, 64.0])
    with pytest.raises(ValueError):
        rates.fit_power_law(x, x**-1.0, nested=True)  # (k,): no seeds
    with pytest.raises(ValueError):
        rates.fit_power_law(x, np.ones((4, 3)), nested=True)  # rows are not the sizes
    one = rates.fit_power_law(x, 2.0 * x[:, None] ** -1.0, nested=True)
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
            fit = rates.fit_power_law(x, y, nested=nested)
            covered[name] += abs(fit.slope + 0.5) <= fit.ci95
    assert 0.91 <= covered["nested"] / 400 <= 0.99, covered
    assert covered["pooled"] / 400 < 0.75, covered


def test_sample_covariance_error_matches_a_monte_carlo():
    # E ||hat Sigma - Sigma||_F^2 = ((tr Sigma)^2 + tr Sigma^2) / N for Gaussian rows
    rng = np.random.default_rng(1)
    d, rows, reps = 6, 50, 4000
    a = rng.standard_normal((d, d))
    sigma = a @ a.T / d + np.eye(d)
    root = np.linalg.cholesky(sigma)
    y = rng.standard_normal((reps, rows, d)) @ root.T
    est = np.einsum("rni,rnj->rij", y, y) / rows
    mse = np.mean(np.sum((est - sigma) ** 2, axis=(1, 2)))
    predicted = rates.sample_covariance_error(sigma, rows) * np.linalg.norm(sigma)
    # the squared error of one repetition has a relative spread of about 1: 4000 reps -> ~2 %
    assert mse == pytest.approx(predicted**2, rel=0.06)
    np.testing.assert_allclose(
        rates.sample_covariance_error(sigma, np.array([rows, 4 * rows])),
        [predicted / np.linalg.norm(sigma), predicted / np.linalg.norm(sigma) / 2],
        rtol=1e-12,
    )


def _pairs(ns, seeds=3, seed=0):
    rng = np.random.default_rng(seed)
    return {n: np.sort(rng.exponential(size=(seeds, 2, n)), axis=-1) for n in ns}


def test_sweep_distances_are_the_per_seed_distances():
    pairs = _pairs((8, 16, 32))
    w1, ks = rates.sweep_distances(pairs)
    assert w1.shape == ks.shape == (3, 3)
    for i, ev in enumerate(pairs.values()):
        for s in range(3):
            assert w1[i, s] == pytest.approx(spectra.rel_w1(ev[s, 0], ev[s, 1]), rel=1e-14)
            assert ks[i, s] == spectra.ks(ev[s, 0], ev[s, 1])
    # a pure rescaling b = (1 + c) a: rel. W1 = c / (1 + c) exactly
    a = np.abs(np.random.default_rng(2).standard_normal((2, 50)))
    w1, _ = rates.sweep_distances({50: np.stack([a, 1.25 * a], axis=1)})
    np.testing.assert_allclose(w1, 0.25 / 1.25, rtol=1e-12)
    with pytest.raises(ValueError):
        rates.sweep_distances({8: np.zeros((3, 8))})


def test_plot_distance_rates_fits_and_labels_the_sweep():
    ns = (16, 32, 64, 128)
    rng = np.random.default_rng(3)
    # two spectra whose distance shrinks like 1/n: b = a (1 + 1/n)
    pairs = {}
    for n in ns:
        a = np.sort(rng.exponential(size=(2, n)), axis=-1)
        pairs[n] = np.stack([a, a * (1 + 1 / n)], axis=1)
    fig, axes = plt.subplots(1, 2)
    out = rates.plot_distance_rates(axes, pairs, -1.0)
    plt.close(fig)
    assert out.ns == ns and out.w1.shape == (4, 2)
    # rel. W1 of a against (1 + 1/n) a is exactly (1/n) / (1 + 1/n) = 1 / (n + 1)
    np.testing.assert_allclose(out.w1, np.broadcast_to(1 / (np.array(ns)[:, None] + 1), (4, 2)), rtol=1e-12)
    assert out.fits["w1"].slope == pytest.approx(rates.fit_power_law(ns, out.w1).slope, rel=1e-12)
    assert out.fits["w1"].slope == pytest.approx(-1.0, abs=0.1)
    assert out.fits["ks"].slope == pytest.approx(rates.fit_power_law(ns, out.ks).slope, rel=1e-12)
    assert out.fits["w1"].per_seed is None  # independent sizes by default: the pooled fit
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [str(n) for n in ns]
    assert axes[1].get_ylabel() == "KS distance"
    assert axes[0].get_xscale() == "log"


def test_plot_distance_rates_of_a_nested_sweep_fits_per_seed():
    fig, axes = plt.subplots(1, 2)
    out = rates.plot_distance_rates(axes, _pairs((8, 16, 32, 64), seeds=4, seed=4), -1.0, nested=True)
    plt.close(fig)
    for name, values in (("w1", out.w1), ("ks", out.ks)):
        expected = rates.fit_power_law(out.ns, values, nested=True)
        assert out.fits[name].ci95 == pytest.approx(expected.ci95, rel=1e-12)
        assert len(out.fits[name].per_seed) == 4
