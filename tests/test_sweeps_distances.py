"""What a sweep measures (gelib.sweeps): the sample-covariance rate, distances over a sweep, and their rate figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gelib import numerics, plotting, spectra, sweeps  # noqa: E402


def _pairs(ns, seeds=3, seed=0):
    rng = np.random.default_rng(seed)
    return {n: np.sort(rng.exponential(size=(seeds, 2, n)), axis=-1) for n in ns}


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
    predicted = sweeps.sample_covariance_error(sigma, rows) * np.linalg.norm(sigma)
    # the squared error of one repetition has a relative spread of about 1: 4000 reps -> ~2 %
    assert mse == pytest.approx(predicted**2, rel=0.06)
    np.testing.assert_allclose(
        sweeps.sample_covariance_error(sigma, np.array([rows, 4 * rows])),
        [predicted / np.linalg.norm(sigma), predicted / np.linalg.norm(sigma) / 2],
        rtol=1e-12,
    )


def test_sweep_distances_are_the_per_seed_distances():
    pairs = _pairs((8, 16, 32))
    w1, ks = sweeps.sweep_distances(pairs)
    assert w1.shape == ks.shape == (3, 3)
    for i, ev in enumerate(pairs.values()):
        for s in range(3):
            assert w1[i, s] == pytest.approx(spectra.rel_w1(ev[s, 0], ev[s, 1]), rel=1e-14)
            assert ks[i, s] == spectra.ks(ev[s, 0], ev[s, 1])
    # a pure rescaling b = (1 + c) a: rel. W1 = c / (1 + c) exactly
    a = np.abs(np.random.default_rng(2).standard_normal((2, 50)))
    w1, _ = sweeps.sweep_distances({50: np.stack([a, 1.25 * a], axis=1)})
    np.testing.assert_allclose(w1, 0.25 / 1.25, rtol=1e-12)
    with pytest.raises(ValueError):
        sweeps.sweep_distances({8: np.zeros((3, 8))})


def test_plot_distance_rates_fits_and_labels_the_sweep():
    ns = (16, 32, 64, 128)
    rng = np.random.default_rng(3)
    # two spectra whose distance shrinks like 1/n: b = a (1 + 1/n)
    pairs = {}
    for n in ns:
        a = np.sort(rng.exponential(size=(2, n)), axis=-1)
        pairs[n] = np.stack([a, a * (1 + 1 / n)], axis=1)
    fig, axes = plt.subplots(1, 2)
    out = plotting.plot_distance_rates(axes, pairs, -1.0)
    plt.close(fig)
    assert out.ns == ns and out.w1.shape == (4, 2)
    # rel. W1 of a against (1 + 1/n) a is exactly (1/n) / (1 + 1/n) = 1 / (n + 1)
    np.testing.assert_allclose(out.w1, np.broadcast_to(1 / (np.array(ns)[:, None] + 1), (4, 2)), rtol=1e-12)
    assert out.fits["w1"].slope == pytest.approx(numerics.fit_power_law(ns, out.w1).slope, rel=1e-12)
    assert out.fits["w1"].slope == pytest.approx(-1.0, abs=0.1)
    assert out.fits["ks"].slope == pytest.approx(numerics.fit_power_law(ns, out.ks).slope, rel=1e-12)
    assert out.fits["w1"].per_seed is None  # independent sizes by default: the pooled fit
    assert [t.get_text() for t in axes[0].get_xticklabels()] == [str(n) for n in ns]
    assert axes[1].get_ylabel() == "KS distance"
    assert axes[0].get_xscale() == "log"


def test_plot_distance_rates_of_a_nested_sweep_fits_per_seed():
    fig, axes = plt.subplots(1, 2)
    out = plotting.plot_distance_rates(axes, _pairs((8, 16, 32, 64), seeds=4, seed=4), -1.0, nested=True)
    plt.close(fig)
    for name, values in (("w1", out.w1), ("ks", out.ks)):
        expected = numerics.fit_power_law(out.ns, values, nested=True)
        assert out.fits[name].ci95 == pytest.approx(expected.ci95, rel=1e-12)
        assert len(out.fits[name].per_seed) == 4
