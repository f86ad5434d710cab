"""The limit law against simulation (gelib.moment_checks): W1 per level of the chain, moments against the law."""

import math

import numpy as np
import pytest

from gelib import PRESETS, AttentionConfig
from gelib.attention_law import LEVEL_TITLES, LEVELS
from gelib.freeprob import affine, marchenko_pastur
from gelib.moment_checks import empirical_moments, level_sizes, level_w1_table
from gelib.numerics import MeanTest
from gelib.numerics.checks import t_quantile
from gelib.spectra import summarize

P, N = 400, 160  # X X^T / N with X of size P x N: Marchenko-Pastur with ratio 2.5, an atom 0.6 at 0


def _mp_cdf_closed_form(x, c):
    """The Marchenko-Pastur distribution function (ratio ``c > 1``, mean 1) from its closed-form density."""
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    t = np.linspace(a, b, 400_001)
    rho = np.sqrt(np.clip((b - t) * (t - a), 0, None)) / (2 * np.pi * c * t)
    cont = np.concatenate([[0.0], np.cumsum((rho[1:] + rho[:-1]) / 2 * np.diff(t))])
    return (1 - 1 / c) * (x >= 0) + np.interp(x, t, cont, left=0.0, right=cont[-1])


def _w1_by_grid(eigs, cdf, hi):
    """``int |F_n - F| dx`` on a fine grid: an independent W1."""
    x = np.linspace(0.0, hi, 400_001)
    emp = np.searchsorted(np.sort(np.where(np.abs(eigs) < 1e-9, 0.0, eigs)), x, side="right") / eigs.size
    return np.trapezoid(np.abs(emp - cdf(x)), x)


@pytest.fixture(scope="module")
def wishart():
    x = np.random.default_rng(0).standard_normal((P, N))
    return np.linalg.eigvalsh(x @ x.T / N)


def _spd_spectra(rng, seeds, n):
    """Eigenvalues (ascending) and the matrices of ``seeds`` random ``n x n`` Wishart matrices."""
    x = rng.standard_normal((seeds, n, n + 3))
    mats = x @ np.swapaxes(x, 1, 2) / (n + 3)
    return np.linalg.eigvalsh(mats), mats


def _uniform_spectra(rng, ns, seeds, drift, scale=1.0):
    """Midpoint quantiles of U(0, 1) (moments 1/(k+1), discretisation error O(n^-2)), every seed
    scaled by scale * exp((drift + 0.3 xi) / n): relative errors ~ k (drift + 0.3 xi) / n when scale = 1."""
    out = {}
    for n in ns:
        base = (np.arange(n) + 0.5) / n
        out[n] = np.exp((drift + 0.3 * rng.standard_normal((seeds, 1))) / n) * scale * base[None, :]
    return out


def test_level_sizes():
    cfg = AttentionConfig(n=400, d=400, h=2, d_k=160, d_v=100, d_o=300)
    assert level_sizes(cfg) == {"W": 400, "T": 400, "mu_V": 100, "mu_VO": 300, "out": 400}
    assert set(level_sizes(cfg)) == set(LEVELS) == set(LEVEL_TITLES)


def test_level_w1_table_against_a_direct_w1(wishart):
    law = marchenko_pastur(P / N)
    cfg = AttentionConfig(n=P, d=P, h=2, d_k=N, d_v=100, d_o=300)
    # T = 2 W + 1/2: W1 scales by 2, the mean is 2.5, so W1 / mean is 0.8 times that of W
    levels = {"W": wishart, "T": 2 * wishart + 0.5, "mu_V": wishart}
    laws = {"W": law, "T": affine(law, 2.0, 0.5), "mu_V": law}
    table, dist = level_w1_table(levels, laws, cfg)
    direct = _w1_by_grid(wishart, lambda x: _mp_cdf_closed_form(x, P / N), 1.1 * (1 + np.sqrt(P / N)) ** 2)
    assert 0.005 < direct < 0.1
    assert list(dist) == ["W", "T", "mu_V"]
    assert dist["W"].w1[0] == pytest.approx(direct, rel=2e-3)
    assert dist["T"].w1[0] == pytest.approx(0.8 * dist["W"].w1[0], rel=1e-6)
    assert dist["W"].shift[0] == pytest.approx(wishart.mean() - 1, abs=1e-12)
    assert all(d.sandwiched() for d in dist.values())  # |shift| <= W1 / mean <= |shift| + shape
    lines = table.splitlines()
    assert len(lines) == 2 + 3 and all(line.count("|") == 7 for line in lines)
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    w = dist["W"]
    assert cells == [
        LEVEL_TITLES["W"],
        "400",
        "0.600 at 0",
        f"{w.w1[0]:.4f}",
        f"{w.shift[0]:+.4f}",
        f"{w.shape[0]:.4f}",
    ]
    assert lines[3].split("|")[3].strip() == "0.600 at 0.5"  # T moves the atom to alpha^2
    # a law without atoms, and other titles
    y = np.random.default_rng(1).standard_normal((100, 200))
    table, _ = level_w1_table(
        {"mu_V": np.linalg.eigvalsh(y @ y.T / 200)}, {"mu_V": marchenko_pastur(0.5)}, cfg, {"mu_V": "M"}
    )
    assert [c.strip() for c in table.splitlines()[2].split("|")[1:4]] == ["M", "100", "none"]


