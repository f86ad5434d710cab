"""Exact first-moment shifts of the denominator and centering steps, against their leading
orders and against Monte Carlo of softmax rows."""

import math

import numpy as np
import pytest

from gelib.models import (
    centering_log_norm,
    centering_norm2,
    centering_shift_exact,
    denominator_shift,
    denominator_shift_exact,
    mha_shift_exact,
    step_shifts,
)
from gelib.spectra import mean_shift


@pytest.mark.parametrize("n, d_k, beta", [(64, 32, 1.0), (128, 16, 0.7)])
def test_denominator_shift_exact_against_softmax_rows(n, d_k, beta):
    """E[n sum_j p_j^2 - 1] / E f^2 - 1 over independent rows, within 4 standard errors."""
    rng = np.random.default_rng(11)
    rows = 40_000
    q = rng.standard_normal((rows, d_k))
    mha, yf = np.empty(rows), np.empty(rows)
    for start in range(0, rows, 4000):  # each row its own query and keys
        k = rng.standard_normal((4000, n, d_k))
        s = np.einsum("rd,rjd->rj", q[start : start + 4000], k) / math.sqrt(d_k)
        x = np.exp(beta * s - beta**2 / 2)
        p = x / x.sum(axis=1, keepdims=True)
        mha[start : start + 4000] = n * np.sum(p**2, axis=1) - 1
        yf[start : start + 4000] = np.mean((x - 1) ** 2, axis=1)
    ratio = mha.mean() / yf.mean() - 1
    # delta method for the ratio of two means
    g = mha / yf.mean() - mha.mean() * yf / yf.mean() ** 2
    se = g.std(ddof=1) / math.sqrt(rows)
    exact = denominator_shift_exact(n, d_k, beta)
    assert abs(ratio - exact) < 4 * se, (ratio, exact, se)


@pytest.mark.parametrize("n, d_k, beta", [(48, 16, 1.0), (96, 8, 0.8)])
def test_mha_shift_exact_against_softmax_rows(n, d_k, beta):
    """E[n sum_j p_j^2 - 1] / (e^{beta^2} - 1) - 1 over independent rows, within 4 standard errors."""
    rng = np.random.default_rng(5)
    rows, block = 30_000, 3000
    energy = np.empty(rows)
    for start in range(0, rows, block):  # each row its own query and keys
        q, k = rng.standard_normal((block, d_k)), rng.standard_normal((block, n, d_k))
        x = np.exp(beta * np.einsum("rd,rjd->rj", q, k) / math.sqrt(d_k))
        p = x / x.sum(axis=1, keepdims=True)
        energy[start : start + block] = n * np.sum(p**2, axis=1) - 1
    e1 = math.expm1(beta**2)
    se = energy.std(ddof=1) / math.sqrt(rows) / e1
    assert abs(energy.mean() / e1 - 1 - mha_shift_exact(n, d_k, beta)) < 4 * se


def test_mha_shift_exact_approaches_the_leading_order():
    # mean_shift neglects O(d_K^-2 + n^-2 + (n d_K)^-1): the gap shrinks about fourfold when n and d_K double
    gaps = [abs(mha_shift_exact(n, n / 4) - mean_shift(n, n / 4)) for n in (256, 512, 1024)]
    assert gaps[2] < gaps[1] / 2.5 < gaps[0] / 6.25, gaps


@pytest.mark.parametrize("beta", [0.5, 1.0])
def test_denominator_shift_exact_approaches_the_leading_order(beta):
    # the remainder is O(d_K^-2 + n^-2 + (n d_K)^-1): relative error O(1 / n) at d_K = n / 2
    errs = [abs(denominator_shift_exact(n, n / 2, beta) / denominator_shift(n, n / 2, beta) - 1) for n in (256, 1024)]
    assert errs[1] < errs[0] / 2.5
    assert errs[1] < 0.03


def test_centering_shift_exact():
    for d_k in (32, 256, 4096):
        exact = centering_shift_exact(d_k, 1.0)
        # E m^2 is centering_norm2 / n; the relative difference to the leading order is O(1 / d_K)
        var = math.e * math.exp(-2) * (1 - 4 / d_k) ** (-d_k / 2) - math.exp(-1) * (1 - 2 / d_k) ** (-d_k / 2)
        assert exact == pytest.approx(centering_norm2(10, d_k, 1.0) / 10 / var, rel=1e-12)
        assert exact == pytest.approx(step_shifts(512, d_k)["centering"], rel=8 / d_k)
    # Monte Carlo of E m^2 / E Var(f | sigma) at d_K = 16, beta = 0.8
    rng = np.random.default_rng(3)
    rho = rng.chisquare(16, 2_000_000) / 16
    m = np.expm1(0.32 * (rho - 1))
    var = np.exp(0.64 * (2 * rho - 1)) - np.exp(0.64 * (rho - 1))
    assert centering_shift_exact(16, 0.8) == pytest.approx(np.mean(m**2) / np.mean(var), rel=0.01)
    assert math.isinf(centering_shift_exact(4, 1.0))


@pytest.mark.parametrize("n, d_k, beta", [(64, 32, 1.0), (512, 8, 1.0), (64, 32, 2.0), (128, 8, 2.0)])
def test_centering_log_norm_against_monte_carlo(n, d_k, beta):
    """E log |m_r|_2, exact, also where E m^4 or E m^2 is infinite (beta = 2, d_K = 8)."""
    rng = np.random.default_rng(17)
    reps = 20_000
    rho = rng.chisquare(d_k, (reps, n)) / d_k
    log_norm = np.log(np.linalg.norm(np.expm1(beta**2 * (rho - 1) / 2), axis=1))
    se = log_norm.std(ddof=1) / math.sqrt(reps)
    assert abs(log_norm.mean() - centering_log_norm(n, d_k, beta)) < 4 * se
    if 2 * beta**2 < d_k:  # the logarithm's bias: log E |m|^2 / 2 is measurably above the mean log
        assert 0.5 * math.log(centering_norm2(n, d_k, beta)) - log_norm.mean() > 4 * se
