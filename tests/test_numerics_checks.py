"""The book's check of a mean against an exact prediction (gelib.numerics.checks), against Monte Carlo.

Every rate below is measured on normal values drawn from explicit keys and compared with
the rate the test states (its level, its power), within five binomial standard deviations.
"""

import math

import jax
import numpy as np
import pytest
import scipy.stats

from gelib import learning_markers
from gelib.keys import stream
from gelib.numerics import checks as C
from gelib.spectra import summarize

#: The spread of the covariance chapter's per-seed shift of the mean eigenvalue at "ci" scale,
#: relative to its prediction (0.79 % against 4.67 %, measured over 64 seeds).
REL_STD = 0.17


def draws(seeds: int, reps: int, *path) -> np.ndarray:
    """``(reps, seeds)`` standard normal values from the key ``stream(0, "checks", *path)``."""
    return np.asarray(jax.random.normal(stream(0, "checks", *path), (reps, seeds)))


def rejected(x: np.ndarray, predicted: float, quantile: float) -> np.ndarray:
    """Per row of ``x``, whether ``|mean - predicted| > quantile * se`` (the test, vectorised)."""
    se = x.std(axis=1, ddof=1) / math.sqrt(x.shape[1])
    return np.abs(x.mean(axis=1) - predicted) > quantile * se


def within(count: int, reps: int, p: float) -> bool:
    """``count`` rejections in ``reps`` within five binomial standard deviations of ``reps * p``."""
    return abs(count - reps * p) <= 5 * math.sqrt(reps * p * (1 - p))


def test_level_is_the_markers():
    assert C.CHECK_LEVEL == learning_markers.MARKER_LEVEL


@pytest.mark.parametrize("seeds", [4, 8, 32])
def test_quantile_and_level_invert(seeds):
    q = C.t_quantile(seeds)
    assert math.isclose(C.level_of(q, seeds), C.CHECK_LEVEL, rel_tol=1e-9)
    # the tolerance is q standard errors: the (1 - level/2) quantile of Student's t
    assert math.isclose(scipy.stats.t.cdf(q, seeds - 1), 1 - C.CHECK_LEVEL / 2, rel_tol=1e-12)


@pytest.mark.parametrize("seeds", [4, 8])
def test_true_predictions_fail_at_the_level(seeds):
    reps = 400_000
    x = draws(seeds, reps, "level", seeds)
    count = int(rejected(x, 0.0, C.t_quantile(seeds)).sum())
    assert within(count, reps, C.CHECK_LEVEL), (count, reps * C.CHECK_LEVEL)
    # mean_test decides as the vectorised rule does, seed by seed
    for row in x[:300]:
        t = C.mean_test(row, 0.0)
        assert t.passes == (not rejected(row[None], 0.0, t.quantile)[0])


@pytest.mark.parametrize("seeds", [4, 8, 20])
def test_the_stated_power_is_caught_half_the_time(seeds):
    reps = 40_000
    error = C.catch_ncp(seeds) / math.sqrt(seeds)  # in units of the values' standard deviation
    x = draws(seeds, reps, "power", seeds) + error
    count = int(rejected(x, 0.0, C.t_quantile(seeds)).sum())
    assert within(count, reps, C.CATCH_PROBABILITY), count / reps
    # and the noncentral t gives the rate of other errors too
    for ncp in (2.0, 6.0):
        x = draws(seeds, reps, "rate", seeds, ncp) + ncp / math.sqrt(seeds)
        count = int(rejected(x, 0.0, C.t_quantile(seeds)).sum())
        assert within(count, reps, C.rejection_probability(ncp, seeds)), (ncp, count / reps)


