"""The learning chapters' markers against their curves: limit laws, softmax spectra, the marker rule."""

import math

import numpy as np
import pytest
import scipy.stats

from gelib import AttentionConfig
from gelib import learning as L
from gelib import learning_markers as MK
from gelib.figure_data import to_rows
from gelib.freeprob import marchenko_pastur
from gelib.models import mha_shift_exact
from gelib.numerics import MeanTest
from gelib.numerics.checks import catch_ncp, rejection_probability
from gelib.spectra import summarize


def table_cells(md):
    """The body rows of a markdown table, as lists of stripped cells."""
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()[2:]]


# --- limit laws, softmax spectra and markers ------------------------------------------------


class ScaledMomentsLaw:
    """A law whose reported exact moments are off by a factor: the quadrature check must see it."""

    def __init__(self, law, factor):
        self.law, self.factor = law, factor

    def moments(self, k):
        return self.law.moments(k) * self.factor

    def __getattr__(self, name):
        return getattr(self.law, name)


def test_quadrature_error_sees_wrong_moments():
    law = marchenko_pastur(0.5)
    assert MK.quadrature_error(law) < 1e-12
    # m_1, m_2 reported 1 % too large: the quadrature misses them by 1 - 1/1.01
    assert MK.quadrature_error(ScaledMomentsLaw(law, 1.01)) == pytest.approx(1 - 1 / 1.01, rel=1e-9)
    # an atom at 0 (MP with ratio 2: mass 1/2 there) is counted in the total mass
    assert MK.quadrature_error(marchenko_pastur(2.0)) < 1e-12


def test_limit_laws_cache_check_and_mean():
    calls = []

    def law_fn(cfg):
        calls.append(cfg)
        from gelib.attention_law import output_law

        return output_law(cfg)

    laws = MK.LimitLaws(1e-9, law_fn=law_fn)
    cfgs = [
        AttentionConfig(n=256, d=256, h=4, d_k=64, d_o=512),
        AttentionConfig(n=256, d=512, h=4, d_k=32, d_o=128, tie_kv=True),
        AttentionConfig(n=256, d=256, h=4, d_k=64, d_o=512, beta=1.5),
    ]
    for c in cfgs:
        assert laws(c) is laws(c)
        # the exact mean eigenvalue against its closed form (e^{b^2} - 1 (+ b^2 n / d_K tied)) d_O / n
        assert laws.mean(c) == pytest.approx(c.first_moment, rel=1e-12)
    assert calls == cfgs and len(laws) == 3
    assert 0 < laws.max_error < 1e-9 and laws.max_error == max(laws.errors.values())
    bad = MK.LimitLaws(1e-9, law_fn=lambda c: ScaledMomentsLaw(marchenko_pastur(0.5), 1.001))
    with pytest.raises(ValueError, match="misses the exact moments"):
        bad(cfgs[0])
    assert len(bad) == 0 and MK.LimitLaws().max_error == 0.0


def test_softmax_spectra_use_the_named_stream():
    import jax

    from gelib.keys import tag
    from gelib.spectra import model_spectra

    cfg = AttentionConfig(n=32, d=32, h=2, d_k=16, d_o=48)
    key = jax.random.key(3)
    mha = MK.SoftmaxSpectra(key, seeds=2)
    ev = mha(cfg, "panel", 7)
    assert ev.shape == (2, 32)
    # the stream by hand: fold_in of each path element's tag
    direct = model_spectra(
        jax.random.fold_in(jax.random.fold_in(key, tag("panel")), 7), cfg, ("mha",), 2, progress=False
    )["mha"]
    np.testing.assert_array_equal(ev, direct)
    assert mha(cfg, "another", 1) is ev and len(mha) == 1  # simulated once per layer
    # mean eigenvalue of the softmax layer near its limit (e - 1) d_O / n, up to the finite-size shift
    assert ev.mean() == pytest.approx(cfg.first_moment, rel=0.3)
    other = mha(cfg.replace(d_o=24), "panel", 7)
    assert len(mha) == 2 and other.shape == (2, 32)
    # the companion at half the size, on its own stream
    same, half = mha.pair(cfg, "panel", 7)
    assert same is ev and half.shape == (2, 16) and half is mha(MK.halve(cfg), "panel", 7, "half")


UNTIED = AttentionConfig(n=256, d=256, h=4, d_k=64, d_o=512)
TIED = AttentionConfig(n=256, d=512, h=4, d_k=64, d_o=128, tie_kv=True)


def test_predicted_shift_is_the_first_moment_bias():
    from gelib.models import mha_shift_exact
    from gelib.spectra import mean_shift

    b = MK.predicted_shift(UNTIED)
    assert b == mha_shift_exact(256, 64)
    # its leading order is about 1.58 / d_K - 12.1 / n at beta = 1; what that neglects is of the
    # size of the square of the first order, (1.58 / d_K + 12.1 / n)^2
    assert mean_shift(256, 64) == pytest.approx(1.582 / 64 - 12.06 / 256, abs=2e-3)
    assert abs(b - mean_shift(256, 64)) < (1.582 / 64 + 12.06 / 256) ** 2
    assert MK.predicted_shift(TIED) is None


def test_shifted_law_is_the_law_of_the_rescaled_eigenvalue():
    laws = MK.LimitLaws(1e-9, law_fn=lambda c: marchenko_pastur(0.5))
    c = 1 + MK.predicted_shift(UNTIED)
    m = marchenko_pastur(0.5).moments(2)
    law = laws.shifted(UNTIED)
    np.testing.assert_allclose(law.moments(2), m * np.array([c, c * c]), rtol=1e-12)
    assert law.edges()[0][1] == pytest.approx(c * (1 + math.sqrt(0.5)) ** 2, rel=1e-9)
    assert laws.shifted(UNTIED) is law  # cached
    assert laws.shifted(TIED) is None


