"""The closed-form laws at the bottom of every chain.

A :class:`ClosedForm` is the law of ``p(X)``: ``X`` a point mass or
Marchenko-Pastur, ``p`` a polynomial of degree 1 or 2.  Its support, atoms and
moments are exact, and its Stieltjes transform is in closed form
(:func:`base_reg`, :func:`g_base`), written so that JAX can differentiate it
and the solver (:mod:`gelib.freeprob.solver`) can use it as the innermost
equation.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial import polynomial as npoly

from .moments import compress_moments

__all__ = ["ClosedForm", "merge_atoms", "inner_reg", "base_reg", "g_base"]


@dataclasses.dataclass(frozen=True)
class ClosedForm:
    """Law of ``p(X)``: ``X`` is a point mass at ``param`` (``kind="dirac"``)
    or Marchenko-Pastur with ratio ``param`` (``kind="mp"``), and
    ``p(x) = sum_i poly[i] x^i`` has degree 1 or 2."""

    kind: str
    param: float
    poly: tuple[float, ...] = (0.0, 1.0)

    @property
    def key(self) -> tuple[str, int]:
        """The static part of the law, its kind and number of polynomial
        coefficients; the solver compiles once per key."""
        return self.kind, len(self.poly)

    @property
    def theta(self) -> np.ndarray:
        """The traced part, shape ``(1 + len(poly),)``: ``(param, *poly)``."""
        return np.array([self.param, *self.poly])

    def inner_support(self) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """Components and atoms of the law of ``X`` (before ``p``)."""
        if self.kind == "dirac":
            return [], [(self.param, 1.0)]
        c = self.param
        comps = [((1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2)]
        return comps, ([(0.0, 1 - 1 / c)] if c > 1 else [])

    def support(self) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """Components (intervals) and atoms of the law of ``p(X)``."""
        comps, atoms = self.inner_support()
        p = np.asarray(self.poly)
        out = []
        for lo, hi in comps:
            xs = [lo, hi]
            if len(p) == 3 and lo < -p[1] / (2 * p[2]) < hi:
                xs.append(-p[1] / (2 * p[2]))
            vals = npoly.polyval(np.array(xs), p)
            out.append((float(vals.min()), float(vals.max())))
        return out, merge_atoms([(float(npoly.polyval(x, p)), m) for x, m in atoms])

    def moments(self, k: int) -> np.ndarray:
        """Exact moments ``m_1 .. m_k`` of ``p(X)``, shape ``(k,)``."""
        deg = len(self.poly) - 1
        if self.kind == "dirac":
            mx = self.param ** np.arange(1, deg * k + 1, dtype=float)
        else:  # MP(c) = c * compress(delta_1, 1/c)
            c = self.param
            mx = c ** np.arange(1, deg * k + 1) * compress_moments(np.ones(deg * k), 1 / c)
        mx = np.concatenate([[1.0], mx])
        return np.array([npoly.polypow(self.poly, j)[: deg * j + 1] @ mx[: deg * j + 1] for j in range(1, k + 1)])

    def scaled_moments(self, k: int) -> tuple[int, np.ndarray]:
        """``(e, t)``: the moments ``m_j = t_j 2^(e j)`` of ``p(X)`` (``j = 1 .. k``)
        with ``|t_j| <= 1``, so that none overflows whatever the scale of the law.

        ``t`` (shape ``(k,)``) holds the moments of ``p(X) / 2^e``, ``2^e`` a
        power of two at or above the largest ``|p(x)|`` on the support, so the
        scaling is exact.  Computed from the Narayana form of the moments of
        Marchenko-Pastur, ``m_j = sum_i N(j, i) c^(i-1)``, with ``X`` itself scaled
        by a power of two (every term at most 1), not from :meth:`moments`."""
        deg = len(self.poly) - 1
        kk = deg * k
        if self.kind == "dirac":
            s = _ceil_log2(abs(self.param))
            u = math.ldexp(self.param, -s)
            my = u ** np.arange(1, kk + 1, dtype=float)  # moments of X / 2^s
        else:
            c = self.param
            s = _ceil_log2((1 + math.sqrt(c)) ** 2)  # 2^s >= the upper edge >= max(1, c)
            cs, r = math.ldexp(c, -s), math.ldexp(1.0, -s)
            narayana = lambda j, i: math.comb(j, i) * math.comb(j, i - 1) / j  # noqa: E731
            my = np.array(
                [
                    sum(narayana(j, i) * cs ** (i - 1) * r ** (j - i + 1) for i in range(1, j + 1))
                    for j in range(1, kk + 1)
                ]
            )
        # p(X) = sum_i poly_i 2^(s i) Y^i with |Y| <= 1; 2^e bounds it
        logs = [math.log2(abs(p)) + s * i for i, p in enumerate(self.poly) if p != 0]
        e = (math.ceil(max(logs)) + math.ceil(math.log2(len(logs)))) if logs else 0
        q = np.array([math.ldexp(p, s * i - e) for i, p in enumerate(self.poly)])
        my = np.concatenate([[1.0], my])
        return e, np.array([npoly.polypow(q, j)[: deg * j + 1] @ my[: deg * j + 1] for j in range(1, k + 1)])


def _ceil_log2(x: float) -> int:
    """The least ``e`` with ``2^e >= x`` (0 for ``x = 0``), without overflow."""
    if x == 0:
        return 0
    m, e = math.frexp(x)  # x = m 2^e, 0.5 <= m < 1
    return e - 1 if m == 0.5 else e


def merge_atoms(atoms: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``[(location, mass), ...]`` with equal locations merged, tiny masses
    (<= 1e-13) dropped, sorted by location."""
    merged: dict[float, float] = {}
    for loc, m in atoms:
        merged[loc] = merged.get(loc, 0.0) + m
    return sorted((loc, m) for loc, m in merged.items() if m > 1e-13)


