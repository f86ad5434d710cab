"""Limit spectral laws built by free compression: exact moments, fast densities.

A :class:`Law` is a compactly supported probability measure on the real line,
built from a closed-form law (a point mass, or Marchenko-Pastur, or the image
of either under a polynomial of degree <= 2) by

* compressions ``B = G^T A G / m``: ``A`` is ``p x p`` with law ``mu_A``,
  ``G`` is ``p x m`` with i.i.d. N(0, 1) entries, ``p, m -> infinity`` with
  ``lam = p / m`` fixed; the law of ``B`` solves
  ``psi_B(z) = lam psi_A(z (1 + psi_B(z)))`` (the compression rule, derived in
  the book's appendix "Conventions and derivations", ``book/conventions.md``,
  section "The limit law"),
* affine maps ``x -> a x + b`` (``a > 0``).

This is the structure of the Gaussian-equivalent limit laws of Hayase and
Karakida (2026), Table A.4 and Figure D.1; :mod:`gelib.attention_law` assembles them
for an attention layer.

Conventions (Tables A.4-A.5): ``psi(z) = int z x / (1 - z x) dmu = sum_k m_k z^k``,
``chi = psi^{-1}``, ``S(u) = chi(u) (1 + u) / u``, Stieltjes transform
``g(z) = int dmu(x) / (x - z) = -(1 + psi(1/z)) / z`` (``Im g > 0`` on the
upper half plane), density ``Im g(x + i0) / pi``.

The public names, all imported from here (``from gelib.freeprob import Law,
marchenko_pastur``): the law, :class:`Law`; the builders :func:`dirac`,
:func:`marchenko_pastur`, :func:`compress`, :func:`affine`, :func:`scale`,
:func:`polynomial`; the distances :func:`w1_to_law`, :func:`ks_to_law`,
:func:`distances_to_law` (per seed), :func:`shape_to_law` (per seed, split into the mean
shift and the shape part, a :class:`ToLaw`) and :func:`law_w1` (between two laws); the
S-transform's Taylor series :func:`s_transform_series`; the closed-form
oracles :class:`Oracle`, :func:`fuss_catalan`, :func:`mp_product`,
:func:`mp_product_moments` and :func:`oracle_errors` (products of
Marchenko-Pastur laws, to check the solver against); and the errors :class:`LawError` (a number that
cannot be computed correctly in float64: an overflow, a truncated support)
and its case :class:`ConvergenceError` (a numerical method that missed its
tolerance).  The modules, one job each:

* :mod:`~gelib.freeprob.moments`: exact moment algebra (compression, affine maps, S-series);
* :mod:`~gelib.freeprob.closed_forms`: the closed-form bottom laws;
* :mod:`~gelib.freeprob.solver`: Newton's method for the Stieltjes transform;
* :mod:`~gelib.freeprob.support`: the support edges (the outward scan);
* :mod:`~gelib.freeprob.quadrature`: graded panels, distribution function, contours;
* :mod:`~gelib.freeprob.law`: the :class:`Law` facade;
* :mod:`~gelib.freeprob.builders`: the builders (one object per equal law);
* :mod:`~gelib.freeprob.distances`: W1 and KS between a spectrum and a law, W1 between two laws;
* :mod:`~gelib.freeprob.oracles`: closed forms independent of the solver (Fuss-Catalan, ``MP(a) ⊠ MP(b)``).

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

import jax

jax.config.update("jax_enable_x64", True)

from .builders import affine, compress, dirac, marchenko_pastur, polynomial, scale  # noqa: E402
from .distances import ToLaw, distances_to_law, ks_to_law, law_w1, shape_to_law, w1_to_law  # noqa: E402
from .law import Law  # noqa: E402
from .moments import s_transform_series  # noqa: E402
from .oracles import Oracle, fuss_catalan, mp_product, mp_product_moments, oracle_errors  # noqa: E402
from .solver import ConvergenceError, LawError  # noqa: E402

__all__ = [
    "LawError",
    "ConvergenceError",
    "Law",
    "dirac",
    "marchenko_pastur",
    "compress",
    "scale",
    "affine",
    "polynomial",
    "w1_to_law",
    "ks_to_law",
    "distances_to_law",
    "ToLaw",
    "shape_to_law",
    "law_w1",
    "s_transform_series",
    "Oracle",
    "fuss_catalan",
    "mp_product",
    "mp_product_moments",
    "oracle_errors",
]