def test_halve_keeps_the_ratios():
    for cfg in (UNTIED, TIED, UNTIED.replace(h_kv=2, beta=1.5)):
        half = MK.halve(cfg)
        assert half.n == cfg.n // 2 and (half.h, half.h_kv, half.beta, half.tie_kv) == (
            cfg.h,
            cfg.h_kv,
            cfg.beta,
            cfg.tie_kv,
        )
        assert MK.law_parameters(half) == MK.law_parameters(cfg)
    odd = MK.halve(UNTIED.replace(d_o=819))  # an odd width is rounded
    assert odd.d_o == 410
    with pytest.raises(ValueError, match="odd"):
        MK.halve(UNTIED.replace(n=255))


def test_at_size_keeps_the_ratios_at_any_size():
    for cfg in (UNTIED, TIED):
        assert MK.at_size(cfg, cfg.n) == cfg and MK.at_size(cfg, cfg.n // 2) == MK.halve(cfg)
        for n in (cfg.n // 4, 2 * cfg.n, 4 * cfg.n):  # sizes whose factor divides every width
            big = MK.at_size(cfg, n)
            assert big.n == n and MK.law_parameters(big) == MK.law_parameters(cfg)
            assert big.d * cfg.n == cfg.d * n and big.h == cfg.h
    with pytest.raises(ValueError, match="at least one token"):
        MK.at_size(UNTIED, 0)


def shrinking_table(d_half: list[float], d_full: list[float], ci: float) -> MK.MarkerTable:
    """One marker per layer: a departure d_half[i] at n = 200 (tiny interval) and d_full[i] at n = 400
    (95 % half-width ci), against a shifted prediction of 1."""
    t = MK.MarkerTable(MK.LimitLaws())
    for i, (dh, d) in enumerate(zip(d_half, d_full)):
        half = MK.HalfSize(n=200, mean=1 + dh, ci=1e-4, reference=1.0, seeds=4)
        layers = (UNTIED.replace(beta=1 + i),)
        t.markers.append(MK.Marker("a", f"layer {i}", 400, 1.0, 1 + d, ci, 1.0, half, layers=layers, seeds=4))
    return t


#: Eight layers' departures at n/2: resolved from 0 by the test at the markers' level (7 degrees of freedom).
D_HALF = [0.10, 0.08, 0.12, 0.09, 0.11, 0.10, 0.085, 0.115]
#: A small spread of the departures at n around their rate, alternating in sign.
WIGGLE = [0.002, -0.002, 0.001, -0.001, 0.0015, -0.0015, 0.0005, -0.0005]


def test_the_shrink_rate_catches_an_error_that_does_not_shrink():
    """Departures of 8-12 % that stay from n/2 to n show as misses of 4-6 %, inside the markers' tolerances
    (4 seeds of 3 % each): every marker passes its own check, and only the pooled ratio (about 1, not 1/2)
    fails the table, by the two-sided test of 1/2 and the one-sided exclusion of 1 alike."""
    constant = shrinking_table(D_HALF, [d + w for d, w in zip(D_HALF, WIGGLE)], ci=0.03)
    assert not constant.bad()
    shrink = constant.shrink_rate()
    assert (shrink.layers, shrink.markers) == (8, 8) and shrink.half == pytest.approx(np.mean(D_HALF))
    assert shrink.ratio == pytest.approx(1.0, abs=0.01) and shrink.asserted and not shrink.consistent
    assert not shrink.test.passes and not shrink.exclusion(1.0).below
    assert "FAILS" in shrink.describe() and "1 not excluded" in shrink.describe()
    with pytest.raises(AssertionError, match="do not shrink"):
        constant.verify()
    # departures that halve: the ratio is 1/2, the table verifies
    d_full = [d / 2 + w for d, w in zip(D_HALF, WIGGLE)]
    halving = shrinking_table(D_HALF, d_full, ci=0.01)
    shrink = halving.shrink_rate()
    assert shrink.consistent and shrink.ratio == pytest.approx(sum(d_full) / sum(D_HALF))
    # the interval: the delta method on the layers' spread, with the Student-t quantile of 7 degrees of freedom
    pairs = np.array([D_HALF, d_full]).T
    x, y = pairs.mean(axis=0)
    cov = np.cov(pairs, rowvar=False) / 8
    r = y / x
    se = math.sqrt(cov[1, 1] - 2 * r * cov[0, 1] + r**2 * cov[0, 0]) / x
    assert shrink.ci95 == pytest.approx(scipy.stats.t.ppf(0.975, 7) * se) and shrink.se == pytest.approx(se)
    # the test of the rate: two-sided at the markers' level on those 7 degrees of freedom, its power stated
    t = shrink.test
    assert (t.predicted, t.seeds, t.level) == (0.5, 8, MK.MARKER_LEVEL)
    assert t.quantile == pytest.approx(scipy.stats.t.ppf(1 - MK.MARKER_LEVEL / 2, 7))
    assert t.catch == pytest.approx(catch_ncp(8) * se) and f"catches a ratio {t.catch:.2f} off" in shrink.describe()
    halving.verify()
    assert shrink.separates and "over 8 layers" in shrink.describe()
    assert shrink.describe().endswith(": asserted, 1 and 0.707 (n^-0.5) excluded")
    assert f"tested against 0.5 within {t.quantile:.1f} SE" in shrink.describe()
    # nothing to shrink (departures at n/2 not resolved from 0), or too few layers: no verdict
    flat = shrinking_table([0.01, -0.012, 0.003], [0.05, 0.05, 0.05], ci=0.03)
    assert not flat.shrink_rate().asserted and "not resolved" in flat.shrink_rate().describe()
    flat.verify()
    # resolved, but the ratio 0.5 ± 0.6: no power to tell 1/2 from 1
    wide = shrinking_table(D_HALF, [0.10, 0.0, 0.05, 0.09, 0.0, 0.06, 0.0, 0.12], ci=0.03)
    assert wide.shrink_rate().resolved and not wide.shrink_rate().asserted
    assert "too wide" in wide.shrink_rate().describe()
    wide.verify()
    few = shrinking_table([0.10, 0.10], [0.10, 0.10], ci=0.03)
    assert few.shrink_rate().layers == 2 and not few.shrink_rate().asserted
    few.verify()
    assert MK.MarkerTable(MK.LimitLaws()).shrink_rate().describe().startswith("not measured")
    # a departure at n/2 of 10 SE over 3 layers is resolved at 95 % but not at the level (31.6 SE at 2 df)
    three = shrinking_table([0.10, 0.08, 0.11], [0.05, 0.04, 0.055], ci=0.01).shrink_rate()
    assert 10 < abs(three.half_test.z) < three.half_test.quantile and not three.resolved


def test_the_shrink_rate_rejects_n_to_the_minus_half_where_it_asserts_one_over_n():
    """Departures that shrink by 2^-1/2 from n/2 to n (the n^-1/2 rate): with an interval that can tell
    0.5 from 0.707 the table fails; with one that can tell 0.5 from 1 only, the shrinking is asserted
    and the verdict says that n^-1/2 is not excluded."""
    r = 2**-0.5
    tight = shrinking_table(D_HALF, [d * r + w for d, w in zip(D_HALF, WIGGLE)], 0.01)
    shrink = tight.shrink_rate()
    assert shrink.ratio == pytest.approx(r, abs=0.01) and shrink.separates and not shrink.consistent
    assert not shrink.test.passes and not shrink.exclusion(r).below  # 0.5 rejected, 0.707 not excluded
    with pytest.raises(AssertionError, match="do not shrink"):
        tight.verify()
    # between the rules: the two-sided test of 0.5 passes (5.4 SE at 7 df), the exclusion of 0.707 does not
    q2, q1 = scipy.stats.t.ppf(1 - MK.MARKER_LEVEL / 2, 7), scipy.stats.t.ppf(1 - MK.MARKER_LEVEL, 7)
    se = 0.0205
    mid = MK.ShrinkRate(8, 8, 0.1, 0.01, 0.61, scipy.stats.t.ppf(0.975, 7) * se)
    assert abs(mid.ratio - 0.5) <= q2 * se and mid.ratio > r - q1 * se and mid.separates
    assert mid.test.passes and not mid.consistent and mid.describe().endswith("0.707 (n^-0.5) not excluded")
    # departures that halve, measured too loosely to tell 0.5 from 0.707 (ci95 between the two thresholds)
    loose = MK.ShrinkRate(8, 8, 0.1, 0.01, 0.55, 0.09)
    assert loose.threshold(r) < loose.ci95 < loose.threshold(1.0)
    assert loose.asserted and not loose.separates and loose.consistent
    assert "which is not excluded, not asserted" in loose.describe()


def test_the_shrink_rate_thresholds_are_its_exclusions_at_the_level():
    """The widest 95 % half-width at which an exclusion is asserted: where a ratio at 1/2 passes the exclusion
    of 1 (or of 2^-1/2) with probability 1 - level, by the noncentral t of the one-sided test; 2^-1/2 is told
    from 1/2 only by an interval under 0.10 at every layer count (the half-gap of the 95 % rule, 0.1036)."""
    r = 2**-0.5
    for layers in (3, 4, 6, 8, 16):
        s = MK.ShrinkRate(layers, layers, 0.1, 0.01, 0.5, 0.01)
        ncp = catch_ncp(layers, MK.MARKER_LEVEL, 1 - MK.MARKER_LEVEL, one_sided=True)
        t95 = scipy.stats.t.ppf(0.975, layers - 1)
        assert s.threshold(1.0) == pytest.approx(0.5 / ncp * t95)
        assert s.threshold(r) == pytest.approx((r - 0.5) / ncp * t95) and s.threshold(r) < (r - 0.5) / 2
        # at the threshold a ratio of 1/2 fails the exclusion of 1 with probability the level
        p_fail = 1 - rejection_probability(ncp, layers, MK.MARKER_LEVEL, one_sided=True)
        assert p_fail == pytest.approx(MK.MARKER_LEVEL, rel=1e-6)


def test_a_fifteen_percent_error_of_the_prediction_fails_the_markers():
    """Markers drawn around a prediction P at n and n/2 (8 seeds each, 1 % spread): checked against the
    right P they pass; against 1.15 P (a 15 % error of the prediction, the same at both sizes; the
    companion carries half of it) they fail, as their power (below 15 %) says."""
    rng = np.random.default_rng(3)
    for wrong, fails in ((1.0, False), (1.15, True)):
        t = MK.MarkerTable(MK.LimitLaws())
        for i in range(4):
            full, half_vals = 2.0 * (1 + 0.01 * rng.normal(size=8)), 3.0 * (1 + 0.01 * rng.normal(size=8))
            s = summarize(half_vals)
            half = MK.HalfSize(200, s.mean, s.ci95, 3.0 * wrong, s.count)
            t.add("a", f"m{i}", 400, 2.0, full, predicted=2.0 * wrong, half=half)
        assert all(t.power(m) < 0.15 for m in t.markers)
        assert bool(t.bad()) is fails
        # the tolerance in standard errors is the Student-t quantile at the table's level, not 2 x 95 %
        m = t.markers[0]
        assert t.quantile(m) == pytest.approx(scipy.stats.t.ppf(1 - MK.MARKER_LEVEL / 2, m.dof))
        assert t.quantile(m) < 2 * scipy.stats.t.ppf(0.975, 7)
    with pytest.raises(ValueError, match="level"):
        MK.MarkerTable(MK.LimitLaws(), level=2.0)


def test_shift_seeds_is_where_the_tolerance_first_falls_below_the_shift():
    """A mean eigenvalue shifted by 2 % from GE, 1 % spread per seed: at 3 seeds (df 2, 31.6 SE) its
    tolerance is far above the shift; shift_seeds is the first seed count at which a marker of that spread
    has a tolerance below it, checked on markers built at k - 1 and k seeds."""
    t = MK.MarkerTable(MK.LimitLaws())
    sd, ge, pred = 0.01 * 0.98, 1.0, 0.98

    def at(k):
        ci = scipy.stats.t.ppf(0.975, k - 1) * sd / math.sqrt(k)
        return MK.Marker("a", "x, m_1", 256, ge, pred, ci, predicted=pred, seeds=k)

    m3 = at(3)
    shift = (ge - pred) / pred
    assert t.quantile(m3) == pytest.approx(31.6, abs=0.05) and t.tolerance(m3) > 4 * shift
    k = t.shift_seeds(m3)
    assert t.tolerance(at(k)) < shift <= t.tolerance(at(k - 1)) and 5 < k < 20
    assert t.shift_seeds(m3, most=k - 1) is None
    t.markers.append(m3)
    g = t.summary()
    assert (g["shift-count"], g["shift-catch"], g["shift-seeds"]) == (1, 0, k)
    assert g["shift-b"] == pytest.approx(100 * shift) and g["shift-tol"] == pytest.approx(100 * t.tolerance(m3))
    # level 1e-3 at 3 seeds: 31.6 SE against 8.6 for twice the 95 % half-width; the level is tighter from df 12
    assert g["q-hi"] == pytest.approx(31.6, abs=0.05) and g["q-twice"] == pytest.approx(8.61, abs=0.01)
    assert g["q-cross"] == 12 and g["alarm"] == pytest.approx(0.1)


def test_the_shrink_rate_averages_within_a_layer_and_skips_untested_markers():
    t = shrinking_table([0.10, 0.08, 0.12], [0.05, 0.04, 0.06], ci=0.01)
    layer0 = t.markers[0].layers
    half = MK.HalfSize(n=200, mean=1.20, ci=1e-4, reference=1.0, seeds=4)  # a second marker of layer 0: +20 % -> +10 %
    t.markers.append(MK.Marker("a", "layer 0, again", 400, 1.0, 1.10, 0.01, 1.0, half, layers=layer0, seeds=4))
    # untested (its tolerance exceeds its effect): left out, however far off
    far = MK.HalfSize(n=200, mean=1.5, ci=1e-4, reference=1.0, seeds=4)
    t.markers.append(MK.Marker("a", "weak", 400, 1.0, 1.5, 0.5, 1.0, far, effect=0.01, layers=layer0, seeds=4))
    shrink = t.shrink_rate()
    assert (shrink.layers, shrink.markers) == (3, 4)
    assert shrink.half == pytest.approx((0.15 + 0.08 + 0.12) / 3) and shrink.ratio == pytest.approx(0.175 / 0.35)


def test_marker_table_rule_against_the_prediction():
    t = MK.MarkerTable(MK.LimitLaws(), level=0.01)
    v = np.array([1.0, 1.1, 0.9, 1.05, 0.95])
    s = t.add("a", "close", 400, 1.0, v, predicted=1.02)
    lo, hi = scipy.stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=scipy.stats.sem(v))
    assert s.mean == pytest.approx(v.mean()) and s.ci95 == pytest.approx((hi - lo) / 2)
    m0 = t.markers[0]
    assert m0.reference == 1.02 and m0.reference_ci == 0.0 and m0.seeds == 5 and m0.dof == 4
    assert m0.se == pytest.approx(scipy.stats.sem(v)) and t.quantile(m0) == pytest.approx(scipy.stats.t.ppf(0.995, 4))
    assert t.tolerance(m0) == pytest.approx(scipy.stats.t.ppf(0.995, 4) * scipy.stats.sem(v) / 1.02)
    # no companion: an error of the prediction shows in full, caught half the time at catch_ncp SE
    assert t.power(m0) == pytest.approx(catch_ncp(5, 0.01) * scipy.stats.sem(v) / 1.02)
    assert t.power(m0) < t.tolerance(m0)
    # 9 % off GE but on its prediction: passes; the same values against GE alone fail
    t.add("a", "shifted", 400, 1.0, [1.09, 1.091, 1.089], predicted=1.09)
    t.add("a", "unpredicted", 400, 1.0, [1.09, 1.091, 1.089])
    m1, m2 = t.markers[1:]
    assert m1.miss == pytest.approx(0.0, abs=1e-12) and m1.deviation == pytest.approx(0.09)
    assert m2.miss == pytest.approx(0.09) and t.bad() == [m2]
    # a companion at n / 2 that departs by +8 % from its own prediction: at n the reference moves by
    # +4 % (the departure is O(1 / n)), and the companion's interval widens the tolerance
    half = MK.HalfSize(n=200, mean=1.08 * 2.0, ci=0.02, reference=2.0, seeds=3)
    assert half.departure == pytest.approx(0.08) and half.se == pytest.approx(0.02 / scipy.stats.t.ppf(0.975, 2))
    t.add("a", "corrected", 400, 1.0, [1.04, 1.041, 1.039], half=half)
    m3 = t.markers[3]
    assert m3.reference == pytest.approx(1.04) and m3.reference_ci == pytest.approx(0.01 / 2)
    assert m3.miss == pytest.approx(0.0, abs=1e-12)
    se, se_ref = m3.se, half.se / 2 / 2  # the companion's relative se, carried by 1/2
    assert m3.reference_se == pytest.approx(se_ref) and m3.combined_se == pytest.approx(math.hypot(se, se_ref))
    welch = (se**2 + se_ref**2) ** 2 / (se**4 / 2 + se_ref**4 / 2)
    assert m3.dof == pytest.approx(welch) and 2 < m3.dof <= 4
    assert t.tolerance(m3) == pytest.approx(scipy.stats.t.ppf(0.995, welch) * math.hypot(se, se_ref) / 1.04)
    assert m3.carried == 0.5 and t.power(m3) == pytest.approx(2 * t.catch_se(m3) * m3.combined_se / 1.04)
    # the same companion under a rate of 1/2 carries 8 % / sqrt(2) instead
    r = MK.MarkerTable(MK.LimitLaws(), rate=0.5)
    r.add("a", "slow", 400, 1.0, [1.0], half=half)
    assert r.markers[0].reference == pytest.approx(1 + 0.08 / math.sqrt(2))
    assert t.worst == pytest.approx(0.09 / t.tolerance(m2)) and t.max_deviation == pytest.approx(0.09)
    assert t.predicted == 2 and t.corrected == 1 and t.max_miss == pytest.approx(0.09)
    summary = t.summary()
    assert (summary.pop("shrink-layers"), summary.pop("shrink-ratio")) == (1, pytest.approx(0.5))  # 4 % of 8 %
    assert math.isnan(summary.pop("shrink-ci"))  # one layer: no interval, no test
    for k in ("shrink-tol-se", "shrink-catch", "shrink-assert-ci", "shrink-separate-ci"):
        assert math.isnan(summary.pop(k)), k
    assert summary.pop("shrink") == "not asserted: 1 layer with a companion (at least 3 needed)"
    assert summary == {
        "markers": 4,
        "untested": 0,
        "predicted": 2,
        "corrected": 1,
        "worst": t.worst,
        "failures": 1,
        "worst-dev": 100 * t.max_deviation,
        "worst-miss": 100 * t.max_miss,
        "max-tol": 100 * max(t.tolerance(m) for m in t.markers),
        "max-power": 100 * max(t.power(m) for m in t.markers),
        "q-lo": min(t.quantile(m) for m in t.markers),
        "q-hi": max(t.quantile(m) for m in t.markers),
        "level": 1.0,
        "rate-shift": pytest.approx(0.08 * (2**-0.5 - 0.5) / 1.04 / t.tolerance(m3)),
        "shrink-separates": False,
        # the widest in SE is "shifted" (3 seeds, df 2); twice the 95 % half-width is 8.6 SE there
        "q-df": 2.0,
        "q-twice": pytest.approx(2 * scipy.stats.t.ppf(0.975, 2)),
        "q-cross": 3,  # at level 1 %: t_{0.995}(3) = 5.84 < 2 t_{0.975}(3) = 6.36; at df 2, 9.92 > 8.61
        "alarm": pytest.approx(4.0),  # 4 markers at 1 %
        # the mean-like markers without a companion: "close" (2 % shift, tolerance 16 %) and "shifted"
        "shift-count": 2,
        "shift-catch": 1,
        "shift-tol": pytest.approx(100 * t.tolerance(m1)),
        "shift-b": pytest.approx(9.0 / 1.09),
        "shift-seeds": t.shift_seeds(m1),
    }
    rows = table_cells(t.markdown())
    assert len(rows) == 4 and rows[2][:6] == ["a", "unpredicted", "400", "1", "—", "—"]
    assert rows[3][5] == "+8.00 % ± 1.00" and rows[3][6] == "+4.00 %" and rows[3][7] == "1.04"
    assert [r[-1] for r in rows] == ["passes", "passes", "FAILS", "passes"]
    assert rows[3][10] == f"{100 * t.tolerance(m3):.2f} % ({t.quantile(m3):.2f} SE, df {m3.dof:.2g})"
    assert rows[3][11] == f"{100 * t.power(m3):.2f} %"
    assert len(t) == 4
    # power: a marker must resolve its effect to be tested. The same values 9 % off, with a
    # tolerance of about 0.23 %: tested against a 5 % effect (it fails), not against a 0.1 % one
    tol = t.tolerance(m2)
    t.add("b", "powered", 400, 1.0, [1.09, 1.091, 1.089], effect=0.05)
    t.add("b", "unpowered", 400, 1.0, [1.09, 1.091, 1.089], effect=tol / 2)
    m4, m5 = t.markers[4:]
    assert t.tested(m4) and not t.tested(m5) and t.untested == [m5]
    assert t.bad() == [m2, m4] and t.summary()["untested"] == 1 and t.summary()["failures"] == 2
    assert t.max_tolerance == max(t.tolerance(m) for m in t.markers[:5])  # the untested one left out
    assert table_cells(t.markdown())[5][-1] == f"not tested at this scale (needs < {100 * tol / 2:.3g} %)"


def test_measure_mean_needs_no_companion_where_the_shift_is_exact():
    t = MK.MarkerTable(MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5)))
    b = MK.predicted_shift(UNTIED)
    ev = np.full((3, 8), 1.0) * (1 + b) + np.array([[-1e-3], [0.0], [1e-3]])  # mean eigenvalue m_1 (1 + b)
    half = np.full((3, 4), 1.1)  # tied: the companion departs by +10 %, so the reference is 1.05
    t.measure_mean("a", "untied", UNTIED, ev, half)
    t.measure_mean("a", "tied", TIED, np.full((3, 8), 1.05) + np.array([[-1e-3], [0.0], [1e-3]]), half)
    untied, tied = t.markers
    assert untied.label == "untied, m_1" and untied.half is None and untied.predicted == pytest.approx(1 + b)
    assert untied.mean == pytest.approx(1 + b)
    assert tied.predicted is None and tied.ge == pytest.approx(1.0) and tied.half.n == TIED.n // 2
    assert tied.reference == pytest.approx(1.05) and t.bad() == []


