"""The book's check of a measured mean against an exact prediction, as a stated test.

A mean over ``N`` seeds is asserted against its prediction by a two-sided Student-t test
at :data:`~gelib.numerics.checks.CHECK_LEVEL`: ``|mean - predicted| <= q se``, ``se`` the standard error over
the seeds and ``q`` the ``1 - level / 2`` quantile of Student's t with ``N - 1`` degrees
of freedom, the tolerance in standard errors (:attr:`~gelib.numerics.MeanTest.quantile`). Its power is
stated as the smallest relative error of the prediction it catches
(:attr:`~gelib.numerics.MeanTest.power`): the error at which it fails with probability
:data:`~gelib.numerics.checks.CATCH_PROBABILITY`, from the noncentral t law of the statistic, with the measured
standard error standing for the true one. The learning markers use the same level and
the same reading (:data:`gelib.learning_markers.MARKER_LEVEL`).

The rule the book used before, "within twice its 95 % interval", is
``2 t_{0.975, N-1}`` standard errors (:func:`~gelib.numerics.checks.twice_ci95_quantile`): 6.4 at 4 seeds and
4.7 at 8, a two-sided level of 0.8 % and 0.2 % (:func:`~gelib.numerics.checks.level_of`), not the 2 x 1.96 its
words suggest.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import scipy.optimize
import scipy.stats
from numpy.typing import ArrayLike

__all__ = [
    "CHECK_LEVEL",
    "CATCH_PROBABILITY",
    "MeanTest",
    "mean_test",
    "t_quantile",
    "catch_ncp",
    "rejection_probability",
    "seeds_to_catch",
    "twice_ci95_quantile",
    "level_of",
    "worst_of",
]

#: The level of each check of a mean against an exact prediction, so that a correct prediction
#: fails with probability ``10^{-3}`` (as each learning marker, :data:`gelib.learning_markers.MARKER_LEVEL`)
#: and ``M`` such checks fail by chance in at most ``M / 1000`` of the runs.
CHECK_LEVEL = 1e-3

#: The probability with which a check catches the error its power states (:attr:`~gelib.numerics.MeanTest.power`).
CATCH_PROBABILITY = 0.5


def t_quantile(seeds: float, level: float = CHECK_LEVEL, one_sided: bool = False) -> float:
    """The tolerance in standard errors of the test over ``seeds`` values: ``t_{1 - level/2, seeds - 1}``
    (``t_{1 - level, seeds - 1}`` for the ``one_sided`` test); ``seeds`` may be fractional, one more than
    Welch's degrees of freedom (:attr:`gelib.learning_markers.Marker.dof`)."""
    if seeds < 2:
        raise ValueError(f"seeds = {seeds}: a standard error needs at least two values")
    if not 0 < level < 1:
        raise ValueError(f"level = {level}: a test level lies in (0, 1)")
    return float(scipy.stats.t.ppf(1 - level / (1 if one_sided else 2), seeds - 1))


def rejection_probability(ncp: float, seeds: float, level: float = CHECK_LEVEL, one_sided: bool = False) -> float:
    """The probability that the test fails when the mean is off its prediction by ``ncp`` true standard
    errors (``sigma / sqrt(seeds)``, normal values): ``P(|T| > q)``, ``T`` noncentral t with ``seeds - 1``
    degrees of freedom and noncentrality ``ncp``; ``P(T > q)`` for the ``one_sided`` test (``ncp`` above the
    prediction)."""
    q, df = t_quantile(seeds, level, one_sided), seeds - 1
    if one_sided:
        return float(scipy.stats.nct.sf(q, df, ncp))
    # the lower tail as the upper tail at -ncp: scipy's noncentral cdf is nan far in that tail
    return float(scipy.stats.nct.sf(q, df, abs(ncp)) + scipy.stats.nct.sf(q, df, -abs(ncp)))


