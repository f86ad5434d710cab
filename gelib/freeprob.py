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
* **Stieltjes transform** at ``z``: one unknown per compression, the
  Stieltjes transform of that compressed law at its own point ``p`` with its
  atom at 0 split off (``g = y - w / p``, so ``Im g`` keeps full relative
  precision next to an atom); affine maps only move the point.  With
  ``q = -1/g`` the compression reads ``p g + 1 - lam + lam g_in(q) / g = 0``
  (Silverstein's form), ``g_in`` being the next unknown or, at the bottom, the
  closed form.  The coupled system (1-3 unknowns for attention) is solved by
  Newton's method with the exact Jacobian (JAX forward mode), by continuation:
  ``Im z`` starts at ``10 sigma`` and shrinks by 0.3 per Newton step (with the
  tangent predictor ``dy/dz``; points that fail are redone with 0.6, then
  0.85) down to the target, then 8 Newton steps at the target itself;
  ``Im z = 0`` gives the boundary value, i.e. exact densities, not
  Poisson-smoothed ones.  For real targets the continuation first goes
  below ``min(6e-13 sigma, 1e-4 |x|)``, so that points next to a hard edge at
  0 (down to ``x ~ 1e-30``) are reached.  A guard keeps every unknown in the
  upper half plane, where the Stieltjes transform of every level lives.
  Every point's residual (relative to the size of the equation's terms) is
  checked; a point that misses 1e-10 raises :class:`ConvergenceError`.  Far
  from the support (``|z| > 4`` times a bound on it) the moment series is used.
  Why this method: a damped fixed-point iteration needs thousands of steps
  near the edges and, after a step with an atom at zero, may settle on the
  false root ``g -> 0``; selecting roots of the algebraic equation becomes
  fragile as the chain deepens.  Newton with continuation has neither
  problem, converges quadratically, and vectorises over points
  (``jax.jit`` + ``vmap``): about 35 Newton steps per point.
* **Support edges** are exact critical values.  On the real axis outside the
  support every level is real, and the chain can be run *outwards* in closed
  form from the point ``t`` of the bottom law:
  ``p = q (1 - lam) - lam q^2 g_in(q)`` (Silverstein and Choi 1995).  ``x(t)``
  is the outer point; ``t`` belongs to the complement of the support exactly
  when every level's point increases with ``t``.  The boundaries of that set
  (found on a dense ``t`` grid, refined by bisection to machine precision) are
  the points where the Jacobian of the system is singular; their images are
  the edges.  So is the image of a hard edge of the bottom law at 0 (K=V tying
  with ``d_K = n``), reached at the end of a ``t`` interval.  Each candidate
  interval between edges is then classified by ``Im g`` at its midpoint, and
  the total mass is checked to be 1.
* **Atoms** sit only at zero after a compression (the rank argument: mass
  ``max(0, 1 - lam (1 - w_0))``; nonzero atoms do not survive a compression,
  Bercovici and Voiculescu 1998); affine maps move them, polynomials map them.
* **Distribution function**: edges are square-root (soft) or, at 0 after
  square steps (``lam = 1``), ``x^-1/2``, ``x^-2/3``, ... (hard).  Panels halve
  towards each edge (down to ``1e-30`` of the width at 0) and are split until
  the Legendre series of the density on each (16 Gauss-Legendre points) has
  converged; the series are integrated exactly and the last sliver at an
  edge is a fitted power law.  The total mass is checked to be 1 (to 1e-9).
* **Spectral functionals** ``int phi dmu``: Gauss-Legendre on the same graded
  panels (positive weights, cached densities: fast, and robust for ``phi``
  like ``exp(-t x)`` with large ``t``), or, for analytic ``phi``, the
  trapezoid rule on an ellipse around each component (geometric convergence;
  an independent path through the solver, off the real axis); atoms are added
  as ``mass * phi(location)``.  See :meth:`Law.integrate`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import weakref

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial import legendre
from numpy.polynomial import polynomial as npoly

jax.config.update("jax_enable_x64", True)

__all__ = [
    "ConvergenceError", "Law", "dirac", "marchenko_pastur", "compress", "scale",
    "affine", "polynomial", "w1_to_law", "ks_to_law",
]