class FakeSpectra:
    """Eigenvalues of MP(1/2) from one fixed sample, scaled by ``1 + c n^-rate`` per seed (plus noise)."""

    def __init__(self, c, rate, noise, seeds=6):
        rng = np.random.default_rng(5)
        self.c, self.rate, self.noise, self.rng, self.seeds = c, rate, noise, rng, seeds

    def __call__(self, cfg, *path):
        x = self.rng.normal(size=(self.seeds, cfg.n, 2 * cfg.n))
        ev = np.linalg.eigvalsh(x @ np.swapaxes(x, 1, 2) / (2 * cfg.n))
        scale = 1 + self.c * cfg.n**-self.rate + self.noise * self.rng.normal(size=(self.seeds, 1))
        return ev / ev.mean(axis=1, keepdims=True) * scale  # the mean is exactly the scale


@pytest.mark.parametrize("rate, consistent", [(1.0, True), (0.5, False)])
def test_convergence_measures_the_rate_and_rejects_a_slower_one(rate, consistent):
    """The mean eigenvalue departs from MP(1/2)'s by ``3 n^-rate`` (noise 1e-4): the fitted slope finds
    ``-rate``, and is consistent with the predicted 1 only when it is 1."""
    laws = MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5))

    def make(n):
        return TIED.replace(n=n, d=2 * n, d_k=n // 4, d_v=n // 4, d_o=n // 2)  # tied: no shift predicted

    c = MK.convergence(
        FakeSpectra(3.0, rate, 1e-4), laws, lambda mu: L.expect(mu, lambda x: x, 0.0), make, (32, 64, 128), "m1"
    )
    assert c.ns == (32, 64, 128) and c.resolved and [x.n for x in c.layers] == [32, 64, 128]
    np.testing.assert_allclose([d.mean for d in c.departures], [3.0 * n**-rate for n in c.ns], rtol=1e-3)
    assert c.slope == pytest.approx(-rate, abs=0.01) and c.ci95 < 0.01
    assert c.consistent is consistent
    # departures lost in the noise are not resolved, and then nothing is concluded
    noisy = MK.convergence(
        FakeSpectra(3.0, 1.0, 0.2), laws, lambda mu: L.expect(mu, lambda x: x, 0.0), make, (32, 64, 128), "m1"
    )
    assert not noisy.resolved and not noisy.consistent


def _departures(seeds: int) -> tuple:
    """Departures 0.4, 0.2, 0.1 over ``seeds`` seeds with a 1 % spread: resolved from 0 at any level."""
    return tuple(summarize([v * (1 + 0.01 * (i - (seeds - 1) / 2)) for i in range(seeds)]) for v in (0.4, 0.2, 0.1))


def test_convergence_asserts_one_over_n_against_n_to_the_minus_half_only_where_it_can_tell():
    """On departures over 8 seeds (7 degrees of freedom): a fitted slope -0.55 +- 0.1 or -0.5 +- 0.1 (the
    n^-1/2 rate, measured tightly) fails, off -1 by the two-sided test and -1/2 not excluded; -1 +- 0.1
    passes and excludes -1/2; -0.7 +- 0.4 (too wide to tell) passes, and says what is not asserted."""
    dep = _departures(8)
    make = lambda slope, ci: MK.Convergence("x", (64, 128, 256), dep, slope, ci)  # noqa: E731
    q2, q1 = (scipy.stats.t.ppf(1 - MK.MARKER_LEVEL / k, 7) for k in (2, 1))
    for slope in (-0.55, -0.5):
        slow = make(slope, 0.1)
        assert slow.resolved and slow.separates and not slow.excludes_alternative and not slow.consistent
        assert not slow.test.passes and slow.describe().endswith("SE and -0.5 not excluded")
    fast = make(-1.0, 0.1)
    assert fast.separates and fast.consistent and fast.describe().endswith("0 excluded, -0.5 excluded (asserted)")
    t = fast.test
    assert (t.seeds, t.predicted, t.level, fast.dof) == (8, -1.0, MK.MARKER_LEVEL, 7)
    assert fast.se == pytest.approx(0.1 / scipy.stats.t.ppf(0.975, 7)) and t.quantile == pytest.approx(q2)
    assert t.catch == pytest.approx(catch_ncp(8) * fast.se) and f"catches a slope {t.catch:.2f} off" in fast.describe()
    assert fast.exclusion(-0.5).quantile == pytest.approx(q1)
    wide = make(-0.7, 0.4)
    assert not wide.separates and not wide.tells_shrinking and wide.consistent
    tail = "-0.5 not excluded, not asserted: ± 0.40 is wider than the ± 0.12 that tells -1 from -0.5"
    assert wide.describe().endswith(tail) and "0 not excluded, not asserted: ± 0.40 is wider than the ± 0.24" in (
        wide.describe()
    )
    # far from -1, measured tightly: fails, naming the test and its tolerance in SE
    assert (
        make(-0.3, 0.1).describe()
        == "slope -0.30 ± 0.10: FAILS, -1 16.6 SE off, beyond its 5.4 SE and -0.5 not excluded"
    )
    # -1 passes (5.33 SE at a tolerance of 5.41), the interval narrow enough to assert shrinking, which fails
    edge = make(-0.47, 0.235)
    assert edge.test.passes and edge.tells_shrinking and not edge.shrinks and not edge.consistent
    assert edge.describe() == "slope -0.47 ± 0.23: FAILS, 0 not excluded"
    assert make(-0.8, 0.1).describe().startswith("slope -0.80 ± 0.10: -1 within 5.4 SE (z = +4.7;")
    # resolved: every departure fails its test of 0 at the level (8 seeds: 5.4 SE)
    noisy = (dep[0], summarize([0.1, -0.1, 0.0, 0.05, -0.05, 0.1, 0.0, 0.02]))
    assert "not resolved" in MK.Convergence("x", (64, 128), noisy, -1, 0.1).describe()
    alternate = np.array([-1, 1, -1, 1, -1, 1, -1, 1.0]) * 0.1 * math.sqrt(7)  # over 8 seeds: 0.1 / z SE
    at = {z: summarize(0.1 + alternate / z) for z in (6.0, 5.0)}
    assert [abs(MeanTest.of(d, 0.0).z) for d in at.values()] == [pytest.approx(6.0), pytest.approx(5.0)]
    assert MK.Convergence("x", (64, 128), (dep[0], at[6.0]), -1, 0.1).resolved  # 6 SE > 5.41
    # 5 SE from 0: twice its 95 % half-width (4.73 SE) but within the level's 5.41 SE: not resolved
    c = MK.Convergence("x", (64, 128), (dep[0], at[5.0]), -1, 0.1)
    assert abs(at[5.0].mean) >= 2 * at[5.0].ci95 and not c.resolved and not c.consistent
    g = MK.convergence_glue({"c": [fast, MK.Convergence("loss at t", fast.ns, dep, -0.7, 0.4)]}, n=128)
    assert (g["c-resolved"], g["c-separated"]) == (2, 1) and g["c-x-slope"] == -1.0 and g["c-loss-ci"] == 0.4
    assert g["c-x-at-n"] == pytest.approx(100 * dep[1].mean) and g["c-loss-verdict"] == wide.describe()
    assert (g["c-seeds"], g["c-n0"], g["c-n2"], g["c-h"], g["c-dof"]) == (8, 64, 256, 0, 7)
    assert g["c-tol-se"] == pytest.approx(q2) and g["c-res-se"] == pytest.approx(q2) and g["c-level"] == 0.1
    assert g["c-sep-ci"] == pytest.approx(fast.threshold(-0.5)) and g["c-x-catch"] == pytest.approx(t.catch)
    assert g["c-shrink-ci"] == pytest.approx(2 * g["c-sep-ci"])
    data = MK.convergence_data([fast])
    assert data["series"][0]["x"] == [64.0, 128.0, 256.0] and data["series"][0]["y"] == [d.mean for d in dep]


def test_convergence_verdict_names_the_condition_that_failed():
    """The edge arrival of the ci build, -1.22 +- 0.28 over 16 seeds: the test of -1 passes, 0 is excluded
    (asserted), and -1/2 is excluded too by the one-sided test, but the interval is wider than the one at
    which that exclusion would pass a slope of -1 with probability 1 - level: reported, not asserted."""
    edge = MK.Convergence("arrival", (128, 256, 512), _departures(16), -1.22, 0.28)
    assert edge.excludes_alternative and not edge.separates and edge.tells_shrinking and edge.consistent
    t = edge.test
    assert edge.describe() == (
        f"slope -1.22 ± 0.28: -1 within {t.quantile:.1f} SE (z = {t.z:+.1f}; catches a slope {t.catch:.2f} off), "
        "0 excluded (asserted); -0.5 excluded too, not asserted: ± 0.28 is wider than the ± "
        f"{edge.threshold(-0.5):.2f} that tells -1 from -0.5"
    )
    assert "too wide to exclude" not in edge.describe()


def test_shifted_values_move_the_functional_by_the_layers_own_shift():
    """On MP(1/2) the mean is 1: shifted by b it is 1 + b, exactly; a tied layer has no shift (nan)."""
    laws = MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5))
    mean = lambda mu, cfg: L.expect(mu, lambda x: x, 0.0)  # noqa: E731
    v = MK.shifted_values(laws, mean, [UNTIED, TIED])
    b = MK.predicted_shift(UNTIED)
    np.testing.assert_allclose(v.ge, [1.0, 1.0], rtol=1e-9)
    assert v.shifted[0] == pytest.approx(1 + b) and v.b[0] == b and v.change[0] == pytest.approx(b)
    assert math.isnan(v.shifted[1]) and math.isnan(v.b[1])
    assert v.h == [UNTIED.h, TIED.h]
    g = MK.shift_glue({"a": v}, bar=0.005, ladder=(512,))
    assert g["b"] == pytest.approx(100 * b) and g["lo"] == pytest.approx(100 * b) == pytest.approx(g["hi"])
    assert g["bars"] == pytest.approx(abs(b) / 0.005) and g["noise"] == pytest.approx(100 * (1 / (1 + b) - 1))
    assert g["ladder-512"] == pytest.approx(100 * mha_shift_exact(512, UNTIED.d_k))
    pts = [L.PathPoint(c, 0) for c in (UNTIED, UNTIED.replace(h=8), TIED)]
    along = MK.path_shifts(laws, mean, {"p": pts}, step=2)["p"]
    assert along.h == [UNTIED.h, TIED.h] and along.shifted[0] == pytest.approx(1 + b)
    named = MK.named_shifts(laws, {"m": (mean, UNTIED)})
    assert named["m-shifted"] == pytest.approx(1 + b) and named["m-change"] == pytest.approx(100 * b)
    assert named["m-b"] == 100 * b and named["m-ge"] == pytest.approx(1.0) and g["bar"] == 0.5
    rows = [(r["kind"], r["y"]) for r in to_rows(MK.shift_data({"a": v}))]
    assert rows[0] == ("ge", v.ge[0]) and rows[2] == ("shifted", v.shifted[0])


