"""The simulated chain (gelib.attention_law) against its definition formed independently."""

import math

import jax
import numpy as np
import pytest

from gelib import AttentionConfig
from gelib.attention_law import LEVELS, level_spectra
from gelib.keys import stream
from gelib.sampling import sample_fast

CFG = AttentionConfig(n=48, d=48, h=4, h_kv=2, d_k=12, d_v=8, d_o=40, beta=0.9)  # GQA, h d_v < n


@pytest.fixture(scope="module")
def drawn():
    draw = sample_fast(jax.random.key(0), CFG)
    return draw, level_spectra(jax.random.key(1), draw, CFG)


def _blocks(draw):
    """M_g = V_g^T (beta^2 K_g K_g^T / d_k + alpha^2 I) V_g / n, one per group, by einsum."""
    b2 = CFG.beta**2
    a2 = math.expm1(b2) - b2
    k, v = np.asarray(draw.k), np.asarray(draw.v)
    kv = np.einsum("gnk,gnv->gkv", k, v)  # K^T V
    return b2 / CFG.d_k * np.einsum("gkv,gkw->gvw", kv, kv) / CFG.n + a2 * np.einsum("gnv,gnw->gvw", v, v) / CFG.n


def test_shapes_and_names(drawn):
    _, lv = drawn
    assert tuple(lv) == LEVELS
    assert [lv[name].shape for name in LEVELS] == [(2 * CFG.n,), (2 * CFG.n,), (CFG.h * CFG.d_v,), (CFG.d_o,), (CFG.n,)]


def test_key_levels(drawn):
    draw, lv = drawn
    k = np.asarray(draw.k)
    want = np.concatenate([np.linalg.eigvalsh(k[g] @ k[g].T / CFG.d_k) for g in range(CFG.h_kv)])
    np.testing.assert_allclose(lv["W"], want, atol=1e-12)
    assert np.sum(np.abs(lv["W"]) < 1e-10) == CFG.h_kv * (CFG.n - CFG.d_k)  # rank d_k
    np.testing.assert_allclose(lv["T"], CFG.beta**2 * want + math.expm1(CFG.beta**2) - CFG.beta**2, atol=1e-12)


def test_value_blocks_repeat_per_head(drawn):
    draw, lv = drawn
    m = _blocks(draw)
    per_group = [np.linalg.eigvalsh(m[g]) for g in range(CFG.h_kv)]
    want = np.concatenate([per_group[r // CFG.group_size] for r in range(CFG.h)])
    np.testing.assert_allclose(lv["mu_V"], want, rtol=1e-10)


def test_sigma_is_the_sum_over_heads(drawn):
    draw, lv = drawn
    m, w_o = _blocks(draw), np.asarray(draw.w_o)
    sigma = sum(w_o[r].T @ m[r // CFG.group_size] @ w_o[r] for r in range(CFG.h))
    np.testing.assert_allclose(lv["mu_VO"], np.linalg.eigvalsh(sigma), rtol=1e-9, atol=1e-12)


def test_output_rank_and_mean_over_keys(drawn):
    draw, lv = drawn
    sigma_ev = lv["mu_VO"]
    rank = CFG.h * CFG.d_v  # Sigma has rank h d_v < n
    assert np.sum(lv["out"] > 1e-10 * lv["out"].max()) == rank
    # E (1/n) tr(Y Y^T / n) = tr(Sigma) / n; one draw's variance is 2 tr(Sigma^2) / n^3
    means = [level_spectra(stream(0, "rows", i), draw, CFG)["out"].mean() for i in range(40)]
    sd = math.sqrt(2 * np.sum(sigma_ev**2) / CFG.n**3 / len(means))
    assert abs(np.mean(means) - sigma_ev.sum() / CFG.n) < 4 * sd
    assert np.std(means, ddof=1) == pytest.approx(sd * math.sqrt(len(means)), rel=0.35)