_CHUNK = 256               # points per solver call (one compilation per law shape)
_STEPS = (0.3, 0.6, 0.85)  # continuation: Im z shrinks by this factor per Newton step;
#                            points that fail are solved again with the next factor
_POLISH = 8                # Newton steps at the target, after the continuation
_ETA_END = 6e-14           # last level for real targets: 6e-13 sigma (or 1e-4 |x|)
_RES_TOL = 1e-10           # accepted residual, relative to the size of its terms
_TINY = 1e-150             # Im z used to take closed forms' boundary values
_GL_X, _GL_W = legendre.leggauss(16)   # nodes per panel of the distribution function
_LEGENDRE = legendre.legvander(_GL_X, 15) * (np.arange(16) + 0.5)   # values -> coefficients


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


def _inner_reg(kind, z, c):
    """``(reg, w)`` for ``delta_c`` or ``MP(c)``: ``g(z) = reg(z) - w / z``, where
    ``w`` is the atom at 0 and ``reg`` is computed without cancellation near 0
    (so ``Im g`` keeps full relative precision next to an atom)."""
    if kind == "dirac":
        return jnp.where(c == 0, 0.0, 1.0 / (c - z)), jnp.where(c == 0, 1.0, 0.0)
    u, a, b = z - 1 - c, (1 - jnp.sqrt(c)) ** 2, (1 + jnp.sqrt(c)) ** 2
    s = u * jnp.sqrt((z - a) * (z - b) / u**2)   # sqrt((z-a)(z-b)), cut exactly on [a, b]
    g = 2.0 / (1 - c - z - s)                    # the root with g ~ -1/z
    with_atom = ((z - 2 - 2 * c) / (s - c + 1) - 1) / (2 * c)   # g + (1 - 1/c) / z
    return jnp.where(c > 1, with_atom, g), jnp.where(c > 1, 1 - 1 / c, 0.0)


def _base_reg(key, z, theta):
    """``(reg, w)`` for the law of ``p(X)``: ``g_{p(X)}(z)`` sums ``g_X(r) / p'(r)``
    over the roots of ``p(r) = z`` (no root selection needed); an atom of X at
    0 moves to ``p(0)``."""
    kind, npar = key
    c, p = theta[0], theta[1:]
    if npar == 2:
        roots, slopes = [(z - p[0]) / p[1]], [p[1]]
    else:
        disc = jnp.sqrt(p[1] ** 2 - 4 * p[2] * (p[0] - z))
        q = -0.5 * (p[1] + jnp.where((p[1] * disc).real >= 0, disc, -disc))
        roots = [q / p[2], (p[0] - z) / q]
        slopes = [2 * p[2] * r + p[1] for r in roots]
    parts = [_inner_reg(kind, r, c) for r in roots]
    w = parts[0][1]
    reg = sum(r / d for (r, _), d in zip(parts, slopes))
    return reg + jnp.where(p[0] != 0, w / (p[0] - z), 0.0), jnp.where(p[0] == 0, w, 0.0)


def _g_base(key, z, theta):
    reg, w = _base_reg(key, z, theta)
    return reg - w / z


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

def _residual_terms(y, z, theta, st, key):
    """Terms of the chain's equations at outer point z, shape (K, 3); the
    residual is their sum.  Step k (innermost first) has constants
    ``st[k] = (lam, a, b, c, w, w_shift)``: ``L_k = a compress(L_{k-1}, lam) + b``,
    atom ``w = max(c, 0)`` at 0 with ``c = 1 - lam (1 - w_in)``.  The unknown
    ``y[k]`` is the regular part of ``g`` of ``compress(L_{k-1}, lam)`` at its own
    point ``p``: ``g = y - w / p``.  With ``q = -1/g`` the inner point and
    ``reg_in`` the regular part of the inner law there, the compression reads
    ``p g + c + lam reg_in / g = 0`` (Silverstein's form; divided by ``p``
    when ``w > 0``, where every term vanishes with ``p``)."""
    K = st.shape[0]
    p = (z - st[K - 1, 2]) / st[K - 1, 1]
    terms = [None] * K
    for k in range(K - 1, -1, -1):
        lam, c, w = st[k, 0], st[k, 3], st[k, 4]
        pg = p * y[k] - w
        q = -p / pg
        if k:
            p_in = (q - st[k - 1, 2]) / st[k - 1, 1]
            reg = (y[k - 1] - st[k, 5] / p_in) / st[k - 1, 1]
        else:
            reg = _base_reg(key, q, theta)[0]
        atom = w > 0
        terms[k] = jnp.stack([jnp.where(atom, y[k], p * y[k]), jnp.where(atom, 0.0, c),
                              lam * reg * jnp.where(atom, 1.0, p) / pg])
        if k:
            p = p_in
    return jnp.stack(terms)


