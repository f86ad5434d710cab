"""Spectra and distances."""

import math

import jax
import numpy as np
import pytest
import scipy.stats

from gelib import AttentionConfig
from gelib import spectra as S


def test_w1_and_ks_against_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.gamma(2.0, size=(3, 57)), rng.normal(2.0, 1.0, size=(3, 57))
    for i in range(3):
        assert S.w1(a[i], b[i]) == pytest.approx(scipy.stats.wasserstein_distance(a[i], b[i]), rel=1e-12)
        assert S.ks(a[i], b[i]) == pytest.approx(scipy.stats.ks_2samp(a[i], b[i]).statistic, rel=1e-12)
    np.testing.assert_allclose(S.ks(a, b), [scipy.stats.ks_2samp(x, y).statistic for x, y in zip(a, b)])
    assert S.rel_w1(a[0], b[0]) == pytest.approx(S.w1(a[0], b[0]) / b[0].mean())


def test_shape_w1_brackets_the_relative_w1():
    rng = np.random.default_rng(1)
    a, b = rng.gamma(2.0, size=(4, 64)), rng.gamma(2.5, size=(4, 64))
    shift = a.mean(axis=1) / b.mean(axis=1) - 1
    shape = S.shape_w1(a, b)
    for i in range(4):  # against scipy on the rescaled reference
        ref = b[i] * (1 + shift[i])
        assert shape[i] == pytest.approx(scipy.stats.wasserstein_distance(a[i], ref) / b[i].mean(), rel=1e-12)
    rel = S.rel_w1(a, b)
    assert np.all(np.abs(shift) <= rel + 1e-15) and np.all(rel <= np.abs(shift) + shape + 1e-15)
    # a pure rescaling has no shape: the relative W1 is then the shift alone
    np.testing.assert_allclose(S.shape_w1(1.07 * b, b), 0, atol=1e-15)
    np.testing.assert_allclose(S.rel_w1(1.07 * b, b), 0.07, rtol=1e-12)


def test_summary_is_the_student_t_interval():
    v = np.array([0.3, 0.5, 0.2, 0.9, 0.4])
    s = S.summarize(v)
    lo, hi = scipy.stats.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=scipy.stats.sem(v))
    assert s.mean == pytest.approx(v.mean())
    assert s.ci95 == pytest.approx((hi - lo) / 2)
    assert math.isnan(S.summarize([1.0]).ci95)


