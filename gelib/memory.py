"""How much memory sampling a layer needs, checked before anything is allocated.

:func:`layer_bytes` estimates the working set of
:func:`gelib.spectra.model_spectra` (and so of :func:`gelib.spectra.compare`
and ``python -m gelib compare``) for one layer, part by part, in bytes at the
configuration's dtype: the draw (:mod:`gelib.sampling`: ``Q, K, V, W^O``, and
on the literal path the input ``X`` (``n x d``), its QR factors and the
weights), the per-head ``n x n`` work of each model (scores, softmax or
kernel, one head at a time), the stacked head outputs, the output stage
(``Y = U W^O`` or its reductions, :func:`gelib.spectra.output_route`), the
``n x n`` Gram matrices in float64 (two seeds' worth when seeds are
pipelined), the host copy that the eigenvalue solver works on, and the
eigenvalues of every seed, which :func:`gelib.spectra.model_spectra` keeps
for all seeds at once (``seeds x n`` per model), with the sorted copies that
the distances make of them: the one part that grows with ``--seeds``.

:func:`check_memory` compares the total with a limit, by default the memory
the machine has available now (:func:`available_bytes`: ``MemAvailable`` of
``/proc/meminfo``, else ``os.sysconf``; on an accelerator also the device's
free memory), and raises :class:`MemoryLimitError` (a
:class:`~gelib.config.ConfigError`) with the estimate and the limit, so that
an impossible layer fails with one line instead of an allocator abort.
:func:`parse_size` and :func:`format_size` read and write sizes such as
``4GB`` or ``512MiB``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable

import numpy as np

from .config import AttentionConfig, ConfigError
from .models.construction import check_models
from .spectra import output_route

__all__ = [
    "MemoryLimitError",
    "draw_bytes",
    "layer_bytes",
    "estimate_bytes",
    "available_bytes",
    "check_memory",
    "parse_size",
    "format_size",
]

F64 = 8  # the Gram matrices and eigenvalues are always float64

# the spectra of every seed, (seeds, n) float64 per model, are held at once (model_spectra); the
# distances add sorted copies of two of them and their difference (w1) while they are computed
_SPECTRA_COPIES = 3

# per-head n x n temporaries of each model, in n^2 entries of the dtype (one head at a time):
# softmax: scores and exp(beta S); f(S): scores and f; the kernels: K K^T, the exponent, the kernel
_HEAD_SQUARES = {"mha": 2, "yf": 2, "yf_ring": 2, "yg_sigma_f": 3, "yg_sigma_g": 3, "yg": 0}


class MemoryLimitError(ConfigError):
    """A layer whose estimated working set (:func:`layer_bytes`) exceeds the memory limit."""


def draw_bytes(cfg: AttentionConfig, path: str = "fast") -> int:
    """Bytes of the arrays one draw consists of: ``Q, K, V, W^O`` (:class:`~gelib.sampling.Draw`)
    and, on the literal path, ``X`` and the weights ``W^Q, W^K, W^V``
    (:class:`~gelib.sampling.LiteralDraw`); ``V`` is ``K`` under K=V tying.
    Exactly the ``nbytes`` of what :func:`~gelib.sampling.sample_fast` or
    :func:`~gelib.sampling.sample_literal` return."""
    b = np.dtype(cfg.dtype).itemsize
    n, d, h, h_kv, d_k, d_v, d_o = cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k, cfg.d_v, cfg.d_o
    v = 0 if cfg.tie_kv else h_kv * n * d_v
    entries = h * n * d_k + h_kv * n * d_k + v + h * d_v * d_o
    if path == "literal":
        entries += n * d + h * d * d_k + h_kv * d * d_k + (0 if cfg.tie_kv else h_kv * d * d_v)
    elif path != "fast":
        raise ValueError(f"path must be 'fast' or 'literal', got {path!r}")
    return entries * b


def layer_bytes(
    cfg: AttentionConfig, models: Iterable[str] = ("mha", "yg"), path: str = "fast", seeds: int = 1
) -> dict[str, int]:
    """Estimated working set of :func:`gelib.spectra.model_spectra` for one layer, by part (bytes).

    Parts: ``"draw"`` (:func:`draw_bytes`, plus the ``d x n`` Gaussian matrix
    whose QR factor gives ``X`` on the literal path), ``"heads"`` (the largest per-head
    ``n x n`` work of any model, and the stacked head outputs ``h x n x d_v`` of
    every model), ``"output"`` (``Y = U W^O``, ``m x n x d_o``, or the factors
    of the reduced route, and float64 copies of them), ``"gram"`` (the ``m``
    Gram matrices ``n x n`` in float64, twice when ``seeds > 1``: the next
    seed's are formed while this seed's eigenvalues are computed) and
    ``"host"`` (the float64 copy the eigenvalue solver factorises, and its
    workspace) and ``"spectra"`` (the eigenvalues of all seeds, ``m x seeds
    x n`` in float64, which :func:`gelib.spectra.model_spectra` holds at once,
    and the three ``seeds x n`` arrays the distances make: two sorted copies
    and their difference).  ``m`` is the number of models.  An estimate of the live
    arrays, not of XLA's scheduling: measured peaks stay within a factor 2 of
    the total (``tests/test_memory.py``)."""

    parts = dict.fromkeys(PARTS, 0)
    for part, nbytes, _ in _terms(cfg, models, path, seeds):
        parts[part] += nbytes
    return parts


#: The parts of :func:`layer_bytes`, in order.
PARTS = ("draw", "heads", "output", "gram", "host", "spectra")

# What to lower where a term of the estimate is the largest: the dimensions it grows with, and why.
_LOWER_N2 = "n (the n x n scores and Gram matrices grow as n^2)"
_LOWER_QKV = "n, h or d_K (the queries, keys and values, n x d_K per head)"
_LOWER_KV = "h, d_K or d_V (the d_K x d_V products K^T V of every head)"
_LOWER_WO = "d_O (d unless --do is given), h or d_V (the output weights W^O, h d_V x d_O)"
_LOWER_X = "d (the n x d input X of the literal path, and the d x n Gaussian matrix it is drawn from)"
_LOWER_W = "d (the weights W^Q, W^K, W^V of the literal path, d x d_K per head)"
_LOWER_HEADS = "n, h or d_V (the stacked head outputs, h x n x d_V per model)"
_LOWER_Y = "d_O (d unless --do is given) or n (the outputs Y = U W^O, n x d_O per model)"
_LOWER_P = "h or d_V (the output stage's h d_V x h d_V factor)"
_LOWER_SEEDS = "--seeds (the eigenvalues of every seed are held at once, seeds x n per model)"


def _terms(cfg: AttentionConfig, models: Iterable[str], path: str, seeds: int) -> list[tuple[str, int, str]]:
    """The terms of :func:`layer_bytes`: ``(part, bytes, what to lower)`` for each array
    (or group of arrays alike), where "what to lower" names the dimensions the term grows
    with, for :func:`check_memory`'s advice."""
    models = check_models(models)
    m = len(models)
    b = np.dtype(cfg.dtype).itemsize
    n, d, h, h_kv, d_k, d_v, d_o = cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k, cfg.d_v, cfg.d_o
    draw_bytes(cfg, path)  # refuses a path that is neither "fast" nor "literal"
    v = 0 if cfg.tie_kv else h_kv * n * d_v
    terms = [
        ("draw", (h * n * d_k + h_kv * n * d_k + v) * b, _LOWER_QKV),
        ("draw", h * d_v * d_o * b, _LOWER_WO),
    ]
    if path == "literal":
        weights = h * d * d_k + h_kv * d * d_k + (0 if cfg.tie_kv else h_kv * d * d_v)
        terms += [("draw", 2 * n * d * b, _LOWER_X), ("draw", weights * b, _LOWER_W)]
    square = max(_HEAD_SQUARES[x] for x in models) * n * n * b
    vectors = 4 * n * max(d_k, d_v) * b  # per-head vectors
    products = 2 * h_kv * (d_k * d_v + d_v * d_v) * b  # K^T V and the roots
    terms += [
        ("heads", square, _LOWER_N2),
        ("heads", vectors, _LOWER_QKV),
        ("heads", products, _LOWER_KV),
        ("heads", m * h * n * d_v * b, _LOWER_HEADS),
    ]
    widen = 0 if b == F64 else F64  # float32 outputs are widened to float64 before the Gram matrices
    p = h * d_v
    route = "direct" if path == "literal" else output_route(cfg, m)
    if route == "direct":
        terms.append(("output", m * n * d_o * (b + widen), _LOWER_Y))
    elif route == "bartlett":
        terms += [("output", m * n * p * (b + widen + F64), _LOWER_HEADS), ("output", p * p * F64, _LOWER_P)]
    else:  # "qr": U (m n x p) and its transpose (the device's QR), R (m n x m n), the Gaussian factor, R^T G
        big = m * n
        terms += [
            ("output", big * p * (2 * b + widen), _LOWER_HEADS),
            ("output", big * big * F64 + 2 * big * min(big, d_o) * F64, _LOWER_N2),
        ]
    terms += [
        ("gram", m * n * n * F64 * (2 if seeds > 1 else 1), _LOWER_N2),
        ("host", m * n * n * F64 + 4 * n * F64, _LOWER_N2),
        ("spectra", (m + _SPECTRA_COPIES) * seeds * n * F64, _LOWER_SEEDS),
    ]
    return terms


