"""Readout learning as spectral functionals, against simulation and closed forms."""

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.optimize

from gelib import AttentionConfig
from gelib import learning as L
from gelib.freeprob import dirac, marchenko_pastur


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


@pytest.mark.parametrize("c", [1e-6, 1.7, 1e6])
def test_arrival_time_closed_form(c):
    # one eigenvalue c: L(t) / L(0) = exp(-2 t c), so t = log(1 / eps) / (2 c), at any scale
    for eps in (0.9, 0.05, 1e-8):
        expected = math.log(1 / eps) / (2 * c)
        assert L.arrival_time(np.full(9, c), eps) == pytest.approx(expected, rel=1e-9)
        # zero eigenvalues carry no loss: the arrival time does not see them
        assert L.arrival_time(np.r_[np.zeros(5), np.full(4, c)], eps) == pytest.approx(expected, rel=1e-9)
        assert L.arrival_time(dirac(c), eps) == pytest.approx(expected, rel=1e-9)
    # a law with an atom at 0: 3/4 of MP(4) sits at 0, and MP(1/4) has the same nonzero part
    # (the nonzero eigenvalues of X X^T / N and X^T X / N coincide), scaled by 1/4
    assert L.arrival_time(marchenko_pastur(4.0, c), 0.1) == pytest.approx(
        L.arrival_time(marchenko_pastur(0.25, 4 * c), 0.1), rel=1e-9)


def test_arrival_time_two_point_spectrum():
    # eigenvalues a and 2a, equal weights: with u = exp(-2 t a),
    # (a u + 2 a u^2) / (3 a) = eps, i.e. 2 u^2 + u - 3 eps = 0
    a = 0.37
    for eps in (0.5, 0.1, 1e-3):
        u = (-1 + math.sqrt(1 + 24 * eps)) / 4
        expected = -math.log(u) / (2 * a)
        assert L.arrival_time(np.array([a, 2 * a] * 3), eps) == pytest.approx(expected, rel=1e-9)
        assert L.training_loss(np.array([a, 2 * a]), expected)[0] == pytest.approx(eps, rel=1e-9)


def mp_arrival_by_quad(c, eps):
    """Arrival time on MP(c) from its closed-form density (scipy quad), independent of gelib."""
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2

    def loss(t):   # int x e^{-2tx} rho(x) dx / m1 with m1 = 1, x rho(x) = sqrt((b-x)(x-a)) / (2 pi c)
        f = lambda x: math.exp(-2 * t * x) / (2 * math.pi * c)  # noqa: E731
        return scipy.integrate.quad(f, a, b, weight="alg", wvar=(0.5, 0.5), epsabs=1e-16, epsrel=1e-12)[0]

    return scipy.optimize.brentq(lambda lt: loss(math.exp(lt)) - eps, -20, 20, xtol=1e-13)


@pytest.mark.parametrize("c", [0.3, 1.0, 2.5])
def test_arrival_time_on_a_law_matches_its_density(c):
    for eps in (0.1, 1e-4):
        expected = math.exp(mp_arrival_by_quad(c, eps))
        assert L.arrival_time(marchenko_pastur(c), eps) == pytest.approx(expected, rel=1e-8)


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_arrival_time_law_against_sampled_spectra(c):
    # the arrival time is a smooth spectral functional: its sampling error and its
    # bias are O(1/p) (measured: p |deviation| has std ~ 1-2 and bias < 0.5)
    law = marchenko_pastur(c)
    ref = L.arrival_time(law, 0.1)
    p, reps = 400, 12
    n_cols = round(p / c)
    rng = np.random.default_rng(1)
    devs = []
    for _ in range(reps):
        x = rng.normal(size=(p, n_cols))
        ev = np.linalg.eigvalsh(x @ x.T / n_cols)      # p - n_cols exact zeros when c > 1
        devs.append(L.arrival_time(ev, 0.1) / ref - 1)
    devs = np.array(devs)
    assert np.abs(devs).max() < 8 / p
    assert abs(devs.mean()) < 3 / p


def test_arrival_time_errors():
    with pytest.raises(ValueError, match="epsilon"):
        L.arrival_time(np.ones(3), 1.5)
    with pytest.raises(ValueError, match="epsilon"):
        L.arrival_time(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="every eigenvalue at 0"):
        L.arrival_time(np.zeros(4), 0.1)
    with pytest.raises(ValueError, match="negative|< 0"):
        L.arrival_time(np.array([-0.5, 1.0, 2.0]), 0.1)
    with pytest.raises(ValueError, match="still"):
        L.arrival_time(np.ones(3), 0.1, t_max=0.5)      # arrival at log(10) / 2 = 1.15
    # a thousandth of the weight l dmu on eigenvalues 1e-3 of the mean: L(t) / L(0) stays
    # near 1e-3 > epsilon until t ~ 1e3 / m1, beyond a t_max of 1e2 / m1
    ev = np.r_[1.0, np.full(500, 1e-3 / 500)]                      # m1 ~ 2e-3, small ones 2e-6
    with pytest.raises(ValueError, match="far below the mean"):
        L.arrival_time(ev, 1e-4, t_max=1e2 / ev.mean())
    assert L.arrival_time(ev, 1e-4) > 1e2 / ev.mean()              # the default t_max reaches it
    assert L.arrival_time(np.ones(3), 0.1, t_max=2.0) == pytest.approx(math.log(10) / 2)


class CountingLaw:
    """A law that counts the calls of its spectral functionals."""

    def __init__(self, law):
        self.law, self.calls = law, 0

    def integrate(self, *args, **kwargs):
        self.calls += 1
        return self.law.integrate(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.law, name)


@pytest.mark.parametrize("scale", [1e-4, 1.0, 1e4])
def test_arrival_time_is_cheap(scale):
    for eps in (0.9, 0.1, 1e-6):
        law = CountingLaw(marchenko_pastur(0.5, scale))
        t = L.arrival_time(law, eps)
        assert L.training_loss(law.law, t)[0] == pytest.approx(eps, rel=1e-9)
        assert law.calls <= 60          # two per loss evaluation: bracketing plus Brent's method


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