def test_a_15_percent_error_is_caught_where_the_power_says():
    reps, predicted = 40_000, 1.0
    seeds = C.seeds_to_catch(0.15, REL_STD)
    assert C.catch_ncp(seeds - 1) * REL_STD / math.sqrt(seeds - 1) > 0.15  # the fewest
    for n, caught in ((seeds, True), (4, False)):
        x = predicted * (1.15 + REL_STD * draws(n, reps, "fifteen", n))
        rate = rejected(x, predicted, C.t_quantile(n)).mean()
        test = C.MeanTest(1.15, REL_STD / math.sqrt(n), n, predicted)
        assert test.catches(0.15) == caught and (rate >= C.CATCH_PROBABILITY - 0.0125) == caught, (n, rate)
        assert math.isclose(test.power, C.catch_ncp(n) * REL_STD / math.sqrt(n))


def test_the_old_rule_is_the_level_its_quantile_says():
    reps, seeds = 200_000, 4
    q = C.twice_ci95_quantile(seeds)  # 2 t_{0.975, 3} = 6.36 standard errors
    assert math.isclose(q, 2 * scipy.stats.t.ppf(0.975, seeds - 1))
    count = int(rejected(draws(seeds, reps, "old", seeds), 0.0, q).sum())
    assert within(count, reps, C.level_of(q, seeds)), count / reps


@pytest.mark.parametrize("seeds", [4, 8])
def test_the_old_rule_misses_the_error_its_words_claim(seeds):
    """ "Within twice its 95 % interval" read as 2 x 1.96 standard errors claims to catch an error of
    3.92 standard errors at least half the time; at 4 or 8 seeds it does not (about 25 % and 35 %),
    since twice the interval is 2 t_{0.975, N-1} standard errors, not 2 x 1.96."""
    reps, claimed = 40_000, 2 * 1.96
    x = draws(seeds, reps, "claim", seeds) + claimed / math.sqrt(seeds)
    rate = rejected(x, 0.0, C.twice_ci95_quantile(seeds)).mean()
    assert rate < C.CATCH_PROBABILITY - 0.0125, rate  # 0.0125: five binomial SEs at 40,000 draws


def test_mean_test_numbers():
    t = C.mean_test([1.0, 2.0, 3.0, 4.0], 2.0)
    assert math.isclose(t.se, np.std([1, 2, 3, 4], ddof=1) / 2)
    assert math.isclose(t.z, 0.5 / t.se) and t.passes
    g = t.glue()
    assert g["seeds"] == 4 and math.isclose(g["tol_se"], C.t_quantile(4)) and math.isclose(g["level"], 0.1)
    assert math.isclose(g["power"], 100 * C.catch_ncp(4) * t.se / 2.0) and math.isclose(g["catch"], t.catch)
    assert C.MeanTest.of(summarize([1.0, 2.0, 3.0, 4.0]), 2.0) == t
    assert t.glue(prefix="x_") == {"x_" + k: v for k, v in g.items()}
    assert C.MeanTest(0.1, 0.1, 4, 0.0).power == math.inf
    w = C.worst_of([t, C.MeanTest(0.0, 1.0, 2, 3.0)], unit=100)
    assert w["z_max"] == 3.0 and w["tol_se"] == C.t_quantile(2) and w["catch"] == 100 * C.catch_ncp(2)
    with pytest.raises(ValueError):
        C.mean_test([1.0], 1.0)
    with pytest.raises(ValueError):
        C.catch_ncp(4, probability=1e-4)


def test_mean_ratios_are_the_spectra_mean_ratios():
    """gelib.spectra.mean_ratios (|Y|_F^2, no eigenvalues) against the eigenvalues of the same draws."""
    from gelib import AttentionConfig, models, sampling, spectra

    cfg = AttentionConfig(n=16, d=16, h=2, h_kv=2, d_k=8, d_v=8, d_o=16)
    kernels, key = (models.kernel_f, models.kernel_g), stream(0, "checks", "ratios")
    got = spectra.mean_ratios(kernels, cfg, key, 3)
    for s, r in enumerate(got):
        g = jax.random.normal(stream(key, "noise", s), (cfg.h, cfg.n, cfg.d_v))
        y = models.gaussian_row_outputs(kernels, sampling.sample_fast(stream(key, "draw", s), cfg), g, cfg)
        ev = [np.asarray(spectra.spectrum(y[i])) for i in range(2)]
        assert math.isclose(r, ev[0].mean() / ev[1].mean(), rel_tol=1e-10)
    assert len(set(got.tolist())) == 3


