"""The configuration of one random multi-head attention layer.

Notation follows the paper (Hayase and Karakida, 2026, Tables A.1-A.3) and
the book's appendix (:ref:`conv-model`): context length ``n``, input width ``d >= n``,
``h`` query heads grouped into ``h_kv`` key/value groups, key/query width
``d_k``, value width ``d_v``, output width ``d_o``, inverse temperature
``beta``, and optional within-head key-value tying (``W^V_g = W^K_g``).

Every public entry point of :mod:`gelib` takes an :class:`AttentionConfig`;
it validates itself on construction, so an impossible layer fails here with a
message that says what to change, not later inside a matrix product.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

__all__ = ["AttentionConfig", "ConfigError", "max_log_score"]


class ConfigError(ValueError):
    """An attention configuration that cannot be sampled or analysed."""


_INT_FIELDS = ("n", "d", "h", "h_kv", "d_k", "d_v", "d_o")
_DTYPES = ("float32", "float64")


def _as_int(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)  # type: ignore[call-overload]  # a concrete Real has __int__; numbers.Real omits it
        else:
            raise ConfigError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value}")
    return value


def _floor3(x: float) -> str:
    """``x`` rounded down to 3 significant digits, so that the value printed is safe to use."""
    if not math.isfinite(x) or x <= 0:
        return f"{x:g}"
    p = 10 ** (math.floor(math.log10(x)) - 2)
    return f"{math.floor(x / p) * p:.3g}"


def max_log_score(n: int, h: int) -> float:
    """A high-probability bound on the largest of the ``h n^2`` scores.

    The scores ``S_ij = q_i . k_j / sqrt(d_k)`` are (nearly) standard normal;
    the largest of ``N`` such values stays below ``sqrt(2 log N) + 3`` except
    with negligible probability.
    """
    return math.sqrt(2.0 * math.log(max(h * n * n, 2))) + 3.0


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    """One attention layer with random weights.

    Parameters
    ----------
    n, d : int
        Context length and input width; ``n <= d`` (``X X^T / d = I_n``
        needs ``n`` orthogonal rows in ``R^d``).
    h, h_kv : int
        Query heads and key/value groups; ``h_kv`` divides ``h``
        (``h_kv = h`` unshared, ``1 < h_kv < h`` GQA, ``h_kv = 1`` MQA).
        ``h_kv`` defaults to ``h``.
    d_k, d_v, d_o : int
        Key/query, value and output widths; ``d_v`` defaults to
        ``d_k`` and ``d_o`` to ``d`` (the paper's Table 2 uses ``d_o = d``).
    beta : float
        Inverse temperature, ``beta > 0``.
    tie_kv : bool
        Within-head key-value tying ``W^V_g = W^K_g`` (needs ``d_v = d_k``).
    dtype : str
        ``"float64"`` (default) or ``"float32"``; ``beta`` must be small
        enough that ``exp(beta * score)`` and ``exp(beta^2)`` stay finite in it,
        and the float64 Gram matrices, whose entries reach ``e^{beta^2} d_o``,
        too (:attr:`beta_max`).
    """

    n: int
    d: int
    h: int
    d_k: int
    # None means "the default" (h, d_k, d): __post_init__ fills these in, so after
    # construction each is an int, which is what every reader of the field sees.
    h_kv: int = None  # type: ignore[assignment]
    d_v: int = None  # type: ignore[assignment]
    d_o: int = None  # type: ignore[assignment]
    beta: float = 1.0
    tie_kv: bool = False
    dtype: str = "float64"

    if TYPE_CHECKING:
        # What the checker sees of the dataclass's generated __init__: the three widths take
        # None for their default. (Not defined at run time.)
        def __init__(
            self,
            n: int,
            d: int,
            h: int,
            d_k: int,
            h_kv: int | None = None,
            d_v: int | None = None,
            d_o: int | None = None,
            beta: float = 1.0,
            tie_kv: bool = False,
            dtype: str = "float64",
        ) -> None: ...

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        if self.h_kv is None:
            set_("h_kv", self.h)
        if self.d_v is None:
            set_("d_v", self.d_k)
        if self.d_o is None:
            set_("d_o", self.d)
        for name in _INT_FIELDS:
            set_(name, _as_int(name, getattr(self, name)))
        if self.n > self.d:
            raise ConfigError(
                f"n = {self.n} > d = {self.d}: the input X (n x d) cannot have "
                "X X^T / d = I_n; use n <= d (the paper's Table 2 caps n at d)"
            )
        if self.h_kv > self.h or self.h % self.h_kv:
            raise ConfigError(
                f"h = {self.h} is not divisible by h_kv = {self.h_kv}: "
                "each key/value group must serve the same number of query heads"
            )
        if not isinstance(self.tie_kv, (bool, np.bool_)):
            raise ConfigError(f"tie_kv must be True or False, got {self.tie_kv!r}")
        set_("tie_kv", bool(self.tie_kv))
        if self.tie_kv and self.d_v != self.d_k:
            raise ConfigError(f"K=V tying (W^V = W^K) needs d_v == d_k, got d_v = {self.d_v}, d_k = {self.d_k}")
        if self.dtype not in _DTYPES:
            raise ConfigError(f"dtype must be one of {_DTYPES}, got {self.dtype!r}")
        if isinstance(self.beta, bool) or not isinstance(self.beta, numbers.Real):
            raise ConfigError(f"beta must be a real number, got {self.beta!r}")
        beta = float(self.beta)
        if not math.isfinite(beta) or beta <= 0:
            raise ConfigError(f"beta must be positive and finite, got {self.beta!r}")
        set_("beta", beta)
        limit = self.beta_max
        if beta > limit:
            if self.dtype == "float64":
                advice = "lower beta (float64 is the widest dtype gelib has)"
            else:
                wider = dataclasses.replace(self, beta=1.0, dtype="float64").beta_max
                advice = f"lower beta or use dtype='float64' (largest safe beta there: {_floor3(wider)})"
            raise ConfigError(
                f"beta = {beta:g} is too large for {self.dtype}: exp(beta * score), exp(beta^2) "
                f"or the Gram matrix Y Y^T (entries ~ e^(beta^2) d_o) would overflow (largest safe beta here is "
                f"{_floor3(limit)}); {advice}"
            )

    # --- derived quantities -------------------------------------------------
    @property
    def beta_max(self) -> float:
        """Largest ``beta`` whose unnormalised attention weights and spectra stay finite.

        Needs ``beta^2 <= log(max float)`` (the variance ``e^{beta^2} - 1``),
        ``beta s - beta^2/2 <= log(max float)`` at the largest score ``s``
        (:func:`~gelib.config.max_log_score`; the softmax itself is computed
        stably) and ``e^{beta^2} 64 d_o <= max float64``: a row of the output
        has squared norm about ``e^{beta^2} d_o``, the Gram matrix's diagonal
        and a bound on its eigenvalues (the 64 covers the largest of ``n`` rows
        and the widths' ratios), which must stay finite in float64.
        """
        log_max = math.log(np.finfo(self.dtype).max)
        s = max_log_score(self.n, self.h)
        # beta s - beta^2 / 2 is largest at beta = s, where it is s^2 / 2.
        by_scores = math.inf if s * s / 2 <= log_max else s - math.sqrt(s * s - 2 * log_max)
        by_gram = math.sqrt(max(math.log(np.finfo(np.float64).max) - math.log(64 * self.d_o), 0.0))
        return min(math.sqrt(log_max), by_scores, by_gram)

    @property
    def group_size(self) -> int:
        """Query heads per key/value group, ``h / h_kv``."""
        return self.h // self.h_kv

    @property
    def sharing(self) -> str:
        """``"none"``, ``"GQA"`` or ``"MQA"`` (across-head sharing)."""
        if self.h_kv == self.h:
            return "none"
        return "MQA" if self.h_kv == 1 else "GQA"

    @property
    def alpha2(self) -> float:
        """Non-linear variance ``alpha^2 = e^{beta^2} - 1 - beta^2`` of ``f``."""
        return math.expm1(self.beta**2) - self.beta**2

    @property
    def first_moment(self) -> float:
        """Limit of the mean eigenvalue of ``Y Y^T / n``.

        ``m_1 = E[mu_V] d_o / n`` with ``E[mu_V] = e^{beta^2} - 1`` for untied
        layers (:ref:`conv-law-mean`) and ``e^{beta^2} - 1 + beta^2 n / d_k`` with
        K=V tying (the mean of ``beta^2 (n/d_k) W'^2 + alpha^2 W'``).
        """
        mean_v = math.expm1(self.beta**2)
        if self.tie_kv:
            mean_v += self.beta**2 * self.n / self.d_k
        m1 = mean_v * self.d_o / self.n
        return m1 if math.isfinite(m1) else mean_v * (self.d_o / self.n)  # mean_v * d_o alone may overflow

    def replace(self, **changes) -> AttentionConfig:
        """A copy with some fields changed (validated again).

        Fields that were filled from defaults (``h_kv``, ``d_v``, ``d_o``) keep
        their values: ``cfg.replace(d_k=32)`` does not change ``d_v``.
        """
        return dataclasses.replace(self, **changes)

    def at_length(self, n: int) -> AttentionConfig:
        """The layer at context length ``n`` with the same ratios of the dimensions.

        Every width (``d``, ``d_k``, ``d_v``, ``d_o``) is scaled by ``n / self.n``
        and rounded (at least 1; ``d`` at least ``n``); ``h``, ``h_kv``,
        ``beta``, tying and dtype are kept. This is how the chapters sweep
        over ``n`` in the proportional limit of the paper (all widths grow
        with ``n``, ``h`` and ``beta`` fixed).

        >>> AttentionConfig(n=256, d=384, h=4, d_k=32, d_v=48, d_o=384).at_length(128).describe()
        'n=128, d=192, h/h_kv=4/4 (none), d_k=16, d_v=24, d_o=192, beta=1'
        """
        n = _as_int("n", n)
        s = n / self.n

        def width(w: int) -> int:
            return max(1, round(w * s))

        d_o = width(self.d_o)
        return dataclasses.replace(
            self, n=n, d=max(n, d_o, width(self.d)), d_k=width(self.d_k), d_v=width(self.d_v), d_o=d_o
        )

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        tie = ", K=V tied" if self.tie_kv else ""
        return (
            f"n={self.n}, d={self.d}, h/h_kv={self.h}/{self.h_kv} ({self.sharing}), "
            f"d_k={self.d_k}, d_v={self.d_v}, d_o={self.d_o}, beta={self.beta:g}{tie}"
        )
