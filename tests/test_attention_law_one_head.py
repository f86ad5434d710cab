"""The one-head law (the predecessor's setting): squared singular values of sqrt(n) A^perp."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from gelib import AttentionConfig
from gelib.attention_law import attention_law


def test_moments_against_the_gaussian_equivalent_simulated():
    """m_1..m_3 of Y Y^T, Y = (beta S + alpha Z) / sqrt(n), against the law; 4 standard errors over draws."""
    n, d_k, beta = 600, 300, 1.0
    cfg = AttentionConfig(n=n, d=n, h=1, d_k=d_k, beta=beta)
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(6):
        q, k = rng.standard_normal((2, n, d_k))
        y = (beta * q @ k.T / math.sqrt(d_k) + math.sqrt(cfg.alpha2) * rng.standard_normal((n, n))) / math.sqrt(n)
        ev = np.linalg.eigvalsh(y @ y.T)
        draws.append([np.mean(ev**j) for j in (1, 2, 3)])
    draws = np.array(draws)
    law = attention_law(cfg).moments(3)
    assert law[0] == pytest.approx(math.expm1(beta**2), rel=1e-12)  # the variance of f
    se = draws.std(axis=0, ddof=1) / math.sqrt(len(draws))
    # 4 standard errors, and the O(1/n) finite-size bias of the moments (relative 1/n per order)
    assert np.all(np.abs(draws.mean(axis=0) - law) < 4 * se + law * np.arange(1, 4) / n), (draws.mean(0), se, law)


@pytest.mark.parametrize("ratio", [1 / 8, 1 / 2, 1.0])
@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_not_marchenko_pastur_its_right_edge_exceeds(ratio, beta):
    """The predecessor's statement: the law is not MP with the same variance (right edge 4 (e^beta^2 - 1))."""
    n = 1024
    cfg = AttentionConfig(n=n, d=n, h=1, d_k=int(ratio * n), beta=beta)
    law = attention_law(cfg)
    assert law.edges()[-1][1] > 4 * math.expm1(beta**2) * 1.01
    # no atom (T is positive definite) and the support carries the whole mass, checked by the
    # distribution function's panels; its mean by quadrature of the density is e^{beta^2} - 1
    assert not law.atoms() and law.check_support() == pytest.approx(1.0, abs=1e-6)
    assert law.integrate(lambda x: x)[()] == pytest.approx(math.expm1(beta**2), rel=1e-8)


def test_command_line():
    cmd = [sys.executable, "-m", "gelib", "law", "--level", "attention", "--n", "512", "--dk", "64", "--h", "1"]
    out = json.loads(
        subprocess.run(
            [*cmd, "--density", "200", "--moments", "2", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert set(out) == {"moments", "x", "density", "atoms", "edges"}
    assert out["moments"][0] == pytest.approx(math.e - 1, rel=1e-12)
    assert out["edges"][-1][1] > 4 * (math.e - 1)
