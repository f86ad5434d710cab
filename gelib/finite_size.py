"""The finite-size table (the paper's Table 2 / D.2): rows, shrinking and formatting.

Each row of the table compares the spectra of the original softmax layer
(MHA) and of its Gaussian equivalent ``Y^G`` at the attention dimensions of
one public model (a :class:`~gelib.presets.Preset`), over seeds, with the
same draws for both models (:func:`gelib.spectra.compare`). A row records

* the relative W1 and the KS distance between the two spectra (per cent for
  W1; mean and 95 % Student-t half-width over seeds);
* the first-moment shift ``mean(mu_MHA) / mean(mu_GE) - 1`` per seed and its
  leading-order prediction ``b(n, d_K)`` (:func:`gelib.spectra.mean_shift`);
* where the row runs at the model's exact dimensions and the paper has a
  value, the difference from the paper in units of the combined standard error,
  ``z = (ours - paper) / sqrt(se_ours^2 + se_paper^2)``, for the relative W1
  and for the KS distance (Table D.2's second column), and its check, a
  two-sided Student-t test at :data:`~gelib.numerics.checks.CHECK_LEVEL`
  (:func:`agreement`).

Big rows get fewer seeds (:func:`row_seeds`, by the flops of one seed,
:func:`gelib.spectra.seed_flops`), so that the exact table fits a CPU.

Rows too large for a CPU are *shrunk* along the proportional regime
(:func:`shrink`): ``n``, ``d`` and ``d_K = d_V`` divided by the same power of
two, ``h`` and ``h_KV`` kept, which keeps every ratio of the dimensions and
so the limit law.

The shift budget (:func:`shift_budget`) splits the mean shift of a row into
the exact shifts of the steps of Table 1 (:mod:`gelib.models.shifts`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping

import numpy as np
import scipy.stats
from numpy.typing import ArrayLike

from .config import AttentionConfig
from .models import STEPS, centering_shift_exact, denominator_shift_exact, mha_shift_exact, sigma_mean_ratio
from .numerics import CHECK_LEVEL, MeanTest
from .presets import PRESETS, Preset, get_preset
from .spectra import Comparison, Summary, mean_shift, seed_flops, summarize

__all__ = [
    "MIN_TESTED_SEEDS",
    "PAPER_Q95",
    "agreement",
    "shrink",
    "row_seeds",
    "mean_shifts",
    "TableRow",
    "table_row",
    "markdown_table",
    "table_notes",
    "full_size_floor",
    "plan_text",
    "row_numbers",
    "paper_numbers",
    "shift_predictions_text",
    "HEADER",
    "SHORT",
    "BudgetRow",
    "step_predictions",
    "step_shift",
    "shift_budget",
    "budget_markdown",
]

HEADER: tuple[str, ...] = (
    "model",
    "sharing",
    "n",
    "d",
    "h/h_KV",
    "d_K",
    "dims",
    "seeds",
    "rel. W1 (%)",
    "KS",
    "mean shift (%) (pred.)",
    "paper rel. W1 (%)",
    "z (W1)",
    "paper KS",
    "z (KS)",
)
"""The columns of :func:`markdown_table`."""


def shrink(preset: Preset, n_max: int | None, dk_min: int) -> tuple[AttentionConfig, int]:
    """The preset's layer with ``n``, ``d`` and ``d_K`` divided by a power of two ``s``.

    ``s`` is the smallest power of two with ``n / s <= n_max``, except that it
    stops before ``d_K / s`` falls below ``dk_min`` and where ``n``, ``d`` or
    ``d_K`` is not divisible by ``2 s``; ``n_max = None`` keeps the exact
    dimensions. ``h``, ``h_KV``, ``beta = 1``, ``d_V = d_K`` and ``d_O = d`` are
    the preset's, so every ratio (``d_K/n``, ``d_V/n``, ``h d_V/d_O``,
    ``d_O/n``), hence the limit law, is unchanged. Returns ``(layer, s)``.
    """
    s = 1
    if n_max is not None:
        while (
            preset.n / s > n_max
            and preset.d_k // (2 * s) >= dk_min
            and all(x % (2 * s) == 0 for x in (preset.n, preset.d, preset.d_k))
        ):
            s *= 2
    return preset.config(n=preset.n // s, d=preset.d // s, d_k=preset.d_k // s), s


def row_seeds(cfg: AttentionConfig, seeds: int, fewest: int, gflop: float) -> int:
    """Seeds for a row: ``seeds`` where one seed of the layer costs at most
    ``gflop`` GFLOP (:func:`gelib.spectra.seed_flops`, models, Gram matrices
    and eigensolves), else ``fewest`` (at least 2, for an interval).

    The choice depends on the layer alone, not on the machine, so that a
    chapter's numbers are the same wherever it runs.
    """
    if fewest < 2 or seeds < fewest:
        raise ValueError(f"need 2 <= fewest <= seeds, got fewest={fewest}, seeds={seeds}")
    return seeds if seed_flops(cfg)["total"] <= gflop * 1e9 else fewest


#: The quantile by which the paper's 95 % half-widths are read as standard errors, the normal one, since the
#: paper's seed count is not known (only its abstract, tables and captions are). A Student-t interval over few
#: seeds has a larger quantile, so a smaller standard error: the normal quantile gives the paper's largest.
PAPER_Q95 = float(scipy.stats.norm.ppf(0.975))


def agreement(ours: Summary, paper: tuple[float, float], level: float = CHECK_LEVEL) -> MeanTest:
    """A row's distance against the paper's ``(mean, 95 % half-width)``, as a stated test.

    The statistic is ``(ours - paper) / sqrt(se_ours^2 + se_paper^2)``: ``se_ours`` our 95 % half-width over
    its Student-t quantile (``ours.count - 1`` degrees of freedom), ``se_paper`` the paper's over
    :data:`PAPER_Q95`. It is tested two-sided at ``level`` with the Student-t quantile of our seeds less
    one degrees of freedom, the conservative choice (Welch-Satterthwaite would need the paper's seed
    count): :attr:`~gelib.numerics.MeanTest.quantile` is the tolerance in combined standard errors, and
    :attr:`~gelib.numerics.MeanTest.catch` the distance from the paper's value caught half the time
    (the noncentral t on the same degrees of freedom, the measured standard errors standing for the true;
    where the paper's standard error dominates, the statistic is nearer a normal one and that distance is
    caught a little less often, 0.48 of the time at 20 seeds).
    """
    se = math.hypot(ours.ci95 / float(scipy.stats.t.ppf(0.975, ours.count - 1)), paper[1] / PAPER_Q95)
    return MeanTest(float(ours.mean), se, int(ours.count), float(paper[0]), level)


def mean_shifts(res: Comparison) -> np.ndarray:
    """Per seed, ``mean(spectrum_a) / mean(spectrum_b) - 1`` for the two models
    ``(a, b) = res.models`` of a comparison (MHA against ``Y^G``): shape ``(seeds,)``.

    A lower bound on the relative W1 of the same seed (``W1 >= |difference of
    the means|``, Kantorovich-Rubinstein with ``x -> x``).
    """
    a, b = res.models
    return res.spectra[a].mean(axis=1) / res.spectra[b].mean(axis=1) - 1


@dataclasses.dataclass(frozen=True)
class TableRow:
    """One row of the finite-size table (see the module docstring).

    ``rel`` (relative W1, %), ``ks`` and ``shift`` (mean shift, %) are
    summaries over seeds; ``shift_seeds`` the per-seed shift (a fraction, shape
    ``(seeds,)``); ``shift_pred`` the leading-order shift ``100 b(n, d_K)`` (%) and
    ``shift_exact`` the exact expected shift (%, :func:`gelib.models.mha_shift_exact`;
    ``None`` for a tied layer);
    ``paper`` the paper's ``(mean, ci95)`` in per cent or ``None``; ``z`` the
    statistic of the agreement with it (:func:`agreement`), ``None`` unless the row runs at exact
    dimensions (``s == 1``) with at least :data:`MIN_TESTED_SEEDS` seeds and the paper has a value;
    ``paper_ks`` and ``z_ks`` the same for the KS distance.
    """

    name: str
    title: str
    cfg: AttentionConfig
    s: int
    res: Comparison
    rel: Summary
    ks: Summary
    shift: Summary
    shift_seeds: np.ndarray
    shift_pred: float
    paper: tuple[float, float] | None
    z: float | None
    paper_ks: tuple[float, float] | None = None
    z_ks: float | None = None
    shift_exact: float | None = None

    def agreement(self, ks: bool = False) -> MeanTest | None:
        """The check of the relative W1 (of the KS distance, ``ks``) against the paper's (:func:`agreement`);
        ``None`` where the row is not tested (``z`` is ``None``)."""
        ours, paper, z = (self.ks, self.paper_ks, self.z_ks) if ks else (self.rel, self.paper, self.z)
        return None if z is None or paper is None else agreement(ours, paper)

    @property
    def agrees(self) -> bool:
        """Every column tested against the paper passes its check (:meth:`agreement`); true for a row not tested."""
        return all(t is None or t.passes for t in (self.agreement(), self.agreement(ks=True)))

    def detects(self, ks: bool = False) -> float | None:
        """The smallest ``|ours - paper|`` that the agreement check catches half the time: its power.

        :attr:`~gelib.numerics.MeanTest.catch` of :meth:`agreement`, in the column's units (per cent
        for W1); ``None`` where the row is not tested (``z`` is ``None``).
        """
        t = self.agreement(ks)
        return None if t is None else t.catch

    @property
    def shift_test(self) -> MeanTest:
        """:attr:`shift` against :attr:`shift_exact` (nan where not known), a two-sided Student-t test at
        :data:`~gelib.numerics.checks.CHECK_LEVEL` (:class:`~gelib.numerics.MeanTest`)."""
        return MeanTest.of(self.shift, math.nan if self.shift_exact is None else self.shift_exact)

    @property
    def reference_test(self) -> MeanTest:
        """:attr:`reference_mean` against 1 (``Y^G``'s mean eigenvalue is unbiased), the same test."""
        return MeanTest.of(self.reference_mean, 1.0)

    @property
    def reference_mean(self) -> Summary:
        """The reference model's (``Y^G``'s) mean eigenvalue per seed over the limit ``m_1``
        (``cfg.first_moment``), summarised over seeds: unbiased, its mean is 1 to within its interval."""
        return summarize(self.res.spectra[self.res.models[1]].mean(axis=1) / self.cfg.first_moment)


#: The fewest seeds for which a row at exact dimensions is compared with the paper. With fewer,
#: the Student-t quantile (12.7 at two seeds) makes the interval so wide that the check passes
#: whatever the row measures; such a row is shown, marked "not tested".
MIN_TESTED_SEEDS = 4


def table_row(name: str, cfg: AttentionConfig, s: int, res: Comparison) -> TableRow:
    """The row of preset ``name`` from its comparison ``res`` at layer ``cfg``
    (shrunk by ``s``, see :func:`shrink`)."""
    p = PRESETS[name]
    shift = mean_shifts(res)
    rel, ks = summarize(100 * res.rel_w1), summarize(res.ks)
    tested = s == 1 and rel.count >= MIN_TESTED_SEEDS
    z = agreement(rel, p.paper_rel_w1).z if tested and p.paper_rel_w1 is not None else None
    z_ks = agreement(ks, p.paper_ks).z if tested and p.paper_ks is not None else None
    return TableRow(
        name=name,
        title=p.title,
        cfg=cfg,
        s=s,
        res=res,
        rel=rel,
        ks=ks,
        shift=summarize(100 * shift),
        shift_seeds=shift,
        shift_pred=100 * mean_shift(cfg.n, cfg.d_k, cfg.beta),
        paper=p.paper_rel_w1,
        z=z,
        paper_ks=p.paper_ks,
        z_ks=z_ks,
        shift_exact=None if cfg.tie_kv else 100 * mha_shift_exact(cfg.n, cfg.d_k, cfg.beta),
    )


def _cells(r: TableRow) -> list:
    c = r.cfg
    paper = f"{r.paper[0]:.2f} ± {r.paper[1]:.2f}" if r.paper else "—"
    paper_ks = f"{r.paper_ks[0]:.4f} ± {r.paper_ks[1]:.4f}" if r.paper_ks else "—"

    def z_cell(z, published):
        if z is not None:
            return f"{z:+.2f}"
        if not published:
            return "—"
        return "n/a (shrunk)" if r.s != 1 else f"not tested ({r.rel.count} seeds)"

    return [
        r.title,
        c.sharing,
        c.n,
        c.d,
        f"{c.h}/{c.h_kv}",
        c.d_k,
        "exact" if r.s == 1 else f"÷{r.s}",
        r.rel.count,
        f"{r.rel.mean:.2f} ± {r.rel.ci95:.2f}",
        f"{r.ks.mean:.4f} ± {r.ks.ci95:.4f}",
        f"{r.shift.mean:+.2f} ({r.shift_pred if r.shift_exact is None else r.shift_exact:+.2f})",
        paper,
        z_cell(r.z, r.paper),
        paper_ks,
        z_cell(r.z_ks, r.paper_ks),
    ]


#: The columns of the table's short form (:func:`markdown_table` with ``columns=SHORT``): what a reader
#: compares with the paper, narrow enough for a page without scrolling sideways.
SHORT: tuple[str, ...] = ("model", "n", "dims", "seeds", "rel. W1 (%)", "paper rel. W1 (%)", "z (W1)", "KS", "z (KS)")


def markdown_table(rows: list[TableRow], columns: tuple[str, ...] = HEADER, notes: bool = True) -> str:
    """The rows as a Markdown table with the columns :data:`HEADER`: means ± 95 %
    half-widths over seeds, the mean shift with its exact prediction in brackets
    (the leading order for a tied layer), the
    paper's values and ``z`` for W1 and KS (``n/a (shrunk)`` for a shrunk row of
    the paper, ``not tested (k seeds)`` for a row with fewer than :data:`MIN_TESTED_SEEDS` seeds).

    ``columns``: the names of :data:`HEADER` to keep, in that order (:data:`SHORT`: the short form);
    an unknown name is a :class:`ValueError`. ``notes``: the table is followed by :func:`table_notes`."""
    unknown = [c for c in columns if c not in HEADER]
    if unknown:
        raise ValueError(f"unknown columns {unknown}; the table's columns are {list(HEADER)}")
    keep = [HEADER.index(c) for c in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(cells[i]) for i in keep) + " |" for cells in map(_cells, rows)]
    return "\n".join(lines) + ("\n\n" + table_notes(rows) if notes else "")


