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


def test_layer_view_draws_one_heads_attention_and_the_spectrum_against_its_means():
    import jax

    from gelib import AttentionConfig
    from gelib.models import attention, build, mha_shift_exact, scores
    from gelib.plotting import layer_view
    from gelib.sampling import sample_fast
    from gelib.spectra import spectrum

    cfg = AttentionConfig(n=64, d=96, h=2, d_k=16, beta=1.5)
    draw = sample_fast(jax.random.key(3), cfg)
    fig = layer_view(draw, cfg, shown=16)
    ax_a, ax_s = fig.axes[:2]  # the attention and the spectrum (then its colour bar, the atoms' twin axis)
    a = np.asarray(attention(scores(draw.q[0], draw.k[0]), cfg.beta))
    np.testing.assert_allclose(ax_a.images[0].get_array(), np.log10(np.maximum(a[:16, :16], 1e-12)), rtol=1e-6)
    assert f"{a.max(axis=1).mean():.2f} on average" in ax_a.get_title()
    # the three lines: the measured mean of this draw's spectrum, the exact mean, the limit m_1
    xs = [ln.get_xdata()[0] for ln in ax_s.get_lines()[-3:]]
    m1 = cfg.first_moment
    expected = [spectrum(build("mha", draw, cfg)).mean(), m1 * (1 + mha_shift_exact(cfg.n, cfg.d_k, cfg.beta)), m1]
    np.testing.assert_allclose(xs, expected, rtol=1e-6)
    assert ax_s.get_xscale() == "log"


def test_learning_view_reads_each_layers_arrival_time_and_error_off_its_law():
    from gelib import AttentionConfig, learning
    from gelib.learning_markers import LimitLaws
    from gelib.plotting import learning_view

    laws, read = LimitLaws(1e-9), learning.Reading(epsilon=1e-2, sigma=0.25, horizon=100.0)
    layers = {"a": AttentionConfig(n=256, d=256, h=4, d_k=32, d_o=512), "b": AttentionConfig(n=256, d=256, h=2, d_k=32)}
    fig = learning_view(laws, layers, read)
    a_loss, a_err, a_law = fig.axes
    for i, (label, cfg) in enumerate(layers.items()):
        law = laws(cfg)
        loss = a_loss.get_lines()[2 * i]  # each layer's curve, then its arrival line
        t, y = loss.get_data()
        np.testing.assert_allclose(y, learning.training_loss(law, t))
        arrive = learning.arrival_time(law, read.epsilon)
        assert loss.get_label() == f"{label}: arrives at {arrive:.3g}"
        assert a_loss.get_lines()[2 * i + 1].get_xdata()[0] == pytest.approx(arrive)
        at_h = learning.coefficient_error(law, read.horizon, cfg.n, cfg.d_o, read.sigma)[0]
        assert f"{at_h:.3g} at" in a_err.get_lines()[i].get_label()
    assert a_law.get_xscale() == "log" and a_law.get_yscale() == "log"
