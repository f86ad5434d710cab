"""Markers against curves: the learning chapters' check of the limit law on softmax layers.

Both learning chapters draw curves from the limit law of ``Y Y^T / n`` (the
Gaussian-equivalent side) and markers from sampled softmax layers, and check
every marker against its curve:

* :class:`LimitLaws` gives the limit law of a layer, cached by the ratios it
  depends on (:func:`law_parameters`), after checking its quadrature against
  the exact moments (:func:`quadrature_error`);
* :class:`SoftmaxSpectra` gives the eigenvalues of a softmax layer over
  seeds, cached, each layer on its own named key stream;
* :class:`MarkerTable` collects the markers (:class:`Marker`), each against
  its finite-size prediction: the functional on the limit law rescaled by
  the softmax layer's predicted first-moment shift (:func:`predicted_shift`,
  :meth:`LimitLaws.shifted`), within ``ci_factor`` times its seed interval;
  it asserts the mean eigenvalue, lists the
  functionals' departures and renders the table the chapters show.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction

import jax
import numpy as np

from .attention_law import output_law
from .config import AttentionConfig
from .freeprob import Law, scale
from .keys import stream
from .learning import expect
from .moment_checks import first_moment_bias
from .spectra import Summary, estimate_seconds, model_spectra, summarize

__all__ = [
    "law_parameters",
    "quadrature_error",
    "predicted_shift",
    "spread_excess",
    "simulation_seconds",
    "plan_note",
    "LimitLaws",
    "SoftmaxSpectra",
    "Marker",
    "MarkerTable",
]


def law_parameters(cfg: AttentionConfig) -> tuple:
    """What the limit law of ``Y Y^T / n`` depends on: ``beta``, tying and four exact ratios.

    ``(beta, tie_kv, n / d_K, n / d_V, h d_V / d_O, d_O / n)``, the ratios as
    :class:`~fractions.Fraction`: the chain of :func:`gelib.attention_law.output_law`
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

    ``laws(cfg)`` is :func:`gelib.attention_law.output_law` of ``cfg`` (or of ``law_fn``),
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
        self._shifted: dict[tuple, Law] = {}
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

    def shifted(self, cfg: AttentionConfig) -> Law | None:
        """The limit law rescaled by the softmax layer's predicted first-moment shift.

        The law of ``(1 + b) x`` for ``x`` under ``self(cfg)``, with ``b`` from
        :func:`predicted_shift`; ``None`` where there is no prediction (tied
        layers). Cached per :func:`law_parameters`, ``n`` and ``d_K``.
        """
        b = predicted_shift(cfg)
        if b is None:
            return None
        key = (law_parameters(cfg), cfg.n, cfg.d_k)
        if key not in self._shifted:
            self._shifted[key] = scale(self(cfg), 1 + b)
        return self._shifted[key]

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
    first draw, whatever its path. ``seconds``: the time spent simulating.
    """

    def __init__(self, key: jax.Array, seeds: int, model: str = "mha"):
        self.key, self.seeds, self.model = key, seeds, model
        self._spectra: dict[AttentionConfig, np.ndarray] = {}
        self.seconds = 0.0

    def __call__(self, cfg: AttentionConfig, *path: str | int) -> np.ndarray:
        if cfg not in self._spectra:
            start = time.perf_counter()
            self._spectra[cfg] = model_spectra(stream(self.key, *path), cfg, (self.model,), self.seeds, progress=False)[
                self.model
            ]
            self.seconds += time.perf_counter() - start
        return self._spectra[cfg]

    def items(self):
        """The simulated layers and their eigenvalues, ``(cfg, (seeds, n))``, in the order simulated."""
        return self._spectra.items()

    def __len__(self) -> int:
        return len(self._spectra)


def simulation_seconds(cfgs: Iterable[AttentionConfig], seeds: int, rates=None) -> float | None:
    """The floor of simulating the softmax layers ``cfgs`` (each once) over ``seeds`` on this CPU, from
    their sizes: the sum of :func:`gelib.spectra.estimate_seconds` for the model ``"mha"`` (its flops
    at the measured matmul rate plus its eigensolves; ``rates`` as there). ``None`` on an accelerator."""
    total = 0.0
    for cfg in dict.fromkeys(cfgs):
        secs = estimate_seconds(cfg, seeds, rates, models=("mha",))
        if secs is None:
            return None
        total += secs
    return total


def plan_note(cfgs: Sequence[AttentionConfig], seeds: int, rates=None) -> str:
    """One line on a chapter's planned simulations: how many layers, and their :func:`simulation_seconds`."""
    layers = len(dict.fromkeys(cfgs))
    secs = simulation_seconds(cfgs, seeds, rates)
    where = f"at least {secs:.0f} s on this CPU from their sizes" if secs is not None else "no estimate off a CPU"
    return f"{layers} softmax layers to simulate, {seeds} seeds each; {where}"


