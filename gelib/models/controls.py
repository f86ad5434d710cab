"""What each step of Table 1 controls, measured on one draw.

* denominator replacement: the operator norm of the middle term and the rank
  of the last (:func:`~gelib.models.denominator_terms`), the numerical rank of a matrix
  (:func:`~gelib.models.numerical_rank`);
* centring: the common row mean that it subtracts, rank one (:func:`~gelib.models.centering_terms`,
  :func:`~gelib.models.output_row_mean`, :func:`~gelib.models.centering_norm2`,
  :func:`~gelib.models.centering_mean_norm2`, :func:`~gelib.models.row_mean_effect`,
  :func:`~gelib.models.row_mean_norms`);
* Gaussian rows: the per-row quadratic forms against their conditional means
  (:func:`~gelib.models.quadratic_forms`, :func:`~gelib.models.form_deviation`), the conditional covariances of
  the rows (:func:`~gelib.models.conditional_covariances`);
* covariance approximation: the normalised Frobenius error between the two
  kernels (:func:`~gelib.models.kernel_error`), and a Monte Carlo check of the exact kernel
  (:func:`~gelib.models.kernel_f_estimate`, :func:`~gelib.models.kernel_f_zscores`).

Their predictions are in :mod:`gelib.models.predictions`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..config import AttentionConfig
from ..numerics import lanczos, top_ritz
from ..sampling import Draw, sample_fast
from .construction import (
    _per_head,
    build,
    build_all,
    check_models,
    f,
    gaussian_heads,
    head_outputs,
    kernel_f,
    kernel_g,
    kernel_mean,
    output,
    row_mean,
    scores,
    value_second_moments,
)
from .predictions import form_variance_wishart, key_norm_mgf

__all__ = [
    "denominator_terms",
    "centering_terms",
    "centering_norm2",
    "centering_mean_norm2",
    "kernel_error",
    "numerical_rank",
    "quadratic_forms",
    "form_comparison",
    "output_row_mean",
    "kernel_f_estimate",
    "form_deviation",
    "conditional_covariances",
    "kernel_f_zscores",
    "row_mean_effect",
    "row_mean_norms",
]


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
    * ``c_ms``: the mean square ``(1/n) sum_i (C_r,ii - 1)^2`` per head, whose expectation is
      :func:`~gelib.models.denominator_deviation_ms`;
    * ``max_entry``: the largest entry ``max_ij |(C_r - I) f(S_r)|_ij / sqrt(n)``
      of the middle term per head (``h``); the operator norm is at least this;
    * ``middle``: the middle term carried to the output, ``n x d_o``;
    * ``low_rank``: the last term carried to the output,
      ``sum_r (C_r - I) 1 1^T V_g W^O_r / sqrt(n)`` (``n x d_o``, rank ``<= h``).

    Compiled once per shape: ``beta`` is a traced argument, so a scan over
    ``beta`` (at fixed shapes) compiles once. The operator norms come from
    a Lanczos iteration (:mod:`gelib.numerics.krylov`; relative error below ``5e-11``,
    else exact SVDs), not from a full SVD per head, the
    chapter's slowest step at the paper's sizes; ``key`` draws its start vector
    (the norms do not depend on it beyond that accuracy).
    """
    beta = jnp.asarray(cfg.beta, draw.q.dtype)
    cfg1 = cfg.replace(beta=1.0)
    start = jax.random.normal(jax.random.key(0) if key is None else key, (cfg.n,), draw.q.dtype)
    terms = _denominator_terms(draw, cfg1, beta, start)
    alpha, off = terms.pop("lanczos")
    theta, resid = top_ritz(alpha, off)
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
    """Exact ``||(C_r - I) f(S_r) / sqrt(n)||_op`` per head (full SVDs).

    The fallback of :func:`~gelib.models.denominator_terms`."""
    return _per_head(
        lambda r, q, k, v: jnp.linalg.svd(_middle(draw, cfg, beta, q, k)[1], compute_uv=False)[0], draw, cfg
    )


_LANCZOS_STEPS = 48  # the top singular value is well separated: 32 steps left residuals <= 3e-11 at n = 2048


