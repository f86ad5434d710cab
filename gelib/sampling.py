"""Random multi-head attention layers: the literal and the fast sampling path.

the book's appendix (:ref:`conv-model`). The input ``X`` (``n x d``) has
``X X^T / d = I_n``; the weights ``W^Q_r, W^K_g`` (``d x d_k``) and
``W^V_g`` (``d x d_v``) are i.i.d. ``N(0, 1/d)`` and ``W^O`` (``h d_v x d_o``)
is i.i.d. ``N(0, 1/(h d_v))``.

*Literal path* (:func:`sample_literal`): build ``X`` and the weights and
multiply, ``Q_r = X W^Q_r`` and so on. This is the model as written, for
teaching; it costs ``O(n d (h d_k + h_kv (d_k + d_v)))``.

*Fast path* (:func:`sample_fast`): because ``X / sqrt(d)`` has orthonormal
rows, ``Q_r``, ``K_g`` and ``V_g`` are exactly i.i.d. ``N(0, 1)`` matrices,
independent unless tied. We sample them directly; ``d`` never appears. Both
paths return the same :class:`Draw`, so everything downstream is shared.

All functions take a JAX key first and never make their own; the same key
gives the same draw.
"""

from __future__ import annotations

import functools
import math
import statistics
import timeit
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import DTypeLike

from .config import AttentionConfig, ConfigError

__all__ = [
    "Draw",
    "LiteralDraw",
    "sample_fast",
    "sample_literal",
    "sample",
    "sampling_seconds",
    "input_matrix",
    "restrict",
]


class Draw(NamedTuple):
    """The random ingredients of one layer, as seen by the attention.

    Shapes: ``q (h, n, d_k)``, ``k (h_kv, n, d_k)``, ``v (h_kv, n, d_v)``,
    ``w_o (h, d_v, d_o)`` (``w_o[r]`` is the r-th block of ``d_v`` rows of
    ``W^O``). With K=V tying ``v`` is ``k``. Query head ``r`` uses key/value
    group ``r // (h / h_kv)``.
    """

    q: jax.Array
    k: jax.Array
    v: jax.Array
    w_o: jax.Array


class LiteralDraw(NamedTuple):
    """The literal path's input and weights, with the :class:`Draw` they give."""

    x: jax.Array  # (n, d), X X^T / d = I_n
    w_q: jax.Array  # (h, d, d_k)
    w_k: jax.Array  # (h_kv, d, d_k)
    w_v: jax.Array  # (h_kv, d, d_v)
    draw: Draw


def _dtype(cfg: AttentionConfig):
    dt = jnp.dtype(cfg.dtype)
    # jax.config's options are attributes set at run time, which its stub does not list
    if dt == jnp.float64 and not jax.config.jax_enable_x64:  # type: ignore[attr-defined]
        raise RuntimeError(
            "float64 needs JAX's x64 mode: call jax.config.update('jax_enable_x64', True) "
            "before using gelib (importing gelib does this), or use dtype='float32'"
        )
    return dt


def _output_weights(key, cfg: AttentionConfig, dtype) -> jax.Array:
    w = jax.random.normal(key, (cfg.h, cfg.d_v, cfg.d_o), dtype)
    return w / jnp.sqrt(jnp.asarray(cfg.h * cfg.d_v, dtype))


@functools.partial(jax.jit, static_argnames=("cfg",))
def sample_fast(key: jax.Array, cfg: AttentionConfig) -> Draw:
    """Sample ``Q, K, V, W^O`` directly (same law as the literal path)."""
    dtype = _dtype(cfg)
    kq, kk, kv, ko = jax.random.split(key, 4)
    q = jax.random.normal(kq, (cfg.h, cfg.n, cfg.d_k), dtype)
    k = jax.random.normal(kk, (cfg.h_kv, cfg.n, cfg.d_k), dtype)
    v = k if cfg.tie_kv else jax.random.normal(kv, (cfg.h_kv, cfg.n, cfg.d_v), dtype)
    return Draw(q, k, v, _output_weights(ko, cfg, dtype))


def input_matrix(key: jax.Array, n: int, d: int, dtype: DTypeLike = jnp.float64) -> jax.Array:
    """``X = sqrt(d) * (n orthonormal rows, Haar-distributed)``, shape ``(n, d)``, so ``X X^T / d = I_n``.

    From the QR decomposition of a ``d x n`` Gaussian matrix, with the signs
    of ``R``'s diagonal moved into ``Q`` so that the rows are exactly Haar.
    """
    g = jax.random.normal(key, (d, n), dtype)
    qmat, r = jnp.linalg.qr(g)
    qmat = qmat * jnp.sign(jnp.diagonal(r))[None, :]
    return jnp.sqrt(jnp.asarray(d, dtype)) * qmat.T