def test_eigvals_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 9, 9))
    c = a @ a.transpose(0, 2, 1)
    np.testing.assert_allclose(S.eigvals(c), np.linalg.eigvalsh(c), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(S.eigvals(c[0]), np.linalg.eigvalsh(c[0]), rtol=1e-10, atol=1e-12)


CFG = AttentionConfig(n=29, d=41, h=3, d_k=7, d_v=5, d_o=23)


def test_same_key_same_spectra_and_more_seeds_extend_fewer():
    a = S.model_spectra(jax.random.key(3), CFG, ("mha", "yg"), seeds=2, progress=False)
    b = S.model_spectra(jax.random.key(3), CFG, ("mha", "yg"), seeds=3, progress=False)
    c = S.model_spectra(jax.random.key(4), CFG, ("mha", "yg"), seeds=2, progress=False)
    for m in ("mha", "yg"):
        assert a[m].shape == (2, CFG.n)
        np.testing.assert_array_equal(a[m], b[m][:2])
        assert not np.allclose(a[m], c[m])
        assert np.all(np.diff(a[m], axis=1) >= 0)


def test_gaussian_equivalent_mean_eigenvalue_is_unbiased():
    # For Y^G, E tr(Y Y^T) / n^2 = (e^{beta^2} - 1) d_o / n exactly, at any n:
    # test the per-seed means against it with a t bound.
    cfg = CFG.replace(beta=0.8)
    ev = S.model_spectra(jax.random.key(5), cfg, ("yg",), seeds=30, progress=False)["yg"]
    m = ev.mean(axis=1)
    assert abs(m.mean() - cfg.first_moment) < 4 * m.std(ddof=1) / math.sqrt(m.size)


def test_mha_is_close_to_its_gaussian_equivalent_and_closer_at_larger_n():
    # Gaussian equivalence at finite size: at fixed ratios (d = 1.5 n,
    # d_k = n / 8, h = 4) the relative W1 shrinks at least like n^{-1/2}
    # (it was seen near n^{-0.75} here); 4n gives at most half the distance.
    rel = []
    for n in (64, 256):
        cfg = AttentionConfig(n=n, d=3 * n // 2, h=4, d_k=n // 8)
        rel.append(S.compare(jax.random.key(n), cfg, seeds=4, progress=False).rel_w1.mean())
    assert rel[1] < 0.5 * rel[0], rel


def test_compare_needs_two_different_models():
    with pytest.raises(ValueError, match="two different models"):
        S.compare(jax.random.key(0), CFG, ("mha", "mha"), seeds=1)


SHARDED = """
import json, sys, jax, gelib
from gelib import AttentionConfig, spectra
cfg = AttentionConfig(n=29, d=41, h=3, h_kv=1, d_k=7, d_v=5, d_o=23)
out = spectra.model_spectra(jax.random.key(3), cfg, ("mha", "yg"), seeds=5, progress=False)
print(json.dumps({"devices": jax.local_device_count(), **{m: v.tolist() for m, v in out.items()}}))
"""


def test_seeds_sharded_over_devices_give_the_single_device_result():
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    sharded = json.loads(res.stdout)
    assert sharded["devices"] == 2  # 5 seeds: two full chunks and a padded one
    cfg = AttentionConfig(n=29, d=41, h=3, h_kv=1, d_k=7, d_v=5, d_o=23)
    single = S.model_spectra(jax.random.key(3), cfg, ("mha", "yg"), seeds=5, progress=False, devices=1)
    for m in ("mha", "yg"):
        np.testing.assert_allclose(sharded[m], single[m], rtol=1e-12, atol=1e-13)


def test_float32_models_agree_with_float64_far_below_the_distances_measured():
    from gelib.models import build_all
    from gelib.sampling import sample_fast

    cfg = AttentionConfig(n=48, d=64, h=4, d_k=8, d_o=40)
    draw = sample_fast(jax.random.key(6), cfg)
    cfg32 = cfg.replace(dtype="float32")
    draw32 = type(draw)(*(a.astype(np.float32) for a in draw))
    noise = jax.random.key(7)
    ev64 = S.eigvals(S.gram(build_all(("mha", "yf"), draw, cfg, key=noise)))
    ev32 = S.eigvals(S.gram(build_all(("mha", "yf"), draw32, cfg32, key=noise).astype(np.float64)))
    scale = ev64.max()
    # float32 rounding (eps 1.2e-7) amplified by sums over n and d_o terms
    assert np.max(np.abs(ev32 - ev64)) < 1e-5 * scale
    assert np.max(np.abs(ev32 - ev64)) < 1e-3 * S.w1(ev64[0], ev64[1])


def test_round_off_zeros_are_exact_zeros():
    # d_o < n: n - d_o eigenvalues are exactly zero; KS between two such spectra
    # must not count the random order of their round-off.
    cfg = AttentionConfig(n=31, d=41, h=2, d_k=5, d_v=6, d_o=7)
    ev = S.model_spectra(jax.random.key(2), cfg, ("yf", "yf_ring"), seeds=1, progress=False)
    for m in ("yf", "yf_ring"):
        assert np.sum(ev[m][0] == 0.0) == cfg.n - cfg.d_o
    # a rank <= 2h change of Y Y^T moves at most 2h eigenvalues' worth of the CDF
    assert S.ks(ev["yf"][0], ev["yf_ring"][0]) <= 2 * cfg.h / cfg.n


@pytest.mark.parametrize("p, d_o", [(30, 40), (30, 11), (10, 12)], ids=["qr-bartlett", "qr-gaussian", "bartlett"])
def test_reduced_output_grams_have_the_law_of_the_direct_ones(p, d_o):
    # U fixed (m = 2 models, n = 7): the only randomness is W^O.
    # Exact mean E[Y_i Y_i^T / n] = (d_o / p) U_i U_i^T / n for both methods;
    # joint statistics (tr G_1^2, tr G_1 G_2) agree between methods (z test).
    m, n, reps = 2, 7, 3000
    u = jax.random.normal(jax.random.key(20), (m, n, p))
    keys = jax.random.split(jax.random.key(21), reps)
    direct = jax.vmap(lambda k: S.direct_output_grams(u, jax.random.normal(k, (p, d_o)) / math.sqrt(p)))(keys)
    reduced = jax.vmap(lambda k: S.reduced_output_grams(k, u, d_o))(jax.random.split(jax.random.key(22), reps))
    exact = (d_o / p) * np.asarray(u @ np.swapaxes(u, 1, 2)) / n
    for g in (np.asarray(direct), np.asarray(reduced)):
        se = g.std(axis=0, ddof=1) / math.sqrt(reps)
        assert np.all(np.abs(g.mean(axis=0) - exact) < 4.5 * se)

    def stats(g):
        return np.stack([np.einsum("tij,tji->t", g[:, 0], g[:, 0]), np.einsum("tij,tji->t", g[:, 0], g[:, 1])], 1)

    a, b = stats(np.asarray(direct)), stats(np.asarray(reduced))
    se = np.sqrt(a.var(0, ddof=1) / reps + b.var(0, ddof=1) / reps)
    assert np.all(np.abs(a.mean(0) - b.mean(0)) < 4 * se), (a.mean(0), b.mean(0), se)


def test_the_reduction_is_used_only_where_it_pays():
    from gelib import preset_config

    assert S.output_route(preset_config("gpt3-175b"), 2) == "qr"
    assert S.output_route(preset_config("bert-base"), 2) == "direct"  # d_o = h d_v in a small layer
    assert S.output_route(preset_config("bert-base").replace(d_o=1152), 2) == "bartlett"
    assert S.output_route(preset_config("bert-base").replace(d_o=1151), 2) == "direct"
    # d_o = h d_v in a big layer: Bartlett's route, the flops of the direct one, a triangular product on the host
    for name in ("falcon-7b", "llada-8b", "llama3-8b"):
        cfg = preset_config(name)
        assert S.output_route(cfg, 2) == "bartlett", name
        assert S.output_flops(cfg, 2)["bartlett"] == S.output_flops(cfg, 2)["direct"]
    assert S.output_route(preset_config("llada-8b").replace(d_o=4095), 2) == "direct"  # d_o < h d_v
    for name in ("bert-base", "gpt3-175b", "llama3-8b", "falcon-7b"):
        cfg = preset_config(name)
        flops = S.output_flops(cfg, 2)
        assert flops[S.output_route(cfg, 2)] <= flops["direct"], name
    with pytest.raises(ValueError, match="m n <= p or d_o >= p"):
        S.reduced_output_grams(jax.random.key(0), jax.numpy.ones((2, 5, 8)), 4)


def test_one_compilation_serves_every_beta_and_matches_the_static_build():
    # beta is traced in the spectra path: a new beta does not recompile, and the
    # Gram matrices equal those of models.build_all with beta static.
    from gelib import models as M
    from gelib.sampling import sample

    cfg = CFG.replace(n=17, d_o=11)  # d_o < h d_v: the direct route, through W^O
    models = ("mha", "yf_ring", "yg_sigma_f", "yg")
    assert S.output_route(cfg, len(models)) == "direct"
    S._grams(jax.random.key(30), cfg, models, "fast")
    before = S._grams_at._cache_size()
    for beta in (0.4, 1.3):
        c = cfg.replace(beta=beta)
        key = jax.random.key(31)
        got = np.asarray(S._grams(key, c, models, "fast"))
        draw_key, noise_key = jax.random.split(key)
        y = M.build_all(models, sample(draw_key, c, "fast"), c, key=noise_key)
        np.testing.assert_allclose(got, np.asarray(S.gram(y)), rtol=1e-10, atol=1e-12)
    assert S._grams_at._cache_size() == before
    # Sigma_f exists for every beta (a covariance given the keys): beta^2 / d_k = 0.57 builds, finite
    assert np.all(np.isfinite(np.asarray(S._grams(key, cfg.replace(beta=2.0, d_k=7), models, "fast"))))


def test_spectrum_sets_exact_zeros_to_zero():
    rng = np.random.default_rng(3)
    y = rng.normal(size=(2, 9, 4))  # rank 4 < n = 9: five exact zeros per seed
    ev = S.spectrum(y)
    assert ev.shape == (2, 9)
    assert np.all(ev[:, :5] == 0.0) and np.all(ev[:, 5:] > 0)
    np.testing.assert_allclose(ev[:, 5:], np.linalg.eigvalsh(np.swapaxes(y, 1, 2) @ y / 9), rtol=1e-10)


@pytest.mark.parametrize("n, d_k", [(2048, 32), (256, 512)])
def test_mean_shift_against_the_softmax_rows(n, d_k):
    """b(n, d_k) against Monte Carlo of E[n |a_i|^2 - 1] / (e^{beta^2} - 1) - 1 over softmax
    rows a_i (the mean eigenvalue of the MHA over V and W^O, relative to Y^G's); the
    remainder allowed is the proposition's O(d_k^-2 + (n d_k)^-1 + n^-2) with the
    constants of the finite-size chapter."""
    beta = 1.0
    reps = 6
    vals = []
    for r in range(reps):
        kq, kk = jax.random.split(jax.random.key(100 + r))
        q = jax.random.normal(kq, (n, d_k))
        k = jax.random.normal(kk, (n, d_k))
        a = jax.nn.softmax(beta * q @ k.T / math.sqrt(d_k), axis=-1)
        vals.append(np.asarray(n * jax.numpy.sum(a**2, axis=-1) - 1))
    per_rep = np.array([v.mean() for v in vals]) / math.expm1(beta**2) - 1  # independent draws
    se = per_rep.std(ddof=1) / math.sqrt(reps)
    b = S.mean_shift(n, d_k, beta)
    remainder = 3 / d_k**2 + 200 / (n * d_k) + 400 / n**2
    assert abs(per_rep.mean() - b) < 4 * se + remainder, (per_rep.mean(), b, se, remainder)
    assert abs(b) > 2 * remainder  # the check has power: the shift is well above what it allows


def test_estimate_seconds_is_the_floor_of_the_layers_flops_and_eigensolves():
    cfg = AttentionConfig(n=2048, d=4544, h=71, h_kv=1, d_k=64)
    f = S.seed_flops(cfg)
    rates = (5e10, 0.25)  # 50 GFLOP/s, a 1024 x 1024 eigensolve in 0.25 s
    want = 3 * ((f["attention"] + f["output"]) / 5e10 + 2 * 0.25 * 2**3)
    assert S.estimate_seconds(cfg, 3, rates) == pytest.approx(want, rel=1e-12)
    rate, eig = S.machine_rates()
    assert rate > 1e8 and 0 < eig < 60
    assert S.machine_rates().busy is None or "looked busy" in S.machine_rates().busy


def test_machine_rates_keep_the_fastest_timing_so_a_moment_of_load_does_not_count(monkeypatch):
    """A clock that the timed call advances: a loaded round (10x slower) among quick ones
    changes neither the best timing nor, past three agreeing rounds, the number of rounds."""
    import time

    clock, durations = [0.0], iter([1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1])
    monkeypatch.setattr(time, "perf_counter", lambda: clock[0])

    def run():
        clock[0] += next(durations)

    best, median = S._best_of(run, rounds=7, budget=100.0)
    assert best == pytest.approx(0.1) and median == pytest.approx(0.1)
    clock[0], durations = 0.0, iter([0.1, 5.0, 5.0, 5.0, 5.0])  # a machine busy after the first round
    best, median = S._best_of(run, rounds=5, budget=100.0)
    assert best == pytest.approx(0.1) and median == pytest.approx(5.0)
