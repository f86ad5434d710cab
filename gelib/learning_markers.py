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
  :meth:`LimitLaws.shifted`), corrected by the departure of the same marker
  at half the size (:func:`halve`), which shrinks like ``1 / n``
  (:data:`DEPARTURE_RATE`); every marker is asserted by a two-sided Student-t
  test at :data:`MARKER_LEVEL`, and the table is the one the chapters show,
  each tolerance in standard errors beside the smallest error it catches;
* :func:`convergence` measures that rate: one marker's departure at three
  or more sizes at fixed ratios, and the fitted exponent;
* :func:`shifted_values` evaluates a functional on a layer's limit law and on
  that law shifted by the layer's own ``b(n, d_K)``: where a softmax layer of
  those dimensions should sit against its GE curve.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

import jax
import numpy as np
import scipy.stats

from .attention_law import output_law
from .config import AttentionConfig
from .freeprob import Law, scale
from .keys import stream
from .learning import expect
from .models import mha_shift_exact
from .moment_checks import first_moment_bias
from .numerics import MeanTest
from .numerics.checks import catch_ncp
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
    "at_size",
    "halve",
    "DEPARTURE_RATE",
    "ALTERNATIVE_RATE",
    "MARKER_LEVEL",
    "HalfSize",
    "Marker",
    "ShrinkRate",
    "MarkerTable",
    "Convergence",
    "convergence",
    "ShiftedValues",
    "shifted_values",
    "shift_glue",
    "shift_data",
    "convergence_data",
    "convergence_glue",
    "named_shifts",
    "beside_rows",
    "path_shifts",
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

    def pair(self, cfg: AttentionConfig, *path: str | int) -> tuple[np.ndarray, np.ndarray]:
        """The eigenvalues of ``cfg`` and of its companion :func:`halve` (``cfg``), the latter on the
        stream ``path + ("half",)``."""
        return self(cfg, *path), self(halve(cfg), *path, "half")

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
    floor = f"at least {secs:.0f} s" if secs is not None and round(secs) >= 1 else "under 1 s"
    where = f"{floor} on this CPU from their sizes" if secs is not None else "no estimate off a CPU"
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


def at_size(cfg: AttentionConfig, n: int) -> AttentionConfig:
    """The layer at context length ``n`` with ``cfg``'s ratios: ``d``, ``d_K``, ``d_V``, ``d_O`` times ``n / cfg.n``.

    The head counts ``h`` and ``h_KV`` and ``beta`` stay, so every ratio the limit law
    depends on (:func:`law_parameters`) stays too, up to the rounding of a width that the
    factor does not divide (to the nearest integer, at least 1).
    """
    if n < 1:
        raise ValueError(f"n = {n}: a layer needs at least one token")

    def scaled(v: int) -> int:
        return max(1, round(v * n / cfg.n))

    return cfg.replace(n=n, d=scaled(cfg.d), d_k=scaled(cfg.d_k), d_v=scaled(cfg.d_v), d_o=scaled(cfg.d_o))


