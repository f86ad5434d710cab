"""The limit law against simulation: the levels of the chain and the first moments.

:func:`level_w1_table` is the W1 distance from the eigenvalues of every level of
the chain of compressions (:func:`gelib.attention_law.level_spectra`) to that
level's law, split into the shift of the mean and the shape part.
:func:`moment_checks` sets the first moments of simulated spectra against the
exact moments of the limit law over a sweep of ``n``: the first moment against
its predicted finite-size bias (:func:`first_moment_bias`, exact), every moment's
error decaying from the smallest to the largest ``n`` (:func:`decay_bound`), and its
fitted rate, each a Student-t test at :data:`~gelib.numerics.checks.CHECK_LEVEL`
(:class:`~gelib.numerics.MeanTest`).

Table 1 says that every step "preserves all fixed spectral moments":
:func:`moment_sweep` measures the first moments of every model of the chain
over a sweep of ``n`` at fixed ratios, the log-ratios of consecutive models
per seed, and the power-law rate at which each step's difference vanishes
(:func:`chain_moments` does the same from spectra already computed);
:func:`moment_steps_markdown` tabulates them and :func:`~gelib.plotting.plot_moment_rates`
draws the rates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from .attention_law import LEVEL_TITLES
from .config import AttentionConfig
from .finite_size import step_predictions
from .freeprob import Law, ToLaw, shape_to_law
from .keys import stream
from .models import STEPS, mha_shift_exact
from .numerics import CHECK_LEVEL, MeanTest, PowerFit, fit_power_law
from .spectra import Summary, model_spectra, summarize

__all__ = [
    "level_sizes",
    "level_w1_table",
    "empirical_moments",
    "MomentSweep",
    "chain_moments",
    "moment_sweep",
    "moment_steps_markdown",
    "first_moment_bias",
    "decay_bound",
    "MomentCheck",
    "moment_checks",
    "moment_checks_markdown",
]


def level_sizes(cfg: AttentionConfig) -> dict[str, int]:
    """The size ``p`` of the matrix at every level of the chain of layer ``cfg``.

    Parameters
    ----------
    cfg
        The layer.

    Returns
    -------
    dict[str, int]
        ``{level: p}`` for the names of :data:`gelib.attention_law.LEVELS`: ``n`` for
        ``K K^T / d_K``, ``T`` and ``Y Y^T / n``; ``d_V`` for one block ``M_r``
        (``"mu_V"``); ``d_O`` for ``Sigma`` (``"mu_VO"``).
    """
    return {"W": cfg.n, "T": cfg.n, "mu_V": cfg.d_v, "mu_VO": cfg.d_o, "out": cfg.n}


def level_w1_table(
    levels: Mapping[str, ArrayLike],
    laws: Mapping[str, Law],
    cfg: AttentionConfig,
    titles: Mapping[str, str] = LEVEL_TITLES,
    atom_tol: float = 1e-6,
) -> tuple[str, dict[str, ToLaw]]:
    """The W1 distance from every level's eigenvalues to its law, relative to the law's mean,
    split into the shift of the mean and the shape part (:func:`gelib.freeprob.shape_to_law`).

    Parameters
    ----------
    levels
        ``{level: eigenvalues}`` (any shape, flattened: one spectrum), e.g. from
        :func:`gelib.attention_law.level_spectra`.
    laws
        ``{level: law}``; the table has one row per law, in this order.
    cfg
        The layer, for the size ``p`` of every level (:func:`level_sizes`).
    titles
        The first column: ``{level: name}``.
    atom_tol
        Eigenvalues within ``atom_tol * sigma`` of an atom count as at the atom
        (:func:`gelib.freeprob.w1_to_law`).

    Returns
    -------
    table : str
        A Markdown table: level, size ``p``, the law's atoms (mass at location),
        ``W1 / mean``, the shift ``s - 1`` of the mean and the shape part.
    distances : dict[str, gelib.freeprob.ToLaw]
        ``{level: shape_to_law(eigenvalues, law)}`` (one seed); its
        :meth:`~gelib.freeprob.ToLaw.sandwiched` is the certainty ``|s - 1| <= W1 / mean <= |s - 1| + shape``.
    """
    sizes = level_sizes(cfg)
    rows = ["| level | size | atoms | W1 / mean | shift of the mean | shape part |", "|---|---|---|---|---|---|"]
    distances = {}
    for name, law in laws.items():
        got = shape_to_law(np.asarray(levels[name], dtype=float).ravel()[None], law, atom_tol)
        atoms = ", ".join(f"{m:.3f} at {x:.3g}" for x, m in law.atoms()) or "none"
        rows.append(
            f"| {titles[name]} | {sizes[name]} | {atoms} | {got.w1[0]:.4f} | {got.shift[0]:+.4f} | {got.shape[0]:.4f} |"
        )
        distances[name] = got
    return "\n".join(rows), distances


def empirical_moments(spectra: ArrayLike, k: int) -> np.ndarray:
    """The first ``k`` empirical moments ``(1/n) sum_i lambda_i^j`` of every seed's spectrum.

    Parameters
    ----------
    spectra
        Eigenvalues, shape ``(seeds, n)``.
    k
        The number of moments.

    Returns
    -------
    numpy.ndarray
        Shape ``(seeds, k)``: column ``j - 1`` holds the ``j``-th moment.
    """
    spectra = np.asarray(spectra, dtype=float)
    return np.stack([np.mean(spectra**j, axis=1) for j in range(1, k + 1)], 1)


@dataclasses.dataclass(frozen=True)
class MomentSweep:
    """The moments of every model of the chain over a sweep of ``n``, and how each step changes them.

    ``moments[model]`` has shape ``(len(ns), seeds, k)``: entry ``[i, s, j - 1]``
    is ``m_j = (1/n) tr (Y Y^T / n)^j`` of seed ``s`` at ``n = ns[i]``.
    ``differences[step]``, same shape, is the log-ratio
    ``log(m_j(earlier) / m_j(later))`` of the step's two models (:data:`steps`),
    per seed: to first order the relative difference ``m_j(earlier) / m_j(later) - 1``,
    but it does not saturate at ``-1`` where a step shrinks a high moment by a large
    factor (small ``d_K``). ``fits[step][j - 1]`` is the power-law fit of
    ``|differences[step][..., j - 1]|`` against ``n``
    (:func:`gelib.numerics.fit_power_law`, pooled over seeds, or per seed with
    ``nested``), ``None`` where a difference is exactly zero (identical models)
    or for a single ``n``. ``cfg``: the layer at the largest ``n`` (the others
    are ``cfg.at_length(n)``), where known.
    """

    ns: tuple[int, ...]
    steps: tuple[tuple[str, str, str], ...]
    moments: dict[str, np.ndarray]
    differences: dict[str, np.ndarray]
    fits: dict[str, tuple[PowerFit | None, ...]]
    cfg: AttentionConfig | None = None

    @property
    def k(self) -> int:
        """The number of moments."""
        return next(iter(self.moments.values())).shape[2]

    def moment(self, model: str, j: int, n: int | None = None) -> Summary:
        """``m_j`` of ``model`` at ``n`` (default: the largest), mean and 95 % interval over seeds."""
        return summarize(self.moments[model][self.ns.index(n or self.ns[-1]), :, j - 1])

    def difference(self, step: str, j: int, n: int | None = None) -> Summary:
        """The step's log-ratio of ``m_j`` at ``n`` (default: the largest), mean and 95 % interval over seeds."""
        return summarize(self.differences[step][self.ns.index(n or self.ns[-1]), :, j - 1])

    def slopes(self) -> dict[str, float]:
        """``{"slope_<step>_<j>": slope, "slope_<step>_<j>_ci": 95 % half-width}`` of every fit, with the
        rate check's tolerance in standard errors ``"slope_<step>_<j>_tol_se"`` and the error of the predicted
        slope it catches half the time ``"slope_<step>_<j>_catch"`` (:meth:`failures`), and the check's level
        ``"slope_level"`` in % (for glueing)."""
        out: dict[str, float] = {"slope_level": 100 * CHECK_LEVEL}
        for step, fits in self.fits.items():
            for j, fit in enumerate(fits, 1):
                if fit is not None:
                    t = MeanTest.of_fit(fit, fit.slope)
                    out |= {f"slope_{step}_{j}": fit.slope, f"slope_{step}_{j}_ci": fit.ci95}
                    out |= {f"slope_{step}_{j}_tol_se": t.quantile, f"slope_{step}_{j}_catch": t.catch}
        return out

    @property
    def exact_slopes(self) -> dict[str, float]:
        """``{step: slope}``: the local power-law slope, over this sweep's ``n``, of the step's exact
        expected first-moment log-ratio ``|log(1 + p(n))|`` (``p`` from :func:`~gelib.finite_size.step_predictions` at
        ``cfg.at_length(n)``; a least-squares line in log-log, as a fit of the data would draw).
        Only the steps with a nonzero exact shift; needs ``cfg`` (an untied layer)."""
        if self.cfg is None:
            raise ValueError("the exact slopes need the layer: build the sweep with cfg")
        preds = [step_predictions(self.cfg.at_length(n)) for n in self.ns]
        out = {}
        for step, _, _ in self.steps:
            y = np.abs(np.log1p([p[step] for p in preds])) if step in preds[0] else np.zeros(len(self.ns))
            if np.all(y > 0) and len(self.ns) > 1:
                out[step] = float(np.polyfit(np.log(self.ns), np.log(y), 1)[0])
        return out

    def targets(self, predicted_slope: float = -1.0) -> dict[tuple[str, int], tuple[float, float]]:
        """``{(step, j): (slope, allowance)}``: what each fit is checked against (needs ``cfg``).

        ``m_1`` of a step with an exact shift: its exact local slope (:attr:`exact_slopes`),
        allowance 0. The higher moments of that step: ``predicted_slope`` (the leading order),
        with allowance ``|exact slope + 1|``, how far the step's exact first moment is from a
        pure ``n^{-1}`` over this sweep, taken as the size of the same finite-``n`` and
        finite-``d_K`` corrections on the higher moments (the scale of the departure, not a
        derived bound for them). Steps without an exact shift (the two equal-covariance steps):
        ``predicted_slope``, allowance 0.
        """
        exact = self.exact_slopes
        out = {}
        for step, _, _ in self.steps:
            for j in range(1, self.k + 1):
                if step not in exact:
                    out[step, j] = (predicted_slope, 0.0)
                elif j == 1:
                    out[step, j] = (exact[step], 0.0)
                else:
                    out[step, j] = (predicted_slope, abs(exact[step] - predicted_slope))
        return out

    def failures(self, predicted_slope: float = -1.0, allowance: float | None = None) -> list[str]:
        """The steps and moments that do not vanish at the predicted rate (empty if all do).

        Two checks for every step and moment ``j``:

        * *rate*: ``|slope - target| <= q se + allowance`` for the fit of ``|log-ratio|``
          (skipped where there is no fit: identical models), with the target and the allowance
          of :meth:`targets`, or ``predicted_slope`` and the given ``allowance`` for every fit:
          the two-sided Student-t test of the slope at :data:`~gelib.numerics.checks.CHECK_LEVEL`
          (:meth:`gelib.numerics.MeanTest.of_fit`, ``q`` its tolerance in standard errors ``se``), widened by
          the stated allowance, which is added, not tested;
        * *decay*: at the largest ``n``, ``|mean|`` at most :func:`decay_bound` with the factor
          ``(n_min / n_max)^{1/2}``: the difference shrinks at least like the ``n^{-1/2}`` that
          Table 1's controls guarantee. A step that moves a moment by a fixed amount fails it once that
          amount passes its :meth:`fixed_moves`.
        """
        targets = self.targets(predicted_slope) if allowance is None else None
        n0, n1 = self.ns[0], self.ns[-1]
        out = []
        for step, _, _ in self.steps:
            for j in range(1, self.k + 1):
                fit = self.fits[step][j - 1]
                target, allow = (predicted_slope, allowance) if targets is None else targets[step, j]
                assert allow is not None  # targets is None only when allowance is given
                if fit is not None and abs(fit.slope - target) > MeanTest.of_fit(fit, target).tolerance + allow:
                    out.append(f"{step} m_{j}: slope {fit.slope:.2f} ± {fit.ci95:.2f}, predicted {target:.2f}")
                lo, hi = self.difference(step, j, n0), self.difference(step, j)
                bound = decay_bound(lo, hi, math.sqrt(n0 / n1))
                if abs(hi.mean) > bound:
                    out.append(f"{step} m_{j}: |{hi.mean:.3g}| at n = {n1} > {bound:.3g} allowed from n = {n0}")
        return out

    def fixed_moves(self) -> dict[tuple[str, int], float]:
        """Per step and moment ``(step, j)``, the smallest fixed move of the moment, the same log-ratio
        ``delta`` at the smallest and the largest ``n``, that the *decay* check of :meth:`failures` flags
        (about half the time, the means at their expected values): ``delta > q se + (delta + q_0 se_0) f``
        with ``f = (n_min / n_max)^{1/2}`` (:func:`decay_bound`), so ``(q se + q_0 se_0 f) / (1 - f)``
        (empty for one size)."""
        n0, n1 = self.ns[0], self.ns[-1]
        if n0 == n1:
            return {}
        f, out = math.sqrt(n0 / n1), {}
        for step, _, _ in self.steps:
            for j in range(1, self.k + 1):
                lo, hi = self.difference(step, j, n0), self.difference(step, j)
                tol, tol0 = MeanTest.of(hi, 0.0).tolerance, MeanTest.of(lo, 0.0).tolerance
                out[step, j] = (tol + tol0 * f) / (1 - f)
        return out