def test_a_fitted_slope_is_tested_as_its_t_statistic():
    """MeanTest.of_fit against scipy's regression: same standard error, and on true slopes it fails at
    the level (Monte Carlo over pooled fits of 3 sizes x 4 seeds)."""
    from gelib.numerics import fit_power_law

    ns, reps = np.repeat([64.0, 128.0, 256.0], 4), 20_000
    noise = draws(ns.size, reps, "slope")
    t = C.MeanTest.of_fit(fit_power_law(ns, ns**-1.0 * np.exp(0.1 * noise[0])), -1.0)
    reg = scipy.stats.linregress(np.log(ns), -np.log(ns) + 0.1 * noise[0])
    assert t.seeds - 1 == ns.size - 2 and math.isclose(t.se, reg.stderr, rel_tol=1e-9)
    x = np.log(ns) - np.log(ns).mean()
    slopes = -1.0 + 0.1 * (noise @ x) / (x @ x)  # the least-squares slopes of every repetition
    resid = 0.1 * noise - 0.1 * noise.mean(axis=1, keepdims=True) - np.outer(slopes + 1.0, x)
    se = np.sqrt((resid**2).sum(axis=1) / (ns.size - 2) / (x @ x))
    q = C.t_quantile(t.seeds, 0.05)  # at 5 %, where 20 000 repetitions resolve the rate
    assert within(int((np.abs(slopes + 1.0) > q * se).sum()), reps, 0.05)


@pytest.mark.parametrize("seeds", [4, 8])
def test_the_one_sided_test_fails_at_the_level_and_catches_its_power(seeds):
    """The one-sided test (``mean <= predicted``): true means fail at the level, means below the bound
    never fail more often, and a mean above it by the stated catch fails half the time."""
    reps = 400_000
    q = C.t_quantile(seeds, one_sided=True)
    assert math.isclose(scipy.stats.t.cdf(q, seeds - 1), 1 - C.CHECK_LEVEL, rel_tol=1e-12)
    x = draws(seeds, reps, "one-sided", seeds)
    se = x.std(axis=1, ddof=1) / math.sqrt(seeds)
    assert within(int((x.mean(axis=1) > q * se).sum()), reps, C.CHECK_LEVEL)
    assert int((x.mean(axis=1) - 1 / math.sqrt(seeds) > q * se).sum()) <= reps * C.CHECK_LEVEL  # below the bound
    ncp = C.catch_ncp(seeds, one_sided=True)
    assert ncp < C.catch_ncp(seeds)  # one side: a smaller error is caught half the time
    y = x[:40_000] + ncp / math.sqrt(seeds)
    assert within(int((y.mean(axis=1) > q * se[:40_000]).sum()), 40_000, C.CATCH_PROBABILITY)
    for row in y[:300]:  # MeanTest decides as the vectorised rule
        t = C.MeanTest(float(row.mean()), float(row.std(ddof=1) / math.sqrt(seeds)), seeds, 0.0, one_sided=True)
        assert t.passes == (t.mean <= q * t.se) and math.isclose(t.catch, ncp * t.se)
        assert C.MeanTest(-t.mean, t.se, seeds, 0.0, one_sided=True).passes or t.mean < 0


def _slope_draws(reps: int, *path):
    """Least-squares slopes of ``log |error|`` on ``log n`` (3 sizes x 4 seeds, noise 0.1, true slope 0) and
    their standard errors, ``reps`` repetitions from explicit keys; and the true standard error."""
    ns = np.repeat([64.0, 128.0, 256.0], 4)
    noise = 0.1 * draws(ns.size, reps, "rate-check", *path)
    x = np.log(ns) - np.log(ns).mean()
    slopes = (noise @ x) / (x @ x)
    resid = noise - noise.mean(axis=1, keepdims=True) - np.outer(slopes, x)
    return ns, noise, slopes, np.sqrt((resid**2).sum(axis=1) / (ns.size - 2) / (x @ x)), 0.1 / math.sqrt(x @ x)


