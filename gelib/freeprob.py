"""Limit spectral laws built by free compression: exact moments, fast densities.

A :class:`Law` is a compactly supported probability measure on the real line,
built from a closed-form law (a point mass, or Marchenko-Pastur, or the image
of either under a polynomial of degree <= 2) by

* compressions ``B = G^T A G / m``: ``A`` is ``p x p`` with law ``mu_A``,
  ``G`` is ``p x m`` with i.i.d. N(0, 1) entries, ``p, m -> infinity`` with
  ``lam = p / m`` fixed; the law of ``B`` solves
  ``psi_B(z) = lam psi_A(z (1 + psi_B(z)))``  (``shared/MATH.md`` section 3),
* affine maps ``x -> a x + b`` (``a > 0``).

This is the structure of the Gaussian-equivalent limit laws of Hayase and
Karakida (2026), Table A.4 and Figure D.1; :mod:`gelib.law` assembles them
for an attention layer.

Conventions (Tables A.4-A.5): ``psi(z) = int z x / (1 - z x) dmu = sum_k m_k z^k``,
``chi = psi^{-1}``, ``S(u) = chi(u) (1 + u) / u``, Stieltjes transform
``g(z) = int dmu(x) / (x - z) = -(1 + psi(1/z)) / z`` (``Im g > 0`` on the
upper half plane), density ``Im g(x + i0) / pi``.

Numerical method, and why
-------------------------
* **Moments** are exact: the compression equation is a power-series identity,
  solved coefficient by coefficient; affine and polynomial maps act on moments
  by the binomial and multinomial formulas.
* **Stieltjes transform** at ``z`` (any complex point): one unknown per
  compression, ``y_k = g`` of the ``k``-th compressed law at its own point
  (affine maps only move the point).  With ``q = -1/y_k`` the compression reads
  ``p_k y_k + 1 - lam + lam g_in(q) / y_k = 0`` (Silverstein's form), where
  ``g_in`` is the next unknown or, at the bottom, the closed form.  The coupled
  system (tridiagonal, 1-3 unknowns here) is solved by Newton's method with the
  exact Jacobian (JAX forward mode), by continuation from ``Im z = 10 sigma``
  down to the target in geometric steps, with a guard keeping every unknown in
  the upper half plane (the Stieltjes transform of every level lives there),
  then polished at the target itself (``Im z = 0`` gives the boundary value,
  hence exact densities, not Poisson-smoothed ones).  Every point's residual
  is checked; a point that misses the tolerance raises
  :class:`ConvergenceError`.  A damped fixed-point iteration needs thousands
  of steps near the edges and, after a step with an atom at zero, may settle
  on the false root ``g -> 0``; selecting roots of the algebraic equation
  becomes fragile as the chain deepens.  Newton on the coupled system has
  neither problem and is vectorised over points (``jax.jit`` + ``vmap``).
* **Support edges** are exact critical values.  On the real axis outside the
  support every level is real, and the chain can be run *outwards* in closed
  form from the point ``t`` of the bottom law:
  ``p = q (1 - lam) - lam q^2 g_in(q)`` (Silverstein and Choi 1995).  ``x(t)``
  is the outer point; ``t`` belongs to the complement of the support exactly
  when every level's point increases with ``t``.  The boundaries of that set
  (found on a dense ``t`` grid, refined by bisection to machine precision) are
  the points where the Jacobian of the system is singular; their images are
  the edges.  Each candidate interval between edges is then classified by
  ``Im g`` at its midpoint, and the total mass is checked to be 1.
* **Atoms** sit only at zero after a compression (the rank argument: mass
  ``max(0, 1 - lam (1 - w_0))``; nonzero atoms do not survive a compression,
  Bercovici and Voiculescu 1998); affine maps move them, polynomials map them.
* **Distribution function**: on each support component ``[l, r]`` the density
  is sampled at ``x = c - h cos(theta)`` (Chebyshev points);
  ``rho(x) h sin(theta)`` is smooth and even in ``theta`` for square-root and
  inverse-square-root edges, so its cosine series (a DCT) converges
  spectrally and integrates in closed form (Clenshaw-Curtis).
* **Spectral functionals** ``int phi dmu`` for analytic ``phi``: trapezoid
  rule on an ellipse around each component (geometric convergence), with the
  atoms added as ``mass * phi(location)``; see :meth:`Law.integrate`.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial import polynomial as npoly
from scipy import fft

jax.config.update("jax_enable_x64", True)

__all__ = [
    "ConvergenceError", "Law", "dirac", "marchenko_pastur", "compress", "scale",
    "affine", "polynomial", "w1_to_law", "ks_to_law",
]

_CHUNK = 1024          # points per solver call (one compilation per law shape)
_RATIO = 0.5           # continuation: Im z shrinks by this factor per step ...
_NSTEPS = 44           # ... from 10 sigma to 10 sigma * 2^-44 ~ 6e-13 sigma
_ITERS = 2             # Newton steps per continuation step
_POLISH = 12           # Newton steps at the target
_RES_TOL = 1e-10       # accepted residual of the (dimensionless) system
_TINY = 1e-150         # Im z used to take closed forms' boundary values


class ConvergenceError(RuntimeError):
    """A numerical method missed its tolerance; the message says where."""


# --- closed-form laws ----------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Base:
    """Law of ``p(X)``: ``X`` is a point mass at ``param`` (``kind="dirac"``)
    or Marchenko-Pastur with ratio ``param`` (``kind="mp"``), and
    ``p(x) = sum_i poly[i] x^i`` has degree 1 or 2."""

    kind: str
    param: float
    poly: tuple[float, ...] = (0.0, 1.0)

    @property
    def key(self):
        return self.kind, len(self.poly)

    @property
    def theta(self):
        return np.array([self.param, *self.poly])

    def inner_support(self):
        if self.kind == "dirac":
            return [], [(self.param, 1.0)]
        c = self.param
        comps = [((1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2)]
        return comps, ([(0.0, 1 - 1 / c)] if c > 1 else [])

    def support(self):
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
        return out, _merge_atoms([(float(npoly.polyval(x, p)), m) for x, m in atoms])

    def moments(self, k):
        deg = len(self.poly) - 1
        if self.kind == "dirac":
            mx = self.param ** np.arange(1, deg * k + 1, dtype=float)
        else:   # MP(c) = c * compress(delta_1, 1/c)
            c = self.param
            mx = c ** np.arange(1, deg * k + 1) * _compress_moments(np.ones(deg * k), 1 / c)
        mx = np.concatenate([[1.0], mx])
        return np.array([npoly.polypow(self.poly, j)[: deg * j + 1] @ mx[: deg * j + 1]
                         for j in range(1, k + 1)])


def _merge_atoms(atoms):
    merged = {}
    for loc, m in atoms:
        merged[loc] = merged.get(loc, 0.0) + m
    return sorted((loc, m) for loc, m in merged.items() if m > 1e-13)


def _g_inner(kind, z, c):
    """Stieltjes transform of ``delta_c`` or ``MP(c)``, analytic off the support."""
    if kind == "dirac":
        return 1.0 / (c - z)
    u = z - 1 - c
    s = u * jnp.sqrt(1 - 4 * c / u**2)      # sqrt((z-a)(z-b)), cut exactly on [a, b]
    return 2.0 / (1 - c - z - s)            # the root with g ~ -1/z (no cancellation)


def _g_base(key, z, theta):
    """Stieltjes transform of ``p(X)``: sum over the roots r of p(r) = z of
    g_X(r) / p'(r) (no root selection needed)."""
    kind, npar = key
    c, p = theta[0], theta[1:]
    if npar == 2:
        return _g_inner(kind, (z - p[0]) / p[1], c) / p[1]
    disc = jnp.sqrt(p[1] ** 2 - 4 * p[2] * (p[0] - z))
    q = -0.5 * (p[1] + jnp.where((p[1] * disc).real >= 0, disc, -disc))
    r1, r2 = q / p[2], (p[0] - z) / q
    return (_g_inner(kind, r1, c) / (2 * p[2] * r1 + p[1])
            + _g_inner(kind, r2, c) / (2 * p[2] * r2 + p[1]))


