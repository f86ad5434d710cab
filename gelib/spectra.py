"""Spectra of the models of Table 1 and distances between them.

Convention (:ref:`conv-model`): the spectrum of an output ``Y``
(``n x d_o``) is the set of ``n`` eigenvalues of ``Y Y^T / n``.

The Gram matrices are formed in JAX (jitted, one seed at a time, every
requested model from the same draw); the symmetric eigenvalue problem is
solved by LAPACK through NumPy on the CPU, where it is several times faster
than XLA's CPU eigensolver, and by ``jnp.linalg.eigvalsh`` on accelerators.

Precision policy: sampling and the ``n x n`` attention work run in the
configuration's dtype (``float64`` by default; ``float32`` is safe for the
models on a GPU: the spectra then agree with ``float64`` to about ``1e-5`` of
the largest eigenvalue, far below the distances the book measures, see
``tests/test_spectra.py``); the Gram matrix and its eigenvalues are always
formed in ``float64``, so eigenvalues near zero (the atom when ``d_o < n``)
stay at ``1e-15`` rather than ``1e-7``.

Two reductions make the fast path cheaper without changing any law (each
is tested against the direct form): ``Y^G``'s heads are formed in
``O(n d_k d_v)`` (see :func:`gelib.models.head_outputs`), and the Gram
matrices ``Y_i Y_i^T`` of ``Y_i = U_i W^O`` are sampled jointly from the law of
``W^O W^O^T`` (:func:`output_route`, :func:`reduced_output_grams`): without
``W^O`` at all when ``m n`` is small against ``h d_v`` (``m`` models of ``n``
tokens: GPT-3 at full context), through Bartlett's triangular factor of
``W^O W^O^T`` when ``d_o >= 1.5 h d_v``, or ``d_o >= h d_v`` in a big layer
(:func:`output_route`).
The literal path always forms ``Y = U W^O``.

Distances between two spectra with the same number ``n`` of eigenvalues:
``W1 = mean |sorted(a) - sorted(b)|``, relative ``W1 = W1 / mean(b)`` (``b``
the reference, the Gaussian equivalent in the paper's Table 2) and
``KS = sup_x |F_a(x) - F_b(x)|``. Over seeds we report the mean and the
half-width of the 95 % Student-t confidence interval.

Edges and outliers: :func:`edge_statistics` sets the largest eigenvalue of each
spectrum against the right edge ``E`` of a limit law, in units of the
Tracy-Widom scale ``sigma_n ~ n^{-2/3}`` that the law's square-root edge
implies (:func:`edge_scale`), and counts the eigenvalues beyond
``E + margin sigma_n``; :func:`edge_rate` fits the power of ``n`` at which the
largest eigenvalue approaches the edge (``-2/3`` on the Tracy-Widom scale).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.stats
from numpy.typing import ArrayLike

from .config import AttentionConfig
from .keys import stream
from .models import attention, gaussian_row_outputs, head_outputs, mha_shift_exact, output, scores
from .models.construction import check_models
from .numerics import PowerFit, host_linalg
from .sampling import sample, sample_fast

__all__ = [
    "gram",
    "eigvals",
    "spectrum",
    "mean_shift",
    "output_route",
    "machine_rates",
    "MachineRates",
    "estimate_seconds",
    "output_flops",
    "seed_flops",
    "BARTLETT_MIN_FLOPS",
    "direct_output_grams",
    "reduced_output_grams",
    "model_spectra",
    "attention_spectrum",
    "w1",
    "rel_w1",
    "shape_w1",
    "ks",
    "Summary",
    "summarize",
    "MeanCheck",
    "mean_check",
    "mean_ratios",
    "Comparison",
    "compare",
    "edge_scale",
    "EdgeStatistics",
    "edge_statistics",
    "edge_rate",
    "edge_rates",
    "step_distances",
]


def gram(y: jax.Array | np.ndarray) -> jax.Array:
    """``Y Y^T / n``, shape ``(..., n, n)``, for ``Y`` of shape ``(..., n, d_o)``."""
    # a NumPy y: numpy defers to jax.Array's __rmatmul__ (its __array_priority__), a jax.Array still
    return y @ jnp.swapaxes(y, -1, -2) / y.shape[-2]  # type: ignore[return-value]


def eigvals(c: ArrayLike) -> np.ndarray:
    """Ascending eigenvalues of positive semi-definite matrices ``(..., n, n)``, NumPy float64.

    Eigenvalues below ``n * eps * max`` are round-off of exact zeros (the
    atom when ``h d_v < n`` or ``d_o < n``) and are set to 0, so that
    distribution functions (KS) do not count their random order. Shape ``(..., n)``.
    """
    if isinstance(c, jax.Array) and jax.default_backend() != "cpu":
        ev = np.asarray(jnp.linalg.eigvalsh(c), dtype=np.float64)
    else:
        c = np.asarray(c, dtype=np.float64)
        two = host_linalg.eigvalsh_two_stage(c) if c.ndim == 2 and c.shape[0] >= host_linalg.TWO_STAGE_MIN_N else None
        if two is not None:
            ev = two
        elif c.ndim == 2:
            ev = scipy.linalg.eigvalsh(c, driver="evd", check_finite=False)
        else:
            ev = np.linalg.eigvalsh(c)
    tol = ev.shape[-1] * np.finfo(np.float64).eps * np.max(np.abs(ev), axis=-1, keepdims=True)
    return np.where(np.abs(ev) <= tol, 0.0, ev)


def spectrum(y: jax.Array | np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """Ascending eigenvalues of ``Y Y^T / n``, ``(..., n)``, for ``y`` of shape ``(..., n, d_o)``.

    Eigenvalues below ``rtol`` times the largest are set to 0: when
    ``h d_v < n`` or ``d_o < n`` the output has rank below ``n``, and the
    round-off of its exact zeros (about ``1e-15``) would otherwise enter the
    KS distance in a random order.
    """
    ev = eigvals(gram(y))
    return np.where(ev < rtol * ev.max(axis=-1, keepdims=True), 0.0, ev)


def mean_shift(n: int, d_k: int, beta: float = 1.0) -> float:
    """Leading-order relative shift of the softmax layer's mean eigenvalue.

    ``E m_MHA / E m_GE - 1 = b(n, d_k) + O(d_k^-2 + n^-2 + (n d_k)^-1)`` for
    untied layers, with ``e_k = e^{k beta^2} - 1`` and

        b(n, d_k) = e^{beta^2} / e_1 * (beta^4 / d_k + (3 e_1 - 2 e_2) / n),

    about ``1.58/d_k - 12.1/n`` at ``beta = 1``: the chi-square fluctuation
    of ``|q|^2 / d_k`` makes the attention more peaked, the finite softmax
    denominator less (the derivation is in the finite-size chapter). It does
    not depend on ``h``, ``h_kv``, ``d_v`` or ``d_o``.
    """
    e1, e2 = math.expm1(beta**2), math.expm1(2 * beta**2)
    return math.exp(beta**2) / e1 * (beta**4 / d_k + (3 * e1 - 2 * e2) / n)


def output_flops(cfg: AttentionConfig, m: int) -> dict[str, float]:
    """Flops of the output stage (``Y_i = U_i W^O`` to the Gram matrices) for
    ``m`` models, by route (see :func:`output_route`). Every product is counted
    as a dense one (``2 a b c``), although the host's BLAS halves some (a Gram
    matrix by ``dsyrk``, a triangular factor by ``dtrmm``)."""
    n, p, d_o = cfg.n, cfg.h * cfg.d_v, cfg.d_o
    big = m * n
    return {
        "direct": m * (2 * n * p * d_o + 2 * n * n * d_o),
        # R from the Gram matrix U U^T and its Cholesky factor, then R^T G and the Gram matrices
        "qr": 2 * p * big * big + big**3 / 3 + 2 * big * big * min(big, d_o) + m * 2 * n * n * min(big, d_o),
        "bartlett": 2 * big * p * p + m * 2 * n * n * p,
    }


def seed_flops(cfg: AttentionConfig, models: Iterable[str] = ("mha", "yg")) -> dict[str, float]:
    """Floating-point operations of one seed of :func:`model_spectra` on the fast path, by part:
    by default :func:`compare`'s (MHA against ``Y^G``).

    ``attention``: for ``"mha"`` the scores and ``A V`` of every head
    (``2 h n^2 (d_k + d_v)``), for ``"yg"`` the Gaussian equivalent's
    ``Q (K^T V)``, ``K^T V`` and ``G R``; ``output``: the output stage of the
    models by the route :func:`output_route` picks (:func:`output_flops`);
    ``eig``: the ``n x n`` symmetric eigensolves, counted as ``4 n^3 / 3``
    each (the tridiagonal reduction, which dominates). ``total`` is their sum.
    Sampling the Gaussian matrices is not counted (``O(n d)`` per matrix).
    Only ``"mha"`` and ``"yg"`` are counted.
    """
    models = tuple(models)
    if not models or not set(models) <= {"mha", "yg"}:
        raise ValueError(f"seed_flops counts the models 'mha' and 'yg', got {models}")
    n, h, hkv, dk, dv, m = cfg.n, cfg.h, cfg.h_kv, cfg.d_k, cfg.d_v, len(models)
    attention = 0
    if "mha" in models:
        attention += 2 * h * n * n * (dk + dv)  # scores and A V
    if "yg" in models:
        attention += 2 * h * n * dk * dv + 2 * hkv * n * dk * dv + 2 * h * n * dv * dv  # Q (K^T V), K^T V, G R
    out = output_flops(cfg, m)[output_route(cfg, m)]
    eig = m * 4 * n**3 / 3
    return {
        "attention": float(attention),
        "output": float(out),
        "eig": float(eig),
        "total": float(attention + out + eig),
    }


class MachineRates(tuple):
    """``(matmul, eig)`` as :func:`machine_rates` measures them: the float64 matmul
    rate in FLOP/s and the seconds of a ``1024 x 1024`` eigensolve, with ``busy``, a
    sentence when the machine looked loaded while it was measured (else ``None``)."""

    busy: str | None

    def __new__(cls, matmul: float, eig: float, busy: str | None = None) -> MachineRates:
        obj = super().__new__(cls, (matmul, eig))
        obj.busy = busy
        return obj

    @property
    def matmul(self) -> float:
        """The float64 matmul rate, FLOP/s."""
        return self[0]

    @property
    def eig(self) -> float:
        """The seconds of one ``1024 x 1024`` symmetric eigensolve."""
        return self[1]


def _best_of(run, rounds: int, budget: float) -> tuple[float, float]:
    """The fastest and the median of up to ``rounds`` timings of ``run()``, stopping early once
    three were taken and the best two agree within 10 %, or once ``budget`` seconds are spent."""
    import time

    times: list[float] = []
    start = time.perf_counter()
    while len(times) < rounds:
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
        best = sorted(times)
        if len(times) >= 3 and best[1] <= 1.1 * best[0] or time.perf_counter() - start > budget:
            break
    return min(times), float(np.median(times))


@functools.lru_cache(maxsize=1)
def machine_rates(size: int = 1024) -> MachineRates:
    """A quick measurement of this machine (about a second on a CPU): the float64
    matmul rate of NumPy's BLAS in FLOP/s (a ``size x size`` product) and the
    seconds of one ``size x size`` symmetric eigensolve, each the fastest of up to
    seven (five) timings, so that a moment of load from another process does not
    count: the estimates built on them (:func:`estimate_seconds`) are for the
    machine at rest. ``busy`` says when it was not: the timings spread by more
    than 1.5x, or the load average exceeded the cores this process may use.
    Measured once per process."""
    import os

    a = np.random.default_rng(0).standard_normal((size, size))
    c = a @ a.T
    mm_best, mm_median = _best_of(lambda: a @ a, rounds=7, budget=3.0)
    eig_best, eig_median = _best_of(
        lambda: scipy.linalg.eigvalsh(c, driver="evd", check_finite=False), rounds=5, budget=5.0
    )
    notes = []
    spread = max(mm_median / mm_best, eig_median / eig_best)
    if spread > 1.5:
        notes.append(f"its timings spread {spread:.1f}x")
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system
        load = 0.0
    if load > cores + 0.5:
        notes.append(f"the load average was {load:.1f} on {cores} core(s)")
    busy = (
        "this machine looked busy while it was measured (" + "; ".join(notes) + "): the estimate is the fastest "
        "of the timings, the time it takes at rest"
        if notes
        else None
    )
    return MachineRates(2 * size**3 / mm_best, eig_best, busy)


def estimate_seconds(
    cfg: AttentionConfig,
    seeds: int,
    rates: tuple[float, float] | None = None,
    models: Iterable[str] = ("mha", "yg"),
) -> float | None:
    """The expected seconds of ``model_spectra(key, cfg, models, seeds)`` on this CPU, from the layer's
    sizes; by default :func:`compare`'s.

    Per seed: the flops of :func:`seed_flops` (attention and output stage) at
    the measured matmul rate, plus one eigensolve per model scaled from the measured
    ``1024 x 1024`` one by ``(n / 1024)^3`` (``rates`` as :func:`machine_rates`
    returns them at its default size; measured if ``None``). That is the floor
    that ``benchmarks/bench_sampling.py`` measures gelib against; compilation is
    not counted. ``None`` on an accelerator,
    where the CPU's rates say nothing.
    """
    if jax.default_backend() != "cpu":
        return None
    models = tuple(models)
    rate, eig = rates or machine_rates()
    f = seed_flops(cfg, models)
    return seeds * ((f["attention"] + f["output"]) / rate + len(models) * eig * (cfg.n / 1024) ** 3)


def output_route(cfg: AttentionConfig, m: int) -> str:
    """How the fast path forms the Gram matrices of ``m`` models from their
    stacked head outputs ``U`` (``m n x p``, ``p = h d_v``):

    * ``"qr"`` where ``m n < p`` and it takes 1.5x fewer flops (GPT-3 175B):
      ``O(p (m n)^2)``, no ``W^O``;
    * ``"bartlett"`` where ``d_o >= 1.5 p``, and where ``d_o >= p`` in a big
      layer (``m n p^2 >=`` :data:`BARTLETT_MIN_FLOPS`: Falcon-7B, LLaDA-8B;
      ``d_o = h d_v`` in most transformers): ``W^O W^O^T`` sampled by its
      Bartlett factor, ``Y_i`` replaced by ``U_i L`` (``n x p`` instead of
      ``n x d_o``): at most the flops of the direct route, ``p / d_o`` of them,
      and on the host's BLAS the product with the triangular ``L`` takes half
      (``dtrmm``);
    * ``"direct"`` otherwise: ``Y = U W^O``.

    All three give the same joint law (:func:`reduced_output_grams`)."""
    flops = output_flops(cfg, m)
    p = cfg.h * cfg.d_v
    if m * cfg.n < p and 1.5 * flops["qr"] < flops["direct"]:
        return "qr"
    big = m * cfg.n * p * p >= BARTLETT_MIN_FLOPS
    return "bartlett" if cfg.d_o >= 1.5 * p or (cfg.d_o >= p and big) else "direct"


#: Where ``d_o`` is between ``h d_v`` and ``1.5 h d_v``, Bartlett's route costs the flops of the
#: direct one and saves the half of the product ``U L`` that ``dtrmm`` skips, ``m n p^2`` flops,
#: but its chi-square diagonal (``jax.random.gamma``) adds about 1.3 s of compilation per shape on
#: a 2-core CPU: worth it from about 5e10 flops (a second at that CPU's one-thread BLAS rate).
BARTLETT_MIN_FLOPS = 5e10


def direct_output_grams(u: jax.Array, w_o: jax.Array) -> jax.Array:
    """``Y_i Y_i^T / n`` with ``Y_i = U_i W^O``, ``(m, n, n)``: the direct form of :func:`reduced_output_grams`.

    ``u`` stacks the ``U_i``, ``(m, n, p)``; ``w_o`` is ``W^O``, ``(p, d_o)``.
    """
    return gram(u @ w_o)


def _bartlett(key, size: int, df: int, dtype):
    """Lower-triangular ``L`` with ``L L^T ~ Wishart_size(df, I)`` (Bartlett, ``df >= size``):
    ``L_ii = sqrt(chi^2_{df - i})``, ``L_ij ~ N(0, 1)`` below the diagonal."""
    kn, kc = jax.random.split(key)
    dof = df - jnp.arange(size, dtype=dtype)
    diag = jnp.sqrt(2.0 * jax.random.gamma(kc, dof / 2, dtype=dtype))
    return jnp.tril(jax.random.normal(kn, (size, size), dtype), -1) + jnp.diag(diag)


def reduced_output_grams(key: jax.Array, u: jax.Array, d_o: int) -> jax.Array:
    """The Gram matrices ``Y_i Y_i^T / n`` (``(m, n, n)``) of ``Y_i = U_i W^O``,
    ``W^O`` a ``p x d_o`` matrix of i.i.d. ``N(0, 1/p)`` entries independent of
    ``U`` (``u``, ``(m, n, p)``), sampled jointly in law without ``W^O``.

    Exact in law, not an approximation. Every ``Y_i Y_i^T = U_i W W^T U_i^T``
    depends on ``W`` only through the Wishart matrix ``W W^T``.

    * ``m n <= p``: with ``U^T = Q R`` (``Q`` ``p x N`` with orthonormal columns,
      ``R`` ``N x N``, ``N = m n``), ``Y = R^T (Q^T W)`` and ``G = Q^T W`` has
      i.i.d. ``N(0, 1/p)`` entries, independent of ``U`` (rotation invariance);
      ``G G^T`` is sampled as ``L L^T / p`` with Bartlett's factor ``L`` when
      ``d_o >= N``, else ``G`` itself. Cost ``O(p N^2 + N^3)``.
    * else, if ``d_o >= p``: ``W W^T`` is sampled as ``L L^T / p`` with
      Bartlett's ``p x p`` factor; ``Y_i`` is replaced by ``U_i L / sqrt(p)``.
    """
    m, n, p = u.shape
    big = m * n
    scale = jnp.sqrt(jnp.asarray(p, u.dtype))
    if big <= p:
        r = jnp.linalg.qr(u.reshape(big, p).T, mode="r")  # (N, N), U = R^T Q^T
        # rows signed so that diag(R) >= 0: the unique R (Cholesky's) that the host computes
        r = jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0).astype(r.dtype)[:, None] * r
        if d_o >= big:
            g = _bartlett(key, big, d_o, u.dtype)
        else:
            g = jax.random.normal(key, (big, d_o), u.dtype)
        return gram((r.T @ g / scale).reshape(m, n, -1))
    if d_o >= p:
        return gram(u @ (_bartlett(key, p, d_o, u.dtype) / scale))
    raise ValueError(f"the reduction needs m n <= p or d_o >= p, got m n = {big}, p = {p}, d_o = {d_o}")


def _stacked_heads(u):
    """Per-head outputs ``(h, n, d_v)`` side by side: ``U = [U_1 ... U_h]`` (``n x h d_v``)."""
    h, n, d_v = u.shape
    return jnp.transpose(u, (1, 0, 2)).reshape(n, h * d_v)


class _TracedBeta:
    """A configuration whose ``beta`` and ``alpha2`` are traced arrays (every
    other field static), so that one compilation serves every ``beta``."""

    def __init__(self, cfg: AttentionConfig, beta, alpha2):
        self._cfg, self.beta, self.alpha2 = cfg, beta, alpha2

    def __getattr__(self, name):
        return getattr(self._cfg, name)


@functools.partial(jax.jit, static_argnames=("cfg", "models", "path"))
def _grams_at(key, cfg: AttentionConfig, models: tuple[str, ...], path: str, beta, alpha2):
    draw_key, noise_key = jax.random.split(key)
    draw = sample(draw_key, cfg, path)
    tcfg = cast("AttentionConfig", _TracedBeta(cfg, beta, alpha2))  # a configuration by delegation
    x64 = jax.config.jax_enable_x64  # type: ignore[attr-defined]  # set at run time, not in jax.config's stub
    if path == "fast" and output_route(cfg, len(models)) != "direct":
        # W^O is never used, so XLA drops its sampling
        u = jnp.stack([_stacked_heads(head_outputs(m, draw, tcfg, key=noise_key)) for m in models])
        return reduced_output_grams(jax.random.fold_in(draw_key, 1), u.astype(jnp.float64) if x64 else u, cfg.d_o)
    y = jnp.stack([output(head_outputs(m, draw, tcfg, key=noise_key), draw.w_o) for m in models])
    return gram(y.astype(jnp.float64) if x64 else y)


@functools.partial(jax.jit, static_argnames=("cfg", "models", "route"))
def _output_parts_at(key, cfg: AttentionConfig, models: tuple[str, ...], route: str, beta, alpha2):
    """The device's share of one seed when the output stage runs in the host's BLAS
    (:mod:`gelib.numerics.host_linalg`): the factors of :func:`gelib.host_linalg.grams_from_parts`,
    from the same draw, noise and output keys as ``_grams_at`` (path ``"fast"``)."""
    draw_key, noise_key = jax.random.split(key)
    draw = sample(draw_key, cfg, "fast")
    tcfg = cast("AttentionConfig", _TracedBeta(cfg, beta, alpha2))  # a configuration by delegation
    u = jnp.stack([_stacked_heads(head_outputs(m, draw, tcfg, key=noise_key)) for m in models]).astype(jnp.float64)
    if route == "direct":
        return u, draw.w_o.reshape(cfg.h * cfg.d_v, cfg.d_o).astype(jnp.float64)
    m, n, p = u.shape
    big, okey = m * n, jax.random.fold_in(draw_key, 1)
    scale = jnp.sqrt(jnp.asarray(p, jnp.float64))
    if route == "qr":  # the host forms R (host_linalg.triangular_factor)
        if cfg.d_o >= big:
            return u, _bartlett(okey, big, cfg.d_o, jnp.float64) / scale
        return u, jax.random.normal(okey, (big, cfg.d_o), jnp.float64) / scale
    return u, _bartlett(okey, p, cfg.d_o, jnp.float64) / scale


def _host_route(cfg: AttentionConfig, models: tuple[str, ...], path: str, ndev: int) -> str | None:
    """The output route when the output stage runs in the host's BLAS, else ``None``."""
    if path != "fast" or ndev != 1 or not host_linalg.available():
        return None
    return output_route(cfg, len(models))