def test_empirical_moments_against_a_loop():
    spectra = np.random.default_rng(3).exponential(size=(4, 50))
    got = empirical_moments(spectra, 3)
    want = [[sum(v**j for v in row) / row.size for j in (1, 2, 3)] for row in spectra]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (4, 3)


def test_chain_moments_against_traces_of_matrix_powers():
    """m_j of each seed is tr(M^j) / n of its matrix; the log-ratio of a step, the log of the traces' ratio."""
    from gelib.moment_checks import chain_moments

    rng = np.random.default_rng(11)
    ns, seeds, steps = (7, 13), 5, (("one", "a", "b"), ("two", "b", "c"))
    spectra, mats = {}, {}
    for n in ns:
        spectra[n], mats[n] = {}, {}
        for m in "abc":
            spectra[n][m], mats[n][m] = _spd_spectra(rng, seeds, n)
    sweep = chain_moments(spectra, k=4, steps=steps)
    assert sweep.ns == ns and sweep.k == 4 and sweep.moments["a"].shape == (2, seeds, 4)
    for i, n in enumerate(ns):
        for m in "abc":
            traces = np.array([[np.trace(np.linalg.matrix_power(x, j)) / n for j in (1, 2, 3, 4)] for x in mats[n][m]])
            np.testing.assert_allclose(sweep.moments[m][i], traces, rtol=1e-10)
        np.testing.assert_allclose(
            sweep.differences["one"][i], np.log(sweep.moments["a"][i] / sweep.moments["b"][i]), rtol=1e-12
        )
    s = sweep.moment("c", 3)  # the largest n by default
    assert s.count == seeds and s.mean == pytest.approx(sweep.moments["c"][1, :, 2].mean())
    assert sweep.moment("c", 3, n=7).mean == pytest.approx(sweep.moments["c"][0, :, 2].mean())


def test_chain_moments_identical_models_and_a_known_rate():
    """Identical models: every difference is exactly zero (no fit). b = a exp(c / n): the log-ratio
    of m_j is exactly -j c / n, so the fitted slope of its absolute value is -1 with a zero interval."""
    from gelib.moment_checks import chain_moments, moment_steps_markdown

    rng = np.random.default_rng(12)
    ns, c = (16, 32, 64, 128), 3.0
    spectra = {}
    for n in ns:
        a = np.sort(rng.exponential(size=(4, n)), axis=1)
        spectra[n] = {"a": a, "same": a.copy(), "b": a * np.exp(c / n)}
    sweep = chain_moments(spectra, k=3, steps=(("zero", "a", "same"), ("rate", "a", "b")))
    assert np.all(sweep.differences["zero"] == 0) and sweep.fits["zero"] == (None, None, None)
    for j in (1, 2, 3):
        exact = np.broadcast_to(-j * c / np.array(ns)[:, None], (len(ns), 4))
        np.testing.assert_allclose(sweep.differences["rate"][..., j - 1], exact, rtol=1e-10)
        fit = sweep.fits["rate"][j - 1]
        assert fit.slope == pytest.approx(-1, abs=1e-9) and fit.ci95 == pytest.approx(0, abs=1e-6)
        assert fit.prefactor == pytest.approx(j * c, rel=1e-9)
    table = moment_steps_markdown(sweep, {"rate": math.expm1(-c / 128)}).splitlines()
    assert len(table) == 4 and "$m_1$ at $n$ = 128 (%)" in table[0]
    assert "| zero | a / same | +0.00 ± 0.00 |" in table[2] and table[2].endswith("| — | — | — |")
    assert f"{-100 * c / 128:+.2f} ± 0.00 ({-100 * c / 128:+.2f})" in table[3] and "-1.00 ± 0.00" in table[3]
    with pytest.raises(ValueError, match="must increase"):
        chain_moments({32: spectra[32], 16: spectra[16]}, k=2, steps=(("rate", "a", "b"),))


