"""Simulated spectra against the limit law: densities, atoms, the chain of compressions level by level."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from ..attention_law import LEVEL_TITLES, Chain
from ..freeprob import Law, Oracle
from .style import COLORS, tex_sci

__all__ = [
    "at_atoms",
    "law_histograms",
    "density_curves",
    "chain_figure",
    "law_figure",
    "oracle_figure",
    "layer_view",
]


def at_atoms(eigs: ArrayLike, law: Law, tol: float = 1e-6) -> np.ndarray:
    """Mask of the eigenvalues that sit at an atom of ``law``: ``|x - loc| <= tol * law.sigma``
    for some atom location ``loc``. ``eigs`` of any shape; the mask has its shape."""
    eigs = np.asarray(eigs, dtype=float)
    hit = np.zeros(eigs.shape, bool)
    for loc, _ in law.atoms():
        hit |= np.abs(eigs - loc) <= tol * law.sigma
    return hit


def law_histograms(
    ax: Axes,
    spectra: dict,
    law: Law | dict[str, Law],
    *,
    title: str = "",
    bins: int = 50,
    log: bool = False,
    colors: Sequence[str] = COLORS,
    atoms: str = "stems",
    left_cut: float | None = None,
    styles: dict | None = None,
    headroom: float = 1.3,
    legend: bool = False,
    xlabel: str | None = None,
    tol: float = 1e-6,
) -> Axes:
    """Histograms of eigenvalues with the density of their limit law in black over them.

    ``spectra`` is ``{label: eigenvalues}`` (any shape, all seeds pooled);
    ``law`` one :class:`~gelib.freeprob.Law` for all of them or ``{label: Law}``
    (one per histogram; equal laws are drawn once). The histogram of each
    spectrum counts the eigenvalues that are not at an atom of its law
    (:func:`at_atoms`), normalised by the *total* number of eigenvalues, so
    that its area is the fraction of continuous eigenvalues, as the area under
    the density is the continuous mass ``1 - sum of the atoms``.

    * ``log=False``: a linear axis over the support (4 % padding), heights
      ``counts / (size * bin width)`` against the density ``rho(x)``.
    * ``log=True``: a logarithmic axis and geometric bins; both sides show the
      density of ``log x``, i.e. ``x rho(x)`` against ``counts / (size * d log x)``.
      The bins start at the ``left_cut`` quantile of the continuous
      eigenvalues above ``1e-8 sigma`` (smaller ones count as numerical zeros),
      and the axis is cut there; or (``left_cut=None``) at the larger of 2/3
      of the left edge of the support and half their 0.2 % quantile. They end
      at 1.1 times the largest right edge.
    * ``atoms="stems"``: every atom drawn as a black stem whose height is its
      mass, on a twin axis (an atom at 0 on a log axis at the left end), with a
      coloured tick at the fraction of each spectrum found at it;
      ``atoms="legend"``: the law's mass at 0 appended to the label instead.
    * ``styles``: ``{label: (linestyle, legend name)}`` for laws not drawn as
      solid "limit law" (e.g. a tied law, dashed).

    The y-axis reaches ``headroom`` times the highest curve (log) or 1.6 times
    its 98 % quantile (linear). Returns ``ax``.
    """
    if atoms not in ("stems", "legend"):
        raise ValueError(f"atoms must be 'stems' or 'legend', got {atoms!r}")
    laws = law if isinstance(law, dict) else {label: law for label in spectra}
    styles = styles or {}
    eigs = {label: np.ravel(np.asarray(e, dtype=float)) for label, e in spectra.items()}
    free = {label: e[~at_atoms(e, laws[label], tol)] for label, e in eigs.items()}
    lo = min(laws[label].edges()[0][0] for label in eigs)
    hi = max(laws[label].edges()[-1][1] for label in eigs)
    if log:
        # eigenvalues below 1e-8 sigma count as numerical zeros for the range
        pooled = np.concatenate([f[f > 1e-8 * laws[label].sigma] for label, f in free.items()])
        if left_cut is None:
            lo = max(lo / 1.5, np.quantile(pooled, 0.002) / 2)
        else:
            lo = float(np.quantile(pooled, left_cut))
        b = np.geomspace(lo, hi * 1.1, bins + 1)
        width = np.diff(np.log(b))
    else:
        pad = 0.04 * (hi - lo)
        b = np.linspace(lo - pad, hi + pad, bins + 1)
        width = np.diff(b)
    for (label, e), color in zip(eigs.items(), colors):
        counts, _ = np.histogram(free[label], bins=b)
        extra = ""
        if atoms == "legend":
            mass = float(laws[label].point_mass(0.0))
            extra = f" (+ atom {mass:.2f} at 0)" if mass else ""
        ax.stairs(counts / e.size / width, b, color=color, lw=1.3, label=label + extra)
    drawn, curves, entries = [], [], []
    for label in eigs:
        ls, name = styles.get(label, ("-", "limit law"))
        if (ls, name) not in entries:
            entries.append((ls, name))
        if laws[label] in drawn:
            continue
        drawn.append(laws[label])
        mu = laws[label]
        x = np.union1d(mu.grid(400), np.geomspace(lo, hi, 300)) if log else mu.grid(400)
        x = x[x >= lo]
        curve = x * mu.density(x) if log else mu.density(x)
        curves.append(curve)
        ax.plot(x, curve, color="black", lw=1.1, ls=ls)
    for ls, name in entries:
        ax.plot([], [], color="black", lw=1.1, ls=ls, label=name)
    if log:
        ax.set_xscale("log")
        if left_cut is not None:
            ax.set_xlim(b[0], b[-1])
        ax.set_ylim(0, headroom * max(c.max() for c in curves))
    else:
        ax.set_ylim(0, max(np.quantile(c, 0.98) for c in curves) * 1.6)
    if atoms == "stems" and any(mu.atoms() for mu in drawn):
        twin = ax.twinx()
        for mu in drawn:
            for loc, mass in mu.atoms():
                where = loc if (loc > 0 or not log) else b[0]  # an atom at 0: at the left end
                twin.vlines(where, 0, mass, color="black", lw=2.5)
                twin.plot(where, mass, "v", color="black", ms=5)
                for (label, e), color in zip(eigs.items(), colors):
                    if laws[label] == mu:
                        twin.plot(where, np.mean(np.abs(e - loc) <= tol * mu.sigma), "_", color=color, ms=14, mew=2)
        twin.set_ylim(0, 1.05)
        twin.set_ylabel("atom mass", fontsize=8)
        twin.grid(False)
    ax.set_title(title)
    ax.set_xlabel(xlabel or ("eigenvalue (log scale)" if log else "eigenvalue"))
    if legend:
        ax.legend(fontsize=8, loc="upper left")
    return ax


def density_curves(ax: Axes, laws: Sequence[Law], labels: Sequence[str], title: str = "", log: bool = False) -> Axes:
    """The densities of several laws (``log=True``: the density of ``log x``,
    ``x rho(x)``, on a logarithmic axis, from ``1e-4 sigma``); each label notes
    the law's atom at 0. Returns ``ax``."""
    tops = []
    for law, label in zip(laws, labels):
        x = law.grid(300)
        x = x[x > 1e-4 * law.sigma] if log else x
        y = x * law.density(x) if log else law.density(x)
        atoms = "".join(f", atom {m:.2f} at 0" for loc, m in law.atoms() if loc == 0.0)
        ax.plot(x, y, lw=1.3, label=label + atoms)
        tops.append(y.max() if log else np.quantile(y, 0.95))
    ax.set_ylim(0, (1.15 if log else 1.5) * max(tops))
    if log:
        ax.set_xscale("log")
    ax.set_title(title)
    ax.set_xlabel("eigenvalue (log scale)" if log else "eigenvalue")
    ax.set_ylabel("density of log(eigenvalue)" if log else "density")
    ax.legend(fontsize=8)
    return ax


