"""The limit law at the extremes the configuration accepts: it returns a correct
number or raises LawError, never NaN, an empty support or a truncated one.

Independent truths: the closed forms of m_1 = expm1(beta^2) d_O / n and of m_2
(two orders of the compression rule, below), the Marchenko-Pastur closed form
that mu_V becomes once e^{beta^2} swamps beta^2 K K^T / d_K, the rank of Y
(the mass h d_V / n of the continuous part when h d_V < n), and a total mass 1.
"""

import math

import numpy as np
import pytest
import scipy.integrate

from gelib import AttentionConfig
from gelib.attention_law import output_covariance_law, output_law, value_law
from gelib.freeprob import ConvergenceError, Law, LawError, compress, marchenko_pastur, scale
from gelib.freeprob.support import support_components

SMALL = dict(n=64, d=64, h=4, d_k=16)
TOP = AttentionConfig(**SMALL).beta_max  # the largest beta the configuration accepts here


def m2_closed_form(cfg: AttentionConfig) -> tuple[float, float]:
    """(log m_1, log m_2) of the untied output law, from m_2(compress(A, lam)) =
    lam m_2(A) + lam^2 m_1(A)^2 at each step (E = e^{beta^2} - 1 the mean of T,
    Var(T) = beta^4 n / d_K), in logs so that nothing overflows."""
    b2 = cfg.beta**2
    log_e = b2 + math.log(-math.expm1(-b2))  # log(e^{b2} - 1)
    lam1, lam2, lam3 = cfg.n / cfg.d_v, cfg.h * cfg.d_v / cfg.d_o, cfg.d_o / cfg.n
    t = 1 + b2**2 * cfg.n / cfg.d_k * math.exp(-2 * log_e)  # m_2(T) / E^2
    v = t / lam1 + 1  # mu_V
    vo = v / lam2 + 1  # mu_VO
    return math.log(lam3) + log_e, math.log(lam3 * vo + lam3**2) + 2 * log_e


def mp_density(x, c):
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    return np.sqrt(np.clip((b - x) * (x - a), 0, None)) / (2 * np.pi * c * x)


# --- moments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        dict(SMALL, beta=1.0),
        dict(SMALL, beta=18.0),
        dict(n=512, d=768, h=12, d_k=64, beta=3.0),
        dict(n=5, d=7, h=2, d_k=1, beta=10.0),  # the smallest d_K
    ],
)
def test_first_two_moments_match_their_closed_forms(fields):
    cfg = AttentionConfig(**fields)
    m = output_law(cfg).moments(2)
    log_m1, log_m2 = m2_closed_form(cfg)
    assert np.all(np.isfinite(m))
    # the moment algebra is exact: only rounding, a few ulps per step
    assert m[0] == pytest.approx(cfg.first_moment, rel=1e-14)
    assert m[0] == pytest.approx(math.exp(log_m1), rel=1e-13)
    assert m[1] == pytest.approx(math.exp(log_m2), rel=1e-13)


@pytest.mark.parametrize(
    "fields",
    [
        dict(SMALL),
        dict(n=5, d=7, h=2, d_k=1),  # the smallest d_K
        dict(n=3_000_000, d=3_000_000, h=1, d_k=1),  # an extreme ratio n / d_K
        dict(n=60, d=60, h=3, d_k=20, d_o=42, tie_kv=True),
    ],
)
def test_at_the_largest_beta_m1_is_exact_and_overflow_is_refused(fields):
    cfg = AttentionConfig(**fields)
    cfg = cfg.replace(beta=cfg.beta_max)
    law = output_law(cfg)
    assert law.moments(1)[0] == pytest.approx(cfg.first_moment, rel=1e-13)
    assert math.isfinite(cfg.first_moment)
    # m_2 ~ e^{2 beta^2} is beyond float64: refused with its size, never NaN or inf
    with pytest.raises(LawError, match=r"m_2 overflows float64: m_2 is about .*e\+\d{3}"):
        law.moments(3)
    e, t = law.scaled_moments(3)
    assert np.all(np.isfinite(t)) and np.all(np.abs(t) <= 1) and np.all(t > 0)
    if not cfg.tie_kv:
        _, log_m2 = m2_closed_form(cfg)
        assert math.log(t[1]) + 2 * e * math.log(2) == pytest.approx(log_m2, rel=1e-13)


def test_scaled_moments_agree_with_moments_at_normal_parameters():
    cfg = AttentionConfig(n=240, d=240, h=3, d_k=48, d_v=80, d_o=168)
    for law in (value_law(cfg), output_covariance_law(cfg), output_law(cfg)):
        e, t = law.scaled_moments(30)
        np.testing.assert_allclose(np.ldexp(t, e * np.arange(1, 31)), law.moments(30), rtol=1e-13)


def test_moments_of_a_tiny_law_refuse_to_underflow():
    law = marchenko_pastur(0.5, scale=1e-200)  # m_2 = 1.5e-400
    assert law.moments(1)[0] == pytest.approx(1e-200)
    with pytest.raises(LawError, match="m_2 underflows float64"):
        law.moments(3)


def test_high_moments_are_finite_or_refused():
    law = scale(marchenko_pastur(0.5), 1e100)  # m_4 ~ 1e400
    np.testing.assert_allclose(law.moments(3), marchenko_pastur(0.5).moments(3) * 10.0 ** (100 * np.arange(1, 4)))
    with pytest.raises(LawError, match="m_4 overflows"):
        law.moments(6)