def test_moment_sweep_draws_and_the_covariance_step_closed_form():
    """Each n is model_spectra on the stream (key, n); known spectra replace a draw; the first moment
    of Y^G[Sigma_f] over Y^G[Sigma_G] is sigma_mean_ratio, within the seed interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import gelib.keys
    from gelib.models import sigma_mean_ratio
    from gelib.moment_checks import moment_sweep
    from gelib.plotting import plot_moment_rates
    from gelib.spectra import model_spectra

    cfg = AttentionConfig(n=48, d=64, h=3, d_k=24, d_v=20, d_o=56)
    steps, seeds, key = (("covariance", "yg_sigma_f", "yg_sigma_g"),), 12, gelib.keys.stream(0, "moment-test")
    known = {24: {m: np.full((seeds, 24), f) for m, f in (("yg_sigma_f", 2.0), ("yg_sigma_g", 1.0))}}
    sweep = moment_sweep(key, cfg, (24, 48), seeds, k=2, steps=steps, known=known)
    np.testing.assert_allclose(sweep.differences["covariance"][0], np.broadcast_to(np.log([2.0, 4.0]), (seeds, 2)))
    direct = model_spectra(gelib.keys.stream(key, 48), cfg, ("yg_sigma_f", "yg_sigma_g"), seeds, progress=False)
    np.testing.assert_allclose(sweep.moments["yg_sigma_g"][1, :, 0], direct["yg_sigma_g"].mean(axis=1), rtol=1e-12)
    ratio = summarize(np.exp(sweep.differences["covariance"][1, :, 0]))
    assert ratio.mean > 1.1  # a shift of order 1 / d_K, well outside the seed interval
    assert abs(ratio.mean - sigma_mean_ratio(cfg.d_k, cfg.beta)) < 2 * ratio.ci95, ratio
    with pytest.raises(ValueError, match="must have shape"):
        moment_sweep(key, cfg, (24,), seeds + 1, steps=steps, known=known)
    fig, axes = plt.subplots(1, 2, layout="constrained")
    plot_moment_rates(axes, sweep)
    assert axes[0].get_title() == "$m_1$" and axes[1].get_xscale() == "log" and len(fig.legends) == 1
    plt.close(fig)


def test_moment_sweep_failures_allowance_and_slopes():
    """A difference ~ 1/n passes both checks; one that stays put fails both; the targets of the
    rate check come from the exact first-moment shifts; slopes() names every fit."""
    from gelib.moment_checks import chain_moments

    cfg = PRESETS["bert-base"].config().at_length(256)
    rng = np.random.default_rng(13)
    ns, spectra = (64, 128, 256), {}
    for n in ns:
        a = np.sort(rng.exponential(size=(5, n)), axis=1)
        noise = 1 + 0.01 * rng.standard_normal((5, 1))
        spectra[n] = {"a": a, "b": a * np.exp(4.0 / n) * noise ** (1 / n), "c": a * 1.3 * noise}
    sweep = chain_moments(spectra, k=2, steps=(("good", "a", "b"), ("stuck", "a", "c")), cfg=cfg)
    assert sweep.cfg == cfg and sweep.cfg.at_length(64).d_k == 8
    # steps without an exact shift: the leading slope -1 and no allowance
    assert sweep.exact_slopes == {} and set(sweep.targets().values()) == {(-1.0, 0.0)}
    fails = sweep.failures()
    assert fails and all(f.startswith("stuck") for f in fails)
    assert any("slope" in f for f in fails) and any("allowed from n = 64" in f for f in fails)
    assert any(f.startswith("good m_1: slope") for f in sweep.failures(predicted_slope=0, allowance=0.5))
    slopes = sweep.slopes()
    # every fit's slope, 95 % half-width and rate check (tolerance in SE, catch), and the level
    fields = ("", "_ci", "_tol_se", "_catch")
    assert set(slopes) == {f"slope_{s}_{j}{x}" for s in ("good", "stuck") for j in (1, 2) for x in fields} | {
        "slope_level"
    }
    t = MeanTest.of_fit(sweep.fits["good"][0], -1.0)
    assert slopes["slope_good_1_tol_se"] == t.quantile and slopes["slope_good_1_catch"] == pytest.approx(t.catch)
    assert slopes["slope_good_1"] == pytest.approx(-1, abs=0.05)
    with pytest.raises(ValueError, match="need the layer"):
        _ = chain_moments(spectra, k=1, steps=(("good", "a", "b"),)).exact_slopes
    # a step with an exact shift: m_1 against the exact local slope of log(1 + p(n)) over the sweep,
    # the higher moments against -1 with that slope's distance from -1 as allowance
    from gelib.models import sigma_mean_ratio

    cov = chain_moments(spectra, k=2, steps=(("covariance", "a", "b"),), cfg=cfg)
    y = [math.log(sigma_mean_ratio(cfg.at_length(n).d_k, cfg.beta)) for n in ns]
    want = np.polyfit(np.log(ns), np.log(y), 1)[0]
    assert cov.exact_slopes["covariance"] == pytest.approx(want, rel=1e-9) and want < -1
    assert cov.targets() == {
        ("covariance", 1): (pytest.approx(want), 0.0),
        ("covariance", 2): (-1.0, pytest.approx(-1 - want)),
    }


def test_first_moment_bias_against_monte_carlo():
    """Both predicted first-moment biases at a small size, against the mean of m_1 over many
    draws of gelib's models (no closed form used), within 4 standard errors: Y^G's is 0, the
    softmax layer's is mha_shift_exact; tied layers are refused; other
    models have no prediction."""
    import jax

    from gelib.models import mha_shift_exact
    from gelib.moment_checks import first_moment_bias
    from gelib.spectra import model_spectra

    cfg = AttentionConfig(n=12, d=20, h=2, d_k=5, d_v=3, d_o=20, beta=1.1)
    assert first_moment_bias("yg", cfg) == 0.0
    assert first_moment_bias("mha", cfg) == mha_shift_exact(12, 5, 1.1)
    spectra = model_spectra(jax.random.key(5), cfg, ("mha", "yg"), 600, progress=False)
    law = math.expm1(cfg.beta**2) * cfg.d_o / cfg.n
    for model in ("mha", "yg"):
        m1 = spectra[model].mean(axis=1)
        want = law * (1 + first_moment_bias(model, cfg))
        assert abs(m1.mean() - want) <= 4 * m1.std(ddof=1) / math.sqrt(m1.size), (model, m1.mean(), want)
    assert first_moment_bias("yf", cfg) is None
    with pytest.raises(ValueError, match="untied"):
        first_moment_bias("yg", cfg.replace(d_v=5, tie_kv=True))


def test_moment_checks_errors_fits_and_failures():
    from gelib.models import mha_shift_exact
    from gelib.moment_checks import moment_checks, moment_checks_markdown
    from gelib.numerics import fit_power_law

    rng = np.random.default_rng(17)
    ns, seeds = (64, 128, 256, 512), 5
    cfg = AttentionConfig(n=512, d=512, h=4, d_k=64, d_o=512)
    good, biased, stuck = (_uniform_spectra(rng, ns, seeds, d, s) for d, s in ((0.0, 1.0), (6.0, 1.0), (0.0, 1.3)))
    spectra = {n: {"a": good[n], "yg": biased[n], "c": stuck[n], "mha": good[n]} for n in ns}
    law_m = 1 / np.arange(2, 5)
    rates = {"a": (1.0, True), "yg": (1.0, True), "c": (0.5, False), "mha": (0.5, False)}
    checks = moment_checks(spectra, law_m, cfg, rates)
    assert [(c.model, c.k) for c in checks] == [(m, k) for m in rates for k in (1, 2, 3)]
    by = {(c.model, c.k): c for c in checks}
    # errors and fits against a direct computation
    direct = np.array([[np.mean(good[n][s] ** 2) * 3 - 1 for s in range(seeds)] for n in ns])
    np.testing.assert_allclose(by["a", 2].errors, direct, rtol=1e-12, atol=1e-15)
    assert by["a", 2].fit.slope == pytest.approx(fit_power_law(ns, np.abs(direct)).slope, rel=1e-12)
    fit = by["a", 2].fit
    assert abs(fit.slope + 1) <= 2 * fit.ci95 and fit.slope + fit.ci95 < 0 and by["a", 2].decided
    # predictions of m_1 only, at every n: Y^G's is 0, the softmax layer's mha_shift_exact
    assert by["yg", 2].bias is None and np.all(by["yg", 1].bias == 0) and by["a", 1].bias is None
    np.testing.assert_allclose(by["mha", 1].bias, [mha_shift_exact(n, n // 8) for n in ns], rtol=1e-12)
    # a model at the predicted rate passes; a biased Y^G fails the bias check only; a stuck one fails
    # the decay and the rate
    assert all(not by["a", k].failures() for k in (1, 2, 3))
    fails = by["yg", 1].failures()
    assert fails and all("predicted +0.0000" in f for f in fails) and not by["yg", 2].failures()
    stuck_fails = by["c", 3].failures()
    assert any("allowed from n = 64" in f for f in stuck_fails) and any("slope" in f for f in stuck_fails)
    assert not by["c", 3].decided
    # the decay bound is the check's threshold: an error just above it fails, just below passes. It was
    # 2 ci95 + (|mean_0| + 2 ci95_0) r; now the level's t quantile times the SE in place of 2 ci95
    c3 = by["c", 3]
    lo, hi = c3.at(64), c3.at()
    q = t_quantile(seeds)  # two-sided at CHECK_LEVEL, 5 seeds
    se, se0 = hi.std / math.sqrt(seeds), lo.std / math.sqrt(seeds)
    assert c3.decay_bound() == pytest.approx(q * se + (abs(lo.mean) + q * se0) * (64 / 512) ** 0.5)
    # the rate check: two-sided for an exact rate, one-sided (only a slope above -p fails) for a bound
    assert by["a", 2].rate_test() == MeanTest.of_fit(fit, -1.0) and not by["a", 2].rate_test().one_sided
    assert by["c", 3].rate_test() == MeanTest.of_fit(by["c", 3].fit, -0.5, one_sided=True)
    assert by["c", 3].percent_at()["allowed"] == pytest.approx(100 * c3.decay_bound())
    assert abs(hi.mean) > c3.decay_bound() and abs(by["a", 3].at().mean) <= by["a", 3].decay_bound()
    table = moment_checks_markdown(checks, labels={"a": "A"})
    assert table.count("\n") == 1 + len(checks) and "error at $n$ = 512" in table and "| A | $m_2$ |" in table
    assert "allowed at $n$ = 512" in table and f"| {100 * c3.decay_bound():.2f} |" in table
    assert "≤ -0.5" in table and "| -1 |" in table
    with pytest.raises(ValueError, match="increase"):
        moment_checks({128: spectra[128], 64: spectra[64]}, law_m, cfg, rates)


def test_fixed_move_is_where_the_decay_check_starts_to_fail():
    """A step that moves the moments by a fixed log-ratio delta (the same at every n, 2 % seed noise):
    the decay check passes it at 0.75 of fixed_moves() and fails it at 1.35 times, so the chapter's "a fixed
    move fails" holds from that amount on, not for every amount."""
    from gelib.moment_checks import chain_moments

    rng = np.random.default_rng(5)
    ns = (64, 256)
    base = {n: np.sort(rng.exponential(size=(6, n)), axis=1) for n in ns}
    noise = {n: np.exp(0.02 * rng.standard_normal((6, 1))) for n in ns}

    def sweep(delta):
        spectra = {n: {"a": base[n], "c": base[n] * np.exp(delta) * noise[n]} for n in ns}
        cfg = PRESETS["bert-base"].config().at_length(256)
        return chain_moments(spectra, k=1, steps=(("fixed", "a", "c"),), cfg=cfg)

    move = sweep(0.0).fixed_moves()["fixed", 1]
    assert 0 < move < 1 and sweep(0.1).fixed_moves()["fixed", 1] == pytest.approx(move)
    decay = lambda s: [f for f in s.failures() if "allowed from" in f]  # noqa: E731
    assert not decay(sweep(0.75 * move)) and decay(sweep(1.35 * move))