@pytest.mark.parametrize("exact", [True, False])
def test_the_rate_check_passes_true_rates_at_its_level_and_catches_its_power(exact):
    """gelib.moment_checks.MomentCheck.rate_test (MeanTest.of_fit, two-sided if exact, else one-sided) on
    pooled fits of 3 sizes x 4 seeds: a true rate fails at CHECK_LEVEL; a rate wrong by the stated catch
    (in true standard errors) fails half the time. The rule decides as the vectorised one fit by fit."""
    from gelib.moment_checks import MomentCheck
    from gelib.numerics import fit_power_law

    ns, noise, slopes, se, se_true = _slope_draws(400_000, "exact" if exact else "bound")
    dof = ns.size - 2
    q = C.t_quantile(dof + 1, one_sided=not exact)
    off = slopes if not exact else np.abs(slopes)
    assert within(int((off > q * se).sum()), slopes.size, C.CHECK_LEVEL)
    wrong = C.catch_ncp(dof + 1, one_sided=not exact) * se_true  # the slope is off by the stated catch
    assert within(int(((slopes[:40_000] + wrong) > q * se[:40_000]).sum()), 40_000, C.CATCH_PROBABILITY)
    for row, s in zip(noise[:200], slopes[:200]):
        errors = (ns**-0.5 * np.exp(row)).reshape(3, 4)  # |error| = n^{-1/2} e^noise ...
        errors = errors * (ns.reshape(3, 4) / 64.0) ** wrong  # ... times n^wrong: slope -1/2 + wrong + s
        check = MomentCheck("m", 2, (64, 128, 256), errors, None, 0.5, exact, fit_power_law((64, 128, 256), errors))
        t = check.rate_test()
        assert (
            t.seeds == dof + 1 and t.one_sided == (not exact) and math.isclose(t.mean, -0.5 + wrong + s, abs_tol=1e-9)
        )
        assert t.passes == (((t.mean + 0.5) if not exact else abs(t.mean + 0.5)) <= t.quantile * t.se)
        assert (not any("slope" in f for f in check.failures())) == t.passes


@pytest.mark.parametrize("seeds", [4, 8])
def test_an_exclusion_errs_at_the_level_both_ways_where_it_is_asserted(seeds):
    """``MeanTest.below`` (the one-sided exclusion of ``predicted`` from above), as the learning markers assert
    it (:func:`gelib.learning_markers._threshold`): a true mean at the excluded value is excluded at the level,
    and a true mean ``catch_ncp(seeds, level, 1 - level)`` true standard errors below it fails the exclusion
    at the level too, which is what its threshold on the 95 % half-width states."""
    reps = 400_000
    q = C.t_quantile(seeds, one_sided=True)
    x = draws(seeds, reps, "exclusion", seeds)
    se = x.std(axis=1, ddof=1) / math.sqrt(seeds)
    assert within(int((x.mean(axis=1) < -q * se).sum()), reps, C.CHECK_LEVEL)  # at the bound: excluded at the level
    ncp = C.catch_ncp(seeds, probability=1 - C.CHECK_LEVEL, one_sided=True)
    y = x - ncp / math.sqrt(seeds)  # ncp true standard errors below the bound
    assert within(int((y.mean(axis=1) >= -q * se).sum()), reps, C.CHECK_LEVEL)  # not excluded: at the level
    for row in y[:300]:  # MeanTest decides as the vectorised rule
        t = C.MeanTest(float(row.mean()), float(row.std(ddof=1) / math.sqrt(seeds)), seeds, 0.0, one_sided=True)
        assert t.below == (t.mean < -q * t.se)
    # the threshold: the 95 % half-width whose standard error puts the bound ncp standard errors away
    gap = 0.3
    assert learning_markers._threshold(gap, seeds, C.CHECK_LEVEL) == pytest.approx(
        gap / ncp * scipy.stats.t.ppf(0.975, seeds - 1)
    )
