"""Spectra of the models of Table 1 and distances between them.

Convention (``shared/MATH.md`` section 1): the spectrum of an output ``Y``
(``n x d_o``) is the set of ``n`` eigenvalues of ``Y Y^T / n``.

The Gram matrices are formed in JAX (jitted, one seed at a time, every
requested model from the same draw); the symmetric eigenvalue problem is
solved by LAPACK through NumPy on the CPU, where it is several times faster
than XLA's CPU eigensolver, and by ``jnp.linalg.eigvalsh`` on accelerators.

Distances between two spectra with the same number ``n`` of eigenvalues:
``W1 = mean |sorted(a) - sorted(b)|``, relative ``W1 = W1 / mean(b)`` (``b``
the reference, the Gaussian equivalent in the paper's Table 2) and
``KS = sup_x |F_a(x) - F_b(x)|``. Over seeds we report the mean and the
half-width of the 95 % Student-t confidence interval.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.stats

from .config import AttentionConfig
from .models import build_all, check_models
from .sampling import sample

__all__ = [
    "gram",
    "eigvals",
    "model_spectra",
    "w1",
    "rel_w1",
    "ks",
    "Summary",
    "summarize",
    "Comparison",
    "compare",
]


def gram(y):
    """``Y Y^T / n`` for ``Y`` of shape ``(..., n, d_o)``."""
    return y @ jnp.swapaxes(y, -1, -2) / y.shape[-2]


def eigvals(c) -> np.ndarray:
    """Ascending eigenvalues of symmetric matrices ``(..., n, n)``, as NumPy float64 arrays."""
    if isinstance(c, jax.Array) and c.devices().pop().platform != "cpu":
        return np.asarray(jnp.linalg.eigvalsh(c), dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    if c.ndim == 2:
        return scipy.linalg.eigvalsh(c, driver="evd", check_finite=False)
    return np.linalg.eigvalsh(c)


@functools.partial(jax.jit, static_argnames=("cfg", "models", "path"))
def _grams(key, cfg: AttentionConfig, models: tuple[str, ...], path: str):
    draw_key, noise_key = jax.random.split(key)
    draw = sample(draw_key, cfg, path)
    return gram(build_all(models, draw, cfg, noise_key))


def seed_key(key: jax.Array, seed: int) -> jax.Array:
    """The key of seed number ``seed``: ``fold_in(key, seed)``, so runs with more seeds extend runs with fewer."""
    return jax.random.fold_in(key, seed)


def model_spectra(
    key: jax.Array,
    cfg: AttentionConfig,
    models=("mha", "yg"),
    seeds: int = 1,
    path: str = "fast",
    progress: bool = True,
) -> dict[str, np.ndarray]:
    """Eigenvalues of ``Y Y^T / n`` for several models of Table 1, over seeds.

    Seed ``s`` uses ``fold_in(key, s)`` for one shared draw (``Q, K, V, W^O``)
    and noise; all models are built from it. Returns ``{model: (seeds, n)}``
    arrays of ascending eigenvalues.
    """
    models = check_models(models)
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    out = {m: np.empty((seeds, cfg.n)) for m in models}
    for s in _progress(range(seeds), progress, desc=f"spectra ({cfg.n}x{cfg.n})"):
        ev = eigvals(_grams(seed_key(key, s), cfg, models, path))
        for i, m in enumerate(models):
            out[m][s] = ev[i]
    return out


def _progress(it, enabled: bool, desc: str):
    if not enabled:
        return it
    from tqdm.auto import tqdm

    # Appears only for runs longer than two seconds, on stderr.
    return tqdm(it, desc=desc, delay=2.0, leave=False)


# --- distances ------------------------------------------------------------------


def w1(a, b) -> np.ndarray:
    """Wasserstein-1 distance between empirical laws with equal sample sizes (last axis)."""
    return np.mean(np.abs(np.sort(a, axis=-1) - np.sort(b, axis=-1)), axis=-1)


def rel_w1(a, ref) -> np.ndarray:
    """``W1(a, ref) / mean(ref)``: a fraction, not a percentage."""
    return w1(a, ref) / np.mean(ref, axis=-1)


def ks(a, b) -> np.ndarray:
    """Kolmogorov-Smirnov distance ``sup |F_a - F_b|`` between empirical laws (last axis)."""
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


def summarize(values) -> Summary:
    v = np.asarray(values, dtype=np.float64).ravel()
    count = v.size
    std = float(np.std(v, ddof=1)) if count > 1 else math.nan
    half = float(scipy.stats.t.ppf(0.975, count - 1) * std / math.sqrt(count)) if count > 1 else math.nan
    return Summary(float(np.mean(v)), half, std, count)


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
    models=("mha", "yg"),
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
