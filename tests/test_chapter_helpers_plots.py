"""Figures moved out of the model and limit-law chapters: what they draw against a direct computation."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from gelib.freeprob import ToLaw, fuss_catalan, mp_product  # noqa: E402
from gelib.numerics import fit_power_law  # noqa: E402
from gelib.plotting import law_distance_rates, log_quantile_figure, oracle_figure  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_oracle_figure_lays_the_closed_forms_over_the_solver():
    oracles = [fuss_catalan(2), mp_product(0.5, 0.25)]
    fig = oracle_figure(oracles, points=60, every=6)
    axes = fig.axes
    assert len(axes) == 2 and axes[0].get_ylabel() == "density"
    for ax, o in zip(axes, oracles):
        solver, closed = ax.get_lines()
        x, y = solver.get_data()
        np.testing.assert_array_equal(x, o.law().grid(60))
        # second method: the closed-form density at the markers agrees with the solver's curve there
        xc, yc = closed.get_data()
        np.testing.assert_array_equal(xc, x[::6])
        np.testing.assert_allclose(yc, y[::6], rtol=1e-6)
        assert ax.get_title() == o.name and ax.get_yscale() == "log"


def test_law_distance_rates_fits_the_distances_over_sqrt_log_n():
    rng = np.random.default_rng(0)
    ns = (64, 128, 256, 512)
    to_law = {}
    for n in ns:
        d = {}
        for m, c in (("mha", 2.0), ("yg", 1.0)):
            shape = c * np.sqrt(np.log(n) / n) * (1 + 0.05 * rng.standard_normal(3))
            d[m] = ToLaw(w1=shape, ks=0.5 * shape, shift=0 * shape, shape=shape)
        to_law[n] = d
    fig, axes = plt.subplots(1, 2)
    fits = law_distance_rates(axes, ns, to_law, {"mha": "MHA", "yg": "Y^G"}, {"shape": "shape", "ks": "KS"})
    root_log = np.sqrt(np.log(ns))[:, None]
    for (q, m), fit in fits.items():
        direct = fit_power_law(ns, np.array([getattr(to_law[n][m], q) for n in ns]) / root_log)
        assert fit.slope == direct.slope and fit.ci95 == direct.ci95
        assert fit.slope == pytest.approx(-0.5, abs=0.05)  # sqrt(log n / n) over sqrt(log n)
    assert set(fits) == {("shape", "mha"), ("shape", "yg"), ("ks", "mha"), ("ks", "yg")}
    assert axes[0].get_ylabel() == r"shape / $\sqrt{\log n}$" and axes[1].get_ylabel().startswith("KS")


def test_log_quantile_figure_against_numpy_quantiles():
    rng = np.random.default_rng(1)
    a, b = rng.lognormal(size=(3, 50)), rng.lognormal(0.1, size=(3, 50))
    fig = log_quantile_figure(a, b, ("first", "second"), mean=2.0, title="a title")
    left, right = fig.axes
    probs = (np.arange(150) + 0.5) / 150
    x, y = right.get_lines()[0].get_data()
    np.testing.assert_allclose(x, np.quantile(b, probs), rtol=1e-12)
    np.testing.assert_allclose(y, np.quantile(a, probs), rtol=1e-12)
    assert right.get_xscale() == right.get_yscale() == "log"
    assert (right.get_xlabel(), right.get_ylabel()) == ("second quantile", "first quantile")
    assert left.get_title() == "a title"
    (mean_line,) = [ln for ln in left.get_lines() if ln.get_label() == "mean $m_1$"]
    assert mean_line.get_xdata()[0] == pytest.approx(np.log10(2.0))
    assert [t.get_text() for t in left.get_legend().get_texts()] == ["first", "second", "mean $m_1$"]