# --- exact moments ---------------------------------------------------------------

def _compress_moments(m_a, lam):
    """Moments of B = G^T A G / m from those of A: solve the power series
    identity psi_B(z) = lam psi_A(z (1 + psi_B(z))) order by order."""
    k = len(m_a)
    psi_b = np.zeros(k + 1)
    for _ in range(k):                       # each pass fixes one more order
        w = np.concatenate([[0.0, 1.0], psi_b[1:k]])      # z (1 + psi_B(z))
        comp = np.zeros(k + 1)               # Horner: psi_A(w) = w (m1 + w (m2 + ...))
        for mj in m_a[::-1]:
            comp[0] += mj
            comp = np.convolve(comp, w)[: k + 1]
        psi_b = lam * comp
    return psi_b[1:]


def _affine_moments(m, a, b):
    k = len(m)
    m0 = np.concatenate([[1.0], m])
    return np.array([sum(math.comb(j, i) * a**i * b ** (j - i) * m0[i] for i in range(j + 1))
                     for j in range(1, k + 1)])


# --- the coupled system ---------------------------------------------------------

def _residual(y, z, theta, st, key):
    """Residuals of the chain at outer point z; y[k] = g of compression k
    (innermost first) at its own point; st[k] = (lam, a, b) with
    L_k = a compress(L_{k-1}, lam) + b."""
    K = st.shape[0]
    p = (z - st[K - 1, 2]) / st[K - 1, 1]
    res = [None] * K
    for k in range(K - 1, -1, -1):
        lam, q = st[k, 0], -1.0 / y[k]
        if k:
            g_in = y[k - 1] / st[k - 1, 1]
        else:
            g_in = _g_base(key, q, theta)
        res[k] = p * y[k] + 1 - lam + lam * g_in / y[k]
        if k:
            p = (q - st[k - 1, 2]) / st[k - 1, 1]
    return jnp.stack(res)