@functools.partial(jax.jit, static_argnames=("cfg",))
def _denominator_terms(draw: Draw, cfg: AttentionConfig, beta, start) -> dict:
    """:func:`~gelib.models.denominator_terms` with a traced ``beta`` (``cfg.beta`` is ignored).

    Returns Lanczos tridiagonals (``"lanczos"``) in place of the operator norms.
    """
    steps = min(_LANCZOS_STEPS, cfg.n)

    def one(r, q, k, v):
        cm1, mid = _middle(draw, cfg, beta, q, k)
        return lanczos(mid, start, steps), jnp.max(jnp.abs(cm1)), jnp.mean(cm1**2), jnp.max(jnp.abs(mid)), mid @ v, cm1

    tri, dev, ms, top, mid_v, cm1 = _per_head(one, draw, cfg)
    return {
        "lanczos": tri,
        "c_dev": dev,
        "c_ms": ms,
        "max_entry": top,
        "middle": output(mid_v, draw.w_o),
        "low_rank": cm1.T @ _row_vectors(draw, cfg),
    }


@functools.partial(jax.jit, static_argnames=("cfg",))
def centering_terms(draw: Draw, cfg: AttentionConfig) -> dict:
    """What centering subtracts (Table 1, row 3): ``Y^f - Y-ring^f = 1 m^T``, and the other reading beside it.

    Given ``K, V, W^O`` the rows of ``Y^f`` are i.i.d., with one common mean
    ``m`` (:func:`~gelib.models.output_row_mean`); centering subtracts ``1 m^T``, rank one in
    total, whose operator norm on the scale of ``Y / sqrt(n)`` is ``|m|``. Returns
    ``mean`` (``m``, ``(d_o,)``), ``mean_norm`` (``|m|``), ``subtracted`` (``1 m^T``,
    ``(n, d_o)``), and the per-query reading for contrast: ``per_query``, the sum over
    heads of ``m_r 1^T V_g W^O_r / sqrt(n)`` with ``m_r = E[f(S_r) | Q_r]``
    (:func:`row_mean` of the queries; ``(n, d_o)``, rank up to ``h``), and
    ``per_query_norm`` (``|m_r|_2`` per head, ``(h,)``).
    """
    m = output_row_mean(draw, cfg)
    m_q = jax.vmap(row_mean, in_axes=(0, None))(draw.q, cfg.beta)  # (h, n): per-query means over the keys
    return {
        "mean": m,
        "mean_norm": jnp.linalg.norm(m),
        "subtracted": jnp.broadcast_to(m, (cfg.n, cfg.d_o)),
        "per_query": m_q.T @ _row_vectors(draw, cfg),
        "per_query_norm": jnp.linalg.norm(m_q, axis=-1),
    }


def centering_norm2(n: int, d_k: int, beta: float) -> float:
    """``n E[row_mean(x)^2]`` for ``x ~ N(0, I_{d_k})``: ``E |mu_g|^2`` and ``E |m_r|_2^2`` (one head).

    The entries ``exp(beta^2 (rho - 1) / 2) - 1`` of :func:`row_mean`, with ``rho = |x|^2 / d_k``
    a ``chi^2_{d_k} / d_k`` variable, are the means ``mu_j`` of :func:`kernel_mean` (``x`` a key)
    and the per-query means ``m_{r,i}`` (``x`` a query): the same law. By the moment
    generating function ``E e^{t (rho - 1)} = e^{-t} (1 - 2t / d_k)^{-d_k / 2}``,

    ``n (e^{-beta^2} (1 - 2 beta^2 / d_k)^{-d_k/2} - 2 e^{-beta^2/2} (1 - beta^2 / d_k)^{-d_k/2} + 1)``,

    about ``n beta^4 / (2 d_k)``. Infinite unless ``beta^2 < d_k / 2``. For an untied layer
    (``V`` independent of ``K``) the subtracted common mean has ``E |m|^2 = d_o`` times this
    over ``n`` (:func:`~gelib.models.centering_mean_norm2`).
    """
    if 2 * beta**2 >= d_k:
        return math.inf
    return n * (key_norm_mgf(beta**2, d_k) - 2 * key_norm_mgf(beta**2 / 2, d_k) + 1)


def centering_mean_norm2(cfg: AttentionConfig) -> float:
    """``E |m|^2`` of the common row mean that centering subtracts, for an untied layer: ``d_o E mu_j^2``.

    ``m = sum_r W^O_r^T V_g^T mu_g / sqrt(n)``; averaging over ``W^O`` (variance ``1 / (h d_v)``)
    and then over ``V`` (independent of ``K``) leaves ``d_o |mu|^2 / n`` in mean, and
    ``E |mu|^2 = n E mu_j^2`` (:func:`centering_norm2`). Exact at every size; not for tied ``V = K``.
    """
    return cfg.d_o * centering_norm2(cfg.n, cfg.d_k, cfg.beta) / cfg.n


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
    a: np.ndarray | jax.Array, rtol: float | None = None, *, key: jax.Array | None = None, at_most: int | None = None
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
        assert key is not None  # given with at_most (checked above)
        a = jnp.asarray(a)
        a = a @ jax.random.normal(key, (a.shape[1], at_most + 8), a.dtype)
    a = np.asarray(a)
    s = np.linalg.svd(a, compute_uv=False)
    return int(np.sum(s > rtol * s[0])) if s[0] > 0 else 0


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