def _beta_args(cfg: AttentionConfig, models: tuple[str, ...]):
    """``(cfg with beta = 1, beta, alpha2)``: the compilation key and the traced values
    (``alpha2`` computed in float64 before any cast: it cancels at small ``beta``)."""
    dt = jnp.dtype(cfg.dtype)
    return cfg.replace(beta=1.0), jnp.asarray(cfg.beta, dt), jnp.asarray(cfg.alpha2, dt)


def _grams(key, cfg: AttentionConfig, models: tuple[str, ...], path: str):
    """Gram matrices ``Y Y^T / n`` (``(len(models), n, n)``) of one seed, jitted
    once per shape: ``beta`` is a traced argument."""
    base, beta, alpha2 = _beta_args(cfg, models)
    return _grams_at(key, base, models, path, beta, alpha2)


def seed_key(key: jax.Array, seed: int) -> jax.Array:
    """The key of seed number ``seed``: ``fold_in(key, seed)``, so runs with more seeds extend runs with fewer."""
    return jax.random.fold_in(key, seed)


@functools.lru_cache(maxsize=32)
def _sharded_grams_at(base: AttentionConfig, models: tuple[str, ...], path: str):
    return jax.pmap(lambda k, b, a: _grams_at(k, base, models, path, b, a), in_axes=(0, None, None))