def full_size_floor(name: str, beta: float = 1.0) -> float:
    """The floor on the relative W1 (%) at the preset's full dimensions: ``100 |E s - 1|``, the absolute
    value of the exact expected shift of the mean eigenvalue (:func:`gelib.models.mha_shift_exact`),
    which the relative W1 averaged over seeds cannot be below (W1 is at least the difference of the means).

    >>> round(full_size_floor("llama-3-8b"), 2)
    0.93
    """
    p = get_preset(name)
    return 100 * abs(mha_shift_exact(p.n, p.d_k, beta))


def table_notes(rows: list[TableRow]) -> str:
    """What a newcomer needs to quote a row right, in Markdown, one paragraph per point.

    Every row is the paper's model with random weights at the model's dimensions, not the trained
    checkpoint; a shrunk row (``÷ s``) is a smaller layer with the model's ratios, named with its
    dimensions beside the model's own and the floor at the model's full size
    (:func:`full_size_floor`); rows whose run dimensions coincide (e.g. Llama-3-8B and Mistral-7B)
    share one computation and so one set of numbers, said so by name.
    """
    notes = [
        "Every row is the paper's model at the model's attention dimensions with random weights "
        "(the model at initialisation), not the trained checkpoint."
    ]
    for r in rows:
        if r.s != 1:
            p = PRESETS[r.name]
            notes.append(
                f"{r.title} (÷{r.s}) is not the model's own layer (n = {p.n}, d = {p.d}, d_K = {p.d_k}) but the "
                f"layer with n, d and d_K divided by {r.s} (n = {r.cfg.n}, d = {r.cfg.d}, d_K = {r.cfg.d_k}, "
                f"heads {r.cfg.h}/{r.cfg.h_kv}): the same ratios, hence the same limit law, at a smaller n, "
                f"where the distance is larger; quote {r.rel.mean:.2f} ± {r.rel.ci95:.2f} % as that layer's. "
                f"At the full size the relative W1 is at least {full_size_floor(r.name, r.cfg.beta):.2f} % "
                "(the floor of *Your model*)."
            )
    groups: dict[AttentionConfig, list[str]] = {}
    for r in rows:
        groups.setdefault(r.cfg, []).append(r.title)
    for cfg, titles in groups.items():
        if len(titles) > 1:
            notes.append(
                f"{' and '.join(titles)} have the same numbers because, with random weights, they are the same "
                f"layer: the same attention dimensions ({cfg.describe()}), computed once."
            )
    return "\n\n".join(notes)


