"""First-moment shifts along the chain of Table 1, in closed form (leading order).

The mean eigenvalue of ``Y Y^T / n`` is, after averaging over ``V`` and
``W^O`` (independent of the attention in an untied layer), ``d_O / n`` times
the mean energy ``E |row|^2`` of one row of the attention part, the same
factor for every model of the chain. Each model's row energy is explicit.
Given the query ``q``, the scores ``s_j = q . k_j / sqrt(d_K)`` are i.i.d.
``N(0, sigma^2)`` with ``sigma^2 = |q|^2 / d_K = 1 + t``, ``t ~ chi^2_{d_K} /
d_K - 1``. Write ``f(x) = exp(beta x - beta^2/2) - 1``, ``u = e^{beta^2}``,
``e_1 = u - 1``, and ``E e^{c t} = 1 + c^2 / d_K + O(d_K^-2)``:

* ``Y^G[Sigma_G]`` and ``Y^G``: exactly ``e_1 = beta^2 + alpha^2``;
* ``Y-ring^f`` and ``Y^G[Sigma_f]`` (same row covariance): ``E Var(f | sigma)
  = E[e^{beta^2 (1 + 2t)} - e^{beta^2 t}] = e_1 + beta^4 (4u - 1) / d_K``;
* ``Y^f``: ``E f^2 = E[e^{beta^2 (1 + 2t)} - 2 e^{beta^2 t / 2} + 1]
  = e_1 + beta^4 (4u - 1/2) / d_K``;
* ``sqrt(n) A^perp`` (MHA): its row is ``(f_j - fbar) / (1 + fbar) / sqrt(n)``
  (``fbar`` the row mean of ``f``, the softmax denominator's fluctuation), whose
  energy by the delta method is ``e^{beta^2 (1 + t)} - 1`` as ``n -> oo``,
  ``e_1 + u beta^4 / d_K`` on average, plus ``-u (2u - 1) e_1 / n`` from
  ``E[fbar^2]``, ``E[f_j^2 fbar] = E f^3 / n`` and ``E[f_j^2 fbar^2]`` (at
  ``sigma = 1``: ``E f^2 = e_1``, ``E f^3 = u^3 - 3u + 2``).

:func:`step_shifts` gives the relative shift of each step, earlier model over
later model minus one; they add up to :func:`gelib.spectra.mean_shift`, the
shift from MHA to ``Y^G``. Only the denominator replacement has a ``1/n``
term; the Gaussian-rows and query-substitution steps have none at all (their
row covariances are equal). The neglected orders are ``d_K^-2``, ``n^-2`` and
``(n d_K)^-1``.
"""

from __future__ import annotations

import math

__all__ = ["STEPS", "denominator_shift", "step_shifts"]

#: The steps of Table 1, in order, as ``(name, earlier model, later model)`` (model names of :mod:`gelib.models`).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("denominator", "mha", "yf"),
    ("centering", "yf", "yf_ring"),
    ("gaussian_rows", "yf_ring", "yg_sigma_f"),
    ("covariance", "yg_sigma_f", "yg_sigma_g"),
    ("query_substitution", "yg_sigma_g", "yg"),
)


def denominator_shift(n: float, d_k: float, beta: float = 1.0) -> float:
    """Leading-order relative shift of the mean eigenvalue from ``Y^f`` to ``sqrt(n) A^perp``.

    ``E m_MHA / E m_f - 1 = -beta^4 (3u - 1/2) / (e_1 d_K) - u (2u - 1) / n``,
    ``u = e^{beta^2}``, ``e_1 = u - 1``: about ``-(4.45 / d_K + 12.1 / n)`` at
    ``beta = 1``. The softmax denominator divides each row by ``1 + fbar``,
    which is correlated with the row's energy (through ``E f^3``, and through
    the query's norm): rows of large energy are shrunk most. Derivation in the
    module docstring; remainder ``O(d_K^-2 + n^-2 + (n d_K)^-1)``.
    """
    u = math.exp(beta**2)
    return beta**4 * (0.5 - 3 * u) / ((u - 1) * d_k) - u * (2 * u - 1) / n


def step_shifts(n: float, d_k: float, beta: float = 1.0) -> dict[str, float]:
    """Leading-order relative shift of the mean eigenvalue at each step of :data:`STEPS`
    (earlier model over later model, minus one), for an untied layer.

    ``denominator``: :func:`denominator_shift`; ``centering``:
    ``beta^4 / (2 e_1 d_K)``; ``gaussian_rows``: 0; ``covariance``:
    ``beta^4 (4u - 1) / (e_1 d_K)``; ``query_substitution``: 0. Their sum is
    :func:`gelib.spectra.mean_shift` ``= u (beta^4 / d_K - (2u - 1) e_1 / n) / e_1``
    to leading order.
    """
    u = math.exp(beta**2)
    e1 = u - 1
    return {
        "denominator": denominator_shift(n, d_k, beta),
        "centering": beta**4 / (2 * e1 * d_k),
        "gaussian_rows": 0.0,
        "covariance": beta**4 * (4 * u - 1) / (e1 * d_k),
        "query_substitution": 0.0,
    }