def _sharded_grams(cfg: AttentionConfig, models: tuple[str, ...], path: str):
    """``_grams`` mapped over a leading axis of keys, one key per local device."""
    base, beta, alpha2 = _beta_args(cfg, models)
    fn = _sharded_grams_at(base, models, path)
    return lambda keys: fn(keys, beta, alpha2)


def model_spectra(
    key: jax.Array,
    cfg: AttentionConfig,
    models: Iterable[str] = ("mha", "yg"),
    seeds: int = 1,
    path: str = "fast",
    progress: bool = True,
    devices: int | None = None,
) -> dict[str, np.ndarray]:
    """Eigenvalues of ``Y Y^T / n`` for several models of Table 1, over seeds.

    Seed ``s`` uses ``fold_in(key, s)`` for one shared draw (``Q, K, V, W^O``)
    and noise; all models are built from it. Seeds are spread over the first
    ``devices`` local JAX devices (default: all of them, e.g. several GPUs, or
    CPU devices forced with ``XLA_FLAGS=--xla_force_host_platform_device_count=N``);
    a seed's result does not depend on the device count. Returns
    ``{model: (seeds, n)}`` arrays of ascending eigenvalues.
    """
    models = check_models(models)
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    ndev = min(devices or jax.local_device_count(), jax.local_device_count(), seeds)
    out = {m: np.empty((seeds, cfg.n)) for m in models}
    chunks = [list(range(s, min(s + ndev, seeds))) for s in range(0, seeds, ndev)]
    bar = _progress(seeds, progress, desc=f"spectra ({cfg.n}x{cfg.n}, {ndev} device{'s' * (ndev > 1)})")

    route = _host_route(cfg, models, path, ndev)

    def dispatch(chunk):
        if route is not None:
            base, beta, alpha2 = _beta_args(cfg, models)
            return [_output_parts_at(seed_key(key, chunk[0]), base, models, route, beta, alpha2)]
        if ndev == 1:
            return _grams(seed_key(key, chunk[0]), cfg, models, path)[None]
        # pad the last chunk with repeats of its first seed, then drop them
        padded = chunk + [chunk[0]] * (ndev - len(chunk))
        keys = jnp.stack([seed_key(key, s) for s in padded])
        return _sharded_grams(cfg, models, path)(keys)

    # JAX dispatches asynchronously: the next chunk's Gram matrices are being
    # formed (XLA's threads) while this chunk's eigenvalues are computed (LAPACK)
    upcoming = dispatch(chunks[0])
    for c, chunk in enumerate(chunks):
        grams = upcoming
        if c + 1 < len(chunks):
            upcoming = dispatch(chunks[c + 1])
        for j, s in enumerate(chunk):
            ev: list[np.ndarray] | np.ndarray
            if route is not None:
                # grams[j] is the pair (a, b): mypy cannot match a starred Any followed by more arguments
                ev = [eigvals(g) for g in host_linalg.grams_from_parts(route, *grams[j], len(models), cfg.n)]  # type: ignore[call-arg]
            else:
                ev = eigvals(grams[j])
            for i, m in enumerate(models):
                out[m][s] = ev[i]
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return out


