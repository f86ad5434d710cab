"""The limit law (gelib.attention_law, gelib.freeprob) against independent references:
closed forms, known moment formulas, quadrature of the density, and
simulation of the Gaussian-equivalent model."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats

import gelib.freeprob.solver as solver
from bookrun.cli import main
from gelib import AttentionConfig, preset_config
from gelib.attention_law import chain, output_covariance_law, output_law, value_law
from gelib.freeprob import (
    ConvergenceError,
    affine,
    compress,
    dirac,
    ks_to_law,
    marchenko_pastur,
    polynomial,
    scale,
    w1_to_law,
)

BERT = preset_config("bert-base")
TIED = AttentionConfig(n=60, d=60, h=3, d_k=20, d_o=42, beta=0.8, tie_kv=True)


def narayana_moments(c, k):
    """Moments of MP with ratio c (mean 1): sum_j N(k, j) c^(j-1)."""
    return np.array(
        [
            sum(math.comb(m, j) * math.comb(m, j - 1) / m * c ** (j - 1) for j in range(1, m + 1))
            for m in range(1, k + 1)
        ]
    )


def mp_density(x, c):
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    return np.sqrt(np.clip((b - x) * (x - a), 0, None)) / (2 * np.pi * c * x)


def quad_density(law, f, nodes=300):
    """int f(x) rho(x) dx over the continuous part, independently of the law's own
    panels: each half of a component mapped by x = edge +- half * s^6, which makes
    rho dx smooth in s for square-root, x^-1/2 and x^-2/3 edges; Gauss-Legendre in s."""
    s, w = np.polynomial.legendre.leggauss(nodes)
    s, w = (s + 1) / 2, w / 2
    total = 0.0
    for lo, hi in law.edges():
        half = (hi - lo) / 2
        for x in (lo + half * s**6, hi - half * s**6):
            total = total + np.sum(w * 6 * half * s**5 * law.density(x) * f(x), axis=-1)
    return total


def ge_spectrum(rng, cfg):
    """Eigenvalues of Y^G Y^G^T / n, Y^G = sum_r (beta S_r + alpha Z_r)/sqrt(n) V_g W^O_r
    (the Gaussian-equivalent model: S_r = Q_r K_g^T / sqrt(d_K) the scores, Z_r an
    independent n x n standard normal matrix, alpha^2 = e^{beta^2} - 1 - beta^2),
    sampled directly in numpy."""
    n, h, g = cfg.n, cfg.h, np.arange(cfg.h) // cfg.group_size
    k = rng.standard_normal((cfg.h_kv, n, cfg.d_k))
    v = k if cfg.tie_kv else rng.standard_normal((cfg.h_kv, n, cfg.d_v))
    q = rng.standard_normal((h, n, cfg.d_k))
    z = rng.standard_normal((h, n, n))
    w_o = rng.standard_normal((h, cfg.d_v, cfg.d_o)) / math.sqrt(h * cfg.d_v)
    scores = q @ k[g].transpose(0, 2, 1) / math.sqrt(cfg.d_k)
    mix = (cfg.beta * scores + math.sqrt(cfg.alpha2) * z) / math.sqrt(n)
    y = sum(mix[r] @ v[g[r]] @ w_o[r] for r in range(h))
    return np.linalg.eigvalsh(y @ y.T / n)


# --- closed forms -----------------------------------------------------------------


@pytest.mark.parametrize("c", [0.3, 1.0, 2.5])
def test_marchenko_pastur_closed_form_and_solver(c):
    s = 1.7
    closed = marchenko_pastur(c, s)
    solved = scale(compress(dirac(1.0), 1 / c), c * s)  # the same law, by Newton
    a, b = s * (1 - math.sqrt(c)) ** 2, s * (1 + math.sqrt(c)) ** 2
    x = np.linspace(a, b, 203)[1:-1]
    want = mp_density(x / s, c) / s
    for law in (closed, solved):
        np.testing.assert_allclose(law.moments(6), narayana_moments(c, 6) * s ** np.arange(1, 7), rtol=1e-13)
        np.testing.assert_allclose(law.density(x), want, rtol=1e-9, atol=1e-12 * want.max())
        assert law.edges() == [pytest.approx((a, b), rel=1e-12, abs=1e-14)]
        assert law.atoms() == ([(0.0, pytest.approx(1 - 1 / c, abs=1e-15))] if c > 1 else [])
        assert law.density(np.array([a - 0.1, b + 0.1])).tolist() == [0.0, 0.0]


def test_free_poisson_product_moments_and_cubic():
    """MP(a) free-multiplied by MP(b) is the compression of MP(a) with lam = b (in
    the m x m frame: psi rescaled by b, an atom 1 - b at 0). Moments by Lagrange
    inversion of chi(u) = u / ((1+u)(1+au)(1+bu)); density from that cubic."""
    a, b = 0.5, 0.25
    law = compress(marchenko_pastur(a), b)
    want = [
        sum(
            math.comb(k, i) * math.comb(k, j) * math.comb(k, k - 1 - i - j) * a**j * b ** (k - 1 - i - j)
            for i in range(k)
            for j in range(k - i)
        )
        / k
        for k in range(1, 8)
    ]
    np.testing.assert_allclose(law.moments(7) / b, want, rtol=1e-13)
    assert law.atoms() == [(0.0, pytest.approx(1 - b))]
    x = np.linspace(*law.edges()[0], 302)[1:-1]
    dens = []
    for xi in x:  # x u = (1+u)(1+au)(1+bu), u = psi(1/x) = -x g - 1; pick Im g > 0
        u = np.roots([a * b, a + b + a * b, 1 + a + b - xi, 1.0])
        dens.append(max((-(1 + r) / xi).imag for r in u) / np.pi)
    np.testing.assert_allclose(law.density(x) / b, dens, rtol=1e-8, atol=1e-12)


def test_s_transform_is_multiplicative():
    c, a, b = 0.4, 0.5, 0.25
    u = np.array([-0.6, -0.3, -0.05])
    np.testing.assert_allclose(marchenko_pastur(c).s_transform(u).real, 1 / (1 + c * u), rtol=1e-10)
    # compression: S_B(u) = S_A(u / lam) / (lam + u), S_MP(a) = 1 / (1 + a u)
    np.testing.assert_allclose(
        compress(marchenko_pastur(a), b).s_transform(u * b).real, 1 / ((1 + a * u) * (b + b * u)), rtol=1e-9
    )
    assert marchenko_pastur(c).s_transform(0.0) == pytest.approx(1.0)


def test_affine_and_polynomial_push_forward():
    c = 0.5
    x = np.linspace(0.3, 2.4, 7)
    shifted = affine(marchenko_pastur(c), 2.0, 0.5)
    np.testing.assert_allclose(shifted.density(2 * x + 0.5), mp_density(x, c) / 2, rtol=1e-10)
    sq = polynomial(marchenko_pastur(c), [0.0, 1.0, 3.0])  # X + 3 X^2, increasing
    m = narayana_moments(c, 4)
    assert sq.moments(2)[0] == pytest.approx(m[0] + 3 * m[1])
    assert sq.moments(2)[1] == pytest.approx(m[1] + 6 * m[2] + 9 * m[3])
    y = x + 3 * x**2
    np.testing.assert_allclose(sq.density(y), mp_density(x, c) / (1 + 6 * x), rtol=1e-10)
    with pytest.raises(NotImplementedError):
        polynomial(sq, [0.0, 0.0, 1.0])  # degree 4


# --- the attention chain --------------------------------------------------------------


@pytest.mark.parametrize("cfg", [BERT, BERT.replace(tie_kv=True), TIED], ids=["bert", "bert-tied", "tied"])
def test_first_moment(cfg):
    assert output_law(cfg).moments(1)[0] == pytest.approx(cfg.first_moment, rel=1e-13)
    assert value_law(cfg).moments(1)[0] == pytest.approx(cfg.first_moment * cfg.n / cfg.d_o, rel=1e-13)


def test_sharing_keeps_the_law_and_tying_changes_it():
    unshared = AttentionConfig(n=70, d=70, h=6, d_k=14, d_v=10, d_o=50)
    laws = [output_law(unshared.replace(h_kv=g)) for g in (6, 3, 1)]  # none, GQA, MQA
    assert laws[0] == laws[1] == laws[2]
    x = laws[0].grid(50)
    np.testing.assert_array_equal(laws[2].density(x), laws[0].density(x))
    tied = output_law(unshared.replace(d_v=14, tie_kv=True))
    untied = output_law(unshared.replace(d_v=14))
    assert abs(tied.moments(2)[1] / untied.moments(2)[1] - 1) > 0.1


def test_chain_levels():
    ch = chain(BERT)
    assert ch.value == value_law(BERT) and ch.output == output_law(BERT)
    assert ch.output_covariance == output_covariance_law(BERT)
    # h d_V = d_O: a square step, so mu_VO has a hard edge at 0 (no atom)
    assert ch.output_covariance.edges()[0][0] == 0.0 and ch.output_covariance.atoms() == []
    assert output_law(BERT.replace(d_o=256)).atoms() == [(0.0, pytest.approx(0.5))]


@pytest.mark.parametrize(
    "law",
    [
        output_law(BERT),  # soft edges
        output_covariance_law(BERT),  # x^-1/2 at 0
        output_law(preset_config("llada-8b")),  # two square steps: x^-2/3 at 0
        output_law(TIED),  # K=V tied, atom 0.3 at 0
    ],
    ids=["bert", "bert-mu_vo", "llada", "tied"],
)
def test_moments_from_density_by_quadrature(law):
    k = np.arange(5)[:, None]
    by_quad = quad_density(law, lambda x: x**k) + np.array([sum(m * x**j for x, m in law.atoms()) for j in range(5)])
    np.testing.assert_allclose(by_quad, np.concatenate([[1.0], law.moments(4)]), rtol=1e-9)
    assert law.cdf(law.edges()[-1][1]) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("law", [output_law(BERT), output_law(TIED)], ids=["bert", "tied"])
def test_spectral_functionals(law):
    np.testing.assert_allclose(law.integrate(lambda x: x[None] ** np.arange(1, 5)[:, None]), law.moments(4), rtol=1e-10)
    t = np.array([0.1, 1.0, 10.0]) / law.moments(1)[0]
    atoms = sum(m for x, m in law.atoms() if x == 0)
    decay = law.integrate(lambda x: np.exp(-t[:, None] * x))
    np.testing.assert_allclose(decay, quad_density(law, lambda x: np.exp(-t[:, None] * x)) + atoms, rtol=1e-10)
    noise = law.integrate(lambda x: np.expm1(-t[:, None] * x) ** 2 / x, phi0=np.zeros(3))
    np.testing.assert_allclose(noise, quad_density(law, lambda x: np.expm1(-t[:, None] * x) ** 2 / x), rtol=1e-10)
    if atoms:
        with pytest.raises(ValueError, match="phi0"):
            with np.errstate(divide="ignore", invalid="ignore"):
                law.integrate(lambda x: np.expm1(-x) ** 2 / x)


@pytest.mark.parametrize("law", [value_law(BERT), compress(marchenko_pastur(0.5), 0.25)], ids=["bert-mu_v", "atom"])
def test_contour_integrals(law):
    """The contour method (off the real axis) against the exact moments and the
    default quadrature (on the real axis)."""
    np.testing.assert_allclose(
        law.integrate(lambda x: x[None] ** np.arange(1, 5)[:, None], method="contour"), law.moments(4), rtol=1e-9
    )
    t = np.array([0.3, 3.0, 30.0]) / law.moments(1)[0]
    phi = lambda x: x * np.exp(-2 * t[:, None] * x)  # noqa: E731
    np.testing.assert_allclose(law.integrate(phi, method="contour"), law.integrate(phi), rtol=1e-9)


def test_functionals_with_a_hard_edge_and_large_times():
    """x exp(-2 t x) over a law with density ~ x^-2/3 at 0 (two square steps),
    for t up to 1e4 / mean: the positive-weight quadrature stays exact."""
    law = output_law(preset_config("llada-8b"))
    assert law.edges()[0][0] == 0.0 and law.atoms() == []
    t = np.geomspace(1e-2, 1e4, 7) / law.moments(1)[0]
    got = law.integrate(lambda x: x * np.exp(-2 * t[:, None] * x))
    np.testing.assert_allclose(got, quad_density(law, lambda x: x * np.exp(-2 * t[:, None] * x), nodes=600), rtol=1e-8)
    assert np.all(np.diff(got) < 0) and got[-1] > 0


def test_cdf_and_quantile():
    law = output_law(TIED)
    ((lo, hi),) = law.edges()
    assert law.cdf(lo - 1e-9) == pytest.approx(0.3) and law.cdf(-1e-9) == 0.0
    x = np.linspace(lo, hi, 9)[1:-1]
    s, w = np.polynomial.legendre.leggauss(200)
    s, w = (s + 1) / 2, w / 2
    # mass of [lo, x_1] (x = lo + (x_1 - lo) s^6 absorbs the edge), then of [x_i, x_i+1]
    pieces = [np.sum(w * 6 * s**5 * (x[0] - lo) * law.density(lo + (x[0] - lo) * s**6))]
    pieces += [np.sum(w * (b - a) * law.density(a + (b - a) * s)) for a, b in zip(x[:-1], x[1:])]
    np.testing.assert_allclose(law.cdf(x) - 0.3, np.cumsum(pieces), rtol=1e-10)
    np.testing.assert_allclose(law.quantile(law.cdf(x)), x, rtol=1e-10)
    assert np.all(law.quantile([0.0, 0.1, 0.3]) == 0.0) and law.quantile(1.0) == pytest.approx(hi)


def test_distances_to_a_law():
    law = output_law(BERT)
    n = 400
    sample = law.quantile((np.arange(n) + 0.5) / n)  # the best n-point sample
    assert ks_to_law(sample, law) == pytest.approx(0.5 / n, rel=1e-8)
    fine = law.quantile((np.arange(200_000) + 0.5) / 200_000)
    rng = np.random.default_rng(3)
    eigs = rng.choice(fine, 97)
    assert w1_to_law(eigs, law) == pytest.approx(scipy.stats.wasserstein_distance(eigs, fine), rel=1e-3)
    assert w1_to_law(sample, law) < 2 * law.moments(1)[0] / n


def test_failure_is_reported(monkeypatch):
    law = output_law(TIED)
    with pytest.raises(ConvergenceError, match="residual"):
        law.stieltjes(np.array([1.0 + 1j, np.nan]))
    monkeypatch.setattr(solver, "_RES_TOL", -1.0)  # nothing can pass
    with pytest.raises(ConvergenceError, match="1 of 1 points"):
        law.stieltjes(2.0)


# --- simulation of the Gaussian-equivalent model ------------------------------------------

SIM = {
    "unshared": AttentionConfig(n=240, d=240, h=3, d_k=48, d_v=80, d_o=168),
    "MQA": AttentionConfig(n=240, d=240, h=3, h_kv=1, d_k=48, d_v=80, d_o=168),
    "tied": AttentionConfig(n=240, d=240, h=3, d_k=60, d_o=168, tie_kv=True),
}


@pytest.mark.parametrize("name", SIM)
def test_simulated_spectra_match_the_law(name):
    """Linear spectral statistics of these Wishart-type matrices fluctuate by O(1/n)
    around the limit and their bias is O(1/n), and eigenvalue rigidity makes W1 and
    KS O(1/n) (up to logs) as well: all tolerances are C / n. Measured at n = 120,
    240 and 480: W1 / mean <= 10 / n, KS <= 4 / n, moment errors <= 40 / n; the
    constants below leave a factor 2-3. The wrong law (tying switched) is at
    W1 / mean ~ 0.7 or more, far outside."""
    cfg = SIM[name]
    law = output_law(cfg)
    rng = np.random.default_rng(20260)
    eigs = [ge_spectrum(rng, cfg) for _ in range(3)]
    mean = law.moments(1)[0]
    emp = np.mean([[np.mean(e**k) for k in (1, 2, 3)] for e in eigs], 0)
    assert np.all(np.abs(emp / law.moments(3) - 1) <= 80 / cfg.n)
    for e in eigs:
        assert w1_to_law(e, law) / mean <= 25 / cfg.n
        assert ks_to_law(e, law) <= 10 / cfg.n
    wrong = output_law(cfg.replace(tie_kv=False) if cfg.tie_kv else cfg.replace(d_v=cfg.d_k, tie_kv=True))
    assert w1_to_law(eigs[0], wrong) / mean > 0.3


# --- command line ----------------------------------------------------------------------------


def test_cli_json(capsys):
    assert main(["law", "--preset", "bert-base", "--moments", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["moments"], output_law(BERT).moments(4), rtol=1e-15)
    assert main(["law", "--preset", "bert-base", "--level", "mu_vo", "--density", "40", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    law = output_covariance_law(BERT)
    assert set(out) == {"x", "density", "atoms", "edges"} and len(out["x"]) == 40
    np.testing.assert_allclose(out["density"], law.density(np.array(out["x"])), rtol=1e-12)
    assert out["edges"] == [list(e) for e in law.edges()] and out["atoms"] == []


def test_cli_table_and_errors(capsys):
    args = ["law", "--n", "20", "--d", "30", "--h", "2", "--dk", "5", "--do", "10"]
    assert main(args + ["--density", "5", "--moments", "2"]) == 0
    text = capsys.readouterr().out
    assert "m_k" in text and "atoms: 0.5 at 0" in text and "support edges" in text
    assert main(["law", "--n", "20", "--d", "10", "--h", "2", "--dk", "5"]) == 2
    assert "n = 20 > d = 10" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(args + ["--moments", "0"])


def test_cli_module_entry_point():
    res = subprocess.run(
        [sys.executable, "-m", "gelib", "law", "--preset", "bert-base", "--moments", "4", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["moments"][0] == pytest.approx(BERT.first_moment, rel=1e-13)


def test_laws_with_large_eigenvalues_do_not_overflow():
    # g_{cX}(z) = g_X(z / c) / c and psi_{cX}(z) = psi_X(c z), at c = 1e8 (m_40 ~ 1e320
    # unscaled), on both sides of the series/solver switch, with no warning.
    import warnings

    small = marchenko_pastur(0.5)
    c = 1e8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = marchenko_pastur(0.5, scale=c)
        z = np.array([0.7 + 0.2j, 3.0 + 1.0j, 20.0 + 5.0j, -40.0])
        np.testing.assert_allclose(big.stieltjes(c * z) * c, small.stieltjes(z), rtol=1e-10)
        u = np.array([0.01, 0.05, 0.3 + 0.1j])
        np.testing.assert_allclose(big.psi(u / c), small.psi(u), rtol=1e-10)
        assert big.moments(1)[0] == pytest.approx(c)
