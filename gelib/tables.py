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
  value, the difference from the paper in units of the combined uncertainty,
  ``z = (ours - paper) / sqrt(ci_ours^2 + ci_paper^2)``, for the relative W1
  and for the KS distance (Table D.2's second column).

Big rows get fewer seeds (:func:`row_seeds`, by the flops of one seed,
:func:`gelib.spectra.seed_flops`), so that the exact table fits a CPU.

Rows too large for a CPU are *shrunk* along the proportional regime
(:func:`shrink`): ``n``, ``d`` and ``d_K = d_V`` divided by the same power of
two, ``h`` and ``h_KV`` kept, which keeps every ratio of the dimensions and
so the limit law.

The limit-law chapter's tables are here too: :func:`level_w1_table`, the W1
distance from the eigenvalues of every level of the chain of compressions
(:func:`gelib.levels.level_spectra`) to that level's law, against the bound
``C / sqrt(p)``; and :func:`moment_table`, the first moments of simulated
spectra against the exact moments of the limit law, with a tolerance
``C_m k^{3/2} / sqrt(n)``. Both return the numbers they print, so that the
chapter asserts on them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from .config import AttentionConfig
from .freeprob import Law, w1_to_law
from .presets import PRESETS, Preset
from .shifts import STEPS, step_shifts
from .spectra import Comparison, Summary, mean_shift, seed_flops, summarize

__all__ = [
    "shrink",
    "row_seeds",
    "mean_shifts",
    "TableRow",
    "table_row",
    "markdown_table",
    "HEADER",
    "BudgetRow",
    "step_shift",
    "shift_budget",
    "budget_markdown",
    "LEVEL_TITLES",
    "level_sizes",
    "level_w1_table",
    "empirical_moments",
    "moment_table",
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


def _z(ours: Summary, paper: tuple[float, float]) -> float:
    """``(ours - paper) / sqrt(ci_ours^2 + ci_paper^2)``."""
    return (ours.mean - paper[0]) / math.hypot(ours.ci95, paper[1])


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
    ``(seeds,)``); ``shift_pred`` the predicted shift ``100 b(n, d_K)`` (%);
    ``paper`` the paper's ``(mean, ci95)`` in per cent or ``None``; ``z`` the
    agreement with it, ``None`` unless the row runs at exact dimensions
    (``s == 1``) and the paper has a value; ``paper_ks`` and ``z_ks`` the same
    for the KS distance.
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


def table_row(name: str, cfg: AttentionConfig, s: int, res: Comparison) -> TableRow:
    """The row of preset ``name`` from its comparison ``res`` at layer ``cfg``
    (shrunk by ``s``, see :func:`shrink`)."""
    p = PRESETS[name]
    shift = mean_shifts(res)
    rel, ks = summarize(100 * res.rel_w1), summarize(res.ks)
    exact = s == 1
    z = _z(rel, p.paper_rel_w1) if exact and p.paper_rel_w1 is not None else None
    z_ks = _z(ks, p.paper_ks) if exact and p.paper_ks is not None else None
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
    )


def _cells(r: TableRow) -> list:
    c = r.cfg
    paper = f"{r.paper[0]:.2f} ± {r.paper[1]:.2f}" if r.paper else "—"
    paper_ks = f"{r.paper_ks[0]:.4f} ± {r.paper_ks[1]:.4f}" if r.paper_ks else "—"

    def z_cell(z, published):
        if z is not None:
            return f"{z:+.2f}"
        return "n/a (shrunk)" if published else "—"

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
        f"{r.shift.mean:+.2f} ({r.shift_pred:+.2f})",
        paper,
        z_cell(r.z, r.paper),
        paper_ks,
        z_cell(r.z_ks, r.paper_ks),
    ]