def test_spread_excess_is_scale_free():
    law = marchenko_pastur(0.5)  # m_2 / m_1^2 = 1.5
    x = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
    s = MK.spread_excess(law, x)
    per_seed = np.array([(14 / 3) / 4 / 1.5 - 1, 1 / 1.5 - 1])
    assert s.mean == pytest.approx(per_seed.mean())
    assert MK.spread_excess(law, 7.0 * x).mean == pytest.approx(s.mean)


def test_marker_table_predicts_the_mean_eigenvalue_exactly():
    """For the mean eigenvalue the prediction is m_1 (1 + b), and for a ratio of two layers the ratio
    of their shifts."""
    laws = MK.LimitLaws()
    t = MK.MarkerTable(laws)
    b = MK.predicted_shift(UNTIED)
    m1 = UNTIED.first_moment
    ge, pred = t.predict(lambda mu: mu.moments(1)[0], UNTIED)
    assert ge == pytest.approx(m1, rel=1e-12) and pred == pytest.approx(m1 * (1 + b), rel=1e-12)
    other = UNTIED.replace(d_k=128)
    b2 = MK.predicted_shift(other)
    assert b2 != pytest.approx(b)  # the two layers' shifts differ, so the ratio moves
    ge, pred = t.predict(lambda a, c: a.moments(1)[0] / c.moments(1)[0], UNTIED, other)
    assert ge == pytest.approx(1.0, rel=1e-12) and pred == pytest.approx((1 + b) / (1 + b2), rel=1e-12)
    ge, pred = t.predict(lambda mu: mu.moments(1)[0], TIED)  # no prediction for tied layers
    assert pred is None and ge == pytest.approx(TIED.first_moment, rel=1e-12)


