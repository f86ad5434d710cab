"""The limit spectral law of the centred multi-head output (the theory side).

Hayase and Karakida (2026) show that the spectrum of ``Y Y^T / n`` for the
centred multi-head output ``Y = sum_r sqrt(n) A_r^perp V_{g(r)} W^O_r``
(``n x d_O``) has the same limit as for the Gaussian-equivalent model
``Y^G = sum_r (beta S_r + alpha Z_r) / sqrt(n) V_{g(r)} W^O_r`` (Table 1),
when ``n, d_K, d_V, d_O -> infinity`` proportionally with ``h`` and ``beta``
fixed.  Given ``K, V, W^O`` the rows of ``Y^G`` are i.i.d. Gaussian with
covariance ``Sigma = sum_r W^O_r^T V_{g(r)}^T T_{g(r)} V_{g(r)} W^O_r / n``:
the rows of ``(beta S_r + alpha Z_r) / sqrt(n)`` are independent across heads,
with covariance ``T_{g(r)} / n``, ``T_g = beta^2 K_g K_g^T / d_K + alpha^2 I_n``
(derived in the book's appendix "Conventions and derivations",
``book/conventions.md``).  So the limit is the end of a chain of free
compressions (Table A.4, Table A.5, Figure D.1):

1. ``W = K K^T / d_K`` (``n x n``): Marchenko-Pastur with ratio ``n / d_K``;
2. ``T = beta^2 W + alpha^2 I_n``, ``alpha^2 = e^{beta^2} - 1 - beta^2``;
3. ``M = V^T T V / n`` (``d_V x d_V``): compression with ``lam = n / d_V``,
   scaled by ``d_V / n``; its law is ``mu_V`` (:func:`value_law`);
4. ``Sigma = W^O^T blockdiag(M_1..M_h) W^O`` (``d_O x d_O``): compression with
   ``lam = h d_V / d_O`` scaled by ``d_O / (h d_V)``; law ``mu_VO``
   (:func:`output_covariance_law`);
5. ``Y Y^T / n`` (``n x n``): compression of ``Sigma`` with ``lam = d_O / n``
   (:func:`output_law`); mean ``(e^{beta^2} - 1) d_O / n``.

Across-head sharing (GQA, MQA: ``h_kv < h``) leaves the law unchanged: the
block diagonal of repeated blocks has the law of one block, and ``W^O`` is
rotation invariant; so ``h_kv`` appears nowhere below.  Within-head tying
``W^V = W^K`` changes it: ``M = K^T T K / n = beta^2 (n/d_K) W'^2 + alpha^2 W'``
with ``W' = K^T K / n`` Marchenko-Pastur with ratio ``d_K / n`` (a polynomial
push-forward), after which steps 4-5 continue.

Square steps (``h d_V = d_O``, or ``d_O = n``, or ``d_V = n``) give a hard
edge at 0: ``mu_VO`` of BERT-base or GPT-3 has density ``~ x^-1/2`` there, and
the output law of LLaDA-8B, ModernBERT-large, Llama-3-8B or Qwen2.5-7B
(``h d_V = d_O = n``, two square steps) ``~ x^-2/3``.

The generic machinery (laws, transforms, edges, distribution functions,
functionals, distances) lives in :mod:`gelib.freeprob`; import it from there.

*The chain simulated* (:func:`level_spectra`): the same chain is formed from one draw
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

import dataclasses
import math

import jax
import numpy as np

from .config import AttentionConfig
from .freeprob import Law, affine, compress, marchenko_pastur, polynomial, s_transform_series, scale
from .sampling import Draw

__all__ = [
    "Chain",
    "chain",
    "attention_law",
    "value_law",
    "output_covariance_law",
    "output_law",
    "closed_form_variances",
    "reduced_s_series",
    "LEVELS",
    "level_spectra",
    "LEVEL_TITLES",
]


def attention_law(cfg: AttentionConfig) -> Law:
    """Limit law of the squared singular values of one head's ``sqrt(n) A^perp``
    (``n x n``), the eigenvalues of ``Y Y^T`` for its Gaussian equivalent
    ``Y = (beta S + alpha Z) / sqrt(n)``: the predecessor's setting (Hayase,
    Collins and Karakida, one head, no value or output projection).

    Given ``K`` the rows of ``Y`` are i.i.d. ``N(0, T / n)``, ``T = beta^2 K K^T / d_K
    + alpha^2 I_n``, so ``Y Y^T`` is the compression of ``T`` with ratio 1. Mean
    ``e^{beta^2} - 1``; it depends on ``n``, ``d_K`` and ``beta`` only (``d``, ``h``,
    ``d_V``, ``d_O`` play no part). Its right edge exceeds the ``4 (e^{beta^2} - 1)``
    of the Marchenko-Pastur law with the same variance: the score part
    ``beta^2 K K^T / d_K`` is not a multiple of the identity.
    """
    kernel = affine(marchenko_pastur(cfg.n / cfg.d_k), cfg.beta**2, cfg.alpha2)
    return compress(kernel, 1.0)


def value_law(cfg: AttentionConfig) -> Law:
    """``mu_V``: limit law of ``M = V^T (beta^2 K K^T/d_K + alpha^2 I) V / n``
    (``d_V x d_V``), untied or K=V tied."""
    b2 = cfg.beta**2
    if cfg.tie_kv:
        return polynomial(marchenko_pastur(cfg.d_k / cfg.n), [0.0, cfg.alpha2, b2 * cfg.n / cfg.d_k])
    kernel = affine(marchenko_pastur(cfg.n / cfg.d_k), b2, cfg.alpha2)
    return scale(compress(kernel, cfg.n / cfg.d_v), cfg.d_v / cfg.n)


def output_covariance_law(cfg: AttentionConfig) -> Law:
    """``mu_VO``: limit law of the row covariance
    ``Sigma = W^O^T blockdiag(M_r) W^O`` (``d_O x d_O``)."""
    width = cfg.h * cfg.d_v
    return scale(compress(value_law(cfg), width / cfg.d_o), cfg.d_o / width)


def output_law(cfg: AttentionConfig) -> Law:
    """Limit law of the ``n`` eigenvalues of ``Y Y^T / n``
    (``Y = G Sigma^{1/2}``, ``G`` i.i.d. N(0, 1) ``n x d_O``)."""
    return compress(output_covariance_law(cfg), cfg.d_o / cfg.n)


@dataclasses.dataclass(frozen=True)
class Chain:
    """The laws along the chain: ``mu_V``, ``mu_VO`` and the output law."""

    value: Law
    output_covariance: Law
    output: Law


def chain(cfg: AttentionConfig) -> Chain:
    """``mu_V``, ``mu_VO`` and the output law of one layer (the same objects as
    :func:`value_law`, :func:`output_covariance_law`, :func:`output_law`
    return, so their supports and distribution functions are computed once)."""
    return Chain(value_law(cfg), output_covariance_law(cfg), output_law(cfg))


def closed_form_variances(cfg: AttentionConfig) -> tuple[float, float]:
    """The variances of ``mu_V`` and of the output law of an untied layer, in closed form.

    With ``s = e^{beta^2} - 1`` and ``rho = h d_V / n``, the moment map of one compression,
    ``(m_1, m_2) -> (lam m_1, lam m_2 + lam^2 m_1^2)``, applied along the chain gives
    ``Var mu_V = (d_V / n) (s^2 + beta^4 n / d_K)`` and
    ``Var mu_out = (d_O / n) s^2 + (d_O / n)^2 (s^2 + Var mu_V) / rho`` (the limit-law
    chapter's exercise). Returns ``(Var mu_V, Var mu_out)``; a tied layer raises
    :class:`ValueError` (its ``mu_V`` is not a compression of ``T``).
    """
    if cfg.tie_kv:
        raise ValueError("the closed-form variances hold for untied layers (tie_kv=False)")
    s, rho = math.expm1(cfg.beta**2), cfg.h * cfg.d_v / cfg.n
    var_v = cfg.d_v / cfg.n * (s**2 + cfg.beta**4 * cfg.n / cfg.d_k)
    var_out = cfg.d_o / cfg.n * s**2 + (cfg.d_o / cfg.n) ** 2 * (s**2 + var_v) / rho
    return var_v, var_out


def reduced_s_series(cfg: AttentionConfig, k: int = 8) -> np.ndarray:
    """The first ``k`` Taylor coefficients at ``u = 0`` of ``S_out(u) (d_O / n + u)``.

    ``S_out`` is the S-transform of the output law (:func:`gelib.freeprob.s_transform_series`
    of its ``k`` exact moments); the factor ``d_O / n + u`` undoes the last compression, so what
    is left depends on ``d_O`` not at all (the output width acts through that factor alone).
    Shape ``(k,)``.
    """
    series = s_transform_series(output_law(cfg).moments(k))
    return np.convolve(series, [cfg.d_o / cfg.n, 1.0])[:k]


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
    eig_w: list[np.ndarray] | np.ndarray  # the per-group eigenvalues, then joined
    g_: int | np.integer  # a group: from range, then from the array `group`
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


LEVEL_TITLES: dict[str, str] = {
    "W": "$K K^T / d_K$ (MP)",
    "T": r"$T = \beta^2 W + \alpha^2 I$",
    "mu_V": r"$\mu_V$: $V^T T V / n$",
    "mu_VO": r"$\mu_{VO}$: $\Sigma$",
    "out": r"output: $Y^G Y^{G T} / n$",
}
"""The name of every level of the chain (:data:`gelib.attention_law.LEVELS`) in tables and figures."""
