"""The finite-size table (gelib.finite_size): shrinking keeps the law, rows, z-scores, shift budget, formatting."""

import math

import numpy as np
import pytest
import scipy.stats

from gelib import PRESETS, AttentionConfig
from gelib.attention_law import output_law
from gelib.finite_size import (
    HEADER,
    SHORT,
    full_size_floor,
    markdown_table,
    mean_shifts,
    plan_text,
    row_seeds,
    shrink,
    table_notes,
    table_row,
)
from gelib.models import mha_shift_exact
from gelib.numerics import CHECK_LEVEL
from gelib.numerics.checks import catch_ncp, rejection_probability
from gelib.presets import TABLE2
from gelib.spectra import Comparison, ks, mean_shift, rel_w1, seed_flops, summarize


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
    t95 = scipy.stats.t.ppf(0.975, 3)  # our 4 seeds; the paper's half-width is read at the normal 1.96
    se = math.hypot(rel.ci95 / t95, pc / scipy.stats.norm.ppf(0.975))
    assert row.z == pytest.approx((rel.mean - pm) / se, rel=1e-9)
    ks = summarize(row.res.ks)  # Table D.2's second column, the KS distance
    km, kc = p.paper_ks
    se_ks = math.hypot(ks.ci95 / t95, kc / scipy.stats.norm.ppf(0.975))
    assert row.z_ks == pytest.approx((ks.mean - km) / se_ks, rel=1e-9)
    assert row.shift_pred == pytest.approx(100 * mean_shift(cfg.n, cfg.d_k), rel=1e-12)
    from gelib.models import mha_shift_exact

    assert row.shift_exact == pytest.approx(100 * mha_shift_exact(cfg.n, cfg.d_k), rel=1e-12)
    assert f"({row.shift_exact:+.2f})" in markdown_table([row])
    assert row.shift.mean == pytest.approx(100 * (factors.mean() - 1), rel=1e-9)
    # a shrunk row of the paper and a row the paper does not have get no z
    assert table_row(p.name, cfg, 2, row.res).z is None
    assert table_row(p.name, cfg, 2, row.res).z_ks is None
    assert table_row("vit-b16", cfg, 1, row.res).z is None
    assert table_row("vit-b16", cfg, 1, row.res).z_ks is None
    # the check: two-sided Student-t at the level with our seeds less one degrees of freedom; its power,
    # the distance from the paper it catches half the time (the noncentral t on those 3 degrees of freedom)
    t = row.agreement()
    assert (t.seeds, t.level, t.predicted) == (4, CHECK_LEVEL, pm) and t.z == row.z and t.passes and row.agrees
    assert t.quantile == pytest.approx(scipy.stats.t.ppf(1 - CHECK_LEVEL / 2, 3))
    assert row.detects() == pytest.approx(catch_ncp(4) * se, rel=1e-12)
    assert row.detects(ks=True) == pytest.approx(catch_ncp(4) * se_ks, rel=1e-12)
    # too few seeds: shown, not tested (two seeds: the t quantile 12.7 passes anything)
    few = table_row(p.name, cfg, 1, _comparison(cfg, yg[:2] * factors[:2, None], yg[:2]))
    assert few.z is None and few.z_ks is None and few.detects() is None and few.agreement() is None and few.agrees
    assert "not tested (2 seeds)" in markdown_table([few])


def _row_at(name: str, ratios: np.ndarray):
    """The row of preset ``name`` at its exact dimensions whose per-seed spectra are one draw rescaled by
    ``ratios`` (one per seed): a pure rescaling, so its relative W1 is ``|ratio - 1|`` per seed exactly."""
    cfg = PRESETS[name].config()
    base = np.sort(np.random.default_rng(7).exponential(size=cfg.n))
    yg = np.tile(base, (ratios.size, 1))
    return table_row(name, cfg, 1, _comparison(cfg, yg * ratios[:, None], yg))


