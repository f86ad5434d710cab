"""Quadrature: the distribution function and spectral functionals of a law.

The continuous part is cut into graded panels (:func:`panel_breaks`: halving
towards every edge, where densities are square-root or ``x^-a`` singular),
split until the degree-15 Legendre series of the density on each panel (16
Gauss-Legendre points) has converged (:func:`components`); a
:class:`Component` integrates those series exactly (the distribution function)
and gives Gauss-Legendre weights for ``int phi rho dx``.  :func:`contour` is
the independent path for analytic ``phi``: the trapezoid rule on an ellipse
around one component, through the Stieltjes transform off the real axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.polynomial import legendre
from numpy.typing import ArrayLike

from .solver import ConvergenceError, LawError

__all__ = ["Component", "components", "contour", "panel_breaks"]

_GL_X, _GL_W = legendre.leggauss(16)  # nodes per panel of the distribution function
_LEGENDRE = legendre.legvander(_GL_X, 15) * (np.arange(16) + 0.5)  # values -> coefficients


def panel_breaks(lo: float, hi: float) -> np.ndarray:
    """Panel ends on [lo, hi], halving towards both edges: down to 1e-30 of the
    half-width at an edge at 0 (hard edges, density ~ x^-a), else to 1e-12 of
    the edge's value (a square-root edge leaves ~ 1e-18 of mass there).
    Returns the ends, increasing, shape ``(k,)``: the first and the last lie
    just inside ``lo`` and ``hi`` (:class:`Component` continues the density
    over the slivers beyond them)."""
    h = (hi - lo) / 2

    def depth(edge):
        floor = 1e-30 * h if edge == 0 else 1e-12 * abs(edge)
        return max(1, math.ceil(math.log2(h / floor)))

    left = lo + h * 2.0 ** -np.arange(depth(lo), -1, -1)
    right = hi - h * 2.0 ** -np.arange(1, depth(hi) + 1)
    return np.concatenate([left, right])


class Component:
    """Distribution function of one support component [lo, hi].

    The density is interpolated by a degree-15 Legendre series on each panel
    (16 Gauss-Legendre points; panels halve towards the edges and are split
    until the series' last coefficients are below 1e-12 of the largest) and
    integrated exactly.  Between the last panel and an edge the density is
    continued as the power law ``c |x - edge|^-a`` fitted on that panel (exact
    to leading order for square-root, x^-1/2 and x^-2/3 edges)."""

    def __init__(self, lo, hi, breaks, rho):
        self.lo, self.hi, self.breaks = lo, hi, breaks
        self.half = np.diff(breaks) / 2
        nodes = (breaks[:-1] + self.half)[:, None] + self.half[:, None] * _GL_X
        self.nodes, self.weights = nodes.ravel(), (rho * _GL_W * self.half[:, None]).ravel()
        coef = (rho * _GL_W) @ _LEGENDRE
        self.coef = legendre.legint(coef, lbnd=-1, axis=1) * self.half[:, None]
        self.tails = [
            self._tail(nodes[0] - lo, rho[0], breaks[0] - lo, f"left edge {lo:.10g}"),
            self._tail(hi - nodes[-1][::-1], rho[-1][::-1], hi - breaks[-1], f"right edge {hi:.10g}"),
        ]
        self.cum = self.tails[0][0] + np.concatenate([[0.0], np.cumsum(self.coef.sum(1))])
        self.mass = self.cum[-1] + self.tails[1][0]
        self.points = np.concatenate([breaks, nodes.ravel()])

    @staticmethod
    def _tail(dist, rho, width, edge=""):
        """(mass, exponent 1 - a) of the power-law continuation on [0, width] (next to ``edge``)."""
        if rho[0] <= 0 or rho[-1] <= 0 or not dist[-1] > 1.01 * dist[0]:
            return max(rho[0], 0.0) * width, 1.0
        power = 1 + math.log(rho[-1] / rho[0]) / math.log(dist[-1] / dist[0])
        if power <= 0:
            raise ConvergenceError(
                f"the density computed next to the {edge or 'edge'} is not integrable (fitted exponent "
                f"{power - 1:.3g}): the solver's accuracy is exhausted there"
            )
        return rho[0] * dist[0] * (width / dist[0]) ** power / power, power

    def integrate(self, phi):
        """int phi rho dx: Gauss-Legendre on the panels, the edge slivers as
        their mass times phi at the nearest node."""
        vals = np.real(np.asarray(phi(self.nodes)))
        return vals @ self.weights + self.tails[0][0] * vals[..., 0] + self.tails[1][0] * vals[..., -1]

    def cdf(self, x):
        """Mass of this component in (-inf, x]."""
        j = np.clip(np.searchsorted(self.breaks, x, side="right") - 1, 0, self.half.size - 1)
        xi = np.clip((x - self.breaks[j]) / self.half[j] - 1, -1, 1)
        inner = self.cum[j] + np.sum(legendre.legvander(xi, 16) * self.coef[j], axis=-1)
        (m_lo, p_lo), (m_hi, p_hi) = self.tails
        left = m_lo * (np.maximum(x - self.lo, 0) / (self.breaks[0] - self.lo)) ** p_lo
        right = self.mass - m_hi * (np.maximum(self.hi - x, 0) / (self.hi - self.breaks[-1])) ** p_hi
        return np.where(x < self.breaks[0], left, np.where(x > self.breaks[-1], right, inner))


def components(
    support: list[tuple[float, float]], density: Callable[[np.ndarray], np.ndarray], atoms: list[tuple[float, float]]
) -> list[Component]:
    """The continuous part, component by component, as graded panels (see
    :class:`Component`), split until the Legendre coefficients of the
    density on every panel have decayed; checks that the total mass (with
    ``atoms``) is 1 to ``1e-9`` and the continuous part's mass ``1 - atoms`` to
    ``1e-6`` of itself, raising :class:`~gelib.freeprob.LawError` otherwise (a
    truncated support).  ``density`` maps points of any shape to the density."""
    if not support and sum(m for _, m in atoms) < 1 - 1e-12:
        raise LawError(f"no support for the continuous part (atoms {atoms})")
    panels = [np.stack([b[:-1], b[1:]], 1) for b in map(lambda c: panel_breaks(*c), support)]
    todo = np.concatenate(panels) if panels else np.zeros((0, 2))
    done = []
    for _ in range(40):
        if not todo.size:
            break
        mid, half = todo.mean(1), (todo[:, 1] - todo[:, 0]) / 2
        rho = density(mid[:, None] + half[:, None] * _GL_X)
        coef = (rho * _GL_W) @ _LEGENDRE
        # converged: the last coefficients are 1e-12 of the largest, or the
        # panel's whole possible error (2 half tail) is below 2e-15
        ok = np.abs(coef[:, -3:]).max(1) <= 1e-12 * np.abs(coef).max(1) + 1e-15 / half
        done += [(p, r) for p, r in zip(todo[ok], rho[ok])]
        todo = np.concatenate([np.stack([todo[~ok, 0], mid[~ok]], 1), np.stack([mid[~ok], todo[~ok, 1]], 1)])
    else:
        raise ConvergenceError("density too rough for the distribution function's panels")
    comps = []
    for lo, hi in support:
        mine = sorted((p[0], p[1], r) for p, r in done if lo <= p[0] < hi)
        ends = np.array([p[:2] for p in mine])
        comps.append(Component(lo, hi, np.append(ends[:, 0], ends[-1, 1]), np.array([p[2] for p in mine])))
    cont = sum(c.mass for c in comps)
    expected = 1 - sum(m for _, m in atoms)
    mass = cont + sum(m for _, m in atoms)
    if abs(mass - 1) > 1e-9 or abs(cont - expected) > 1e-6 * expected:
        raise LawError(
            f"total mass {mass:.12g} != 1 (continuous part {cont:.6g}, atoms {1 - expected:.12g}): the support "
            f"found is truncated or the density failed (edges {support}, atoms {atoms})"
        )
    return comps


def contour(
    stieltjes: Callable[[np.ndarray], np.ndarray],
    atoms: list[tuple[float, float]],
    phi: Callable[[np.ndarray], ArrayLike],
    lo: float,
    hi: float,
    delta: float,
    rtol: float,
    atol: float,
) -> np.ndarray:
    """``-(1/2 pi i) oint phi (g - atom poles) dz`` on an ellipse around the
    component ``[lo, hi]`` reaching ``delta`` beyond its ends, by the trapezoid
    rule with N doubling until two estimates agree to ``rtol * |I| + atol``;
    the ellipse is drawn closer (``delta / 16``) while rounding could exceed
    that.  ``stieltjes`` maps complex points (shape ``(m,)``) to ``g``;
    ``phi`` maps points (shape ``(m,)``) to shape ``(..., m)``; the result
    has shape ``(...)``.  Raises :class:`~gelib.freeprob.ConvergenceError` when no contour
    meets the tolerance."""
    c, h = (lo + hi) / 2, (hi - lo) / 2
    for _ in range(8):
        kappa = 1 + delta / h
        rho = kappa + math.sqrt(kappa**2 - 1)
        prev, n = None, 64
        while n <= 2**15:
            w = rho * np.exp(2j * np.pi * (np.arange(n) + 0.5) / n)
            zeta, dzeta = c + h * (w + 1 / w) / 2, 1j * h * (w - 1 / w) / 2
            g = stieltjes(zeta[: n // 2])
            g = np.concatenate([g, g[::-1].conj()])  # the lower half by symmetry
            g = g - sum(m / (loc - zeta) for loc, m in atoms)
            terms = np.asarray(phi(zeta)) * g * dzeta
            val = np.real(-terms.sum(-1) / (1j * n))
            if prev is not None and np.all(np.abs(val - prev) <= rtol * np.abs(val) + atol):
                break
            prev, n = val, 2 * n
        else:
            raise ConvergenceError(f"contour on [{lo:.6g}, {hi:.6g}]: no convergence with {n // 2} nodes")
        rounding = 1e-15 * np.abs(terms).sum(-1) / n
        if np.all(rounding <= 0.1 * (rtol * np.abs(val) + atol)):
            return val
        delta /= 16
    raise ConvergenceError(
        f"contour on [{lo:.6g}, {hi:.6g}]: phi varies too much for the requested rtol; pass a larger atol"
    )