def catch_ncp(
    seeds: float, level: float = CHECK_LEVEL, probability: float = CATCH_PROBABILITY, one_sided: bool = False
) -> float:
    """The error, in true standard errors, that the test over ``seeds`` values catches with ``probability``
    (:func:`~gelib.numerics.checks.rejection_probability` solved for ``ncp``)."""
    if not level < probability < 1:
        raise ValueError(f"probability = {probability}: between the level {level} and 1")
    q = t_quantile(seeds, level, one_sided)
    return float(
        scipy.optimize.brentq(
            lambda d: rejection_probability(d, seeds, level, one_sided) - probability, 0.0, 4 * q + 10
        )
    )


def seeds_to_catch(
    error: float, rel_std: float, level: float = CHECK_LEVEL, probability: float = CATCH_PROBABILITY
) -> int:
    """The fewest seeds whose test catches a relative error ``error`` of the prediction with
    ``probability``, the values' standard deviation being ``rel_std`` of the prediction."""
    seeds = 2
    while catch_ncp(seeds, level, probability) * rel_std / math.sqrt(seeds) > error:
        seeds += 1
    return seeds


def twice_ci95_quantile(seeds: int) -> float:
    """The old rule "within twice its 95 % interval" in standard errors: ``2 t_{0.975, seeds - 1}``."""
    return 2 * t_quantile(seeds, 0.05)


def level_of(quantile: float, seeds: int) -> float:
    """The two-sided level of a tolerance of ``quantile`` standard errors over ``seeds`` values."""
    return float(2 * scipy.stats.t.sf(quantile, seeds - 1))


