"""Sweeps over the context length: independent draws per (n, seed), or nested draws.

*Independent draws.* A rate chapter measures the same quantities on independent draws of a layer
at several context lengths ``n`` (the proportional limit of the paper: all
widths grow with ``n``, ``h`` and ``beta`` fixed). The measurement is a
function of one layer and one key that returns named fields::

    def measure(cfg, key):
        draw = gelib.sampling.sample_fast(key, cfg)
        ...
        return dict(op_norm=..., ev_mha=..., rank=...)

:func:`run` calls it on the whole grid of ``(n, seed)`` and returns a
:class:`Sweep`. Seed ``s`` at length ``n`` gets the key
``gelib.keys.stream(key, n, s)`` (that is ``fold_in(fold_in(key, n), s)``),
so a sweep with more lengths or more seeds extends a smaller one draw by
draw. The fields are read back as arrays over the grid:

* :meth:`Sweep.field` stacks one field, ``(len(ns), seeds, ...)``, optionally
  reducing each draw's value first (``np.max`` over heads, ...);
* :meth:`Sweep.apply` evaluates a function of several fields of every draw,
  e.g. the distance between two spectra;
* :meth:`Sweep.at` and :meth:`Sweep.record` give the draws at one length.

:func:`proportional` builds a layer whose widths are fixed fractions of ``n``;
:func:`slope_within` is the test applied to the fitted rates of such sweeps.

*Nested draws.* A chapter that measures a control quantity against ``n`` at fixed ratios of
the dimensions needs, for every seed, one layer at each size of the sweep.
Sampling each size afresh costs one draw per size and seed and gives
independent noise at every ``n``. :class:`NestedDraws` instead samples each
seed once, at the largest layer of the sweep, and cuts every smaller layer
out of it with :func:`gelib.sampling.restrict`: leading blocks of matrices
with i.i.d. ``N(0, 1)`` entries have i.i.d. ``N(0, 1)`` entries, so each
block is an exact draw of the smaller layer (only ``W^O`` is rescaled, to
variance ``1/(h d_v)``). The draws of one seed are then nested across ``n``
and every shape is sampled once.

Each seed also carries a noise key, and optionally a standard Gaussian array
``G`` of shape ``(h, n, d_v)`` at the largest layer whose leading blocks are
the per-head Gaussian matrices ``G_r`` of the Gaussian-row models (so that the
Gaussian rows are nested too). :meth:`NestedDraws.layer` is the explorers'
rule: a layer that fits inside the big one is cut out of seed 0, any other is
sampled afresh.

*What a sweep measures.* Spectral distances between two models over a sweep
are :func:`sweep_distances` (their two-panel rate figure is
:func:`gelib.plotting.plot_distance_rates`); :func:`sample_covariance_error`
is the exact ``N^{-1/2}`` rate of a Gaussian sample covariance;
:func:`agree_at_every_size` compares measured means with their predictions at
every size of a sweep, jointly. Rates are fitted by
:func:`gelib.numerics.fit_power_law`.

The keys come from the chapter; nothing here makes its own.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from .config import AttentionConfig, ConfigError
from .keys import stream
from .models import (
    STEPS,
    build_all,
    conditional_covariances,
    denominator_deviation_ms,
    gaussian_max_abs_mean,
    kernel_f,
    kernel_g,
    sigma,
    step_shifts_exact,
)
from .numerics import PowerFit, fit_power_law
from .sampling import Draw, restrict, sample_fast
from .spectra import ks, rel_w1

__all__ = [
    "proportional",
    "Sweep",
    "run",
    "slope_within",
    "log_factor_allowance",
    "RATE_ALTERNATIVES",
    "RateCheck",
    "rate_check",
    "max_deviation_check",
    "Seed",
    "NestedDraws",
    "main_layer",
    "explorer_sliders",
    "CopyErrors",
    "copy_errors",
    "sample_covariance_error",
    "sweep_distances",
    "DistanceRates",
    "Agreement",
    "agree_at_every_size",
    "sigma_moments",
    "group_spread",
    "regime_layers",
    "RegimeCheck",
    "regime_check",
    "regime_values",
    "step_shift_values",
    "step_shift_check",
]


def proportional(
    n: int, *, h: int, d_k: float, d_v: float, d_o: float, beta: float = 1.0, **fields: Any
) -> AttentionConfig:
    """The layer at context length ``n`` whose widths are fixed fractions of ``n``.

    ``d_k``, ``d_v`` and ``d_o`` are the ratios ``d_K/n``, ``d_V/n`` and
    ``d_O/n``; each width is ``max(1, round(ratio * n))``, and the input width is
    ``d = max(n, d_O)``. Further ``fields`` (``h_kv``, ``tie_kv``, ``dtype``)
    go to :class:`~gelib.AttentionConfig` as they are. With
    ``AttentionConfig.at_length`` this gives the layers of a sweep.

    >>> proportional(256, h=4, d_k=1 / 2, d_v=1 / 2, d_o=3 / 2).describe()
    'n=256, d=384, h/h_kv=4/4 (none), d_k=128, d_v=128, d_o=384, beta=1'
    """
    width = lambda ratio: max(1, round(ratio * n))  # noqa: E731
    return AttentionConfig(
        n=n, d=max(n, width(d_o)), h=h, d_k=width(d_k), d_v=width(d_v), d_o=width(d_o), beta=beta, **fields
    )


def _numpy(value):
    """JAX arrays to NumPy (so that records can be pickled and reduced); other values as they are."""
    return np.asarray(value) if isinstance(value, jax.Array) else value


@dataclasses.dataclass(frozen=True, eq=False)
class Sweep:
    """The fields measured on every draw of a sweep.

    ``configs[i]`` is the layer at length ``ns[i]``; ``records[i][s]`` is the
    dictionary that the measurement returned for seed ``s`` of that layer.
    """

    configs: tuple[AttentionConfig, ...]
    records: tuple[tuple[Mapping[str, object], ...], ...]

    @property
    def ns(self) -> tuple[int, ...]:
        """The context lengths, in the order of the sweep."""
        return tuple(c.n for c in self.configs)

    @property
    def seeds(self) -> int:
        """The number of seeds per length."""
        return len(self.records[0]) if self.records else 0

    def _index(self, n: int) -> int:
        try:
            return self.ns.index(n)
        except ValueError:
            raise KeyError(f"n = {n} is not in the sweep (ns = {self.ns})") from None

    def config(self, n: int) -> AttentionConfig:
        """The layer at length ``n``."""
        return self.configs[self._index(n)]

    def record(self, n: int, seed: int = 0) -> Mapping[str, object]:
        """The fields of one draw: seed ``seed`` at length ``n``."""
        return self.records[self._index(n)][seed]

    def at(self, n: int) -> dict[str, np.ndarray]:
        """Every field at length ``n``, stacked over seeds: ``{name: (seeds, ...)}``."""
        rows = self.records[self._index(n)]
        return {name: np.array([r[name] for r in rows]) for name in rows[0]}

    def field(self, name: str, reduce: Callable[[Any], ArrayLike] | None = None) -> np.ndarray:
        """One field over the grid, ``(len(ns), seeds, ...)``.

        ``reduce`` maps one draw's value to a number or a fixed-shape array
        first (``np.max`` over heads, ``np.median``, ...). Without it the values
        must have the same shape at every length (per-head values, scalars);
        for values whose size follows ``n`` (spectra) use :meth:`at` or
        :meth:`apply`.
        """
        fn = (lambda v: v) if reduce is None else reduce
        values = [[fn(r[name]) for r in row] for row in self.records]
        shapes = {np.shape(v) for row in values for v in row}
        if len(shapes) > 1:
            raise ValueError(
                f"field {name!r} has shapes {sorted(shapes)} across the sweep; "
                "reduce it to one shape, or use Sweep.at / Sweep.apply"
            )
        return np.array(values)

    def pairs(self, a: str, b: str) -> dict[int, np.ndarray]:
        """Two fields side by side at every length: ``{n: (seeds, 2, ...)}``.

        With two spectra (``a`` against the reference ``b``) this is the input
        of :func:`gelib.sweeps.sweep_distances` and
        :func:`gelib.plotting.plot_distance_rates`.
        """
        return {n: np.stack([v[a], v[b]], axis=1) for n, v in ((n, self.at(n)) for n in self.ns)}

    def apply(self, fn: Callable[..., object], *names: str) -> np.ndarray:
        """``fn(record[names[0]], record[names[1]], ...)`` for every draw, ``(len(ns), seeds, ...)``.

        For example ``sweep.apply(gelib.spectra.ks, "ev_a", "ev_b")`` is the
        KS distance between two spectra of every draw.
        """
        return np.array([[fn(*(r[name] for name in names)) for r in row] for row in self.records])


def run(
    measure: Callable[[AttentionConfig, jax.Array], Mapping[str, object]],
    configs: Iterable[AttentionConfig],
    seeds: int,
    key: jax.Array,
) -> Sweep:
    """Call ``measure(cfg, stream(key, cfg.n, s))`` for every layer and every seed ``s < seeds``.

    ``configs``: the layers of the sweep, one per context length (distinct
    ``n``, e.g. ``[cfg.at_length(n) for n in ns]``). ``measure`` returns a
    mapping of field names to values (numbers or arrays; JAX arrays are
    converted to NumPy); every draw must return the same names. Returns the
    :class:`Sweep` of all records, lengths in the order given.
    """
    configs = tuple(configs)
    ns = [c.n for c in configs]
    if len(set(ns)) != len(ns):
        raise ValueError(f"a sweep needs distinct context lengths, got {ns}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    records, names = [], None
    for c in configs:
        row = []
        for s in range(seeds):
            rec = {name: _numpy(v) for name, v in measure(c, stream(key, c.n, s)).items()}
            names = set(rec) if names is None else names
            if set(rec) != names:
                raise ValueError(
                    f"measure returned fields {sorted(rec)} at n = {c.n}, seed {s}; expected {sorted(names)}"
                )
            row.append(rec)
        records.append(tuple(row))
    return Sweep(configs, tuple(records))


def slope_within(fit: PowerFit, predicted: float, steeper: float, flatter: float) -> bool:
    """Whether a fitted power law's slope is compatible with the predicted one.

    True when ``predicted - ci95 - steeper <= fit.slope <= predicted + ci95 + flatter``:
    the fit's own 95 % half-width ``ci95`` plus an allowance for the
    finite-size corrections on either side (``steeper``: a more negative
    slope; ``flatter``: a less negative one), which the chapter derives.
    """
    return predicted - fit.ci95 - steeper <= fit.slope <= predicted + fit.ci95 + flatter


def log_factor_allowance(ns: Sequence[float], power: float = 1.0) -> float:
    """How much flatter than ``n^rate`` a power law fitted over ``ns`` is when the truth is ``n^rate (log n)^power``.

    The secant slope of ``log((log n)^power)`` against ``log n`` between the smallest and largest
    ``n``: ``power log(log n_max / log n_min) / log(n_max / n_min)``. A prediction "slope ``rate``
    up to logarithms" (rigidity of eigenvalues: ``(log n)^{1/2} / n`` for W1, ``log n / n`` for KS)
    is then the band ``[rate, rate + allowance]``; pass it to :func:`slope_within` as ``flatter``.

    >>> round(log_factor_allowance((128, 256, 512)), 3)
    0.181
    """
    lo, hi = float(min(ns)), float(max(ns))
    if not 1 < lo < hi:
        raise ValueError(f"need at least two sizes above 1, got {tuple(ns)}")
    return power * math.log(math.log(hi) / math.log(lo)) / math.log(hi / lo)


#: The slopes a :class:`RateCheck` of a maximum is set against (:meth:`RateCheck.summary`): ``"half"``,
#: an uncorrected ``n^{-1/2}`` (the level without its slowly growing extreme-value factor), and
#: ``"quarter"``, ``n^{-1/4}``.
RATE_ALTERNATIVES = {"half": -0.5, "quarter": -0.25}


@dataclasses.dataclass(frozen=True)
class RateCheck:
    """A measured rate against the local slope of a derived level (:func:`rate_check`).

    ``fit``: the power law fitted to the measured values (one slope per seed, Student-t 95 %
    interval across seeds); ``predicted``: the least-squares slope of the predicted levels over the
    same sizes; ``level``: the mean measured value over the predicted level, per size (shown, not
    tested: the level's approximations are not quantified); ``ok``: whether ``predicted`` lies within
    the fit's interval; ``factors``: the local slope of each named factor of the level, when given.
    """

    fit: PowerFit
    predicted: float
    level: np.ndarray
    ok: bool
    factors: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def summary(self, alternatives: Mapping[str, float] = RATE_ALTERNATIVES) -> dict:
        """The check in numbers, for a chapter's glue: ``pred`` (:attr:`predicted`), ``factor_NAME`` (each
        of :attr:`factors`), ``level_first`` and ``level_last`` (:attr:`level` at the smallest and largest
        size), and per alternative slope ``NAME: slope`` of ``alternatives`` the distance
        ``from_NAME = |predicted - slope|`` and ``NAME``, what values falling exactly at that slope would
        do to the check: ``"would fail"`` where the distance exceeds the fit's half-width, else
        ``"would pass"`` (the check cannot tell that slope from the predicted one at this width)."""
        out: dict[str, float | str] = {"pred": self.predicted, **{f"factor_{k}": v for k, v in self.factors.items()}}
        out |= {"level_first": float(self.level[0]), "level_last": float(self.level[-1])}
        for name, slope in alternatives.items():
            gap = abs(self.predicted - slope)
            out |= {f"from_{name}": gap, name: "would fail" if gap > self.fit.ci95 else "would pass"}
        return out


def rate_check(
    ns: Sequence[float], values: ArrayLike, predicted: ArrayLike, factors: Mapping[str, ArrayLike] | None = None
) -> RateCheck:
    """Whether ``values`` (``(len(ns), seeds)``) fall with the local slope of the levels ``predicted`` (``(len(ns),)``).

    A derived level at every size (e.g. :func:`gelib.models.denominator_max_deviation`) carries its
    own finite-size corrections (the slowly growing factor of a maximum, the ``O(1/n)`` terms of a mean
    square), so the prediction for the slope of a fit over ``ns`` is the fitted slope of the level over
    the same ``ns``, not the asymptotic exponent. The check is two-sided, within the fit's 95 %
    half-width, so it fails at a wrong rate as well as at a wrong correction. ``factors`` (name to
    values per size, whose product is ``predicted``) are only reported, by their local slopes.
    """
    values = np.asarray(values, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if values.ndim != 2 or values.shape[0] != len(ns) or predicted.shape != (len(ns),) or values.shape[1] < 2:
        raise ValueError(
            f"need values (len(ns), seeds >= 2), predicted (len(ns),); got {values.shape}, {predicted.shape}"
        )
    fit = fit_power_law(ns, values, nested=True)
    slope = fit_power_law(ns, predicted).slope
    slopes = {name: fit_power_law(ns, v).slope for name, v in (factors or {}).items()}
    return RateCheck(fit, slope, values.mean(axis=1) / predicted, bool(abs(fit.slope - slope) <= fit.ci95), slopes)


def max_deviation_check(layers: Sequence[AttentionConfig], maxima: ArrayLike) -> RateCheck:
    """:func:`rate_check` of ``max_{r, i} |C_r,ii - 1|`` (``(len(layers), seeds)``) against its extreme-value level.

    The level is :func:`gelib.models.denominator_max_deviation` at every layer (Table 1, row 2): the
    root mean square of ``C_r,ii - 1`` (:func:`gelib.models.denominator_deviation_ms`, factor ``"rms"``)
    times the expected maximum of ``h n`` absolute standard normals
    (:func:`gelib.models.gaussian_max_abs_mean`, factor ``"max"``).
    """
    rms = [math.sqrt(denominator_deviation_ms(c.n, c.d_k, c.beta)) for c in layers]
    top = [gaussian_max_abs_mean(c.h * c.n) for c in layers]
    return rate_check([c.n for c in layers], maxima, np.multiply(rms, top), {"rms": rms, "max": top})


# --- nested draws ----------------------------------------------------------------

_LAYER_FIELDS = ("n", "h", "h_kv", "d_k", "d_v", "d_o", "beta")


def main_layer(sizes: Mapping) -> AttentionConfig:
    """A chapter's main layer from its sizes: ``d = max(n, d_o)`` and the layer fields that ``sizes`` has.

    The fields are ``n, h, h_kv, d_k, d_v, d_o, beta`` (``n``, ``h`` and ``d_k`` are needed).

    The sweeps over ``n`` are then ``main_layer(sizes).at_length(n)``
    (:meth:`gelib.AttentionConfig.at_length`); other keys of ``sizes`` (seeds,
    the sweep's sizes, ...) are ignored.

    >>> main_layer(dict(n=256, h=4, d_k=128, d_o=384, seeds=4)).describe()
    'n=256, d=384, h/h_kv=4/4 (none), d_k=128, d_v=128, d_o=384, beta=1'
    """
    fields = {k: sizes[k] for k in _LAYER_FIELDS if k in sizes}
    return AttentionConfig(d=max(sizes["n"], sizes.get("d_o", sizes["n"])), **fields)


def explorer_sliders(cfg: AttentionConfig) -> dict[str, tuple]:
    """The sliders of the chapters' layer explorers, ``name -> (value, min, max, step)``, starting at ``cfg``.

    ``beta`` in ``[0.25, 2]``, ``h`` in ``1..16``, ``d_k`` and ``d_v`` in ``8..512`` (step
    8), ``n`` in ``32..1024`` (step 32); for :func:`bookrun.explore.explorer`.
    """
    return dict(
        beta=(cfg.beta, 0.25, 2.0, 0.05),
        h=(cfg.h, 1, 16),
        d_k=(cfg.d_k, 8, 512, 8),
        d_v=(cfg.d_v, 8, 512, 8),
        n=(cfg.n, 32, 1024, 32),
    )


class Seed(NamedTuple):
    """One seed of a layer: its draw, its Gaussian rows ``G`` (``(h, n, d_v)`` or ``None``), its noise key."""

    draw: Draw
    gaussian: jax.Array | None
    noise: jax.Array


def _gaussian(key: jax.Array, cfg: AttentionConfig) -> jax.Array:
    """``(h, n, d_v)`` i.i.d. ``N(0, 1)`` entries from ``key``."""
    return jax.random.normal(key, (cfg.h, cfg.n, cfg.d_v))


@dataclasses.dataclass(frozen=True, eq=False)
class NestedDraws:
    """Seeds of the largest layer ``big`` of a sweep; smaller layers are its leading blocks.

    ``draws[s]`` is seed ``s``'s :class:`~gelib.sampling.Draw` of ``big``,
    ``noise[s]`` its noise key and ``gaussians[s]`` (when sampled) the array
    ``G`` of shape ``(big.h, big.n, big.d_v)`` drawn from ``noise[s]``.
    """

    big: AttentionConfig
    draws: tuple[Draw, ...]
    noise: tuple[jax.Array, ...]
    gaussians: tuple[jax.Array, ...] | None = None

    @classmethod
    def sample(
        cls,
        big: AttentionConfig,
        draw_keys: Sequence[jax.Array],
        noise_keys: Sequence[jax.Array],
        gaussians: bool = False,
    ) -> NestedDraws:
        """Seed ``s`` is ``sample_fast(draw_keys[s], big)`` with noise key ``noise_keys[s]``.

        With ``gaussians=True`` every seed also gets ``G = N(0, 1)^{(h, n, d_v)}``
        drawn from its noise key (the Gaussian rows of ``Y^G[Sigma]``).
        """
        if len(draw_keys) != len(noise_keys) or not len(draw_keys):
            raise ValueError(
                f"need as many draw keys as noise keys (at least one), got {len(draw_keys)} and {len(noise_keys)}"
            )
        draws = tuple(sample_fast(k, big) for k in draw_keys)
        gauss = tuple(_gaussian(k, big) for k in noise_keys) if gaussians else None
        return cls(big, draws, tuple(noise_keys), gauss)

    @property
    def seeds(self) -> int:
        """The number of seeds."""
        return len(self.draws)

    def fits(self, cfg: AttentionConfig) -> bool:
        """Whether ``cfg`` can be cut out of ``big``: same ``h``, ``h_kv`` and tying, no larger size."""
        b = self.big
        return (
            (cfg.h, cfg.h_kv, cfg.tie_kv) == (b.h, b.h_kv, b.tie_kv)
            and cfg.n <= b.n
            and cfg.d_k <= b.d_k
            and cfg.d_v <= b.d_v
            and cfg.d_o <= b.d_o
        )

    def draw(self, cfg: AttentionConfig, s: int = 0) -> Draw:
        """Seed ``s``'s draw of the layer ``cfg`` (leading blocks of ``draws[s]``)."""
        return restrict(self.draws[s], cfg)

    def gaussian(self, cfg: AttentionConfig, s: int = 0) -> jax.Array:
        """Seed ``s``'s Gaussian rows at ``cfg``: the block ``G[:, :n, :d_v]`` (``(h, n, d_v)``)."""
        if self.gaussians is None:
            raise ValueError("these draws were sampled without Gaussian rows (gaussians=False)")
        if not self.fits(cfg):
            raise ConfigError(f"the layer ({cfg.describe()}) does not fit in ({self.big.describe()})")
        return self.gaussians[s][:, : cfg.n, : cfg.d_v]

    def seed(self, cfg: AttentionConfig, s: int = 0) -> Seed:
        """Seed ``s`` of the layer ``cfg``: draw, Gaussian rows (or ``None``) and noise key."""
        g = None if self.gaussians is None else self.gaussian(cfg, s)
        return Seed(self.draw(cfg, s), g, self.noise[s])

    def each(self, cfg: AttentionConfig) -> list[Seed]:
        """Every seed of the layer ``cfg``, in order."""
        return [self.seed(cfg, s) for s in range(self.seeds)]

    def layer(self, cfg: AttentionConfig, draw_key: jax.Array, noise_key: jax.Array) -> Seed:
        """The explorers' layer: seed 0 cut out when ``cfg`` fits, else a fresh draw.

        A fresh layer is ``sample_fast(draw_key, cfg)`` with noise key
        ``noise_key`` (and, when these draws carry Gaussian rows, ``G`` drawn
        from ``noise_key``).
        """
        if self.fits(cfg):
            return self.seed(cfg, 0)
        g = None if self.gaussians is None else _gaussian(noise_key, cfg)
        return Seed(sample_fast(draw_key, cfg), g, noise_key)


@dataclasses.dataclass(frozen=True)
class CopyErrors:
    """Relative Frobenius errors of the sample covariances of copies of one layer (:func:`copy_errors`).

    ``rows`` ``(k,)``: the number of rows ``c n`` at each checkpoint; ``errors``
    and ``errors_f`` ``(k, models)``: ``||hat Sigma - Sigma_G||_F / ||Sigma_G||_F``
    and the same from ``Sigma_f``; ``predicted`` ``(k,)``: the exact expectation
    for Gaussian rows with covariance ``Sigma_G``
    (:func:`gelib.sweeps.sample_covariance_error`); ``floor``:
    ``||Sigma_f - Sigma_G||_F / ||Sigma_G||_F``.
    """

    rows: np.ndarray
    errors: np.ndarray
    errors_f: np.ndarray
    predicted: np.ndarray
    floor: float


def copy_errors(
    draw, cfg: AttentionConfig, models: tuple[str, ...], copy_keys: Sequence[tuple[jax.Array, jax.Array]], checkpoints
) -> CopyErrors:
    """Sample covariances of copies of one layer (``K, V, W^O`` of ``draw`` fixed) from ``Sigma_G`` and ``Sigma_f``.

    :func:`gelib.models.conditional_covariances` of ``models`` with the copy
    keys ``copy_keys`` at the copy counts ``checkpoints`` (nested: one sequence
    of copies), measured from :func:`gelib.models.sigma` with
    :func:`gelib.models.kernel_g` and :func:`gelib.models.kernel_f`. One call is
    one draw of a nested sweep over the number of rows: fit a slope per call
    and the interval across calls (:func:`gelib.numerics.fit_power_law` with
    ``nested=True``).
    """

    sigma_g, sigma_f = (np.asarray(sigma(kernel, draw, cfg)) for kernel in (kernel_g, kernel_f))
    norm = np.linalg.norm(sigma_g)
    est = conditional_covariances(models, draw, cfg, copy_keys, checkpoints)  # (k, models, d_o, d_o)
    errors, errors_f = (np.linalg.norm(est - s[None, None], axis=(2, 3)) / norm for s in (sigma_g, sigma_f))
    rows = np.asarray(sorted(checkpoints)) * cfg.n
    floor = float(np.linalg.norm(sigma_f - sigma_g) / norm)
    return CopyErrors(rows, errors, errors_f, sample_covariance_error(sigma_g, rows), floor)


def sample_covariance_error(sigma: np.ndarray, rows: ArrayLike) -> np.ndarray:
    """Expected relative error of the sample covariance of ``N`` Gaussian rows: ``N^{-1/2}`` with its constant.

    For i.i.d. rows ``y ~ N(0, Sigma)`` (``Sigma`` of shape ``(d, d)``) and
    ``hat Sigma = (1/N) sum_i y_i y_i^T``, exactly
    ``E ||hat Sigma - Sigma||_F^2 = ((tr Sigma)^2 + tr(Sigma^2)) / N``; returns
    ``sqrt`` of it over ``||Sigma||_F`` for each ``N`` in ``rows`` (same shape as ``rows``).
    """
    sigma = np.asarray(sigma, dtype=float)
    tr, tr2 = np.trace(sigma), np.sum(sigma * sigma)
    return np.sqrt((tr**2 + tr2) / np.asarray(rows)) / np.linalg.norm(sigma)


def sweep_distances(pairs: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Relative W1 and KS distances between two models' spectra at every size of a sweep.

    ``pairs[n]`` has shape ``(seeds, 2, n)``: per seed, the eigenvalues of
    model ``a`` and of the reference ``b``. Returns ``rel_w1(a, b)`` and
    ``ks(a, b)`` (:mod:`gelib.spectra`), each of shape ``(len(pairs), seeds)`` in
    the order of ``pairs``: the ``values`` of :func:`~gelib.numerics.fit_power_law` and of
    :func:`gelib.plotting.rate_plot`.
    """

    ev = [np.asarray(p) for p in pairs.values()]
    if any(e.ndim != 3 or e.shape[1] != 2 for e in ev):
        raise ValueError(f"each entry must have shape (seeds, 2, n), got {[e.shape for e in ev]}")
    return (np.array([rel_w1(e[:, 0], e[:, 1]) for e in ev]), np.array([ks(e[:, 0], e[:, 1]) for e in ev]))


@dataclasses.dataclass(frozen=True)
class DistanceRates:
    """Spectral distances between two models over a sweep, with their power-law fits.

    ``w1`` and ``ks`` have shape ``(len(ns), seeds)``; ``fits`` maps ``"w1"`` and
    ``"ks"`` to their :class:`~gelib.numerics.PowerFit` against ``n``.
    """

    ns: tuple[int, ...]
    w1: np.ndarray
    ks: np.ndarray
    fits: dict


@dataclasses.dataclass(frozen=True)
class Agreement:
    """Measured means against predictions at every size of a sweep (:func:`agree_at_every_size`).

    ``z`` holds ``(mean - predicted) / se`` per size, ``threshold`` the Bonferroni-adjusted
    Student-t quantile and ``ok`` whether every ``|z|`` is within it.
    """

    z: np.ndarray
    threshold: float
    ok: bool


def agree_at_every_size(values: ArrayLike, predicted: ArrayLike, level: float = 0.95) -> Agreement:
    """Whether the mean over seeds agrees with its prediction at every size, jointly at ``level``.

    ``values`` has shape ``(k, seeds)`` (independent seeds), ``predicted`` shape ``(k,)``. At
    each size the mean over seeds lies within ``t se`` of the prediction, ``se`` the standard
    error across seeds and ``t`` the Student-t quantile ``1 - (1 - level) / (2k)`` with
    ``seeds - 1`` degrees of freedom (Bonferroni: the ``k`` tests fail together with
    probability at most ``1 - level`` when the predictions are right).
    """
    values = np.asarray(values, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if values.ndim != 2 or values.shape[0] != predicted.size or values.shape[1] < 2:
        raise ValueError(f"values must have shape (len(predicted), seeds >= 2), got {values.shape}")
    k, seeds = values.shape
    se = values.std(axis=1, ddof=1) / np.sqrt(seeds)
    z = (values.mean(axis=1) - predicted) / se
    threshold = float(scipy.stats.t.ppf(1 - (1 - level) / (2 * k), seeds - 1))
    return Agreement(z, threshold, bool(np.all(np.abs(z) <= threshold)))


@functools.partial(jax.jit, static_argnums=(0, 1))
def sigma_moments(kernel: Callable, cfg: AttentionConfig, key: jax.Array) -> dict[str, jax.Array]:
    """``tr(Sigma) / d_O`` and ``tr(Sigma^2) / d_O`` (``"m1"``, ``"m2"``) of one draw of ``K, V, W^O``.

    ``Sigma`` = :func:`gelib.models.sigma` of ``kernel`` (:func:`~gelib.models.kernel_f` or
    :func:`~gelib.models.kernel_g`): the covariance of the Gaussian rows. No queries are drawn. With
    ``functools.partial(sigma_moments, kernel)`` it is a measurement for :func:`run`: the normalised
    moments of the law of ``Sigma`` whose fluctuation across draws is the self-averaging of Table 1.
    """
    s = sigma(kernel, sample_fast(key, cfg), cfg)
    return {"m1": jnp.trace(s) / cfg.d_o, "m2": jnp.sum(s * s) / cfg.d_o}


def group_spread(values: ArrayLike, groups: int = 8) -> np.ndarray:
    """The standard deviation across draws within each of ``groups`` groups: ``(sizes, draws)`` to
    ``(sizes, groups)``.

    Independent groups make independent estimates of the spread at every size, so a power law fitted
    to them (:func:`gelib.numerics.fit_power_law`, pooled) has a valid interval. ``draws`` must be a
    multiple of ``groups``, at least two per group.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 2 or v.shape[1] % groups or v.shape[1] < 2 * groups:
        raise ValueError(
            f"values must be (sizes, draws) with draws a multiple of {groups}, >= {2 * groups}; got {v.shape}"
        )
    return v.reshape(v.shape[0], groups, -1).std(axis=-1, ddof=1)


def regime_layers(
    ns: Sequence[int],
    *,
    h: int,
    beta: float = 1.0,
    dk_ratio: float = 1 / 8,
    dk_fixed: int = 64,
    dv_ratio: float = 1 / 8,
    do_ratio: float = 3 / 2,
) -> dict[str, list[AttentionConfig]]:
    """The layers at which a control of Table 1 is measured in the regimes of real models.

    ``"ratio"``: the key width a fixed fraction of ``n``, by default BERT's ``d_K/n = 1/8``
    (the models of the paper's Table 2 lie between ``1/32`` and ``1/8``); ``"fixed"``: a fixed key
    width ``d_K = dk_fixed`` (64 in every model of Table 2) as ``n`` grows. Everything else is
    the same in both (``d_V/n``, ``d_O/n``, ``h``, ``beta``), so the two regimes differ in ``d_K`` only
    and meet where ``dk_ratio * n = dk_fixed``.

    >>> [c.d_k for c in regime_layers((128, 256, 512), h=4)["fixed"]]
    [64, 64, 64]
    """
    base = [proportional(n, h=h, d_k=dk_ratio, d_v=dv_ratio, d_o=do_ratio, beta=beta) for n in sorted(ns)]
    return {"ratio": base, "fixed": [c.replace(d_k=dk_fixed) for c in base]}


@dataclasses.dataclass(frozen=True)
class RegimeCheck:
    """A measured control against its prediction at every size of each regime (:func:`regime_check`).

    Per regime (the keys of :func:`regime_layers`): ``ns`` and ``d_k`` of its layers, ``values``
    ``(len(ns), seeds)``, ``predicted`` ``(len(ns),)`` and the ``z``-scores. ``threshold`` is the
    Bonferroni Student-t quantile over all sizes of all regimes (jointly at ``level``) and ``ok``
    whether every ``|z|`` is within it, at the sizes marked ``testable`` (the others are shown, not
    tested). ``power(regime)`` is the departure of a mean from its prediction that fails the check
    about half the time at the least precise testable size (``threshold`` standard errors).
    """

    name: str
    ns: dict[str, tuple[int, ...]]
    d_k: dict[str, tuple[int, ...]]
    values: dict[str, np.ndarray]
    predicted: dict[str, np.ndarray]
    z: dict[str, np.ndarray]
    threshold: float
    testable: dict[str, np.ndarray]

    @property
    def ok(self) -> bool:
        return all(bool(np.all(np.abs(self.z[r][self.testable[r]]) <= self.threshold)) for r in self.z)

    def mean(self, regime: str) -> np.ndarray:
        return self.values[regime].mean(axis=1)

    def power(self, regime: str) -> float:
        v = self.values[regime][self.testable[regime]]
        return float(self.threshold * np.max(v.std(axis=1, ddof=1)) / math.sqrt(v.shape[1])) if v.size else math.nan

    def glue_values(self, scale: float = 1.0, prefix: str = "") -> dict[str, float]:
        """Numbers for the book, ``scale`` times the values (e.g. 100 for percent), each name after ``prefix``:
        per regime ``R``, ``R_first`` / ``R_last`` (predicted at the smallest and largest ``n``), ``R_measured``
        (the mean at the largest), ``R_maxz``, ``R_power``; and ``threshold``."""
        out: dict[str, float] = {"threshold": self.threshold}
        for r in self.values:
            maxz = float(np.max(np.abs(self.z[r][self.testable[r]]), initial=0.0))
            out |= {
                f"{r}_first": scale * float(self.predicted[r][0]),
                f"{r}_last": scale * float(self.predicted[r][-1]),
                f"{r}_measured": scale * float(self.mean(r)[-1]),
                f"{r}_maxz": maxz,
                f"{r}_power": scale * self.power(r),
            }
        return {prefix + name: value for name, value in out.items()}

    def __str__(self) -> str:
        lines = [
            f"{self.name}: measured against predicted, jointly |z| <= {self.threshold:.2f}: "
            + ("ok" if self.ok else "FAILED")
        ]
        for r in self.values:
            lines.append(f"  {r:>5}: n = {self.ns[r]}, d_K = {self.d_k[r]}")
            lines.append(f"         measured  {np.array2string(self.mean(r), precision=5)}")
            lines.append(f"         predicted {np.array2string(self.predicted[r], precision=5)}")
            lines.append(
                f"         z {np.array2string(self.z[r], precision=2)}, power {self.power(r):.3g}"
                + ("" if self.testable[r].all() else f", tested {self.testable[r].astype(int)}")
            )
        return "\n".join(lines)


def regime_check(
    name: str,
    layers: Mapping[str, Sequence[AttentionConfig]],
    values: Mapping[str, ArrayLike],
    predicted: Mapping[str, ArrayLike],
    level: float = 0.95,
    testable: Callable[[AttentionConfig], bool] | None = None,
) -> RegimeCheck:
    """Measured values (``(len(layers[r]), seeds)`` per regime ``r``) against their predictions, jointly.

    :func:`agree_at_every_size` over the testable sizes of all regimes together: the whole check
    fails with probability at most ``1 - level`` when every prediction is right. ``testable(cfg)``
    says whether a layer's values can be tested (a ``z``-score needs a finite variance; by default
    every layer); the others get their ``z`` but no vote.
    """
    regimes = list(layers)
    vals = {r: np.asarray(values[r], dtype=float) for r in regimes}
    pred = {r: np.asarray(predicted[r], dtype=float) for r in regimes}
    tested = {r: np.array([True if testable is None else bool(testable(c)) for c in layers[r]]) for r in regimes}
    if not any(t.any() for t in tested.values()):
        raise ValueError(f"{name}: no layer is testable")
    joint = agree_at_every_size(
        np.concatenate([vals[r][tested[r]] for r in regimes]),
        np.concatenate([pred[r][tested[r]] for r in regimes]),
        level,
    )
    seeds = next(iter(vals.values())).shape[1]
    z = {r: (vals[r].mean(axis=1) - pred[r]) / (vals[r].std(axis=1, ddof=1) / math.sqrt(seeds)) for r in regimes}
    return RegimeCheck(
        name,
        ns={r: tuple(c.n for c in layers[r]) for r in regimes},
        d_k={r: tuple(c.d_k for c in layers[r]) for r in regimes},
        values=vals,
        predicted=pred,
        z=z,
        threshold=joint.threshold,
        testable=tested,
    )


def regime_values(
    measure: Callable[[AttentionConfig, jax.Array], Mapping[str, object]],
    layers: Mapping[str, Sequence[AttentionConfig]],
    seeds: int,
    key: jax.Array,
    field: str,
    reduce: Callable[[Any], ArrayLike] | None = None,
) -> dict[str, np.ndarray]:
    """One field of :func:`run` in every regime of ``layers``: ``{regime: (len(layers[regime]), seeds)}``
    (``reduce`` as in :meth:`Sweep.field`); regime ``r`` draws from ``stream(key, r)``."""
    return {r: run(measure, cs, seeds, stream(key, r)).field(field, reduce) for r, cs in layers.items()}


def step_shift_values(step: str, layers: Sequence[AttentionConfig], seeds: int, key: jax.Array) -> np.ndarray:
    """The shift of the mean eigenvalue at one step of Table 1, per draw: ``(len(layers), seeds)``.

    ``step`` names a row of :data:`~gelib.models.shifts.STEPS`; each draw builds its earlier and later model
    from one draw and one noise key (one compiled program per model) and returns
    ``|Y_earlier|_F^2 / |Y_later|_F^2 - 1``, the ratio of their mean eigenvalues minus one. The mean of
    these per-draw ratios differs from the ratio of expected mean eigenvalues (what
    :func:`gelib.models.step_shifts_exact` gives) by about the squared relative fluctuation of one
    draw's ``|Y_later|_F^2``, of order ``1 / (n d_O)``: far below the seeds' standard error here.
    """
    steps = {name: (a, b) for name, a, b in STEPS}
    if step not in steps:
        raise ValueError(f"unknown step {step!r}; the steps are {sorted(steps)}")
    earlier, later = steps[step]

    def measure(c: AttentionConfig, k: jax.Array) -> dict:
        draw, noise = sample_fast(k, c), stream(k, "noise")
        ya, yb = (build_all((m,), draw, c, key=noise)[0] for m in (earlier, later))
        return {"shift": float(np.sum(np.square(ya), dtype=np.float64) / np.sum(np.square(yb), dtype=np.float64)) - 1}

    return run(measure, layers, seeds, key).field("shift")


def step_shift_check(
    step: str, layers: Mapping[str, Sequence[AttentionConfig]], seeds: int, key: jax.Array, level: float = 0.95
) -> RegimeCheck:
    """:func:`step_shift_values` in every regime of ``layers`` (:func:`regime_layers`) against the exact
    shifts (:func:`gelib.models.step_shifts_exact`, untied layers), jointly at ``level``."""
    if any(c.tie_kv for cs in layers.values() for c in cs):
        raise ValueError("the exact shifts are those of untied layers")
    values = {r: step_shift_values(step, cs, seeds, stream(key, r)) for r, cs in layers.items()}
    predicted = {r: [step_shifts_exact(c.n, c.d_k, c.beta)[step] for c in cs] for r, cs in layers.items()}
    return regime_check(f"the {step} step's shift of the mean eigenvalue", layers, values, predicted, level)
