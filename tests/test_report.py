"""python -m gelib report: the files it writes, and its numbers against independent computations."""

import json
import math

import jax
import numpy as np
import pytest

from gelib import PRESETS, AttentionConfig
from gelib.cli import main
from gelib.report import attention_parameters
from gelib.spectra import compare


def test_report_files_and_numbers(tmp_path, capsys):
    out = tmp_path / "r"
    args = ["--n", "64", "--d", "128", "--h", "4", "--dk", "16", "--seeds", "2", "--seed", "3"]
    assert main(["report", *args, "--out", str(out), "--quiet"]) == 0
    assert "wrote" in capsys.readouterr().out
    data = json.loads((out / "report.json").read_text())
    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    cfg = AttentionConfig(n=64, d=128, h=4, d_k=16)
    assert data["config"] == cfg.as_dict()
    # the distances are those of compare with the same key (a second path to the same draws)
    res = compare(jax.random.key(3), cfg, ("mha", "yg"), 2, progress=False)
    assert data["mha_vs_ge"]["rel_w1"]["mean"] == pytest.approx(res.rel_w1.mean(), rel=1e-9)
    assert data["mha_vs_ge"]["ks"]["mean"] == pytest.approx(res.ks.mean(), rel=1e-9)
    # the law's first moment is the closed form (e^{beta^2} - 1) d_O / n
    assert data["law"]["moments"][0] == pytest.approx(math.expm1(1.0) * 128 / 64, rel=1e-12)
    measured = res.spectra["mha"].mean(axis=1) / res.spectra["yg"].mean(axis=1) - 1
    assert data["mean_shift"]["measured"]["mean"] == pytest.approx(measured.mean(), rel=1e-9)
    lo, hi = data["law"]["edges"][0][0], data["law"]["edges"][-1][1]
    assert 0 <= lo < hi and np.all(np.diff(np.ravel(data["law"]["edges"])) >= 0)


def test_parameter_count_by_hand():
    # Falcon-7B: fused query_key_value 4544 x (71 + 2) * 64 and dense 4544 x 4544 per layer
    assert attention_parameters(PRESETS["falcon-7b"].config()) == 4544 * 73 * 64 + 4544 * 4544
    # BERT-base: four 768 x 768 matrices
    assert attention_parameters(PRESETS["bert-base"].config()) == 4 * 768 * 768
    # tied (W^V = W^K): no value matrix of its own
    tied = AttentionConfig(n=8, d=16, h=2, d_k=4, tie_kv=True)
    assert attention_parameters(tied) == 16 * 2 * 4 + 16 * 2 * 4 + 2 * 4 * 16


def test_unwritable_folder_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as e:
        main(["report", "--preset", "bert-base", "--out", str(blocker / "sub"), "--quiet"])
    assert e.value.code == 2
    assert capsys.readouterr().err.startswith("python -m gelib report: error: cannot write the folder")