def test_marker_table_measure():
    t = MK.MarkerTable(MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5)))
    law = marchenko_pastur(0.5)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 100, 200))
    ev = np.linalg.eigvalsh(x @ np.swapaxes(x, 1, 2) / 200)  # (seeds, n), MP(0.5)
    s = t.measure("a", "arrival", lambda mu: L.arrival_time(mu, 0.1), TIED, ev)  # no shift: against the law
    m = t.markers[0]
    assert m.n == 256 and m.ge == L.arrival_time(law, 0.1) and m.predicted is None
    assert s.mean == pytest.approx(np.mean([L.arrival_time(e, 0.1) for e in ev]))
    assert not t.bad()  # sampled MP falls on its law
    t.measure("a", "arrival", lambda mu: L.arrival_time(mu, 0.1), UNTIED, ev)
    b = MK.predicted_shift(UNTIED)
    assert t.markers[1].predicted == pytest.approx(m.ge / (1 + b), rel=1e-8)  # time scales like 1 / eigenvalue


def test_marker_table_curve_and_summary():
    t = MK.MarkerTable(MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5)))
    law = marchenko_pastur(0.5)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 64, 128))
    ev = np.linalg.eigvalsh(x @ np.swapaxes(x, 1, 2) / 128)
    times = np.array([0.1, 0.5, 2.0])
    pairs = t.measure_curve("a", "mp", times, lambda mu: L.training_loss(mu, times), UNTIED, ev)
    assert [p[0] for p in pairs] == list(times)
    assert [m.label for m in t.markers] == ["mp, t=0.1", "mp, t=0.5", "mp, t=2"]
    b = MK.predicted_shift(UNTIED)
    for j, (_, s) in enumerate(pairs):
        assert t.markers[j].ge == pytest.approx(L.training_loss(law, times[j])[0], rel=1e-12)
        # the loss of the rescaled law at t is the law's at (1 + b) t
        assert t.markers[j].predicted == pytest.approx(L.training_loss(law, (1 + b) * times[j])[0], rel=1e-9)
        assert s.mean == pytest.approx(np.mean([L.training_loss(e, times[j])[0] for e in ev]), rel=1e-12)
    # with a companion, each point of the curve gets its own, against the halved layer's prediction
    half = ev[:, ::2]
    t.measure_curve("b", "mp", times, lambda mu: L.training_loss(mu, times), UNTIED, ev, half)
    b_half = MK.predicted_shift(MK.halve(UNTIED))
    for j, m in enumerate(t.markers[3:]):
        assert m.half.n == 128 and m.half.mean == pytest.approx(
            np.mean([L.training_loss(e, times[j])[0] for e in half])
        )
        assert m.half.reference == pytest.approx(L.training_loss(law, (1 + b_half) * times[j])[0], rel=1e-9)
    assert t.summary()["markers"] == 6 and t.summary()["corrected"] == 3