def chain_figure(
    levels: dict[str, ArrayLike],
    laws: dict[str, Law],
    softmax: ArrayLike | None = None,
    titles: dict[str, str] = LEVEL_TITLES,
    log_levels: Sequence[str] = ("mu_VO", "out"),
) -> Figure:
    """The chain of compressions level by level: one :func:`law_histograms` panel per level, on a 2 x 3 grid.

    Parameters
    ----------
    levels
        ``{level: eigenvalues}`` of one draw (any shape, flattened), e.g. from
        :func:`gelib.attention_law.level_spectra`.
    laws
        ``{level: law}``: one panel per law, in this order (at most five with
        ``softmax``, six without), the eigenvalues of the level against it.
    softmax
        Eigenvalues of ``Y Y^T / n`` of one draw of the softmax layer, drawn in
        the sixth panel against ``laws["out"]`` (log axis, second colour).
    titles
        ``{level: panel title}``.
    log_levels
        The levels drawn on a logarithmic axis as densities of ``log x`` (40
        bins; the others linear, 25 bins).

    Returns
    -------
    matplotlib.figure.Figure
        The figure; the first panel of each row has the y-label of its kind
        ("density" or "density of log(eigenvalue)"), the first panel a legend.
    """
    fig, axes = plt.subplots(2, 3, figsize=(11, 6.2))
    for ax, name in zip(axes.flat, laws):
        log = name in log_levels
        law_histograms(ax, {"one draw": levels[name]}, laws[name], title=titles[name], bins=40 if log else 25, log=log)
    drawn = len(laws)
    if softmax is not None:
        law_histograms(
            axes.flat[drawn],
            {"MHA, one draw": softmax},
            laws["out"],
            title=r"output: softmax MHA $Y Y^T / n$",
            bins=40,
            colors=COLORS[1:],
            log=True,
        )
        drawn += 1
    for ax in axes.flat[drawn:]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("density of log(eigenvalue)" if ax.get_xscale() == "log" else "density")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def law_figure(
    ch: Chain, reference: Chain | None = None, labels: Sequence[str] = ("this layer", "main layer")
) -> Figure:
    """The value law and the output law of one layer, for the limit law's explorer.

    Left, :math:`\\mu_V` on a linear axis; right, the output law as the density
    of ``log x`` on a logarithmic axis (:func:`density_curves`). The edges of
    each law's support are dotted vertical lines, its atoms are named in the
    legend, and the title gives the output law's mean and support. With
    ``reference`` (the chapter's main layer) its two laws are drawn in grey
    for comparison.

    Parameters
    ----------
    ch
        The chain of laws of the layer (:func:`gelib.attention_law.chain`).
    reference
        Another layer's chain, drawn beneath.
    labels
        Legend labels of ``ch`` and ``reference``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    pairs = [(ch, labels[0])] + ([(reference, labels[1])] if reference is not None else [])
    for ax, level, title, log in (
        (axes[0], "value", r"value law $\mu_V$", False),
        (axes[1], "output", r"output law of $Y Y^T / n$", True),
    ):
        laws = [getattr(c, level) for c, _ in pairs]
        density_curves(ax, laws, [label for _, label in pairs], title=title, log=log)
        curves = list(ax.get_lines())
        if reference is not None:
            curves[-1].set(color="0.6", ls="--", zorder=1)
        for line, law in zip(curves, laws):
            for left, right in law.edges():
                for x in (left, right):
                    if x > 0 or not log:
                        ax.axvline(x, color=line.get_color(), ls=":", lw=0.9)
        ax.legend(fontsize=8)
    out = ch.output
    support = " $\\cup$ ".join(f"$[{tex_sci(a)}, {tex_sci(b)}]$" for a, b in out.edges())
    atom = out.point_mass(0.0)
    fig.suptitle(
        f"output law: mean ${tex_sci(out.moments(1)[0])}$, support {support}"
        + (f", atom {atom:.3f} at 0" if atom > 0 else ""),
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def oracle_figure(oracles: Iterable[Oracle], points: int = 200, every: int = 10) -> Figure:
    """The solver against laws known in closed form (:mod:`gelib.freeprob.oracles`), one panel each.

    In each panel, on a logarithmic density axis: the density of the solver's law
    (:meth:`gelib.freeprob.Oracle.law`, black line) on ``points`` points of its grid
    (clustered at the edges) and the closed-form density (:meth:`gelib.freeprob.Oracle.density`,
    open circles) at every ``every``-th of them; the panel is titled with the oracle's name.
    The first panel has the y-label and the legend. Returns the figure (one row).
    """
    oracles = list(oracles)
    fig, axes = plt.subplots(1, len(oracles), figsize=(10 / 3 * len(oracles), 3.2), squeeze=False)
    for ax, o in zip(axes[0], oracles):
        x = o.law().grid(points)
        ax.semilogy(x, o.law().density(x), "k", label="solver")
        ax.semilogy(x[::every], o.density(x[::every]), "o", mfc="none", label="closed form")
        ax.set(title=o.name, xlabel="x")
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend()
    return fig


def layer_view(draw, cfg, shown: int = 64) -> Figure:
    """The explorer figure of the chapter *The model*: one head's attention and the layer's spectrum.

    ``draw``: one :class:`~gelib.sampling.Draw` of the layer ``cfg`` (an
    :class:`~gelib.config.AttentionConfig`). Left: the top-left ``shown x shown`` block of head 0's
    attention matrix, log colour scale (at large ``beta`` each row puts its weight on a few
    keys). Right: the eigenvalues of ``Y Y^T / n`` (:func:`gelib.spectra.spectrum` of the softmax
    layer) as a histogram under their limit law (:func:`gelib.attention_law.output_law`, black;
    :func:`law_histograms`), with lines at the measured mean, the exact mean at this size
    (``m_1`` times one plus :func:`gelib.models.mha_shift_exact`) and the limit ``m_1``. Returns
    the figure.
    """
    from ..attention_law import output_law
    from ..models import attention, build, mha_shift_exact, scores
    from ..spectra import spectrum

    full = np.asarray(attention(scores(draw.q[0], draw.k[0]), cfg.beta), dtype=float)
    a = full[:shown, :shown]
    eigs = spectrum(build("mha", draw, cfg))
    m1 = cfg.first_moment
    fig, (ax_a, ax_s) = plt.subplots(1, 2, figsize=(10.5, 3.8), layout="constrained", width_ratios=(1, 1.6))
    im = ax_a.imshow(np.log10(np.maximum(a, 1e-12)), cmap="viridis", vmin=-6, vmax=0)
    fig.colorbar(im, ax=ax_a, label=r"$\log_{10} A_{ij}$")
    ax_a.set(xlabel="key $j$", ylabel="query $i$")
    ax_a.set_title(
        f"head 0's attention, top-left {a.shape[0]} x {a.shape[1]}\n"
        f"largest weight in a row: {full.max(axis=1).mean():.2f} on average (uniform: {1 / cfg.n:.2g})",
        fontsize=8,
    )
    law_histograms(ax_s, {"softmax layer": eigs}, output_law(cfg), log=True)
    for x, style, label in (
        (float(eigs.mean()), "-", "measured mean"),
        (m1 * (1 + mha_shift_exact(cfg.n, cfg.d_k, cfg.beta)), "--", "exact mean"),
        (m1, ":", "limit $m_1$"),
    ):
        ax_s.axvline(x, color="grey", ls=style, lw=1, label=f"{label} {x:.3f}")
    ax_s.legend(fontsize=7)
    ax_s.set(xlabel=r"eigenvalue of $YY^\top/n$", ylabel=r"density of $\log \lambda$")
    ax_s.set_title(f"{cfg.describe()}\nthe spectrum of one layer and its limit law (black)", fontsize=8)
    return fig