def spread_excess(law: Law, spectra: np.ndarray) -> Summary:
    """How much wider a simulated spectrum is than its law: ``(m_2 / m_1^2) / (m_2 / m_1^2)_law - 1`` per seed.

    ``spectra``: eigenvalues ``(seeds, n)``; the law's moments are exact
    (:meth:`~gelib.freeprob.Law.moments`). Scale-free, so the first-moment
    shift does not enter: it measures the change of shape that the learning
    functionals feel beyond :func:`predicted_shift`. Returns the summary over seeds.
    """
    m1, m2 = law.moments(2)
    x = np.asarray(spectra, dtype=float)
    return summarize((x**2).mean(axis=-1) / x.mean(axis=-1) ** 2 / (m2 / m1**2) - 1)


def predicted_shift(cfg: AttentionConfig) -> float | None:
    """The softmax layer's predicted relative first-moment shift against its limit law.

    ``b`` from :func:`gelib.moment_checks.first_moment_bias`: the exact expected relative shift
    ``E m_1(MHA) / m_1(law) - 1`` of the mean eigenvalue of ``Y Y^T / n`` at the layer's
    ``n`` and ``d_K`` (:func:`gelib.models.mha_shift_exact`; the finite-size chapter's
    ``b(n, d_K)`` is its leading order). Exact, so nothing is added for neglected orders.
    ``None`` for a tied layer (``tie_kv``), for which no first-moment prediction is derived.
    """
    if cfg.tie_kv:
        return None
    return first_moment_bias("mha", cfg)


@dataclasses.dataclass(frozen=True)
class Marker:
    """One simulated marker against its curve and its finite-size prediction.

    ``ge``: the functional on the limit law; ``predicted``: on the limit law
    rescaled by the predicted first-moment shift (:meth:`LimitLaws.shifted`),
    ``None`` where no shift is predicted (then ``ge`` is the reference);
    ``mean`` and ``ci``: the softmax layers' mean and 95 %
    Student-t half-width over seeds; ``asserted``: whether a miss is a failure
    (:meth:`MarkerTable.bad`) or a measured departure
    (:meth:`MarkerTable.departures`).
    """

    panel: str
    label: str
    n: int
    ge: float
    mean: float
    ci: float
    predicted: float | None = None
    asserted: bool = False

    @property
    def reference(self) -> float:
        """The value the marker is checked against, ``predicted`` (or ``ge`` without a prediction)."""
        return self.ge if self.predicted is None else self.predicted

    @property
    def deviation(self) -> float:
        """``|mean - GE| / |GE|``, the relative distance to the limit law."""
        return abs(self.mean - self.ge) / abs(self.ge)

    @property
    def miss(self) -> float:
        """``|mean - reference| / |reference|``, the relative distance to the prediction."""
        return abs(self.mean - self.reference) / abs(self.reference)