def attention_spectrum(key: jax.Array, cfg: AttentionConfig) -> np.ndarray:
    """The squared singular values of one head's ``sqrt(n) A^perp`` (``n x n``), ascending, shape ``(n,)``.

    No value or output projection (the predecessor's setting): ``Q`` and ``K`` (``n x d_K``,
    i.i.d. ``N(0, 1)``) are drawn together from ``key`` as one array of shape ``(2, n, d_K)``,
    ``A`` is the row-wise softmax of ``beta Q K^T / sqrt(d_K)`` and ``A^perp = A - 1 1^T / n``;
    returns the eigenvalues of ``n A^perp A^{perp T}``. Only ``n``, ``d_K`` and ``beta`` of
    ``cfg`` are used; the limit law is :func:`gelib.attention_law.attention_law`.
    """
    q, k = jax.random.normal(key, (2, cfg.n, cfg.d_k))
    y = math.sqrt(cfg.n) * (attention(scores(q, k), cfg.beta) - 1 / cfg.n)  # sqrt(n) A^perp
    return eigvals(y @ y.T)


def _progress(total: int, enabled: bool, desc: str):
    """A progress bar on stderr that appears only for runs longer than two seconds; none
    where stderr cannot be written (closed, ``2>&-``, where Python makes it ``None``, or a
    file descriptor that is no longer open), so that a bar never fails the run it shows."""
    import io
    import os
    import sys

    stream = sys.stderr
    if not enabled or stream is None or getattr(stream, "closed", False):
        return None
    try:
        os.fstat(stream.fileno())
    except io.UnsupportedOperation:  # an in-memory stream (a test's capture): writable, no descriptor
        pass
    except (OSError, ValueError, AttributeError):  # a closed descriptor, or no file object at all
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, delay=2.0, leave=False, file=stream)