@pytest.mark.parametrize("with_half", [False, True])
def test_the_marker_power_is_caught_with_probability_one_half(with_half):
    """The power column is the 1/2 point of the marker's two-sided test, as every other check's
    (:attr:`MeanTest.power`): exactly, by the noncentral t at the marker's degrees of freedom, and by
    Monte Carlo of the table's own rule. The tolerance itself, q standard errors, is caught more often
    (about 0.6 at 3 seeds), so it is no 1/2 point."""
    t = MK.MarkerTable(MK.LimitLaws())
    vals = [1.0, 1.02, 0.98]
    half = MK.HalfSize(n=200, mean=2.0, ci=0.02, reference=2.0, seeds=3) if with_half else None
    t.add("a", "m", 400, 1.0, vals, predicted=1.0, half=half)
    m = t.markers[0]
    ncp = t.power(m) * (1 - m.carried) * abs(m.reference) / m.combined_se  # the error in standard errors
    assert rejection_probability(ncp, m.dof + 1, MK.MARKER_LEVEL) == pytest.approx(0.5, abs=1e-6)
    q = t.quantile(m)
    assert rejection_probability(q, m.dof + 1, MK.MARKER_LEVEL) > 0.55  # the tolerance is no 1/2 point
    # Monte Carlo: a mean off by ncp true standard errors, Student-t statistic with the marker's dof
    rng = np.random.default_rng(11)
    z = (ncp + rng.normal(size=40_000)) / np.sqrt(rng.chisquare(m.dof, size=40_000) / m.dof)
    assert np.mean(np.abs(z) > q) == pytest.approx(0.5, abs=0.01)