def chain_moments(
    spectra: Mapping[int, Mapping[str, ArrayLike]],
    k: int = 4,
    steps: tuple[tuple[str, str, str], ...] = STEPS,
    nested: bool = False,
    cfg: AttentionConfig | None = None,
) -> MomentSweep:
    """The moments ``m_1 .. m_k`` of every model and their log-ratios across ``steps``, from spectra.

    Parameters
    ----------
    spectra
        ``{n: {model: eigenvalues (seeds, n)}}``, in increasing ``n``, the same
        number of seeds at every ``n``; every model of ``steps`` present.
    k
        The number of moments.
    steps
        ``(name, earlier, later)`` triples (default: Table 1, :data:`~gelib.models.shifts.STEPS`).
    nested
        Whether seed ``s`` of every ``n`` comes from one draw (then the slopes
        are fitted per seed, :func:`gelib.numerics.fit_power_law`); ``False`` for
        independent draws at every ``(n, seed)``.
    cfg
        The layer (at any ``n``; stored at the largest), for the allowance and
        the predicted shifts of the table; optional.

    Returns
    -------
    MomentSweep
        With a fit of ``|log-ratio|`` against ``n`` per step and moment.
    """
    ns = tuple(int(n) for n in spectra)
    if list(ns) != sorted(set(ns)):
        raise ValueError(f"the sizes must increase, got {ns}")
    models = list(dict.fromkeys(m for _, a, b in steps for m in (a, b)))
    moments = {m: np.stack([empirical_moments(spectra[n][m], k) for n in ns]) for m in models}
    differences = {name: np.log(moments[a] / moments[b]) for name, a, b in steps}
    fits = {}
    for name, diff in differences.items():
        size = np.abs(diff)
        fits[name] = tuple(
            fit_power_law(ns, size[:, :, j], nested=nested) if len(ns) > 1 and np.all(size[:, :, j] > 0) else None
            for j in range(k)
        )
    return MomentSweep(ns, tuple(steps), moments, differences, fits, None if cfg is None else cfg.at_length(ns[-1]))