@functools.partial(jax.jit, static_argnames=("cfg",))
def form_comparison(draw: Draw, gauss: jax.Array, cfg: AttentionConfig) -> tuple[jax.Array, ...]:
    """The rows of ``Y-ring^f`` against Gaussian rows with the same covariance, on one draw (Table 1, row 4).

    ``gauss`` is a standard Gaussian array ``(h, n, d_v)``, the per-head ``G_r`` of the Gaussian rows
    (built as in :func:`~gelib.models.build`: ``G_r M_g^{1/2}`` with ``M_g = V^T K_f V / n``,
    :func:`~gelib.models.value_second_moments`, :func:`~gelib.models.gaussian_heads`). Returns

    * the outputs of ``Y-ring^f`` and of those Gaussian rows, ``(2, n, d_o)``;
    * their quadratic forms ``|u_i|^2 / d_v`` for ``B = V V^T / d_v``
      (:func:`~gelib.models.quadratic_forms`), ``(2, h, n)``;
    * the exact conditional mean of the forms per head, ``tr(M_g) / d_v``, the same for both, ``(h,)``;
    * the exact relative variances ``Var / mean^2`` of the forms per head, ``(2, h)``: over the query
      and ``V`` for the true rows (:func:`~gelib.models.form_variance_wishart`), ``2 tr(M_g^2) / d_v^2``
      given ``K, V`` for the Gaussian rows.
    """
    m = value_second_moments(kernel_f, draw, cfg)
    u = jnp.stack([head_outputs("yf_ring", draw, cfg), gaussian_heads(gauss, m, cfg)])  # (2, h, n, d_v)
    forms, exact = quadratic_forms(u, m, cfg)
    wishart = functools.partial(form_variance_wishart, beta=cfg.beta, d_v=cfg.d_v)
    var = jnp.stack([jax.vmap(wishart)(draw.k), 2 * jnp.sum(m * m, axis=(1, 2)) / cfg.d_v**2])  # (2, h_kv)
    outputs = jax.vmap(output, in_axes=(0, None))(u, draw.w_o)
    return outputs, forms, exact, var[:, jnp.arange(cfg.h) // cfg.group_size] / exact**2


def form_deviation(forms: np.ndarray | jax.Array, exact: np.ndarray | jax.Array) -> np.ndarray:
    """Relative mean absolute deviation of quadratic forms from their conditional means, per head.

    ``forms`` (``(h, n)``) and ``exact`` (``(h,)``) as returned by
    :func:`~gelib.models.quadratic_forms`: ``delta = mean_i |form_i - exact| / exact``, the
    control of quadratic-form concentration (predicted ``O(n^{-1/2})`` at fixed
    ratios). The mean absolute deviation, not the sample variance: for
    log-normal entries a sample variance over ``n`` rows is dominated by a
    handful of rows. Shape ``(h,)``.
    """
    return np.mean(np.abs(forms - exact[:, None]), axis=-1) / exact


def output_row_mean(draw: Draw, cfg: AttentionConfig) -> jax.Array:
    """The common mean ``m = sum_r W^O_r^T V_g^T mu_g / sqrt(n)`` of the rows of ``Y^f`` given ``K, V, W^O``.

    Shape ``(d_o,)``. ``mu_g = E_q[f(K_g q / sqrt(d_k))]`` is :func:`kernel_mean`; heads
    have independent queries, so the mean of a row is the sum of the heads' means.
    Centering subtracts ``1 m^T`` (:func:`centering_terms`). Over an untied layer,
    ``E|m|^2 = d_o E mu_j^2`` (:func:`~gelib.models.centering_mean_norm2`).
    """
    mu = jax.vmap(lambda k: kernel_mean(k, cfg.beta))(draw.k)  # (h_kv, n)
    group = jnp.arange(cfg.h) // cfg.group_size
    per_head = jnp.einsum("rn,rnv->rv", mu[group], draw.v[group]) / jnp.sqrt(jnp.asarray(cfg.n, draw.v.dtype))
    return jnp.einsum("rv,rvo->o", per_head, draw.w_o)


def kernel_f_estimate(k_g: jax.Array, q: jax.Array, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Monte Carlo estimate of :func:`kernel_f` from sampled queries, with per-entry standard errors.

    ``k_g`` (``(n, d_k)``) are keys, ``q`` (``(N, d_k)``) independent standard
    Gaussian queries. Each query gives the row
    ``f-ring(q) = f(K q / sqrt(d_k)) - mu`` (:func:`f`, ``mu`` = :func:`kernel_mean`, the exact mean);
    returns the average of ``f-ring f-ring^T`` (``(n, n)``) and the standard
    error of each entry, ``sqrt((mean of products squared - estimate^2) / N)``
    (from the fourth moments of the samples). NumPy arrays.
    """
    rows: jax.Array | np.ndarray = f(q @ k_g.T / math.sqrt(k_g.shape[-1]), beta) - kernel_mean(k_g, beta)[None, :]
    rows = np.asarray(rows)
    mc = rows.T @ rows / len(rows)
    se = np.sqrt(((rows**2).T @ rows**2 / len(rows) - mc**2) / len(rows))
    return mc, se


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
    # jax.config's options are attributes set at run time, which its stub does not list
    second = jnp.zeros((len(models), cfg.d_o, cfg.d_o), jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)  # type: ignore[attr-defined]
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


def kernel_f_zscores(k_g: jax.Array, q: jax.Array, beta: float) -> tuple[np.ndarray, float]:
    """``z``-scores of the Monte Carlo kernel against :func:`kernel_f`, and their family-wise bound.

    ``(estimate - exact) / standard error`` (:func:`~gelib.models.kernel_f_estimate`) for the
    distinct entries ``j <= l`` (upper triangle, shape ``(n (n + 1) / 2,)``), and the
    Bonferroni bound ``Phi^{-1}(1 - 0.025 / count)``: if every ``z`` is standard
    normal, ``max |z|`` exceeds it with probability at most 5 %, whatever their
    correlations (they share the queries). The standard errors come from sample
    fourth moments (finite: given the keys every moment of a log-normal is).
    """
    import scipy.stats

    mc, se = kernel_f_estimate(k_g, q, beta)
    upper = np.triu_indices(k_g.shape[0])
    z = ((mc - np.asarray(kernel_f(k_g, beta))) / se)[upper]
    return z, float(scipy.stats.norm.isf(0.025 / z.size))


def row_mean_effect(cfg: AttentionConfig, keys: Sequence[jax.Array]) -> np.ndarray:
    """The common row mean that centering subtracts and its effect on the top eigenvalue, one layer per key.

    For each key a layer is sampled (:func:`gelib.sampling.sample_fast`); returns
    ``(len(keys), 3)``: ``|m|^2`` (:func:`~gelib.models.output_row_mean`, expected
    :func:`~gelib.models.centering_mean_norm2`), the largest eigenvalue of ``Y Y^T / n`` for
    ``Y = Y^f``, and that of the centred ``Y-ring^f = Y^f - 1 m^T``. A rank-one mean that
    creates an outlier shows as a gap between the last two.
    """

    out = []
    for key in keys:
        m_sq, gram, gram_c = _row_mean_grams(sample_fast(key, cfg), cfg)
        out.append([float(m_sq), *(float(np.linalg.eigvalsh(np.asarray(g))[-1]) for g in (gram, gram_c))])
    return np.array(out)


@functools.partial(jax.jit, static_argnames=("cfg",))
def _row_mean_grams(draw: Draw, cfg: AttentionConfig):
    """``|m|^2`` and ``Y Y^T / n`` for ``Y^f`` and for ``Y-ring^f = Y^f - 1 m^T`` (one compilation per shape)."""
    y = build("yf", draw, cfg)
    m = output_row_mean(draw, cfg)
    yc = y - m[None, :]
    return m @ m, y @ y.T / cfg.n, yc @ yc.T / cfg.n


def row_mean_norms(cfg: AttentionConfig, keys: Sequence[jax.Array]) -> np.ndarray:
    """``|m|^2`` of the common row mean of ``Y^f`` (what centering subtracts), one layer per key: ``(len(keys),)``.

    The row mean is :func:`~gelib.models.output_row_mean`.

    Each key samples a layer (:func:`gelib.sampling.sample_fast`; only ``K, V, W^O``
    matter). Over untied layers the mean is exactly :func:`~gelib.models.centering_mean_norm2`,
    so many cheap layers test that expectation without building the outputs.
    """
    return np.array([float(_row_mean_norm(key, cfg)) for key in keys])


@functools.partial(jax.jit, static_argnames=("cfg",))
def _row_mean_norm(key: jax.Array, cfg: AttentionConfig) -> jax.Array:

    m = output_row_mean(sample_fast(key, cfg), cfg)
    return m @ m
