"""The :class:`Law` facade: one object per law, with cached support and panels.

A :class:`Law` is a closed-form bottom law followed by compressions and affine
maps.  It answers every question about the law (moments, atoms, Stieltjes and
related transforms, density, edges, distribution function, quantiles,
spectral functionals), delegating to the exact moment algebra
(:mod:`~gelib.freeprob.moments`), the solver (:mod:`~gelib.freeprob.solver`),
the support scan (:mod:`~gelib.freeprob.support`) and the quadrature panels
(:mod:`~gelib.freeprob.quadrature`), and caching what is costly to compute
(the support and the distribution function's panels).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from . import quadrature, solver
from .closed_forms import ClosedForm
from .moments import affine_moments, compress_moments
from .solver import LawError
from .support import support_components

__all__ = ["Law"]


_UNIT_LIMIT = 200  # a law whose support bound is beyond 2^+-200 is computed in units of a power of two


def _ldexp(x: ArrayLike, n: int) -> np.ndarray:
    """``x * 2^n`` for real or complex arrays, exactly (barring over- or underflow)."""
    x = np.asarray(x)
    with np.errstate(over="ignore", under="ignore"):
        if np.iscomplexobj(x):
            out = np.empty(x.shape, complex)
            out.real, out.imag = np.ldexp(x.real, n), np.ldexp(x.imag, n)
            return out
        return np.ldexp(x, n)


def _ceil_log2(x: float) -> int:
    """The least ``e`` with ``2^e >= x > 0``, without overflow."""
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= m < 1
    return e - 1 if m == 0.5 else e


def _growth(t: np.ndarray) -> int:
    """``ceil(log2 max_j |t_j|^(1/j))`` (0 when every ``t_j`` is 0): the scale of the moments ``t``."""
    nz = np.flatnonzero(t)
    if not nz.size:
        return 0
    logs = np.log2(np.abs(t[nz])) / (nz + 1)
    return _ceil_log2(2.0 ** float(np.max(logs)))


def _renormalised(e: int, t: np.ndarray) -> tuple[int, np.ndarray]:
    """``(e + c, t_j 2^(-c j))`` with ``c = _growth(t)``: the same moments, now with
    ``max_j |t_j|^(1/j)`` in ``(1/2, 1]``."""
    c = _growth(t)
    with np.errstate(under="ignore"):
        return e + c, np.ldexp(t, -c * np.arange(1, t.size + 1))


def _pow10(mantissa: float, exponent2: int) -> str:
    """``mantissa * 2^exponent2`` written as ``a.bce+N``, for any exponent (no overflow)."""
    if mantissa == 0:
        return "0"
    log10 = math.log10(abs(mantissa)) + exponent2 * math.log10(2.0)
    p = math.floor(log10)
    return f"{'-' if mantissa < 0 else ''}{10 ** (log10 - p):.3g}e{p:+d}"


@dataclasses.dataclass(frozen=True)
class Law:
    """A probability law on the real line: ``base`` (closed form), then
    ``steps[k] = (lam, a, b)``, innermost first:
    ``L_k = a * compress(L_{k-1}, lam) + b``.

    Build laws with :func:`~gelib.freeprob.marchenko_pastur`,
    :func:`~gelib.freeprob.dirac`, :func:`~gelib.freeprob.compress`,
    :func:`~gelib.freeprob.scale`, :func:`~gelib.freeprob.affine` and
    :func:`~gelib.freeprob.polynomial`, not directly (equal laws are then one
    object).  Exact: :meth:`moments`, :meth:`atoms`, :meth:`atom_cdf`,
    :meth:`point_mass`.  By the solver: :meth:`stieltjes`, :meth:`psi`,
    :meth:`chi`, :meth:`s_transform`, :meth:`density`, :meth:`edges`,
    :meth:`cdf`, :meth:`quantile`, :meth:`integrate`.  Inputs and results are
    numpy arrays; the support and the distribution function are computed once
    per law and cached.
    """

    base: ClosedForm
    steps: tuple[tuple[float, float, float], ...] = ()

    # --- exact quantities ---
    def moments(self, k: int) -> np.ndarray:
        """Exact moments ``m_1 .. m_k``, shape ``(k,)`` (power-series form of every step).

        Raises :class:`~gelib.freeprob.LawError` when a moment overflows float64
        (``m_j ~ e^{j beta^2}`` for attention at large ``beta``) or underflows
        it, naming the first one that does; :meth:`scaled_moments` gives all of them."""
        m = self._direct_moments(k)
        tiny = np.finfo(float).tiny
        if np.all(np.isfinite(m) & (np.abs(m) >= tiny)):
            return m
        # an intermediate overflowed (inf - inf) or underflowed: the same algebra, each level scaled
        e, t = self.scaled_moments(k)
        j = np.arange(1, k + 1)
        with np.errstate(over="ignore", under="ignore"):
            m = np.ldexp(t, e * j)
        over = ~np.isfinite(m)
        under = (t != 0) & (np.abs(m) < tiny)
        bad = np.flatnonzero(over | under)
        if bad.size:
            i = int(bad[0]) + 1
            what = "overflows" if over[i - 1] else "underflows"
            limit = f"the largest float64 is {np.finfo(float).max:.3g}" if over[i - 1] else f"the least is {tiny:.3g}"
            raise LawError(
                f"m_{i} {what} float64: m_{i} is about {_pow10(t[i - 1], e * i)} ({limit}); "
                + {1: "no moment is finite", 2: "m_1 is finite"}.get(i, f"m_1 .. m_{i - 1} are finite")
                + " (Law.scaled_moments gives every moment as t_j 2^(e j))"
            )
        return m

    def _direct_moments(self, k: int) -> np.ndarray:
        """The moment algebra in plain float64: exact unless an intermediate
        overflows, which leaves an ``inf`` or a ``nan``, or underflows (warnings silenced)."""
        try:
            with np.errstate(over="ignore", invalid="ignore", under="ignore"):
                m = self.base.moments(k)
                for lam, a, b in self.steps:
                    m = affine_moments(compress_moments(m, lam), a, b)
        except OverflowError:  # a Python float power (a**i) that overflowed
            return np.full(k, np.nan)
        return m

    def scaled_moments(self, k: int) -> tuple[int, np.ndarray]:
        """``(e, t)``: the exact moments as ``m_j = t_j 2^(e j)``, ``j = 1 .. k``,
        with ``|t_j| <= 1``; ``t`` (shape ``(k,)``) holds the moments of the law
        scaled by ``2^-e``, a power of two with ``max_j |t_j|^(1/j)`` in ``(1/2, 1]``.

        Neither overflows nor (but for moments that are exactly 0) underflows: every
        level of the chain is rescaled by a power of two (exactly) after each
        step, so that ``max_j |t_j|^(1/j)`` is near 1, and before each compression
        by an estimate of the growth it brings (``(1 + sqrt(lam))^2`` at most,
        refined from the first 16 moments).  ``log10 m_j = log10 t_j + e j log10 2``."""
        j = np.arange(1, k + 1)
        e, t = _renormalised(*self.base.scaled_moments(k))
        for lam, a, b in self.steps:
            c = _ceil_log2((1 + math.sqrt(lam)) ** 2)  # compress(2^-c Z) has moments at most 1
            k0 = min(k, 16)
            with np.errstate(under="ignore"):
                c += _growth(compress_moments(np.ldexp(t[:k0], -c * j[:k0]), lam))  # the actual growth, roughly
                t = compress_moments(np.ldexp(t, -c * j), lam)  # the law 2^(e + c) Z'
            e, t = _renormalised(e + c, t)
            # a 2^e Z + b with |t_j| <= 1: scaled by 2^e_new >= a 2^e + |b|
            e_new = _ceil_log2(a) + e + 1 if b else _ceil_log2(a) + e
            if b:
                e_new = max(e_new, _ceil_log2(abs(b)) + 1)
            t = affine_moments(t, math.ldexp(a, e - e_new), math.ldexp(b, -e_new))
            e, t = _renormalised(e_new, t)
        return e, t

    @functools.cached_property
    def sigma(self) -> float:
        """Root mean square ``sqrt(m_2)``: the scale used by all tolerances.

        Raises :class:`~gelib.freeprob.LawError` when it overflows float64 (then
        no density, edge or distribution function can be computed)."""
        m = self._direct_moments(2)
        if np.isfinite(m[1]):
            return math.sqrt(m[1]) or 1.0
        e, t = self.scaled_moments(2)
        with np.errstate(over="ignore"):
            sigma = float(np.ldexp(math.sqrt(t[1]), e))
        if not math.isfinite(sigma):
            raise LawError(
                f"the scale sqrt(m_2) of this law is about {_pow10(math.sqrt(t[1]), e)}, beyond float64 "
                f"(largest {np.finfo(float).max:.3g}): its density, edges and distribution function cannot "
                "be computed (its moments can: Law.scaled_moments)"
            )
        return sigma or 1.0

    @functools.cached_property
    def radius(self) -> float:
        """A bound on ``|x|`` over the support: ``||G^T A G / m|| <= ||A|| (1 + sqrt(lam))^2``.

        Raises :class:`~gelib.freeprob.LawError` when the bound overflows float64."""
        comps, atoms = self.base.support()
        r = max([abs(v) for c in comps for v in c] + [abs(loc) for loc, _ in atoms])
        for lam, a, b in self.steps:
            r = a * r * (1 + math.sqrt(lam)) ** 2 + abs(b)
        if not math.isfinite(r):
            raise LawError(
                f"the support of this law reaches beyond float64 (largest {np.finfo(float).max:.3g}): "
                "its density, edges and distribution function cannot be computed (its moments can: "
                "Law.scaled_moments)"
            )
        return r

    @functools.cached_property
    def _taylor(self):
        """``(R, t)``, ``t_k = m_k / R^k`` (k = 0 .. 40, ``R`` = :attr:`radius`): the
        series of g at infinity and of psi at 0, used where |z| > 4 R (resp.
        |z| < 1 / (4 R)), error < 4^-40.  Scaled (the moments of ``X / R``, all
        in [-1, 1]) so that laws with large eigenvalues (``e^{beta^2}`` at large
        ``beta``) do not overflow ``m_40``."""
        from .builders import scale  # here, not at the top: builders imports this module

        r = self.radius or 1.0
        return r, np.concatenate([[1.0], scale(self, 1 / r).moments(40)])

    @functools.cached_property
    def _constants(self):
        """Per step: (lam, a, b, c, w, w_shift) for
        :func:`~gelib.freeprob.solver.residual_terms`, and the means of the
        compressed laws (the solver's starting point)."""
        rows, means = [], []
        w_in = sum(m for loc, m in self.base.support()[1] if loc == 0.0)
        w_shift, mean = 0.0, self.base.moments(1)[0]
        for lam, a, b in self.steps:
            c = 1 - lam * (1 - w_in)
            c = 0.0 if abs(c) < 1e-12 else c
            w = max(c, 0.0)
            rows.append((lam, a, b, c, w, w_shift))
            w_in, w_shift = (w, 0.0) if b == 0 else (0.0, w)  # the atom moves to b
            means.append(lam * mean)
            mean = a * lam * mean + b
        return np.array(rows, dtype=float).reshape(-1, 6), np.array(means)

    def atoms(self) -> list[tuple[float, float]]:
        """Point masses ``[(location, mass), ...]``, sorted by location."""
        _, atoms = self.base.support()
        for lam, _a, b in self.steps:
            w0 = sum(m for loc, m in atoms if loc == 0.0)
            mass = 1 - lam * (1 - w0)
            atoms = [(b, mass)] if mass > 1e-12 else []
        return atoms

    def atom_cdf(self, x: ArrayLike) -> np.ndarray:
        """Mass of the atoms at or below ``x`` (array of any shape, result of that shape)."""
        x = np.asarray(x, dtype=float)
        return sum((m * (x >= loc) for loc, m in self.atoms()), np.zeros(np.shape(x)))

    def point_mass(self, x: ArrayLike) -> np.ndarray:
        """Mass of the atoms at exactly ``x`` (array of any shape, result of that
        shape): the jump of :meth:`cdf` at ``x``."""
        x = np.asarray(x, dtype=float)
        return sum((m * (x == loc) for loc, m in self.atoms()), np.zeros(np.shape(x)))

    def edges(self) -> list[tuple[float, float]]:
        """Support of the absolutely continuous part: ``[(left, right), ...]``.

        Never silently empty: raises :class:`~gelib.freeprob.LawError` when no
        component is found although the atoms leave some mass, or when an edge
        overflows float64.  :meth:`check_support` also checks that the
        components carry all of that mass."""
        return list(self._support)

    def check_support(self) -> float:
        """The mass of the continuous part, checked: the components of :meth:`edges`
        must carry ``1 - (mass of the atoms)`` to ``1e-6`` of it, and the total
        mass must be 1 to ``1e-9`` (by the distribution function's panels).
        Raises :class:`~gelib.freeprob.LawError` otherwise (a truncated support
        or a failed density): call it before trusting :meth:`edges`,
        :meth:`grid` or :meth:`density` of an unusual law.  The distribution
        function, quantiles, functionals and distances check it themselves."""
        if self._unit:
            return self._normal.check_support()
        return float(sum(c.mass for c in self._components))

    # --- laws beyond 2^+-200: computed in units of a power of two ---
    @functools.cached_property
    def _unit(self) -> int:
        """0, or ``u`` such that this law is ``2^u`` times :attr:`_normal` (when the
        bound ``2^e`` on its support of :meth:`scaled_moments` is beyond ``2^+-200``,
        where the solver's intermediate products, ``q^2 g`` and the like, would
        overflow or underflow).  Scaling by a power of two is exact."""
        e = self.scaled_moments(1)[0]
        return e if abs(e) > _UNIT_LIMIT else 0

    @functools.cached_property
    def _normal(self) -> Law:
        """This law divided by ``2^u`` (:attr:`_unit`): every level of the chain
        scaled alike, ``compress(c A) = c compress(A)``, ``c (a X + b) = a (c X) + c b``."""
        u, base = self._unit, self.base
        if base.kind == "dirac":  # the point itself, not the polynomial, is scaled (the solver inverts p)
            point = float(np.polynomial.polynomial.polyval(base.param, base.poly))
            base = ClosedForm("dirac", math.ldexp(point, -u))
        else:
            base = dataclasses.replace(base, poly=tuple(math.ldexp(p, -u) for p in base.poly))
        return Law(base, tuple((lam, a, math.ldexp(b, -u)) for lam, a, b in self.steps))

    def _from_unit(self, x: ArrayLike, what: str = "a point of the support") -> np.ndarray:
        """Points of :attr:`_normal` in this law's units; raises
        :class:`~gelib.freeprob.LawError` if one overflows float64."""
        out = _ldexp(x, self._unit)
        if not np.all(np.isfinite(out)):
            big = _pow10(float(np.max(np.abs(x))), self._unit)
            raise LawError(
                f"{what} of this law overflows float64: it is about {big} (the largest float64 is "
                f"{np.finfo(float).max:.3g}); its moments can be computed (Law.scaled_moments)"
            )
        return out

    # --- transforms ---
    def _g(self, z, deriv=False, steps=None):
        """g (and g' if ``deriv``) at complex points of any shape: the moment
        series far away, else the solver (lower half plane by conjugation);
        raises :class:`~gelib.freeprob.ConvergenceError` if a point misses the
        tolerance.  ``steps``: the solver's continuation factors (default
        ``(0.3, 0.6, 0.85)``)."""
        if self._unit:  # g_{cX}(z) = g_X(z / c) / c
            u = self._unit
            out = self._normal._g(_ldexp(np.asarray(z, dtype=complex), -u), deriv, steps)
            return (_ldexp(out[0], -u), _ldexp(out[1], -2 * u)) if deriv else _ldexp(out, -u)
        z = np.asarray(z, dtype=complex)
        flat = z.ravel()
        far = np.abs(flat) > 4 * self.radius  # the moment series is exact there
        r, t = self._taylor
        zf = flat[far]
        q = (r / zf[:, None]) ** np.arange(41)  # g = -(1/z) sum_k t_k (R/z)^k
        lower = flat.imag < 0
        w = np.where(lower, flat.conj(), flat)
        st, means = self._constants
        g, dg = solver.stieltjes(w, ~far, self.base.theta, st, means, 10 * self.sigma, self.base.key, steps)
        g[far], dg[far] = -(q @ t) / zf, (q[:, :40] @ (t[:40] * np.arange(1, 41))) / zf**2
        g, dg = np.where(lower & ~far, g.conj(), g), np.where(lower & ~far, dg.conj(), dg)
        return (g.reshape(z.shape), dg.reshape(z.shape)) if deriv else g.reshape(z.shape)

    def stieltjes(self, z: ArrayLike) -> np.ndarray:
        """``g(z) = int dmu(x) / (x - z)`` at complex points (array of any shape,
        result of that shape, vectorised); real points give the boundary value
        ``g(x + i0)``."""
        return self._g(z)

    def psi(self, z: ArrayLike) -> np.ndarray:
        """``psi(z) = int z x / (1 - z x) dmu = sum_k m_k z^k`` (array of any
        shape, result of that shape)."""
        if self._unit:  # psi_{cX}(z) = psi_X(c z)
            return self._normal.psi(_ldexp(np.asarray(z, dtype=complex), self._unit))
        z = np.asarray(z, dtype=complex)
        near = np.abs(z) < 0.25 / self.radius  # the moment series is exact there
        safe = np.where(near, 1.0, z)
        r, t = self._taylor
        series = (r * z[..., None]) ** np.arange(1, 41) @ t[1:]
        return np.where(near, series, -1 - self._g(1 / safe) / safe)

    def chi(self, u: ArrayLike, tol: float = 1e-11) -> np.ndarray:
        """Inverse of ``psi`` near 0 (branch with ``chi(u) ~ u / m_1``): Newton on
        ``psi(z) = u`` with continuation in ``u`` (from the series at ``u / 4``);
        defined e.g. for real ``u`` in ``(-(1 - mass at 0), 0)``.  ``u`` of any
        shape, result of that shape."""
        if self._unit:  # chi_{cX}(u) = chi_X(u) / c
            return _ldexp(self._normal.chi(u, tol), -self._unit)
        u = np.asarray(u, dtype=complex)
        m1, m2 = self.moments(2)
        z = u / 4 / m1 - m2 * (u / 4) ** 2 / m1**3
        for target in (u / 4, u / 2, 3 * u / 4, u):
            for _ in range(10):
                g, dg = self._g(1 / z, deriv=True)
                dz = (-1 - g / z - target) / (g / z**2 + dg / z**3)
                z = z - dz
                if np.all(np.abs(dz) <= 1e-14 * np.abs(z)):
                    break
        err = np.abs(self.psi(z) - u)
        if not np.all(err <= tol * np.maximum(1, np.abs(u))):
            raise solver.ConvergenceError(f"chi: psi(chi(u)) missed u by {err.max():.2g}")
        return z

    def s_transform(self, u: ArrayLike) -> np.ndarray:
        """``S(u) = chi(u) (1 + u) / u``; ``S(0) = 1 / m_1`` (``u`` of any shape,
        result of that shape)."""
        if self._unit:  # S_{cX}(u) = S_X(u) / c
            return _ldexp(self._normal.s_transform(u), -self._unit)
        u = np.asarray(u, dtype=complex)
        safe = np.where(u == 0, -1e-3, u)
        return np.where(u == 0, 1 / self.moments(1)[0], self.chi(safe) * (1 + safe) / safe)

    # --- density and distribution ---
    def density(self, x: ArrayLike) -> np.ndarray:
        """Density of the absolutely continuous part (atoms excluded),
        ``Im g(x + i0) / pi``; exactly 0 outside :meth:`edges`.  ``x`` of any
        shape, result of that shape."""
        if self._unit:  # rho_{cX}(x) = rho_X(x / c) / c
            rho = self._normal.density(_ldexp(np.asarray(x, dtype=float), -self._unit))
            out = _ldexp(rho, -self._unit)
            lost = (out != 0) & (np.abs(out) < np.finfo(float).tiny) | ((out == 0) & (rho != 0))
            if np.any(lost):
                raise LawError(
                    f"the density of this law underflows float64 at some points (it is about "
                    f"{_pow10(float(np.max(np.abs(rho[lost]))), -self._unit)} there, below the smallest normal "
                    f"float64 {np.finfo(float).tiny:.3g}, so its digits would be wrong; at a smaller beta, or "
                    "farther from the support's edges, it does not)"
                )
            return out
        x = np.asarray(x, dtype=float)
        inside = np.zeros(x.shape, bool)
        for lo, hi in self._support:
            inside |= (x > lo) & (x < hi)
        out = np.zeros(x.shape)
        if inside.any():
            out[inside] = np.maximum(self._g(x[inside]).imag / np.pi, 0.0)
        return out

    def grid(self, num: int) -> np.ndarray:
        """About ``num`` points inside the support (1-D), Chebyshev-clustered at every
        edge (each component gets points in proportion to its width, at least 2)."""
        if self._unit:
            return self._from_unit(self._normal.grid(num))
        comps = self._support
        if not comps:
            return np.zeros(0)
        widths = np.array([hi - lo for lo, hi in comps])
        counts = np.maximum(2, np.round(num * widths / widths.sum()).astype(int))
        return np.concatenate(
            [lo + (hi - lo) * (1 - np.cos(np.pi * (np.arange(k) + 0.5) / k)) / 2 for (lo, hi), k in zip(comps, counts)]
        )

    def cdf(self, x: ArrayLike) -> np.ndarray:
        """``mu((-inf, x])``: the integrated density plus the atoms at or below x
        (``x`` of any shape, result of that shape)."""
        if self._unit:
            return self._normal.cdf(_ldexp(np.asarray(x, dtype=float), -self._unit))
        x = np.asarray(x, dtype=float)
        return np.clip(self.atom_cdf(x) + sum(c.cdf(x) for c in self._components), 0.0, 1.0)

    @property
    def cdf_nodes(self) -> np.ndarray:
        """Sorted points (1-D) of the distribution function's panels, their ends
        and their Gauss-Legendre nodes.  Between neighbouring nodes the
        continuous part of :meth:`cdf` is smooth and nearly linear, which
        :func:`~gelib.freeprob.w1_to_law` uses to integrate ``|F_n - F|``."""
        if self._unit:
            return self._from_unit(self._normal.cdf_nodes)
        comps = self._components
        return np.unique(np.concatenate([c.points for c in comps])) if comps else np.zeros(0)

    def quantile(self, u: ArrayLike) -> np.ndarray:
        """Generalised inverse ``inf {x : cdf(x) >= u}`` for u in [0, 1] (any
        shape, result of that shape)."""
        if self._unit:
            return self._from_unit(self._normal.quantile(u))
        shape = np.shape(u)
        u = np.asarray(u, dtype=float).ravel()
        pieces = sorted([(loc, loc, m) for loc, m in self.atoms()] + [(c.lo, c.hi, c.mass) for c in self._components])
        out = np.full(u.shape, pieces[-1][1])
        done = np.zeros(u.shape, bool)
        for lo, hi, _ in pieces:  # the first piece that reaches u
            here = ~done & (u <= self.cdf(hi) + 1e-14)
            a, b = np.full(here.sum(), lo), np.full(here.sum(), hi)
            for _ in range(0 if lo == hi else 64):  # bisection: cdf is monotone
                mid = (a + b) / 2
                up = self.cdf(mid) >= u[here]
                a, b = np.where(up, a, mid), np.where(up, mid, b)
            out[here] = b
            done |= here
        return out.reshape(shape)

    @functools.cached_property
    def _support(self):
        """Components of the continuous part, from the exact critical values of
        the outward map (:func:`~gelib.freeprob.support.support_components`)."""
        if self._unit:
            comps = self._normal._support
            return [tuple(map(float, self._from_unit(c, "an edge"))) for c in comps]
        cont = 1 - sum(m for _, m in self.atoms())
        return support_components(self.base, self.steps, self.radius, self.sigma, self._g, cont)

    @functools.cached_property
    def _components(self):
        """The continuous part, component by component, as graded panels
        (:func:`~gelib.freeprob.quadrature.components`)."""
        return quadrature.components(self._support, self.density, self.atoms())

    # --- spectral functionals ---
    def integrate(
        self,
        phi: Callable[[np.ndarray], ArrayLike],
        phi0: ArrayLike | None = None,
        *,
        method: str = "quadrature",
        rtol: float = 1e-10,
        atol: float = 0.0,
    ) -> np.ndarray:
        """Spectral functional ``int phi dmu``.

        ``phi`` maps a 1-D array of points to an array of shape
        ``(..., len(points))``; the result has shape ``(...)``, so
        ``phi = lambda x: x * np.exp(-2 * t[:, None] * x)`` gives a whole curve.
        Atoms contribute ``mass * phi(location)``; give ``phi0`` (the value at 0)
        when ``phi`` has a removable singularity there (e.g.
        ``(1 - exp(-t x))^2 / x``).  Two independent methods for the continuous part:

        * ``"quadrature"`` (default): Gauss-Legendre on the graded panels of the
          distribution function, whose densities are cached, so a call costs
          microseconds; positive weights, so ``phi`` may vary over many orders of
          magnitude (``exp(-t x)`` for any ``t``); exact to the panels' accuracy
          (~1e-12) for ``phi`` smooth on the support.
        * ``"contour"``: ``-(1/2 pi i) oint phi (g - atom poles) dz`` on an ellipse
          around each component that avoids the other components, the atoms and
          0, by the trapezoid rule (error ~ rho^-N for ellipse parameter rho),
          for ``phi`` analytic there: N doubles until two estimates agree to
          ``rtol * |I| + atol``; if rounding could exceed that (``phi`` varying
          over many orders of magnitude on the ellipse) the ellipse is drawn
          closer to the support.  Raises :class:`~gelib.freeprob.ConvergenceError`
          when no contour meets the tolerance.
        """
        if self._unit:  # int phi(x) dmu(x) = int phi(c y) dnu(y)
            u = self._unit
            return self._normal.integrate(lambda y: phi(_ldexp(y, u)), phi0, method=method, rtol=rtol, atol=atol)
        atoms = self.atoms()
        total: float | np.ndarray = 0.0
        for loc, m in atoms:
            if loc == 0.0 and phi0 is not None:
                val = np.asarray(phi0, dtype=float)
            else:
                val = np.asarray(phi(np.array([loc], dtype=float)))[..., 0]
            if not np.all(np.isfinite(val)):
                raise ValueError(f"phi is not finite at the atom {loc:g}; pass phi0=phi({loc:g})")
            total = total + m * np.real(val)
        if method == "quadrature":
            return np.asarray(total + sum(c.integrate(phi) for c in self._components))
        if method != "contour":
            raise ValueError(f"method must be 'quadrature' or 'contour', got {method!r}")
        comps = self._support
        for j, (lo, hi) in enumerate(comps):
            others = [v for i, c in enumerate(comps) if i != j for v in c]
            others += [v for v, _ in atoms if not lo <= v <= hi] + ([0.0] if not lo <= 0 <= hi else [])
            gap = min([abs(v - lo) if v < lo else abs(v - hi) for v in others], default=np.inf)
            total = total + quadrature.contour(self._g, atoms, phi, lo, hi, min((hi - lo) / 2, gap / 2), rtol, atol)
        return np.asarray(total)
