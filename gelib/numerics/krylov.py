"""The largest singular value of a matrix without a full SVD (Lanczos).

The denominator chapter measures ``||(C_r - I) f(S_r) / sqrt(n)||_op`` for
every head of every draw. A full SVD of the ``n x n`` matrix costs ``O(n^3)``
with a large constant (about 3 s at ``n = 2048`` on one CPU core, and the
slowest step of that chapter at the paper's sizes, also on a GPU); the largest
singular value alone comes from a Krylov space of ``m^T m`` of a few dozen
matrix-vector products.

:func:`~gelib.numerics.lanczos` builds that space with full reorthogonalisation (jittable,
batched with ``vmap``); :func:`~gelib.numerics.top_ritz` reads the largest Ritz value ``theta``
and its residual bound ``beta_k |y_k|``: some eigenvalue of ``m^T m`` lies
within the residual of ``theta``, and ``theta`` never exceeds the largest one
(Cauchy interlacing), so a residual below ``tol * theta`` pins the largest
eigenvalue to relative accuracy ``tol`` unless the start vector is orthogonal
to its eigenvector (probability zero for a Gaussian start vector).
:func:`gelib.models.denominator_terms` combines them and falls back to exact
SVDs when a residual is too large.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

__all__ = ["lanczos", "top_ritz"]


@functools.partial(jax.jit, static_argnames="steps")
def lanczos(m: jax.Array, start: jax.Array, steps: int) -> tuple[jax.Array, jax.Array]:
    """The Lanczos tridiagonal of ``m^T m`` from ``start``: diagonal ``alpha``, off-diagonal ``beta``.

    Both have shape ``(steps,)``.

    ``m`` is ``(p, q)``, ``start`` ``(q,)`` (any nonzero vector). ``beta[-1]`` is
    the norm of the residual vector after the last step (the residual bound of
    :func:`~gelib.numerics.top_ritz`). Full reorthogonalisation (twice) against every earlier
    Lanczos vector keeps the basis orthonormal to round-off.
    """
    q = m.shape[1]
    basis = jnp.zeros((steps + 1, q), m.dtype).at[0].set(start / jnp.linalg.norm(start))

    def step(j, state):
        basis, alpha, beta = state
        v = basis[j]
        w = m.T @ (m @ v)
        a = v @ w
        w = w - basis.T @ (basis @ w)  # rows after j are still zero
        w = w - basis.T @ (basis @ w)
        b = jnp.linalg.norm(w)
        nxt = jnp.where(b > 0, w / jnp.where(b > 0, b, 1.0), 0.0)  # an invariant subspace stops the recursion
        return basis.at[j + 1].set(nxt), alpha.at[j].set(a), beta.at[j].set(b)

    zeros = jnp.zeros(steps, m.dtype)
    _, alpha, beta = jax.lax.fori_loop(0, steps, step, (basis, zeros, zeros))
    return alpha, beta


def top_ritz(alpha: ArrayLike, beta: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Largest Ritz value ``theta`` of Lanczos tridiagonals and its residual bound ``|beta_k y_k|``.

    ``alpha`` and ``beta`` as returned by :func:`~gelib.numerics.lanczos`, shape ``(..., steps)``;
    returns two arrays of shape ``(...)``.
    """
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    k = np.arange(alpha.shape[-1])
    t = np.zeros((*alpha.shape, alpha.shape[-1]))
    t[..., k, k] = alpha
    t[..., k[:-1], k[1:]] = t[..., k[1:], k[:-1]] = beta[..., :-1]
    w, u = np.linalg.eigh(t)
    return w[..., -1], np.abs(beta[..., -1] * u[..., -1, -1])
