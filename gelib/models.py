"""The six equivalent random-matrix models of the paper's Table 1.

``shared/MATH.md`` section 2. Every model is built from one shared
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

import jax
import jax.numpy as jnp
import numpy as np

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
    "kernel_error",
    "numerical_rank",
]

LABELS = {
    "mha": "sqrt(n) A^perp (MHA)",
    "yf": "Y^f",
    "yf_ring": "Y-ring^f",
    "yg_sigma_f": "Y^G[Sigma_f]",
    "yg_sigma_g": "Y^G[Sigma_G]",
    "yg": "Y^G",
}
MODELS: tuple[str, ...] = tuple(LABELS)


def check_models(models) -> tuple[str, ...]:
    models = tuple(models)
    bad = [m for m in models if m not in LABELS]
    if bad:
        raise ConfigError(f"unknown model(s) {bad}; choose from {', '.join(MODELS)}")
    return models


# --- scalar pieces ------------------------------------------------------------


def f(x, beta):
    """``f(x) = exp(beta x - beta^2 / 2) - 1`` (Table A.4): mean zero for x ~ N(0,1)."""
    return jnp.expm1(beta * x - beta**2 / 2)


def scores(q_r, k_g):
    """``S_r = Q_r K_g^T / sqrt(d_k)`` (``n x n``)."""
    return q_r @ k_g.T / jnp.sqrt(jnp.asarray(q_r.shape[-1], q_r.dtype))


def attention(s, beta):
    """Row softmax of ``beta S``, computed stably (the row maximum is subtracted)."""
    return jax.nn.softmax(beta * s, axis=-1)


def row_mean(q_r, beta):
    """``E[f(S_ij) | q_i] = exp(beta^2 (|q_i|^2 / d_k - 1) / 2) - 1`` over Gaussian keys."""
    d_k = q_r.shape[-1]
    return jnp.expm1(beta**2 * (jnp.sum(q_r**2, axis=-1) / d_k - 1) / 2)


def kernel_f(k_g, beta):
    """The exact kernel ``E_q[f-ring(K q / sqrt d_k) f-ring(.)^T]`` (``n x n``).

    ``f-ring_j(q) = e^{beta a_j - beta^2/2} - M(q)`` with ``a = K q / sqrt(d_k)``,
    ``M(q) = exp(beta^2 |q|^2 / (2 d_k) - beta^2 / 2)`` and ``q ~ N(0, I)``; the
    three Gaussian integrals of MATH.md section 2.3 give it in closed form.
    Needs ``gamma = beta^2 / d_k < 1/2`` (otherwise ``E[M^2]`` is infinite).
    """
    n, d_k = k_g.shape
    gamma = beta**2 / d_k
    if not isinstance(gamma, jax.core.Tracer) and gamma >= 0.5:   # traced beta: checked by the caller
        raise ConfigError(
            f"Sigma_f needs beta^2 / d_k < 1/2 (E[M(q)^2] diverges); got "
            f"beta^2 / d_k = {gamma:.3g}"
        )
    sq = jnp.sum(k_g**2, axis=-1)
    gram = k_g @ k_g.T
    pair = jnp.exp(beta**2 * (sq[:, None] + sq[None, :] + 2 * gram) / (2 * d_k) - beta**2)
    cross = jnp.exp(-beta**2 - d_k / 2 * jnp.log1p(-gamma) + beta**2 * sq / (2 * d_k * (1 - gamma)))
    m2 = jnp.exp(-beta**2 - d_k / 2 * jnp.log1p(-2 * gamma))
    return pair - cross[:, None] - cross[None, :] + m2


def kernel_mean(k_g, beta):
    """``E_q[f-ring(K q / sqrt d_k)]`` (``n``), the rows' mean given the keys.

    ``exp(beta^2 |k_j|^2 / (2 d_k) - beta^2 / 2) - e^{-beta^2/2} (1 - gamma)^{-d_k/2}``:
    not exactly zero at finite ``d_k`` (it is ``O(1/sqrt(d_k))`` per entry), so
    :func:`kernel_f` is a second moment, not a covariance. The difference is the
    same vector for every row, a rank-``<= h`` change of the output
    (MATH.md section 2.3 calls the rows mean-zero; this is the exact statement).
    """
    d_k = k_g.shape[-1]
    gamma = beta**2 / d_k
    sq = jnp.sum(k_g**2, axis=-1)
    return jnp.exp(beta**2 * sq / (2 * d_k) - beta**2 / 2) - jnp.exp(-beta**2 / 2 - d_k / 2 * jnp.log1p(-gamma))


def kernel_g(k_g, beta):
    """The linearised kernel ``beta^2 K K^T / d_k + alpha^2 I_n``."""
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
def yg_literal(z_key: jax.Array, draw: Draw, cfg: AttentionConfig):
    """``Y^G``'s heads as written, ``(beta Q_r K_g^T / sqrt(d_k) + alpha Z_r) V_g / sqrt(n)``,
    with the ``n x n`` noise ``Z_r`` drawn: the definition, for teaching and
    for testing the reduced form used by ``build("yg", ...)`` (same law)."""
    n = cfg.n
    rn = jnp.sqrt(jnp.asarray(n, draw.q.dtype))
    alpha = jnp.sqrt(jnp.asarray(cfg.alpha2, draw.q.dtype))

    def one(r, q, k, v):
        z = jax.random.normal(jax.random.fold_in(z_key, r), (n, n), q.dtype)
        return (cfg.beta * scores(q, k) + alpha * z) @ v / rn

    return _per_head(one, draw, cfg)


def head_outputs(model: str, draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None):
    """Per-head outputs ``U_r`` (``(h, n, d_v)``) of one model of Table 1.

    ``key`` (keyword only) is the noise key of the Gaussian models (``yg_sigma_f``,
    ``yg_sigma_g``, ``yg``); the other models are deterministic given ``draw``.
    The two ``Sigma`` models share their Gaussian rows (so that they differ by
    the covariance alone); ``yg``'s noise is independent of them. ``yg`` is
    formed in ``O(n d_k d_v)`` per head, exactly in law (see
    :func:`_yg_reduced`; :func:`yg_literal` draws the ``n x n`` noise).
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