def plan_text(plan: Mapping[str, tuple[AttentionConfig, int]], seeds: Mapping, seconds: Mapping) -> str:
    """One line per row of ``plan`` (name to ``(layer, s)``, :func:`shrink`): exact or shrunk by ``s``,
    its seeds (``seeds[layer]``) and, where ``seconds[layer]`` is at least 5, the time it should take."""
    lines = []
    for name, (cfg, s) in plan.items():
        t = f"~{seconds[cfg]:4.0f} s" if seconds[cfg] >= 5 else ""
        lines.append(
            f"{name:<18} {'exact' if s == 1 else f'shrunk by {s}':<13} {seeds[cfg]:>2} seeds {t:>7}  {cfg.describe()}"
        )
    return "\n".join(lines)


def row_numbers(row: TableRow | None) -> dict[str, float]:
    """A row's numbers for the prose, as floats: ``n``, ``s`` (shrunk by, 1 for exact), ``floor``
    (:func:`full_size_floor`, the model's full size), ``seeds``, ``rel`` and ``rel_ci`` (relative W1, %),
    ``ks`` and ``ks_ci``, ``z`` and ``z_ks``, ``detects`` and ``detects_ks``
    (:meth:`~gelib.finite_size.TableRow.detects`), and ``tol_se`` and ``level`` (in %): the tolerance of
    the agreement check in combined standard errors, and its level (:meth:`~gelib.finite_size.TableRow.agreement`).

    ``nan`` for what the row lacks (``z`` of a shrunk row) and for every number when ``row`` is ``None``
    (a table run without that preset).
    """
    if row is None:
        return dict.fromkeys(
            ("n", "seeds", "rel", "rel_ci", "ks", "ks_ci", "z", "z_ks", "detects", "detects_ks", "s", "floor")
            + ("tol_se", "level"),
            math.nan,
        )
    test = row.agreement()
    values = dict(
        n=row.cfg.n,
        s=row.s,
        floor=full_size_floor(row.name, row.cfg.beta),
        seeds=row.rel.count,
        rel=row.rel.mean,
        rel_ci=row.rel.ci95,
        ks=row.ks.mean,
        ks_ci=row.ks.ci95,
        z=row.z,
        z_ks=row.z_ks,
        detects=row.detects(),
        detects_ks=row.detects(ks=True),
        tol_se=None if test is None else test.quantile,
        level=None if test is None else 100 * test.level,
    )
    return {name: math.nan if value is None else float(value) for name, value in values.items()}