def markdown_table(rows: list[TableRow]) -> str:
    """The rows as a Markdown table with the columns :data:`HEADER`: means ± 95 %
    half-widths over seeds, the mean shift with its prediction in brackets, the
    paper's values and ``z`` for W1 and KS (``n/a (shrunk)`` for a shrunk row of
    the paper)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(x) for x in _cells(r)) + " |" for r in rows]
    return "\n".join(lines)


# --- the first-moment budget across the chain ---


@dataclasses.dataclass(frozen=True)
class BudgetRow:
    """One step of the first-moment budget (:func:`shift_budget`): the measured relative
    shift of the mean eigenvalue from model ``later`` to model ``earlier`` (per cent,
    summarised over seeds), its leading-order prediction and the allowance for the
    neglected orders (both in per cent)."""

    step: str
    earlier: str
    later: str
    measured: Summary
    predicted: float
    allowance: float

    @property
    def agrees(self) -> bool:
        """``|measured - predicted| <= 2 ci95 + allowance``."""
        return abs(self.measured.mean - self.predicted) <= 2 * self.measured.ci95 + self.allowance

    def __str__(self) -> str:
        return (
            f"{self.step}: measured {self.measured.mean:+.2f} ± {self.measured.ci95:.2f} %, "
            f"predicted {self.predicted:+.2f} % (allowance {self.allowance:.2f} %)"
        )


def step_shift(step: str, earlier: ArrayLike, later: ArrayLike, cfg: AttentionConfig) -> BudgetRow:
    """One step of Table 1 (a name in :data:`gelib.shifts.STEPS`, or ``"total"`` for MHA
    against ``Y^G``): the measured relative shift ``mean(earlier) / mean(later) - 1`` per
    seed (eigenvalues of shape ``(seeds, n)``) against its leading-order prediction,
    :func:`gelib.shifts.step_shifts` (the total: :func:`gelib.spectra.mean_shift`, their
    sum), at the layer ``cfg``.

    The allowance is ``8 (1/d_K + 1/n) |predicted|``: the neglected orders are smaller
    than the prediction by a factor ``O(1/d_K + 1/n)``.
    """
    models = {name: (a, b) for name, a, b in (*STEPS, ("total", "mha", "yg"))}
    if step not in models:
        raise ValueError(f"unknown step {step!r}: one of {', '.join(models)}")
    pred = mean_shift(cfg.n, cfg.d_k, cfg.beta) if step == "total" else step_shifts(cfg.n, cfg.d_k, cfg.beta)[step]
    shift = np.asarray(earlier).mean(axis=-1) / np.asarray(later).mean(axis=-1) - 1
    allowance = 8 * (1 / cfg.d_k + 1 / cfg.n) * abs(pred)
    return BudgetRow(step, *models[step], summarize(100 * np.atleast_1d(shift)), 100 * pred, 100 * allowance)


def shift_budget(spectra: Mapping[str, np.ndarray], cfg: AttentionConfig) -> list[BudgetRow]:
    """The first-moment budget of an untied layer: :func:`step_shift` for every step of
    Table 1 (:data:`gelib.shifts.STEPS`) and for the whole chain (``"total"``, MHA against
    ``Y^G``).

    ``spectra`` maps every model of the chain to its eigenvalues, ``(seeds, n)``, all
    from the same draws (:func:`gelib.spectra.model_spectra`).
    """
    return [step_shift(step, spectra[a], spectra[b], cfg) for step, a, b in (*STEPS, ("total", "mha", "yg"))]


def budget_markdown(rows: list[BudgetRow]) -> str:
    """The budget as a Markdown table: step, models, measured shift (mean ± 95 %), prediction."""
    lines = ["| step | models | measured shift (%) | predicted (%) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r.step.replace('_', ' ')} | {r.earlier} / {r.later} | {r.measured.mean:+.2f} ± {r.measured.ci95:.2f} "
            f"| {r.predicted:+.2f} |"
        )
    return "\n".join(lines)


# --- the limit-law chapter's tables ---

LEVEL_TITLES: dict[str, str] = {
    "W": "$K K^T / d_K$ (MP)",
    "T": r"$T = \beta^2 W + \alpha^2 I$",
    "mu_V": r"$\mu_V$: $V^T T V / n$",
    "mu_VO": r"$\mu_{VO}$: $\Sigma$",
    "out": r"output: $Y^G Y^{G T} / n$",
}
"""The name of every level of the chain (:data:`gelib.levels.LEVELS`) in tables and figures."""


def level_sizes(cfg: AttentionConfig) -> dict[str, int]:
    """The size ``p`` of the matrix at every level of the chain of layer ``cfg``.

    Parameters
    ----------
    cfg
        The layer.

    Returns
    -------
    dict[str, int]
        ``{level: p}`` for the names of :data:`gelib.levels.LEVELS`: ``n`` for
        ``K K^T / d_K``, ``T`` and ``Y Y^T / n``; ``d_V`` for one block ``M_r``
        (``"mu_V"``); ``d_O`` for ``Sigma`` (``"mu_VO"``).
    """
    return {"W": cfg.n, "T": cfg.n, "mu_V": cfg.d_v, "mu_VO": cfg.d_o, "out": cfg.n}


def level_w1_table(
    levels: Mapping[str, ArrayLike],
    laws: Mapping[str, Law],
    cfg: AttentionConfig,
    c_w1: float,
    titles: Mapping[str, str] = LEVEL_TITLES,
    atom_tol: float = 1e-6,
) -> tuple[str, dict[str, tuple[float, float]]]:
    """The W1 distance from every level's eigenvalues to its law, relative to the law's mean.

    Parameters
    ----------
    levels
        ``{level: eigenvalues}`` (any shape, flattened), e.g. from
        :func:`gelib.levels.level_spectra`.
    laws
        ``{level: law}``; the table has one row per law, in this order.
    cfg
        The layer, for the size ``p`` of every level (:func:`level_sizes`).
    c_w1
        The constant ``C`` of the bound ``C / sqrt(p)``.
    titles
        The first column: ``{level: name}``.
    atom_tol
        Eigenvalues within ``atom_tol * sigma`` of an atom count as at the atom
        (:func:`gelib.freeprob.w1_to_law`).

    Returns
    -------
    table : str
        A Markdown table: level, size ``p``, the law's atoms (mass at location),
        ``W1 / mean`` and the bound.
    distances : dict[str, tuple[float, float]]
        ``{level: (w1_to_law(eigenvalues, law) / mean of the law, C / sqrt(p))}``.
    """
    sizes = level_sizes(cfg)
    rows = ["| level | size | atoms | W1 / mean | bound $C/\\sqrt{p}$ |", "|---|---|---|---|---|"]
    distances = {}
    for name, law in laws.items():
        dist = w1_to_law(levels[name], law, atom_tol=atom_tol) / law.moments(1)[0]
        bound = c_w1 / math.sqrt(sizes[name])
        atoms = ", ".join(f"{m:.3f} at {x:.3g}" for x, m in law.atoms()) or "none"
        rows.append(f"| {titles[name]} | {sizes[name]} | {atoms} | {dist:.4f} | {bound:.4f} |")
        distances[name] = (dist, bound)
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


def moment_table(
    spectra: Mapping[str, ArrayLike],
    law_moments: ArrayLike,
    n: int,
    c_m: float,
    labels: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, np.ndarray], np.ndarray]:
    """The first moments of simulated spectra against the exact moments of their limit law.

    The tolerance for the relative error of the ``k``-th moment, averaged over
    seeds, is ``c_m k^{3/2} / sqrt(n)``.

    Parameters
    ----------
    spectra
        ``{model: eigenvalues (seeds, n)}``, e.g. from
        :func:`gelib.spectra.model_spectra`.
    law_moments
        The law's moments ``m_1 .. m_K``, shape ``(K,)``
        (:meth:`gelib.freeprob.Law.moments`).
    n
        The size of the spectra, for the tolerance.
    c_m
        The constant of the tolerance.
    labels
        ``{model: column name}``, one column per model in this order
        (default: ``Y^G`` then MHA, models ``"yg"`` and ``"mha"``).

    Returns
    -------
    table : str
        A Markdown table, one row per moment: the law's moment, per model the
        mean over seeds ± its 95 % half-width
        (:func:`gelib.spectra.summarize`) with the relative error, and the
        tolerance.
    errors : dict[str, numpy.ndarray]
        ``{model: mean over seeds of m_k^emp, divided by m_k, minus 1}``, shape ``(K,)``.
    tolerances : numpy.ndarray
        ``c_m k^{3/2} / sqrt(n)``, shape ``(K,)``.
    """
    labels = {"yg": "$Y^G$", "mha": "MHA"} if labels is None else labels
    law_m = np.asarray(law_moments, dtype=float)
    count = len(law_m)
    tol = np.array([c_m * (k + 1) ** 1.5 / math.sqrt(n) for k in range(count)])
    emp = {m: empirical_moments(spectra[m], count) for m in labels}
    errors = {m: np.array([e[:, k].mean() / law_m[k] - 1 for k in range(count)]) for m, e in emp.items()}
    head = " | ".join(f"{label} (mean ± 95 % CI)" for label in labels.values())
    rows = [f"| moment | limit law | {head} | tolerance |", "|---" * (3 + len(labels)) + "|"]
    for k in range(count):
        cells = []
        for m in labels:
            summ = summarize(emp[m][:, k])
            cells.append(f"{summ.mean:.4g} ± {summ.ci95:.2g} ({100 * (summ.mean / law_m[k] - 1):+.2f} %)")
        rows.append(f"| $m_{k + 1}$ | {law_m[k]:.4g} | {' | '.join(cells)} | ±{100 * tol[k]:.1f} % |")
    return "\n".join(rows), errors, tol