def output(u, w_o):
    """``Y = sum_r U_r W^O_r`` (``n x d_o``) from per-head outputs."""
    return jnp.einsum("rnv,rvo->no", u, w_o)


@functools.partial(jax.jit, static_argnames=("model", "cfg"))
def build(model: str, draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None):
    """The ``n x d_o`` output ``Y`` of one model of Table 1."""
    return output(head_outputs(model, draw, cfg, key=key), draw.w_o)


@functools.partial(jax.jit, static_argnames=("models", "cfg"))
def build_all(models: tuple[str, ...], draw: Draw, cfg: AttentionConfig, *, key: jax.Array | None = None):
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


@functools.partial(jax.jit, static_argnames=("cfg",))
def denominator_terms(draw: Draw, cfg: AttentionConfig) -> dict:
    """The two error terms of denominator replacement (Table 1, row 2).

    ``sqrt(n) A_r^perp = f(S_r)/sqrt(n) + (C_r - I) f(S_r)/sqrt(n) + (C_r - I) 1 1^T/sqrt(n)``
    with ``C_r = diag(n e^{beta^2/2} / row sums of e^{beta S_r})``. Returns

    * ``op_norm``: ``||(C_r - I) f(S_r) / sqrt(n)||_op`` per head (``h``),
      predicted ``n^{-1/2 + o(1)}``;
    * ``c_dev``: ``max_i |C_r,ii - 1|`` per head;
    * ``middle``: the middle term carried to the output, ``n x d_o``;
    * ``low_rank``: the last term carried to the output,
      ``sum_r (C_r - I) 1 1^T V_g W^O_r / sqrt(n)`` (``n x d_o``, rank ``<= h``).
    """
    beta = cfg.beta
    rn = jnp.sqrt(jnp.asarray(cfg.n, draw.q.dtype))

    def one(r, q, k, v):
        s = scores(q, k)
        fs = f(s, beta)
        c = cfg.n / jnp.sum(fs + 1.0, axis=-1)  # n e^{beta^2/2} / sum_j e^{beta S_ij}
        mid = (c - 1.0)[:, None] * fs / rn
        return (
            jnp.linalg.svd(mid, compute_uv=False)[0],
            jnp.max(jnp.abs(c - 1.0)),
            mid @ v,
            c - 1.0,
        )

    op, dev, mid_v, cm1 = _per_head(one, draw, cfg)
    return {
        "op_norm": op,
        "c_dev": dev,
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


@functools.partial(jax.jit, static_argnames=("cfg",))
def kernel_error(draw: Draw, cfg: AttentionConfig):
    """Normalised Frobenius error ``||kernel_f - kernel_G||_F / sqrt(n)`` per KV group.

    Table 1, row 5: predicted ``O(sqrt(log n / n))`` at fixed ratios ``d_k / n``.
    """
    def one(k):
        diff = kernel_f(k, cfg.beta) - kernel_g(k, cfg.beta)
        return jnp.linalg.norm(diff) / jnp.sqrt(jnp.asarray(cfg.n, k.dtype))

    return jax.lax.map(one, draw.k)


def numerical_rank(a, rtol: float | None = None) -> int:
    """Number of singular values above ``rtol * s_max`` (default ``max(shape) * eps * 10``)."""
    a = np.asarray(a)
    s = np.linalg.svd(a, compute_uv=False)
    if rtol is None:
        rtol = max(a.shape) * np.finfo(a.dtype).eps * 10
    return int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0
