"""Readout learning as spectral functionals, against simulation and closed forms."""

import math

import numpy as np
import pytest

from gelib import AttentionConfig
from gelib import learning as L


def simulate(y_feat, theta_star, noise, sigma, t):
    """Gradient flow on (1/2n)||Y theta - y||^2 from 0, solved exactly in the eigenbasis of Y^T Y / n.

    ``theta_star`` (reps, d_o) and ``noise`` (reps, n): one problem per row.
    Returns the losses and squared coefficient errors, one per row.
    """
    n = y_feat.shape[0]
    lam, u = np.linalg.eigh(y_feat.T @ y_feat / n)
    y = theta_star @ y_feat.T + sigma * noise
    b = (y @ y_feat / n) @ u
    # theta(t) = U (1 - e^{-t lam}) / lam  U^T b, with the limit t at lam = 0
    pos = lam > 1e-12
    gain = np.where(pos, -np.expm1(-t * lam) / np.where(pos, lam, 1.0), t)
    theta = (gain * b) @ u.T
    loss = np.sum((theta @ y_feat.T - y) ** 2, axis=1) / (2 * n)
    return loss, np.sum((theta - theta_star) ** 2, axis=1)


@pytest.mark.parametrize("d_o", [19, 47])  # fewer and more outputs than n = 31
def test_functionals_match_simulated_gradient_flow(d_o):
    rng = np.random.default_rng(0)
    n, sigma, t, reps = 31, 0.5, 0.7, 20000
    y_feat = rng.normal(size=(n, d_o)) * rng.uniform(0.3, 2.0, size=d_o)
    ev = np.linalg.eigvalsh(y_feat @ y_feat.T / n)
    th = rng.normal(size=(reps, d_o)) / math.sqrt(d_o)
    eps = rng.normal(size=(reps, n))
    losses, _ = simulate(y_feat, th, eps, 0.0, t)
    loss0, _ = simulate(y_feat, th, eps, 0.0, 0.0)
    _, errs = simulate(y_feat, th, eps, sigma, t)
    pred_err = L.coefficient_error(ev, t, n, d_o, sigma)[0]
    assert abs(errs.mean() - pred_err) < 4 * errs.std() / math.sqrt(reps)
    # the loss ratio of the means is a ratio of two averages: compare with the
    # delta-method bound of both
    assert abs(losses.mean() / loss0.mean() - L.training_loss(ev, t)[0]) < 4 * (
        losses.std() / losses.mean() + loss0.std() / loss0.mean()) / math.sqrt(reps)


def test_end_of_training_and_start():
    ev = np.array([0.0, 0.0, 0.5, 1.0, 2.0])  # n = 5, d_o = 3
    # at t = 0 the error is E||theta*||^2 / E||theta*||^2 = 1 and the loss ratio 1
    assert L.coefficient_error(ev, 0.0, 5, 3)[0] == pytest.approx(1.0)
    assert L.training_loss(ev, 0.0)[0] == pytest.approx(1.0)
    # t = inf, no noise: every direction with l > 0 learned; with d_o < n there is no null space
    assert L.coefficient_error(ev, np.inf, 5, 3)[0] == pytest.approx(0.0, abs=1e-12)
    # more outputs than samples: the (d_o - n) null directions stay unlearned
    ev2 = np.array([0.5, 1.0, 2.0])
    assert L.coefficient_error(ev2, np.inf, 3, 7)[0] == pytest.approx(4 / 7)
    # the noise term at t = inf is sigma^2 * mean(1 / l) over nonzero l (times their share)
    assert L.coefficient_error(ev2, np.inf, 3, 7, sigma=0.3)[0] == pytest.approx(4 / 7 + 0.09 * np.mean(1 / ev2))


def test_arrival_time_closed_form():
    c, eps = 1.7, 0.05
    assert L.arrival_time(np.full(9, c), eps) == pytest.approx(math.log(1 / eps) / (2 * c), rel=1e-8)
    with pytest.raises(ValueError, match="epsilon"):
        L.arrival_time(np.ones(3), 1.5)


def test_parameter_counts_reproduce_table_d3():
    base = AttentionConfig(n=4096, d=4096, h=32, d_k=64, d_o=36864)
    budget = L.n_params(base)
    assert budget == pytest.approx(1.007e8, rel=1e-3)  # MATH.md section 5
    path = L.fixed_budget_path(base, [32, 120])
    assert [p.cfg.d_o for p in path] == [36864, 819]  # Table D.3, fixed budget: d_O 819-36864
    fig3a = AttentionConfig(n=4096, d=4096, h=64, d_k=64, d_o=8192)
    widths = [p.cfg.d_k for p in L.shared_widths(fig3a, [64, 1])]
    assert widths == [64, 106]  # Table D.3, across-head sharing: 64-106
    tied = AttentionConfig(n=4096, d=8192, h=8, d_k=256, d_o=2048, tie_kv=True)
    gqa = tied.replace(tie_kv=False, h_kv=4)
    assert L.n_params(tied) == L.n_params(gqa)  # Figure 3(b): equal widths and parameter count