def _small_solve(a, b):
    """Solve a x = b (``a`` K x K, ``b`` K x m) by Gaussian elimination, unrolled
    and without pivoting (the chain's Jacobian is dominated by its diagonal,
    ``d(p y)/dy = p``; a failure shows in the residual check): much faster than
    a batched LAPACK call for K <= 4."""
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


def _solve_point(x, eta, theta, st, means, eta0, step, key):
    K = st.shape[0]

    def terms(v):                            # v = (y_0 .. y_{K-1}, z)
        t = _residual_terms(v[:K], v[K], theta, st, key)
        return t.sum(-1), t

    jac_terms = jax.jacfwd(terms, holomorphic=True, has_aux=True)

    # continuation: Im z from eta0 = 10 sigma down by the factor `step` per Newton step
    # to eta_end; for a real target, eta_end is far below the distance to 0 (hard edges)
    eta_end = jnp.where(eta > 0, eta, jnp.minimum(_ETA_END * eta0, 1e-4 * jnp.abs(x)))
    eta_end = jnp.maximum(eta_end, 1e-300)
    nsteps = jnp.ceil(jnp.log(jnp.maximum(eta0 / eta_end, 1.0)) / -jnp.log(step))

    def z_at(i):
        return x + 1j * jnp.where(i < nsteps, jnp.maximum(eta_end, eta0 * step ** (i + 1)), eta)

    ys, p = [None] * K, (x + 1j * jnp.maximum(eta, eta0) - st[K - 1, 2]) / st[K - 1, 1]
    for k in range(K - 1, -1, -1):           # start: g ~ -1/(z - mean) at every level
        g = -1.0 / (p - means[k])
        ys[k] = g + st[k, 4] / p
        if k:
            p = (-1.0 / g - st[k - 1, 2]) / st[k - 1, 1]

    def newton(carry):
        i, y = carry[0], carry[1]
        z = z_at(i)
        jac, t = jac_terms(jnp.append(y, z))
        sol = _small_solve(jac[:, :K], -jnp.stack([t.sum(-1), jac[:, K]], 1))
        # Newton step at z, then the tangent predictor (dy/dz) (z' - z) to the next level
        y1 = y + sol[:, 0] + (z_at(i + 1) - z) * sol[:, 1]
        # guard: never leave the upper half plane (at most a 10x drop of Im y)
        y1 = jnp.where(y1.imag > 0.1 * y.imag, y1, y1.real + 0.1j * y.imag)
        # residual relative to the size of its terms, and dy/dz, before this step
        res = jnp.max(jnp.abs(t.sum(-1)) / (jnp.abs(t).sum(-1) + 1e-300))
        return i + 1, y1, res, sol[:, 1]

    _, y, res, dy = jax.lax.while_loop(lambda c: c[0] < nsteps + _POLISH, newton,
                                       (0, jnp.stack(ys), jnp.float64(jnp.inf), jnp.zeros(K, complex)))
    res = res + jnp.where(jnp.all(y.imag >= 0), 0.0, jnp.inf)
    z = x + 1j * eta
    a, w = st[K - 1, 1], st[K - 1, 4]
    p = (z - st[K - 1, 2]) / a
    return (y[K - 1] - w / p) / a, (dy[K - 1] + w / (a * p**2)) / a, res


@functools.partial(jax.jit, static_argnames="key")
def _solve(x, eta, theta, st, means, eta0, step, key):
    """g, g' and residual at the points x + i eta (eta >= 0), vectorised."""
    if st.shape[0] == 0:
        z = x + 1j * jnp.maximum(eta, _TINY * eta0)
        g, dg = jax.jvp(lambda z: _g_base(key, z, theta), (z,), (jnp.ones_like(z),))
        return g, dg, jnp.zeros_like(x)
    point = functools.partial(_solve_point, key=key)
    return jax.vmap(point, in_axes=(0, 0, None, None, None, None, None))(
        x, eta, theta, st, means, eta0, step)


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


