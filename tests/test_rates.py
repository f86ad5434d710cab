"""Power-law fits, the sample-covariance rate and the distance-rate figure (gelib.rates)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

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
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [str(n) for n in ns]
    assert axes[1].get_ylabel() == "KS distance"
    assert axes[0].get_xscale() == "log"