def test_beside_rows_and_departures_state_the_distance_in_half_widths():
    """A prediction of 39 beside rows 42 ± 3 and 42 ± 2: 1 and 1.5 half-widths below; a departure of +8 % at
    n = 256 carried to 4096 at 1/n adds 0.5 %. The departures of a table, at n and at n / 2, by panel."""
    rows = [{"name": "r1", "value": 42.0, "half_width": 3.0}, {"name": "r2", "value": 42.0, "half_width": 2.0}]
    g = MK.beside_rows(39.0, rows, 0.08, 256, 4096)
    assert g["r1-off"] == pytest.approx(-1.0) and g["r2-off"] == pytest.approx(-1.5)
    assert g["rem"] == pytest.approx(39.0 * 1.005) and g["rem-dep"] == pytest.approx(0.5)
    assert g["r2-off-rem"] == pytest.approx((39.0 * 1.005 - 42.0) / 2.0)
    t = MK.MarkerTable(MK.LimitLaws())
    half = MK.HalfSize(n=200, mean=1.2, ci=0.02, reference=1.0, seeds=3)
    t.add("a", "x, w=1", 400, 1.0, [1.1, 1.11, 1.09], predicted=1.0, half=half)
    t.add("a", "x, w=2", 400, 1.0, [0.95, 0.96, 0.94], predicted=1.0)
    t.add("b", "x, w=3", 400, 1.0, [2.0, 2.01, 1.99], predicted=1.0)
    d = t.departures("a", "w=")
    assert d["dep-n-lo"] == pytest.approx(-5.0) and d["dep-n-hi"] == pytest.approx(10.0)
    assert d["dep-half-lo"] == d["dep-half-hi"] == pytest.approx(20.0)
    assert t.marker("a", "x, w=2").mean == pytest.approx(0.95)


def test_shift_glue_states_where_the_move_passes_one_bar():
    """A curve whose move is 0.1, 0.3, 2, 3 bars: over one bar from its third head count on, under at its
    second, 0.1 bar at least; a curve that ends under a bar has no such head count (0)."""
    cfgs = [UNTIED.replace(h=h, h_kv=h) for h in (1, 2, 4, 8)]
    up = MK.ShiftedValues(np.ones(4), 1 + 0.01 * np.array([0.1, 0.3, 2.0, 3.0]), np.zeros(4), tuple(cfgs))
    down = MK.ShiftedValues(np.ones(4), 1 + 0.01 * np.array([2.0, 3.0, 0.5, 0.2]), np.zeros(4), tuple(cfgs))
    g = MK.shift_glue({"up": up, "down": down}, bar=0.01, ladder=())
    assert (g["over-h-0"], g["under-h-0"]) == (4, 2) and g["min-bars-0"] == pytest.approx(0.1)
    assert (g["over-h-1"], g["under-h-1"]) == (0, 8)