def test_a_row_fifteen_percent_off_the_paper_fails_its_agreement_check():
    """LLaDA-8B (paper: relative W1 0.92 +- 0.06 %) over 20 seeds with a tight spread: at the paper's value the
    check passes; 15 % above it (1.058 %) it fails, as its power (below 0.138 points) says it should. The
    paper's own half-width bounds the power: 15 % of a row whose paper interval is wider cannot be caught."""
    pm, pc = PRESETS["llada-8b"].paper_rel_w1
    spread = 0.0005 * np.linspace(-1, 1, 20)  # points of relative W1, over 20 seeds
    right, wrong = (_row_at("llada-8b", 1 + (f * pm + spread) / 100) for f in (1.0, 1.15))
    assert right.rel.mean == pytest.approx(pm) and wrong.rel.mean == pytest.approx(1.15 * pm)
    assert right.agreement().passes and not wrong.agreement().passes and not wrong.agrees
    assert wrong.detects() < 0.15 * pm < abs(wrong.rel.mean - pm) + 1e-12
    q = scipy.stats.t.ppf(1 - CHECK_LEVEL / 2, 19)
    assert abs(wrong.z) > q > abs(right.z) and wrong.agreement().quantile == pytest.approx(q)
    # the combined standard error: ours over its Student-t quantile, the paper's over the normal 1.96
    assert wrong.agreement().se == pytest.approx(
        math.hypot(wrong.rel.ci95 / scipy.stats.t.ppf(0.975, 19), pc / 1.96), rel=1e-3
    )
    # the stated power: the error caught with probability 1/2 by the noncentral t (checks.py's functions)
    t = wrong.agreement()
    assert rejection_probability(t.catch / t.se, 20) == pytest.approx(0.5, abs=1e-9)
    # and by Monte Carlo, 20000 statistics at a true distance of ncp = catch / se combined standard errors:
    # with our seeds' spread dominating, the statistic is the noncentral t on 19 degrees of freedom and fails
    # the check half the time; with the paper's dominating (its standard error known), it is normal, and
    # fails at the normal rate, a little under one half (the stated power is that of our seeds' t)
    ncp, reps, rng = t.catch / t.se, 20_000, np.random.default_rng(11)
    for sd_ours, se_paper, rate in (
        (1.0, 0.0, 0.5),
        (1e-6, 1.0, scipy.stats.norm.sf(q - ncp) + scipy.stats.norm.cdf(-q - ncp)),
    ):
        se_true = math.hypot(sd_ours / math.sqrt(20), se_paper)
        ours = rng.normal(ncp * se_true, sd_ours, size=(reps, 20))
        paper = rng.normal(0.0, se_paper, size=reps) if se_paper else np.zeros(reps)
        z = (ours.mean(axis=1) - paper) / np.hypot(ours.std(axis=1, ddof=1) / math.sqrt(20), se_paper)
        assert abs(np.mean(np.abs(z) > q) - rate) <= 5 * math.sqrt(rate * (1 - rate) / reps), (
            rate,
            np.mean(np.abs(z) > q),
        )
    assert 0.45 < rate < 0.5


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
    # the softmax layer alone (the learning chapters' markers): its scores and A V, one output, one eigensolve
    one = seed_flops(c, ("mha",))
    assert one["attention"] == 2 * 2 * 8 * 8 * (4 + 3) and one["eig"] == 4 * 8**3 / 3
    # d_O = 16 >= 1.5 h d_V = 9: Bartlett's route, U L (8 x 6 x 6) and the Gram matrix (8 x 8 x 6)
    assert one["output"] == 2 * 8 * 6 * 6 + 2 * 8 * 8 * 6
    with pytest.raises(ValueError, match="counts the models"):
        seed_flops(c, ("yf",))


def test_markdown_table():
    cfg = PRESETS["bert-base"].config()
    yg = np.ones((4, cfg.n)) + np.linspace(0, 1, cfg.n)
    rows = [
        table_row("bert-base", cfg, 1, _comparison(cfg, 1.01 * yg, yg)),
        table_row("bert-base", cfg, 2, _comparison(cfg, 1.01 * yg, yg)),
        table_row("vit-b16", cfg, 1, _comparison(cfg, 1.01 * yg, yg)),
    ]
    lines = markdown_table(rows, notes=False).splitlines()
    assert len(lines) == 2 + len(rows)
    assert all(line.count("|") == len(HEADER) + 1 for line in lines)
    cells = [c.strip() for c in lines[2].split("|")[1:-1]]
    assert cells[0] == "BERT-base" and cells[6] == "exact" and cells[8] == "1.00 ± 0.00"
    assert cells[-4] == "1.66 ± 0.23" and cells[-3].startswith("-")
    assert cells[-2] == "0.0109 ± 0.0010" and cells[-1].startswith(("-", "+"))
    assert lines[3].split("|")[7].strip() == "÷2" and lines[3].rstrip("| ").endswith("n/a (shrunk)")
    assert lines[4].rstrip("| ").endswith("—")
    # the short form keeps the named columns, the same cells
    short = [[c.strip() for c in ln.split("|")[1:-1]] for ln in markdown_table(rows, SHORT, notes=False).splitlines()]
    assert short[0] == list(SHORT) and all(len(r) == len(SHORT) for r in short)
    full = [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines]
    assert all(s[j] == f[HEADER.index(c)] for s, f in zip(short[2:], full[2:]) for j, c in enumerate(SHORT))
    with pytest.raises(ValueError, match="unknown columns"):
        markdown_table(rows, ("model", "colour"))


# --- the limit-law chapter's tables ---