def moment_sweep(
    key,
    cfg: AttentionConfig,
    ns: tuple[int, ...],
    seeds: int,
    k: int = 4,
    steps: tuple[tuple[str, str, str], ...] = STEPS,
    known: Mapping[int, Mapping[str, np.ndarray]] | None = None,
) -> MomentSweep:
    """:func:`chain_moments` of the layer ``cfg`` at every ``n`` of ``ns``, at fixed ratios.

    Parameters
    ----------
    key
        A JAX key (or an integer seed). Size ``n`` uses the stream
        ``gelib.keys.stream(key, n)`` and its seed ``s`` ``stream(key, n, s)``
        (:func:`gelib.spectra.model_spectra`): every ``(n, seed)`` is an
        independent draw, so the fits pool the seeds.
    cfg
        The layer; size ``n`` runs ``cfg.at_length(n)`` (every width scaled by
        ``n / cfg.n``, ``h`` and ``beta`` kept).
    ns
        The sizes, increasing.
    seeds
        Seeds per size.
    k, steps
        As in :func:`chain_moments`.
    known
        ``{n: {model: eigenvalues (seeds, n)}}`` already computed at some sizes
        (for instance the first-moment budget's, :func:`~gelib.finite_size.shift_budget`), used
        instead of new draws; they must come from draws independent of the
        other sizes' and have ``seeds`` rows.
    """
    models = tuple(dict.fromkeys(m for _, a, b in steps for m in (a, b)))
    spectra = {}
    for n in ns:
        given = (known or {}).get(n)
        if given is None:
            given = model_spectra(stream(key, n), cfg.at_length(n), models, seeds, progress=False)
        elif any(np.shape(given[m]) != (seeds, n) for m in models):
            raise ValueError(f"the known spectra at n = {n} must have shape ({seeds}, {n}) for {models}")
        spectra[n] = given
    return chain_moments(spectra, k, steps, cfg=cfg)


