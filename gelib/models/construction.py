"""The six equivalent random-matrix models of the paper's Table 1.

The definitions are those of the book's appendix (:ref:`conv-chain`). Every
model is built from one shared :class:`~gelib.sampling.Draw` (the same
``Q, K, V, W^O``) and one noise key,
so consecutive models differ only by the step of the proof between them:

==============  ==============================================================
``mha``         ``sqrt(n) A^perp``: the centred softmax multi-head output
``yf``          ``Y^f``: row denominators replaced by the constant ``n e^{beta^2/2}``
``yf_ring``     ``Y-ring^f``: the rows' common conditional mean ``m`` subtracted (``Y^f - 1 m^T``)
``yg_sigma_f``  ``Y^G[Sigma_f]``: Gaussian rows with the exact covariance
``yg_sigma_g``  ``Y^G[Sigma_G]``: Gaussian rows with the linearised covariance
``yg``          ``Y^G``: original queries, independent noise
==============  ==============================================================

Each model is written as ``Y = sum_r U_r W^O_r`` with per-head outputs
``U_r`` (``n x d_v``); :func:`~gelib.models.head_outputs` returns the stack
``(h, n, d_v)``. Heads are processed one at a time (``lax.map``), so memory
stays ``O(n^2 + h n d_v)`` even at GPT-3 dimensions.

The quantities that each step controls are in :mod:`gelib.models.controls`,
their closed forms in :mod:`gelib.models.predictions`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..config import AttentionConfig, ConfigError
from ..sampling import Draw

__all__ = [
    "MODELS",
    "check_models",
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
    "value_second_moments",
    "psd_roots",
    "gaussian_heads",
    "gaussian_row_outputs",
    "sigma",
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


def row_mean(x: jax.Array, beta: float | jax.Array) -> jax.Array:
    """``E[f(x . y / sqrt(d_k)) | x] = exp(beta^2 (|x|^2 / d_k - 1) / 2) - 1`` over ``y ~ N(0, I_{d_k})``.

    ``x`` has shape ``(..., n, d_k)`` (vectors on the last axis); the result ``(..., n)``.
    With ``x`` the keys ``k_j`` it is the mean of column ``j`` of ``f(S_r)`` over the
    query, :func:`kernel_mean`, which centering subtracts; with ``x`` the queries
    ``q_i`` it is the per-query mean of row ``i`` over the keys (the other reading
    of the centring step, rank up to ``h``, kept as a contrast).
    """
    d_k = x.shape[-1]
    return jnp.expm1(beta**2 * (jnp.sum(x**2, axis=-1) / d_k - 1) / 2)


def kernel_f(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """The exact kernel ``Cov_q[f(K q / sqrt d_k)]``, ``(n, n)``, of the keys ``k_g`` (``(n, d_k)``).

    The covariance over one query ``q ~ N(0, I)`` of a row of ``f(S_r)``, keys fixed:
    with ``s_j = |k_j|^2`` and ``g_jl = k_j . k_l``,
    ``exp(beta^2 (s_j + s_l) / (2 d_k) - beta^2) (exp(beta^2 g_jl / d_k) - 1)``
    (two Gaussian integrals; appendix :ref:`conv-kernel`). It exists for every ``beta``
    and ``d_k``: given the keys every moment of a log-normal is finite.
    """
    d_k = k_g.shape[-1]
    sq = jnp.sum(k_g**2, axis=-1)
    gram = k_g @ k_g.T
    return jnp.exp(beta**2 * ((sq[:, None] + sq[None, :]) / (2 * d_k) - 1)) * jnp.expm1(beta**2 * gram / d_k)


def kernel_mean(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """``mu = E_q[f(K q / sqrt d_k)]`` (``(n,)``): the mean of a row of ``f(S_r)`` given the keys ``k_g`` ``(n, d_k)``.

    ``mu_j = exp(beta^2 (|k_j|^2 / d_k - 1) / 2) - 1`` (:func:`row_mean` of the keys). Given
    ``K, V, W^O`` the rows of ``Y^f`` are i.i.d. (row ``i`` depends on the queries of
    position ``i`` only), so they share one mean, ``m = sum_r W^O_r^T V_g^T mu_g / sqrt(n)``
    (:func:`~gelib.models.output_row_mean`); centering subtracts ``1 m^T``, rank one.
    """
    return row_mean(k_g, beta)


def kernel_g(k_g: jax.Array, beta: float | jax.Array) -> jax.Array:
    """The linearised kernel ``beta^2 K K^T / d_k + alpha^2 I_n``, ``(n, n)``, of the keys ``k_g`` (``(n, d_k)``)."""
    n, d_k = k_g.shape
    alpha2 = jnp.expm1(beta**2) - beta**2
    return beta**2 * (k_g @ k_g.T) / d_k + alpha2 * jnp.eye(n, dtype=k_g.dtype)


def _psd_sqrt(m):
    w, u = jnp.linalg.eigh(m)
    return (u * jnp.sqrt(jnp.clip(w, 0.0))) @ u.T


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
    Shape ``(h, n, d_v)``, as :func:`~gelib.models.head_outputs`."""
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
            fr = f(scores(q, k), beta) - kernel_mean(k, beta)[None, :]  # every row less their common mean
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

    ``u`` has shape ``(h, n, d_v)`` (:func:`~gelib.models.head_outputs`), ``w_o`` shape ``(h, d_v, d_o)``.
    """
    return jnp.einsum("rnv,rvo->no", u, w_o)


@functools.partial(jax.jit, static_argnames=("model", "cfg"))
def build(model: str, draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None) -> jax.Array:
    """The output ``Y`` (``(n, d_o)``) of one model of Table 1; ``key`` as in :func:`~gelib.models.head_outputs`."""
    return output(head_outputs(model, draw, cfg, key=key), draw.w_o)


@functools.partial(jax.jit, static_argnames=("models", "cfg"))
def build_all(models: tuple[str, ...], draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None) -> jax.Array:
    """Outputs of several models from the same draw and noise key, stacked ``(m, n, d_o)``.

    ``key`` (keyword only) is the noise key; it is needed only when a Gaussian
    model (``yg_sigma_f``, ``yg_sigma_g``, ``yg``) is among ``models``.
    """
    return jnp.stack([build(m, draw, cfg, key=key) for m in models])


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


def gaussian_row_outputs(kernels: tuple, draw: Draw, gauss: jax.Array, cfg: AttentionConfig) -> jax.Array:
    """``Y^G[Sigma_kernel] = sum_r G_r M_g^{1/2} W^O_r`` for each kernel, from one ``G``: ``(len(kernels), n, d_o)``.

    ``kernels`` is a tuple such as ``(kernel_f, kernel_g)``: then the two
    outputs are ``Y^G[Sigma_f]`` and ``Y^G[Sigma_G]`` coupled through one
    Gaussian ``G`` (``(h, n, d_v)``), so that they differ by the covariance alone.
    Each kernel is its own compiled program: with both in one, the two independent
    eigendecompositions could deadlock XLA's CPU scheduler (jaxlib 0.10.2 on 2 cores, a
    chapter that hung on its second call; reproduced in a loop of a few seeds).
    """
    return jnp.stack([_gaussian_row_output(k, draw, gauss, cfg) for k in kernels])


@functools.partial(jax.jit, static_argnames=("kernel", "cfg"))
def _gaussian_row_output(kernel, draw: Draw, gauss: jax.Array, cfg: AttentionConfig) -> jax.Array:
    return output(gaussian_heads(gauss, value_second_moments(kernel, draw, cfg), cfg), draw.w_o)


@functools.partial(jax.jit, static_argnames=("kernel", "cfg"))
def sigma(kernel: Callable[[jax.Array, float], jax.Array], draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """``Sigma = (1/n) sum_r W^O_r^T V_g^T kernel(K_g) V_g W^O_r``, ``(d_o, d_o)``.

    With :func:`kernel_f` this is ``Sigma_f``, exactly the covariance of a row of
    ``Y-ring^f`` given ``K, V, W^O`` (its rows have mean zero given them),
    with :func:`kernel_g` it is ``Sigma_G``, the covariance of a row of ``Y^G``.
    ``kernel`` as in :func:`value_second_moments`.
    """
    m = value_second_moments(kernel, draw, cfg)
    group = jnp.arange(cfg.h) // cfg.group_size
    return jnp.einsum("rvo,rvw,rwp->op", draw.w_o, m[group], draw.w_o)