@dataclasses.dataclass(frozen=True)
class MeanTest:
    """A measured mean against its prediction, by a two-sided Student-t test at ``level``.

    ``mean`` and ``se``: the mean over ``seeds`` values and its standard error; ``predicted``:
    the exact prediction, or with ``one_sided`` an upper bound (the test of ``mean <= predicted``,
    failing only above it, at the same level).
    """

    mean: float
    se: float
    seeds: int
    predicted: float
    level: float = CHECK_LEVEL
    one_sided: bool = False

    @property
    def quantile(self) -> float:
        """The tolerance in standard errors (:func:`~gelib.numerics.checks.t_quantile`)."""
        return t_quantile(self.seeds, self.level, self.one_sided)

    @property
    def tolerance(self) -> float:
        """``quantile * se``: the largest ``|mean - predicted|`` (``mean - predicted``, one-sided) that passes."""
        return self.quantile * self.se

    @property
    def z(self) -> float:
        """``(mean - predicted) / se``, the test's statistic."""
        return (self.mean - self.predicted) / self.se

    @property
    def passes(self) -> bool:
        """``|mean - predicted| <= tolerance`` (``mean - predicted <= tolerance``, one-sided)."""
        off = self.mean - self.predicted
        return (off if self.one_sided else abs(off)) <= self.tolerance

    @property
    def below(self) -> bool:
        """Whether the mean lies below ``predicted`` by more than :attr:`tolerance` (``z < -quantile``).

        For a ``one_sided`` test this excludes ``predicted`` from above: the one-sided test of
        ``mean >= predicted`` at ``level`` rejects it, so a mean whose true value is ``predicted`` (or
        more) is found below with probability at most ``level``."""
        return self.mean - self.predicted < -self.tolerance

    @property
    def catch(self) -> float:
        """The smallest error ``|mean - predicted|`` of the prediction, in the values' units, that the test
        catches with probability :data:`~gelib.numerics.checks.CATCH_PROBABILITY`:
        :func:`~gelib.numerics.checks.catch_ncp` standard errors."""
        return catch_ncp(self.seeds, self.level, one_sided=self.one_sided) * self.se

    @property
    def power(self) -> float:
        """The smallest relative error of the prediction that the test catches with probability
        :data:`~gelib.numerics.checks.CATCH_PROBABILITY`: :attr:`catch` over ``|predicted|`` (infinite
        for a prediction of 0)."""
        return self.catch / abs(self.predicted) if self.predicted else math.inf

    @property
    def ci95(self) -> float:
        """The 95 % Student-t half-width of ``mean``."""
        return t_quantile(self.seeds, 0.05) * self.se

    @classmethod
    def of(cls, summary, predicted: float, level: float = CHECK_LEVEL) -> MeanTest:
        """The test of a summary over seeds (``mean``, ``std`` and ``count``, e.g.
        :class:`gelib.spectra.Summary`) against ``predicted``."""
        return cls(
            float(summary.mean),
            float(summary.std) / math.sqrt(summary.count),
            int(summary.count),
            float(predicted),
            level,
        )

    @classmethod
    def of_fit(cls, fit, predicted: float, level: float = CHECK_LEVEL, one_sided: bool = False) -> MeanTest:
        """The test of a fitted slope (``slope``, its 95 % half-width ``ci95`` and its Student-t degrees of
        freedom ``dof``, e.g. :class:`~gelib.numerics.PowerFit`) against ``predicted``: the statistic
        ``(slope - predicted) / se`` is Student's t with ``dof`` degrees of freedom, so the test is that of
        a mean over ``dof + 1`` values (``seeds``), and :attr:`catch` is in units of the slope; ``one_sided``:
        ``predicted`` is an upper bound on the slope."""
        if fit.dof is None or fit.dof < 1:
            raise ValueError(f"a fit with dof = {fit.dof}: no Student-t test")
        se = float(fit.ci95) / t_quantile(fit.dof + 1, 0.05)
        return cls(float(fit.slope), se, int(fit.dof) + 1, float(predicted), level, one_sided)

    def catches(self, error: float, probability: float = CATCH_PROBABILITY) -> bool:
        """Whether the test catches a relative error ``error`` of the prediction with ``probability``."""
        ncp = catch_ncp(self.seeds, self.level, probability, self.one_sided)
        return bool(ncp * self.se <= error * abs(self.predicted))

    def glue(self, unit: float = 1.0, prefix: str = "") -> dict:
        """The numbers a chapter states beside the check: ``mean``, ``ci`` (95 % half-width) and
        ``predicted``, each times ``unit`` (100: in %), ``seeds``, ``tol_se`` (:attr:`quantile`),
        ``z``, ``power`` (in % of the prediction), ``catch`` (:attr:`catch`, times ``unit``) and
        ``level`` (in %); each key after ``prefix``."""
        return {prefix + k: v for k, v in self._glue(unit).items()}

    def _glue(self, unit: float) -> dict:
        return {
            "mean": unit * self.mean,
            "ci": unit * self.ci95,
            "predicted": unit * self.predicted,
            "seeds": self.seeds,
            "tol_se": self.quantile,
            "z": self.z,
            "power": 100 * self.power,
            "catch": unit * self.catch,
            "level": 100 * self.level,
        }

    def __str__(self) -> str:
        verdict = "passes" if self.passes else "FAILS"
        return (
            f"{self.mean:.4g} +- {self.ci95:.2g} (95 %, {self.seeds} seeds) against {self.predicted:.4g}: "
            f"z = {self.z:+.2f}, tolerance {self.quantile:.2f} SE (level {self.level:g}), "
            f"catches a {100 * self.power:.1f} % error half the time; {verdict}"
        )


def mean_test(values: ArrayLike, predicted: float, level: float = CHECK_LEVEL) -> MeanTest:
    """The :class:`~gelib.numerics.MeanTest` of ``values`` (one per seed, any shape, flattened) against
    ``predicted``."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size < 2:
        raise ValueError(f"{v.size} value(s): a standard error needs at least two")
    return MeanTest(float(v.mean()), float(v.std(ddof=1) / math.sqrt(v.size)), int(v.size), float(predicted), level)


def worst_of(tests: Sequence[MeanTest], unit: float = 1.0) -> dict:
    """What a chapter states about several tests at once: the largest ``|z|`` (``z_max``), the largest
    tolerance in standard errors (``tol_se``, that of the fewest seeds), the largest
    :attr:`~gelib.numerics.MeanTest.catch` times ``unit`` (``catch``: the least precise test's) and the
    level (``level``, in %); nan for no test."""
    if not tests:
        return dict.fromkeys(("z_max", "tol_se", "catch", "level"), math.nan)
    return {
        "z_max": max(abs(t.z) for t in tests),
        "tol_se": max(t.quantile for t in tests),
        "catch": unit * max(t.catch for t in tests),
        "level": 100 * max(t.level for t in tests),
    }
