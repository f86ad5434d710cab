"""The Newton solver: the Stieltjes transform of a chain of compressions.

One unknown per compression (the regular part of the Stieltjes transform of
that compressed law at its own point), coupled through Silverstein's form of
the compression equation, ``p g + 1 - lam + lam g_in(q) / g = 0`` with
``q = -1/g``.  The system is solved by Newton's method with the exact Jacobian
(JAX forward mode) and continuation in ``Im z``, vectorised over points
(``jax.jit`` + ``vmap``, fixed-size chunks); every point's residual is checked
and points that fail are solved again with smaller continuation steps
(:func:`stieltjes`).  The method, and why, is described in the package
docstring (:mod:`gelib.freeprob`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import cast

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .closed_forms import base_reg, g_base

__all__ = ["LawError", "ConvergenceError", "residual_terms", "stieltjes", "solve", "chunked"]

_CHUNK = 256  # points per solver call (one compilation per law shape)
_STEPS = (0.3, 0.6, 0.85)  # continuation: Im z shrinks by this factor per Newton step;
#                            points that fail are solved again with the next factor
_POLISH = 8  # Newton steps at the target, after the continuation
_ETA_END = 6e-14  # last level for real targets: 6e-13 sigma (or 1e-4 |x|)
_RES_TOL = 1e-10  # accepted residual, relative to the size of its terms
_TINY = 1e-150  # Im z used to take closed forms' boundary values


class LawError(ValueError):
    """A law whose numbers cannot be computed correctly in float64.

    Raised instead of returning a wrong number: a moment or a scale that
    overflows float64, a support that carries less than the whole mass (a
    truncated or empty support), a numerical method that missed its
    tolerance (:class:`ConvergenceError`).  The message says what failed
    and, where there is one, the limit."""


class ConvergenceError(LawError, RuntimeError):
    """A numerical method missed its tolerance; the message says where.

    A :class:`LawError` (and, as before, a ``RuntimeError``)."""


def residual_terms(y: jax.Array, z: jax.Array, theta: jax.Array, st: jax.Array, key: tuple[str, int]) -> jax.Array:
    """Terms of the chain's equations at outer point z, shape (K, 3); the
    residual is their sum.  ``y`` has shape ``(K,)`` (complex), ``z`` is a
    complex scalar, ``theta`` and ``key`` describe the bottom law
    (:attr:`~gelib.freeprob.closed_forms.ClosedForm.theta`, shape
    ``(1 + len(poly),)``, and :attr:`~gelib.freeprob.closed_forms.ClosedForm.key`)
    and ``st`` has shape ``(K, 6)``.  Step k (innermost first) has constants
    ``st[k] = (lam, a, b, c, w, w_shift)``: ``L_k = a compress(L_{k-1}, lam) + b``,
    atom ``w = max(c, 0)`` at 0 with ``c = 1 - lam (1 - w_in)``.  The unknown
    ``y[k]`` is the regular part of ``g`` of ``compress(L_{k-1}, lam)`` at its own
    point ``p``: ``g = y - w / p``.  With ``q = -1/g`` the inner point and
    ``reg_in`` the regular part of the inner law there, the compression reads
    ``p g + c + lam reg_in / g = 0`` (Silverstein's form; divided by ``p``
    when ``w > 0``, where every term vanishes with ``p``)."""
    K = st.shape[0]
    p = (z - st[K - 1, 2]) / st[K - 1, 1]
    terms = cast("list[jax.Array]", [None] * K)  # every slot is set by the loop below
    for k in range(K - 1, -1, -1):
        lam, c, w = st[k, 0], st[k, 3], st[k, 4]
        pg = p * y[k] - w
        q = -p / pg
        if k:
            p_in = (q - st[k - 1, 2]) / st[k - 1, 1]
            reg = (y[k - 1] - st[k, 5] / p_in) / st[k - 1, 1]
        else:
            reg = base_reg(key, q, theta)[0]
        atom = w > 0
        terms[k] = jnp.stack(
            [jnp.where(atom, y[k], p * y[k]), jnp.where(atom, 0.0, c), lam * reg * jnp.where(atom, 1.0, p) / pg]
        )
        if k:
            p = p_in
    return jnp.stack(terms)


def small_solve(a, b):
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
    x = cast("list[jax.Array]", [None] * K)  # every slot is set by the loop below
    for i in range(K - 1, -1, -1):
        x[i] = (b[i] - sum(a[i][j] * x[j] for j in range(i + 1, K))) / a[i][i]
    return jnp.stack(x)


def solve_point(x, eta, theta, st, means, eta0, step, key):
    K = st.shape[0]

    def terms(v):  # v = (y_0 .. y_{K-1}, z)
        t = residual_terms(v[:K], v[K], theta, st, key)
        return t.sum(-1), t

    jac_terms = jax.jacfwd(terms, holomorphic=True, has_aux=True)

    # continuation: Im z from eta0 = 10 sigma down by the factor `step` per Newton step
    # to eta_end; for a real target, eta_end is far below the distance to 0 (hard edges)
    eta_end = jnp.where(eta > 0, eta, jnp.minimum(_ETA_END * eta0, 1e-4 * jnp.abs(x)))
    eta_end = jnp.maximum(eta_end, 1e-300)
    nsteps = jnp.ceil(jnp.log(jnp.maximum(eta0 / eta_end, 1.0)) / -jnp.log(step))

    def z_at(i):
        return x + 1j * jnp.where(i < nsteps, jnp.maximum(eta_end, eta0 * step ** (i + 1)), eta)

    # every slot of ys is set by the loop below
    ys, p = cast("list[jax.Array]", [None] * K), (x + 1j * jnp.maximum(eta, eta0) - st[K - 1, 2]) / st[K - 1, 1]
    for k in range(K - 1, -1, -1):  # start: g ~ -1/(z - mean) at every level
        g = -1.0 / (p - means[k])
        ys[k] = g + st[k, 4] / p
        if k:
            p = (-1.0 / g - st[k - 1, 2]) / st[k - 1, 1]

    def newton(carry):
        i, y = carry[0], carry[1]
        z = z_at(i)
        jac, t = jac_terms(jnp.append(y, z))
        sol = small_solve(jac[:, :K], -jnp.stack([t.sum(-1), jac[:, K]], 1))
        # Newton step at z, then the tangent predictor (dy/dz) (z' - z) to the next level
        y1 = y + sol[:, 0] + (z_at(i + 1) - z) * sol[:, 1]
        # guard: never leave the upper half plane (at most a 10x drop of Im y)
        y1 = jnp.where(y1.imag > 0.1 * y.imag, y1, y1.real + 0.1j * y.imag)
        # residual relative to the size of its terms, and dy/dz, before this step
        res = jnp.max(jnp.abs(t.sum(-1)) / (jnp.abs(t).sum(-1) + 1e-300))
        return i + 1, y1, res, sol[:, 1]

    _, y, res, dy = jax.lax.while_loop(
        lambda c: c[0] < nsteps + _POLISH, newton, (0, jnp.stack(ys), jnp.float64(jnp.inf), jnp.zeros(K, complex))
    )
    res = res + jnp.where(jnp.all(y.imag >= 0), 0.0, jnp.inf)
    z = x + 1j * eta
    a, w = st[K - 1, 1], st[K - 1, 4]
    p = (z - st[K - 1, 2]) / a
    return (y[K - 1] - w / p) / a, (dy[K - 1] + w / (a * p**2)) / a, res


@functools.partial(jax.jit, static_argnames="key")
def solve(
    x: jax.Array,
    eta: jax.Array,
    theta: jax.Array,
    st: jax.Array,
    means: jax.Array,
    eta0: float,
    step: float,
    key: tuple[str, int],
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """g, g' and residual at the points x + i eta (eta >= 0), vectorised.

    ``x`` and ``eta`` have shape ``(m,)``, and so has each result; ``theta``,
    ``st`` (shape ``(K, 6)``), ``means`` (shape ``(K,)``), ``eta0`` and ``key``
    as in :func:`stieltjes`, ``step`` the continuation factor."""
    if st.shape[0] == 0:
        z = x + 1j * jnp.maximum(eta, _TINY * eta0)
        g, dg = jax.jvp(lambda z: g_base(key, z, theta), (z,), (jnp.ones_like(z),))
        return g, dg, jnp.zeros_like(x)
    point = functools.partial(solve_point, key=key)
    return jax.vmap(point, in_axes=(0, 0, None, None, None, None, None))(x, eta, theta, st, means, eta0, step)


def chunked(fn: Callable[..., Sequence[ArrayLike]], *arrays: np.ndarray, fill: Sequence[float]) -> list[np.ndarray]:
    """Apply fn to fixed-size chunks of 1-D arrays (one compilation per shape).

    The ``arrays`` (shape ``(m,)`` each) are padded, each with its value of
    ``fill``, to a multiple of the chunk size; ``fn`` maps one chunk of each
    (shape ``(256,)``) to a sequence of arrays of that shape. Returns those
    outputs joined over the chunks, shape ``(m,)`` each."""
    n = arrays[0].shape[0]
    pad = -n % _CHUNK if n else _CHUNK
    # the tuple of arguments rebound to a list of the padded arrays (only iterated below)
    arrays = [np.concatenate([a, np.full(pad, f, a.dtype)]) for a, f in zip(arrays, fill)]  # type: ignore[assignment]
    outs = [fn(*(a[i : i + _CHUNK] for a in arrays)) for i in range(0, n + pad, _CHUNK)]
    return [np.concatenate([np.asarray(o[j]) for o in outs])[:n] for j in range(len(outs[0]))]


def stieltjes(
    w: np.ndarray,
    todo: np.ndarray,
    theta: np.ndarray,
    st: np.ndarray,
    means: np.ndarray,
    eta0: float,
    key: tuple[str, int],
    steps: tuple[float, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``g`` and ``g'`` by the solver at the points ``w[todo]``.

    ``w`` is a 1-D complex array with ``Im w >= 0`` and ``todo`` a boolean mask
    of the same shape; the results have the shape of ``w`` and are set where
    ``todo`` only.  ``theta`` and ``key`` describe the bottom law
    (:class:`~gelib.freeprob.closed_forms.ClosedForm`), ``st`` (shape
    ``(K, 6)``) and ``means`` (shape ``(K,)``) the ``K`` compressions (see
    :func:`residual_terms`), ``eta0`` the first level of the continuation.
    Points that miss the residual tolerance are solved again with each factor
    of ``steps`` (default ``(0.3, 0.6, 0.85)``) in turn; if some still miss it,
    raises :class:`ConvergenceError`."""
    steps = _STEPS if steps is None else steps
    g, dg = np.empty(w.shape, complex), np.empty(w.shape, complex)
    sol = functools.partial(
        solve, theta=jnp.asarray(theta), st=jnp.asarray(st), means=jnp.asarray(means), eta0=eta0, key=key
    )
    bad = todo.copy()
    for step in steps:  # points that fail: smaller steps
        if not bad.any():
            break
        g[bad], dg[bad], res = chunked(
            lambda x, e, step=step: sol(x, e, step=step), w.real[bad], w.imag[bad], fill=(w.real[bad][0], 1.0)
        )
        bad[bad] = ~(res <= _RES_TOL)
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise ConvergenceError(
            f"Stieltjes solver: {bad.sum()} of {bad.size} points missed the residual "
            f"tolerance {_RES_TOL:g} (worst {np.nanmax(np.where(res <= _RES_TOL, 0, res)):.2g}, "
            f"e.g. z = {w[i]:.6g}); this law: {st.shape[0]} compressions"
        )
    return g, dg
