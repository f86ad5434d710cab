"""Closed-form oracles for the solver: products of free Marchenko-Pastur laws.

Each oracle is a free multiplicative convolution of Marchenko-Pastur laws
``MP(c)`` (ratio ``c``, mean 1: the law of ``X X^T / N`` for ``X`` of size
``p x N`` with i.i.d. N(0, 1) entries, ``c = p / N``), whose moments, right
edge and density are computed here *without* the solver: exact moments by
Lagrange inversion (integer or rational arithmetic), edges as roots of explicit
polynomials, densities from an explicit parametrisation or from the roots of a
cubic.  :meth:`gelib.freeprob.Oracle.law` builds the same law with the solver's builders (a
chain of compressions), and :func:`gelib.freeprob.oracle_errors` measures the solver against
the closed form.

Derivation (conventions of :mod:`gelib.freeprob`: ``psi(z) = sum_k m_k z^k``,
``chi = psi^{-1}``, ``S(u) = chi(u) (1 + u) / u``).  ``S_{MP(c)}(u) = 1 / (1 + c u)``
and ``S`` is multiplicative under free multiplicative convolution, so
``nu = MP(c_1) ⊠ ... ⊠ MP(c_k)`` has ``S_nu(u) = prod_i 1 / (1 + c_i u)`` and

    ``chi_nu(u) = u / ((1 + u) prod_i (1 + c_i u))``,

i.e. ``u = psi_nu(z)`` solves ``u = z phi(u)`` with ``phi(u) = (1 + u) prod_i (1 + c_i u)``.

* **Moments** (Lagrange inversion): ``m_j = [z^j] u = (1/j) [u^(j-1)] phi(u)^j``.
  With every ``c_i = 1`` (``k`` factors), ``phi = (1 + u)^(k+1)`` and
  ``m_j = binom((k+1) j, j) / (k j + 1)``: the Fuss-Catalan numbers
  (1, 3, 12, 55, ... for ``k = 2``; 1, 4, 22, 140, ... for ``k = 3``).
* **Fuss-Catalan density** (``k`` factors of ``MP(1)``; Haagerup and Möller 2013,
  Penson and Życzkowski 2011): on ``(0, (k+1)^(k+1) / k^k)``, with
  ``0 < phi < pi / (k+1)``,

      ``x(phi) = sin((k+1) phi)^(k+1) / (sin(phi) sin(k phi)^k)``,
      ``rho(x(phi)) = sin(phi)^2 sin(k phi)^(k-1) / (pi sin((k+1) phi)^k)``;

  ``x`` decreases from the right edge (``phi -> 0``) to 0, where the density
  blows up like ``x^(-k/(k+1))``.  Inverted by bisection in ``phi``.
* **Two factors** ``MP(a) ⊠ MP(b)``: ``u = psi(1/x)`` is a root of the cubic

      ``P(u) = z a b u^3 + z (a + b + a b) u^2 + (z (1 + a + b) - 1) u + z``,  ``z = 1/x``.

  The Stieltjes transform is ``g(x) = -(1 + psi(1/x)) / x``, so the density is
  ``Im g(x + i0) / pi = |Im u| / (pi x)`` with ``u`` the complex root (inside
  the support the cubic has a conjugate pair; outside, three real roots).
  The edges are the points where two roots meet: the zeros of the discriminant
  of ``P`` in ``u``.  That discriminant is ``4 a b z + O(z^2)``, a polynomial
  of degree 4 in ``z``; times ``x^4`` it is a cubic in ``x``, whose largest
  root is the right edge and whose next root is the left edge (both soft for
  ``0 < a, b < 1``).
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np
from numpy.polynomial import polynomial as npoly
from numpy.typing import ArrayLike

from .builders import compress, marchenko_pastur, scale
from .law import Law

__all__ = ["Oracle", "fuss_catalan", "mp_product", "mp_product_moments", "oracle_errors"]


def mp_product_moments(ratios: tuple[float, ...], k: int) -> np.ndarray:
    """Exact moments ``m_1 .. m_k`` (shape ``(k,)``) of ``MP(c_1) ⊠ ... ⊠ MP(c_n)``,
    ``ratios = (c_1, ..., c_n)``, by Lagrange inversion
    ``m_j = (1/j) [u^(j-1)] ((1 + u) prod_i (1 + c_i u))^j``, in rational
    arithmetic (floats are converted exactly), rounded once at the end."""
    phi = [Fraction(1), Fraction(1)]
    for c in ratios:
        phi = _polymul(phi, [Fraction(1), Fraction(c)])
    out, power = [], [Fraction(1)]
    for j in range(1, k + 1):
        power = _polymul(power, phi)
        out.append(power[j - 1] / j)
    return np.array([float(m) for m in out])


def _polymul(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


@dataclasses.dataclass(frozen=True)
class Oracle:
    """The law ``MP(c_1) ⊠ ... ⊠ MP(c_n)`` (each factor of mean 1) in closed form.

    Two families: ``k`` factors of ratio 1 (Fuss-Catalan, :func:`fuss_catalan`)
    and two factors of ratios in ``(0, 1)`` (:func:`mp_product`).  No method but
    :meth:`law` uses the solver."""

    ratios: tuple[float, ...]

    @property
    def fuss_catalan(self) -> bool:
        return all(c == 1 for c in self.ratios)

    @property
    def name(self) -> str:
        return " ⊠ ".join(f"MP({Fraction(c).limit_denominator(1000)})" for c in self.ratios)

    def moments(self, k: int) -> np.ndarray:
        """Exact moments ``m_1 .. m_k``, shape ``(k,)``: the Fuss-Catalan numbers
        ``binom((n+1) j, j) / (n j + 1)`` for ``n`` factors of ratio 1, else
        :func:`mp_product_moments`."""
        if self.fuss_catalan:
            n = len(self.ratios)
            return np.array([math.comb((n + 1) * j, j) // (n * j + 1) for j in range(1, k + 1)], dtype=float)
        return mp_product_moments(self.ratios, k)

    def edges(self) -> tuple[float, float]:
        """``(left, right)`` edges of the support: ``(0, (n+1)^(n+1) / n^n)`` for
        Fuss-Catalan, else the two largest roots of the discriminant cubic (module
        docstring)."""
        if self.fuss_catalan:
            n = len(self.ratios)
            return 0.0, (n + 1) ** (n + 1) / n**n
        roots = np.roots(self.discriminant())
        real = np.sort(roots[np.abs(roots.imag) <= 1e-9 * np.abs(roots)].real)
        return float(real[-2]), float(real[-1])

    def cubic(self, z: ArrayLike) -> np.ndarray:
        """Coefficients (highest first, shape ``z.shape + (4,)``) of the cubic
        ``P(u)`` at ``z = 1/x`` (two factors only)."""
        a, b = self.ratios
        z = np.asarray(z, dtype=float)[..., None]
        return z * np.array([a * b, a + b + a * b, 1 + a + b, 1.0]) - np.array([0.0, 0.0, 1.0, 0.0])

    def discriminant(self) -> np.ndarray:
        """The cubic in ``x`` (coefficients, highest first) whose roots are the
        points where two roots of ``P`` meet: ``x^4 disc_u(P)(1/x)`` (two factors only)."""
        a, b = self.ratios
        # coefficients of P as polynomials in z (lowest first)
        p3, p2, p1, p0 = [0.0, a * b], [0.0, a + b + a * b], [-1.0, 1 + a + b], [0.0, 1.0]
        m = npoly.polymul
        terms = [
            18 * m(m(p3, p2), m(p1, p0)),
            -4 * m(m(p2, p2), m(p2, p0)),
            m(m(p2, p2), m(p1, p1)),
            -4 * m(m(p3, p1), m(p1, p1)),
            -27 * m(m(p3, p3), m(p0, p0)),
        ]
        disc = np.zeros(5)
        for t in terms:
            disc[: len(t)] += t
        # disc = sum_i d_i z^i with d_0 = 0; x^4 disc(1/x) = sum_i d_i x^(4-i): highest first is d_0 .. d_4
        return disc[1:]  # d_1 x^3 + d_2 x^2 + d_3 x + d_4

    def density(self, x: ArrayLike) -> np.ndarray:
        """The density at ``x`` (any shape; 0 outside the support)."""
        x = np.asarray(x, dtype=float)
        lo, hi = self.edges()
        inside = (x > lo) & (x < hi)
        out = np.zeros(x.shape)
        if self.fuss_catalan:
            out[inside] = self._fuss_catalan_density(x[inside])
        elif inside.any():
            out[inside] = self._cubic_density(x[inside])
        return out

    def _fuss_catalan_density(self, x: np.ndarray) -> np.ndarray:
        n = len(self.ratios)
        log_x = lambda f: (n + 1) * np.log(np.sin((n + 1) * f)) - np.log(np.sin(f)) - n * np.log(np.sin(n * f))  # noqa: E731
        lo, hi = np.zeros_like(x), np.full_like(x, np.pi / (n + 1))
        target = np.log(x)
        for _ in range(64):  # x(phi) decreases: bisection to machine precision
            mid = (lo + hi) / 2
            right = log_x(mid) > target
            lo, hi = np.where(right, mid, lo), np.where(right, hi, mid)
        f = (lo + hi) / 2
        return np.sin(f) ** 2 * np.sin(n * f) ** (n - 1) / (np.pi * np.sin((n + 1) * f) ** n)

    def _cubic_density(self, x: np.ndarray) -> np.ndarray:
        coef = self.cubic(1 / x)
        companion = np.zeros(x.shape + (3, 3))
        companion[..., 0, :] = -coef[..., 1:] / coef[..., :1]
        companion[..., 1, 0] = companion[..., 2, 1] = 1.0
        roots = np.linalg.eigvals(companion)
        u = np.take_along_axis(roots, np.argmax(np.abs(roots.imag), axis=-1)[..., None], -1)[..., 0]
        for _ in range(2):  # polish the complex root by Newton's method
            p = ((coef[..., 0] * u + coef[..., 1]) * u + coef[..., 2]) * u + coef[..., 3]
            dp = (3 * coef[..., 0] * u + 2 * coef[..., 1]) * u + coef[..., 2]
            u = u - p / dp
        return np.abs(u.imag) / (np.pi * x)

    def law(self) -> Law:
        """The same law built by the solver's builders: ``n`` compressions with
        ``lam = 1`` of ``MP(1)`` (Fuss-Catalan; with ``p = m``
        the compression ``G^T A G / m`` is ``mu_A ⊠ MP(1)``), or, for two factors
        ``a >= b``, ``a C_{1/a}(MP(b/a))``, whose S-transform is
        ``a S_{MP(b/a)}(a u) / (1 + a u) / a = 1 / ((1 + a u)(1 + b u))``."""
        if self.fuss_catalan:
            law = marchenko_pastur(1.0)
            for _ in range(len(self.ratios) - 1):
                law = compress(law, 1.0)
            return law
        a, b = sorted(self.ratios, reverse=True)
        return scale(compress(marchenko_pastur(b / a), 1 / a), a)


def fuss_catalan(k: int) -> Oracle:
    """``MP(1)^{⊠k}``, the free product of ``k`` square Wishart laws (``k >= 1``):
    moments ``binom((k+1) j, j) / (k j + 1)``, support ``[0, (k+1)^(k+1) / k^k]``
    (27/4 for ``k = 2``, 256/27 for ``k = 3``)."""
    if k < 1:
        raise ValueError(f"fuss_catalan needs k >= 1, got {k}")
    return Oracle((1.0,) * k)


def mp_product(a: float, b: float) -> Oracle:
    """``MP(a) ⊠ MP(b)`` for ratios ``0 < a, b < 1`` (both of mean 1): the density from
    the cubic of the module docstring, the edges from its discriminant."""
    if not (0 < a < 1 and 0 < b < 1):
        raise ValueError(f"mp_product needs ratios in (0, 1), got {a}, {b}")
    return Oracle((float(a), float(b)))


def oracle_errors(oracle: Oracle, num: int = 64, k: int = 4) -> dict[str, float]:
    """The solver (:meth:`Oracle.law`) against the closed form:

    * ``density``: the largest relative error ``|rho_solver / rho - 1|`` at ``num``
      Chebyshev points of the oracle's support (clustered at the edges, none on them);
    * ``left_edge``, ``right_edge``: the errors of the solver's edges relative to
      the right edge;
    * ``moments``: the largest relative error of the exact moments ``m_1 .. m_k``."""
    law = oracle.law()
    lo, hi = oracle.edges()
    x = lo + (hi - lo) * (1 - np.cos(np.pi * (np.arange(num) + 0.5) / num)) / 2
    (s_lo, s_hi), *rest = law.edges()
    if rest:
        raise AssertionError(f"the solver finds {len(rest) + 1} components for {oracle.name}")
    return {
        "density": float(np.max(np.abs(law.density(x) / oracle.density(x) - 1))),
        "left_edge": abs(s_lo - lo) / hi,
        "right_edge": abs(s_hi - hi) / hi,
        "moments": float(np.max(np.abs(law.moments(k) / oracle.moments(k) - 1))),
    }
