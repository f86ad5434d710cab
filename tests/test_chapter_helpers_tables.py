"""Helpers moved out of the finite-size table and limit-law chapters, each against a direct computation."""

import math

import numpy as np
import pytest
import scipy.stats

from gelib import PRESETS, AttentionConfig
from gelib.finite_size import PAPER_Q95, paper_numbers, row_numbers, shift_predictions_text, table_row
from gelib.models import mha_shift_exact
from gelib.moment_checks import moment_checks
from gelib.numerics import CHECK_LEVEL
from gelib.numerics.checks import catch_ncp
from gelib.presets import TABLE2
from gelib.spectra import Comparison, ks, rel_w1, shape_w1


def _comparison(cfg, mha, yg):
    mha, yg = np.asarray(mha, float), np.asarray(yg, float)
    return Comparison(cfg, ("mha", "yg"), {"mha": mha, "yg": yg}, rel_w1(mha, yg), ks(mha, yg))


def _ci95(x):
    x = np.asarray(x, float)
    return scipy.stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)


@pytest.fixture(scope="module")
def dino_row():
    p = PRESETS["dinov3-l16"]
    cfg = p.config()
    rng = np.random.default_rng(1)
    yg = np.sort(rng.exponential(cfg.first_moment, size=(5, cfg.n)), axis=1)
    mha = yg * np.array([1.02, 1.03, 1.04, 1.03, 1.01])[:, None] + 0.01 * rng.exponential(size=(5, cfg.n))
    return table_row(p.name, cfg, 1, _comparison(cfg, mha, yg))


def test_row_numbers_against_numpy(dino_row):
    r, p = dino_row, PRESETS["dinov3-l16"]
    got = row_numbers(r)
    rel, kss = 100 * r.res.rel_w1, r.res.ks
    assert got["n"] == 261.0 and got["seeds"] == 5.0 and got["s"] == 1.0
    assert got["floor"] == pytest.approx(100 * abs(mha_shift_exact(261, 64, 1.0)), rel=1e-12)
    assert got["rel"] == pytest.approx(rel.mean(), rel=1e-12) and got["rel_ci"] == pytest.approx(_ci95(rel), rel=1e-12)
    assert got["ks"] == pytest.approx(kss.mean(), rel=1e-12) and got["ks_ci"] == pytest.approx(_ci95(kss), rel=1e-12)
    # the agreement with the paper in combined standard errors: ours over 5 seeds, the paper's read at 1.96
    se = lambda x, paper_ci: math.hypot(_ci95(x) / scipy.stats.t.ppf(0.975, 4), paper_ci / 1.959964)  # noqa: E731
    z = (rel.mean() - p.paper_rel_w1[0]) / se(rel, p.paper_rel_w1[1])
    assert got["z"] == pytest.approx(z, rel=1e-6)
    assert got["detects_ks"] == pytest.approx(catch_ncp(5) * se(kss, p.paper_ks[1]), rel=1e-6)
    assert got["tol_se"] == pytest.approx(scipy.stats.t.ppf(1 - CHECK_LEVEL / 2, 4)) and got["level"] == 0.1
    assert all(isinstance(v, float) for v in got.values())
    # a shrunk row has no z, and a table without the preset gives nan everywhere
    shrunk = row_numbers(table_row(p.name, r.cfg, 2, r.res))
    assert math.isnan(shrunk["z"]) and math.isnan(shrunk["detects"]) and shrunk["rel"] == got["rel"]
    assert shrunk["s"] == 2.0 and shrunk["floor"] == got["floor"]  # the floor is the full layer's
    missing = row_numbers(None)
    assert set(missing) == set(got) and all(math.isnan(v) for v in missing.values())


def test_paper_numbers_are_the_presets_table_d2_row():
    for name in TABLE2:
        p, got = PRESETS[name], paper_numbers(name)
        assert got == {"rel": p.paper_rel_w1[0], "rel_ci": p.paper_rel_w1[1], "ks": p.paper_ks[0],
                       "ks_ci": p.paper_ks[1], "n": float(p.n), "q": PAPER_Q95}  # fmt: skip
    assert paper_numbers("bert-base")["rel"] == 1.66  # Table D.2's first row, as the paper prints it
    assert all(math.isnan(v) for k, v in paper_numbers("vit-b16").items() if k not in ("n", "q"))
    assert PAPER_Q95 == pytest.approx(1.959964, abs=1e-6)  # the normal quantile: the paper's seeds are not known


def test_shift_predictions_text_against_the_closed_form():
    lines = shift_predictions_text(TABLE2).splitlines()
    assert len(lines) == 1 + len(TABLE2) and lines[0].split()[0] == "model"
    e1, e2 = math.expm1(1.0), math.expm1(2.0)
    for line, name in zip(lines[1:], TABLE2):
        p = PRESETS[name]
        b = math.e / e1 * (1 / p.d_k + (3 * e1 - 2 * e2) / p.n)  # b(n, d_K) at beta = 1, typed again
        cells = line[18:].split()
        assert line.startswith(p.title) and (int(cells[0]), int(cells[1])) == (p.n, p.d_k)
        assert float(cells[2]) == pytest.approx(100 * b, abs=0.006)
        assert (float(cells[3]), float(cells[5])) == p.paper_rel_w1


def test_comparison_shape_and_reference_mean(dino_row):
    r = dino_row
    mha, yg = r.res.spectra["mha"], r.res.spectra["yg"]
    np.testing.assert_array_equal(r.res.shape, shape_w1(mha, yg))
    # per seed: W1 of mha against yg rescaled to mha's mean, over yg's mean
    s = mha.mean(axis=1) / yg.mean(axis=1)
    direct = np.abs(np.sort(mha, axis=1) - s[:, None] * np.sort(yg, axis=1)).mean(axis=1) / yg.mean(axis=1)
    np.testing.assert_allclose(r.res.shape, direct, rtol=1e-12)
    m = yg.mean(axis=1) / r.cfg.first_moment
    assert r.reference_mean.mean == pytest.approx(m.mean(), rel=1e-12)
    assert r.reference_mean.ci95 == pytest.approx(_ci95(m), rel=1e-12)


def test_moment_check_percent_at_against_numpy():
    cfg = AttentionConfig(n=64, d=64, h=2, d_k=16)
    rng = np.random.default_rng(3)
    spectra = {n: {"mha": rng.exponential(size=(4, n)), "yg": rng.exponential(size=(4, n))} for n in (32, 64)}
    law_m = np.array([1.0, 2.0])
    checks = moment_checks(spectra, law_m, cfg, {"yg": (1.0, True), "mha": (0.5, False)})
    for c in checks:
        for n in (32, 64):
            err = np.mean(spectra[n][c.model] ** c.k, axis=1) / law_m[c.k - 1] - 1  # per seed
            got = c.percent_at(n)
            assert got["rel"] == pytest.approx(100 * err.mean(), rel=1e-12)
            assert got["ci"] == pytest.approx(100 * _ci95(err), rel=1e-12)
            # the exact bias of m_1: 0 for Y^G, the softmax shift for MHA; none for m_2
            assert ("pred" in got) == (c.k == 1)
            if c.k == 1:
                assert got["pred"] == pytest.approx(100 * c.bias[c.ns.index(n)], rel=1e-12)
        assert c.percent_at() == c.percent_at(64)