def paper_numbers(name: str) -> dict[str, float]:
    """The paper's Table D.2 row of the preset ``name``, as floats: ``rel`` and ``rel_ci`` (relative W1, %),
    ``ks`` and ``ks_ci``, its ``n``, and ``q`` (:data:`PAPER_Q95`, by which its half-widths are read as
    standard errors); ``nan`` for a column the paper does not have."""
    p = get_preset(name)
    rel, ks = p.paper_rel_w1 or (math.nan, math.nan), p.paper_ks or (math.nan, math.nan)
    numbers = dict(rel=rel[0], rel_ci=rel[1], ks=ks[0], ks_ci=ks[1], n=p.n, q=PAPER_Q95)
    return {k: float(v) for k, v in numbers.items()}


def shift_predictions_text(names: Iterable[str], beta: float = 1.0) -> str:
    """A plain-text table, one line per preset of ``names``: its ``n`` and ``d_K``, the leading-order
    first-moment shift ``100 b(n, d_K)`` (%, :func:`gelib.spectra.mean_shift`) and the paper's relative
    W1 (%, mean ± 95 %; ``nan`` where the paper has none), under a header line."""
    lines = [f"{'model':<18}{'n':>6}{'d_K':>5}{'b(n, d_K) (%)':>15}{'paper rel. W1 (%)':>19}"]
    for name in names:
        p = PRESETS[name]
        b, (rel, ci) = 100 * mean_shift(p.n, p.d_k, beta), p.paper_rel_w1 or (math.nan, math.nan)
        lines.append(f"{p.title:<18}{p.n:>6}{p.d_k:>5}{b:>+15.2f}{rel:>13.2f} ± {ci:.2f}")
    return "\n".join(lines)