@functools.partial(jax.jit, static_argnames=("cfg",))
def sample_literal(key: jax.Array, cfg: AttentionConfig) -> LiteralDraw:
    """Build ``X`` and the weights, then ``Q_r = X W^Q_r``, ``K_g = X W^K_g``, ...."""
    dtype = _dtype(cfg)
    kx, kq, kk, kv, ko = jax.random.split(key, 5)
    x = input_matrix(kx, cfg.n, cfg.d, dtype)
    scale = 1.0 / jnp.sqrt(jnp.asarray(cfg.d, dtype))
    w_q = scale * jax.random.normal(kq, (cfg.h, cfg.d, cfg.d_k), dtype)
    w_k = scale * jax.random.normal(kk, (cfg.h_kv, cfg.d, cfg.d_k), dtype)
    w_v = w_k if cfg.tie_kv else scale * jax.random.normal(kv, (cfg.h_kv, cfg.d, cfg.d_v), dtype)
    project = lambda w: jnp.einsum("nd,gdk->gnk", x, w)  # noqa: E731
    draw = Draw(project(w_q), project(w_k), project(w_v), _output_weights(ko, cfg, dtype))
    return LiteralDraw(x, w_q, w_k, w_v, draw)


def sample(key: jax.Array, cfg: AttentionConfig, path: str = "fast") -> Draw:
    """A :class:`Draw` by the ``"fast"`` or the ``"literal"`` path."""
    if path == "fast":
        return sample_fast(key, cfg)
    if path == "literal":
        return sample_literal(key, cfg).draw
    raise ValueError(f"path must be 'fast' or 'literal', got {path!r}")


def sampling_seconds(
    key: jax.Array, cfg: AttentionConfig, paths: tuple[str, ...] = ("fast", "literal"), reps: int = 5
) -> tuple[float, ...]:
    """The wall time of sampling one layer ``cfg`` by each path (:func:`~gelib.sampling.sample_fast`,
    :func:`~gelib.sampling.sample_literal`).

    Per path, the median of ``reps`` calls ``sampler(key, cfg)`` (waited for with
    ``jax.block_until_ready``) after a first call, which compiles and is not counted.
    Returns the seconds in the order of ``paths``.
    """
    samplers = {"fast": sample_fast, "literal": sample_literal}

    def seconds(fn) -> float:
        times = timeit.repeat(lambda: jax.block_until_ready(fn(key, cfg)), number=1, repeat=reps + 1)
        return float(statistics.median(times[1:]))  # the first call compiles

    return tuple(seconds(samplers[path]) for path in paths)


def restrict(draw: Draw, cfg: AttentionConfig) -> Draw:
    """The smaller layer ``cfg`` cut out of a draw of a larger one.

    Leading blocks of matrices with i.i.d. ``N(0, 1)`` entries have i.i.d.
    ``N(0, 1)`` entries, so ``q[:, :n, :d_k]``, ``k[:, :n, :d_k]`` and
    ``v[:, :n, :d_v]`` are an exact draw of the smaller layer; the block
    ``w_o[:, :d_v, :d_o]`` is rescaled from variance ``1/(h D_v)`` to
    ``1/(h d_v)``. Nested sweeps over ``n`` use it to share randomness across
    sizes. ``cfg`` must have the draw's ``h``, ``h_kv`` and tying, and no width
    larger than the draw's; a tied ``cfg`` takes its values from the keys.
    """
    h, n_big, dk_big = draw.q.shape
    h_kv, dv_big, do_big = draw.k.shape[0], draw.v.shape[-1], draw.w_o.shape[-1]
    if (cfg.h, cfg.h_kv) != (h, h_kv):
        raise ConfigError(f"restrict: the draw has h/h_kv = {h}/{h_kv}, the layer {cfg.h}/{cfg.h_kv}")
    if cfg.n > n_big or cfg.d_k > dk_big or cfg.d_v > dv_big or cfg.d_o > do_big:
        raise ConfigError(
            f"restrict: the layer (n={cfg.n}, d_k={cfg.d_k}, d_v={cfg.d_v}, d_o={cfg.d_o}) does not fit "
            f"in the draw (n={n_big}, d_k={dk_big}, d_v={dv_big}, d_o={do_big})"
        )
    scale_o = math.sqrt(dv_big / cfg.d_v)
    k = draw.k[:, : cfg.n, : cfg.d_k]
    return Draw(
        q=draw.q[:, : cfg.n, : cfg.d_k],
        k=k,
        v=k if cfg.tie_kv else draw.v[:, : cfg.n, : cfg.d_v],
        w_o=draw.w_o[:, : cfg.d_v, : cfg.d_o] * scale_o,
    )