def estimate_bytes(
    cfg: AttentionConfig, models: Iterable[str] = ("mha", "yg"), path: str = "fast", seeds: int = 1
) -> int:
    """The total of :func:`layer_bytes`, in bytes."""
    return sum(layer_bytes(cfg, models, path, seeds).values())


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def available_bytes() -> tuple[int | None, str]:
    """``(bytes, source)``: the memory available for a new layer now, and where
    the number comes from: ``MemAvailable`` of ``/proc/meminfo`` (else
    ``os.sysconf``) on the host; on an accelerator the smaller of that and the
    device's free memory (``bytes_limit - bytes_in_use`` of JAX's memory
    statistics).  ``(None, reason)`` when neither can be read."""
    host = _meminfo_available()
    best, source = host, "MemAvailable" if host is not None else "unknown"
    try:
        import jax

        dev = jax.devices()[0]
        if dev.platform != "cpu":
            stats = dev.memory_stats() or {}
            if "bytes_limit" in stats:
                free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
                if best is None or free < best:
                    best, source = free, f"free memory of {dev.platform} device 0"
    except Exception:  # no accelerator statistics: the host's number stands
        pass
    return best, source


def check_memory(
    cfg: AttentionConfig,
    models: Iterable[str] = ("mha", "yg"),
    path: str = "fast",
    seeds: int = 1,
    limit: int | None = None,
) -> int:
    """Raise :class:`MemoryLimitError` when the estimate (:func:`layer_bytes`)
    exceeds ``limit`` bytes (default: :func:`available_bytes`; no check when
    that cannot be read); return the estimate otherwise.  The message gives
    the estimate, its largest parts and the limit, and advises lowering the
    dimensions that the largest array of the estimate grows with: ``n`` for the
    ``n x n`` scores and Gram matrices, ``d`` for the input and the weights of
    the literal path, ``d_O`` (which is ``d`` unless given) for ``W^O`` and the
    outputs ``Y``, ``h`` and ``d_V`` for the stacked head outputs, ``--seeds``
    for the eigenvalues of every seed."""
    models = tuple(models)
    terms = _terms(cfg, models, path, seeds)
    parts = dict.fromkeys(PARTS, 0)
    for part, nbytes, _ in terms:
        parts[part] += nbytes
    total = sum(parts.values())
    if limit is None:
        limit, source = available_bytes()
        if limit is None:
            return total
        source, advice = f"available ({source})", "(--max-memory SIZE sets another limit)"
    else:
        source, advice = "the limit (--max-memory)", "or raise --max-memory"
    if total > limit:
        top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
        detail = ", ".join(f"{name} {format_size(v)}" for name, v in top)
        lower = "lower " + max(terms, key=lambda t: t[1])[2]  # the dimensions of the largest array
        raise MemoryLimitError(
            f"this layer needs about {format_size(total)} of memory ({detail}; n={cfg.n}, d={cfg.d}, "
            f"{len(models)} model{'s' * (len(models) != 1)}, {seeds} seed{'s' * (seeds != 1)}, {path} path) "
            f"but {format_size(limit)} is {source}; {lower} {advice}"
        )
    return total


