"""The finite-size table: shrinking keeps the limit law, rows and their z-scores, formatting."""

import math

import numpy as np
import pytest

from gelib import PRESETS
from gelib.law import output_law
from gelib.spectra import Comparison, ks, mean_shift, rel_w1, summarize
from gelib.tables import HEADER, markdown_table, mean_shifts, shrink, table_row


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
    assert row.shift_pred == pytest.approx(100 * mean_shift(cfg.n, cfg.d_k), rel=1e-12)
    assert row.shift.mean == pytest.approx(100 * (factors.mean() - 1), rel=1e-9)
    # a shrunk row of the paper and a row the paper does not have get no z
    assert table_row(p.name, cfg, 2, row.res).z is None
    assert table_row("vit-b16", cfg, 1, row.res).z is None


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
    assert cells[-2] == "1.66 ± 0.23" and cells[-1].startswith("-")
    assert lines[3].split("|")[7].strip() == "÷2" and lines[3].rstrip("| ").endswith("n/a (shrunk)")
    assert lines[4].rstrip("| ").endswith("—")