def _segment_grid(lo, hi, scale):
    """Points of (lo, hi), geometric towards each finite end (down to 1e-13 of
    its value, or 1e-200 scale at 0, where hard edges sit) and uniform inside."""
    pts = []
    for end, sign, other in ((lo, 1, hi), (hi, -1, lo)):
        if np.isfinite(end):
            span = abs(other - end) / 2 if np.isfinite(other) else 1e13 * scale
            pts.append(end + sign * np.geomspace(1e-13 * abs(end) or 1e-200 * scale, span, 3000))
    if np.isfinite(lo) and np.isfinite(hi):
        pts.append(np.linspace(lo, hi, 4002)[1:-1])
    return np.unique(np.concatenate(pts))


def _chunked(fn, *arrays, fill):
    """Apply fn to fixed-size chunks of 1-D arrays (one compilation per shape)."""
    n = arrays[0].shape[0]
    pad = -n % _CHUNK if n else _CHUNK
    arrays = [np.concatenate([a, np.full(pad, f, a.dtype)]) for a, f in zip(arrays, fill)]
    outs = [fn(*(a[i:i + _CHUNK] for a in arrays)) for i in range(0, n + pad, _CHUNK)]
    return [np.concatenate([np.asarray(o[j]) for o in outs])[:n] for j in range(len(outs[0]))]


