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
from numpy.typing import ArrayLike

__all__ = ["compress_moments", "affine_moments", "s_transform_series"]


def compress_moments(m_a: np.ndarray, lam: float) -> np.ndarray:
    """Moments of B = G^T A G / m from those of A: solve the power series
    identity psi_B(z) = lam psi_A(z (1 + psi_B(z))) order by order.

    ``m_a`` holds ``m_1 .. m_k`` of A (shape ``(k,)``); the result holds
    ``m_1 .. m_k`` of B (shape ``(k,)``)."""
    k = len(m_a)
    psi_b = np.zeros(k + 1)
    for _ in range(k):  # each pass fixes one more order
        w = np.concatenate([[0.0, 1.0], psi_b[1:k]])  # z (1 + psi_B(z))
        comp = np.zeros(k + 1)  # Horner: psi_A(w) = w (m1 + w (m2 + ...))
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
    return np.array([sum(math.comb(j, i) * a**i * b ** (j - i) * m0[i] for i in range(j + 1)) for j in range(1, k + 1)])


def s_transform_series(moments: ArrayLike) -> np.ndarray:
    """Taylor coefficients ``s_0, ..., s_{K-1}`` of the S-transform at ``u = 0``
    from the moments ``m_1, ..., m_K`` (shape ``(K,)``, ``m_1 != 0``).

    With ``psi(z) = sum_k m_k z^k`` and ``chi = psi^{-1}``, the series of
    ``chi(u) = sum_j c_j u^j`` is found order by order from
    ``psi(chi(u)) = u`` (``c_1 = 1/m_1``), and then
    ``S(u) = chi(u) (1 + u) / u``, so ``s_j = c_{j+1} + c_j`` (``c_0 = 0``).
    Exact moment algebra: no Stieltjes transform is evaluated. Returns shape ``(K,)``.
    """
    moments = np.asarray(moments, dtype=float)
    K = len(moments)
    psi = np.concatenate([[0.0], moments])  # psi[k] = m_k
    chi = np.zeros(K + 1)
    chi[1] = 1 / moments[0]
    for order in range(2, K + 1):  # fix the u^order coefficient of psi(chi(u))
        comp, power = np.zeros(K + 1), np.zeros(K + 1)
        power[0] = 1.0
        for k in range(1, K + 1):
            power = np.convolve(power, chi)[: K + 1]
            comp += psi[k] * power
        chi[order] = -comp[order] / moments[0]
    return chi[1:] + np.concatenate([[0.0], chi[1:K]])  # coefficients of chi(u)(1+u)/u