class MarkerTable:
    """Markers (softmax layers, mean over seeds) against their finite-size predictions, with one rule.

    A marker's reference is the functional evaluated on the limit law rescaled
    by the softmax layer's exact expected first-moment shift
    (:func:`predicted_shift`, :meth:`LimitLaws.shifted`; the dominant finite-size
    effect), or on the limit law itself where no shift is predicted (tied
    layers). The marker is within its reference when
    ``|mean - reference| <= ci_factor * ci``: twice (by default) the seed-to-seed
    95 % interval ``ci`` (Student t, :func:`gelib.spectra.summarize`), as everywhere
    in the book. The shift is exact, so nothing is added for neglected orders, and
    nothing is tuned.

    Only the mean eigenvalue is asserted (:meth:`measure_mean`, :meth:`bad`):
    that is what the prediction is about. The learning functionals also feel
    the finite-size change of the spectrum's *shape* (its spread), for which
    no closed form is derived; a functional marker off its reference is a
    measured departure (:meth:`departures`), listed, not a failure.
    """

    def __init__(self, laws: LimitLaws, ci_factor: float = 2.0):
        self.laws, self.ci_factor = laws, ci_factor
        self.markers: list[Marker] = []

    def add(
        self,
        panel: str,
        label: str,
        n: int,
        ge: float | np.ndarray,
        per_seed,
        predicted: float | np.ndarray | None = None,
        asserted: bool = False,
    ) -> Summary:
        """Record a marker: GE value ``ge``, per-seed values ``per_seed``, its prediction; returns their summary."""
        s = summarize(per_seed)
        pred = None if predicted is None else float(predicted)
        self.markers.append(Marker(panel, label, int(n), float(ge), s.mean, s.ci95, pred, asserted))
        return s

    def predict(self, fn: Callable, *cfgs: AttentionConfig) -> tuple[np.ndarray, np.ndarray | None]:
        """``fn`` (one law per layer of ``cfgs``) on the limit laws and on the shifted laws.

        Returns ``(ge, predicted)``: ``fn`` of the limit laws and of the laws
        rescaled by ``1 + b`` (:meth:`LimitLaws.shifted`; ``None`` if a layer
        has no prediction).
        """
        ge = np.asarray(fn(*(self.laws(c) for c in cfgs)), dtype=float)
        shifted = [self.laws.shifted(c) for c in cfgs]
        if any(law is None for law in shifted):
            return ge, None
        return ge, np.asarray(fn(*shifted), dtype=float)

    def check(self, panel: str, label: str, fn: Callable, cfgs, per_seed, n: int | None = None) -> Summary:
        """Record ``per_seed`` softmax values against ``fn`` on the laws of ``cfgs`` (a layer or a tuple).

        ``fn`` takes one law per layer (:meth:`predict`); ``n`` defaults to the
        first layer's.
        """
        cfgs = (cfgs,) if isinstance(cfgs, AttentionConfig) else tuple(cfgs)
        ge, pred = self.predict(fn, *cfgs)
        return self.add(panel, label, cfgs[0].n if n is None else n, ge, per_seed, pred)

    def measure(self, panel: str, label: str, fn: Callable, cfg: AttentionConfig, spectra: np.ndarray) -> Summary:
        """Record the functional ``fn`` on the laws of ``cfg`` against ``fn`` on each seed's eigenvalues.

        ``spectra`` has shape ``(seeds, n)``; ``fn`` maps a law or one array of
        eigenvalues to a number.
        """
        return self.check(panel, label, fn, cfg, [fn(x) for x in spectra])

    def measure_curve(
        self, panel: str, label: str, xs, fn: Callable, cfg: AttentionConfig, spectra: np.ndarray, x_name: str = "t"
    ) -> list[tuple[float, Summary]]:
        """One marker per point of a curve: ``fn`` maps a law or one array of eigenvalues to ``len(xs)`` values.

        Records the marker ``"{label}, {x_name}={x:.3g}"`` at every ``x`` in
        ``xs``; returns the ``(x, summary)`` pairs.
        """
        ge, pred = self.predict(fn, cfg)
        per_seed = np.array([fn(x) for x in spectra])  # (seeds, len(xs))
        return [
            (
                x,
                self.add(
                    panel,
                    f"{label}, {x_name}={x:.3g}",
                    cfg.n,
                    ge[j],
                    per_seed[:, j],
                    None if pred is None else pred[j],
                ),
            )
            for j, x in enumerate(xs)
        ]

    def measure_mean(self, panel: str, label: str, cfg: AttentionConfig, spectra: np.ndarray) -> Summary:
        """Record the mean eigenvalue of ``cfg``'s softmax spectra (``(seeds, n)``) against ``m_1 (1 + b)``.

        The one functional the first-moment prediction is about: asserted
        (:meth:`bad`) wherever a shift is predicted (:func:`predicted_shift`);
        a tied layer's is recorded as a measurement against the limit law's
        ``m_1`` (:meth:`departures`). Labelled ``"{label}, m_1"``.
        """
        ge, pred = self.predict(lambda mu: expect(mu, lambda x: x, phi0=0.0), cfg)
        per_seed = np.asarray(spectra, dtype=float).mean(axis=-1)
        return self.add(panel, f"{label}, m_1", cfg.n, ge, per_seed, pred, asserted=pred is not None)

    def misses(self) -> list[Marker]:
        """Every marker off its reference (:attr:`Marker.miss` above the tolerance)."""
        return [m for m in self.markers if m.miss > self.tolerance(m)]

    def departures(self) -> list[Marker]:
        """The misses among the markers not asserted: measured departures from the prediction."""
        return [m for m in self.misses() if not m.asserted]

    def tolerance(self, m: Marker) -> float:
        """``ci_factor * ci / |reference|``, relative."""
        return self.ci_factor * m.ci / abs(m.reference)

    def bad(self) -> list[Marker]:
        """The asserted markers off their reference: failures of the prediction."""
        return [m for m in self.misses() if m.asserted]

    @property
    def worst(self) -> float:
        """The largest ratio of miss to tolerance among the asserted markers (at most 1 when they pass)."""
        return max((m.miss / self.tolerance(m) for m in self.markers if m.asserted), default=0.0)

    @property
    def asserted(self) -> int:
        """How many markers are asserted (:meth:`measure_mean` of layers with a prediction)."""
        return sum(m.asserted for m in self.markers)

    @property
    def predicted(self) -> int:
        """How many markers have a finite-size prediction (the others are checked against GE)."""
        return sum(m.predicted is not None for m in self.markers)

    @property
    def max_deviation(self) -> float:
        """The largest relative deviation from the limit law, ``|mean - GE| / |GE|``."""
        return max((m.deviation for m in self.markers), default=0.0)

    @property
    def max_miss(self) -> float:
        """The largest relative miss of the reference, ``|mean - reference| / |reference|``."""
        return max((m.miss for m in self.markers), default=0.0)

    def summary(self) -> dict:
        """The table in numbers: ``markers`` (count), ``predicted`` (:attr:`predicted`),
        ``asserted`` (:attr:`asserted`), ``worst`` (:attr:`worst`), ``departures``
        (how many :meth:`departures`), ``worst-dev`` (:attr:`max_deviation`, in %)
        and ``worst-miss`` (:attr:`max_miss`, in %)."""
        return {
            "markers": len(self.markers),
            "predicted": self.predicted,
            "asserted": self.asserted,
            "worst": float(self.worst),
            "departures": len(self.departures()),
            "worst-dev": float(100 * self.max_deviation),
            "worst-miss": float(100 * self.max_miss),
        }

    def markdown(self) -> str:
        """The table of every marker: GE, prediction, MHA mean ± 95 % CI, and the relative
        deviation from GE, miss of the reference and tolerance (in %)."""
        rows = [
            "| panel | marker | $n$ | GE | predicted | MHA (mean ± 95 % CI) | MHA - GE | miss | tolerance | check |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m in self.markers:
            pred = "—" if m.predicted is None else f"{m.predicted:.4g}"
            rows.append(
                f"| {m.panel} | {m.label} | {m.n} | {m.ge:.4g} | {pred} | {m.mean:.4g} ± {m.ci:.2g} | "
                f"{100 * (m.mean - m.ge) / abs(m.ge):+.2f} % | {100 * m.miss:.2f} % | "
                f"{100 * self.tolerance(m):.2f} % | {self._verdict(m)} |"
            )
        return "\n".join(rows)

    def _verdict(self, m: Marker) -> str:
        within = m.miss <= self.tolerance(m)
        if m.asserted:
            return "asserted, passes" if within else "asserted, FAILS"
        return "measured, within" if within else "measured, departs"

    def __len__(self) -> int:
        return len(self.markers)
