"""The chain of compressions, simulated: the matrix of every level from one draw.

:mod:`gelib.law` builds the limit law of ``Y^G Y^{G T} / n`` as a chain of
free compressions (Table A.4); here the same chain is formed from one draw
of ``K, V, W^O`` (a :class:`gelib.sampling.Draw`), level by level, so that
each level's eigenvalues can be laid against its law:

* ``"W"``: ``K_g K_g^T / d_K`` (``n x n``), Marchenko-Pastur with ratio ``n / d_K``;
* ``"T"``: ``T_g = beta^2 K_g K_g^T / d_K + alpha^2 I_n``, an affine image of ``W``;
* ``"mu_V"``: ``M_g = V_g^T T_g V_g / n`` (``d_V x d_V``), once per query head
  (a key/value group shared by several heads counts once per head);
* ``"mu_VO"``: ``Sigma = W^{O T} blockdiag(M_{g(1)}, ..., M_{g(h)}) W^O`` (``d_O x d_O``);
* ``"out"``: ``Y Y^T / n`` with ``Y = G Sigma^{1/2}`` (``n x d_O``, ``G`` i.i.d.
  ``N(0, 1)``): the rows of ``Y^G`` given ``K, V, W^O``.

The queries drop out on the way (see the limit-law chapter): given ``K``,
the rows of ``(beta S_r + alpha Z_r) / sqrt(n)`` are Gaussian with covariance
``T_{g(r)} / n``, independent across heads. Computed in NumPy ``float64``.
"""

from __future__ import annotations

import jax
import numpy as np

from .config import AttentionConfig
from .sampling import Draw

__all__ = ["LEVELS", "level_spectra"]

LEVELS: tuple[str, ...] = ("W", "T", "mu_V", "mu_VO", "out")
"""The names of the levels, from the keys' Gram matrix to the output."""


def level_spectra(key: jax.Array, draw: Draw, cfg: AttentionConfig, groups: int = 2) -> dict[str, np.ndarray]:
    """Eigenvalues (ascending within each matrix) of every level of the chain from one draw.

    Returns ``{name: array}`` for the names in :data:`LEVELS`: ``"W"`` and
    ``"T"`` of the first ``groups`` key/value groups, concatenated (shape
    ``(min(groups, h_kv) n,)``); ``"mu_V"`` of the ``h`` blocks ``M_{g(r)}``
    (``(h d_V,)``); ``"mu_VO"`` of ``Sigma`` (``(d_O,)``); ``"out"`` of
    ``Y Y^T / n`` (``(n,)``), ``Y = G Sigma^{1/2}`` with ``G`` drawn from
    ``key``. ``draw`` must be a draw of ``cfg`` (``q`` is not used).
    """
    k, v, w_o = (np.asarray(a) for a in (draw.k, draw.v, draw.w_o))
    eig_w, m = [], []
    for g_ in range(cfg.h_kv):
        kk = k[g_] @ k[g_].T / cfg.d_k  # W = K K^T / d_K
        t = cfg.beta**2 * kk + cfg.alpha2 * np.eye(cfg.n)  # T
        m.append(v[g_].T @ t @ v[g_] / cfg.n)  # M = V^T T V / n
        if g_ < groups:
            eig_w.append(np.linalg.eigvalsh(kk))
    eig_w = np.concatenate(eig_w)
    group = np.arange(cfg.h) // cfg.group_size
    w_flat = w_o.reshape(cfg.h * cfg.d_v, cfg.d_o)  # W^O, (h d_v, d_o)
    block = np.zeros((cfg.h * cfg.d_v,) * 2)
    for r, g_ in enumerate(group):
        block[r * cfg.d_v : (r + 1) * cfg.d_v, r * cfg.d_v : (r + 1) * cfg.d_v] = m[g_]
    sigma = w_flat.T @ block @ w_flat  # (d_o, d_o)
    ev, basis = np.linalg.eigh(sigma)
    root = (basis * np.sqrt(np.clip(ev, 0, None))) @ basis.T
    g = np.asarray(jax.random.normal(key, (cfg.n, cfg.d_o)))
    y = g @ root  # rows N(0, Sigma)
    return {
        "W": eig_w,
        "T": cfg.beta**2 * eig_w + cfg.alpha2,  # T is an affine image of W
        "mu_V": np.concatenate([np.linalg.eigvalsh(m[g_]) for g_ in group]),
        "mu_VO": ev,
        "out": np.linalg.eigvalsh(y @ y.T / cfg.n),
    }