def _small_solve(a, b):
    """Solve a x = b for a small K x K system, unrolled (Gaussian elimination;
    the chain's Jacobian is tridiagonal with a nonzero diagonal).  Much faster
    than a batched LAPACK call for K <= 4."""
    K = b.shape[0]
    a, b = [[a[i, j] for j in range(K)] for i in range(K)], [b[i] for i in range(K)]
    for i in range(K):
        for r in range(i + 1, K):
            f = a[r][i] / a[i][i]
            a[r] = [a[r][j] - f * a[i][j] for j in range(K)]
            b[r] = b[r] - f * b[i]
    x = [None] * K
    for i in range(K - 1, -1, -1):
        x[i] = (b[i] - sum(a[i][j] * x[j] for j in range(i + 1, K))) / a[i][i]
    return jnp.stack(x)


def _solve_point(x, eta, theta, st, means, eta0, key, nsteps, iters):
    K = st.shape[0]
    F = functools.partial(_residual, theta=theta, st=st, key=key)
    J = jax.jacfwd(F, holomorphic=True)

    def at(s):                               # continuation: Im z from 10 sigma down to eta
        return x + 1j * jnp.maximum(eta, eta0 * _RATIO**s)

    ys, p = [None] * K, (at(0) - st[K - 1, 2]) / st[K - 1, 1]
    for k in range(K - 1, -1, -1):           # start: g ~ -1/(z - mean) at every level
        ys[k] = -1.0 / (p - means[k])
        if k:
            p = (-1.0 / ys[k] - st[k - 1, 2]) / st[k - 1, 1]

    def newton(i, y):                        # iters steps per level, then polish at eta
        z = jnp.where(i < nsteps * iters, at(i // iters + 1), x + 1j * eta)
        y1 = y + _small_solve(J(y, z), -F(y, z))
        # guard: never leave the upper half plane (at most a 10x drop of Im y)
        return jnp.where(y1.imag > 0.1 * y.imag, y1, y1.real + 0.1j * y.imag)

    y = jax.lax.fori_loop(0, nsteps * iters + _POLISH, newton, jnp.stack(ys))
    z = x + 1j * eta
    res = jnp.max(jnp.abs(F(y, z))) + jnp.where(jnp.all(y.imag >= 0), 0.0, jnp.inf)
    dy = _small_solve(J(y, z), -jax.jacfwd(F, argnums=1, holomorphic=True)(y, z))
    return y[K - 1] / st[K - 1, 1], dy[K - 1] / st[K - 1, 1], res


@functools.partial(jax.jit, static_argnames=("key", "nsteps", "iters"))
def _solve(x, eta, theta, st, means, eta0, key, nsteps=_NSTEPS, iters=_ITERS):
    """g, g' and residual at the points x + i eta (eta >= 0), vectorised."""
    if st.shape[0] == 0:
        z = x + 1j * jnp.maximum(eta, _TINY * eta0)
        g, dg = jax.jvp(lambda z: _g_base(key, z, theta), (z,), (jnp.ones_like(z),))
        return g, dg, jnp.zeros_like(x)
    point = functools.partial(_solve_point, key=key, nsteps=nsteps, iters=iters)
    return jax.vmap(point, in_axes=(0, 0, None, None, None, None))(
        x, eta, theta, st, means, eta0)


def _outward(t, theta, st, key):
    """Real points of every level when the bottom law sits at real t
    (outside its support): the chain run outwards in closed form."""
    q = t + 0j
    g = _g_base(key, q, theta)
    ps = []
    for k in range(st.shape[0]):
        lam, a, b = st[k, 0], st[k, 1], st[k, 2]
        p = q * (1 - lam) - lam * q * q * g
        ps.append(p.real)
        g, q = -1.0 / (a * q), a * p + b
    return q.real, jnp.stack(ps)


@functools.partial(jax.jit, static_argnames="key")
def _scan(t, theta, st, key):
    """Outer point x(t) and whether t maps into the complement of the support
    (every level increasing in t)."""
    def one(t):
        (x, _), (_, dp) = jax.jvp(lambda t: _outward(t, theta, st, key), (t,), (1.0,))
        return x, jnp.all(dp > 0) & jnp.isfinite(x)
    return jax.vmap(one)(t)


def _chunked(fn, *arrays, fill):
    """Apply fn to fixed-size chunks of 1-D arrays (one compilation per shape)."""
    n = arrays[0].shape[0]
    pad = -n % _CHUNK
    arrays = [np.concatenate([a, np.full(pad, f, a.dtype)]) for a, f in zip(arrays, fill)]
    outs = [fn(*(a[i:i + _CHUNK] for a in arrays)) for i in range(0, n + pad, _CHUNK)]
    return [np.concatenate([np.asarray(o[j]) for o in outs])[:n] for j in range(len(outs[0]))]


# --- the law -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class Law:
    """A probability law on the real line: ``base`` (closed form), then
    ``steps[k] = (lam, a, b)``, innermost first:
    ``L_k = a * compress(L_{k-1}, lam) + b``.

    Build laws with :func:`marchenko_pastur`, :func:`dirac`, :func:`compress`,
    :func:`scale`, :func:`affine` and :func:`polynomial`, not directly.
    Results are numpy arrays; the support and the distribution function are
    computed once per law and cached.
    """

    base: _Base
    steps: tuple[tuple[float, float, float], ...] = ()

    # --- exact quantities ---
    def moments(self, k: int) -> np.ndarray:
        """Exact moments ``m_1 .. m_k`` (power-series form of every step)."""
        m = self.base.moments(k)
        for lam, a, b in self.steps:
            m = _affine_moments(_compress_moments(m, lam), a, b)
        return m

    @functools.cached_property
    def sigma(self) -> float:
        """Root mean square ``sqrt(m_2)``: the scale used by all tolerances."""
        return math.sqrt(self.moments(2)[1]) or 1.0

    def atoms(self) -> list[tuple[float, float]]:
        """Point masses ``[(location, mass), ...]``, sorted by location."""
        _, atoms = self.base.support()
        for lam, a, b in self.steps:
            w0 = sum(m for loc, m in atoms if loc == 0.0)
            mass = 1 - lam * (1 - w0)
            atoms = [(b, mass)] if mass > 1e-12 else []
        return atoms

    def edges(self) -> list[tuple[float, float]]:
        """Support of the absolutely continuous part: ``[(left, right), ...]``."""
        return list(self._support)

    # --- transforms ---
    def _g(self, z, eta_floor=0.0, deriv=False, nsteps=_NSTEPS, iters=_ITERS):
        z = np.asarray(z, dtype=complex)
        flat = z.ravel()
        lower = flat.imag < 0
        w = np.where(lower, flat.conj(), flat)
        st = np.array(self.steps, dtype=float).reshape(-1, 3)
        means, m = [], self.base.moments(1)[0]
        for lam, a, b in self.steps:
            means.append(lam * m)
            m = a * lam * m + b
        sol = functools.partial(
            _solve, theta=jnp.asarray(self.base.theta), st=jnp.asarray(st),
            means=jnp.asarray(np.array(means)), eta0=10 * self.sigma,
            key=self.base.key, nsteps=nsteps, iters=iters)
        g, dg, res = _chunked(sol, w.real, np.maximum(w.imag, eta_floor),
                              fill=(w.real[:1].mean() if w.size else 0.0, 1.0))
        bad = ~(res <= _RES_TOL)
        if bad.any():
            i = np.flatnonzero(bad)[0]
            raise ConvergenceError(
                f"Stieltjes solver: {bad.sum()} of {bad.size} points missed the residual "
                f"tolerance {_RES_TOL:g} (worst {np.nanmax(np.where(bad, res, 0)):.2g}, "
                f"e.g. z = {w[i]:.6g}); this law: {len(self.steps)} compressions")
        g, dg = np.where(lower, g.conj(), g), np.where(lower, dg.conj(), dg)
        return (g.reshape(z.shape), dg.reshape(z.shape)) if deriv else g.reshape(z.shape)

    def stieltjes(self, z) -> np.ndarray:
        """``g(z) = int dmu(x) / (x - z)`` at complex points (any shape);
        real points give the boundary value ``g(x + i0)``."""
        return self._g(z)

    def psi(self, z) -> np.ndarray:
        """``psi(z) = int z x / (1 - z x) dmu = sum_k m_k z^k``."""
        z = np.asarray(z, dtype=complex)
        safe = np.where(z == 0, 1.0, z)
        return np.where(z == 0, 0.0, -1 - self._g(1 / safe) / safe)

    def chi(self, u, tol=1e-11) -> np.ndarray:
        """Inverse of ``psi`` near 0 (branch with ``chi(u) ~ u / m_1``), by Newton
        with continuation in ``u``; defined e.g. for real ``u`` in
        ``(-(1 - mass at 0), 0)``."""
        u = np.asarray(u, dtype=complex)
        m1, m2 = self.moments(2)
        z = u / 16 / m1 - m2 * (u / 16) ** 2 / m1**3
        for frac in np.arange(1, 17) / 16:
            for _ in range(6):
                g, dg = self._g(1 / z, deriv=True)
                ps, dps = -1 - g / z, g / z**2 + dg / z**3
                z = z - (ps - frac * u) / dps
        err = np.abs(self.psi(z) - u)
        if not np.all(err <= tol * np.maximum(1, np.abs(u))):
            raise ConvergenceError(f"chi: psi(chi(u)) missed u by {err.max():.2g}")
        return z

    def s_transform(self, u) -> np.ndarray:
        """``S(u) = chi(u) (1 + u) / u``; ``S(0) = 1 / m_1``."""
        u = np.asarray(u, dtype=complex)
        safe = np.where(u == 0, -1e-3, u)
        return np.where(u == 0, 1 / self.moments(1)[0], self.chi(safe) * (1 + safe) / safe)

    # --- density and distribution ---
    def density(self, x) -> np.ndarray:
        """Density of the absolutely continuous part (atoms excluded),
        ``Im g(x + i0) / pi``; exactly 0 outside :meth:`edges`."""
        x = np.asarray(x, dtype=float)
        inside = np.zeros(x.shape, bool)
        for lo, hi in self._support:
            inside |= (x > lo) & (x < hi)
        out = np.zeros(x.shape)
        if inside.any():
            out[inside] = np.maximum(self._g(x[inside]).imag / np.pi, 0.0)
        return out

    def grid(self, num: int) -> np.ndarray:
        """About ``num`` points inside the support, Chebyshev-clustered at every
        edge (each component gets points in proportion to its width, at least 2)."""
        comps = self._support
        if not comps:
            return np.zeros(0)
        widths = np.array([hi - lo for lo, hi in comps])
        counts = np.maximum(2, np.round(num * widths / widths.sum()).astype(int))
        return np.concatenate([lo + (hi - lo) * (1 - np.cos(np.pi * (np.arange(k) + 0.5) / k)) / 2
                               for (lo, hi), k in zip(comps, counts)])

    def cdf(self, x) -> np.ndarray:
        """``mu((-inf, x])``: the integrated density plus the atoms at or below x."""
        x = np.asarray(x, dtype=float)
        out = np.zeros(x.shape)
        for loc, m in self.atoms():
            out += m * (x >= loc)
        for (lo, hi), coef in zip(self._support, self._series):
            theta = np.arccos(np.clip((lo + hi - 2 * x) / (hi - lo), -1, 1))
            out += _series_integral(coef, theta)
        return np.clip(out, 0.0, 1.0)

    def quantile(self, u) -> np.ndarray:
        """Generalised inverse ``inf {x : cdf(x) >= u}`` for u in [0, 1]."""
        u = np.asarray(u, dtype=float)
        pieces = sorted([(loc, loc, m, None) for loc, m in self.atoms()]
                        + [(lo, hi, c[0] * np.pi / 2, c)
                           for (lo, hi), c in zip(self._support, self._series)],
                        key=lambda piece: piece[:2])
        out = np.full(u.shape, pieces[-1][1])
        done = np.zeros(u.shape, bool)
        before = 0.0
        for lo, hi, mass, coef in pieces:
            here = ~done & (u <= before + mass)
            if coef is None:
                out[here] = lo
            elif here.any():
                out[here] = lo + (hi - lo) * (1 - np.cos(
                    _series_inverse(coef, u[here] - before))) / 2
            done |= here
            before += mass
        return out

    @functools.cached_property
    def _support(self):
        """Components of the continuous part, from the exact critical values of
        the outward map (see the module docstring)."""
        comps, atoms = self.base.support()
        if not self.steps:
            return comps
        st = np.array(self.steps, dtype=float)
        theta, key = jnp.asarray(self.base.theta), self.base.key
        # t-grid on every interval of R outside the base support, dense near the ends
        sing = sorted({v for c in comps for v in c} | {loc for loc, _ in atoms})
        scale = max(abs(v) for v in sing) or 1.0
        u = np.linspace(-30, 30, 4000)
        segs = [sing[0] - scale * np.exp(u)[::-1], sing[-1] + scale * np.exp(u)]
        for lo, hi in zip(sing[:-1], sing[1:]):
            if not any(c0 <= lo and hi <= c1 for c0, c1 in comps):
                segs.append(lo + (hi - lo) * np.sort(np.concatenate(
                    [(1 + np.tanh(u / 2)) / 2, np.linspace(0, 1, 4002)[1:-1]])))
        seg_id = np.concatenate([np.full(s.size, i) for i, s in enumerate(segs)])
        t = np.concatenate(segs)
        scan = functools.partial(_scan, theta=theta, st=jnp.asarray(st), key=key)
        _, inside = _chunked(scan, t, fill=(t[0],))
        cut = np.flatnonzero((inside[1:] != inside[:-1]) & (seg_id[1:] == seg_id[:-1]))
        t_in = np.where(inside[cut], t[cut], t[cut + 1])
        t_out = np.where(inside[cut], t[cut + 1], t[cut])
        for _ in range(80):                   # bisection to the boundary
            mid = (t_in + t_out) / 2
            (inside,) = _chunked(lambda t: scan(t)[1:], mid, fill=(0.0,))
            t_in, t_out = np.where(inside, mid, t_in), np.where(inside, t_out, mid)
        cand = np.sort(_chunked(scan, t_in, fill=(0.0,))[0])
        cand[np.abs(cand) <= 1e-14 * self.sigma] = 0.0     # hard edges at 0
        cand = cand[np.concatenate([[True], np.diff(cand) > 1e-13 * self.sigma])]
        comps = []
        if cand.size > 1:
            mids = (cand[1:] + cand[:-1]) / 2
            is_support = self._g(mids).imag > 1e-9 / self.sigma
            for lo, hi, s in zip(cand[:-1], cand[1:], is_support):
                if s and comps and comps[-1][1] == lo:
                    comps[-1] = (comps[-1][0], float(hi))
                elif s:
                    comps.append((float(lo), float(hi)))
        return comps

    @functools.cached_property
    def _series(self):
        """Cosine coefficients of rho(x(theta)) h sin(theta) per component;
        the number of Chebyshev points doubles until the tail is negligible."""
        out = []
        for lo, hi in self._support:
            m = 256
            while True:
                th = np.pi * (np.arange(m) + 0.5) / m
                f = self.density(lo + (hi - lo) * (1 - np.cos(th)) / 2) * (hi - lo) / 2 * np.sin(th)
                coef = fft.dct(f, type=2) / m
                if np.abs(coef[-m // 8:]).max() <= 1e-13 * abs(coef[0]) or m >= 2**14:
                    break
                m *= 2
            out.append(coef)
        mass = sum(c[0] * np.pi / 2 for c in out) + sum(m for _, m in self.atoms())
        if abs(mass - 1) > 1e-8:
            raise ConvergenceError(
                f"total mass {mass:.12g} != 1: support detection or density failed "
                f"(edges {self._support}, atoms {self.atoms()})")
        return out

    # --- spectral functionals ---
    def integrate(self, phi, phi0=None, *, rtol=1e-10, atol=0.0) -> np.ndarray:
        """``int phi dmu`` for ``phi`` analytic near the continuous support.

        ``phi`` maps a 1-D array of (complex) points to an array of shape
        ``(..., len(points))``; the result has shape ``(...)``, so
        ``phi = lambda x: x * np.exp(-2 * t[:, None] * x)`` gives a whole curve.
        Atoms contribute ``mass * phi(location)``; give ``phi0`` (the value at 0)
        when ``phi`` has a removable singularity there (e.g.
        ``(1 - exp(-t x))^2 / x``).  The continuous part is
        ``-(1/2 pi i) oint phi (g - atom poles) dz`` on an ellipse around each
        component that avoids the other components, the atoms and 0, by the
        trapezoid rule (error ~ rho^-N for ellipse parameter rho): N doubles until
        two estimates agree to ``rtol * |I| + atol``.  If rounding in the sum
        (``phi`` varying over many orders of magnitude, e.g. ``exp(-t x)`` with
        ``t * width >> 1``) could exceed that, the ellipse is drawn closer to the
        support.  Raises :class:`ConvergenceError` when no contour meets the
        tolerance.
        """
        atoms = self.atoms()
        total = 0.0
        for loc, m in atoms:
            if loc == 0.0 and phi0 is not None:
                val = np.asarray(phi0, dtype=float)
            else:
                val = np.asarray(phi(np.array([loc], dtype=float)))[..., 0]
            if not np.all(np.isfinite(val)):
                raise ValueError(f"phi is not finite at the atom {loc:g}; pass phi0=phi({loc:g})")
            total = total + m * np.real(val)
        comps = self._support
        for j, (lo, hi) in enumerate(comps):
            others = [v for i, c in enumerate(comps) if i != j for v in c]
            others += [v for v, _ in atoms if not lo <= v <= hi] + ([0.0] if not lo <= 0 <= hi else [])
            gap = min([abs(v - lo) if v < lo else abs(v - hi) for v in others], default=np.inf)
            total = total + self._contour(phi, lo, hi, min((hi - lo) / 2, gap / 2), rtol, atol)
        return np.asarray(total)

    def _contour(self, phi, lo, hi, delta, rtol, atol):
        c, h = (lo + hi) / 2, (hi - lo) / 2
        atoms = self.atoms()
        for _ in range(8):
            kappa = 1 + delta / h
            rho = kappa + math.sqrt(kappa**2 - 1)
            prev, n = None, 64
            while n <= 2**15:
                w = rho * np.exp(2j * np.pi * (np.arange(n) + 0.5) / n)
                zeta, dzeta = c + h * (w + 1 / w) / 2, 1j * h * (w - 1 / w) / 2
                g = self._g(zeta[: n // 2])
                g = np.concatenate([g, g[::-1].conj()])   # the lower half by symmetry
                g = g - sum(m / (loc - zeta) for loc, m in atoms)
                terms = np.asarray(phi(zeta)) * g * dzeta
                val = np.real(-terms.sum(-1) / (1j * n))
                if prev is not None and np.all(np.abs(val - prev) <= rtol * np.abs(val) + atol):
                    break
                prev, n = val, 2 * n
            else:
                raise ConvergenceError(f"contour on [{lo:.6g}, {hi:.6g}]: no convergence "
                                       f"with {n // 2} nodes")
            rounding = 1e-15 * np.abs(terms).sum(-1) / n
            if np.all(rounding <= 0.1 * (rtol * np.abs(val) + atol)):
                return val
            delta /= 16
        raise ConvergenceError(f"contour on [{lo:.6g}, {hi:.6g}]: phi varies too much "
                               "for the requested rtol; pass a larger atol")


def _trig_sum(trig, theta, k, weights):
    """sum_k weights[k] trig(k theta), in blocks (memory ~ 2^22 numbers)."""
    theta = np.asarray(theta, dtype=float)
    flat = theta.ravel()
    step = max(1, 2**22 // k.size)
    return np.concatenate([trig(flat[i:i + step, None] * k) @ weights
                           for i in range(0, flat.size, step)] or [np.zeros(0)]).reshape(theta.shape)


def _series_integral(coef, theta):
    """int_0^theta of the cosine series c_0/2 + sum_k c_k cos(k theta)."""
    k = np.arange(1, coef.size)
    return coef[0] * np.asarray(theta) / 2 + _trig_sum(np.sin, theta, k, coef[1:] / k)


def _series_inverse(coef, target):
    """theta in [0, pi] with _series_integral(coef, theta) = target (monotone):
    interpolation in a table, then safeguarded Newton steps."""
    table = np.linspace(0, np.pi, 4 * coef.size + 1)
    vals = np.maximum.accumulate(_series_integral(coef, table))
    th = np.interp(target, vals, table)
    for _ in range(3):
        f = _trig_sum(np.cos, th, np.arange(coef.size), coef) - coef[0] / 2
        step = (_series_integral(coef, th) - target) / np.where(f > 0, f, np.inf)
        th = np.clip(th - step, 0, np.pi)
    return th


# --- building laws ----------------------------------------------------------------

def dirac(c: float = 1.0) -> Law:
    """The point mass at ``c`` (the law of ``c I``)."""
    return Law(_Base("dirac", float(c)))


def marchenko_pastur(ratio: float, scale: float = 1.0) -> Law:
    """Marchenko-Pastur law of ``scale * X X^T / N`` (``X`` is ``p x N`` i.i.d.
    N(0, 1), ``ratio = p / N``, both dimensions to infinity): mean ``scale``,
    support ``scale * (1 -+ sqrt(ratio))^2`` and an atom ``1 - 1/ratio`` at 0
    when ``ratio > 1``."""
    if not ratio > 0 or not scale > 0:
        raise ValueError(f"Marchenko-Pastur needs ratio > 0 and scale > 0, got {ratio}, {scale}")
    return Law(_Base("mp", float(ratio), (0.0, float(scale))))


def compress(law: Law, lam: float) -> Law:
    """Law of ``G^T A G / m`` for ``A`` (``p x p``) with law ``law`` and ``G``
    (``p x m``) i.i.d. N(0, 1), ``lam = p / m``: ``psi_B(z) = lam psi_A(z (1 + psi_B(z)))``.
    Written in the ``m x m`` frame: a step with ``lam < 1`` creates an atom at 0."""
    if not lam > 0:
        raise ValueError(f"compression needs lam > 0, got {lam}")
    return Law(law.base, law.steps + ((float(lam), 1.0, 0.0),))


def affine(law: Law, a: float, b: float = 0.0) -> Law:
    """Law of ``a X + b`` (``a > 0``): ``g_{aX+b}(z) = g_X((z - b)/a) / a``."""
    if not a > 0:
        raise ValueError(f"affine maps need a > 0, got {a}")
    if not law.steps:
        return Law(dataclasses.replace(law.base, poly=(a * law.base.poly[0] + b,
                                                      *(a * p for p in law.base.poly[1:]))))
    lam, a0, b0 = law.steps[-1]
    return Law(law.base, law.steps[:-1] + ((lam, a * a0, a * b0 + b),))


def scale(law: Law, c: float) -> Law:
    """Law of ``c X``: ``psi_{cX}(z) = psi_X(c z)``."""
    return affine(law, c, 0.0)


def polynomial(law: Law, coeffs) -> Law:
    """Law of ``p(X)``, ``p(x) = sum_i coeffs[i] x^i`` (push-forward), for a
    closed-form ``law`` (no compression yet) and a composite degree <= 2; used
    for K=V tying, ``beta^2 (n/d_K) W'^2 + alpha^2 W'``.  ``g_{p(X)}(z)`` sums
    ``g_X(r) / p'(r)`` over the roots of ``p(r) = z``."""
    if law.steps:
        raise NotImplementedError("polynomial push-forward of a compressed law")
    comp = npoly.polyzero
    for c in np.asarray(coeffs, dtype=float)[::-1]:          # Horner: q(p(x))
        comp = npoly.polyadd(npoly.polymul(comp, law.base.poly), [c])
    comp = np.trim_zeros(np.asarray(comp, dtype=float), "b")
    if not 2 <= comp.size <= 3:
        raise NotImplementedError(f"push-forward of composite degree {comp.size - 1}")
    return Law(dataclasses.replace(law.base, poly=tuple(float(c) for c in comp)))


# --- distances between an empirical spectrum and a law -------------------------------

def _snap(eigs, law, atom_tol):
    x = np.sort(np.asarray(eigs, dtype=float).ravel())
    for loc, _ in law.atoms():
        x[np.abs(x - loc) <= atom_tol * law.sigma] = loc
    return np.sort(x)


def w1_to_law(eigs, law: Law, atom_tol: float = 1e-8) -> float:
    """Wasserstein-1 distance ``int |F_n - F| dx`` between the empirical law of
    ``eigs`` and ``law``.  Eigenvalues within ``atom_tol * sigma`` of an atom
    are moved onto it (rounding turns exact zeros into +-1e-14).  ``F`` is
    linear between breakpoints (eigenvalues, edges, atoms and 2,048 Chebyshev
    points per component), on which ``int |c - F|`` is exact."""
    x = _snap(eigs, law, atom_tol)
    pts = [x, np.array([v for c in law.edges() for v in c] + [loc for loc, _ in law.atoms()]),
           law.grid(2048 * max(1, len(law.edges())))]
    grid = np.unique(np.concatenate(pts))
    atoms = law.atoms()
    cont = law.cdf(grid) - sum(m * (grid >= loc) for loc, m in atoms)   # continuous part
    jump = sum(m * (grid >= loc) for loc, m in atoms)                    # atoms <= left end
    c = np.searchsorted(x, grid[:-1], side="right") / x.size - jump[:-1]
    du, dv = cont[:-1] - c, cont[1:] - c
    width = np.diff(grid)
    same = du * dv >= 0
    area = np.where(same, (np.abs(du) + np.abs(dv)) / 2,
                    (du**2 + dv**2) / (2 * np.where(same, 1, np.abs(du) + np.abs(dv))))
    return float(np.sum(width * area))


def ks_to_law(eigs, law: Law, atom_tol: float = 1e-8) -> float:
    """Kolmogorov-Smirnov distance ``sup_x |F_n(x) - F(x)|`` (left and right
    limits at every eigenvalue and atom); ``atom_tol`` as in :func:`w1_to_law`."""
    x = _snap(eigs, law, atom_tol)
    pts = np.unique(np.concatenate([x, [loc for loc, _ in law.atoms()]]))
    right = law.cdf(pts)
    left = right - sum(m * (pts == loc) for loc, m in law.atoms())
    fn_right = np.searchsorted(x, pts, side="right") / x.size
    fn_left = np.searchsorted(x, pts, side="left") / x.size
    return float(max(np.abs(fn_right - right).max(), np.abs(fn_left - left).max()))