# --- density, edges, mass -----------------------------------------------------------------


@pytest.mark.parametrize("beta", [8.0, 20.0, TOP])
def test_value_law_at_large_beta_is_marchenko_pastur(beta):
    """At large beta, T = beta^2 W + alpha^2 I is e^{beta^2} - 1 = E times I to a
    relative beta^2 (1 + sqrt(n/d_K))^2 / E (< 1e-12 here), so mu_V is E times
    Marchenko-Pastur with ratio d_V / n, to that accuracy: edges, density, mass."""
    cfg = AttentionConfig(**SMALL, beta=beta)
    law = value_law(cfg)
    big, c = math.expm1(beta**2), cfg.d_v / cfg.n
    ((lo, hi),) = law.edges()
    assert lo / big == pytest.approx((1 - math.sqrt(c)) ** 2, rel=1e-12)
    assert hi / big == pytest.approx((1 + math.sqrt(c)) ** 2, rel=1e-12)
    x = law.grid(30)
    assert x.size >= 30 and np.all(np.isfinite(x))
    np.testing.assert_allclose(law.density(x) * big, mp_density(x / big, c), rtol=1e-10)
    assert law.check_support() == pytest.approx(1.0, abs=1e-9)
    below_mean, _ = scipy.integrate.quad(mp_density, (1 - math.sqrt(c)) ** 2, 1.0, args=(c,), epsabs=1e-13)
    assert law.cdf(big) == pytest.approx(below_mean, abs=1e-9)
    assert law.cdf(hi) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("beta", [15.0, 18.0, TOP])
def test_output_law_at_large_beta_has_all_its_mass_and_its_mean(beta):
    cfg = AttentionConfig(**SMALL, beta=beta)
    law = output_law(cfg)
    edges = law.edges()
    assert edges and all(np.isfinite(v) for e in edges for v in e)
    assert law.check_support() + sum(m for _, m in law.atoms()) == pytest.approx(1.0, abs=1e-9)
    x = law.grid(20)
    assert x.size >= 20 and np.all(law.density(x) > 0)
    # int x dmu by the law's own panels against the exact moment algebra
    assert law.integrate(lambda x: x) == pytest.approx(cfg.first_moment, rel=1e-9)


def test_an_overflowing_edge_is_refused():
    big = np.finfo(float).max / 4
    law = compress(marchenko_pastur(0.25, scale=big), 1.0)  # mean big, upper edge above 4 big
    assert law.moments(1)[0] == pytest.approx(big)
    with pytest.raises(LawError, match="overflows float64"):
        law.edges()
    with pytest.raises(LawError, match="overflows float64"):
        law.grid(10)


@pytest.mark.parametrize("n", [1000, 3000])
def test_smallest_d_k_keeps_the_continuous_mass_of_the_rank(n):
    """d_K = d_V = h = 1: Y has rank 1, so the output law and mu_VO put mass 1 - 1/n
    at 0 and 1/n on their continuous part, all of it found (no truncated support)."""
    cfg = AttentionConfig(n=n, d=n, h=1, d_k=1)
    for law in (output_covariance_law(cfg), output_law(cfg)):
        assert law.atoms()[0][1] == pytest.approx(1 - 1 / n, rel=1e-12)
        assert law.check_support() == pytest.approx(1 / n, rel=1e-6)
        assert law.integrate(lambda x: x) == pytest.approx(law.moments(1)[0], rel=1e-8)


def test_an_extreme_ratio_is_refused_not_truncated():
    """n = 3e6, d_K = 1: the solver's float64 accuracy is exhausted next to an edge;
    the law says so instead of returning a support that carries 0.31 of the mass."""
    cfg = AttentionConfig(n=3_000_000, d=3_000_000, h=1, d_k=1)
    law = output_law(cfg)
    assert law.moments(1)[0] == pytest.approx(cfg.first_moment, rel=1e-13)
    with pytest.raises(LawError):
        law.check_support()


def test_a_truncated_support_is_refused():
    good = output_law(AttentionConfig(n=60, d=60, h=3, d_k=20, d_o=42))
    law = Law(good.base, good.steps)  # a private copy, not the shared object
    ((lo, hi),) = good.edges()
    law.__dict__["_support"] = [(lo, (lo + hi) / 2)]  # as a failed scan would leave it
    with pytest.raises(LawError, match="truncated"):
        law.check_support()
    with pytest.raises(LawError):
        law.cdf(hi)


def test_an_empty_support_is_refused():
    law = compress(marchenko_pastur(0.5), 2.0)
    st = law.steps
    no_density = lambda x: np.zeros(np.shape(x), complex)  # noqa: E731
    with pytest.raises(LawError, match="no support found"):
        support_components(law.base, st, law.radius, law.sigma, no_density, 0.5)
    with pytest.raises(LawError, match="no support found"):  # no candidate edge at all
        support_components(law.base, st, 1e-300, law.sigma, law.stieltjes, 0.5)


def test_a_failed_solve_is_a_law_error_and_still_a_runtime_error():
    assert issubclass(ConvergenceError, LawError) and issubclass(ConvergenceError, RuntimeError)
    assert issubclass(LawError, ValueError)