# --- distances ------------------------------------------------------------------


def w1(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Wasserstein-1 distance between empirical laws with equal sample sizes (last axis).

    ``a`` and ``b`` have shapes ``(..., n)`` that broadcast; the result has the
    broadcast leading shape ``(...)``.
    """
    return np.mean(np.abs(np.sort(a, axis=-1) - np.sort(b, axis=-1)), axis=-1)


def rel_w1(a: ArrayLike, ref: ArrayLike) -> np.ndarray:
    """``W1(a, ref) / mean(ref)``: a fraction, not a percentage; shapes as in :func:`w1`."""
    return w1(a, ref) / np.mean(ref, axis=-1)  # type: ignore[arg-type]  # numeric; np.mean's stub refuses str


def shape_w1(a: ArrayLike, ref: ArrayLike) -> np.ndarray:
    """``W1(a, s ref) / mean(ref)`` with ``s = mean(a) / mean(ref)`` (per sample): the relative
    W1 distance once the first-moment shift is taken out, the *shape* part. Shapes as in :func:`w1`.

    For nonnegative spectra ``W1(ref, s ref) = |s - 1| mean(ref)`` exactly, so the triangle
    inequality and ``W1 >= |difference of means|`` give, for every sample,
    ``|s - 1| <= rel_w1(a, ref) <= |s - 1| + shape_w1(a, ref)``: the relative W1 is the
    shift plus at most the shape part.
    """
    a, ref = np.asarray(a, float), np.asarray(ref, float)
    scale = np.mean(a, axis=-1, keepdims=True) / np.mean(ref, axis=-1, keepdims=True)
    return w1(a, scale * ref) / np.mean(ref, axis=-1)


def ks(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    """Kolmogorov-Smirnov distance ``sup |F_a - F_b|`` between empirical laws (last axis).

    ``a`` (``(..., n_a)``) and ``b`` (``(..., n_b)``) may differ in size; their
    leading shapes broadcast to that of the result, ``(...)``.
    """
    a, b = np.sort(np.asarray(a), axis=-1), np.sort(np.asarray(b), axis=-1)
    batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    a = np.broadcast_to(a, batch + a.shape[-1:])
    b = np.broadcast_to(b, batch + b.shape[-1:])
    out = np.empty(batch)
    for i in np.ndindex(batch):
        grid = np.concatenate([a[i], b[i]])
        fa = np.searchsorted(a[i], grid, side="right") / a.shape[-1]
        fb = np.searchsorted(b[i], grid, side="right") / b.shape[-1]
        out[i] = np.max(np.abs(fa - fb))
    return out[()]


@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean and 95 % confidence half-width (Student t) of per-seed values."""

    mean: float
    ci95: float
    std: float
    count: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        return f"{self.mean:.4g} +- {self.ci95:.2g}"


def summarize(values: ArrayLike) -> Summary:
    """The :class:`Summary` of ``values`` (per-seed values, any shape, flattened)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    count = v.size
    std = float(np.std(v, ddof=1)) if count > 1 else math.nan
    half = float(scipy.stats.t.ppf(0.975, count - 1) * std / math.sqrt(count)) if count > 1 else math.nan
    return Summary(float(np.mean(v)), half, std, count)


class MeanCheck(NamedTuple):
    """The mean eigenvalue of a layer's spectra against its exact expectation (:func:`~gelib.spectra.mean_check`)."""

    summary: Summary
    """The per-seed mean eigenvalues, summarised over seeds."""
    rel_err: float
    """``(mean - exact) / exact``."""
    tol: float
    """The relative tolerance on ``rel_err``."""


def mean_check(spectra: ArrayLike, cfg: AttentionConfig) -> MeanCheck:
    """The mean eigenvalue of softmax spectra (``(seeds, n)``) of the layer ``cfg`` against its exact expectation.

    The exact mean is ``m_1 (1 + b)`` for an untied layer (``m_1`` =
    ``cfg.first_moment``, ``b`` = :func:`gelib.models.mha_shift_exact`), and the limit ``m_1``
    for a tied one (no shift derived), whose tolerance then adds ``1 / sqrt(n)``. The tolerance
    is the Student-t quantile at 99 % (two-sided) times the standard error over seeds, relative
    to the exact mean. Returns the summary over seeds, the relative error and the tolerance.
    """
    s = summarize(np.mean(np.asarray(spectra, dtype=float), axis=1))
    exact = cfg.first_moment * (1 + (0.0 if cfg.tie_kv else mha_shift_exact(cfg.n, cfg.d_k, cfg.beta)))
    tol = scipy.stats.t.ppf(0.995, s.count - 1) * s.std / np.sqrt(s.count) / exact + cfg.tie_kv / np.sqrt(cfg.n)
    return MeanCheck(s, (s.mean - exact) / exact, float(tol))


def mean_ratios(kernels: tuple, cfg: AttentionConfig, key: jax.Array, seeds: int) -> np.ndarray:
    """Per seed, the ratio of the mean eigenvalues of ``Y^G[Sigma_a]`` and ``Y^G[Sigma_b]``, ``kernels = (a, b)``.

    Seed ``s`` draws the layer ``sample_fast(stream(key, "draw", s), cfg)`` and one Gaussian ``G``
    (``(h, n, d_v)``) from ``stream(key, "noise", s)``, shared by both outputs
    (:func:`gelib.models.gaussian_row_outputs`). The mean eigenvalue of ``Y Y^T / n`` is
    ``|Y|_F^2 / n^2``, so no eigenvalue is computed: a check of the shift alone can afford many
    more seeds than the spectra. Returns ``(seeds,)``.
    """
    out = []
    for s in range(seeds):
        g = jax.random.normal(stream(key, "noise", s), (cfg.h, cfg.n, cfg.d_v))
        y = np.asarray(gaussian_row_outputs(kernels, sample_fast(stream(key, "draw", s), cfg), g, cfg))
        a, b = np.sum(y * y, axis=(1, 2))
        out.append(a / b)
    return np.array(out)


@dataclasses.dataclass
class Comparison:
    """Distances between two models of Table 1 over seeds (``a`` against reference ``b``)."""

    cfg: AttentionConfig
    models: tuple[str, str]
    spectra: dict[str, np.ndarray]
    rel_w1: np.ndarray
    ks: np.ndarray

    @property
    def rel_w1_summary(self) -> Summary:
        return summarize(self.rel_w1)

    @property
    def shape(self) -> np.ndarray:
        """The shape part of the relative W1 per seed (:func:`~gelib.spectra.shape_w1` of ``a`` against ``b``).

        Shape ``(seeds,)``.
        """
        a, b = self.models
        return shape_w1(self.spectra[a], self.spectra[b])

    @property
    def ks_summary(self) -> Summary:
        return summarize(self.ks)

    def as_dict(self) -> dict:
        return {
            "config": self.cfg.as_dict(),
            "models": list(self.models),
            "seeds": int(self.rel_w1.size),
            "rel_w1": self.rel_w1_summary.as_dict(),
            "ks": self.ks_summary.as_dict(),
            "mean_eigenvalue": {m: float(np.mean(self.spectra[m])) for m in self.models},
            "predicted_mean_eigenvalue": self.cfg.first_moment,
        }


def compare(
    key: jax.Array,
    cfg: AttentionConfig,
    models: Iterable[str] = ("mha", "yg"),
    seeds: int = 10,
    path: str = "fast",
    progress: bool = True,
) -> Comparison:
    """Relative W1 and KS between the spectra of two models (default: MHA against ``Y^G``)."""
    models = check_models(models)
    if len(models) != 2 or models[0] == models[1]:
        raise ValueError(f"compare needs two different models, got {models}")
    spec = model_spectra(key, cfg, models, seeds, path, progress)
    a, b = spec[models[0]], spec[models[1]]
    return Comparison(cfg, models, spec, rel_w1(a, b), ks(a, b))


# --- edges and outliers --------------------------------------------------------------

#: Mean and standard deviation of the Tracy-Widom law ``TW_1`` (real symmetric
#: matrices), the limit of ``(lambda_max - edge) / sigma_n`` at a square-root edge.
TW1_MEAN, TW1_STD = -1.2065335745820, 1.2679830577


def edge_scale(law, n: int, eps: float = 1e-5) -> tuple[float, float]:
    """The right edge ``E`` of ``law`` and the Tracy-Widom scale ``sigma_n`` of the
    largest of ``n`` eigenvalues there, ``(E, sigma_n)``.

    At a square-root edge the density is ``rho(x) ~ sqrt(a (E - x)) / pi``; the
    largest eigenvalue of an ``n x n`` matrix with that limit law fluctuates as
    ``E + sigma_n TW`` with ``sigma_n = n^{-2/3} a^{-1/3}`` (for the semicircle,
    ``a = 1``; for Marchenko-Pastur it is Johnstone's scale, against which the
    tests check it). ``a`` is read off the law's density at ``E (1 - eps)``;
    raises ``ValueError`` when the density at ``E (1 - 10 eps)`` disagrees by more
    than 1 % (not a square-root edge). ``law`` is a :class:`gelib.freeprob.Law`.
    """
    edge = float(law.edges()[-1][1])
    a, a_far = ((math.pi * float(law.density(edge * (1 - e)))) ** 2 / (edge * e) for e in (eps, 10 * eps))
    if not abs(a_far / a - 1) <= 1e-2:
        raise ValueError(f"the right edge {edge:.6g} is not a square-root edge (a = {a:.6g} and {a_far:.6g})")
    return edge, n ** (-2 / 3) * a ** (-1 / 3)


@dataclasses.dataclass(frozen=True)
class EdgeStatistics:
    """The largest eigenvalues of ``seeds`` spectra against their law's right edge.

    ``top`` (``(seeds,)``): the largest eigenvalue of each spectrum; ``beyond``
    (``(seeds,)``): how many eigenvalues exceed ``edge + margin * scale``, the
    outliers (``P(TW_1 > 4) < 10^-3``); ``scale`` is ``sigma_n`` of :func:`edge_scale`
    for ``n`` eigenvalues.
    """

    n: int
    edge: float
    scale: float
    margin: float
    top: np.ndarray
    beyond: np.ndarray

    @property
    def deviation(self) -> np.ndarray:
        """``(lambda_max - E) / E`` per seed: ``O(n^{-2/3})`` when nothing leaves the bulk."""
        return (self.top - self.edge) / self.edge

    @property
    def scaled(self) -> np.ndarray:
        """``(lambda_max - E) / sigma_n`` per seed: ``TW_1``-distributed in the limit."""
        return (self.top - self.edge) / self.scale


def edge_statistics(eigenvalues: ArrayLike, law, margin: float = 4.0) -> EdgeStatistics:
    """The :class:`EdgeStatistics` of spectra ``(seeds, n)`` (or ``(n,)``) against ``law``'s right edge."""
    ev = np.atleast_2d(np.asarray(eigenvalues, dtype=np.float64))
    edge, sigma = edge_scale(law, ev.shape[-1])
    return EdgeStatistics(
        ev.shape[-1], edge, sigma, margin, ev.max(axis=-1), np.sum(ev > edge + margin * sigma, axis=-1)
    )


def edge_rate(ns: ArrayLike, deviations) -> PowerFit:
    """Power law ``r_n ~ C n^slope`` of the root-mean-square ``r_n = sqrt(mean_s d_s^2)`` of
    the relative deviations ``d_s = (lambda_max - E) / E`` at each length ``n`` in ``ns``
    (``deviations[i]``: the values of the seeds at ``ns[i]``; counts may differ).

    ``-2/3`` when the largest eigenvalue fluctuates on the Tracy-Widom scale. A fit of
    ``log |d_s|`` would weigh the draws that land near the edge by ``log 0``; the
    root-mean-square has ``var(log r_n) = kappa / (4 S_n)`` (delta method, ``S_n`` seeds,
    ``kappa = var(d^2) / (E d^2)^2``, 1.29 for ``TW_1``), with ``kappa`` pooled over the
    lengths (the fluctuations have one shape at every ``n`` on that scale). Weighted least
    squares of ``log r_n`` on ``log n``; ``ci95`` is the Student-t half-width with
    ``sum S_n - len(ns)`` degrees of freedom.
    """
    x = np.log(np.asarray(ns, dtype=float))
    d2 = [np.asarray(d, dtype=float) ** 2 for d in deviations]
    seeds = np.array([v.size for v in d2])
    if len(d2) != x.size or x.size < 2 or np.any(seeds < 2):
        raise ValueError(f"need two or more lengths with two or more seeds each, got seeds {seeds.tolist()}")
    m = np.array([v.mean() for v in d2])
    kappa = np.sum([np.sum((v / mv - 1) ** 2) for v, mv in zip(d2, m)]) / (seeds.sum() - x.size)
    w = 4 * seeds / kappa  # 1 / var(log r_n)
    y = 0.5 * np.log(m)
    xw = np.sum(w * x) / w.sum()
    slope = float(np.sum(w * (x - xw) * y) / np.sum(w * (x - xw) ** 2))
    prefactor = float(np.exp(np.sum(w * y) / w.sum() - slope * xw))
    half = float(scipy.stats.t.ppf(0.975, seeds.sum() - x.size) / math.sqrt(np.sum(w * (x - xw) ** 2)))
    return PowerFit(slope, prefactor, half)


def edge_rates(at_n, law, margin: float = 4.0) -> dict[str, tuple[list[EdgeStatistics], PowerFit]]:
    """:func:`edge_statistics` and :func:`edge_rate` of every model of a sweep over ``n``.

    ``at_n`` maps each length ``n`` to ``{model: (seeds, n) eigenvalues}`` (as
    :func:`model_spectra` returns), all with the limit law ``law``. Returns
    ``{model: ([statistics at each n, in the order of at_n], fit)}``.
    """
    ns = list(at_n)
    out = {}
    for m in at_n[ns[0]]:
        stats = [edge_statistics(at_n[n][m], law, margin) for n in ns]
        out[m] = stats, edge_rate(ns, [st.deviation for st in stats])
    return out


def step_distances(spectra: dict, steps: Iterable[Sequence[str]]) -> tuple[dict, dict, dict, dict]:
    """How far each step of Table 1 moves the spectrum: distances between pairs of models, over seeds.

    ``spectra[m]`` holds the eigenvalues of model ``m`` (``(seeds, n)``, e.g. from
    :func:`gelib.spectra.model_spectra`, all models from the same draws);
    ``steps`` is a sequence of pairs ``(a, b)``. Returns four dicts keyed by the
    pairs: the :class:`~gelib.spectra.Summary` over seeds of ``100 rel_w1(a, b)``
    (percent of ``b``'s mean eigenvalue), that of ``ks(a, b)``, the raw
    ``w1(a, b)`` per seed (``(seeds,)``; a metric, so the distance of a composite
    step is at most the sum over its parts) and the :class:`~gelib.spectra.Summary` over seeds
    of the relative shift of the mean eigenvalue, ``mean(a) / mean(b) - 1``: earlier model
    over later, the book's one sign convention for a step's shift, the same as
    :func:`gelib.models.step_shifts` and the bias ``b`` of :func:`mean_shift` (``Y^G`` to MHA),
    which the steps' shifts compose to.
    """

    steps = [tuple(s) for s in steps]
    step_w1 = {s: summarize(100 * rel_w1(spectra[s[0]], spectra[s[1]])) for s in steps}
    step_ks = {s: summarize(ks(spectra[s[0]], spectra[s[1]])) for s in steps}
    raw_w1 = {s: w1(spectra[s[0]], spectra[s[1]]) for s in steps}
    mean_shift = {s: summarize(spectra[s[0]].mean(1) / spectra[s[1]].mean(1) - 1) for s in steps}
    return step_w1, step_ks, raw_w1, mean_shift