# --- the first-moment budget across the chain ---


@dataclasses.dataclass(frozen=True)
class BudgetRow:
    """One step of the first-moment budget (:func:`shift_budget`): the measured relative
    shift of the mean eigenvalue from model ``later`` to model ``earlier`` (per cent,
    summarised over seeds) and its exact expected value (per cent, :func:`step_predictions`)."""

    step: str
    earlier: str
    later: str
    measured: Summary
    predicted: float

    @property
    def test(self) -> MeanTest:
        """The measured shift against the prediction, a two-sided Student-t test at
        :data:`~gelib.numerics.checks.CHECK_LEVEL` (:class:`~gelib.numerics.MeanTest`)."""
        return MeanTest.of(self.measured, self.predicted)

    @property
    def agrees(self) -> bool:
        """:attr:`test` passes: the prediction is exact, only the seeds' spread is allowed."""
        return self.test.passes

    def __str__(self) -> str:
        return (
            f"{self.step}: measured {self.measured.mean:+.2f} ± {self.measured.ci95:.2f} %, "
            f"predicted {self.predicted:+.2f} %"
        )


def step_predictions(cfg: AttentionConfig) -> dict[str, float]:
    """Every step's predicted relative shift of the mean eigenvalue, and the total's.

    ``{step: predicted}`` for the steps of :data:`~gelib.models.shifts.STEPS` and
    ``"total"``, as fractions, for an untied layer. Every prediction is the exact expected
    ratio of the two models' mean eigenvalues at the layer's ``n`` and ``d_K`` (the
    leading orders, :func:`gelib.models.step_shifts`, are the guide to read them):
    the denominator step :func:`gelib.models.denominator_shift_exact`, centering
    :func:`gelib.models.centering_shift_exact`, the covariance step the ratio of the
    kernels' mean diagonals :func:`gelib.models.sigma_mean_ratio` ``- 1`` (both
    ``Sigma``'s expected traces are ``d_O`` times their kernel's mean diagonal), and the
    Gaussian-rows and query-substitution steps 0 (their models' rows have the same
    covariance). The steps multiply, so the total is ``prod(1 + predicted) - 1``, which
    is :func:`gelib.models.mha_shift_exact`. Nothing is allowed for neglected orders: the
    only tolerance is the seeds' spread (:attr:`BudgetRow.agrees`), which also covers the difference
    between a mean of per-seed ratios and this ratio of expectations (second order in
    one seed's relative fluctuation of the mean eigenvalue).
    """
    if cfg.tie_kv:
        raise ValueError("the first-moment predictions hold for untied layers (tie_kv=False)")
    out = {step: 0.0 for step, _, _ in STEPS}
    out["denominator"] = denominator_shift_exact(cfg.n, cfg.d_k, cfg.beta)
    out["centering"] = centering_shift_exact(cfg.d_k, cfg.beta)
    out["covariance"] = sigma_mean_ratio(cfg.d_k, cfg.beta) - 1
    out["total"] = math.prod(1 + p for p in out.values()) - 1
    return out


