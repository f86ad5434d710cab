"""The support: exact edges of the continuous part of a chain's law.

Outside the support every level of the chain is real, and the chain runs
*outwards* in closed form from the point ``t`` of the bottom law,
``p = q (1 - lam) - lam q^2 g_in(q)`` (Silverstein and Choi 1995)
(:func:`outward`).  ``t`` maps into the complement of the support exactly when
every level's point increases with ``t`` (:func:`scan`); the boundaries of
that set, found on a dense grid (:func:`segment_grid`) and refined by
bisection, map to the edges, and each candidate interval between edges is
classified by ``Im g`` at its midpoint (:func:`support_components`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .closed_forms import ClosedForm, g_base
from .solver import LawError, chunked

__all__ = ["support_components", "outward", "scan", "segment_grid"]


def outward(t: jax.Array, theta: jax.Array, st: jax.Array, key: tuple[str, int]) -> tuple[jax.Array, jax.Array]:
    """Real points of every level when the bottom law sits at real t
    (outside its support): the chain run outwards in closed form.

    ``t`` is a real scalar, ``theta`` and ``key`` describe the bottom law and
    ``st`` (shape ``(K, 6)``) the compressions, as in
    :func:`~gelib.freeprob.solver.residual_terms`.  Returns the outer point
    (a scalar) and the point of every level, shape ``(K,)``."""
    q = t + 0j
    g = g_base(key, q, theta)
    ps = []
    for k in range(st.shape[0]):
        lam, a, b = st[k, 0], st[k, 1], st[k, 2]
        p = q * (1 - lam) - lam * q * q * g
        ps.append(p.real)
        g, q = -1.0 / (a * q), a * p + b
    return q.real, jnp.stack(ps)


@functools.partial(jax.jit, static_argnames="key")
def scan(t: jax.Array, theta: jax.Array, st: jax.Array, key: tuple[str, int]) -> tuple[jax.Array, jax.Array]:
    """Outer point x(t) and whether t maps into the complement of the support
    (every level increasing in t), vectorised: ``t`` has shape ``(m,)`` and so
    have both results (the second boolean); the other arguments as in
    :func:`outward`."""

    def one(t):
        (x, _), (_, dp) = jax.jvp(lambda t: outward(t, theta, st, key), (t,), (1.0,))
        return x, jnp.all(dp > 0) & jnp.isfinite(x)

    return jax.vmap(one)(t)


def segment_grid(lo: float, hi: float, scale: float) -> np.ndarray:
    """Points of (lo, hi), geometric towards each finite end (down to 1e-13 of
    its value, or 1e-200 scale at 0, where hard edges sit) and uniform inside.

    One end may be infinite: the geometric points of the finite end then
    reach ``1e13 scale`` away from it.
    Returns the sorted points, shape ``(k,)``."""
    pts = []
    for end, sign, other in ((lo, 1, hi), (hi, -1, lo)):
        if np.isfinite(end):
            span = abs(other - end) / 2 if np.isfinite(other) else 1e13 * scale
            pts.append(end + sign * np.geomspace(1e-13 * abs(end) or 1e-200 * scale, span, 3000))
    if np.isfinite(lo) and np.isfinite(hi):
        pts.append(np.linspace(lo, hi, 4002)[1:-1])
    return np.unique(np.concatenate(pts))


def support_components(
    base: ClosedForm,
    steps: tuple[tuple[float, float, float], ...],
    radius: float,
    sigma: float,
    stieltjes: Callable[[np.ndarray], np.ndarray],
    continuous_mass: float = 1.0,
) -> list[tuple[float, float]]:
    """Components ``[(left, right), ...]`` of the continuous part of the law
    ``(base, steps)``, from the exact critical values of the outward map (see
    the package docstring, :mod:`gelib.freeprob`).  ``radius`` bounds the
    support, ``sigma`` is the law's scale, ``stieltjes`` maps real points
    (shape ``(m,)``) to ``g(x + i0)`` (used to classify the intervals between
    candidate edges), ``continuous_mass`` is the mass the atoms leave (the
    threshold of that classification is proportional to it below 1 %, so that
    a continuous part of small mass spread far is not taken for a gap).

    Raises :class:`~gelib.freeprob.LawError` when no component is found although
    the atoms leave some mass (never an empty support for a law with a
    continuous part)."""
    comps, atoms = base.support()
    if not steps:
        return comps
    st = np.array(steps, dtype=float)
    theta, key = jnp.asarray(base.theta), base.key
    # t-grid on every interval of R outside the base support, dense near the ends
    sing = sorted({v for c in comps for v in c} | {loc for loc, _ in atoms})
    scale = max(abs(v) for v in sing) or 1.0
    segs = [segment_grid(-np.inf, sing[0], scale), segment_grid(sing[-1], np.inf, scale)]
    segs += [
        segment_grid(lo, hi, scale)
        for lo, hi in zip(sing[:-1], sing[1:])
        if not any(c0 <= lo and hi <= c1 for c0, c1 in comps)
    ]
    seg_id = np.concatenate([np.full(s.size, i) for i, s in enumerate(segs)])
    t = np.concatenate(segs)
    run = functools.partial(scan, theta=theta, st=jnp.asarray(st), key=key)
    _, inside = chunked(run, t, fill=(t[0],))
    cut = np.flatnonzero((inside[1:] != inside[:-1]) & (seg_id[1:] == seg_id[:-1]))
    t_in = np.where(inside[cut], t[cut], t[cut + 1])
    t_out = np.where(inside[cut], t[cut + 1], t[cut])
    for _ in range(80):  # bisection to the boundary
        mid = (t_in + t_out) / 2
        (ok,) = chunked(lambda t: run(t)[1:], mid, fill=(0.0,))
        t_in, t_out = np.where(ok, mid, t_in), np.where(ok, t_out, mid)
    # ... and the ends of the t-intervals (a hard edge of the bottom law maps to an edge)
    ends = np.flatnonzero(np.diff(seg_id, prepend=-1, append=len(segs)))
    ends = np.concatenate([ends[:-1], ends[1:] - 1])
    t_in = np.concatenate([t_in, t[ends[inside[ends]]]])
    cand = np.sort(chunked(run, t_in, fill=(0.0,))[0])
    cand = cand[np.abs(cand) <= 1.01 * radius]
    cand[np.abs(cand) <= 1e-14 * sigma] = 0.0  # hard edges at 0
    if cand.size:
        cand = cand[np.concatenate([[True], np.diff(cand) > 1e-13 * sigma])]
    comps = []
    if cand.size > 1:
        mids = (cand[1:] + cand[:-1]) / 2
        is_support = stieltjes(mids).imag > 1e-9 / sigma * min(1.0, 100 * continuous_mass)
        for lo, hi, s in zip(cand[:-1], cand[1:], is_support):
            if s and comps and comps[-1][1] == lo:
                comps[-1] = (comps[-1][0], float(hi))
            elif s:
                comps.append((float(lo), float(hi)))
    if not comps and continuous_mass > 1e-12:
        raise LawError(
            f"no support found for the continuous part of mass {continuous_mass:.6g} "
            f"({cand.size} candidate edges within the bound {radius:.6g}): the law is beyond what the "
            "support scan resolves in float64"
        )
    return comps
