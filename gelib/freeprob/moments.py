"""Exact moment algebra: the moments of a compression and of an affine image.

A compression ``B = G^T A G / m`` (``lam = p / m``) acts on the moment
generating series ``psi(z) = sum_k m_k z^k`` by the power-series identity
``psi_B(z) = lam psi_A(z (1 + psi_B(z)))``, solved here order by order; an
affine map ``x -> a x + b`` acts by the binomial formula.  Both are exact
(no quadrature, no solver), so the moments of every law are exact.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["compress_moments", "affine_moments"]


def compress_moments(m_a: np.ndarray, lam: float) -> np.ndarray:
    """Moments of B = G^T A G / m from those of A: solve the power series
    identity psi_B(z) = lam psi_A(z (1 + psi_B(z))) order by order.

    ``m_a`` holds ``m_1 .. m_k`` of A (shape ``(k,)``); the result holds
    ``m_1 .. m_k`` of B (shape ``(k,)``)."""
    k = len(m_a)
    psi_b = np.zeros(k + 1)
    for _ in range(k):                       # each pass fixes one more order
        w = np.concatenate([[0.0, 1.0], psi_b[1:k]])      # z (1 + psi_B(z))
        comp = np.zeros(k + 1)               # Horner: psi_A(w) = w (m1 + w (m2 + ...))
        for mj in m_a[::-1]:
            comp[0] += mj
            comp = np.convolve(comp, w)[: k + 1]
        psi_b = lam * comp
    return psi_b[1:]


def affine_moments(m: np.ndarray, a: float, b: float) -> np.ndarray:
    """Moments of ``a X + b`` from those of ``X``: ``m_j' = sum_i C(j, i) a^i b^(j-i) m_i``
    (``m_0 = 1``); ``m`` and the result have shape ``(k,)`` (``m_1 .. m_k``)."""
    k = len(m)
    m0 = np.concatenate([[1.0], m])
    return np.array([sum(math.comb(j, i) * a**i * b ** (j - i) * m0[i] for i in range(j + 1))
                     for j in range(1, k + 1)])
