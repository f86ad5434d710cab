"""The tables: the finite-size table (shrinking keeps the limit law, rows and their z-scores,
formatting) and the limit-law chapter's (W1 per level of the chain, moments against the law)."""

import math

import numpy as np
import pytest

from gelib import PRESETS, AttentionConfig
from gelib.freeprob import affine, marchenko_pastur
from gelib.law import output_law
from gelib.levels import LEVELS
from gelib.presets import TABLE2
from gelib.spectra import Comparison, ks, mean_shift, rel_w1, seed_flops, summarize
from gelib.tables import (
    HEADER,
    LEVEL_TITLES,
    empirical_moments,
    level_sizes,
    level_w1_table,
    markdown_table,
    mean_shifts,
    moment_table,
    row_seeds,
    shrink,
    table_row,
)


@pytest.mark.parametrize("name", ["bert-base", "llada-8b", "falcon-7b", "gpt3-175b"])
def test_shrink_keeps_the_limit_law(name):
    p = PRESETS[name]
    cfg, s = shrink(p, 256, 16)
    assert s > 1 and (cfg.n, cfg.d, cfg.d_k) == (p.n // s, p.d // s, p.d_k // s)
    assert (cfg.h, cfg.h_kv, cfg.d_v, cfg.d_o) == (p.h, p.h_kv, cfg.d_k, cfg.d)
    # the law depends on the ratios only: the shrunk row has the model's limit law
    assert output_law(cfg) == output_law(p.config())


def test_shrink_rules():
    # n = 2048, d_K = 64: n_max 256 needs s = 8 (d_K = 8); dk_min = 16 stops it at s = 4
    assert shrink(PRESETS["falcon-7b"], 256, 16)[1] == 4
    assert shrink(PRESETS["falcon-7b"], 256, 8)[1] == 8
    assert shrink(PRESETS["bert-base"], 256, 16)[1] == 2  # 512 -> 256
    assert shrink(PRESETS["dinov3-l16"], 128, 16)[1] == 1  # n = 261 is odd
    assert shrink(PRESETS["gpt3-175b"], None, 16) == (PRESETS["gpt3-175b"].config(), 1)
    assert shrink(PRESETS["bert-base"], 10**6, 16)[1] == 1


def _comparison(cfg, mha, yg):
    mha, yg = np.asarray(mha, float), np.asarray(yg, float)
    return Comparison(cfg, ("mha", "yg"), {"mha": mha, "yg": yg}, rel_w1(mha, yg), ks(mha, yg))


def test_mean_shifts_and_the_w1_lower_bound():
    rng = np.random.default_rng(0)
    yg = np.sort(rng.exponential(size=(5, 200)), axis=1)
    scales = np.array([1.0, 1.1, 0.9, 1.3, 1.02])
    res = _comparison(PRESETS["bert-base"].config(), yg * scales[:, None], yg)
    np.testing.assert_allclose(mean_shifts(res), scales - 1, rtol=1e-12, atol=1e-14)
    # a pure rescaling attains W1 = |difference of the means| exactly
    np.testing.assert_allclose(res.rel_w1, np.abs(scales - 1), rtol=1e-12, atol=1e-14)


def test_row_z_and_prediction():
    p = PRESETS["dinov3-l16"]
    cfg = p.config()
    rng = np.random.default_rng(1)
    yg = np.sort(rng.exponential(size=(4, cfg.n)), axis=1)
    factors = np.array([1.02, 1.03, 1.04, 1.03])  # relative W1 2, 3, 4, 3 %
    row = table_row(p.name, cfg, 1, _comparison(cfg, yg * factors[:, None], yg))
    rel = summarize(100 * (factors - 1))
    assert row.rel.mean == pytest.approx(rel.mean, rel=1e-9)
    pm, pc = p.paper_rel_w1
    assert row.z == pytest.approx((rel.mean - pm) / math.sqrt(rel.ci95**2 + pc**2), rel=1e-9)
    ks = summarize(row.res.ks)  # Table D.2's second column, the KS distance
    km, kc = p.paper_ks
    assert row.z_ks == pytest.approx((ks.mean - km) / math.sqrt(ks.ci95**2 + kc**2), rel=1e-9)
    assert row.shift_pred == pytest.approx(100 * mean_shift(cfg.n, cfg.d_k), rel=1e-12)
    assert row.shift.mean == pytest.approx(100 * (factors.mean() - 1), rel=1e-9)
    # a shrunk row of the paper and a row the paper does not have get no z
    assert table_row(p.name, cfg, 2, row.res).z is None
    assert table_row(p.name, cfg, 2, row.res).z_ks is None
    assert table_row("vit-b16", cfg, 1, row.res).z is None
    assert table_row("vit-b16", cfg, 1, row.res).z_ks is None


def test_paper_columns():
    """Both columns of Table D.2 for its six rows, none for the others."""
    assert len(TABLE2) == 6
    for name, p in PRESETS.items():
        assert (p.paper_rel_w1 is None) == (p.paper_ks is None) == (name not in TABLE2)
    assert PRESETS["bert-base"].paper_ks == (0.0109, 0.0010)


def test_row_seeds():
    """Fewer seeds exactly for the layers whose seed costs more than the limit."""
    small, big = PRESETS["bert-base"].config(), PRESETS["gpt3-175b"].config()
    assert seed_flops(small)["total"] < 1e10 < 5e11 < seed_flops(big)["total"]
    assert row_seeds(small, 10, 3, 100) == 10 and row_seeds(big, 10, 3, 100) == 3
    # the limit sits exactly at the flops of one seed
    limit = seed_flops(big)["total"] / 1e9
    assert row_seeds(big, 10, 3, limit) == 10 and row_seeds(big, 10, 3, 0.999 * limit) == 3
    with pytest.raises(ValueError, match="fewest"):
        row_seeds(small, 10, 1, 100)


def test_seed_flops_counts_scores_by_hand():
    """The attention part of one seed against a hand count on a small layer."""
    c = AttentionConfig(n=8, d=16, h=2, h_kv=1, d_k=4, d_v=3, d_o=16)
    f = seed_flops(c)
    hand = 2 * 2 * 8 * 8 * (4 + 3) + 2 * 2 * 8 * 4 * 3 + 2 * 1 * 8 * 4 * 3 + 2 * 2 * 8 * 3 * 3
    assert f["attention"] == hand and f["eig"] == 2 * 4 * 8**3 / 3
    assert f["total"] == pytest.approx(f["attention"] + f["output"] + f["eig"])


def test_markdown_table():
    cfg = PRESETS["bert-base"].config()
    yg = np.ones((3, cfg.n)) + np.linspace(0, 1, cfg.n)
    rows = [
        table_row("bert-base", cfg, 1, _comparison(cfg, 1.01 * yg, yg)),
        table_row("bert-base", cfg, 2, _comparison(cfg, 1.01 * yg, yg)),
        table_row("vit-b16", cfg, 1, _comparison(cfg, 1.01 * yg, yg)),
    ]
    lines = markdown_table(rows).splitlines()
    assert len(lines) == 2 + len(rows)
    assert all(line.count("|") == len(HEADER) + 1 for line in lines)
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells[0] == "BERT-base" and cells[6] == "exact" and cells[8] == "1.00 ± 0.00"
    assert cells[-4] == "1.66 ± 0.23" and cells[-3].startswith("-")
    assert cells[-2] == "0.0109 ± 0.0010" and cells[-1].startswith(("-", "+"))
    assert lines[3].split("|")[7].strip() == "÷2" and lines[3].rstrip("| ").endswith("n/a (shrunk)")
    assert lines[4].rstrip("| ").endswith("—")


# --- the limit-law chapter's tables ---

P, N = 400, 160  # X X^T / N with X of size P x N: Marchenko-Pastur with ratio 2.5, an atom 0.6 at 0


def _mp_cdf_closed_form(x, c):
    """The Marchenko-Pastur distribution function (ratio ``c > 1``, mean 1) from its closed-form density."""
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    t = np.linspace(a, b, 400_001)
    rho = np.sqrt(np.clip((b - t) * (t - a), 0, None)) / (2 * np.pi * c * t)
    cont = np.concatenate([[0.0], np.cumsum((rho[1:] + rho[:-1]) / 2 * np.diff(t))])
    return (1 - 1 / c) * (x >= 0) + np.interp(x, t, cont, left=0.0, right=cont[-1])


def _w1_by_grid(eigs, cdf, hi):
    """``int |F_n - F| dx`` on a fine grid: an independent W1."""
    x = np.linspace(0.0, hi, 400_001)
    emp = np.searchsorted(np.sort(np.where(np.abs(eigs) < 1e-9, 0.0, eigs)), x, side="right") / eigs.size
    return np.trapezoid(np.abs(emp - cdf(x)), x)


@pytest.fixture(scope="module")
def wishart():
    x = np.random.default_rng(0).standard_normal((P, N))
    return np.linalg.eigvalsh(x @ x.T / N)


def test_level_sizes():
    cfg = AttentionConfig(n=400, d=400, h=2, d_k=160, d_v=100, d_o=300)
    assert level_sizes(cfg) == {"W": 400, "T": 400, "mu_V": 100, "mu_VO": 300, "out": 400}
    assert set(level_sizes(cfg)) == set(LEVELS) == set(LEVEL_TITLES)


def test_level_w1_table_against_a_direct_w1(wishart):
    law = marchenko_pastur(P / N)
    cfg = AttentionConfig(n=P, d=P, h=2, d_k=N, d_v=100, d_o=300)
    # T = 2 W + 1/2: W1 scales by 2, the mean is 2.5, so W1 / mean is 0.8 times that of W
    levels = {"W": wishart, "T": 2 * wishart + 0.5, "mu_V": wishart}
    laws = {"W": law, "T": affine(law, 2.0, 0.5), "mu_V": law}
    table, dist = level_w1_table(levels, laws, cfg, 1.5)
    direct = _w1_by_grid(wishart, lambda x: _mp_cdf_closed_form(x, P / N), 1.1 * (1 + np.sqrt(P / N)) ** 2)
    assert 0.005 < direct < 0.1
    assert list(dist) == ["W", "T", "mu_V"]
    assert dist["W"][0] == pytest.approx(direct, rel=2e-3)
    assert dist["T"][0] == pytest.approx(0.8 * dist["W"][0], rel=1e-6)
    assert dist["W"][1] == pytest.approx(1.5 / math.sqrt(P)) and dist["mu_V"][1] == pytest.approx(1.5 / 10)
    lines = table.splitlines()
    assert len(lines) == 2 + 3 and all(line.count("|") == 6 for line in lines)
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells == [LEVEL_TITLES["W"], "400", "0.600 at 0", f"{dist['W'][0]:.4f}", f"{1.5 / 20:.4f}"]
    assert lines[3].split("|")[3].strip() == "0.600 at 0.5"  # T moves the atom to alpha^2
    # a law without atoms, and other titles
    y = np.random.default_rng(1).standard_normal((100, 200))
    table, _ = level_w1_table(
        {"mu_V": np.linalg.eigvalsh(y @ y.T / 200)}, {"mu_V": marchenko_pastur(0.5)}, cfg, 1.0, {"mu_V": "M"}
    )
    assert [c.strip() for c in table.splitlines()[2].split("|")[1:4]] == ["M", "100", "none"]


def test_empirical_moments_against_a_loop():
    spectra = np.random.default_rng(3).exponential(size=(4, 50))
    got = empirical_moments(spectra, 3)
    want = [[sum(v**j for v in row) / row.size for j in (1, 2, 3)] for row in spectra]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (4, 3)


def test_moment_table_errors_tolerances_and_format():
    # every seed's spectrum is a constant c_s: its moments are c_s^k exactly
    c = np.array([1.0, 1.2, 0.9])
    spectra = {"yg": np.repeat(c[:, None], 64, 1), "mha": np.repeat(2 * c[:, None], 64, 1)}
    law_m = np.array([1.0, 1.1, 1.3, 1.6])
    table, errors, tol = moment_table(spectra, law_m, 64, 2.5)
    for m, f in (("yg", 1.0), ("mha", 2.0)):
        want = np.array([np.mean((f * c) ** k) / law_m[k - 1] - 1 for k in (1, 2, 3, 4)])
        np.testing.assert_allclose(errors[m], want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tol, 2.5 * np.arange(1, 5) ** 1.5 / 8, rtol=1e-15)
    lines = table.splitlines()
    assert len(lines) == 2 + 4 and all(line.count("|") == 6 for line in lines)
    assert lines[0] == "| moment | limit law | $Y^G$ (mean ± 95 % CI) | MHA (mean ± 95 % CI) | tolerance |"
    cells = [x.strip() for x in lines[2].split("|")[1:-1]]
    mean, ci = summarize(c).mean, summarize(c).ci95
    assert cells[:3] == ["$m_1$", "1", f"{mean:.4g} ± {ci:.2g} ({100 * (mean - 1):+.2f} %)"]
    assert cells[-1] == f"±{100 * 2.5 / 8:.1f} %"
    one, errors, _ = moment_table(spectra, law_m[:2], 64, 1.0, labels={"mha": "softmax"})
    assert list(errors) == ["mha"] and one.splitlines()[0].count("|") == 5 and "softmax" in one


# --- the first-moment budget ---


def test_shift_budget_measures_each_step_and_the_total():
    """Spectra that are exact rescalings of one another: each step measures its factor."""
    from gelib.shifts import STEPS, step_shifts
    from gelib.tables import budget_markdown, shift_budget

    cfg = PRESETS["bert-base"].config(n=256, d=384, d_k=32)
    rng = np.random.default_rng(3)
    base = rng.exponential(size=(4, cfg.n))
    factors = {"yg": 1.0, "yg_sigma_g": 1.01, "yg_sigma_f": 1.05, "yf_ring": 1.05, "yf": 1.06, "mha": 0.98}
    rows = shift_budget({m: f * base for m, f in factors.items()}, cfg)
    assert [r.step for r in rows] == [s[0] for s in STEPS] + ["total"]
    for r in rows:
        assert r.measured.mean == pytest.approx(100 * (factors[r.earlier] / factors[r.later] - 1), rel=1e-9)
        assert r.measured.ci95 == pytest.approx(0, abs=1e-9)
    pred = step_shifts(cfg.n, cfg.d_k)
    assert rows[-1].predicted == pytest.approx(100 * sum(pred.values()), rel=1e-12)
    assert rows[-1].predicted == pytest.approx(100 * mean_shift(cfg.n, cfg.d_k), rel=1e-12)
    assert rows[0].allowance == pytest.approx(100 * 8 * (1 / 32 + 1 / 256) * abs(pred["denominator"]))
    assert rows[2].agrees is True  # 0 % measured, 0 % predicted for the Gaussian rows
    assert rows[4].agrees is False  # the same: a measured 1 % where 0 is predicted does not agree
    table = budget_markdown(rows).splitlines()
    assert len(table) == 2 + len(rows) and "denominator" in table[2]


def test_step_shift_one_step_one_seed_and_bad_names():
    """One step alone equals its row of the budget; one spectrum is one seed; a wrong name is refused."""
    from gelib.tables import shift_budget, step_shift

    cfg = PRESETS["bert-base"].config(n=128, d=192, d_k=16)
    ev = np.random.default_rng(5).exponential(size=(3, cfg.n))
    spectra = {m: f * ev for m, f in {"mha": 0.9, "yf": 1.0, "yf_ring": 1.0, "yg_sigma_f": 1.0}.items()}
    spectra |= {"yg_sigma_g": ev, "yg": ev}
    row = step_shift("denominator", spectra["mha"], spectra["yf"], cfg)
    assert row == shift_budget(spectra, cfg)[0]
    assert (row.earlier, row.later) == ("mha", "yf") and row.measured.mean == pytest.approx(-10.0, rel=1e-9)
    one = step_shift("denominator", 0.9 * ev[0], ev[0], cfg)
    assert one.measured.mean == pytest.approx(-10.0, rel=1e-9)
    assert "denominator: measured -10.00" in str(one) and f"predicted {row.predicted:+.2f} %" in str(one)
    with pytest.raises(ValueError, match="unknown step 'softmax'"):
        step_shift("softmax", ev, ev, cfg)