def test_shift_budget_measures_each_step_and_the_total():
    """Spectra that are exact rescalings of one another: each step measures its factor."""
    from gelib.finite_size import budget_markdown, shift_budget
    from gelib.models import STEPS, sigma_mean_ratio, step_shifts

    cfg = PRESETS["bert-base"].config(n=256, d=384, d_k=32)
    rng = np.random.default_rng(3)
    base = rng.exponential(size=(4, cfg.n))
    factors = {"yg": 1.0, "yg_sigma_g": 1.01, "yg_sigma_f": 1.05, "yf_ring": 1.05, "yf": 1.06, "mha": 0.98}
    rows = shift_budget({m: f * base for m, f in factors.items()}, cfg)
    assert [r.step for r in rows] == [s[0] for s in STEPS] + ["total"]
    for r in rows:
        assert r.measured.mean == pytest.approx(100 * (factors[r.earlier] / factors[r.later] - 1), rel=1e-9)
        assert r.measured.ci95 == pytest.approx(0, abs=1e-9)
    from gelib.models import centering_shift_exact, denominator_shift_exact, mha_shift_exact

    # the exact expectation of every step; the steps multiply to the whole chain's exact shift,
    # computed by other formulas (the softmax row's integral over e^{beta^2} - 1)
    pred = step_shifts(cfg.n, cfg.d_k)
    cov = sigma_mean_ratio(cfg.d_k, 1.0) - 1
    assert rows[0].predicted == pytest.approx(100 * denominator_shift_exact(cfg.n, cfg.d_k), rel=1e-12)
    assert rows[1].predicted == pytest.approx(100 * centering_shift_exact(cfg.d_k), rel=1e-12)
    assert rows[3].step == "covariance" and rows[3].predicted == pytest.approx(100 * cov, rel=1e-12)
    assert rows[2].predicted == rows[4].predicted == 0
    assert cov == pytest.approx(pred["covariance"], rel=8 / cfg.d_k)  # the leading order of the same
    assert rows[-1].predicted == pytest.approx(100 * mha_shift_exact(cfg.n, cfg.d_k), rel=1e-9)
    assert rows[2].agrees is True  # 0 % measured, 0 % predicted for the Gaussian rows
    assert rows[4].agrees is False  # the same: a measured 1 % where 0 is predicted does not agree
    table = budget_markdown(rows).splitlines()
    assert len(table) == 2 + len(rows) and "denominator" in table[2]


def test_step_shift_one_step_one_seed_and_bad_names():
    """One step alone equals its row of the budget; one spectrum is one seed; a wrong name is refused."""
    from gelib.finite_size import shift_budget, step_shift

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


# --- every step preserves the moments: the moment sweep ---


def test_the_notes_say_what_each_row_is_and_why_two_rows_agree():
    yg = np.ones((4, 64)) + np.linspace(0, 1, 64)
    llama, _ = shrink(PRESETS["llama3-8b"], 1024, 16)
    rows = [
        table_row(name, cfg, s, _comparison(cfg, 1.01 * yg, yg))
        for name, (cfg, s) in (
            ("llama3-8b", (llama, 4)),
            ("mistral-7b", (llama, 4)),
            ("bert-base", (PRESETS["bert-base"].config(), 1)),
        )
    ]
    notes = table_notes(rows)
    assert (
        notes.startswith("Every row is the paper's model") and "random weights" in notes and "not the trained" in notes
    )
    assert "Llama-3-8B (÷4) is not the model's own layer (n = 4096, d = 4096, d_K = 128)" in notes
    assert "(n = 1024, d = 1024, d_K = 32, heads 32/8)" in notes and "divided by 4" in notes
    assert f"at least {full_size_floor('llama3-8b'):.2f} %" in notes
    assert "Llama-3-8B and Mistral-7B have the same numbers" in notes and llama.describe() in notes
    assert "BERT-base (÷" not in notes and "BERT-base and" not in notes  # exact, and alone
    assert markdown_table(rows) == markdown_table(rows, notes=False) + "\n\n" + notes
    only_bert = table_notes(rows[2:])
    assert "÷" not in only_bert and "same numbers" not in only_bert


def test_the_full_size_floor_is_the_exact_shift_at_the_models_own_dimensions():
    assert full_size_floor("Llama-3-8B") == pytest.approx(100 * abs(mha_shift_exact(4096, 128, 1.0)), rel=1e-12)
    assert full_size_floor("bert-base", 2.0) == pytest.approx(100 * abs(mha_shift_exact(512, 64, 2.0)), rel=1e-12)


def test_plan_text():
    cfg, s = shrink(PRESETS["llama3-8b"], 1024, 16)
    text = plan_text(
        {"llama3-8b": (cfg, s), "bert-base": (PRESETS["bert-base"].config(), 1)},
        {cfg: 2, PRESETS["bert-base"].config(): 10},
        {cfg: 12.0, PRESETS["bert-base"].config(): 1.0},
    )
    first, second = text.splitlines()
    assert first.startswith("llama3-8b") and "shrunk by 4" in first and " 2 seeds" in first and "~  12 s" in first
    assert (
        "exact" in second
        and "10 seeds" in second
        and " s " not in second
        and second.endswith(PRESETS["bert-base"].config().describe())
    )
