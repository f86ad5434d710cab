"""Closed-form oracles (gelib.freeprob.oracles): first checked on their own, then the solver against them.

Tolerances for the solver, from what it guarantees:

* moments: exact power-series algebra in float64; for these laws every term of
  the recursion is positive (no cancellation), so ``m_1 .. m_4`` carry a few
  dozen roundings: ``MOMENT_TOL = 1e-13`` relative (about 50 ulps);
* edges: critical points located by bisection to machine precision in the
  bottom law's point ``t``; ``x(t)`` is stationary there, so only the float64
  evaluation of the outward map (a few flops per level) remains, about
  ``10 eps`` per level: ``EDGE_TOL = 1e-13`` relative to the right edge;
* density: every point's Newton residual is below ``1e-10`` relative (else
  ``ConvergenceError``).  Near a square-root edge at relative distance ``d``
  the equation's derivative vanishes like ``sqrt(d)`` and so does ``Im g``, so
  a residual ``r`` moves the density by ``r / d`` relative.  On the 64-point
  Chebyshev grid of :func:`oracle_errors` the outermost node sits at
  ``d = sin(pi / 256)^2``: ``DENSITY_TOL = 1e-10 / d`` (about 7e-7).  The
  oracles themselves are good to ~1e-13 there (bisection, polished roots).
"""

import math

import numpy as np
import pytest

from gelib.freeprob import compress, fuss_catalan, marchenko_pastur, mp_product, mp_product_moments, oracle_errors

NUM = 64
DENSITY_TOL = 1e-10 / math.sin(math.pi / (4 * NUM)) ** 2
EDGE_TOL = 1e-13
MOMENT_TOL = 1e-13
ORACLES = {"fc2": fuss_catalan(2), "fc3": fuss_catalan(3), "mp_half_quarter": mp_product(0.5, 0.25)}


def quadrature(oracle, num):
    """``int x^j rho(x) dx`` for ``j = 0 .. 4`` by Gauss-Legendre in ``theta``,
    ``x = lo + (hi - lo) t^p``, ``t = (1 - cos theta) / 2``: with ``p = n + 1`` at
    the hard edge ``x^(-n/(n+1))`` of Fuss-Catalan (``p = 1`` at soft edges) the
    integrand is analytic in ``theta``, so the rule converges geometrically."""
    lo, hi = oracle.edges()
    p = len(oracle.ratios) + 1 if oracle.fuss_catalan else 1
    th, w = np.polynomial.legendre.leggauss(num)
    th, w = np.pi * (th + 1) / 2, w * np.pi / 2
    t = (1 - np.cos(th)) / 2
    x = lo + (hi - lo) * t**p
    f = oracle.density(x) * (hi - lo) * p * t ** (p - 1) * np.sin(th) / 2 * w
    return np.array([f @ x**j for j in range(5)])


def test_closed_forms_quoted_in_the_book():
    assert fuss_catalan(2).moments(4).tolist() == [1, 3, 12, 55]
    assert fuss_catalan(3).moments(4).tolist() == [1, 4, 22, 140]
    assert fuss_catalan(2).edges() == (0.0, 27 / 4)
    assert fuss_catalan(3).edges() == (0.0, 256 / 27)
    # free variances add: m_2 = 1 + a + b for mean-1 factors
    assert mp_product(0.5, 0.25).moments(2)[1] == 1.75
    with pytest.raises(ValueError):
        mp_product(1.0, 0.5)
    with pytest.raises(ValueError):
        fuss_catalan(0)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_fuss_catalan_numbers_agree_with_lagrange_inversion(k):
    # two independent formulas: binom((k+1) j, j) / (k j + 1) and (1/j)[u^(j-1)] (1+u)^((k+1) j)
    np.testing.assert_array_equal(fuss_catalan(k).moments(8), mp_product_moments((1.0,) * k, 8))


def test_fuss_catalan_with_one_factor_is_marchenko_pastur():
    # the parametrisation at k = 1 against the textbook density sqrt(x (4 - x)) / (2 pi x)
    x = np.linspace(0.01, 3.99, 41)
    np.testing.assert_allclose(fuss_catalan(1).density(x), np.sqrt(x * (4 - x)) / (2 * np.pi * x), rtol=1e-12)


@pytest.mark.parametrize("name", ORACLES)
def test_oracle_density_has_mass_one_and_its_own_moments(name):
    oracle = ORACLES[name]
    exact = np.concatenate([[1.0], oracle.moments(4)])
    q64, q128 = quadrature(oracle, 64), quadrature(oracle, 128)
    # geometric convergence: doubling the nodes changes nothing beyond round-off
    np.testing.assert_allclose(q64, q128, rtol=1e-12)
    np.testing.assert_allclose(q128, exact, rtol=1e-12)


def test_cubic_edges_separate_real_and_complex_roots():
    # the discriminant's roots are where the conjugate pair of the cubic is born
    oracle = ORACLES["mp_half_quarter"]
    lo, hi = oracle.edges()
    x = np.array([lo * (1 - 1e-6), lo * (1 + 1e-6), hi * (1 - 1e-6), hi * (1 + 1e-6)])
    n_complex = [np.sum(np.abs(np.roots(c).imag) > 1e-12) for c in oracle.cubic(1 / x)]
    assert n_complex == [0, 2, 2, 0]
    assert np.all(oracle.density(x)[[0, 3]] == 0) and np.all(oracle.density(x)[[1, 2]] > 0)


@pytest.mark.parametrize("name", ORACLES)
def test_solver_against_oracle(name):
    err = oracle_errors(ORACLES[name], num=NUM, k=4)
    assert err["density"] <= DENSITY_TOL, err
    assert err["left_edge"] <= EDGE_TOL and err["right_edge"] <= EDGE_TOL, err
    assert err["moments"] <= MOMENT_TOL, err


def test_solver_law_of_the_mixed_product_has_no_atom_and_mean_one():
    law = ORACLES["mp_half_quarter"].law()
    assert law.atoms() == [] and law.moments(1)[0] == 1.0
    # the m x m frame of compress(MP(1/2), 1/4) would be a different law, with an atom of mass 3/4
    assert compress(marchenko_pastur(0.5), 0.25).atoms() == [(0.0, pytest.approx(0.75))]