# --- the law -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Law:
    """A probability law on the real line: ``base`` (closed form), then
    ``steps[k] = (lam, a, b)``, innermost first:
    ``L_k = a * compress(L_{k-1}, lam) + b``.

    Build laws with :func:`marchenko_pastur`, :func:`dirac`, :func:`compress`,
    :func:`scale`, :func:`affine` and :func:`polynomial`, not directly (equal
    laws are then one object).  Exact: :meth:`moments`, :meth:`atoms`.  By the
    solver: :meth:`stieltjes`, :meth:`psi`, :meth:`chi`, :meth:`s_transform`,
    :meth:`density`, :meth:`edges`, :meth:`cdf`, :meth:`quantile`,
    :meth:`integrate`.  Inputs and results are numpy arrays; the support and the
    distribution function are computed once per law and cached.
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

    @functools.cached_property
    def radius(self) -> float:
        """A bound on ``|x|`` over the support: ``||G^T A G / m|| <= ||A|| (1 + sqrt(lam))^2``."""
        comps, atoms = self.base.support()
        r = max([abs(v) for c in comps for v in c] + [abs(loc) for loc, _ in atoms])
        for lam, a, b in self.steps:
            r = a * r * (1 + math.sqrt(lam)) ** 2 + abs(b)
        return r

    @functools.cached_property
    def _taylor(self):
        """``(R, t)``, ``t_k = m_k / R^k`` (k = 0 .. 40, ``R`` = :attr:`radius`): the
        series of g at infinity and of psi at 0, used where |z| > 4 R (resp.
        |z| < 1 / (4 R)), error < 4^-40.  Scaled (the moments of ``X / R``, all
        in [-1, 1]) so that laws with large eigenvalues (``e^{beta^2}`` at large
        ``beta``) do not overflow ``m_40``."""
        r = self.radius or 1.0
        return r, np.concatenate([[1.0], scale(self, 1 / r).moments(40)])

    @functools.cached_property
    def _constants(self):
        """Per step: (lam, a, b, c, w, w_shift) for :func:`_residual_terms`, and
        the means of the compressed laws (the solver's starting point)."""
        rows, means = [], []
        w_in = sum(m for loc, m in self.base.support()[1] if loc == 0.0)
        w_shift, mean = 0.0, self.base.moments(1)[0]
        for lam, a, b in self.steps:
            c = 1 - lam * (1 - w_in)
            c = 0.0 if abs(c) < 1e-12 else c
            w = max(c, 0.0)
            rows.append((lam, a, b, c, w, w_shift))
            w_in, w_shift = (w, 0.0) if b == 0 else (0.0, w)   # the atom moves to b
            means.append(lam * mean)
            mean = a * lam * mean + b
        return np.array(rows, dtype=float).reshape(-1, 6), np.array(means)

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
    def _g(self, z, deriv=False, steps=_STEPS):
        """g (and g' if ``deriv``) at complex points of any shape: the moment
        series far away, else the solver (lower half plane by conjugation);
        raises :class:`ConvergenceError` if a point misses the tolerance."""
        z = np.asarray(z, dtype=complex)
        flat = z.ravel()
        g, dg = np.empty(flat.shape, complex), np.empty(flat.shape, complex)
        far = np.abs(flat) > 4 * self.radius            # the moment series is exact there
        r, t = self._taylor
        zf = flat[far]
        q = (r / zf[:, None]) ** np.arange(41)           # g = -(1/z) sum_k t_k (R/z)^k
        g[far], dg[far] = -(q @ t) / zf, (q[:, :40] @ (t[:40] * np.arange(1, 41))) / zf**2
        lower = flat.imag < 0
        w = np.where(lower, flat.conj(), flat)
        st, means = self._constants
        sol = functools.partial(
            _solve, theta=jnp.asarray(self.base.theta), st=jnp.asarray(st),
            means=jnp.asarray(means), eta0=10 * self.sigma, key=self.base.key)
        bad = ~far
        for step in steps:                     # points that fail: smaller steps
            if not bad.any():
                break
            g[bad], dg[bad], res = _chunked(lambda x, e: sol(x, e, step=step), w.real[bad],
                                            w.imag[bad], fill=(w.real[bad][0], 1.0))
            bad[bad] = ~(res <= _RES_TOL)
        if bad.any():
            i = np.flatnonzero(bad)[0]
            raise ConvergenceError(
                f"Stieltjes solver: {bad.sum()} of {bad.size} points missed the residual "
                f"tolerance {_RES_TOL:g} (worst {np.nanmax(np.where(res <= _RES_TOL, 0, res)):.2g}, "
                f"e.g. z = {w[i]:.6g}); this law: {len(self.steps)} compressions")
        g, dg = np.where(lower & ~far, g.conj(), g), np.where(lower & ~far, dg.conj(), dg)
        return (g.reshape(z.shape), dg.reshape(z.shape)) if deriv else g.reshape(z.shape)

    def stieltjes(self, z) -> np.ndarray:
        """``g(z) = int dmu(x) / (x - z)`` at complex points (array of any shape,
        vectorised); real points give the boundary value ``g(x + i0)``."""
        return self._g(z)

    def psi(self, z) -> np.ndarray:
        """``psi(z) = int z x / (1 - z x) dmu = sum_k m_k z^k``."""
        z = np.asarray(z, dtype=complex)
        near = np.abs(z) < 0.25 / self.radius          # the moment series is exact there
        safe = np.where(near, 1.0, z)
        r, t = self._taylor
        series = (r * z[..., None]) ** np.arange(1, 41) @ t[1:]
        return np.where(near, series, -1 - self._g(1 / safe) / safe)

    def chi(self, u, tol=1e-11) -> np.ndarray:
        """Inverse of ``psi`` near 0 (branch with ``chi(u) ~ u / m_1``): Newton on
        ``psi(z) = u`` with continuation in ``u`` (from the series at ``u / 4``);
        defined e.g. for real ``u`` in ``(-(1 - mass at 0), 0)``."""
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
        return np.clip(self._atom_cdf(x) + sum(c.cdf(x) for c in self._components), 0.0, 1.0)

    def _atom_cdf(self, x, closed=True):
        """Mass of the atoms at or below x (``closed=False``: at x only)."""
        return sum((m * ((x >= loc) if closed else (x == loc)) for loc, m in self.atoms()),
                   np.zeros(np.shape(x)))

    def quantile(self, u) -> np.ndarray:
        """Generalised inverse ``inf {x : cdf(x) >= u}`` for u in [0, 1]."""
        shape = np.shape(u)
        u = np.asarray(u, dtype=float).ravel()
        pieces = sorted([(loc, loc, m) for loc, m in self.atoms()]
                        + [(c.lo, c.hi, c.mass) for c in self._components])
        out = np.full(u.shape, pieces[-1][1])
        done = np.zeros(u.shape, bool)
        for lo, hi, _ in pieces:                 # the first piece that reaches u
            here = ~done & (u <= self.cdf(hi) + 1e-14)
            a, b = np.full(here.sum(), lo), np.full(here.sum(), hi)
            for _ in range(0 if lo == hi else 64):   # bisection: cdf is monotone
                mid = (a + b) / 2
                up = self.cdf(mid) >= u[here]
                a, b = np.where(up, a, mid), np.where(up, mid, b)
            out[here] = b
            done |= here
        return out.reshape(shape)

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
        segs = [_segment_grid(-np.inf, sing[0], scale), _segment_grid(sing[-1], np.inf, scale)]
        segs += [_segment_grid(lo, hi, scale) for lo, hi in zip(sing[:-1], sing[1:])
                 if not any(c0 <= lo and hi <= c1 for c0, c1 in comps)]
        seg_id = np.concatenate([np.full(s.size, i) for i, s in enumerate(segs)])
        t = np.concatenate(segs)
        scan = functools.partial(_scan, theta=theta, st=jnp.asarray(st), key=key)
        _, inside = _chunked(scan, t, fill=(t[0],))
        cut = np.flatnonzero((inside[1:] != inside[:-1]) & (seg_id[1:] == seg_id[:-1]))
        t_in = np.where(inside[cut], t[cut], t[cut + 1])
        t_out = np.where(inside[cut], t[cut + 1], t[cut])
        for _ in range(80):                   # bisection to the boundary
            mid = (t_in + t_out) / 2
            (ok,) = _chunked(lambda t: scan(t)[1:], mid, fill=(0.0,))
            t_in, t_out = np.where(ok, mid, t_in), np.where(ok, t_out, mid)
        # ... and the ends of the t-intervals (a hard edge of the bottom law maps to an edge)
        ends = np.flatnonzero(np.diff(seg_id, prepend=-1, append=len(segs)))
        ends = np.concatenate([ends[:-1], ends[1:] - 1])
        t_in = np.concatenate([t_in, t[ends[inside[ends]]]])
        cand = np.sort(_chunked(scan, t_in, fill=(0.0,))[0])
        cand = cand[np.abs(cand) <= 1.01 * self.radius]
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
    def _components(self):
        """The continuous part, component by component, as graded panels (see
        :class:`_Component`), split until the Legendre coefficients of the
        density on every panel have decayed; checks that the total mass is 1."""
        panels = [np.stack([b[:-1], b[1:]], 1) for b in map(lambda c: _panel_breaks(*c), self._support)]
        todo = np.concatenate(panels) if panels else np.zeros((0, 2))
        done = []
        for _ in range(40):
            if not todo.size:
                break
            mid, half = todo.mean(1), (todo[:, 1] - todo[:, 0]) / 2
            rho = self.density(mid[:, None] + half[:, None] * _GL_X)
            coef = (rho * _GL_W) @ _LEGENDRE
            # converged: the last coefficients are 1e-12 of the largest, or the
            # panel's whole possible error (2 half tail) is below 2e-15
            ok = np.abs(coef[:, -3:]).max(1) <= 1e-12 * np.abs(coef).max(1) + 1e-15 / half
            done += [(p, r) for p, r in zip(todo[ok], rho[ok])]
            todo = np.concatenate([np.stack([todo[~ok, 0], mid[~ok]], 1),
                                   np.stack([mid[~ok], todo[~ok, 1]], 1)])
        else:
            raise ConvergenceError("density too rough for the distribution function's panels")
        comps = []
        for lo, hi in self._support:
            mine = sorted((p[0], p[1], r) for p, r in done if lo <= p[0] < hi)
            ends = np.array([p[:2] for p in mine])
            comps.append(_Component(lo, hi, np.append(ends[:, 0], ends[-1, 1]),
                                    np.array([p[2] for p in mine])))
        mass = sum(c.mass for c in comps) + sum(m for _, m in self.atoms())
        if abs(mass - 1) > 1e-9:
            raise ConvergenceError(
                f"total mass {mass:.12g} != 1: support detection or density failed "
                f"(edges {self._support}, atoms {self.atoms()})")
        return comps

    # --- spectral functionals ---
    def integrate(self, phi, phi0=None, *, method="quadrature", rtol=1e-10, atol=0.0) -> np.ndarray:
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
          closer to the support.  Raises :class:`ConvergenceError` when no
          contour meets the tolerance.
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
        if method == "quadrature":
            return np.asarray(total + sum(c.integrate(phi) for c in self._components))
        if method != "contour":
            raise ValueError(f"method must be 'quadrature' or 'contour', got {method!r}")
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


def _panel_breaks(lo, hi):
    """Panel ends on [lo, hi], halving towards both edges: down to 1e-30 of the
    half-width at an edge at 0 (hard edges, density ~ x^-a), else to 1e-12 of
    the edge's value (a square-root edge leaves ~ 1e-18 of mass there)."""
    h = (hi - lo) / 2

    def depth(edge):
        floor = 1e-30 * h if edge == 0 else 1e-12 * abs(edge)
        return max(1, math.ceil(math.log2(h / floor)))

    left = lo + h * 2.0 ** -np.arange(depth(lo), -1, -1)
    right = hi - h * 2.0 ** -np.arange(1, depth(hi) + 1)
    return np.concatenate([left, right])


class _Component:
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
        self.tails = [self._tail(nodes[0] - lo, rho[0], breaks[0] - lo),
                      self._tail(hi - nodes[-1][::-1], rho[-1][::-1], hi - breaks[-1])]
        self.cum = self.tails[0][0] + np.concatenate([[0.0], np.cumsum(self.coef.sum(1))])
        self.mass = self.cum[-1] + self.tails[1][0]
        self.points = np.concatenate([breaks, nodes.ravel()])

    @staticmethod
    def _tail(dist, rho, width):
        """(mass, exponent 1 - a) of the power-law continuation on [0, width]."""
        if rho[0] <= 0 or rho[-1] <= 0 or not dist[-1] > 1.01 * dist[0]:
            return max(rho[0], 0.0) * width, 1.0
        power = 1 + math.log(rho[-1] / rho[0]) / math.log(dist[-1] / dist[0])
        if power <= 0:
            raise ConvergenceError(f"density not integrable at an edge (exponent {power - 1:.3g})")
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


# --- building laws ----------------------------------------------------------------

_LAWS = weakref.WeakValueDictionary()


def _law(base, steps=()):
    """The law (base, steps), shared with any equal law still alive, so that
    e.g. ``output_law(cfg)`` and ``chain(cfg).output`` share their caches."""
    law = Law(base, steps)
    return _LAWS.setdefault(law, law)


def dirac(c: float = 1.0) -> Law:
    """The point mass at ``c`` (the law of ``c I``)."""
    return _law(_Base("dirac", float(c)))


def marchenko_pastur(ratio: float, scale: float = 1.0) -> Law:
    """Marchenko-Pastur law of ``scale * X X^T / N`` (``X`` is ``p x N`` i.i.d.
    N(0, 1), ``ratio = p / N``, both dimensions to infinity): mean ``scale``,
    support ``scale * (1 -+ sqrt(ratio))^2`` and an atom ``1 - 1/ratio`` at 0
    when ``ratio > 1``."""
    if not ratio > 0 or not scale > 0:
        raise ValueError(f"Marchenko-Pastur needs ratio > 0 and scale > 0, got {ratio}, {scale}")
    return _law(_Base("mp", float(ratio), (0.0, float(scale))))


def compress(law: Law, lam: float) -> Law:
    """Law of ``G^T A G / m`` for ``A`` (``p x p``) with law ``law`` and ``G``
    (``p x m``) i.i.d. N(0, 1), ``lam = p / m``: ``psi_B(z) = lam psi_A(z (1 + psi_B(z)))``.
    Written in the ``m x m`` frame: a step with ``lam < 1`` creates an atom at 0."""
    if not lam > 0:
        raise ValueError(f"compression needs lam > 0, got {lam}")
    return _law(law.base, law.steps + ((float(lam), 1.0, 0.0),))


def affine(law: Law, a: float, b: float = 0.0) -> Law:
    """Law of ``a X + b`` (``a > 0``): ``g_{aX+b}(z) = g_X((z - b)/a) / a``."""
    if not a > 0:
        raise ValueError(f"affine maps need a > 0, got {a}")
    if not law.steps:
        poly = (a * law.base.poly[0] + b, *(a * p for p in law.base.poly[1:]))
        return _law(dataclasses.replace(law.base, poly=tuple(map(float, poly))))
    lam, a0, b0 = law.steps[-1]
    return _law(law.base, law.steps[:-1] + ((lam, float(a * a0), float(a * b0 + b)),))


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
    return _law(dataclasses.replace(law.base, poly=tuple(float(c) for c in comp)))


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
    linear between breakpoints (eigenvalues, edges, atoms and the panel points
    of the distribution function), on which ``int |c - F|`` is exact."""
    x = _snap(eigs, law, atom_tol)
    pts = [x, np.array([v for c in law.edges() for v in c] + [loc for loc, _ in law.atoms()])]
    grid = np.unique(np.concatenate(pts + [c.points for c in law._components]))
    jump = law._atom_cdf(grid)                                        # atoms <= left end
    cont = law.cdf(grid) - jump                                       # continuous part
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
    left = right - law._atom_cdf(pts, closed=False)
    fn_right = np.searchsorted(x, pts, side="right") / x.size
    fn_left = np.searchsorted(x, pts, side="left") / x.size
    return float(max(np.abs(fn_right - right).max(), np.abs(fn_left - left).max()))
