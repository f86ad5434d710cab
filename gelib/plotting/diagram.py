"""The proof in one picture: the chain of the paper's Table 1, with the distance each step measures."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from ..config import AttentionConfig
from ..models import MODELS, STEPS
from ..spectra import Summary
from .style import COLORS

__all__ = ["CHAIN_MODELS", "CHAIN_STEPS", "chain_diagram", "diagram_numbers", "why_not_additive", "ks_at_resolution"]

#: The six models of Table 1 as the diagram writes them (matplotlib mathtext), by model name.
CHAIN_MODELS: dict[str, str] = {
    "mha": "$\\sqrt{n}\\,A^{\\perp}$\n(MHA)",
    "yf": r"$Y^f$",
    "yf_ring": r"$\mathring{Y}^f$",
    "yg_sigma_f": r"$Y^G[\Sigma_f]$",
    "yg_sigma_g": r"$Y^G[\Sigma_G]$",
    "yg": r"$Y^G$",
}

#: The five steps of Table 1 by step name (:data:`~gelib.models.shifts.STEPS`): ``(label, transformation, control)``.
CHAIN_STEPS: dict[str, tuple[str, str, str]] = {
    "denominator": (
        "denominator replacement",
        r"row denominators $\to$ the constant $n\,e^{\beta^2/2}$",
        r"operator norm $n^{-1/2+o(1)}$; rank $\leq h$",
    ),
    "centering": ("centering", "subtract the common conditional row mean", r"rank $\leq 1$"),
    "gaussian_rows": (
        "Gaussian rows",
        r"Gaussian rows with the same covariance $\Sigma_f$",
        "quadratic forms concentrate (Bai-Zhou)",
    ),
    "covariance": (
        "covariance approximation",
        r"$\Sigma_f \to \Sigma_G$: linear part plus white noise $\alpha^2$",
        r"normalised Frobenius error $O(\sqrt{\log n\,/\,n})$",
    ),
    "query_substitution": (
        "query substitution",
        r"$\beta S + \alpha Z$: the same law, with the queries",
        r"exact in law given $K$",
    ),
}

_INK, _MUTED = "#1a1a1a", "#555555"  # dark text on the opaque white figure, in both page themes


def _measured(summary: Summary, unit: str = "") -> str:
    """``mean ± ci95``, the interval to 2 significant digits and the mean to as many decimals (at most 4).

    >>> _measured(Summary(4.1234, 0.51, 1.0, 8), " %")
    '4.12 ± 0.51 %'
    """
    if not math.isfinite(summary.ci95) or summary.ci95 <= 0:
        return f"{summary.mean:.3g}{' ± 0' if summary.ci95 == 0 else ''}{unit}"
    decimals = min(4, max(0, 1 - math.floor(math.log10(summary.ci95))))
    return f"{summary.mean:.{decimals}f} ± {summary.ci95:.{decimals}f}{unit}"


def ks_at_resolution(summary: Summary, n_eigenvalues: int | None) -> int | None:
    """``k`` when a KS distance over seeds is ``k / N`` at every seed (interval exactly 0), else ``None``.

    The KS distance between two spectra of ``N`` eigenvalues each is a multiple of ``1/N``: an
    interval of 0 means every seed gave the same multiple; for ``k = 1``, one eigenvalue's worth,
    the resolution of the distance.

    >>> ks_at_resolution(Summary(1 / 512, 0.0, 0.0, 8), 512), ks_at_resolution(Summary(0.01, 0.001, 0.002, 8), 512)
    (1, None)
    """
    if n_eigenvalues is None or summary.ci95 != 0:
        return None
    k = summary.mean * n_eigenvalues
    return round(k) if abs(k - round(k)) < 1e-6 else None


def why_not_additive(
    w1: Mapping[tuple[str, str], Summary], shifts: Mapping[tuple[str, str], Summary] | None = None
) -> str:
    """One sentence: why the steps' distances do not add up to the end-to-end distance, with the numbers.

    W1 obeys the triangle inequality, so the end-to-end distance is at most the sum of the steps
    (relative W1: up to the steps' different mean eigenvalues), not equal to it; and with
    ``shifts`` (the steps' relative shifts of the mean eigenvalue, fractions, as
    :func:`gelib.spectra.step_distances` returns them) the largest shift in each direction,
    which undo each other.
    """
    pairs = [(a, b) for _, a, b in STEPS]
    end, total = w1[(MODELS[0], MODELS[-1])].mean, sum(w1[p].mean for p in pairs)
    text = (
        f"The steps do not add up: W1 obeys the triangle inequality, so end to end ({end:.2f} %) is at most "
        f"the sum of the steps ({total:.2f} %), not equal to it"
    )
    if shifts is not None:
        means = [100 * shifts[p].mean for p in pairs]
        lo, hi = min(range(len(means)), key=means.__getitem__), max(range(len(means)), key=means.__getitem__)
        if means[lo] < 0 < means[hi]:
            text += (
                f"; and one step's shift can undo another's (mean eigenvalue: step {lo + 1} {means[lo]:+.2f} %, "
                f"step {hi + 1} {means[hi]:+.2f} %)"
            )
    return text + "."


def diagram_numbers(
    w1: Mapping[tuple[str, str], Summary],
    ks: Mapping[tuple[str, str], Summary],
    shifts: Mapping[tuple[str, str], Summary],
    cfg: AttentionConfig,
    seeds: int,
) -> dict[str, float]:
    """The numbers the chain diagram shows, by name, for a chapter to glue (``bookrun.glue.values``).

    For each step name ``s`` of :data:`~gelib.models.shifts.STEPS` and ``end`` (MHA to ``Y^G``):
    ``w1_s`` and ``w1_s_ci`` (relative W1, %, mean and 95 % half-width over seeds), ``ks_s`` and
    ``ks_s_ci``, ``shift_s`` (relative shift of the mean eigenvalue, %; steps only); then
    ``sum_w1`` (the steps' sum), the layer (``n``, ``h``, ``h_kv``, ``d_k``, ``d_v``, ``d_o``, ``beta``)
    and ``seeds``, so that a chapter can name the diagram's layer beside its own.

    >>> from gelib.spectra import Summary
    >>> one = Summary(1.0, 0.1, 0.1, 8)
    >>> pairs = [(a, b) for _, a, b in STEPS] + [("mha", "yg")]
    >>> cfg = AttentionConfig(n=64, d=64, h=2, d_k=16)
    >>> out = diagram_numbers(dict.fromkeys(pairs, one), dict.fromkeys(pairs, one), dict.fromkeys(pairs, one), cfg, 8)
    >>> out["w1_covariance"], out["sum_w1"], out["shift_centering"], out["n"]
    (1.0, 5.0, 100.0, 64)
    """
    out: dict[str, float] = {}
    for name, a, b in [*STEPS, ("end", MODELS[0], MODELS[-1])]:
        out.update({f"w1_{name}": w1[(a, b)].mean, f"w1_{name}_ci": w1[(a, b)].ci95})
        out.update({f"ks_{name}": ks[(a, b)].mean, f"ks_{name}_ci": ks[(a, b)].ci95})
        if name != "end":
            out[f"shift_{name}"] = 100 * shifts[(a, b)].mean
    out["sum_w1"] = sum(w1[(a, b)].mean for _, a, b in STEPS)
    out.update({k: getattr(cfg, k) for k in ("n", "h", "h_kv", "d_k", "d_v", "d_o", "beta")}, seeds=seeds)
    return out


def chain_diagram(
    w1: Mapping[tuple[str, str], Summary],
    ks: Mapping[tuple[str, str], Summary] | None = None,
    *,
    title: str = "",
    shifts: Mapping[tuple[str, str], Summary] | None = None,
    n_eigenvalues: int | None = None,
) -> Figure:
    """The chain of the paper's Table 1 as one figure: six models, five labelled steps, their distances.

    ``w1`` maps each step ``(earlier, later)`` of :data:`~gelib.models.shifts.STEPS`, and
    the end-to-end pair ``("mha", "yg")``, to the :class:`~gelib.spectra.Summary`
    over seeds of the relative W1 distance between the two spectra, in percent;
    ``ks`` (optional) the same for the KS distance: the first two dicts of
    :func:`gelib.spectra.step_distances`. Each model is a box, each step an
    arrow labelled with its transformation and the control that proves it, and
    beside it the measured distance, ``mean ± 95 %`` (the interval to 2
    significant digits, the mean to as many decimals) with a bar of its relative W1; the end-to-end distance (the
    Gaussian equivalence) closes the figure. Drawn on an opaque white
    background, so that it reads the same in light and dark page themes.
    Raises ``ValueError`` when a step or the end-to-end pair is missing.
    """
    pairs = [(a, b) for _, a, b in STEPS] + [(MODELS[0], MODELS[-1])]
    for name, given in (("w1", w1), ("ks", ks)):
        missing = [f"{a} -> {b}" for a, b in pairs if given is not None and (a, b) not in given]
        if missing:
            raise ValueError(f"chain_diagram: {name} has no distance for {', '.join(missing)}")
    fig = plt.figure(figsize=(7.4, 7.6), facecolor="white")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, 1), ylim=(-0.118, 1))
    ax.set_axis_off()
    top, bottom, box_h, x_box, box_w = 0.84, 0.23, 0.075, 0.057, 0.162
    ys = [top - i * (top - bottom) / (len(MODELS) - 1) for i in range(len(MODELS))]
    x_mid, x_step, x_num, bar_w = x_box + box_w / 2, 0.25, 0.735, 0.24
    scale = max(w1[p].mean for p in pairs) or 1.0
    muted: dict[str, Any] = dict(fontsize=9.5, color=_MUTED, style="italic")
    if title:
        ax.text(0.5, 0.985, title, ha="center", va="top", fontsize=8.5, color=_MUTED)  # the figure's widest line
    ax.text(x_mid, 0.915, "model", ha="center", **muted)
    ax.text(x_step, 0.915, "step: what it does / what controls it", **muted)
    ax.text(x_num, 0.915, "measured at the layer above\n(mean ± 95 % over seeds)", **muted)
    for i, (model, y) in enumerate(zip(MODELS, ys)):
        edge = {0: COLORS[0], len(MODELS) - 1: COLORS[1]}.get(i, _MUTED)
        ax.add_patch(
            FancyBboxPatch(
                (x_box, y - box_h / 2),
                box_w,
                box_h,
                boxstyle="round,pad=0.004,rounding_size=0.012",
                facecolor="#f4f6f9",
                edgecolor=edge,
                lw=1.0 if edge == _MUTED else 1.8,
            )
        )
        ax.text(x_mid, y, CHAIN_MODELS[model], ha="center", va="center", fontsize=13, color=_INK, linespacing=1.1)

    at_resolution: list[int] = []

    def ks_text(summary: Summary) -> str:
        k = ks_at_resolution(summary, n_eigenvalues)
        if k is None:
            return _measured(summary)
        at_resolution.append(k)
        return f"{k}/{n_eigenvalues}, every seed"  # exact: the decimal would only widen the column

    def measured(y: float, pair: tuple[str, str], color: str) -> None:
        text = f"rel. W1  {_measured(w1[pair], ' %')}" + (f"\nKS  {ks_text(ks[pair])}" if ks is not None else "")
        ax.text(x_num, y + 0.008, text, va="bottom", fontsize=9.5, color=_INK, linespacing=1.35)
        ax.add_patch(Rectangle((x_num, y - 0.018), bar_w, 0.016, facecolor="#ececec", edgecolor="none"))
        ax.add_patch(Rectangle((x_num, y - 0.018), bar_w * max(w1[pair].mean, 0.0) / scale, 0.016, facecolor=color))

    for k, (name, a, b) in enumerate(STEPS):
        i = MODELS.index(a)
        y = (ys[i] + ys[i + 1]) / 2
        ax.add_patch(
            FancyArrowPatch(
                (x_mid, ys[i] - box_h / 2),
                (x_mid, ys[i + 1] + box_h / 2),
                arrowstyle="-|>",
                mutation_scale=15,
                color=_INK,
                lw=1.3,
            )
        )
        ax.text(x_mid + 0.012, y, str(k + 1), va="center", fontsize=10, color=_MUTED)
        label, what, control = CHAIN_STEPS[name]
        ax.text(x_step, y + 0.031, label, va="center", fontsize=11, weight="bold", color=_INK)
        ax.text(x_step, y, what, va="center", fontsize=10, color=_INK)
        ax.text(x_step, y - 0.031, control, va="center", **muted)
        measured(y, (a, b), COLORS[0])
    # the end-to-end distance: an arc from the first model to the last, and the closing row
    ax.add_patch(
        FancyArrowPatch(
            (x_box, ys[0]),
            (x_box, ys[-1]),
            connectionstyle="arc3,rad=0.08",
            arrowstyle="-|>",
            mutation_scale=15,
            color=COLORS[1],
            lw=1.5,
        )
    )
    ax.text(
        0.015, (ys[0] + ys[-1]) / 2, "end to end", rotation=90, ha="center", va="center", fontsize=9.5, color=COLORS[1]
    )
    y_end = 0.07
    ax.plot([x_box, 0.98], [0.15, 0.15], color="#cccccc", lw=0.8)
    ax.text(
        x_step, y_end + 0.016, "end to end: MHA $\\to$ $Y^G$", va="center", fontsize=11, weight="bold", color=COLORS[1]
    )
    ax.text(x_step, y_end - 0.016, "softmax attention against its Gaussian equivalent", va="center", **muted)
    measured(y_end, pairs[-1], COLORS[1])
    notes = [why_not_additive(w1, shifts)]
    if at_resolution:
        notes.append(
            f"KS \u201ck/{n_eigenvalues}, every seed\u201d: at N = {n_eigenvalues} eigenvalues KS moves in "
            "steps of 1/N, and every seed gave the same step (an interval of 0)."
        )
    ax.text(
        x_box,
        0.005,
        "\n".join(textwrap.fill(t, 98) for t in notes),
        va="top",
        fontsize=8.5,
        color=_INK,
        linespacing=1.3,
    )
    return fig
