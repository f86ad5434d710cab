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
  ``z = (ours - paper) / sqrt(ci_ours^2 + ci_paper^2)``.

Rows too large for a CPU are *shrunk* along the proportional regime
(:func:`shrink`): ``n``, ``d`` and ``d_K = d_V`` divided by the same power of
two, ``h`` and ``h_KV`` kept, which keeps every ratio of the dimensions and
so the limit law.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .config import AttentionConfig
from .presets import PRESETS, Preset
from .spectra import Comparison, Summary, mean_shift, summarize

__all__ = ["shrink", "mean_shifts", "TableRow", "table_row", "markdown_table", "HEADER"]

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
    "z",
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
    (``s == 1``) and the paper has a value.
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


def table_row(name: str, cfg: AttentionConfig, s: int, res: Comparison) -> TableRow:
    """The row of preset ``name`` from its comparison ``res`` at layer ``cfg``
    (shrunk by ``s``, see :func:`shrink`)."""
    p = PRESETS[name]
    shift = mean_shifts(res)
    rel = summarize(100 * res.rel_w1)
    z = None
    if p.paper_rel_w1 is not None and s == 1:
        pm, pc = p.paper_rel_w1
        z = (rel.mean - pm) / math.hypot(rel.ci95, pc)
    return TableRow(
        name=name,
        title=p.title,
        cfg=cfg,
        s=s,
        res=res,
        rel=rel,
        ks=summarize(res.ks),
        shift=summarize(100 * shift),
        shift_seeds=shift,
        shift_pred=100 * mean_shift(cfg.n, cfg.d_k, cfg.beta),
        paper=p.paper_rel_w1,
        z=z,
    )


def _cells(r: TableRow) -> list:
    c = r.cfg
    paper = f"{r.paper[0]:.2f} ± {r.paper[1]:.2f}" if r.paper else "—"
    if r.z is not None:
        z = f"{r.z:+.2f}"
    else:
        z = "n/a (shrunk)" if r.paper else "—"
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
        z,
    ]


def markdown_table(rows: list[TableRow]) -> str:
    """The rows as a Markdown table with the columns :data:`HEADER`: means ± 95 %
    half-widths over seeds, the mean shift with its prediction in brackets, the
    paper's value and ``z`` (``n/a (shrunk)`` for a shrunk row of the paper)."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(x) for x in _cells(r)) + " |" for r in rows]
    return "\n".join(lines)
