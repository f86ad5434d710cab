"""First-moment shifts along the chain: the steps add up to the finite-size shift; the
denominator step against a Monte Carlo of softmax rows."""

import math

import numpy as np
import pytest

from gelib.models import STEPS, denominator_shift, step_shifts
from gelib.spectra import mean_shift


@pytest.mark.parametrize("beta", [0.3, 0.7, 1.0, 1.5])
@pytest.mark.parametrize("n, d_k", [(512, 64), (4096, 128), (200, 16)])
def test_steps_add_up_to_the_finite_size_shift(n, d_k, beta):
    # two derivations: per-model row energies here, N / D^2 of one softmax row in mean_shift
    assert sum(step_shifts(n, d_k, beta).values()) == pytest.approx(mean_shift(n, d_k, beta), rel=1e-12, abs=1e-15)
    assert [s[0] for s in STEPS] == list(step_shifts(n, d_k, beta))


def test_the_denominator_coefficients_at_beta_1():
    e = math.e
    # E f^2 = e - 1 and E f^3 = e^3 - 3e + 2 at sigma = 1 give -(1 + 2 E f^3 / E f^2 - 3 E f^2) / n
    ef2, ef3 = e - 1, e**3 - 3 * e + 2
    assert denominator_shift(math.inf, 1.0) == pytest.approx(-(3 * e - 0.5) / (e - 1), rel=1e-12)
    assert denominator_shift(1.0, math.inf) == pytest.approx(-(1 + 2 * ef3 / ef2 - 3 * ef2), rel=1e-12)


@pytest.mark.parametrize("n, d_k, beta", [(512, 256, 1.0), (256, 16, 0.5)])
def test_denominator_shift_against_softmax_rows(n, d_k, beta):
    """Rows of sqrt(n) A^perp, (f_j - fbar) / (1 + fbar) / sqrt(n), against rows f_j / sqrt(n) of Y^f."""
    rng = np.random.default_rng(7)
    reps = 120
    ratios = np.empty(reps)
    for r in range(reps):
        q, k = rng.standard_normal((2, n, d_k))
        f = np.expm1(beta * (q @ k.T) / math.sqrt(d_k) - beta**2 / 2)
        fbar = f.mean(axis=1, keepdims=True)
        ratios[r] = np.mean(((f - fbar) / (1 + fbar)) ** 2) / np.mean(f**2) - 1
    se = ratios.std(ddof=1) / math.sqrt(reps)
    pred = denominator_shift(n, d_k, beta)
    assert abs(pred) > 15 * se  # the check has power: the shift is far from 0 at this precision
    # 3 standard errors, and 5 % of the shift for the neglected orders (d_K^-2, n^-2, (n d_K)^-1)
    assert abs(ratios.mean() - pred) < 3 * se + 0.05 * abs(pred), (ratios.mean(), se, pred)