_UNITS = {"": 1, "b": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.I)


def parse_size(text: str) -> int:
    """Bytes from a size such as ``4GB``, ``4G``, ``512MiB``, ``1.5e9`` or ``2tb``:
    ``k, M, G, T`` (with or without ``B``) are powers of 1000, ``KiB, MiB, GiB,
    TiB`` powers of 1024; a bare number is bytes.  Raises ``ValueError`` for
    anything else, for a size that is not finite (``1e400``) or below 1 byte."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"not a size: {text!r} (e.g. 4GB, 512MiB, 1e9)")
    number, unit, binary, _ = match.groups()
    unit = unit.lower()
    if binary and not unit:
        raise ValueError(f"not a size: {text!r} (e.g. 4GB, 512MiB, 1e9)")
    factor = 1024 ** "kmgt".index(unit) * 1024 if binary else _UNITS[unit]
    value = float(number) * factor
    if not math.isfinite(value):
        raise ValueError(f"not a finite size: {text!r} overflows to infinity (e.g. 4GB, 512MiB, 1e9)")
    if value < 1:
        raise ValueError(f"a size must be at least 1 byte, got {text!r}")
    return int(value)


def format_size(nbytes: float) -> str:
    """``nbytes`` in the largest decimal unit below it: ``'4.29 GB'``, ``'512 B'``."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if abs(nbytes) >= factor:
            return f"{nbytes / factor:.3g} {unit}"
    return f"{nbytes:.0f} B"
