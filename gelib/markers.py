"""Markers against curves: the learning chapters' check of the limit law on softmax layers.

Both learning chapters draw curves from the limit law of ``Y Y^T / n`` (the
Gaussian-equivalent side) and markers from sampled softmax layers, and check
every marker against its curve:

* :class:`LimitLaws` gives the limit law of a layer, cached by the ratios it
  depends on (:func:`law_parameters`), after checking its quadrature against
  the exact moments (:func:`quadrature_error`);
* :class:`SoftmaxSpectra` gives the eigenvalues of a softmax layer over
  seeds, cached, each layer on its own named key stream;
* :class:`MarkerTable` collects the markers (:class:`Marker`), applies the
  tolerance ``max(ci_factor * ci / |ge|, c_tol / sqrt(n))`` and renders the
  table the chapters show.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from fractions import Fraction

import jax
import numpy as np

from .config import AttentionConfig
from .freeprob import Law
from .keys import stream
from .law import output_law
from .spectra import Summary, model_spectra, summarize

__all__ = ["law_parameters", "quadrature_error", "LimitLaws", "SoftmaxSpectra", "Marker", "MarkerTable"]


def law_parameters(cfg: AttentionConfig) -> tuple:
    """What the limit law of ``Y Y^T / n`` depends on: ``beta``, tying and four exact ratios.

    ``(beta, tie_kv, n / d_K, n / d_V, h d_V / d_O, d_O / n)``, the ratios as
    :class:`~fractions.Fraction`: the chain of :func:`gelib.law.output_law`
    sees nothing else (not ``d``, not ``h_KV``, not the size itself), so two
    layers with equal parameters have the same law, e.g. a layer of Table D.3
    and the same layer with ``n``, ``d_K``, ``d_V``, ``d_O`` shrunk by one
    factor.
    """
    return (
        cfg.beta,
        cfg.tie_kv,
        Fraction(cfg.n, cfg.d_k),
        Fraction(cfg.n, cfg.d_v),
        Fraction(cfg.h * cfg.d_v, cfg.d_o),
        Fraction(cfg.d_o, cfg.n),
    )


def quadrature_error(law: Law) -> float:
    """How well the quadrature of a law reproduces its exact moments.

    ``max_k |Q(x^k) / m_k - 1|`` over ``k = 0, 1, 2``, where ``Q`` is
    :meth:`~gelib.freeprob.Law.integrate` (quadrature of the density plus the
    atoms) and ``m_0 = 1``, ``m_1``, ``m_2`` are the exact moments
    (:meth:`~gelib.freeprob.Law.moments`).
    """
    got = law.integrate(lambda x: np.stack([np.ones_like(x), x, x * x]))
    exact = np.r_[1.0, law.moments(2)]
    return float(np.max(np.abs(got / exact - 1)))


class LimitLaws:
    """The limit law of ``Y Y^T / n`` per layer, cached, each checked by :func:`quadrature_error`.

    ``laws(cfg)`` is :func:`gelib.law.output_law` of ``cfg`` (or of ``law_fn``),
    computed once per :func:`law_parameters` (layers that differ only in
    ``d``, ``h_KV`` or in size at equal ratios share one law); it raises
    :class:`ValueError` if the quadrature misses the exact moments by ``tol``
    or more, so no functional is evaluated on a law the quadrature does not
    resolve. ``max_error`` is the largest error seen.
    """

    def __init__(self, tol: float = 1e-9, law_fn: Callable[[AttentionConfig], Law] | None = None):
        self.tol = tol
        self._law_fn = output_law if law_fn is None else law_fn
        self._laws: dict[tuple, Law] = {}
        self.errors: dict[tuple, float] = {}

    def __call__(self, cfg: AttentionConfig) -> Law:
        key = law_parameters(cfg)
        if key not in self._laws:
            law = self._law_fn(cfg)
            err = quadrature_error(law)
            if not err < self.tol:
                raise ValueError(
                    f"the quadrature misses the exact moments by {err:.2g} (tolerance {self.tol:g}) for {cfg}"
                )
            self._laws[key], self.errors[key] = law, err
        return self._laws[key]

    def mean(self, cfg: AttentionConfig) -> float:
        """``m_1``, the exact mean eigenvalue of the limit law."""
        return float(self(cfg).moments(1)[0])

    @property
    def max_error(self) -> float:
        """The largest :func:`quadrature_error` of the laws computed so far (0 if none)."""
        return max(self.errors.values(), default=0.0)

    def __len__(self) -> int:
        return len(self._laws)


class SoftmaxSpectra:
    """Eigenvalues of ``Y Y^T / n`` of one model over seeds, per layer, cached.

    ``spectra(cfg, *path)`` is
    ``model_spectra(stream(key, *path), cfg, (model,), seeds)[model]``, shape
    ``(seeds, n)`` (:func:`gelib.spectra.model_spectra`,
    :func:`gelib.keys.stream`): the layer's stream is named by ``path``. A
    layer is simulated once: a later call with the same ``cfg`` returns the
    first draw, whatever its path.
    """

    def __init__(self, key: jax.Array, seeds: int, model: str = "mha"):
        self.key, self.seeds, self.model = key, seeds, model
        self._spectra: dict[AttentionConfig, np.ndarray] = {}

    def __call__(self, cfg: AttentionConfig, *path: str | int) -> np.ndarray:
        if cfg not in self._spectra:
            self._spectra[cfg] = model_spectra(stream(self.key, *path), cfg, (self.model,), self.seeds, progress=False)[
                self.model
            ]
        return self._spectra[cfg]

    def __len__(self) -> int:
        return len(self._spectra)


@dataclasses.dataclass(frozen=True)
class Marker:
    """One simulated marker against its curve: the GE value and the mean and 95 % CI over seeds."""

    panel: str
    label: str
    n: int
    ge: float
    mean: float
    ci: float

    @property
    def deviation(self) -> float:
        """``|mean - GE| / |GE|``."""
        return abs(self.mean - self.ge) / abs(self.ge)


class MarkerTable:
    """Markers (softmax layers, mean over seeds) against their GE curves, with one tolerance rule.

    A marker passes when ``|mean - GE| / |GE| <= max(ci_factor * ci / |GE|, c_tol / sqrt(n))``:
    the seed-to-seed 95 % interval ``ci`` (Student t, :func:`gelib.spectra.summarize`)
    or the finite-``n`` bias that Table 1's ``n^{-1/2+o(1)}`` controls allow.
    """

    def __init__(self, c_tol: float = 2.0, ci_factor: float = 2.5):
        self.c_tol, self.ci_factor = c_tol, ci_factor
        self.markers: list[Marker] = []

    def add(self, panel: str, label: str, n: int, ge: float, per_seed) -> Summary:
        """Record a marker with GE value ``ge`` and per-seed values ``per_seed``; returns their summary."""
        s = summarize(per_seed)
        self.markers.append(Marker(panel, label, int(n), float(ge), s.mean, s.ci95))
        return s

    def measure(self, panel: str, label: str, fn: Callable, law: Law, spectra: np.ndarray) -> Summary:
        """Record the functional ``fn`` on the limit law against ``fn`` on each seed's eigenvalues.

        ``spectra`` has shape ``(seeds, n)``; ``fn`` maps a law or one array of
        eigenvalues to a number.
        """
        return self.add(panel, label, np.shape(spectra)[-1], fn(law), [fn(x) for x in spectra])

    def measure_curve(
        self, panel: str, label: str, xs, fn: Callable, law: Law, spectra: np.ndarray, x_name: str = "t"
    ) -> list[tuple[float, Summary]]:
        """One marker per point of a curve: ``fn`` maps a law or one array of eigenvalues to ``len(xs)`` values.

        Records the marker ``"{label}, {x_name}={x:.3g}"`` at every ``x`` in
        ``xs``; returns the ``(x, summary)`` pairs.
        """
        ge = np.asarray(fn(law))
        per_seed = np.array([fn(x) for x in spectra])  # (seeds, len(xs))
        n = np.shape(spectra)[-1]
        return [
            (x, self.add(panel, f"{label}, {x_name}={x:.3g}", n, g, per_seed[:, j]))
            for j, (x, g) in enumerate(zip(xs, ge))
        ]

    def statistical_tolerance(self, m: Marker) -> float:
        """``ci_factor * ci / |GE|``, the seed-to-seed part of the tolerance."""
        return self.ci_factor * m.ci / abs(m.ge)

    def tolerance(self, m: Marker) -> float:
        """``max(ci_factor * ci / |GE|, c_tol / sqrt(n))``."""
        return max(self.statistical_tolerance(m), self.c_tol / math.sqrt(m.n))

    def bad(self) -> list[Marker]:
        """The markers off their curves (deviation above the tolerance)."""
        return [m for m in self.markers if m.deviation > self.tolerance(m)]

    @property
    def worst(self) -> float:
        """The largest ratio of deviation to tolerance (at most 1 when every marker passes)."""
        return max((m.deviation / self.tolerance(m) for m in self.markers), default=0.0)

    @property
    def within_ci(self) -> int:
        """How many markers lie within ``ci_factor`` times their own 95 % interval."""
        return sum(m.deviation <= self.statistical_tolerance(m) for m in self.markers)

    @property
    def max_deviation(self) -> float:
        """The largest relative deviation ``|mean - GE| / |GE|``."""
        return max((m.deviation for m in self.markers), default=0.0)

    def summary(self) -> dict:
        """The table in four numbers: ``markers`` (count), ``worst`` (:attr:`worst`),
        ``within-ci`` (:attr:`within_ci`) and ``worst-dev`` (:attr:`max_deviation`, in %)."""
        return {
            "markers": len(self.markers),
            "worst": float(self.worst),
            "within-ci": self.within_ci,
            "worst-dev": float(100 * self.max_deviation),
        }

    def markdown(self) -> str:
        """The table of every marker: GE, MHA mean ± 95 % CI, deviation and tolerance (in %)."""
        rows = [
            "| panel | marker | $n$ | GE | MHA (mean ± 95 % CI) | deviation | tolerance |",
            "|---|---|---|---|---|---|---|",
        ]
        for m in self.markers:
            rows.append(
                f"| {m.panel} | {m.label} | {m.n} | {m.ge:.4g} | {m.mean:.4g} ± {m.ci:.2g} | "
                f"{100 * m.deviation:.2f} % | {100 * self.tolerance(m):.2f} % |"
            )
        return "\n".join(rows)

    def __len__(self) -> int:
        return len(self.markers)