def halve(cfg: AttentionConfig) -> AttentionConfig:
    """The layer at half the size with the same ratios (:func:`at_size` at ``n / 2``); ``n`` must be even."""
    if cfg.n % 2:
        raise ValueError(f"n = {cfg.n} is odd: no layer of half the size has the same ratios")
    return at_size(cfg, cfg.n // 2)


#: The order in ``1 / n`` of the softmax layer's departure from its limit law at fixed ratios
#: (``d_K`` grows with ``n``), a conjecture that :func:`convergence` tests (the paper's Table 1
#: bounds its steps only at ``n^{-1/2 + o(1)}``): the first-moment shift is ``beta^4 / d_K + c / n``
#: (:func:`gelib.models.mha_shift_exact`), and the rest of the spectrum's finite-size change
#: (its spread, :func:`spread_excess`) comes from the same two sources, the non-Gaussian
#: scores of a head of width ``d_K`` and the normalisation over ``n`` keys; both are
#: ``O(1 / n)`` at fixed ratios. :func:`convergence` measures it.
DEPARTURE_RATE = 1.0

#: The rate the checks of :data:`DEPARTURE_RATE` must exclude: ``n^{-1/2}``, the order at which
#: the paper's Table 1 bounds its steps. A departure shrinking at that rate would be carried from
#: ``n / 2`` to ``n`` as ``2^{-1/2}`` of itself, not ``1/2``; :class:`ShrinkRate` and
#: :class:`Convergence` assert ``1 / n`` only where their interval excludes it.
ALTERNATIVE_RATE = 0.5

#: The level of each marker's check (:meth:`MarkerTable.tolerance`): a two-sided Student-t test of
#: ``mean = reference`` with Welch's degrees of freedom fails a correct marker with probability
#: ``10^{-3}``, so a table of ``M`` markers fails by chance in at most ``M / 1000`` of the runs
#: (Bonferroni; about 5 % for the largest tables of the book).
MARKER_LEVEL = 1e-3


def _threshold(gap: float, seeds: int, level: float) -> float:
    """The widest 95 % Student-t half-width (over ``seeds`` values) at which a one-sided test at ``level``
    excludes a value ``gap`` from the truth with probability ``1 - level``: the standard error
    ``gap / catch_ncp(seeds, level, 1 - level, one_sided=True)`` (:func:`gelib.numerics.checks.catch_ncp`,
    the measured standard error standing for the true one) times ``t_{0.975, seeds - 1}``. Below it, the
    exclusion fails a correct value with probability at most ``level``; whatever the width, a true value at
    the excluded bound is excluded with probability at most ``level``."""
    if seeds < 2:
        return math.nan
    ncp = catch_ncp(seeds, level, 1 - level, one_sided=True)
    return gap / ncp * float(scipy.stats.t.ppf(0.975, seeds - 1))


def _se(ci: float, seeds: int) -> float:
    """The standard error behind a 95 % Student-t half-width ``ci`` over ``seeds`` seeds (nan below 2)."""
    return ci / float(scipy.stats.t.ppf(0.975, seeds - 1)) if seeds >= 2 else math.nan


@dataclasses.dataclass(frozen=True)
class HalfSize:
    """A marker's companion: the same functional on softmax layers of half the size (:func:`halve`).

    ``n``, ``mean`` and ``ci`` (95 % Student-t half-width over ``seeds`` seeds) of the
    companion, and ``reference``: the functional on its own shifted limit law (or its limit
    law where no shift is predicted).
    """

    n: int
    mean: float
    ci: float
    reference: float
    seeds: int = 0

    @property
    def se(self) -> float:
        """The standard error of :attr:`mean` (from :attr:`ci` and :attr:`seeds`)."""
        return _se(self.ci, self.seeds)

    @property
    def departure(self) -> float:
        """``mean / reference - 1``: the relative departure left after the first-moment shift."""
        return self.mean / self.reference - 1


@dataclasses.dataclass(frozen=True)
class Marker:
    """One simulated marker against its curve and its finite-size prediction.

    ``ge``: the functional on the limit law; ``predicted``: on the limit law
    rescaled by the predicted first-moment shift (:meth:`LimitLaws.shifted`),
    ``None`` where no shift is predicted (tied layers; then ``ge`` stands for it);
    ``mean`` and ``ci``: the softmax layers' mean and 95 % Student-t half-width
    over ``seeds`` seeds; ``half``: the same marker at half the size (:class:`HalfSize`),
    whose departure from its own prediction, shrunk by ``(n_half / n) ** rate``,
    corrects the prediction at ``n`` (:attr:`reference`). Without ``half`` the
    reference is the shifted prediction alone (the mean eigenvalue, which the shift
    predicts exactly). ``effect``: the relative departure the check must be able to
    detect for the marker to be tested (:meth:`MarkerTable.tested`), e.g. the gap to the
    nearest other curve of its panel; ``None``: always tested.
    """

    panel: str
    label: str
    n: int
    ge: float
    mean: float
    ci: float
    predicted: float | None = None
    half: HalfSize | None = None
    rate: float = DEPARTURE_RATE
    effect: float | None = None
    layers: tuple = ()
    seeds: int = 0

    @property
    def shifted(self) -> float:
        """The functional on the shifted limit law (``ge`` where no shift is predicted)."""
        return self.ge if self.predicted is None else self.predicted

    @property
    def _carry(self) -> float:
        assert self.half is not None
        return (self.half.n / self.n) ** self.rate

    @property
    def reference(self) -> float:
        """The value the marker is checked against, the shifted prediction times ``1 + departure(n / 2) / 2^rate``."""
        if self.half is None:
            return self.shifted
        return self.shifted * (1 + self.half.departure * self._carry)

    @property
    def reference_ci(self) -> float:
        """The 95 % half-width that the companion's seeds put on :attr:`reference` (0 without one)."""
        if self.half is None:
            return 0.0
        return abs(self.shifted) * self.half.ci / abs(self.half.reference) * self._carry

    @property
    def se(self) -> float:
        """The standard error of :attr:`mean` over the seeds."""
        return _se(self.ci, self.seeds)

    @property
    def reference_se(self) -> float:
        """The standard error that the companion's seeds put on :attr:`reference` (0 without one)."""
        if self.half is None:
            return 0.0
        return abs(self.shifted) * self.half.se / abs(self.half.reference) * self._carry

    @property
    def combined_se(self) -> float:
        """``sqrt(se^2 + reference_se^2)``: the standard error of ``mean - reference``."""
        return float(np.hypot(self.se, self.reference_se))

    @property
    def dof(self) -> float:
        """Welch-Satterthwaite degrees of freedom of :attr:`combined_se` (``seeds - 1`` without a companion)."""
        a, b = self.se**2, self.reference_se**2
        if self.half is None or b == 0:
            return float(self.seeds - 1)
        return (a + b) ** 2 / (a**2 / (self.seeds - 1) + b**2 / (self.half.seeds - 1))

    @property
    def z(self) -> float:
        """``(mean - reference) / combined_se``: the Student-t statistic of the marker's check."""
        return (self.mean - self.reference) / self.combined_se

    @property
    def carried(self) -> float:
        """The share of an error of the prediction (the same at ``n / 2`` and ``n``) that the companion
        carries into :attr:`reference`: ``(n_half / n)^rate``, 1/2 at :data:`DEPARTURE_RATE`; 0 without one."""
        return 0.0 if self.half is None else self._carry

    @property
    def departure(self) -> float:
        """``mean / shifted - 1``: the relative departure from the shifted prediction at ``n``, uncorrected."""
        return self.mean / self.shifted - 1

    @property
    def deviation(self) -> float:
        """``|mean - GE| / |GE|``, the relative distance to the limit law."""
        return abs(self.mean - self.ge) / abs(self.ge)

    @property
    def miss(self) -> float:
        """``|mean - reference| / |reference|``, the relative distance to the prediction."""
        return abs(self.mean - self.reference) / abs(self.reference)


def _log_slope(ns: Sequence[int], values: Sequence[Summary]) -> tuple[float, float]:
    """Weighted least-squares slope of ``log |mean|`` on ``log n`` and its 95 % half-width.

    Each point's variance is the delta-method ``(se / mean)^2`` (``se`` the standard
    error over seeds); the interval is from those variances only, with the Student-t
    quantile of the fewest seeds (the variances are themselves estimates).
    """
    x = np.log(np.asarray(ns, dtype=float))
    y = np.log(np.abs([v.mean for v in values]))
    se = np.array([v.std / np.sqrt(v.count) / abs(v.mean) for v in values])
    w = 1 / se**2
    xm = np.sum(w * x) / np.sum(w)
    sxx = np.sum(w * (x - xm) ** 2)
    slope = float(np.sum(w * (x - xm) * y) / sxx)
    # the variances are estimated from few seeds: Student t with the fewest seeds' degrees of freedom
    q = float(scipy.stats.t.ppf(0.975, min(v.count for v in values) - 1))
    return slope, float(q / np.sqrt(sxx))


@dataclasses.dataclass(frozen=True)
class Convergence:
    """How a marker's departure from its shifted prediction shrinks with ``n`` at fixed ratios.

    ``departures``: per ``n``, the summary over seeds of ``value / shifted prediction - 1``;
    ``slope`` and ``ci95``: the fitted exponent of ``|departure| ~ n^slope``
    (weighted least squares of ``log |departure|`` on ``log n``, each point weighted by its
    delta-method variance ``(se / mean)^2``, a Student-t 95 % interval with :attr:`dof` degrees of
    freedom, ``_log_slope``); ``rate``: the predicted order (:data:`DEPARTURE_RATE`);
    ``alternative``: the slower order the slope must exclude where it can (:data:`ALTERNATIVE_RATE`);
    ``layers``: the layer at each ``n``; ``level``: the level of every test (:data:`MARKER_LEVEL`).

    Every verdict is a stated Student-t test at ``level`` on the slope's standard error
    :attr:`se` with :attr:`dof` degrees of freedom: the slope against ``-rate``, two-sided
    (:attr:`test`); 0 (no shrinking) and ``-alternative`` excluded from above, one-sided
    (:meth:`exclusion`), each asserted only where it would pass a slope of ``-rate`` with probability
    at least ``1 - level`` (:attr:`tells_shrinking`, :attr:`separates`), so that a correct rate fails
    no part of the check with probability above ``level``, and a wrong one (0 or ``-alternative``)
    passes the exclusion asserted against it with probability at most ``level``.
    """

    label: str
    ns: tuple[int, ...]
    departures: tuple[Summary, ...]
    slope: float
    ci95: float
    rate: float = DEPARTURE_RATE
    alternative: float = ALTERNATIVE_RATE
    layers: tuple = ()
    level: float = MARKER_LEVEL

    @property
    def dof(self) -> int:
        """The fewest seeds of a departure, less 1 (the degrees of freedom of the slope's interval)."""
        return min(d.count for d in self.departures) - 1

    @property
    def se(self) -> float:
        """The standard error of :attr:`slope`, ``ci95`` over the 0.975 quantile of Student's t with :attr:`dof`."""
        return _se(self.ci95, self.dof + 1)

    @property
    def departure_tests(self) -> tuple[MeanTest, ...]:
        """Each departure's mean against 0, a two-sided Student-t test at ``level`` over its seeds."""
        return tuple(MeanTest.of(d, 0.0, self.level) for d in self.departures)

    @property
    def resolved(self) -> bool:
        """Whether every departure is resolved from 0 (else its log has no meaning), each failing its test of 0
        (:attr:`departure_tests`, beyond ``t_{1 - level/2, seeds - 1}`` standard errors), which a
        departure that is 0 at some ``n`` passes with probability ``1 - level``."""
        return all(not t.passes for t in self.departure_tests)

    @property
    def test(self) -> MeanTest:
        """The slope against ``-rate``: two-sided, at ``level``, :attr:`dof` degrees of freedom; its
        :attr:`~gelib.numerics.MeanTest.catch` is the smallest error of the slope caught half the time."""
        return MeanTest(self.slope, self.se, self.dof + 1, -self.rate, self.level)

    def exclusion(self, bound: float) -> MeanTest:
        """The one-sided test of the slope against ``bound`` at ``level``: ``bound`` is excluded where the
        slope lies below it by more than ``t_{1 - level, dof}`` standard errors
        (:attr:`~gelib.numerics.MeanTest.below`)."""
        return MeanTest(self.slope, self.se, self.dof + 1, bound, self.level, one_sided=True)

    def threshold(self, bound: float) -> float:
        """The widest 95 % half-width at which the exclusion of ``bound`` is asserted: where the exclusion
        would pass a slope of ``-rate`` with probability ``1 - level`` (``_threshold``)."""
        return _threshold(abs(bound + self.rate), self.dof + 1, self.level)

    @property
    def tells_shrinking(self) -> bool:
        """Resolved, and ``ci95`` within :meth:`threshold` of 0: the exclusion of 0 (the departure does
        not shrink) is asserted."""
        return self.resolved and self.ci95 <= self.threshold(0.0)

    @property
    def shrinks(self) -> bool:
        """The slope below 0 by the one-sided test at ``level`` (:meth:`exclusion` of 0)."""
        return self.exclusion(0.0).below

    @property
    def separates(self) -> bool:
        """Resolved, and ``ci95`` within :meth:`threshold` of ``-alternative``: only then is ``n^{-rate}``
        asserted against ``n^{-alternative}``."""
        return self.resolved and self.ci95 <= self.threshold(-self.alternative)

    @property
    def excludes_alternative(self) -> bool:
        """The slope below ``-alternative`` by the one-sided test at ``level`` (:meth:`exclusion`)."""
        return self.exclusion(-self.alternative).below

    @property
    def consistent(self) -> bool:
        """Resolved, the slope passing its test of ``-rate`` (:attr:`test`), 0 excluded wherever that is
        asserted (:attr:`tells_shrinking`: the departure shrinks), and ``-alternative`` excluded wherever
        that is (:attr:`separates`): ``n^{-1/2}`` is excluded wherever ``1 / n`` is told from it."""
        return (
            self.resolved
            and self.test.passes
            and (self.shrinks or not self.tells_shrinking)
            and (self.excludes_alternative or not self.separates)
        )

    def describe(self) -> str:
        """The verdict in words, naming the condition that decides it and each tolerance in standard errors:
        not resolved; ``-rate`` off by more than the tolerance, or an exclusion asserted that fails (fails);
        or the test passed, with each exclusion asserted or, where the interval is wider than its
        :meth:`threshold`, reported (excluded or not) and not asserted.
        """
        fit, rate, alt = f"slope {self.slope:.2f} ± {self.ci95:.2f}", f"-{self.rate:g}", f"-{self.alternative:g}"
        if not self.resolved:
            q = max(t.quantile for t in self.departure_tests)
            return f"{fit}, not resolved from 0 at every n (within {q:.1f} SE of 0 somewhere): not asserted"
        t = self.test
        failed = [f"{rate} {abs(t.z):.1f} SE off, beyond its {t.quantile:.1f} SE"] * (not t.passes)
        failed += ["0 not excluded"] * (self.tells_shrinking and not self.shrinks)
        failed += [f"{alt} not excluded"] * (self.separates and not self.excludes_alternative)
        if failed:
            return f"{fit}: FAILS, {' and '.join(failed)}"
        asserted = [f"{rate} within {t.quantile:.1f} SE (z = {t.z:+.1f}; catches a slope {t.catch:.2f} off)"]
        notes = []
        for bound, name, told, out in (
            (0.0, "0", self.tells_shrinking, self.shrinks),
            (-self.alternative, alt, self.separates, self.excludes_alternative),
        ):
            if told:
                asserted.append(f"{name} excluded")
            else:
                seen = "excluded too" if out else "not excluded"
                width = (
                    f"± {self.ci95:.2f} is wider than the ± {self.threshold(bound):.2f} that tells {rate} from {name}"
                )
                notes.append(f"{name} {seen}, not asserted: {width}")
        return f"{fit}: {', '.join(asserted)} (asserted)" + "".join(f"; {n}" for n in notes)


def convergence(
    spectra: SoftmaxSpectra,
    laws: LimitLaws,
    fn: Callable,
    make: Callable[[int], AttentionConfig],
    ns: Sequence[int],
    label: str,
) -> Convergence:
    """The departure of ``fn`` (a law or one array of eigenvalues -> a number) from its shifted
    prediction, on the layers ``make(n)`` for ``n`` in ``ns`` (same ratios, so one limit law),
    each simulated by ``spectra`` on the stream ``("convergence", label, n)``."""
    departures, layers = [], []
    for n in ns:
        cfg = make(n)
        layers.append(cfg)
        shifted = laws.shifted(cfg)
        law = laws(cfg) if shifted is None else shifted
        ref = float(fn(law))
        departures.append(summarize([float(fn(x)) / ref - 1 for x in spectra(cfg, "convergence", label, n)]))
    slope, ci = _log_slope(ns, departures)
    return Convergence(label, tuple(int(n) for n in ns), tuple(departures), slope, ci, layers=tuple(layers))


@dataclasses.dataclass(frozen=True)
class ShrinkRate:
    """How much the markers' departures shrank from their companions' size to theirs, pooled by layer.

    The half-size correction carries a departure ``delta`` at ``n / 2`` to ``n`` as
    ``delta / 2^rate``, so an error that does not shrink would show only half of itself in each
    marker's miss; this measures the shrinking itself. Per simulated layer (markers of one layer
    share its seeds), the mean departure at ``n / 2`` (:attr:`HalfSize.departure`) and at ``n``
    (:attr:`Marker.departure`) over its markers with a companion; over the ``layers`` layers,
    ``half`` (the mean at ``n / 2``) with its Student-t 95 % half-width ``half_ci``, and ``ratio``,
    the sum of the departures at ``n`` over the sum at ``n / 2``, with its 95 % half-width
    ``ci95`` (delta method, from the layers' spread, Student's t with ``layers - 1`` degrees of
    freedom: ``nan`` below three layers). ``expected``: ``2^-rate`` (1/2 for
    :data:`DEPARTURE_RATE`); an error that does not shrink gives 1; ``alternative``:
    ``2^-ALTERNATIVE_RATE`` (``2^{-1/2}``), what departures shrinking like ``n^{-1/2}`` give;
    ``level``: the level of every test (:data:`MARKER_LEVEL`).

    Every verdict is a stated Student-t test at ``level`` on the ratio's standard error :attr:`se`
    with ``layers - 1`` degrees of freedom: the ratio against ``expected``, two-sided (:attr:`test`,
    its tolerance in standard errors and the error it catches half the time), and 1 and
    ``alternative`` excluded from above, one-sided (:meth:`exclusion`). An exclusion is asserted only
    where it would pass a ratio at ``expected`` with probability at least ``1 - level``
    (:meth:`threshold`): where the interval can tell ``expected`` from 1 (:attr:`asserted`) the
    shrinking is asserted, and where it can also tell it from ``alternative`` (:attr:`separates`)
    the rate ``1 / n``; otherwise :meth:`describe` says what is not excluded. A correct rate then
    fails with probability at most about ``level`` per part, and an error that does not shrink (or
    one that shrinks like ``n^{-1/2}``, where it separates) passes with probability at most ``level``.

    A ratio of means is consistent where a ratio per marker is not: the seed noise of the
    departures at ``n / 2`` averages out of the denominator instead of biasing it. Departures of
    opposite signs cancel in the sums, which costs power, not validity: the check is asserted
    only when its interval is narrow enough to tell 1/2 from 1 (:attr:`asserted`), and the mean at
    ``n / 2`` must be resolved from 0 by the same test (:attr:`resolved`), so that the delta
    method's denominator is not near 0.
    """

    layers: int
    markers: int
    half: float
    half_ci: float
    ratio: float
    ci95: float
    expected: float = 2.0**-DEPARTURE_RATE
    alternative: float = 2.0**-ALTERNATIVE_RATE
    level: float = MARKER_LEVEL

    #: The fewest layers for a verdict, see :attr:`asserted`.
    MIN_LAYERS = 3

    @property
    def se(self) -> float:
        """The standard error of :attr:`ratio`, ``ci95`` over the 0.975 quantile of Student's t with
        ``layers - 1`` degrees of freedom (``nan`` below :attr:`MIN_LAYERS`)."""
        return _se(self.ci95, self.layers) if self.layers >= self.MIN_LAYERS else math.nan

    @property
    def half_test(self) -> MeanTest:
        """The mean departure at ``n / 2`` against 0: two-sided, at ``level``, ``layers - 1`` degrees of freedom."""
        return MeanTest(self.half, _se(self.half_ci, self.layers), self.layers, 0.0, self.level)

    @property
    def test(self) -> MeanTest:
        """The ratio against ``expected``: two-sided, at ``level``, ``layers - 1`` degrees of freedom; its
        :attr:`~gelib.numerics.MeanTest.catch` is the smallest departure of the ratio from ``expected``
        that it catches half the time."""
        return MeanTest(self.ratio, self.se, self.layers, self.expected, self.level)

    def exclusion(self, bound: float) -> MeanTest:
        """The one-sided test of the ratio against ``bound`` at ``level``: ``bound`` is excluded where the
        ratio lies below it by more than ``t_{1 - level, layers - 1}`` standard errors
        (:attr:`~gelib.numerics.MeanTest.below`)."""
        return MeanTest(self.ratio, self.se, self.layers, bound, self.level, one_sided=True)

    def threshold(self, bound: float) -> float:
        """The widest 95 % half-width at which the exclusion of ``bound`` is asserted: where it would pass a
        ratio at ``expected`` with probability ``1 - level`` (``_threshold``; ``nan`` below
        :attr:`MIN_LAYERS`)."""
        return _threshold(abs(bound - self.expected), self.layers, self.level) if self.layers >= 2 else math.nan

    @property
    def resolved(self) -> bool:
        """Enough layers (:attr:`MIN_LAYERS`) and a departure at ``n / 2`` resolved from 0 (failing its test of
        0, :attr:`half_test`): something to shrink."""
        return self.layers >= self.MIN_LAYERS and not self.half_test.passes

    @property
    def asserted(self) -> bool:
        """:attr:`resolved`, and ``ci95`` within :meth:`threshold` of 1: only then can the check fail for an
        error that does not shrink without failing a correct rate."""
        return self.resolved and self.ci95 <= self.threshold(1.0)

    @property
    def separates(self) -> bool:
        """:attr:`asserted`, and ``ci95`` within :meth:`threshold` of ``alternative``: only then is the rate
        ``1 / n`` itself asserted."""
        return self.asserted and self.ci95 <= self.threshold(self.alternative)

    @property
    def consistent(self) -> bool:
        """The ratio passing its test of ``expected`` (:attr:`test`), 1 (no shrinking) excluded
        (:meth:`exclusion`), and, where the interval :attr:`separates` the rates, ``alternative``
        excluded too."""
        shrinks = self.test.passes and self.exclusion(1.0).below
        return shrinks and (not self.separates or self.exclusion(self.alternative).below)

    def describe(self) -> str:
        """The result in words, for a chapter's prose, each tolerance in standard errors.

        >>> ShrinkRate(0, 0, math.nan, math.nan, math.nan, math.nan).describe()
        'not measured: no marker has a half-size companion at this scale'
        """
        if self.layers == 0:
            return "not measured: no marker has a half-size companion at this scale"
        if self.layers < self.MIN_LAYERS:
            plural = "s" if self.layers > 1 else ""
            return f"not asserted: {self.layers} layer{plural} with a companion (at least {self.MIN_LAYERS} needed)"
        h = self.half_test
        if not self.resolved:
            return (
                f"not asserted: the departures at n/2, {100 * self.half:+.1f} % ± {100 * self.half_ci:.1f} "
                f"over {self.layers} layers, are not resolved from 0 ({abs(h.z):.1f} SE, {h.quantile:.1f} needed)"
            )
        if not self.asserted:
            return (
                f"not asserted: at n, {self.ratio:.2f} ± {self.ci95:.2f} of the departure at n/2 over "
                f"{self.layers} layers, too wide to tell {self.expected:g} from 1 "
                f"(± {self.threshold(1.0):.3f} needed)"
            )
        t, alt = self.test, f"{self.alternative:.3f} (n^-{ALTERNATIVE_RATE:g})"
        measured = (
            f"at n, {self.ratio:.2f} ± {self.ci95:.2f} of the departure at n/2 ({100 * self.half:+.1f} % ± "
            f"{100 * self.half_ci:.1f}; {self.expected:g} predicted, 1 if it did not shrink), over {self.layers} "
            f"layers; tested against {self.expected:g} within {t.quantile:.1f} SE (z = {t.z:+.1f}; catches a ratio "
            f"{t.catch:.2f} off)"
        )
        failed = [f"{self.expected:g} {abs(t.z):.1f} SE off, beyond its {t.quantile:.1f} SE"] * (not t.passes)
        failed += ["1 not excluded"] * (not self.exclusion(1.0).below)
        failed += [f"{alt} not excluded"] * (self.separates and not self.exclusion(self.alternative).below)
        if failed:
            return f"{measured}: FAILS, {' and '.join(failed)}"
        if not self.separates:
            seen = "excluded too" if self.exclusion(self.alternative).below else "not excluded"
            return (
                f"{measured}: asserted that they shrink (1 excluded); too wide to tell {self.expected:g} "
                f"from {alt} (± {self.threshold(self.alternative):.3f} needed), which is {seen}, not asserted"
            )
        return f"{measured}: asserted, 1 and {alt} excluded"


class MarkerTable:
    """Markers (softmax layers, mean over seeds) against their finite-size predictions, with one rule.

    A marker's reference (:attr:`Marker.reference`) is the functional on the
    limit law rescaled by the softmax layer's exact expected first-moment shift
    (:func:`predicted_shift`, :meth:`LimitLaws.shifted`), or on the limit law
    itself where no shift is predicted (tied layers), corrected by what is left:
    the same marker at half the size (:func:`halve`, same ratios) departs from
    its own shifted prediction by ``delta``, and the departure is ``O(1 / n)``
    (:data:`DEPARTURE_RATE`), so at ``n`` it is ``delta / 2``. The marker passes
    a two-sided Student-t test at ``level`` (:data:`MARKER_LEVEL`):
    ``|mean - reference| <= q * sqrt(se^2 + se_ref^2)``, ``se`` the standard error
    over the seeds at ``n``, ``se_ref`` the one the companion's seeds put on the
    reference (:attr:`Marker.reference_se`), ``q`` the ``1 - level / 2`` quantile of
    Student's t with Welch's degrees of freedom (:attr:`Marker.dof`); the tolerance
    is ``q`` standard errors (:meth:`quantile`), and the smallest error of the
    prediction it catches with probability 1/2 is :meth:`power` (the noncentral t, as
    :attr:`gelib.numerics.MeanTest.power`). Every marker is asserted (:meth:`bad`), and so is the rate
    at which the departures shrink, pooled over the layers that resolve them
    (:meth:`shrink_rate`; both in :meth:`verify`); the mean eigenvalue of an untied
    layer needs no companion (the shift is exact).
    """

    def __init__(self, laws: LimitLaws, level: float = MARKER_LEVEL, rate: float = DEPARTURE_RATE):
        if not 0 < level < 1:
            raise ValueError(f"level = {level}: a test level lies in (0, 1)")
        self.laws, self.level, self.rate = laws, level, rate
        self.markers: list[Marker] = []

    def add(
        self,
        panel: str,
        label: str,
        n: int,
        ge: float | np.ndarray,
        per_seed,
        predicted: float | np.ndarray | None = None,
        half: HalfSize | None = None,
        effect: float | None = None,
        layers: Sequence[AttentionConfig] = (),
    ) -> Summary:
        """Record a marker: GE value ``ge``, per-seed values ``per_seed``, its prediction and companion,
        the ``effect`` it must resolve (:attr:`Marker.effect`) and the softmax ``layers`` it was measured
        on; returns the summary of ``per_seed``."""
        s = summarize(per_seed)
        pred = None if predicted is None else float(predicted)
        eff = None if effect is None else float(effect)
        self.markers.append(
            Marker(panel, label, int(n), float(ge), s.mean, s.ci95, pred, half, self.rate, eff, tuple(layers), s.count)
        )
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

    def _half(self, fn: Callable, cfgs: tuple[AttentionConfig, ...], per_seed) -> list[HalfSize]:
        """The companions of the points of ``fn`` (one value or a curve) at the halved layers."""
        halves = tuple(halve(c) for c in cfgs)
        ge, pred = self.predict(fn, *halves)
        ref = np.atleast_1d(ge if pred is None else pred)
        values = np.asarray(per_seed, dtype=float).reshape(len(per_seed), -1)
        return [
            HalfSize(halves[0].n, s.mean, s.ci95, float(r), s.count)
            for r, s in zip(ref, (summarize(values[:, j]) for j in range(values.shape[1])))
        ]

    def check(
        self,
        panel: str,
        label: str,
        fn: Callable,
        cfgs,
        per_seed,
        n: int | None = None,
        half_per_seed=None,
        effect: float | None = None,
    ) -> Summary:
        """Record ``per_seed`` softmax values against ``fn`` on the laws of ``cfgs`` (a layer or a tuple).

        ``fn`` takes one law per layer (:meth:`predict`); ``n`` defaults to the
        first layer's; ``half_per_seed``: the same values on the halved layers (:func:`halve`),
        the companion of the marker; ``effect``: :attr:`Marker.effect`.
        """
        cfgs = (cfgs,) if isinstance(cfgs, AttentionConfig) else tuple(cfgs)
        ge, pred = self.predict(fn, *cfgs)
        half = None if half_per_seed is None else self._half(fn, cfgs, half_per_seed)[0]
        return self.add(panel, label, cfgs[0].n if n is None else n, ge, per_seed, pred, half, effect, cfgs)

    def measure(
        self,
        panel: str,
        label: str,
        fn: Callable,
        cfg: AttentionConfig,
        spectra: np.ndarray,
        half_spectra: np.ndarray | None = None,
        effect: float | None = None,
    ) -> Summary:
        """Record the functional ``fn`` on the laws of ``cfg`` against ``fn`` on each seed's eigenvalues.

        ``spectra`` has shape ``(seeds, n)``, ``half_spectra`` those of :func:`halve` of ``cfg``;
        ``fn`` maps a law or one array of eigenvalues to a number; ``effect``: :attr:`Marker.effect`.
        """
        half = None if half_spectra is None else [fn(x) for x in half_spectra]
        return self.check(panel, label, fn, cfg, [fn(x) for x in spectra], half_per_seed=half, effect=effect)

    def measure_curve(
        self,
        panel: str,
        label: str,
        xs,
        fn: Callable,
        cfg: AttentionConfig,
        spectra: np.ndarray,
        half_spectra: np.ndarray | None = None,
        x_name: str = "t",
    ) -> list[tuple[float, Summary]]:
        """One marker per point of a curve: ``fn`` maps a law or one array of eigenvalues to ``len(xs)`` values.

        Records the marker ``"{label}, {x_name}={x:.3g}"`` at every ``x`` in
        ``xs``; returns the ``(x, summary)`` pairs.
        """
        ge, pred = self.predict(fn, cfg)
        per_seed = np.array([fn(x) for x in spectra])  # (seeds, len(xs))
        halves = None if half_spectra is None else self._half(fn, (cfg,), [fn(x) for x in half_spectra])
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
                    None if halves is None else halves[j],
                    layers=(cfg,),
                ),
            )
            for j, x in enumerate(xs)
        ]

    def measure_mean(
        self, panel: str, label: str, cfg: AttentionConfig, spectra: np.ndarray, half_spectra: np.ndarray | None = None
    ) -> Summary:
        """Record the mean eigenvalue of ``cfg``'s softmax spectra (``(seeds, n)``) against ``m_1 (1 + b)``.

        Exact where a shift is predicted (:func:`predicted_shift`), so ``half_spectra`` is not used;
        a tied layer's is checked against the limit law's ``m_1`` corrected by its companion
        ``half_spectra``. Labelled ``"{label}, m_1"``.
        """

        def m1(mu):
            return expect(mu, lambda x: x, phi0=0.0)

        exact = predicted_shift(cfg) is not None
        return self.measure(panel, f"{label}, m_1", m1, cfg, spectra, None if exact else half_spectra)

    def measure_pairs(
        self, spectra: SoftmaxSpectra, panel: str, label: str, fn: Callable, cfgs: Sequence[AttentionConfig], *path
    ) -> Summary:
        """One marker of ``fn`` over the softmax layers ``cfgs``, each layer's mean eigenvalue with it.

        Layer ``i`` of ``cfgs`` and its companion are drawn by ``spectra.pair(cfg, *path, i)``
        (:meth:`~gelib.learning_markers.SoftmaxSpectra.pair`); each layer's mean eigenvalue is
        recorded first (:meth:`~gelib.learning_markers.MarkerTable.measure_mean`, labelled
        ``"h=.., d_K=.., d_O=.."``), then ``fn`` (one law or one array of eigenvalues per layer of
        ``cfgs``, e.g. a ratio of two layers' errors) on every seed, with the companions' values
        (:meth:`~gelib.learning_markers.MarkerTable.check`). Returns the marker's summary.
        """
        evs = [spectra.pair(c, *path, i) for i, c in enumerate(cfgs)]
        for c, (ev, _) in zip(cfgs, evs):
            self.measure_mean(panel, f"h={c.h}, d_K={c.d_k}, d_O={c.d_o}", c, ev)  # the mean: the shift alone
        per_seed = list(map(fn, *(ev for ev, _ in evs)))
        return self.check(panel, label, fn, cfgs, per_seed, half_per_seed=list(map(fn, *(half for _, half in evs))))

    def quantile(self, m: Marker) -> float:
        """The tolerance of ``m`` in standard errors: the ``1 - level / 2`` quantile of Student's t with
        :attr:`Marker.dof` degrees of freedom (``nan`` without seeds to estimate it)."""
        return float(scipy.stats.t.ppf(1 - self.level / 2, m.dof)) if m.dof >= 1 else math.nan

    def tolerance(self, m: Marker) -> float:
        """``quantile * sqrt(se^2 + reference_se^2) / |reference|``, relative: the largest miss that passes."""
        return self.quantile(m) * m.combined_se / abs(m.reference)

    def catch_se(self, m: Marker) -> float:
        """The error of ``mean - reference``, in standard errors (:attr:`Marker.combined_se`), that the check
        of ``m`` catches with probability :data:`~gelib.numerics.checks.CATCH_PROBABILITY`: the two-sided
        :func:`~gelib.numerics.checks.catch_ncp` at the table's level with :attr:`Marker.dof` degrees of
        freedom (the noncentral t, the measured standard error standing for the true one; ``nan``
        below one degree of freedom)."""
        return catch_ncp(m.dof + 1, self.level) if m.dof >= 1 else math.nan

    def power(self, m: Marker) -> float:
        """The smallest relative error of the prediction that the check of ``m`` catches with probability
        :data:`~gelib.numerics.checks.CATCH_PROBABILITY`, as :attr:`gelib.numerics.MeanTest.power` does:
        an error that multiplies the shifted prediction by ``1 + e`` at ``n`` and at ``n / 2`` alike moves
        ``mean - reference`` by ``e (1 - carried)`` of the reference (the companion carries
        :attr:`Marker.carried` of it into the reference), so ``catch_se * combined_se / |reference| /
        (1 - carried)`` (:meth:`catch_se`): at :data:`DEPARTURE_RATE` twice the error that moves the miss
        by the 1/2 point, which lies below the tolerance (an error of ``tolerance`` is caught more often
        than half the time)."""
        return self.catch_se(m) * m.combined_se / abs(m.reference) / (1 - m.carried)

    def rate_sensitivity(self, m: Marker) -> float:
        """How far the reference of ``m`` moves, relative, were its departures to shrink like
        ``n^{-1/2}`` (:data:`ALTERNATIVE_RATE`) instead: ``|shifted * departure(n / 2) * (2^{-1/2} - carried)|
        / |reference|`` (0 without a companion)."""
        if m.half is None:
            return 0.0
        other = (m.half.n / m.n) ** ALTERNATIVE_RATE
        return abs(m.shifted * m.half.departure * (other - m.carried)) / abs(m.reference)

    def tested(self, m: Marker) -> bool:
        """Whether the check of ``m`` has the power it needs: no :attr:`Marker.effect`, or a
        :meth:`tolerance` below it (the check would detect a departure of that size). A marker
        whose tolerance is not is drawn and listed, "not tested at this scale", and not asserted."""
        return m.effect is None or self.tolerance(m) < m.effect

    def bad(self) -> list[Marker]:
        """Every tested marker (:meth:`tested`) off its reference (:attr:`Marker.miss` above
        :meth:`tolerance`): each a failure."""
        return [m for m in self.markers if self.tested(m) and m.miss > self.tolerance(m)]

    def shrink_rate(self) -> ShrinkRate:
        """The pooled shrinking of the tested markers' departures (:class:`ShrinkRate`)."""
        by_layer: dict[tuple, list[tuple[float, float]]] = {}
        for m in self.markers:
            if m.half is not None and self.tested(m):
                by_layer.setdefault(m.layers, []).append((m.half.departure, m.departure))
        pairs = np.array([np.mean(v, axis=0) for v in by_layer.values()]).reshape(-1, 2)  # (layers, [n/2, n])
        count, k = sum(map(len, by_layer.values())), len(pairs)
        expected = 2.0**-self.rate
        if k < ShrinkRate.MIN_LAYERS:
            mean = pairs.mean(axis=0) if k else np.full(2, math.nan)
            return ShrinkRate(
                k, count, float(mean[0]), math.nan, float(mean[1] / mean[0]), math.nan, expected, level=self.level
            )
        q = float(scipy.stats.t.ppf(0.975, k - 1))
        (x, y), cov = pairs.mean(axis=0), np.cov(pairs, rowvar=False) / k
        ratio = y / x
        var = (cov[1, 1] - 2 * ratio * cov[0, 1] + ratio**2 * cov[0, 0]) / x**2
        return ShrinkRate(
            k,
            count,
            float(x),
            q * math.sqrt(cov[0, 0]),
            float(ratio),
            q * math.sqrt(max(var, 0.0)),
            expected,
            level=self.level,
        )

    def verify(self) -> None:
        """Raise :class:`AssertionError` if a tested marker is off its reference (:meth:`bad`), or if the
        departures, where enough layers resolve them, do not shrink at the rate the correction assumes
        (:meth:`shrink_rate`: an error that does not shrink would hide half of itself in the misses)."""
        bad = self.bad()
        if bad:
            raise AssertionError(f"markers off their reference: {[(m.panel, m.label) for m in bad]}")
        shrink = self.shrink_rate()
        if shrink.asserted and not shrink.consistent:
            raise AssertionError(f"the departures do not shrink like n^-{self.rate:g}: {shrink.describe()}")

    def marker(self, panel: str, prefix: str) -> Marker:
        """The first marker of ``panel`` whose label begins with ``prefix``."""
        return next(m for m in self.markers if m.panel == panel and m.label.startswith(prefix))

    def departures(self, panel: str, contains: str) -> dict:
        """The departures left after the shift by the markers of ``panel`` whose label contains ``contains``,
        in %: ``dep-n-lo`` and ``dep-n-hi`` (:attr:`Marker.departure`, at ``n``) and ``dep-half-lo`` and
        ``dep-half-hi`` (their companions', at ``n / 2``; ``nan`` without one)."""
        ms = [m for m in self.markers if m.panel == panel and contains in m.label]
        at_n, half = [100 * m.departure for m in ms], [100 * m.half.departure for m in ms if m.half is not None]
        return {
            "dep-n-lo": min(at_n),
            "dep-n-hi": max(at_n),
            "dep-half-lo": min(half, default=math.nan),
            "dep-half-hi": max(half, default=math.nan),
        }

    @property
    def untested(self) -> list[Marker]:
        """The markers whose check lacks the power its :attr:`Marker.effect` asks for."""
        return [m for m in self.markers if not self.tested(m)]

    @property
    def worst(self) -> float:
        """The largest ratio of miss to tolerance over the tested markers (at most 1 when every one passes)."""
        return max((m.miss / self.tolerance(m) for m in self.markers if self.tested(m)), default=0.0)

    @property
    def predicted(self) -> int:
        """How many markers have a first-moment prediction (the others use GE in its place)."""
        return sum(m.predicted is not None for m in self.markers)

    @property
    def corrected(self) -> int:
        """How many markers carry a half-size companion (:class:`HalfSize`)."""
        return sum(m.half is not None for m in self.markers)

    @property
    def max_deviation(self) -> float:
        """The largest relative deviation from the limit law, ``|mean - GE| / |GE|``."""
        return max((m.deviation for m in self.markers), default=0.0)

    @property
    def max_miss(self) -> float:
        """The largest relative miss of the reference, ``|mean - reference| / |reference|``."""
        return max((m.miss for m in self.markers), default=0.0)

    @property
    def max_tolerance(self) -> float:
        """The largest relative tolerance (:meth:`tolerance`) of a tested marker: the weakest check asserted."""
        return max((self.tolerance(m) for m in self.markers if self.tested(m)), default=0.0)

    @property
    def max_power(self) -> float:
        """The largest :meth:`power` of a tested marker: the largest error of a prediction that may pass."""
        return max((self.power(m) for m in self.markers if self.tested(m)), default=0.0)

    @property
    def quantiles(self) -> tuple[float, float]:
        """The smallest and largest tolerance in standard errors (:meth:`quantile`) of the tested markers."""
        q = [self.quantile(m) for m in self.markers if self.tested(m)]
        return (min(q), max(q)) if q else (math.nan, math.nan)

    @property
    def widest_dof(self) -> float:
        """The degrees of freedom (:attr:`Marker.dof`) of the tested marker with the widest tolerance in
        standard errors (the largest :meth:`quantile`; ``nan`` without one)."""
        tested = [m for m in self.markers if self.tested(m)]
        return max(tested, key=self.quantile).dof if tested else math.nan

    @property
    def shift_markers(self) -> list[Marker]:
        """The tested markers whose reference is the shifted prediction alone, with no companion (the mean
        eigenvalues of untied layers, :meth:`measure_mean`), which test the first-moment shift itself."""
        return [m for m in self.markers if m.half is None and m.predicted is not None and self.tested(m)]

    def shift_seeds(self, m: Marker, most: int = 100_000) -> int | None:
        """The fewest seeds at which the check of ``m`` (no companion) would have a tolerance below the
        shift it tests, ``|GE - shifted| / |shifted|``, at the spread per seed measured here (its standard
        error times ``sqrt(seeds)``): the smallest ``k`` with ``t_{1 - level/2, k - 1} sd / sqrt(k)`` below
        the shift; ``None`` if none up to ``most``."""
        shift = abs(m.ge - m.shifted) / abs(m.shifted)
        sd = m.se * math.sqrt(m.seeds) / abs(m.reference)
        k = np.arange(2, most + 1)
        ok = np.flatnonzero(scipy.stats.t.ppf(1 - self.level / 2, k - 1) * sd / np.sqrt(k) < shift)
        return int(k[ok[0]]) if ok.size else None

    @property
    def max_rate_sensitivity(self) -> float:
        """The largest :meth:`rate_sensitivity` of a tested marker over its :meth:`tolerance`: how much of its
        tolerance a marker's reference would move were the departures to shrink like ``n^{-1/2}``."""
        return max((self.rate_sensitivity(m) / self.tolerance(m) for m in self.markers if self.tested(m)), default=0.0)

    def summary(self) -> dict:
        """The table in numbers: ``markers`` (count), ``predicted`` (:attr:`predicted`),
        ``corrected`` (:attr:`corrected`), ``worst`` (:attr:`worst`), ``failures``
        (how many :meth:`bad`), ``worst-dev`` (:attr:`max_deviation`, in %),
        ``worst-miss`` (:attr:`max_miss`, in %), ``max-tol`` (:attr:`max_tolerance`, in %),
        ``max-power`` (:attr:`max_power`, in %), ``q-lo`` and ``q-hi`` (:attr:`quantiles`, in standard
        errors), ``level`` (in %), ``rate-shift`` (:attr:`max_rate_sensitivity`), ``untested`` (how
        many :attr:`untested`), ``shrink`` (in words), ``shrink-ratio``, ``shrink-ci``,
        ``shrink-layers``, ``shrink-separates``, ``shrink-tol-se`` (the tolerance of its test of the rate,
        in standard errors), ``shrink-catch`` (the departure of the ratio that test catches half the time),
        ``shrink-assert-ci`` and ``shrink-separate-ci`` (the widest 95 % half-widths at which it excludes 1
        and ``2^{-1/2}``, :meth:`ShrinkRate.threshold`) (:meth:`shrink_rate`; ``nan`` below
        :attr:`ShrinkRate.MIN_LAYERS` layers).

        The level against twice the 95 % half-width: ``q-df`` (:attr:`widest_dof`), ``q-twice`` (twice the
        0.975 quantile of Student's t at ``q-df``, in standard errors, to set beside ``q-hi``), ``q-cross``
        (the fewest whole degrees of freedom at which the level's quantile is the narrower) and ``alarm``
        (in %, the level times the tested markers: the Bonferroni bound on a false alarm of the table).
        The shift tested by the mean eigenvalues (:attr:`shift_markers`): ``shift-count``, ``shift-catch``
        (how many have a tolerance below their shift), ``shift-tol`` (their smallest tolerance, in %),
        ``shift-b`` (their largest shift ``|GE - shifted| / |shifted|``, in %) and ``shift-seeds`` (the
        fewest seeds at which one of them would have a tolerance below its shift, :meth:`shift_seeds`; 0
        if none)."""
        shrink = self.shrink_rate()
        return {
            "shrink": shrink.describe(),
            "shrink-ratio": shrink.ratio,
            "shrink-ci": shrink.ci95,
            "shrink-layers": shrink.layers,
            **self._shrink_summary(shrink),
            "markers": len(self.markers),
            "untested": len(self.untested),
            "predicted": self.predicted,
            "corrected": self.corrected,
            "worst": float(self.worst),
            "failures": len(self.bad()),
            "worst-dev": float(100 * self.max_deviation),
            "worst-miss": float(100 * self.max_miss),
            "max-tol": float(100 * self.max_tolerance),
            "max-power": float(100 * self.max_power),
            "q-lo": self.quantiles[0],
            "q-hi": self.quantiles[1],
            "level": 100 * self.level,
            "rate-shift": float(self.max_rate_sensitivity),
            "shrink-separates": shrink.separates,
            **self._level_summary(),
            **self._shift_summary(),
        }

    @staticmethod
    def _shrink_summary(shrink: ShrinkRate) -> dict:
        """The tolerances of the shrink check (see :meth:`summary`)."""
        if shrink.layers < ShrinkRate.MIN_LAYERS:
            return dict.fromkeys(("shrink-tol-se", "shrink-catch", "shrink-assert-ci", "shrink-separate-ci"), math.nan)
        t = shrink.test
        return {
            "shrink-tol-se": t.quantile,
            "shrink-catch": t.catch,
            "shrink-assert-ci": shrink.threshold(1.0),
            "shrink-separate-ci": shrink.threshold(shrink.alternative),
        }

    def _level_summary(self) -> dict:
        """The test level against the book's older rule, twice the 95 % half-width (see :meth:`summary`)."""
        df = self.widest_dof
        twice = 2 * float(scipy.stats.t.ppf(0.975, df)) if df >= 1 else math.nan
        k = np.arange(1, 1000)
        cross = k[scipy.stats.t.ppf(1 - self.level / 2, k) < 2 * scipy.stats.t.ppf(0.975, k)][0]
        tested = sum(self.tested(m) for m in self.markers)
        return {"q-df": df, "q-twice": twice, "q-cross": int(cross), "alarm": 100 * self.level * tested}

    def _shift_summary(self) -> dict:
        """What the mean eigenvalues can see of the shift they test (see :meth:`summary`)."""
        ms = self.shift_markers
        seeds = [k for k in map(self.shift_seeds, ms) if k is not None]
        return {
            "shift-count": len(ms),
            "shift-catch": sum(self.tolerance(m) < abs(m.ge - m.shifted) / abs(m.shifted) for m in ms),
            "shift-tol": 100 * min((self.tolerance(m) for m in ms), default=math.nan),
            "shift-b": 100 * max((abs(m.ge - m.shifted) / abs(m.shifted) for m in ms), default=math.nan),
            "shift-seeds": min(seeds, default=0),
        }

    def markdown(self) -> str:
        """The table of every marker: GE, the shifted prediction, the departures from it at ``n / 2`` (the
        companion's) and at ``n`` (uncorrected), the reference, MHA mean ± 95 % CI, the relative
        miss of the reference, the tolerance (in %, and in standard errors, :meth:`quantile`, with its
        degrees of freedom, :attr:`Marker.dof`) and the power (:meth:`power`, in %)."""
        rows = [
            "| panel | marker | $n$ | GE | shifted | departure at $n/2$ | at $n$ | reference | MHA (mean ± 95 % CI) "
            "| miss | tolerance | power | check |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m in self.markers:
            pred = "—" if m.predicted is None else f"{m.predicted:.4g}"
            half = (
                "—"
                if m.half is None
                else f"{100 * m.half.departure:+.2f} % ± {100 * m.half.ci / abs(m.half.reference):.2f}"
            )
            if m.effect is not None and not self.tested(m):
                verdict = f"not tested at this scale (needs < {100 * m.effect:.3g} %)"
            else:
                verdict = "passes" if m.miss <= self.tolerance(m) else "FAILS"
            rows.append(
                f"| {m.panel} | {m.label} | {m.n} | {m.ge:.4g} | {pred} | {half} | {100 * m.departure:+.2f} % | "
                f"{m.reference:.4g} | "
                f"{m.mean:.4g} ± {m.ci:.2g} | {100 * m.miss:.2f} % | "
                f"{100 * self.tolerance(m):.2f} % ({self.quantile(m):.2f} SE, df {m.dof:.2g}) | "
                f"{100 * self.power(m):.2f} % "
                f"| {verdict} |"
            )
        return "\n".join(rows)

    def __len__(self) -> int:
        return len(self.markers)


@dataclasses.dataclass(frozen=True)
class ShiftedValues:
    """A functional on layers' limit laws and on those laws shifted by each layer's own ``b(n, d_K)``.

    ``ge``: the functional on the limit law of each layer; ``shifted``: on the law of ``(1 + b) x``
    (:meth:`LimitLaws.shifted`), ``b`` the layer's exact expected first-moment shift at its own
    ``n`` and ``d_K`` (:func:`predicted_shift`), which is where the softmax layer's mean sits
    before any change of shape; ``b``: those shifts. ``nan`` where no shift is predicted (tied).
    ``layers``: the layers, in order.
    """

    ge: np.ndarray
    shifted: np.ndarray
    b: np.ndarray
    layers: tuple = ()

    @property
    def h(self) -> list[int]:
        """The layers' head counts (the x axis of a path)."""
        return [c.h for c in self.layers]

    @property
    def change(self) -> np.ndarray:
        """``shifted / ge - 1``: how far the shift alone moves the functional, relative."""
        return self.shifted / self.ge - 1


def shifted_values(laws: LimitLaws, fn: Callable, cfgs: Sequence[AttentionConfig]) -> ShiftedValues:
    """``fn(law, cfg)`` on each layer's limit law and on that law shifted by the layer's ``b(n, d_K)``.

    At a layer's own dimensions (e.g. Table D.3's, ``n = 4096``, ``d_K = 64``) the softmax layer's
    mean eigenvalue is ``(1 + b) m_1``, exactly in expectation (:func:`predicted_shift`); the
    shifted value is where its marker sits if the shift is all that separates it from the limit
    law. The GE curve does not move with ``n`` at fixed ratios; ``b`` does not vanish at fixed
    ``d_K`` (it tends to ``beta^4 / d_K``-order values, :func:`gelib.models.mha_shift_exact`).
    """
    ge, shifted, b = [], [], []
    for cfg in cfgs:
        ge.append(float(fn(laws(cfg), cfg)))
        law = laws.shifted(cfg)
        shifted.append(math.nan if law is None else float(fn(law, cfg)))
        shift = predicted_shift(cfg)
        b.append(math.nan if shift is None else shift)
    return ShiftedValues(np.array(ge), np.array(shifted), np.array(b), tuple(cfgs))


def path_shifts(laws: LimitLaws, fn: Callable, paths: Mapping[str, Sequence], step: int = 1) -> dict:
    """:func:`shifted_values` along paths: ``{name: ShiftedValues}`` of every ``step``-th point of each
    path (:class:`gelib.learning.PathPoint`, its ``cfg``), from the first."""
    return {name: shifted_values(laws, fn, [p.cfg for p in points[::step]]) for name, points in paths.items()}


def shift_glue(values: Mapping[str, ShiftedValues], bar: float, ladder: Sequence[int] = (512, 4096, 65536)) -> dict:
    """What a chapter says about :func:`shifted_values` of its curves, in numbers (per cent).

    ``b``: the largest shift of the layers; ``lo``: the most negative relative change of the
    functional over every curve of ``values`` and ``hi`` the most positive; ``bars``: ``|lo|`` and
    ``|hi|``, whichever is larger, over ``bar`` (a relative half-width, e.g. Table D.1's, as a
    fraction; ``bar``: it in %); ``noise``: the change ``1 / (1 + b) - 1`` of a functional that scales like ``1 / m_1``
    (a noise term at convergence); ``ladder-N``: the exact shift at ``n = N`` and the first
    layer's ``d_K`` and ``beta`` (:func:`gelib.models.mha_shift_exact`), e.g. along a chapter's
    scales at fixed head width; and per curve, keyed by its position ``i`` (0, 1, ...): ``over-h-i``,
    the smallest head count from which on every point moves by more than ``bar`` (0 if the last does
    not), ``under-h-i``, the largest head count whose point moves by less (0 if none), and
    ``min-bars-i``, the smallest move over ``bar``.
    """
    change = np.concatenate([v.change for v in values.values()])
    b = float(np.nanmax(np.concatenate([v.b for v in values.values()])))
    lo, hi = float(np.nanmin(change)), float(np.nanmax(change))
    first = next(iter(values.values())).layers[0]
    return {
        "b": 100 * b,
        "lo": 100 * lo,
        "hi": 100 * hi,
        "bars": max(abs(lo), abs(hi)) / bar,
        "bar": 100 * bar,
        "noise": 100 * (1 / (1 + b) - 1),
        **{f"ladder-{n}": 100 * mha_shift_exact(n, first.d_k, first.beta) for n in ladder},
        **{k: v for i, sv in enumerate(values.values()) for k, v in _over_bar(sv, bar, i).items()},
    }


def _over_bar(v: ShiftedValues, bar: float, i: int) -> dict:
    """The keys ``over-h-i``, ``under-h-i`` and ``min-bars-i`` of :func:`shift_glue` for one curve."""
    h, over = np.asarray(v.h), np.abs(v.change) > bar
    tail = np.flatnonzero(~over)
    first = 0 if not over[-1] else int(h[tail[-1] + 1]) if tail.size else int(h[0])
    return {
        f"over-h-{i}": first,
        f"under-h-{i}": int(h[tail[-1]]) if tail.size else 0,
        f"min-bars-{i}": float(np.nanmin(np.abs(v.change)) / bar),
    }


def shift_data(values: Mapping[str, ShiftedValues], quantity: str = "coefficient error") -> dict:
    """A figure's numbers (the panel dict of :mod:`gelib.figure_data`, for its CSV): per curve of
    ``values`` its GE series and its shifted one (kind ``"ge"`` and ``"shifted"``) against ``h``."""
    series = [
        {"label": f"{kind}, {name}", "kind": kind, "x": [float(h) for h in v.h], "y": [float(y) for y in ys]}
        | {"ci95": None}
        for name, v in values.items()
        for kind, ys in (("ge", v.ge), ("shifted", v.shifted))
    ]
    return {"panel": "2c-shift", "quantity": quantity, "series": series}


def convergence_data(results: Sequence[Convergence]) -> dict:
    """A figure's numbers for :func:`convergence` results: per result its departures (mean, 95 %
    half-width) against ``n``, kind ``"mha"``."""
    series = [
        {
            "label": r.label,
            "kind": "mha",
            "x": [float(n) for n in r.ns],
            "y": [float(d.mean) for d in r.departures],
            "ci95": [float(d.ci95) for d in r.departures],
        }
        for r in results
    ]
    return {"panel": "convergence", "quantity": "departure from the shifted prediction", "series": series}


def convergence_glue(groups: Mapping[str, Sequence[Convergence]], n: int) -> dict:
    """What a chapter says about groups of :func:`convergence` results (one group per layer), keyed
    ``{group}-{word}-...`` by the group's name and the first word of each label: ``slope``, ``ci``,
    ``at-n`` (the departure at ``n``, in %, ``nan`` if ``n`` is not among the sizes) and ``verdict``
    (:meth:`Convergence.describe`); per group ``{group}-resolved`` and ``{group}-separated`` (how
    many results are resolved, and how many tell ``1 / n`` from ``n^{-1/2}``,
    :attr:`Convergence.separates`), ``{group}-seeds``, ``{group}-n0`` and ``{group}-n2`` (the
    smallest and largest ``n``), ``{group}-h`` (the head count of its layer), and its first result's
    tests: ``{group}-dof``, ``{group}-tol-se`` (the tolerance of the test of ``-rate``, in standard
    errors), ``{group}-res-se`` (that of a departure's test of 0), ``{group}-shrink-ci`` and
    ``{group}-sep-ci`` (the widest 95 % half-widths at which 0 and ``-alternative`` are excluded,
    :meth:`Convergence.threshold`) and ``{group}-level`` (in %); per result also ``catch`` (the error of
    the slope its test catches half the time)."""
    out: dict = {}
    for g, results in groups.items():
        first = results[0]
        out |= {f"{g}-resolved": sum(r.resolved for r in results), f"{g}-separated": sum(r.separates for r in results)}
        out |= {f"{g}-seeds": first.departures[0].count, f"{g}-n0": first.ns[0], f"{g}-n2": first.ns[-1]}
        out[f"{g}-h"] = first.layers[0].h if first.layers else 0
        out |= {f"{g}-dof": first.dof, f"{g}-tol-se": first.test.quantile, f"{g}-level": 100 * first.level}
        out |= {f"{g}-res-se": max(t.quantile for t in first.departure_tests)}
        out |= {f"{g}-shrink-ci": first.threshold(0.0), f"{g}-sep-ci": first.threshold(-first.alternative)}
        for r in results:
            w = f"{g}-{r.label.split()[0]}"
            at_n = 100 * r.departures[r.ns.index(n)].mean if n in r.ns else math.nan
            out |= {f"{w}-slope": r.slope, f"{w}-ci": r.ci95, f"{w}-at-n": at_n, f"{w}-verdict": r.describe()}
            out[f"{w}-catch"] = r.test.catch
    return out


def named_shifts(laws: LimitLaws, items: Mapping[str, tuple[Callable, AttentionConfig]]) -> dict:
    """:func:`shifted_values` of single layers, for a chapter's prose: per ``name: (fn, cfg)`` the keys
    ``{name}-ge``, ``{name}-shifted``, ``{name}-change`` (in %) and ``{name}-b`` (the shift, in %)."""
    out: dict = {}
    for name, (fn, cfg) in items.items():
        v = shifted_values(laws, fn, [cfg])
        out |= {f"{name}-ge": v.ge[0], f"{name}-shifted": v.shifted[0]}
        out |= {f"{name}-change": 100 * v.change[0], f"{name}-b": 100 * v.b[0]}
    return out


def beside_rows(
    value: float,
    rows: Sequence[Mapping],
    departure: float = 0.0,
    n: int = 1,
    n_at: int = 1,
    rate: float = DEPARTURE_RATE,
) -> dict:
    """A prediction ``value`` beside rows of Table D.1 (``name``, ``value``, ``half_width``, e.g. those of
    :func:`gelib.figure_data.teacher_bars`), for a chapter's prose: per row ``{name}-off``, ``(value -
    row) / half_width`` (signed, in the row's half-widths; beyond 1 in size the row's bar misses it);
    and with the departure a marker keeps at ``n`` after the shift, ``departure`` (relative), carried to
    ``n_at`` at ``rate`` (``(n / n_at)^rate``): ``rem`` (the value times ``1 + departure (n / n_at)^rate``),
    ``rem-dep`` (that factor less 1, in %) and per row ``{name}-off-rem``."""
    carried = departure * (n / n_at) ** rate
    out: dict = {"rem": value * (1 + carried), "rem-dep": 100 * carried}
    for r in rows:
        out[f"{r['name']}-off"] = (value - r["value"]) / r["half_width"]
        out[f"{r['name']}-off-rem"] = (out["rem"] - r["value"]) / r["half_width"]
    return out
