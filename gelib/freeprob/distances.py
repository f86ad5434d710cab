"""Distances between an empirical spectrum and a law: Wasserstein-1 and Kolmogorov-Smirnov.

Both are exact given the law's distribution function (no binning, no
sampling of the law): W1 integrates ``|F_n - F|`` piecewise between the
eigenvalues, the edges, the atoms and the nodes of the distribution
function's panels (:attr:`~gelib.freeprob.Law.cdf_nodes`); KS compares left
and right limits at every eigenvalue and atom.  Only public members of
:class:`~gelib.freeprob.Law` are used.  :func:`~gelib.freeprob.distances_to_law` applies both
to every row of a ``(seeds, n)`` array of spectra, and :func:`~gelib.freeprob.shape_to_law`
splits the relative W1 into the shift of the mean and the *shape part* (the distance to the law
rescaled to each spectrum's mean); :func:`~gelib.freeprob.law_w1` is the W1 distance between two
laws (each possibly divided by a scale).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike

from .law import Law

__all__ = ["w1_to_law", "ks_to_law", "distances_to_law", "ToLaw", "shape_to_law", "law_w1"]


def _snap(eigs: ArrayLike, law: Law, atom_tol: float) -> np.ndarray:
    """The eigenvalues flattened and sorted, those within ``atom_tol * sigma``
    of an atom moved onto it."""
    x = np.sort(np.asarray(eigs, dtype=float).ravel())
    for loc, _ in law.atoms():
        x[np.abs(x - loc) <= atom_tol * law.sigma] = loc
    return np.sort(x)


def w1_to_law(eigs: ArrayLike, law: Law, atom_tol: float = 1e-8) -> float:
    """Wasserstein-1 distance ``int |F_n - F| dx`` between the empirical law of
    ``eigs`` (an array of any shape, flattened) and ``law``.  Eigenvalues within
    ``atom_tol * sigma`` of an atom are moved onto it (rounding turns exact
    zeros into +-1e-14).  ``F`` is linear between breakpoints (eigenvalues,
    edges, atoms and the panel points of the distribution function), on which
    ``int |c - F|`` is exact."""
    x = _snap(eigs, law, atom_tol)
    pts = [x, np.array([v for c in law.edges() for v in c] + [loc for loc, _ in law.atoms()])]
    grid = np.unique(np.concatenate(pts + [law.cdf_nodes]))
    jump = law.atom_cdf(grid)  # atoms <= left end
    cont = law.cdf(grid) - jump  # continuous part
    c = np.searchsorted(x, grid[:-1], side="right") / x.size - jump[:-1]
    du, dv = cont[:-1] - c, cont[1:] - c
    width = np.diff(grid)
    same = du * dv >= 0
    area = np.where(
        same, (np.abs(du) + np.abs(dv)) / 2, (du**2 + dv**2) / (2 * np.where(same, 1, np.abs(du) + np.abs(dv)))
    )
    return float(np.sum(width * area))


def ks_to_law(eigs: ArrayLike, law: Law, atom_tol: float = 1e-8) -> float:
    """Kolmogorov-Smirnov distance ``sup_x |F_n(x) - F(x)|`` (left and right
    limits at every eigenvalue and atom); ``eigs`` of any shape, flattened;
    ``atom_tol`` as in :func:`w1_to_law`."""
    x = _snap(eigs, law, atom_tol)
    pts = np.unique(np.concatenate([x, [loc for loc, _ in law.atoms()]]))
    right = law.cdf(pts)
    left = right - law.point_mass(pts)
    fn_right = np.searchsorted(x, pts, side="right") / x.size
    fn_left = np.searchsorted(x, pts, side="left") / x.size
    return float(max(np.abs(fn_right - right).max(), np.abs(fn_left - left).max()))


def distances_to_law(spectra: ArrayLike, law: Law, atom_tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """Per seed, the relative W1 and the KS distance from a spectrum to a law.

    ``spectra`` has shape ``(seeds, n)`` (one spectrum per row); returns two
    arrays of shape ``(seeds,)``: ``w1_to_law(row, law) / m_1(law)`` (W1 in units
    of the law's mean) and ``ks_to_law(row, law)``; ``atom_tol`` as in
    :func:`w1_to_law`.
    """
    m1 = law.moments(1)[0]
    rows = np.asarray(spectra, dtype=float).reshape(-1, np.shape(spectra)[-1])
    w = np.array([w1_to_law(e, law, atom_tol) for e in rows]) / m1
    k = np.array([ks_to_law(e, law, atom_tol) for e in rows])
    return w, k


@dataclasses.dataclass(frozen=True)
class ToLaw:
    """Per seed (arrays of shape ``(seeds,)``), a spectrum against a law (:func:`~gelib.freeprob.shape_to_law`).

    ``w1``: ``W1 / m_1(law)``; ``ks``: the KS distance; ``shift``: ``s - 1`` with
    ``s = mean(spectrum) / m_1(law)``; ``shape``: ``W1(spectrum, s law) / m_1(law)``, the
    distance once the mean is matched.
    """

    w1: np.ndarray
    ks: np.ndarray
    shift: np.ndarray
    shape: np.ndarray

    def sandwiched(self, tol: float = 1e-6) -> bool:
        """Whether ``|shift| <= w1 <= |shift| + shape`` (within ``tol``) for every seed.

        A certainty for nonnegative spectra: W1 is at least the gap of the means, and
        ``W1(law, s law) = |s - 1| m_1`` with the triangle inequality gives the upper side;
        ``tol`` covers the law's numerical distribution function (about ``1e-6`` relative)."""
        gap = np.abs(self.shift)
        return bool(np.all(gap <= self.w1 + tol) and np.all(self.w1 <= gap + self.shape + tol))


def shape_to_law(spectra: ArrayLike, law: Law, atom_tol: float = 1e-8) -> ToLaw:
    """:func:`distances_to_law` with the relative W1 split into the mean shift and the shape part.

    ``spectra`` has shape ``(seeds, n)``. A law rescaled by ``s`` has
    ``W1(e, s law) = s W1(e / s, law)``, so the shape part is ``s w1_to_law(e / s, law) / m_1``
    with ``s = mean(e) / m_1`` per seed (the law's own distribution function, no rescaled
    law is built). Returns a :class:`~gelib.freeprob.ToLaw`; :meth:`~gelib.freeprob.ToLaw.sandwiched` is the certainty
    ``|s - 1| <= W1 / m_1 <= |s - 1| + shape``.
    """
    rows = np.asarray(spectra, dtype=float).reshape(-1, np.shape(spectra)[-1])
    w, k = distances_to_law(rows, law, atom_tol)
    m1 = law.moments(1)[0]
    s = rows.mean(axis=1) / m1
    shape = np.array([si * w1_to_law(e / si, law, atom_tol) for e, si in zip(rows, s)]) / m1
    return ToLaw(w, k, s - 1, shape)


def law_w1(a: Law, b: Law, scale_a: float = 1.0, scale_b: float = 1.0, num: int = 4001) -> float:
    """Wasserstein-1 distance between two laws, each divided by a scale.

    For ``X ~ a`` and ``Y ~ b`` this is ``W1(law of X / scale_a, law of Y / scale_b)``,
    ``W1 = int |F_a(scale_a x) - F_b(scale_b x)| dx``,

    by the trapezoid rule on ``num`` equispaced points over the union of both
    (scaled) supports, joined with the scaled edges, atoms and 200 interior
    points of each law (:meth:`~gelib.freeprob.Law.grid`). With the laws' means as scales it
    measures a change of *shape* free of the scale. The rule's error at a jump
    (an atom) is of order ``mass x grid step``; between two laws with atoms at
    the same place, and for the continuous parts, it is ``~1e-6`` relative
    for the laws of this book.
    """
    pts: list[np.ndarray] | np.ndarray = [
        np.array([v for e in law.edges() for v in e] + [x for x, _ in law.atoms()] + list(law.grid(200))) / sc
        for law, sc in ((a, scale_a), (b, scale_b))
    ]
    pts = np.concatenate(pts)
    x = np.union1d(np.linspace(pts.min(), pts.max(), num), pts)
    return float(np.trapezoid(np.abs(a.cdf(scale_a * x) - b.cdf(scale_b * x)), x))
