"""The command line: python -m gelib compare / presets."""

import json
import math
import subprocess
import sys

import jax
import pytest

from bookrun.cli import main
from gelib import AttentionConfig
from gelib.spectra import compare

SMALL = ["--n", "24", "--d", "40", "--h", "4", "--h-kv", "2", "--dk", "6", "--do", "20"]


def run(args):
    return subprocess.run([sys.executable, "-m", "gelib", *args], capture_output=True, text=True, timeout=600)


def test_compare_json_matches_the_library(capsys):
    assert main(["compare", *SMALL, "--seeds", "3", "--seed", "7", "--json", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"rel_w1", "ks", "config", "seeds"}
    res = compare(jax.random.key(7), AttentionConfig(n=24, d=40, h=4, h_kv=2, d_k=6, d_o=20), seeds=3, progress=False)
    assert out["rel_w1"]["mean"] == pytest.approx(res.rel_w1_summary.mean, rel=1e-12)
    assert out["ks"]["ci95"] == pytest.approx(res.ks_summary.ci95, rel=1e-12)
    assert 0 < out["rel_w1"]["mean"] < 1  # a fraction, not per cent


def test_compare_table_and_any_two_models(capsys):
    assert main(["compare", *SMALL, "--seeds", "2", "--models", "yf,yf_ring", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "Y^f" in text and "Y-ring^f" in text and "rel. W1 (%)" in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "50", "--d", "40", "--h", "2", "--dk", "4"], "n = 50 > d = 40"),
        (["--n", "20", "--d", "40", "--h", "6", "--h-kv", "4", "--dk", "4"], "not divisible"),
        (["--n", "20", "--d", "40", "--h", "2", "--dk", "4", "--dv", "6", "--tie-kv"], "needs d_v == d_k"),
        (["--n", "20", "--d", "40", "--h", "2", "--dk", "4", "--beta", "0"], "beta must be positive"),
        (["--n", "20", "--d", "40", "--h", "2", "--dk", "4", "--beta", "40"], "too large"),
        (["--n", "20", "--d", "40", "--h", "2"], "give --preset NAME, --hf-config PATH or all of --dk"),
        (["--preset", "gpt-5"], "unknown preset"),
        (["--preset", "bert-base", "--models", "mha,foo"], "unknown model"),
        (["--preset", "bert-base", "--models", "mha"], "two different models"),
        (["--preset", "bert-base", "--seeds", "0"], "--seeds must be >= 1"),
        (["--n", "2.5", "--d", "40", "--h", "2", "--dk", "4"], "invalid int value"),
    ],
)
def test_bad_input_exits_2_with_a_message(args, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", *args])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_help_explains_every_flag():
    text = run(["compare", "--help"]).stdout
    for flag in (
        "--preset",
        "--n",
        "--d",
        "--h",
        "--h-kv",
        "--dk",
        "--dv",
        "--do",
        "--beta",
        "--tie-kv",
        "--seeds",
        "--seed",
        "--json",
        "--models",
    ):
        assert flag in text


def test_presets_listing(capsys):
    assert main(["presets", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["falcon-7b"]["h_kv"] == 1 and out["bert-base"]["paper_rel_w1_percent"] == [1.66, 0.23]
    assert out["bert-base"]["paper_ks"] == [0.0109, 0.0010] and out["llama3-8b"]["paper_ks"] is None


def test_bert_base_agrees_with_the_paper():
    # Table 2, first row: 1.66 +- 0.23 % (95 % CI). Our 10-seed mean must lie
    # within the combined 95 % uncertainty (2 x the root sum of squares, to
    # allow for the t quantile of 10 seeds and the paper's unknown seed count).
    res = run(["compare", "--preset", "bert-base", "--seeds", "10", "--json", "--quiet"])
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    ours, ci = 100 * out["rel_w1"]["mean"], 100 * out["rel_w1"]["ci95"]
    assert out["paper_rel_w1"]["mean"] == pytest.approx(0.0166)
    assert out["paper_ks"]["mean"] == pytest.approx(0.0109)
    assert abs(ours - 1.66) < 2 * math.hypot(ci, 0.23), (ours, ci)
    ks, ks_ci = out["ks"]["mean"], out["ks"]["ci95"]  # Table D.2's KS column, the same rule
    assert abs(ks - 0.0109) < 2 * math.hypot(ks_ci, 0.0010), (ks, ks_ci)


def test_the_time_estimate_says_it_is_an_estimate(capsys, monkeypatch):
    import gelib.spectra

    monkeypatch.setattr(gelib.spectra, "estimate_seconds", lambda *args, **kwargs: 763.0)
    monkeypatch.setattr(gelib.spectra, "machine_rates", lambda: gelib.spectra.MachineRates(1e10, 0.1, None))
    assert main(["compare", *SMALL, "--seeds", "1", "--json"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "expected: about 763 s for 1 seed on this CPU at rest, an estimate from the matmul and eigensolve" in err
    assert "looked busy" not in err
    # a machine that looked loaded while it was measured is named as such
    busy = gelib.spectra.MachineRates(1e10, 0.1, "this machine looked busy while it was measured (x)")
    monkeypatch.setattr(gelib.spectra, "machine_rates", lambda: busy)
    assert main(["compare", *SMALL, "--seeds", "1", "--json"]) == 0
    assert "; this machine looked busy while it was measured (x)" in " ".join(capsys.readouterr().err.split())


def test_an_interval_of_rounding_error_prints_as_zero_in_the_table():
    from bookrun.cli.compare import _ci

    assert _ci(3.5267e-16, 2, 1, 4, 0.03125) == "+-0.0000"
    assert _ci(0.0021, 2, 100, 3, 0.0166) == "+-0.210"
    assert _ci(float("nan"), 1) == "n/a (1 seed)"
