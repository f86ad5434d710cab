"""Distances between an empirical spectrum and a law: Wasserstein-1 and Kolmogorov-Smirnov.

Both are exact given the law's distribution function (no binning, no
sampling of the law): W1 integrates ``|F_n - F|`` piecewise between the
eigenvalues, the edges, the atoms and the nodes of the distribution
function's panels (:attr:`~gelib.freeprob.Law.cdf_nodes`); KS compares left
and right limits at every eigenvalue and atom.  Only public members of
:class:`~gelib.freeprob.Law` are used.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .law import Law

__all__ = ["w1_to_law", "ks_to_law"]


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
    jump = law.atom_cdf(grid)                                         # atoms <= left end
    cont = law.cdf(grid) - jump                                       # continuous part
    c = np.searchsorted(x, grid[:-1], side="right") / x.size - jump[:-1]
    du, dv = cont[:-1] - c, cont[1:] - c
    width = np.diff(grid)
    same = du * dv >= 0
    area = np.where(same, (np.abs(du) + np.abs(dv)) / 2,
                    (du**2 + dv**2) / (2 * np.where(same, 1, np.abs(du) + np.abs(dv))))
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
