"""The six equivalent random-matrix models of the paper's Table 1.

the book's appendix (:ref:`conv-chain`). Every model is built from one shared
:class:`~gelib.sampling.Draw` (the same ``Q, K, V, W^O``) and one noise key,
so consecutive models differ only by the step of the proof between them:

==============  ==============================================================
``mha``         ``sqrt(n) A^perp``: the centred softmax multi-head output
``yf``          ``Y^f``: row denominators replaced by the constant ``n e^{beta^2/2}``
``yf_ring``     ``Y-ring^f``: the conditional row mean subtracted
``yg_sigma_f``  ``Y^G[Sigma_f]``: Gaussian rows with the exact covariance
``yg_sigma_g``  ``Y^G[Sigma_G]``: Gaussian rows with the linearised covariance
``yg``          ``Y^G``: original queries, independent noise
==============  ==============================================================

Each model is written as ``Y = sum_r U_r W^O_r`` with per-head outputs
``U_r`` (``n x d_v``); :func:`head_outputs` returns the stack
``(h, n, d_v)``. Heads are processed one at a time (``lax.map``), so memory
stays ``O(n^2 + h n d_v)`` even at GPT-3 dimensions.

The module also returns the quantities that each step of Table 1 controls
(:func:`denominator_terms`, :func:`centering_terms`, :func:`kernel_error`),
so chapters can measure their rates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from . import linalg
from .config import AttentionConfig, ConfigError
from .sampling import Draw

__all__ = [
    "MODELS",
    "LABELS",
    "f",
    "scores",
    "attention",
    "row_mean",
    "kernel_f",
    "kernel_g",
    "kernel_mean",
    "head_outputs",
    "yg_literal",
    "output",
    "build",
    "build_all",
    "denominator_terms",
    "centering_terms",
    "centering_norm2",
    "kernel_error",
    "numerical_rank",
    "value_second_moments",
    "psd_roots",
    "gaussian_heads",
    "gaussian_row_outputs",
    "quadratic_forms",
    "sigma",
    "output_row_mean",
    "kernel_f_estimate",
    "kernel_f_diagonal_mean",
    "kernel_error_first_order",
    "sigma_mean_ratio",
    "kernel_mean_variance",
    "hermite_coefficients",
    "form_deviation",
    "form_variance",
    "form_variance_wishart",
    "conditional_covariances",
    "step_distances",
    "kernel_error_exact",
    "kernel_f_zscores",
    "row_mean_effect",
    "row_mean_norms",
]

#: The models of Table 1 by short name, with the symbol the book uses for each.
LABELS = {
    "mha": "sqrt(n) A^perp (MHA)",
    "yf": "Y^f",
    "yf_ring": "Y-ring^f",
    "yg_sigma_f": "Y^G[Sigma_f]",
    "yg_sigma_g": "Y^G[Sigma_G]",
    "yg": "Y^G",
}
#: The short names of the models of Table 1, in the order of the chain.
MODELS: tuple[str, ...] = tuple(LABELS)


def check_models(models) -> tuple[str, ...]:
    models = tuple(models)
    bad = [m for m in models if m not in LABELS]
    if bad:
        raise ConfigError(f"unknown model(s) {bad}; choose from {', '.join(MODELS)}")
    return models


# --- scalar pieces ------------------------------------------------------------


def f(x: ArrayLike, beta: float | jax.Array) -> jax.Array:
    """``f(x) = exp(beta x - beta^2 / 2) - 1`` (Table A.4): mean zero for x ~ N(0,1).

    Elementwise: ``x`` of any shape, the result of that shape.
    """
    return jnp.expm1(beta * x - beta**2 / 2)


def scores(q_r: jax.Array, k_g: jax.Array) -> jax.Array:
    """``S_r = Q_r K_g^T / sqrt(d_k)``, ``(n, n)``, from ``q_r`` and ``k_g`` of shape ``(n, d_k)``."""
    return q_r @ k_g.T / jnp.sqrt(jnp.asarray(q_r.shape[-1], q_r.dtype))


def attention(s: jax.Array, beta: float | jax.Array) -> jax.Array:
    """Row softmax of ``beta S``, computed stably (the row maximum is subtracted).

    ``s`` has shape ``(..., n, n)`` (rows on the last axis); the result has its shape.
    """
    return jax.nn.softmax(beta * s, axis=-1)


def row_mean(q_r: jax.Array, beta: float | jax.Array) -> jax.Array:
    """``E[f(S_ij) | q_i] = exp(beta^2 (|q_i|^2 / d_k - 1) / 2) - 1`` over Gaussian keys.

    ``q_r`` has shape ``(..., n, d_k)`` (queries ``q_i`` on the last axis); the result ``(..., n)``.
    """
    d_k = q_r.shape[-1]
    return jnp.expm1(beta**2 * (jnp.sum(q_r**2, axis=-1) / d_k - 1) / 2)


def kernel_f(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """The exact kernel ``E_q[f-ring(K q / sqrt d_k) f-ring(.)^T]``, ``(n, n)``, of the keys ``k_g`` (``(n, d_k)``).

    ``f-ring_j(q) = e^{beta a_j - beta^2/2} - M(q)`` with ``a = K q / sqrt(d_k)``,
    ``M(q) = exp(beta^2 |q|^2 / (2 d_k) - beta^2 / 2)`` and ``q ~ N(0, I)``; the
    three Gaussian integrals of the appendix (:ref:`conv-kernel`) give it in closed form.
    Needs ``gamma = beta^2 / d_k < 1/2`` (otherwise ``E[M^2]`` is infinite).
    """
    n, d_k = k_g.shape
    gamma = beta**2 / d_k
    if not isinstance(gamma, jax.core.Tracer) and gamma >= 0.5:  # traced beta: checked by the caller
        raise ConfigError(f"Sigma_f needs beta^2 / d_k < 1/2 (E[M(q)^2] diverges); got beta^2 / d_k = {gamma:.3g}")
    sq = jnp.sum(k_g**2, axis=-1)
    gram = k_g @ k_g.T
    pair = jnp.exp(beta**2 * (sq[:, None] + sq[None, :] + 2 * gram) / (2 * d_k) - beta**2)
    cross = jnp.exp(-(beta**2) - d_k / 2 * jnp.log1p(-gamma) + beta**2 * sq / (2 * d_k * (1 - gamma)))
    m2 = jnp.exp(-(beta**2) - d_k / 2 * jnp.log1p(-2 * gamma))
    return pair - cross[:, None] - cross[None, :] + m2


def kernel_mean(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """``E_q[f-ring(K q / sqrt d_k)]`` (``(n,)``), the rows' mean given the keys ``k_g`` (``(n, d_k)``).

    ``exp(beta^2 |k_j|^2 / (2 d_k) - beta^2 / 2) - e^{-beta^2/2} (1 - gamma)^{-d_k/2}``:
    not exactly zero at finite ``d_k`` (it is ``O(1/sqrt(d_k))`` per entry), so
    :func:`kernel_f` is a second moment, not a covariance. The difference is the
    same vector for every row, a rank-``<= h`` change of the output
    (the rows are often called mean-zero; this is the exact statement).
    """
    d_k = k_g.shape[-1]
    gamma = beta**2 / d_k
    sq = jnp.sum(k_g**2, axis=-1)
    return jnp.exp(beta**2 * sq / (2 * d_k) - beta**2 / 2) - jnp.exp(-(beta**2) / 2 - d_k / 2 * jnp.log1p(-gamma))


def kernel_g(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """The linearised kernel ``beta^2 K K^T / d_k + alpha^2 I_n``, ``(n, n)``, of the keys ``k_g`` (``(n, d_k)``)."""
    n, d_k = k_g.shape
    alpha2 = jnp.expm1(beta**2) - beta**2
    return beta**2 * (k_g @ k_g.T) / d_k + alpha2 * jnp.eye(n, dtype=k_g.dtype)


def _psd_sqrt(m):
    w, u = jnp.linalg.eigh(m)
    return (u * jnp.sqrt(jnp.clip(w, 0.0))) @ u.T


# --- per-head outputs -----------------------------------------------------------


def _per_head(fn, draw: Draw, cfg: AttentionConfig):
    """Stack ``fn(r, q_r, k_g, v_g)`` over heads, one head at a time (batching
    heads made BERT-base's softmax heads 2.4x slower on a CPU: cache misses)."""
    gs = cfg.group_size

    def one(r):
        g = r // gs
        return fn(r, draw.q[r], draw.k[g], draw.v[g])

    return jax.lax.map(one, jnp.arange(cfg.h))


def _gaussian_rows(kernel, draw: Draw, cfg: AttentionConfig, key):
    """``U_r = G_r M_g^{1/2}`` with ``M_g = V_g^T kernel(K_g) V_g / n``.

    Rows of ``sum_r U_r W^O_r`` are then i.i.d. Gaussian with covariance
    ``(1/n) sum_r W^O_r^T V_g^T kernel V_g W^O_r``. Heads get independent
    ``G_r`` (their queries are independent); the same key gives the same
    ``G_r`` for every kernel, so ``Sigma_f`` and ``Sigma_G`` are coupled.
    """
    n = cfg.n

    def root(g):
        kern = kernel(draw.k[g], cfg.beta)
        return _psd_sqrt(draw.v[g].T @ kern @ draw.v[g] / n)

    roots = jax.lax.map(root, jnp.arange(cfg.h_kv))

    def one(r, q_r, k_g, v_g):
        z = jax.random.normal(jax.random.fold_in(key, r), (n, cfg.d_v), draw.q.dtype)
        return z @ roots[r // cfg.group_size]

    return _per_head(one, draw, cfg)


def _yg_reduced(draw: Draw, cfg: AttentionConfig, z_key):
    """``Y^G``'s heads ``U_r = (beta S_r + alpha Z_r) V_g / sqrt(n)`` in O(n d_k d_v) per head.

    Exact in law, not an approximation: ``S_r V_g = Q_r (K_g^T V_g) / sqrt(d_k)``
    (associativity), and given ``V_g`` the rows ``z^T V_g`` of ``Z_r V_g`` are
    i.i.d. ``N(0, V_g^T V_g)`` and independent of everything else, so
    ``Z_r V_g`` has the law of ``G_r R_g`` (``R_g^T R_g = V_g^T V_g``) with ``G_r`` an
    ``n x d_v`` standard Gaussian matrix.  This replaces ``n^2`` normals and
    ``2 n^2 (d_k + d_v)`` flops per head by ``n d_v`` normals and
    ``2 n d_v (d_k + d_v)`` flops.  :func:`yg_literal` draws ``Z_r`` itself.
    """
    n = cfg.n
    rn = jnp.sqrt(jnp.asarray(n, draw.q.dtype))
    alpha = jnp.sqrt(jnp.asarray(cfg.alpha2, draw.q.dtype))
    scale = cfg.beta / jnp.sqrt(jnp.asarray(cfg.d_k, draw.q.dtype))

    # a factor R with R^T R = V^T V: Cholesky (V^T V is positive definite
    # almost surely when n >= d_v), else the symmetric square root
    factor = (lambda m: jnp.linalg.cholesky(m).T) if n >= cfg.d_v else _psd_sqrt

    def per_group(g):
        k, v = draw.k[g], draw.v[g]
        return k.T @ v, factor(v.T @ v)

    kv, roots = jax.lax.map(per_group, jnp.arange(cfg.h_kv))

    def one(r, q, k, v):
        g = r // cfg.group_size
        z = jax.random.normal(jax.random.fold_in(z_key, r), (n, cfg.d_v), q.dtype)
        return (scale * (q @ kv[g]) + alpha * (z @ roots[g])) / rn

    return _per_head(one, draw, cfg)


@functools.partial(jax.jit, static_argnames=("cfg",))
def yg_literal(z_key: jax.Array, draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """``Y^G``'s heads as written, ``(beta Q_r K_g^T / sqrt(d_k) + alpha Z_r) V_g / sqrt(n)``,
    with the ``n x n`` noise ``Z_r`` drawn: the definition, for teaching and
    for testing the reduced form used by ``build("yg", ...)`` (same law).
    Shape ``(h, n, d_v)``, as :func:`head_outputs`."""
    n = cfg.n
    rn = jnp.sqrt(jnp.asarray(n, draw.q.dtype))
    alpha = jnp.sqrt(jnp.asarray(cfg.alpha2, draw.q.dtype))

    def one(r, q, k, v):
        z = jax.random.normal(jax.random.fold_in(z_key, r), (n, n), q.dtype)
        return (cfg.beta * scores(q, k) + alpha * z) @ v / rn

    return _per_head(one, draw, cfg)


def head_outputs(model: str, draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None) -> jax.Array:
    """Per-head outputs ``U_r`` (``(h, n, d_v)``) of one model of Table 1.

    ``key`` (keyword only) is the noise key of the Gaussian models (``yg_sigma_f``,
    ``yg_sigma_g``, ``yg``); the other models are deterministic given ``draw``.
    The two ``Sigma`` models share their Gaussian rows (so that they differ by
    the covariance alone); ``yg``'s noise is independent of them. ``yg`` is
    formed in ``O(n d_k d_v)`` per head, exactly in law (see
    ``_yg_reduced``; :func:`yg_literal` draws the ``n x n`` noise).
    """
    beta, n = cfg.beta, cfg.n
    rn = jnp.sqrt(jnp.asarray(n, draw.q.dtype))
    if model in ("yg_sigma_f", "yg_sigma_g", "yg") and key is None:
        raise ValueError(f"model {model!r} needs a noise key")
    if key is not None:  # Y^G's noise is independent of the rows shared by the Sigma models
        rows_key, z_key = jax.random.split(key)

    if model == "mha":

        def one(r, q, k, v):
            # softmax(beta S) V with the row normalisation applied after the
            # product (on n x d_v entries instead of n x n)
            bs = beta * scores(q, k)
            e = jnp.exp(bs - jax.lax.stop_gradient(jnp.max(bs, axis=-1, keepdims=True)))
            av = (e @ v) / jnp.sum(e, axis=-1, keepdims=True)
            return rn * (av - jnp.mean(v, axis=0, keepdims=True))
    elif model == "yf":

        def one(r, q, k, v):
            return f(scores(q, k), beta) @ v / rn
    elif model == "yf_ring":

        def one(r, q, k, v):
            fr = f(scores(q, k), beta) - row_mean(q, beta)[:, None]
            return fr @ v / rn
    elif model == "yg_sigma_f":
        return _gaussian_rows(kernel_f, draw, cfg, rows_key)
    elif model == "yg_sigma_g":
        return _gaussian_rows(kernel_g, draw, cfg, rows_key)
    elif model == "yg":
        return _yg_reduced(draw, cfg, z_key)
    else:
        check_models([model])
    return _per_head(one, draw, cfg)


def output(u: jax.Array, w_o: jax.Array) -> jax.Array:
    """``Y = sum_r U_r W^O_r`` (``(n, d_o)``) from per-head outputs.

    ``u`` has shape ``(h, n, d_v)`` (:func:`head_outputs`), ``w_o`` shape ``(h, d_v, d_o)``.
    """
    return jnp.einsum("rnv,rvo->no", u, w_o)


@functools.partial(jax.jit, static_argnames=("model", "cfg"))
def build(model: str, draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None) -> jax.Array:
    """The output ``Y`` (``(n, d_o)``) of one model of Table 1; ``key`` as in :func:`head_outputs`."""
    return output(head_outputs(model, draw, cfg, key=key), draw.w_o)


@functools.partial(jax.jit, static_argnames=("models", "cfg"))
def build_all(models: tuple[str, ...], draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None) -> jax.Array:
    """Outputs of several models from the same draw and noise key, stacked ``(m, n, d_o)``.

    ``key`` (keyword only) is the noise key; it is needed only when a Gaussian
    model (``yg_sigma_f``, ``yg_sigma_g``, ``yg``) is among ``models``.
    """
    return jnp.stack([build(m, draw, cfg, key=key) for m in models])


# --- what each step of Table 1 controls -----------------------------------------


def _row_vectors(draw: Draw, cfg: AttentionConfig):
    """``1^T V_g W^O_r / sqrt(n)`` for every head (``h x d_o``)."""
    gs = cfg.group_size
    v_sum = jnp.sum(draw.v, axis=1)[jnp.arange(cfg.h) // gs]  # (h, d_v)
    return jnp.einsum("rv,rvo->ro", v_sum, draw.w_o) / jnp.sqrt(jnp.asarray(cfg.n, draw.q.dtype))


def denominator_terms(draw: Draw, cfg: AttentionConfig, key: jax.Array | None = None) -> dict:
    """The two error terms of denominator replacement (Table 1, row 2).

    ``sqrt(n) A_r^perp = f(S_r)/sqrt(n) + (C_r - I) f(S_r)/sqrt(n) + (C_r - I) 1 1^T/sqrt(n)``
    with ``C_r = diag(n e^{beta^2/2} / row sums of e^{beta S_r})``. Returns

    * ``op_norm``: ``||(C_r - I) f(S_r) / sqrt(n)||_op`` per head (``h``),
      predicted ``n^{-1/2 + o(1)}``;
    * ``c_dev``: ``max_i |C_r,ii - 1|`` per head;
    * ``max_entry``: the largest entry ``max_ij |(C_r - I) f(S_r)|_ij / sqrt(n)``
      of the middle term per head (``h``); the operator norm is at least this;
    * ``middle``: the middle term carried to the output, ``n x d_o``;
    * ``low_rank``: the last term carried to the output,
      ``sum_r (C_r - I) 1 1^T V_g W^O_r / sqrt(n)`` (``n x d_o``, rank ``<= h``).

    Compiled once per shape: ``beta`` is a traced argument, so a scan over
    ``beta`` (at fixed shapes) compiles once. The operator norms come from
    a Lanczos iteration (:mod:`gelib.linalg`; relative error below ``5e-11``,
    else exact SVDs), not from a full SVD per head, the
    chapter's slowest step at the paper's sizes; ``key`` draws its start vector
    (the norms do not depend on it beyond that accuracy).
    """
    beta = jnp.asarray(cfg.beta, draw.q.dtype)
    cfg1 = cfg.replace(beta=1.0)
    start = jax.random.normal(jax.random.key(0) if key is None else key, (cfg.n,), draw.q.dtype)
    terms = _denominator_terms(draw, cfg1, beta, start)
    alpha, off = terms.pop("lanczos")
    theta, resid = linalg.top_ritz(alpha, off)
    op = np.sqrt(np.maximum(theta, 0.0))
    if not np.all(resid <= 1e-10 * theta):  # not converged in the fixed number of steps: exact SVDs
        op = np.asarray(_middle_norms(draw, cfg1, beta))
    return {"op_norm": op, **terms}


def _middle(draw: Draw, cfg: AttentionConfig, beta, q, k):
    """``C_r - I`` (``n``) and the middle term ``(C_r - I) f(S_r) / sqrt(n)`` (``n x n``) of one head."""
    fs = f(scores(q, k), beta)
    c = cfg.n / jnp.sum(fs + 1.0, axis=-1)  # n e^{beta^2/2} / sum_j e^{beta S_ij}
    return c - 1.0, (c - 1.0)[:, None] * fs / jnp.sqrt(jnp.asarray(cfg.n, q.dtype))


@functools.partial(jax.jit, static_argnames=("cfg",))
def _middle_norms(draw: Draw, cfg: AttentionConfig, beta) -> jax.Array:
    """Exact ``||(C_r - I) f(S_r) / sqrt(n)||_op`` per head (full SVDs): the fallback of :func:`denominator_terms`."""
    return _per_head(
        lambda r, q, k, v: jnp.linalg.svd(_middle(draw, cfg, beta, q, k)[1], compute_uv=False)[0], draw, cfg
    )


_LANCZOS_STEPS = 48  # the top singular value is well separated: 32 steps left residuals <= 3e-11 at n = 2048


@functools.partial(jax.jit, static_argnames=("cfg",))
def _denominator_terms(draw: Draw, cfg: AttentionConfig, beta, start) -> dict:
    """:func:`denominator_terms` with a traced ``beta`` (``cfg.beta`` is ignored).

    Returns Lanczos tridiagonals (``"lanczos"``) in place of the operator norms.
    """
    steps = min(_LANCZOS_STEPS, cfg.n)

    def one(r, q, k, v):
        cm1, mid = _middle(draw, cfg, beta, q, k)
        return linalg.lanczos(mid, start, steps), jnp.max(jnp.abs(cm1)), jnp.max(jnp.abs(mid)), mid @ v, cm1

    tri, dev, top, mid_v, cm1 = _per_head(one, draw, cfg)
    return {
        "lanczos": tri,
        "c_dev": dev,
        "max_entry": top,
        "middle": output(mid_v, draw.w_o),
        "low_rank": cm1.T @ _row_vectors(draw, cfg),
    }


@functools.partial(jax.jit, static_argnames=("cfg",))
def centering_terms(draw: Draw, cfg: AttentionConfig) -> dict:
    """What centering subtracts (Table 1, row 3): ``Y^f - Y-ring^f``.

    Per head the subtracted matrix is ``m_r 1^T / sqrt(n)`` with
    ``m_r = E[f(S_r) | q]`` (:func:`row_mean`), rank one with operator norm
    ``|m_r|_2``. Returns ``row_mean_norm`` (``h``), and ``subtracted``, the
    sum carried to the output (``n x d_o``, rank ``<= h``).
    """
    m = jax.vmap(row_mean, in_axes=(0, None))(draw.q, cfg.beta)  # (h, n)
    return {
        "row_mean_norm": jnp.linalg.norm(m, axis=-1),
        "subtracted": m.T @ _row_vectors(draw, cfg),
    }


def centering_norm2(n: int, d_k: int, beta: float) -> float:
    """``E |m_r|_2^2``, the mean square norm of the row means that centering subtracts (one head).

    ``m_r`` has ``n`` entries ``m_i = exp(beta^2 (rho_i - 1) / 2) - 1`` (:func:`row_mean`)
    with ``rho_i = |q_i|^2 / d_k`` a ``chi^2_{d_k} / d_k`` variable; by its moment
    generating function ``E e^{t (rho - 1)} = e^{-t} (1 - 2t / d_k)^{-d_k / 2}``,

    ``E |m_r|_2^2 = n (e^{-beta^2} (1 - 2 beta^2 / d_k)^{-d_k/2} - 2 e^{-beta^2/2} (1 - beta^2 / d_k)^{-d_k/2} + 1)``,

    about ``n beta^4 / (2 d_k)``. Infinite unless ``beta^2 < d_k / 2``.
    """
    if 2 * beta**2 >= d_k:
        return math.inf
    t1 = math.exp(-(beta**2) - d_k / 2 * math.log1p(-2 * beta**2 / d_k))
    t2 = math.exp(-(beta**2) / 2 - d_k / 2 * math.log1p(-(beta**2) / d_k))
    return n * (t1 - 2 * t2 + 1)


@functools.partial(jax.jit, static_argnames=("cfg",))
def kernel_error(draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """Normalised Frobenius error ``||kernel_f - kernel_G||_F / sqrt(n)`` per KV group, ``(h_kv,)``.

    Table 1, row 5: predicted ``O(sqrt(log n / n))`` at fixed ratios ``d_k / n``.
    """

    def one(k):
        diff = kernel_f(k, cfg.beta) - kernel_g(k, cfg.beta)
        return jnp.linalg.norm(diff) / jnp.sqrt(jnp.asarray(cfg.n, k.dtype))

    return jax.lax.map(one, draw.k)


def numerical_rank(
    a: ArrayLike, rtol: float | None = None, *, key: jax.Array | None = None, at_most: int | None = None
) -> int:
    """Number of singular values above ``rtol * s_max`` (default ``max(shape) * eps * 10``).

    ``a`` is a matrix, ``(m, k)``. With ``key`` and ``at_most``, a test of
    ``rank(a) <= at_most`` without an SVD of ``a``: the rank of the sketch
    ``a Omega`` (formed where ``a`` lives, a GPU included) for a Gaussian ``Omega``
    of ``at_most + 8`` columns drawn from ``key``. It equals ``rank(a)`` with
    probability one when ``rank(a) <= at_most + 8`` and exceeds ``at_most`` whenever
    ``rank(a)`` does, so ``numerical_rank(a, key=k, at_most=h) <= h`` decides
    ``rank(a) <= h``; it costs ``O(m k at_most)`` instead of the SVD's ``O(m k
    min(m, k))`` (8 s for ``2048 x 3072`` on one CPU core, paid once per draw by
    the denominator and centering chapters).
    """
    if (key is None) != (at_most is None):
        raise ValueError("numerical_rank: give both key and at_most (the sketch), or neither")
    if rtol is None:
        rtol = max(np.shape(a)) * np.finfo(np.asarray(a[:1, :1]).dtype).eps * 10
    if at_most is not None and at_most + 8 < min(np.shape(a)):
        a = jnp.asarray(a)
        a = a @ jax.random.normal(key, (a.shape[1], at_most + 8), a.dtype)
    a = np.asarray(a)
    s = np.linalg.svd(a, compute_uv=False)
    return int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0


# --- second moments of the rows: Gaussian rows with a given G, Sigma (Table 1, rows 4-6) ---


def value_second_moments(
    kernel: Callable[[jax.Array, float], jax.Array], draw: Draw, cfg: AttentionConfig
) -> jax.Array:
    """``M_g = V_g^T kernel(K_g) V_g / n`` for every key/value group, ``(h_kv, d_v, d_v)``.

    ``kernel`` is :func:`kernel_f` or :func:`kernel_g` (any ``(k_g, beta) ->
    (n, n)``). Row ``i`` of head ``r``'s Gaussian-row output ``G_r M_g^{1/2}``
    has second moment ``M_{g(r)}``; ``tr(M_g) / d_v`` is the conditional mean of the
    quadratic form ``x^T (V V^T / d_v) x / n`` of a row ``x`` with second moment
    ``kernel(K_g)``.
    """
    kern = jax.vmap(lambda k: kernel(k, cfg.beta))(draw.k)  # (h_kv, n, n)
    return jnp.einsum("gnv,gnm,gmw->gvw", draw.v, kern, draw.v) / cfg.n


def psd_roots(m: jax.Array) -> jax.Array:
    """Symmetric square roots ``M^{1/2}`` of a stack of positive semi-definite matrices ``(g, d, d)``.

    From the eigendecomposition; eigenvalues below zero (round-off) are set to 0.
    """
    w, basis = jnp.linalg.eigh(m)
    return jnp.einsum("gvj,gj,gwj->gvw", basis, jnp.sqrt(jnp.clip(w, 0.0)), basis)


def gaussian_heads(gauss: jax.Array, m: jax.Array, cfg: AttentionConfig) -> jax.Array:
    """Per-head Gaussian rows ``U_r = G_r M_{g(r)}^{1/2}``, ``(h, n, d_v)``.

    ``gauss`` (``(h, n, d_v)``) holds the standard Gaussian matrices ``G_r``,
    ``m`` (``(h_kv, d_v, d_v)``) the second moments of
    :func:`value_second_moments`. The rows of ``sum_r U_r W^O_r`` are then i.i.d.
    ``N(0, Sigma)`` with ``Sigma = sum_r W^O_r^T M_{g(r)} W^O_r`` (:func:`sigma`).
    Unlike ``build("yg_sigma_f", ...)``, which draws ``G_r`` from a key, the
    caller passes ``G``: leading blocks of one large ``G`` give nested Gaussian
    rows across sizes (:class:`gelib.sweeps.NestedDraws`).
    """
    group = jnp.arange(cfg.h) // cfg.group_size
    return jnp.einsum("rnv,rvw->rnw", gauss, psd_roots(m)[group])


@functools.partial(jax.jit, static_argnames=("kernels", "cfg"))
def gaussian_row_outputs(kernels: tuple, draw: Draw, gauss: jax.Array, cfg: AttentionConfig) -> jax.Array:
    """``Y^G[Sigma_kernel] = sum_r G_r M_g^{1/2} W^O_r`` for each kernel, from one ``G``: ``(len(kernels), n, d_o)``.

    ``kernels`` is a tuple such as ``(kernel_f, kernel_g)``: then the two
    outputs are ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]`` coupled through one
    Gaussian ``G`` (``(h, n, d_v)``), so that they differ by the covariance alone.
    """
    return jnp.stack(
        [output(gaussian_heads(gauss, value_second_moments(k, draw, cfg), cfg), draw.w_o) for k in kernels]
    )


def quadratic_forms(u: jax.Array, m: jax.Array, cfg: AttentionConfig) -> tuple[jax.Array, jax.Array]:
    """Per-row quadratic forms ``x_i^T B x_i / n = |u_i|^2 / d_v`` and their conditional means.

    For head outputs ``u`` (``(..., h, n, d_v)``, ``u_i`` = row ``i`` of
    ``U_r = X V_g / sqrt(n)`` with rows ``x_i``) and ``B = V_g V_g^T / d_v``.
    Returns the forms (``(..., h, n)``) and, per head, the exact conditional
    mean ``tr(V^T kernel V) / (n d_v) = tr(M_{g(r)}) / d_v`` (``(h,)``) for rows
    with second moment ``kernel`` (``m`` from :func:`value_second_moments`).
    """
    group = jnp.arange(cfg.h) // cfg.group_size
    return jnp.sum(u**2, axis=-1) / cfg.d_v, jnp.trace(m, axis1=1, axis2=2)[group] / cfg.d_v


@functools.partial(jax.jit, static_argnames=("kernel", "cfg"))
def sigma(kernel: Callable[[jax.Array, float], jax.Array], draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """``Sigma = (1/n) sum_r W^O_r^T V_g^T kernel(K_g) V_g W^O_r``, ``(d_o, d_o)``.

    With :func:`kernel_f` this is ``Sigma_f`` (the second moment of a row of
    ``Y-ring^f`` given ``K, V, W^O``, up to the cross-head terms of its mean),
    with :func:`kernel_g` it is ``Sigma_G``, the covariance of a row of ``Y^G``.
    ``kernel`` as in :func:`value_second_moments`.
    """
    m = value_second_moments(kernel, draw, cfg)
    group = jnp.arange(cfg.h) // cfg.group_size
    return jnp.einsum("rvo,rvw,rwp->op", draw.w_o, m[group], draw.w_o)


def form_deviation(forms: np.ndarray | jax.Array, exact: np.ndarray | jax.Array) -> np.ndarray:
    """Relative mean absolute deviation of quadratic forms from their conditional means, per head.

    ``forms`` (``(h, n)``) and ``exact`` (``(h,)``) as returned by
    :func:`quadratic_forms`: ``delta = mean_i |form_i - exact| / exact``, the
    control of quadratic-form concentration (predicted ``O(n^{-1/2})`` at fixed
    ratios). The mean absolute deviation, not the sample variance: for
    log-normal entries a sample variance over ``n`` rows is dominated by a
    handful of rows. Shape ``(h,)``.
    """
    return np.mean(np.abs(forms - exact[:, None]), axis=-1) / exact


def output_row_mean(draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """The common mean ``m = sum_r W^O_r^T V_g^T mu_g / sqrt(n)`` of the rows of ``Y-ring^f`` given ``K, V, W^O``.

    Shape ``(d_o,)``.
    ``mu_g = E_q[f-ring(K_g q / sqrt(d_k))]`` is :func:`kernel_mean`: centering
    subtracts the mean over keys, so the mean over the query is not exactly
    zero. Over ``K, V, W^O``, ``E|m|^2 = d_o Var(mu_j)``.
    """
    mu = jax.vmap(lambda k: kernel_mean(k, cfg.beta))(draw.k)  # (h_kv, n)
    group = jnp.arange(cfg.h) // cfg.group_size
    per_head = jnp.einsum("rn,rnv->rv", mu[group], draw.v[group]) / jnp.sqrt(jnp.asarray(cfg.n, draw.v.dtype))
    return jnp.einsum("rv,rvo->o", per_head, draw.w_o)


def kernel_f_estimate(k_g: jax.Array, q: jax.Array, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo estimate of :func:`kernel_f` from sampled queries, with per-entry standard errors.

    ``k_g`` (``(n, d_k)``) are keys, ``q`` (``(N, d_k)``) independent standard
    Gaussian queries. Each query gives the row
    ``f-ring(q) = f(K q / sqrt(d_k)) - E[f | q]`` (:func:`f`, :func:`row_mean`);
    returns the average of ``f-ring f-ring^T`` (``(n, n)``) and the standard
    error of each entry, ``sqrt((mean of products squared - estimate^2) / N)``
    (from the fourth moments of the samples). NumPy arrays.
    """
    rows = f(q @ k_g.T / math.sqrt(k_g.shape[-1]), beta) - row_mean(q, beta)[:, None]
    rows = np.asarray(rows)
    mc = rows.T @ rows / len(rows)
    se = np.sqrt(((rows**2).T @ rows**2 / len(rows) - mc**2) / len(rows))
    return mc, se


def kernel_f_diagonal_mean(d_k: int, beta: float) -> float:
    """``E[kernel_f(K)_jj]`` over Gaussian keys (``|k_j|^2 ~ chi^2_{d_k}``).

    ``e^{-beta^2} ((1 - 4 gamma)^{-d_k/2} - (1 - 2 gamma)^{-d_k/2})`` with
    ``gamma = beta^2 / d_k``, ``= e^{beta^2} - 1 + beta^4 (4 e^{beta^2} - 1) / d_k
    + O(d_k^{-2})``; infinite when ``4 gamma >= 1``. Divided by the diagonal
    ``e^{beta^2} - 1`` of :func:`kernel_g` it is the predicted ratio of the mean
    eigenvalues of ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]``.
    """
    gamma = beta**2 / d_k
    if 4 * gamma >= 1:
        return math.inf
    return math.exp(-(beta**2)) * ((1 - 4 * gamma) ** (-d_k / 2) - (1 - 2 * gamma) ** (-d_k / 2))


def kernel_error_first_order(n: int, d_k: int, beta: float) -> float:
    """First-order prediction of :func:`kernel_error`, ``||kernel_f - kernel_g||_F / sqrt(n)``, over Gaussian keys.

    With ``|k_j|^2 / d_k = 1 + eps_j`` and ``rho_jl = k_j . k_l / d_k``, the
    difference ``D`` has ``D_jj ~ 2 beta^2 (e^{beta^2} - 1) eps_j`` and, off the
    diagonal, ``D_jl ~ beta^4 [eps_j eps_l / 4 + rho_jl (eps_j + eps_l) / 2 + (rho_jl^2 - 1/d_k) / 2]``,
    so ``||D||_F^2 / n ~ 8 beta^4 (e^{beta^2} - 1)^2 / d_k + (7/4) beta^8 n / d_k^2``;
    returns its square root, ``O(n^{-1/2})`` at fixed ``d_k / n``.
    """
    return math.sqrt(8 * beta**4 * math.expm1(beta**2) ** 2 / d_k + 1.75 * beta**8 * n / d_k**2)


def sigma_mean_ratio(d_k: int, beta: float) -> float:
    """The predicted ratio of the mean eigenvalues of ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]``.

    ``tr Sigma ~ d_o E[kernel_jj]``, so the ratio is
    :func:`kernel_f_diagonal_mean` over the diagonal ``e^{beta^2} - 1`` of
    :func:`kernel_g`: ``1 + beta^4 (4 e^{beta^2} - 1) / (d_k (e^{beta^2} - 1)) + O(d_k^{-2})``
    (infinite when ``4 beta^2 >= d_k``).
    """
    return kernel_f_diagonal_mean(d_k, beta) / math.expm1(beta**2)


def hermite_coefficients(fn: Callable[[jax.Array], ArrayLike], degree: int, nodes: int = 80) -> np.ndarray:
    """Hermite coefficients ``c_k = E[fn(x) He_k(x)] / k!``, ``k = 0..degree``, for ``x ~ N(0, 1)``.

    ``He_k`` are the probabilists' Hermite polynomials, so that
    ``fn = sum_k c_k He_k`` in ``L^2(N(0, 1))`` and ``E[fn(x) fn(y)] = sum_k k! c_k^2 rho^k``
    for standard Gaussians with correlation ``rho``. Gauss-Hermite quadrature
    with ``nodes`` nodes (exact for polynomials ``fn`` of degree below
    ``2 nodes - degree``). For :func:`f` the coefficients are ``beta^k / k!``
    (``k >= 1``). ``fn`` maps an array of nodes (``(nodes,)``) to an array of
    values of that shape. Returns shape ``(degree + 1,)``.
    """
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)  # expectations under N(0, 1)
    values = np.asarray(fn(jnp.asarray(x)))
    ks = np.arange(degree + 1)
    c = np.array([np.sum(w * values * np.polynomial.hermite_e.hermeval(x, np.eye(degree + 1)[k])) for k in ks])
    return c / np.array([math.factorial(k) for k in ks], dtype=float)


def kernel_mean_variance(d_k: int, beta: float) -> float:
    """``Var(mu_j)`` over Gaussian keys, for ``mu = kernel_mean(K, beta)``.

    ``e^{-beta^2} ((1 - 2 gamma)^{-d_k/2} - (1 - gamma)^{-d_k})`` with
    ``gamma = beta^2 / d_k`` (``E mu_j = 0``), ``~ beta^4 / (2 d_k)``; infinite when
    ``2 gamma >= 1``. ``d_o`` times it is ``E|m|^2`` for the common row mean ``m`` of
    :func:`output_row_mean`.
    """
    gamma = beta**2 / d_k
    if 2 * gamma >= 1:
        return math.inf
    return math.exp(-(beta**2)) * ((1 - 2 * gamma) ** (-d_k / 2) - (1 - gamma) ** (-d_k))


def conditional_covariances(
    models: tuple[str, ...],
    draw: Draw,
    cfg: AttentionConfig,
    copy_keys: Sequence[tuple[jax.Array, jax.Array]],
    checkpoints: Iterable[int],
) -> np.ndarray:
    """Sample covariances of the rows with ``K, V, W^O`` fixed: ``(len(checkpoints), len(models), d_o, d_o)``.

    ``copy_keys[t-1]`` is a pair ``(query key, noise key)`` for copy
    ``t = 1, 2, ...``: the copy replaces the queries of ``draw`` by ``N(0, 1)``
    draws from its query key and builds ``models`` with its noise key
    (:func:`build_all`). At each count ``c`` in ``checkpoints`` (increasing)
    returns ``Y^T Y / (c n)`` summed over the first ``c`` copies, the sample
    covariance of ``c n`` rows, which converges to the conditional covariance
    of a row given ``K, V, W^O`` (``Sigma_G`` for ``yg_sigma_g`` and ``yg``;
    :func:`sigma`).
    """
    models = check_models(models)
    checkpoints = sorted(int(c) for c in checkpoints)
    if not checkpoints or checkpoints[0] < 1 or checkpoints[-1] > len(copy_keys):
        raise ValueError(f"checkpoints must lie in 1..{len(copy_keys)} (one key pair per copy), got {checkpoints}")
    second = jnp.zeros((len(models), cfg.d_o, cfg.d_o), jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    out = []
    for t in range(1, checkpoints[-1] + 1):
        query_key, noise_key = copy_keys[t - 1]
        q_new = jax.random.normal(query_key, draw.q.shape, draw.q.dtype)
        y = build_all(models, draw._replace(q=q_new), cfg, key=noise_key)
        second = _add_second_moment(second, y)  # on the device: no copy of Y to the host per copy
        if t in checkpoints:
            out.append(np.asarray(second) / (t * cfg.n))
    return np.array(out)


@jax.jit
def _add_second_moment(second: jax.Array, y: jax.Array) -> jax.Array:
    """``second + Y_m^T Y_m`` for every model ``m`` (``y``: ``(models, n, d_o)``), as a batched matrix product."""
    y = y.astype(second.dtype)
    return second + jnp.swapaxes(y, -1, -2) @ y


def step_distances(spectra: dict, steps: Iterable[tuple[str, str]]) -> tuple[dict, dict, dict, dict]:
    """How far each step of Table 1 moves the spectrum: distances between pairs of models, over seeds.

    ``spectra[m]`` holds the eigenvalues of model ``m`` (``(seeds, n)``, e.g. from
    :func:`gelib.spectra.model_spectra`, all models from the same draws);
    ``steps`` is a sequence of pairs ``(a, b)``. Returns four dicts keyed by the
    pairs: the :class:`~gelib.spectra.Summary` over seeds of ``100 rel_w1(a, b)``
    (percent of ``b``'s mean eigenvalue), that of ``ks(a, b)``, the raw
    ``w1(a, b)`` per seed (``(seeds,)``; a metric, so the distance of a composite
    step is at most the sum over its parts) and the mean over seeds of the
    relative shift of the mean eigenvalue, ``mean(b) / mean(a) - 1``.
    """
    from .spectra import ks, rel_w1, summarize, w1

    steps = [tuple(s) for s in steps]
    step_w1 = {s: summarize(100 * rel_w1(spectra[s[0]], spectra[s[1]])) for s in steps}
    step_ks = {s: summarize(ks(spectra[s[0]], spectra[s[1]])) for s in steps}
    raw_w1 = {s: w1(spectra[s[0]], spectra[s[1]]) for s in steps}
    mean_shift = {s: float(np.mean(spectra[s[1]].mean(1) / spectra[s[0]].mean(1) - 1)) for s in steps}
    return step_w1, step_ks, raw_w1, mean_shift


# --- the exact variance of the quadratic forms over the query (the control of Table 1, row 4) ---


def _moment_pieces(k_g: jax.Array, beta, p: int):
    """The pieces ``(E, s, log N_p)`` of the Gaussian integrals of products of ``e_j`` and ``M(q)^p``.

    ``E[e_{j_1} ... e_{j_r} M^p] = e^{-(r + p) beta^2 / 2} N_p prod_i s_{j_i} prod_{i < i'} E_{j_i j_i'}``;
    ``e_j = e^{beta a_j - beta^2 / 2}`` with ``a = K q / sqrt(d_k)`` and ``M`` as in :func:`kernel_f`;
    with ``G = beta^2 K K^T / d_k``, ``gamma = beta^2 / d_k`` and ``t = 1 / (1 - p gamma)`` the
    Gaussian integral ``E e^{c.q + p gamma |q|^2 / 2} = (1 - p gamma)^{-d_k/2} e^{t |c|^2 / 2}`` gives
    ``E = exp(t G)`` (``(n, n)``), ``s = exp(t diag(G) / 2)`` (``(n,)``) and ``N_p = (1 - p gamma)^{-d_k/2}``.
    """
    d_k = k_g.shape[-1]
    gamma = beta**2 / d_k
    t = 1 / (1 - p * gamma)
    g = beta**2 * (k_g @ k_g.T) / d_k
    return jnp.exp(t * g), jnp.exp(t * jnp.diagonal(g) / 2), -d_k / 2 * jnp.log1p(-p * gamma)


def _check_fourth_moments(k_g, beta):
    gamma = beta**2 / k_g.shape[-1]
    if gamma >= 0.25:
        raise ConfigError(f"the variance of the forms needs beta^2 / d_k < 1/4 (E[M(q)^4] diverges); got {gamma:.3g}")


def form_variance(k_g: jax.Array, b: jax.Array, beta: float, chunk: int = 8) -> tuple[jax.Array, jax.Array]:
    """Exact mean and variance over ``q ~ N(0, I)`` of ``Q(q) = f-ring(q)^T B f-ring(q) / n``, keys ``k_g`` fixed.

    ``k_g`` (``(n, d_k)``), ``B`` symmetric (``(n, n)``), ``f-ring`` as in
    :func:`kernel_f`. The mean is ``tr(B kernel_f(K)) / n``. With
    ``f-ring = e - M 1``, ``y = e^T B e``, ``z = 1^T B e``, ``c = 1^T B 1``,
    ``(n Q)^2 = y^2 - 4 M y z + 2 c M^2 y + 4 M^2 z^2 - 4 c M^3 z + c^2 M^4``, and
    every term is a sum of the Gaussian integrals of ``_moment_pieces``.
    All but the first cost ``O(n^3)``. The first,
    ``E y^2 = e^{-2 beta^2} sum_{jl} B'_jl sum_{mp} B'_mp E_jm E_lm E_jp E_lp`` with
    ``B' = B o E o s s^T``, is a complete graph on four indices: ``O(n^4)``
    flops (as matrix products, ``chunk`` rows ``j`` at a time), about a second at
    ``n = 256`` on a CPU. Needs ``beta^2 / d_k < 1/4``. Returns ``(mean, variance)``, scalars.
    """
    _check_fourth_moments(k_g, beta)
    return _form_variance(k_g, b, beta, chunk)


@functools.partial(jax.jit, static_argnames="chunk")
def _form_variance(k_g, b, beta, chunk):
    n = k_g.shape[0]
    ones = jnp.ones(n, b.dtype)
    bsum, c = b @ ones, ones @ b @ ones
    e0, s0, _ = _moment_pieces(k_g, beta, 0)
    bp = b * e0 * jnp.outer(s0, s0)

    def rows(j):  # sum_l B'_jl x_jl^T B' x_jl with x_jl = E_j o E_l, for a chunk of rows j
        x = e0[j][:, None, :] * e0[None, :, :]  # (chunk, n, n)
        return jnp.einsum("jl,jlm,jlm->j", bp[j], x @ bp, x)

    pad = -n % chunk
    idx = jnp.concatenate([jnp.arange(n), jnp.zeros(pad, int)]).reshape(-1, chunk)
    weight = jnp.concatenate([jnp.ones(n), jnp.zeros(pad)]).reshape(-1, chunk)
    terms = [jnp.sum(jax.lax.map(rows, idx) * weight)]  # E y^2 / e^{-2 beta^2}
    e1, s1, l1 = _moment_pieces(k_g, beta, 1)
    terms.append(jnp.exp(l1) * jnp.sum((b * e1 * jnp.outer(s1, s1)) * (e1 @ ((bsum * s1)[:, None] * e1))))
    e2, s2, l2 = _moment_pieces(k_g, beta, 2)
    terms.append(jnp.exp(l2) * c * jnp.sum(b * e2 * jnp.outer(s2, s2)))
    terms.append(jnp.exp(l2) * (bsum * s2) @ e2 @ (bsum * s2))
    _, s3, l3 = _moment_pieces(k_g, beta, 3)
    terms.append(jnp.exp(l3) * c * bsum @ s3)
    terms.append(jnp.exp(_moment_pieces(k_g, beta, 4)[2]) * c**2)
    second = jnp.exp(-2 * beta**2) * jnp.dot(jnp.array([1.0, -4.0, 2.0, 4.0, -4.0, 1.0]), jnp.stack(terms))
    mean = jnp.sum(b * kernel_f(k_g, beta)) / n
    return mean, second / n**2 - mean**2


def form_variance_wishart(k_g: jax.Array, beta: float, d_v: int) -> jax.Array:
    """``E_V Var_q(Q)`` for ``B = V V^T / d_v`` with ``V`` (``n x d_v``) of i.i.d. ``N(0, 1)`` entries: ``O(n^2 d_k)``.

    The average over ``V`` of :func:`form_variance`'s variance, keys ``k_g``
    (``(n, d_k)``) fixed. ``E_V[B_jl B_mp] = delta_jl delta_mp + (delta_jm delta_lp
    + delta_jp delta_lm) / d_v`` leaves
    ``[(1 + 2 / d_v) sum_{jm} E f_j^2 f_m^2 - (tr K_f)^2 - 2 tr(K_f^2) / d_v] / n^2``
    (``K_f`` = :func:`kernel_f`), and ``E f_j^2 f_m^2`` with ``f = e - M`` is nine
    Gaussian integrals (``_moment_pieces``). It is the expectation of the
    mean squared deviation ``(Q - tr(B K_f) / n)^2`` of a row over ``q`` and ``V``. A scalar.
    """
    _check_fourth_moments(k_g, beta)
    return _form_variance_wishart(k_g, beta, d_v)


@jax.jit
def _form_variance_wishart(k_g, beta, d_v):
    n, d_k = k_g.shape
    g = beta**2 * (k_g @ k_g.T) / d_k
    dg = jnp.diagonal(g)
    total = 0.0
    for a, ca, pa in ((2, 1, 0), (1, -2, 1), (0, 1, 2)):  # (e_j - M)^2 = e_j^2 - 2 e_j M + M^2
        for b, cb, pb in ((2, 1, 0), (1, -2, 1), (0, 1, 2)):
            p = pa + pb
            t = 1 / (1 - p * beta**2 / d_k)
            log_c = -2 * beta**2 - d_k / 2 * jnp.log1p(-p * beta**2 / d_k)
            quad = a**2 * dg[:, None] + b**2 * dg[None, :] + 2 * a * b * g
            total = total + ca * cb * jnp.exp(log_c) * jnp.sum(jnp.exp(t * quad / 2))
    kf = kernel_f(k_g, beta)
    return ((1 + 2 / d_v) * total - jnp.trace(kf) ** 2 - 2 * jnp.sum(kf * kf) / d_v) / n**2


# --- exact finite-size predictions (issue 12: tolerances from the mathematics) ---


def _pair_mgf(p: int, a: float, b: float, c: float, d_k: int) -> float:
    """``E[g^p exp(a s_1 + b s_2 + c g)]`` for i.i.d. ``k_i ~ N(0, I_{d_k})``, ``s_i = |k_i|^2``, ``g = k_1 . k_2``.

    Per coordinate the exponent is ``x^T A x / 2`` with ``A = [[2a, c], [c, 2b]]``, so the
    expectation is ``Delta^{-d_k/2}`` with ``Delta = (1 - 2a)(1 - 2b) - c^2``; the powers of
    ``g`` are derivatives in ``c`` (``p = 0, 1, 2``).
    """
    delta = (1 - 2 * a) * (1 - 2 * b) - c * c
    if delta <= 0:
        return math.inf
    base = math.exp(-d_k / 2 * math.log(delta))
    return (base, d_k * c * base / delta, d_k * base / delta + d_k * (d_k + 2) * c * c * base / delta**2)[p]


def kernel_error_exact(n: int, d_k: int, beta: float) -> float:
    """Exact root mean square of :func:`kernel_error` over Gaussian keys: ``sqrt(E ||kernel_f - kernel_g||_F^2 / n)``.

    ``D = kernel_f(K) - kernel_g(K)`` has entries that are functions of two keys
    only, each a sum of terms ``w g^p exp(a s_j + b s_l + c g)`` (``s = |k|^2``,
    ``g = k_j . k_l``, ``p <= 1``); so ``E D_jl^2`` and ``E D_jj^2`` are finite sums of the
    Gaussian integrals of ``_pair_mgf``, and ``E ||D||_F^2 / n = E D_jj^2 + (n - 1) E D_jl^2``.
    To leading order this is :func:`kernel_error_first_order`; the exact value also
    carries the ``O(1/d_k)`` corrections (the log-normal tails of ``e^{beta a}``, the
    mean of ``D_jj``) that steepen the decay at small ``n``. Infinite unless
    ``8 beta^2 < d_k`` (``E D_jj^2`` contains ``E e^{4 beta^2 s / d_k}``).
    """
    b2 = beta**2
    gam = b2 / d_k
    if 8 * gam >= 1:
        return math.inf
    cross = math.exp(-b2 - d_k / 2 * math.log1p(-gam))  # the terms of kernel_f
    m2 = math.exp(-b2 - d_k / 2 * math.log1p(-2 * gam))
    a1 = b2 / (2 * d_k * (1 - gam))
    # off the diagonal: (w, p, a, b, c) for pair - cross_j - cross_l + m2 - beta^2 g / d_k
    off = [
        (math.exp(-b2), 0, b2 / (2 * d_k), b2 / (2 * d_k), b2 / d_k),
        (-cross, 0, a1, 0.0, 0.0),
        (-cross, 0, 0.0, a1, 0.0),
        (m2, 0, 0.0, 0.0, 0.0),
        (-b2 / d_k, 1, 0.0, 0.0, 0.0),
    ]
    # on the diagonal (g = s_j, b = c = 0): pair - 2 cross + m2 - beta^2 s / d_k - alpha^2
    diag = [
        (math.exp(-b2), 0, 2 * b2 / d_k, 0.0, 0.0),
        (-2 * cross, 0, a1, 0.0, 0.0),
        (m2 - (math.expm1(b2) - b2), 0, 0.0, 0.0, 0.0),
        (-b2 / d_k, 1, 0.0, 0.0, 0.0),
    ]

    def second_moment(terms, on_diagonal):
        total = 0.0
        for w1, p1, a_1, b_1, c_1 in terms:
            for w2, p2, a_2, b_2, c_2 in terms:
                p, a = p1 + p2, a_1 + a_2
                if on_diagonal:  # E[s^p e^{a s}] = d (d + 2) ... (1 - 2a)^{-d/2 - p}
                    val = math.exp(-d_k / 2 * math.log1p(-2 * a)) * math.prod(d_k + 2 * i for i in range(p))
                    total += w1 * w2 * val / (1 - 2 * a) ** p
                else:
                    total += w1 * w2 * _pair_mgf(p, a, b_1 + b_2, c_1 + c_2, d_k)
        return total

    return math.sqrt(second_moment(diag, True) + (n - 1) * second_moment(off, False))


def kernel_f_zscores(k_g: jax.Array, q: jax.Array, beta: float) -> tuple[np.ndarray, float]:
    """``z``-scores of the Monte Carlo kernel against :func:`kernel_f`, and their family-wise bound.

    ``(estimate - exact) / standard error`` (:func:`kernel_f_estimate`) for the
    distinct entries ``j <= l`` (upper triangle, shape ``(n (n + 1) / 2,)``), and the
    Bonferroni bound ``Phi^{-1}(1 - 0.025 / count)``: if every ``z`` is standard
    normal, ``max |z|`` exceeds it with probability at most 5 %, whatever their
    correlations (they share the queries). The standard errors come from sample
    fourth moments, whose own variance is finite only when ``8 beta^2 < d_k``.
    """
    import scipy.stats

    mc, se = kernel_f_estimate(k_g, q, beta)
    upper = np.triu_indices(k_g.shape[0])
    z = ((mc - np.asarray(kernel_f(k_g, beta))) / se)[upper]
    return z, float(scipy.stats.norm.isf(0.025 / z.size))


def row_mean_effect(cfg: AttentionConfig, keys: Sequence[jax.Array]) -> np.ndarray:
    """The common row mean of ``Y-ring^f`` and its effect on the top eigenvalue, one layer per key.

    For each key a layer is sampled (:func:`gelib.sampling.sample_fast`); returns
    ``(len(keys), 3)``: ``|m|^2`` (:func:`output_row_mean`, expected
    ``d_o`` :func:`kernel_mean_variance`), the largest eigenvalue of ``Y Y^T / n`` for
    ``Y = Y-ring^f``, and that of the centred ``Y - 1 m^T``. A rank-one mean that
    creates an outlier shows as a gap between the last two.
    """
    from .sampling import sample_fast

    out = []
    for key in keys:
        m_sq, gram, gram_c = _row_mean_grams(sample_fast(key, cfg), cfg)
        out.append([float(m_sq), *(float(np.linalg.eigvalsh(np.asarray(g))[-1]) for g in (gram, gram_c))])
    return np.array(out)


@functools.partial(jax.jit, static_argnames=("cfg",))
def _row_mean_grams(draw: Draw, cfg: AttentionConfig):
    """``|m|^2`` and ``Y Y^T / n`` for ``Y-ring^f`` and for ``Y - 1 m^T`` (one compilation per shape)."""
    y = build("yf_ring", draw, cfg)
    m = output_row_mean(draw, cfg)
    yc = y - m[None, :]
    return m @ m, y @ y.T / cfg.n, yc @ yc.T / cfg.n


def row_mean_norms(cfg: AttentionConfig, keys: Sequence[jax.Array]) -> np.ndarray:
    """``|m|^2`` of the row mean of ``Y-ring^f`` (:func:`output_row_mean`), one layer per key: ``(len(keys),)``.

    Each key samples a layer (:func:`gelib.sampling.sample_fast`; only ``K, V, W^O``
    matter). Over layers the mean is exactly ``d_o`` :func:`kernel_mean_variance`, so
    many cheap layers test that expectation without building the outputs.
    """
    return np.array([float(_row_mean_norm(key, cfg)) for key in keys])


@functools.partial(jax.jit, static_argnames=("cfg",))
def _row_mean_norm(key: jax.Array, cfg: AttentionConfig) -> jax.Array:
    from .sampling import sample_fast

    m = output_row_mean(sample_fast(key, cfg), cfg)
    return m @ m
