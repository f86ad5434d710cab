"""The regimes of real models: the layers, the joint check, the per-step shifts, their plot and scales.

* :func:`gelib.sweeps.regime_layers` against :func:`gelib.sweeps.proportional` (the two regimes differ
  in ``d_K`` only);
* :func:`gelib.sweeps.regime_check` on synthetic values built so that every ``z``-score is known
  exactly (0, 10 or 1000 standard errors), its threshold against the Bonferroni Student-t quantile
  of SciPy, its power and glued numbers against the definitions;
* :func:`gelib.sweeps.step_shift_values` against the models built by hand from the same draw and
  noise key (the keys of :func:`gelib.sweeps.run`);
* :func:`gelib.plotting.regime_plot`: what it draws (Agg backend);
* :func:`bookrun.scales.regimes`: the sizes of the ``"ci"`` scale.
"""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.stats  # noqa: E402

import bookrun.scales  # noqa: E402
from gelib import AttentionConfig, keys, models, sampling, sweeps  # noqa: E402
from gelib.plotting import regime_plot  # noqa: E402

NS = (128, 256, 512)
SEEDS = 8


def test_regime_layers_differ_in_d_k_only():
    layers = sweeps.regime_layers((512, 128, 256), h=4, beta=0.8)
    assert list(layers) == ["ratio", "fixed"]
    assert [c.n for c in layers["ratio"]] == list(NS)  # sorted
    assert [c.d_k for c in layers["ratio"]] == [16, 32, 64]  # n / 8
    assert [c.d_k for c in layers["fixed"]] == [64, 64, 64]
    for r, f, n in zip(layers["ratio"], layers["fixed"], NS):
        assert r == sweeps.proportional(n, h=4, d_k=1 / 8, d_v=1 / 8, d_o=3 / 2, beta=0.8)
        assert f == r.replace(d_k=64)
        assert (f.d_v, f.d_o, f.d, f.h, f.h_kv, f.beta) == (n // 8, 3 * n // 2, 3 * n // 2, 4, 4, 0.8)
    other = sweeps.regime_layers(NS, h=2, dk_ratio=1 / 4, dk_fixed=32)
    assert [c.d_k for c in other["ratio"]] == [32, 64, 128] and [c.d_k for c in other["fixed"]] == [32] * 3


def synthetic(layers, z, rng, sd=None):
    """Values (len, SEEDS) per regime whose z-scores against the prediction 1 / n are exactly ``z[r]``.

    Standard Gaussian noise is centred and scaled to standard deviation ``sd`` (default 0.1 / n), so that the
    mean over seeds is the prediction plus ``z`` standard errors, exactly."""
    values, predicted = {}, {}
    for r, cs in layers.items():
        pred = np.array([1 / c.n for c in cs])
        noise = rng.standard_normal((len(cs), SEEDS))
        noise = (noise - noise.mean(axis=1, keepdims=True)) / noise.std(axis=1, ddof=1, keepdims=True)
        s = 0.1 * pred[:, None] if sd is None else np.asarray(sd[r], dtype=float)[:, None]
        values[r] = pred[:, None] + s * (noise + np.asarray(z[r], dtype=float)[:, None] / math.sqrt(SEEDS))
        predicted[r] = pred
    return values, predicted


@pytest.fixture
def layers():
    return sweeps.regime_layers(NS, h=2)


def test_regime_check_accepts_the_prediction_and_rejects_a_shift(layers):
    rng = np.random.default_rng(0)
    values, predicted = synthetic(layers, {"ratio": [0, 0, 0], "fixed": [0, 0, 0]}, rng)
    check = sweeps.regime_check("synthetic", layers, values, predicted)
    assert check.ok and "ok" in str(check)
    for r in layers:
        np.testing.assert_allclose(check.z[r], 0, atol=1e-9)
        np.testing.assert_allclose(check.mean(r), predicted[r], rtol=1e-12)
        assert check.ns[r] == NS and check.d_k[r] == tuple(c.d_k for c in layers[r])
        assert check.testable[r].all()
    assert check.threshold == pytest.approx(scipy.stats.t.ppf(1 - 0.05 / (2 * 6), SEEDS - 1), rel=1e-12)
    # one size of one regime 10 standard errors off (the threshold is 3.5 here): the whole check fails
    values, predicted = synthetic(layers, {"ratio": [0, 0, 0], "fixed": [0, 10, 0]}, rng)
    check = sweeps.regime_check("synthetic", layers, values, predicted)
    assert check.z["fixed"] == pytest.approx([0, 10, 0], abs=1e-9)
    assert not check.ok and "FAILED" in str(check)
    # a looser level has a larger threshold; at level 1 - 1e-12 even 10 standard errors pass
    assert sweeps.regime_check("synthetic", layers, values, predicted, level=1 - 1e-12).ok


def test_regime_check_ignores_untestable_layers(layers):
    rng = np.random.default_rng(1)
    testable = lambda c: c.d_k > 16  # noqa: E731  (the smallest layer of "ratio", d_K = 16, is not tested)
    # the untested layer is wildly wrong (1000 standard errors) and very noisy (sd 1e3 times the others)
    sd = {"ratio": [1e3 / NS[0], 0.1 / NS[1], 0.1 / NS[2]], "fixed": [0.1 / n for n in NS]}
    values, predicted = synthetic(layers, {"ratio": [1000, 1, -1], "fixed": [0.5, 0, -2]}, rng, sd)
    check = sweeps.regime_check("synthetic", layers, values, predicted, testable=testable)
    assert check.ok
    assert list(check.testable["ratio"]) == [False, True, True] and check.testable["fixed"].all()
    assert check.z["ratio"][0] == pytest.approx(1000, rel=1e-9)  # its z is still given
    assert check.threshold == pytest.approx(scipy.stats.t.ppf(1 - 0.05 / (2 * 5), SEEDS - 1), rel=1e-12)
    # power: threshold times the largest standard error among the tested sizes only
    assert check.power("ratio") == pytest.approx(check.threshold * 0.1 / NS[1] / math.sqrt(SEEDS), rel=1e-9)
    assert check.power("fixed") == pytest.approx(check.threshold * 0.1 / NS[0] / math.sqrt(SEEDS), rel=1e-9)
    # the same values with every layer tested fail
    assert not sweeps.regime_check("synthetic", layers, values, predicted).ok
    with pytest.raises(ValueError):
        sweeps.regime_check("synthetic", layers, values, predicted, testable=lambda c: False)


def test_regime_check_glue_values(layers):
    values, predicted = synthetic(layers, {"ratio": [0, 0, 2], "fixed": [1, -3, 0]}, np.random.default_rng(2))
    check = sweeps.regime_check("synthetic", layers, values, predicted, testable=lambda c: c.n > 128)
    glued = check.glue_values(100)
    assert set(glued) == {"threshold"} | {
        f"{r}_{x}" for r in ("ratio", "fixed") for x in ("first", "last", "measured", "maxz", "power")
    }
    assert glued["threshold"] == check.threshold  # not scaled
    for r in layers:
        assert glued[f"{r}_first"] == pytest.approx(100 / NS[0], rel=1e-12)
        assert glued[f"{r}_last"] == pytest.approx(100 / NS[-1], rel=1e-12)
        assert glued[f"{r}_measured"] == pytest.approx(100 * values[r][-1].mean(), rel=1e-12)
        assert glued[f"{r}_power"] == pytest.approx(100 * check.power(r), rel=1e-12)
    # largest |z| over the tested sizes, not scaled: the -3 at n = 256 counts, the 1 at n = 128 is not tested
    assert glued["ratio_maxz"] == pytest.approx(2, abs=1e-9)
    assert glued["fixed_maxz"] == pytest.approx(3, abs=1e-9)
    assert check.glue_values()["ratio_last"] == pytest.approx(1 / NS[-1], rel=1e-12)


# ---------------------------------------------------------------------------------------------
# step_shift_values and step_shift_check

TINY = AttentionConfig(n=32, d=32, h=2, d_k=16, d_v=8, d_o=32)


def test_step_shift_values_unknown_step():
    with pytest.raises(ValueError, match="unknown step"):
        sweeps.step_shift_values("softmax", [TINY], 2, keys.stream(0))


def test_step_shift_values_against_the_models_built_by_hand():
    key = keys.stream(5, "shift")
    values = sweeps.step_shift_values("gaussian_rows", [TINY], 2, key)
    assert values.shape == (1, 2)
    for s in range(2):
        k = keys.stream(key, TINY.n, s)  # the key that sweeps.run gives seed s of this layer
        draw = sampling.sample_fast(k, TINY)
        ya, yb = (
            np.asarray(models.build_all((m,), draw, TINY, key=keys.stream(k, "noise"))[0])
            for m in ("yf_ring", "yg_sigma_f")
        )
        assert values[0, s] == pytest.approx(np.sum(ya**2) / np.sum(yb**2) - 1, rel=1e-12, abs=1e-14)
    assert values[0, 0] != values[0, 1]  # the seeds differ
    np.testing.assert_array_equal(sweeps.step_shift_values("gaussian_rows", [TINY], 2, key), values)


def test_step_shift_check_wiring():
    """Each regime draws from stream(key, regime) and is compared with step_shifts_exact (two regimes of
    the same tiny layer, so that only the keys differ)."""
    key = keys.stream(6, "check")
    layers = {"a": [TINY], "b": [TINY]}
    check = sweeps.step_shift_check("centering", layers, 2, key)
    exact = models.step_shifts_exact(TINY.n, TINY.d_k, TINY.beta)["centering"]
    assert exact == models.centering_shift_exact(TINY.d_k, TINY.beta) > 0
    for r in layers:
        alone = sweeps.step_shift_values("centering", [TINY], 2, keys.stream(key, r))
        np.testing.assert_array_equal(check.values[r], alone)
        np.testing.assert_allclose(check.predicted[r], [exact], rtol=1e-12)
    assert not np.array_equal(check.values["a"], check.values["b"])
    assert check.threshold == pytest.approx(scipy.stats.t.ppf(1 - 0.05 / 4, 1), rel=1e-12)


def test_step_shift_check_refuses_tied_layers():
    tied = {"ratio": [TINY.replace(d_v=16, tie_kv=True)], "fixed": [TINY.replace(d_v=16)]}
    with pytest.raises(ValueError, match="untied"):
        sweeps.step_shift_check("covariance", tied, 2, keys.stream(0))


# ---------------------------------------------------------------------------------------------
# regime_plot


def test_regime_plot_positive_predictions(layers):
    values, predicted = synthetic(layers, {"ratio": [0, 0, 0], "fixed": [0, 0, 0]}, np.random.default_rng(3))
    check = sweeps.regime_check("synthetic", layers, values, predicted, testable=lambda c: c.d_k > 16)
    fig, ax = plt.subplots()
    try:
        regime_plot(ax, check, 100, "values (%)")
        lines = [ln for ln in ax.get_lines() if str(ln.get_label()).endswith("prediction")]
        assert len(lines) == 2  # one per regime
        for ln, r in zip(lines, layers):
            np.testing.assert_allclose(ln.get_xdata(), NS)
            np.testing.assert_allclose(ln.get_ydata(), 100 * predicted[r], rtol=1e-12)
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_ylabel() == "values (%)"
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        # per regime one prediction and one measured entry (the untested size has none); "fixed" names d_K = 64
        assert sorted(t.rsplit(": ", 1)[1] for t in legend) == ["measured", "measured", "prediction", "prediction"]
        assert sum("64" in t for t in legend) == 2
        # the untested size (d_K = 16 of "ratio") has an open marker, the five tested sizes filled ones
        faces = [ln.get_markerfacecolor() for ln in ax.get_lines() if ln.get_marker() == "o"]
        assert sorted(len(ln.get_xdata()) for ln in ax.get_lines() if ln.get_marker() == "o") == [1, 2, 3]
        assert faces.count("none") == 1
    finally:
        plt.close(fig)


def test_regime_plot_zero_prediction_is_linear_with_a_zero_line(layers):
    values, predicted = synthetic(layers, {"ratio": [0, 0, 0], "fixed": [0, 0, 0]}, np.random.default_rng(4))
    values = {r: v - predicted[r][:, None] for r, v in values.items()}
    zero = {r: np.zeros(len(NS)) for r in layers}
    check = sweeps.regime_check("synthetic", layers, values, zero)
    fig, ax = plt.subplots()
    try:
        regime_plot(ax, check)
        assert ax.get_xscale() == "log" and ax.get_yscale() == "linear"
        assert sum(str(ln.get_label()).endswith("prediction") for ln in ax.get_lines()) == 2
        assert any(
            np.all(np.asarray(ln.get_ydata()) == 0) and len(ln.get_ydata()) == 2
            for ln in ax.get_lines()
            if not str(ln.get_label()).endswith("prediction")
        )  # the zero line (axhline)
    finally:
        plt.close(fig)


def test_regime_figure_one_panel_per_check(layers):
    import gelib.plotting

    values, predicted = synthetic(layers, {"ratio": [0, 0, 0], "fixed": [0, 0, 0]}, np.random.default_rng(5))
    check = sweeps.regime_check("synthetic", layers, values, predicted)
    fig = gelib.plotting.regime_figure((check, 1.0, "first"), (check, 100.0, "second"))
    try:
        assert [ax.get_ylabel() for ax in fig.axes] == ["first", "second"]
        assert all(ax.get_xscale() == "log" for ax in fig.axes)
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------------------------
# bookrun.scales.regimes


def test_scales_regimes():
    cfg = sweeps.proportional(256, h=4, d_k=1 / 2, d_v=1 / 2, d_o=3 / 2, beta=0.9)
    layers, seeds = bookrun.scales.regimes("ci", cfg)
    assert seeds == 8
    assert layers == sweeps.regime_layers(NS, h=4, beta=0.9)
    assert [c.n for c in layers["ratio"]] == [c.n for c in layers["fixed"]] == list(NS)
    with pytest.raises(ValueError):
        bookrun.scales.regimes("huge", cfg)