def moment_steps_markdown(sweep: MomentSweep, predicted: Mapping[str, float] | None = None) -> str:
    """A Markdown table, one row per step: the log-ratio of every moment at the largest ``n`` (per cent,
    mean ± 95 % over seeds) and the fitted slope of its absolute value against ``n`` (± 95 %).

    ``predicted``: ``{step: relative shift of m_1}`` (a fraction), shown in
    brackets as ``log(1 + shift)``; default the exact expected shifts of
    :func:`~gelib.finite_size.step_predictions` at the largest ``n`` where the sweep knows its layer.
    """
    k, n = sweep.k, sweep.ns[-1]
    if predicted is None and sweep.cfg is not None:
        predicted = {step: p for step, p in step_predictions(sweep.cfg).items() if step != "total"}
    head = [f"$m_{j}$ at $n$ = {n} (%)" for j in range(1, k + 1)] + [f"slope $m_{j}$" for j in range(1, k + 1)]
    lines = ["| step | models | " + " | ".join(head) + " |", "|---|---|" + "---|" * (2 * k)]
    for name, a, b in sweep.steps:
        cells = []
        for j in range(1, k + 1):
            d = sweep.difference(name, j)
            cell = f"{100 * d.mean:+.2f} ± {100 * d.ci95:.2f}"
            if j == 1 and predicted is not None and name in predicted:
                cell += f" ({100 * math.log1p(predicted[name]):+.2f})"
            cells.append(cell)
        for fit in sweep.fits[name]:
            cells.append("—" if fit is None else f"{fit.slope:+.2f} ± {fit.ci95:.2f}")
        lines.append(f"| {name.replace('_', ' ')} | {a} / {b} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def first_moment_bias(model: str, cfg: AttentionConfig) -> float | None:
    """The exact relative bias ``E m_1 / m_1(law) - 1`` of ``model``'s first moment at the
    layer ``cfg`` (untied); ``None`` where there is none.

    * ``"yg"``: 0, exactly, at every size. Given ``K, V, W^O`` the rows of ``Y^G``
      are ``N(0, Sigma)``, so ``E m_1 = E tr(Y^G Y^{G T}) / n^2 = E tr(Sigma) / n``. Averaging
      over ``W^O`` (i.i.d. ``N(0, 1/(h d_V))``) gives ``E tr Sigma = d_O / (h d_V) sum_r E tr M_r``,
      over ``V`` (i.i.d. ``N(0, 1)``, independent of ``K``) ``E tr M_r = (d_V / n) E tr T``,
      and ``E tr T = n (beta^2 + alpha^2) = n (e^{beta^2} - 1)``: ``E m_1 = (e^{beta^2} - 1) d_O / n``,
      the law's first moment.
    * ``"mha"``: :func:`gelib.models.mha_shift_exact`, the exact expectation at finite ``n``
      and ``d_K`` (:func:`gelib.spectra.mean_shift` is its leading order).
    """
    if cfg.tie_kv:
        raise ValueError("the first-moment predictions hold for untied layers (tie_kv=False)")
    if model == "yg":
        return 0.0
    if model == "mha":
        return mha_shift_exact(cfg.n, cfg.d_k, cfg.beta)
    return None


def decay_bound(lo: Summary, hi: Summary, factor: float, level: float = CHECK_LEVEL) -> float:
    """The largest ``|mean|`` at the largest size that the decay checks allow, ``lo`` and ``hi`` the
    values over seeds at the smallest and the largest size and ``factor`` the predicted shrinking
    between them (``(n_0 / n)^p``).

    ``q se + (|mean_0| + q_0 se_0) factor``, with ``se``, ``se_0`` the standard errors and ``q``, ``q_0``
    the two-sided Student-t tolerances at ``level`` (:attr:`gelib.numerics.MeanTest.quantile`). Its level:
    if the true means satisfy ``|mu| <= |mu_0| factor`` (the claim), the check fails only if
    ``|mean - mu| > q se`` or ``|mean_0 - mu_0| > q_0 se_0``, so with probability at most ``2 level``
    (a union bound; conservative, since only one side of each counts where ``mu`` and ``mu_0`` are far
    from 0). Its power is the bound itself: a true error at the largest size this large, with the
    smallest size's term fixed, is flagged about half the time.
    """
    tol = MeanTest.of(hi, 0.0, level).tolerance
    return tol + (abs(float(lo.mean)) + MeanTest.of(lo, 0.0, level).tolerance) * factor


@dataclasses.dataclass(frozen=True)
class MomentCheck:
    """The ``k``-th moment of one model's spectra against the limit law over a sweep of ``n``
    (:func:`moment_checks`).

    ``errors``: the relative errors ``m_k^emp / m_k - 1``, shape ``(len(ns), seeds)``;
    ``bias``: the exact mean error at every size (:func:`first_moment_bias`), shape
    ``(len(ns),)``, ``None`` where there is no prediction;
    ``rate``: the exponent ``p`` of ``|error| = O(n^-p)``; ``exact``: whether ``-p`` is the
    predicted slope (else an upper bound on it); ``fit``: the power law of ``|errors|``
    against ``n``, pooled over seeds (independent draws at every size), ``None`` for one size.
    """

    model: str
    k: int
    ns: tuple[int, ...]
    errors: np.ndarray
    bias: np.ndarray | None
    rate: float
    exact: bool
    fit: PowerFit | None

    def at(self, n: int | None = None) -> Summary:
        """The relative error at ``n`` (default: the largest): mean and 95 % half-width over seeds."""
        return summarize(self.errors[self.ns.index(n or self.ns[-1])])

    def bias_test(self, n: int | None = None) -> MeanTest:
        """The relative error at ``n`` (default: the largest) against the exact bias, a two-sided Student-t
        test at :data:`~gelib.numerics.checks.CHECK_LEVEL` (:class:`~gelib.numerics.MeanTest`); needs a bias."""
        if self.bias is None:
            raise ValueError(f"{self.model} m_{self.k}: no bias is predicted")
        n = n or self.ns[-1]
        return MeanTest.of(self.at(n), float(self.bias[self.ns.index(n)]))

    def percent_at(self, n: int | None = None) -> dict[str, float]:
        """The relative error at ``n`` (default: the largest) in per cent: ``rel`` (mean over seeds),
        ``ci`` (its 95 % half-width) and, where the bias is predicted, ``pred`` (the exact bias), and
        the bias check's tolerance in standard errors ``tol_se`` and the error it catches half the time
        ``catch`` (in percentage points, :meth:`bias_test`); where there is a fit, the rate check's
        ``rate_tol_se`` and ``rate_catch`` (in units of the slope, :meth:`rate_test`); and ``allowed``, the
        decay check's bound at the largest ``n`` (:meth:`decay_bound`, in %, whatever ``n``)."""
        n = n or self.ns[-1]
        at = self.at(n)
        out = {"rel": 100 * at.mean, "ci": 100 * at.ci95}
        if self.bias is not None:
            test = self.bias_test(n)
            out |= {"pred": 100 * test.predicted, "tol_se": test.quantile, "catch": 100 * test.catch}
        if self.fit is not None:
            rate = self.rate_test()
            out |= {"rate_tol_se": rate.quantile, "rate_catch": rate.catch}
        return out | {"allowed": 100 * self.decay_bound()}

    @property
    def decided(self) -> bool:
        """Whether the sweep shows that the error vanishes (the slope's 95 % interval lies below 0)."""
        return self.fit is not None and self.fit.slope + self.fit.ci95 < 0

    def decay_bound(self) -> float:
        """The largest ``|mean|`` at the largest ``n`` that the *decay* check of :meth:`failures` allows:
        :func:`decay_bound` with the factor ``(n_0 / n)^p``, the check's power (an error at the largest ``n``
        this large is flagged about half the time)."""
        return decay_bound(self.at(self.ns[0]), self.at(), (self.ns[0] / self.ns[-1]) ** self.rate)

    def rate_test(self) -> MeanTest:
        """The *rate* check of :meth:`failures`: the fitted slope against ``-p``, a Student-t test at
        :data:`~gelib.numerics.checks.CHECK_LEVEL` (:meth:`gelib.numerics.MeanTest.of_fit`), two-sided if
        ``exact``, else one-sided (``-p`` an upper bound: only a slope above it fails); needs a fit."""
        if self.fit is None:
            raise ValueError(f"{self.model} m_{self.k}: no fit (one size)")
        return MeanTest.of_fit(self.fit, -self.rate, one_sided=not self.exact)

    def failures(self) -> list[str]:
        """The checks that fail (empty if none), with ``ci`` a 95 % half-width over seeds:

        * *bias* (where predicted), at every size: :meth:`bias_test` passes (a two-sided Student-t
          test at :data:`~gelib.numerics.checks.CHECK_LEVEL`);
        * *decay*: ``|mean| <=`` :meth:`decay_bound` at the largest ``n``, from the smallest ``n_0``: the
          error shrinks at least at the predicted rate;
        * *rate* (two sizes or more): :meth:`rate_test` passes, ``|slope + p| <= q se`` if ``exact``, else
          ``slope + p <= q' se`` (``q``, ``q'`` the two- and one-sided tolerances in standard errors).
        """
        out, name = [], f"{self.model} m_{self.k}"
        for i, n in enumerate(self.ns):
            s = self.at(n)
            if self.bias is not None and not self.bias_test(n).passes:
                out.append(f"{name} at n = {n}: {s.mean:+.4f} ± {s.ci95:.4f}, predicted {self.bias[i]:+.4f}")
        hi, bound = self.at(), self.decay_bound()
        if abs(hi.mean) > bound:
            out.append(f"{name}: |{hi.mean:.4f}| at n = {self.ns[-1]} > {bound:.4f} allowed from n = {self.ns[0]}")
        if self.fit is not None:
            if not self.rate_test().passes:
                out.append(f"{name}: slope {self.fit.slope:.2f} ± {self.fit.ci95:.2f}, predicted -{self.rate:g}")
        return out


def moment_checks(
    spectra: Mapping[int, Mapping[str, ArrayLike]],
    law_moments: ArrayLike,
    cfg: AttentionConfig,
    rates: Mapping[str, tuple[float, bool]],
) -> list[MomentCheck]:
    """The first moments of simulated spectra against the exact moments of their limit law over ``n``.

    Parameters
    ----------
    spectra
        ``{n: {model: eigenvalues (seeds, n)}}`` in increasing ``n``, every ``(n, seed)``
        an independent draw of the layer ``cfg.at_length(n)`` (all with the same law).
    law_moments
        The law's moments ``m_1 .. m_K``, shape ``(K,)`` (:meth:`gelib.freeprob.Law.moments`).
    cfg
        The layer (at any ``n``), for the predicted bias of ``m_1`` (:func:`first_moment_bias`).
    rates
        ``{model: (p, exact)}``: ``|error| = O(n^-p)``, with ``-p`` the predicted slope
        (``exact``) or an upper bound on it; one check per model in this order.

    Returns
    -------
    list[MomentCheck]
        Model by model, ``m_1 .. m_K``.
    """
    ns = tuple(int(n) for n in spectra)
    if list(ns) != sorted(set(ns)):
        raise ValueError(f"the sizes must increase, got {ns}")
    law_m = np.asarray(law_moments, dtype=float)
    out = []
    for model, (rate, exact) in rates.items():
        errors = np.stack([empirical_moments(spectra[n][model], law_m.size) / law_m - 1 for n in ns])
        for k in range(1, law_m.size + 1):
            pred = [first_moment_bias(model, cfg.at_length(n)) for n in ns] if k == 1 else [None]
            bias = None if pred[0] is None else np.array(pred, dtype=float)
            size = np.abs(errors[:, :, k - 1])
            fit = fit_power_law(ns, size) if len(ns) > 1 and np.all(size > 0) else None
            out.append(MomentCheck(model, k, ns, errors[:, :, k - 1], bias, rate, exact, fit))
    return out


def moment_checks_markdown(checks: list[MomentCheck], labels: Mapping[str, str] | None = None) -> str:
    """The checks as a Markdown table, one row per model and moment: the relative error at the
    smallest and the largest ``n`` (per cent, mean ± 95 % over seeds), the largest error at the
    largest ``n`` that the decay check allows (its power, :meth:`MomentCheck.decay_bound`), the
    predicted bias of ``m_1`` (exact), the fitted slope of ``|error|`` against ``n`` ± 95 % and the
    predicted one."""
    labels = {"yg": "$Y^G$", "mha": "MHA"} if labels is None else labels
    n0, n1 = checks[0].ns[0], checks[0].ns[-1]
    lines = [
        f"| model | moment | error at $n$ = {n0} (%) | error at $n$ = {n1} (%) | allowed at $n$ = {n1} (%) "
        "| predicted (%) | slope | predicted slope |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        lo, hi = c.at(n0), c.at()
        pred = "—" if c.bias is None else f"{100 * c.bias[-1]:+.2f}"
        slope = "—" if c.fit is None else f"{c.fit.slope:+.2f} ± {c.fit.ci95:.2f}"
        lines.append(
            f"| {labels.get(c.model, c.model)} | $m_{c.k}$ | {100 * lo.mean:+.2f} ± {100 * lo.ci95:.2f} "
            f"| {100 * hi.mean:+.2f} ± {100 * hi.ci95:.2f} | {100 * c.decay_bound():.2f} | {pred} | {slope} "
            f"| {'' if c.exact else '≤ '}-{c.rate:g} |"
        )
    return "\n".join(lines)