def step_shift(step: str, earlier: ArrayLike, later: ArrayLike, cfg: AttentionConfig) -> BudgetRow:
    """One step of Table 1 (a name in :data:`~gelib.models.shifts.STEPS`, or ``"total"`` for MHA
    against ``Y^G``): the measured relative shift ``mean(earlier) / mean(later) - 1`` per
    seed (eigenvalues of shape ``(seeds, n)``) against its prediction,
    :func:`step_predictions`, at the layer ``cfg``.
    """
    models = {name: (a, b) for name, a, b in (*STEPS, ("total", "mha", "yg"))}
    if step not in models:
        raise ValueError(f"unknown step {step!r}: one of {', '.join(models)}")
    pred = step_predictions(cfg)[step]
    shift = np.asarray(earlier).mean(axis=-1) / np.asarray(later).mean(axis=-1) - 1
    return BudgetRow(step, *models[step], summarize(100 * np.atleast_1d(shift)), 100 * pred)


def shift_budget(spectra: Mapping[str, np.ndarray], cfg: AttentionConfig) -> list[BudgetRow]:
    """The first-moment budget of an untied layer: :func:`step_shift` for every step of
    Table 1 (:data:`~gelib.models.shifts.STEPS`) and for the whole chain (``"total"``, MHA against
    ``Y^G``).

    ``spectra`` maps every model of the chain to its eigenvalues, ``(seeds, n)``, all
    from the same draws (:func:`gelib.spectra.model_spectra`).
    """
    return [step_shift(step, spectra[a], spectra[b], cfg) for step, a, b in (*STEPS, ("total", "mha", "yg"))]


def budget_markdown(rows: list[BudgetRow]) -> str:
    """The budget as a Markdown table: step, models, measured shift (mean ± 95 %), prediction, and the
    check (:attr:`BudgetRow.test`): its tolerance in standard errors and the error it catches half the time."""
    lines = [
        "| step | models | measured shift (%) | predicted (%) | tolerance (SE) | catches (points) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        t = r.test
        lines.append(
            f"| {r.step.replace('_', ' ')} | {r.earlier} / {r.later} | {r.measured.mean:+.2f} ± {r.measured.ci95:.2f} "
            f"| {r.predicted:+.2f} | {t.quantile:.2f} | {t.catch:.2f} |"
        )
    return "\n".join(lines)


# --- the limit-law chapter's tables ---


# --- the limit-law chapter's moment checks: the finite-size bias of m_1 and the rate over n ---