def inner_reg(kind: str, z: jax.Array | np.ndarray | complex, c: jax.Array | float) -> tuple[jax.Array, jax.Array]:
    """``(reg, w)`` for ``delta_c`` or ``MP(c)``: ``g(z) = reg(z) - w / z``, where
    ``w`` is the atom at 0 and ``reg`` is computed without cancellation near 0
    (so ``Im g`` keeps full relative precision next to an atom).  ``kind`` is
    ``"dirac"`` or ``"mp"``, ``c`` a real scalar, ``z`` a complex scalar or
    array; ``reg`` has the shape of ``z``, ``w`` is a scalar."""
    if kind == "dirac":
        return jnp.where(c == 0, 0.0, 1.0 / (c - z)), jnp.where(c == 0, 1.0, 0.0)
    u, a, b = z - 1 - c, (1 - jnp.sqrt(c)) ** 2, (1 + jnp.sqrt(c)) ** 2
    s = u * jnp.sqrt((z - a) * (z - b) / u**2)  # sqrt((z-a)(z-b)), cut exactly on [a, b]
    g = 2.0 / (1 - c - z - s)  # the root with g ~ -1/z
    with_atom = ((z - 2 - 2 * c) / (s - c + 1) - 1) / (2 * c)  # g + (1 - 1/c) / z
    return jnp.where(c > 1, with_atom, g), jnp.where(c > 1, 1 - 1 / c, 0.0)


def base_reg(
    key: tuple[str, int], z: jax.Array | np.ndarray | complex, theta: jax.Array | np.ndarray
) -> tuple[jax.Array, jax.Array]:
    """``(reg, w)`` for the law of ``p(X)``: ``g_{p(X)}(z)`` sums ``g_X(r) / p'(r)``
    over the roots of ``p(r) = z`` (no root selection needed); an atom of X at
    0 moves to ``p(0)``.  ``key`` and ``theta`` (shape ``(1 + len(poly),)``) as
    :attr:`ClosedForm.key` and :attr:`ClosedForm.theta`; ``z`` a complex scalar
    or array, ``reg`` of its shape, ``w`` a scalar."""
    kind, npar = key
    c, p = theta[0], theta[1:]
    if npar == 2:
        roots, slopes = [(z - p[0]) / p[1]], [p[1]]
    else:
        disc = jnp.sqrt(p[1] ** 2 - 4 * p[2] * (p[0] - z))
        q = -0.5 * (p[1] + jnp.where((p[1] * disc).real >= 0, disc, -disc))
        roots = [q / p[2], (p[0] - z) / q]
        slopes = [2 * p[2] * r + p[1] for r in roots]
    parts = [inner_reg(kind, r, c) for r in roots]
    w = parts[0][1]
    reg = sum(r / d for (r, _), d in zip(parts, slopes))
    return reg + jnp.where(p[0] != 0, w / (p[0] - z), 0.0), jnp.where(p[0] == 0, w, 0.0)


def g_base(key: tuple[str, int], z: jax.Array | np.ndarray | complex, theta: jax.Array | np.ndarray) -> jax.Array:
    """The Stieltjes transform ``g(z)`` of the law of ``p(X)`` (atom included),
    of the shape of ``z``; arguments as in :func:`base_reg`."""
    reg, w = base_reg(key, z, theta)
    return reg - w / z
