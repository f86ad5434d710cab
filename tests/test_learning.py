"""Readout learning as spectral functionals, against simulation and closed forms."""

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.optimize
import scipy.stats

from gelib import AttentionConfig
from gelib import learning as L
from gelib import learning_markers as MK
from gelib import plotting as LF
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
        losses.std() / losses.mean() + loss0.std() / loss0.mean()
    ) / math.sqrt(reps)


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
        L.arrival_time(marchenko_pastur(0.25, 4 * c), 0.1), rel=1e-9
    )


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

    def loss(t):  # int x e^{-2tx} rho(x) dx / m1 with m1 = 1, x rho(x) = sqrt((b-x)(x-a)) / (2 pi c)
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
        ev = np.linalg.eigvalsh(x @ x.T / n_cols)  # p - n_cols exact zeros when c > 1
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
        L.arrival_time(np.ones(3), 0.1, t_max=0.5)  # arrival at log(10) / 2 = 1.15
    # a thousandth of the weight l dmu on eigenvalues 1e-3 of the mean: L(t) / L(0) stays
    # near 1e-3 > epsilon until t ~ 1e3 / m1, beyond a t_max of 1e2 / m1
    ev = np.r_[1.0, np.full(500, 1e-3 / 500)]  # m1 ~ 2e-3, small ones 2e-6
    with pytest.raises(ValueError, match="far below the mean"):
        L.arrival_time(ev, 1e-4, t_max=1e2 / ev.mean())
    assert L.arrival_time(ev, 1e-4) > 1e2 / ev.mean()  # the default t_max reaches it
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
        assert law.calls <= 60  # two per loss evaluation: bracketing plus Brent's method


def test_parameter_counts_reproduce_table_d3():
    base = AttentionConfig(n=4096, d=4096, h=32, d_k=64, d_o=36864)
    budget = L.n_params(base)
    assert budget == pytest.approx(1.007e8, rel=1e-3)  # h d d_K + h_KV d (d_K + d_V) + h d_V d_O
    path = L.fixed_budget_path(base, [32, 120])
    assert [p.cfg.d_o for p in path] == [36864, 819]  # Table D.3, fixed budget: d_O 819-36864
    fig3a = AttentionConfig(n=4096, d=4096, h=64, d_k=64, d_o=8192)
    widths = [p.cfg.d_k for p in L.shared_widths(fig3a, [64, 1])]
    assert widths == [64, 106]  # Table D.3, across-head sharing: 64-106
    tied = AttentionConfig(n=4096, d=8192, h=8, d_k=256, d_o=2048, tie_kv=True)
    gqa = tied.replace(tie_kv=False, h_kv=4)
    assert L.n_params(tied) == L.n_params(gqa)  # Figure 3(b): equal widths and parameter count


# --- scaled layers and tables -------------------------------------------------------------


def test_scaled_count():
    assert L.scaled_count(64, 1 / 16) == 4
    assert L.scaled_count(120, 1 / 8) == 15
    assert L.scaled_count(32, 2.0) == 64
    with pytest.raises(ValueError, match="not an integer"):
        L.scaled_count(120, 1 / 16)  # 7.5
    with pytest.raises(ValueError, match=">= 2"):
        L.scaled_count(16, 1 / 16, minimum=2)  # 1 < 2


def test_scale_note():
    assert L.scale_note("ci", 256) == "scale ci: curves at Table D.3, markers (and dashed) at n = 256, Table D.3 × 1/16"
    assert L.scale_note("paper", 4096) == "scale paper: curves and markers at Table D.3 (n = 4096)"
    assert L.scale_note("big", 8192).endswith("n = 8192, Table D.3 × 2")
    assert L.scale_note("ci", 256, markers=False) == "scale ci: at Table D.3 (n = 4096), no markers"  # 2(b)'s map
    # Figure 2(d): its row of Table D.3 is at n = 8192, so its markers at 1/16 are at n = 512, not the scale's 256
    d2 = L.shrink(AttentionConfig(n=8192, d=12288, h=96, d_k=64, d_v=192, d_o=12288), 1 / 16)
    assert (
        L.scale_note("ci", d2.n, 8192)
        == "scale ci: curves at Table D.3, markers (and dashed) at n = 512, Table D.3 × 1/16"
    )
    # Figure 3(b) draws no dashed curve: its markers share the curves' limit law
    assert (
        L.scale_note("ci", 256, dashed=False) == "scale ci: curves at Table D.3, markers at n = 256, Table D.3 × 1/16"
    )
    # a study at several n (the convergence figure): no curves, every n, the ratios it keeps
    assert L.study_note("ci", (128, 256, 512), 1 / 8) == (
        "scale ci: no curves; markers at n = 128, 256, 512, the ratios of Table D.3 × 1/8"
    )


def test_shrink_keeps_the_tables_ratios_but_not_the_law():
    paper = AttentionConfig(n=4096, d=4096, h=64, h_kv=16, d_k=64, d_v=80, d_o=8192)
    sim = L.shrink(paper, 1 / 16)
    assert (sim.n, sim.d, sim.h, sim.h_kv, sim.d_k, sim.d_v, sim.d_o) == (256, 256, 4, 1, 64, 80, 512)
    assert L.shrink(paper, 1) is paper
    assert sim.h * sim.d_v / sim.n == paper.h * paper.d_v / paper.n and sim.d_o / sim.n == paper.d_o / paper.n
    # d_K / n grows by 1 / s: the limit law is another one
    assert MK.law_parameters(sim) != MK.law_parameters(paper)
    with pytest.raises(ValueError, match="not an integer"):
        L.shrink(paper, 1 / 128)  # h_KV = 16 / 128


def test_law_at_the_tables_dimensions_equals_the_law_at_equal_ratios():
    """The law of Figure 3(a)'s layer at n = 4096 against the law computed at n = 64 with every
    width shrunk by the same factor (d_K = 1, d_O = 128): the chain sees only ratios, so the two
    computations (different configurations, different caches) agree; LimitLaws shares one law."""
    from gelib.attention_law import output_law

    paper = AttentionConfig(n=4096, d=4096, h=64, d_k=64, d_o=8192)
    small = paper.at_length(64)  # d_k = d_v = 1, d_o = 128, h = 64
    assert (small.d_k, small.d_o) == (1, 128) and MK.law_parameters(small) == MK.law_parameters(paper)
    a, b = output_law(paper), output_law(small)
    np.testing.assert_allclose(a.moments(3), b.moments(3), rtol=1e-12)
    assert L.arrival_time(a, 0.1) == pytest.approx(L.arrival_time(b, 0.1), rel=1e-10)
    x = np.linspace(0.5, 3.0, 7)
    np.testing.assert_allclose(a.density(x), b.density(x), rtol=1e-8, atol=1e-12)
    laws = MK.LimitLaws()
    assert laws(paper) is laws(small) is laws(paper.replace(h_kv=1, d=8192)) and len(laws) == 1
    assert laws(paper.replace(d_o=4096)) is not laws(paper) and len(laws) == 2


def table_cells(md):
    """The body rows of a Markdown table, as lists of stripped cells."""
    lines = md.splitlines()
    assert set(lines[1]) <= set("|-")
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]


def test_layer_table_rows_and_counts():
    a = AttentionConfig(n=64, d=64, h=4, d_k=16, d_o=128)
    b = a.replace(h_kv=1)
    t = AttentionConfig(n=64, d=128, h=2, d_k=16, d_o=32, tie_kv=True)
    rows = table_cells(L.layer_table({"one": [a, b], "two": [t]}))
    assert [r[0] for r in rows] == ["one", "one", "two"]
    assert rows[1][1:6] == ["4", "1", "16", "no", "128"]
    assert rows[2][4] == "yes"
    # N_par by hand: queries h d d_K, keys and values h_KV d (d_K + d_V) (d_K when tied), output h d_V d_O
    assert rows[1][6] == f"{4 * 64 * 16 + 1 * 64 * 32 + 4 * 16 * 128:,}"
    assert rows[2][6] == f"{2 * 128 * 16 + 2 * 128 * 16 + 2 * 16 * 32:,}"


def test_range_table_spans():
    path = [p.cfg for p in L.fixed_output_path(AttentionConfig(n=64, d=64, h=2, d_k=16, d_o=32), [2, 3, 4])]
    rows = table_cells(L.range_table({"path": path, "single": path[:1]}))
    assert rows[0][:6] == ["path", "64", "64", "2-4", "16", "16"]
    assert rows[0][6] == "0.5-1"  # h d_V / n from 32/64 to 64/64
    assert rows[0][7] == "0.5"  # d_O / n fixed
    assert rows[1][3] == "2" and rows[1][8] == f"{L.n_params(path[0]):.3g}"


# --- the readout problem on one layer ----------------------------------------------------


def test_width_boundaries():
    base = AttentionConfig(n=64, d=64, h=2, d_k=16, d_o=32)  # widths n = 64, d_O = 32, h d_V = 32
    assert L.on_width_boundary(base)  # h d_V = d_O < n
    assert not L.on_width_boundary(base.replace(d_o=48))  # 32 < 48 < 64
    assert L.on_width_boundary(base.replace(h=4, h_kv=4, d_o=128))  # h d_V = n < d_O
    assert L.on_width_boundary(base.replace(h=8, h_kv=8, d_o=64))  # d_O = n < h d_V
    assert not L.on_width_boundary(base.replace(h=8, h_kv=8, d_o=32))  # d_O alone is smallest


def test_readout_error_end_of_training_without_noise_counts_the_rank():
    # sigma = 0, t = inf: every seen direction is learned, so the error is 1 - rank(Y) / d_O
    # with rank(Y) = min(n, d_O, h d_V) (the chapter's exercise), on the limit law
    from gelib.attention_law import output_law

    for h, d_o in [(2, 48), (2, 128), (8, 32), (3, 200)]:
        cfg = AttentionConfig(n=64, d=64, h=h, d_k=16, d_o=d_o)
        expected = 1 - min(cfg.n, cfg.d_o, cfg.h * cfg.d_v) / cfg.d_o
        assert L.readout_error(output_law(cfg), cfg, math.inf, 0.0) == pytest.approx(expected, abs=1e-9)
    # on a width boundary the noise term diverges: inf without touching mu
    cfg = AttentionConfig(n=64, d=64, h=2, d_k=16, d_o=32)
    assert L.readout_error(None, cfg, math.inf, 0.5) == math.inf
    # at a finite time it is the coefficient error itself
    ev = np.array([0.0, 0.3, 1.0, 2.0])
    cfg4 = AttentionConfig(n=4, d=4, h=1, d_k=2, d_o=3)
    assert L.readout_error(ev, cfg4, 2.0, 0.5) == L.coefficient_error(ev, 2.0, 4, 3, 0.5)[0]


def test_path_errors_and_spread_off_boundary():
    from gelib.attention_law import output_law

    points = L.fixed_output_path(AttentionConfig(n=64, d=64, h=1, d_k=16, d_o=32), range(1, 7))
    end = L.path_errors(points, output_law, math.inf, 0.5)
    assert list(end["h"]) == [1, 2, 3, 4, 5, 6] and set(end["d_o"]) == {32}
    assert end["bounds"] == [2]  # h d_V = d_O = 32
    assert math.isinf(end["error"][1]) and np.isfinite(np.delete(end["error"], 1)).all()
    cur = L.path_errors(points, output_law, 3.0, 0.5)  # at a finite time the boundary is finite
    assert cur["bounds"] == [2] and np.isfinite(cur["error"]).all()
    for p, e in zip(points, cur["error"]):
        assert e == L.coefficient_error(output_law(p.cfg), 3.0, 64, 32, 0.5)[0]
    picked = L.spread_off_boundary(points, 3)
    assert [p.cfg.h for p in picked] == [1, 4, 6]  # first, middle, last of 1, 3..6
    assert [p.cfg.h for p in L.spread_off_boundary(points, 1)] == [6]
    assert [p.cfg.h for p in L.spread_off_boundary(points, 9)] == [1, 3, 4, 5, 6]


def test_level_crossings():
    h = np.array([2, 4, 6, 7, 8, 10])
    err = np.array([0.5, 1.5, np.inf, 2.5, 0.5, 1.0])
    assert L.level_crossings(h, err, 1.0) == [(2, 4), (7, 8), (8, 10)]  # reaching the level counts as above it
    assert L.level_crossings(h, err, 2.0) == [(4, 6), (7, 8)]
    assert L.level_crossings(h, err, 10.0) == [(4, 6), (6, 7)]  # inf is above any level
    assert L.level_crossings(h, err, 0.1) == [] and L.level_crossings([1], [5.0], 1.0) == []
    assert all(type(x) is int for pair in L.level_crossings(h, err, 1.0) for x in pair)  # plain ints, for glue


def test_simulate_readout_against_the_ode_and_least_squares():
    import scipy.integrate

    rng = np.random.default_rng(5)
    n, d_o, sigma = 7, 5, 0.3
    y = rng.normal(size=(n, d_o)) @ np.diag([1.0, 0.5, 2.0, 0.0, 1.0])  # one dead feature: a null direction
    th = rng.normal(size=(1, d_o))
    eps = rng.normal(size=(1, n))
    target = (th @ y.T + sigma * eps)[0]

    def flow(_, theta):
        return -y.T @ (y @ theta - target) / n

    for t in (0.3, 2.0):
        ode = scipy.integrate.solve_ivp(flow, (0, t), np.zeros(d_o), rtol=1e-11, atol=1e-13).y[:, -1]
        loss, err = L.simulate_readout(y, th, eps, sigma, t)
        assert err[0] == pytest.approx(np.sum((ode - th[0]) ** 2), rel=1e-8)
        assert loss[0] == pytest.approx(np.sum((y @ ode - target) ** 2) / (2 * n), rel=1e-8)
    # t = inf: the minimum-norm least-squares fit
    lstsq = np.linalg.lstsq(y, target, rcond=None)[0]
    _, err = L.simulate_readout(y, th, eps, sigma, math.inf)
    assert err[0] == pytest.approx(np.sum((lstsq - th[0]) ** 2), rel=1e-9)


def test_teacher_errors_estimate_the_coefficient_error():
    import jax

    rng = np.random.default_rng(6)
    n, d_o, sigma, t, reps = 40, 30, 0.5, 3.0, 4000
    y = rng.normal(size=(n, d_o))
    errs = L.teacher_errors(jax.random.key(0), y, t, sigma, reps)
    assert errs.shape == (reps,)
    expected = L.coefficient_error(np.linalg.eigvalsh(y @ y.T / n), t, n, d_o, sigma)[0]
    assert abs(errs.mean() - expected) < 4 * errs.std() / math.sqrt(reps)
    np.testing.assert_array_equal(errs, L.teacher_errors(jax.random.key(0), y, t, sigma, reps))
    assert not np.array_equal(errs, L.teacher_errors(jax.random.key(1), y, t, sigma, reps))


def test_unit_crossings():
    grid = np.linspace(0.5, 7.0, 14)
    f = lambda x: math.exp(math.sin(x))  # noqa: E731    crosses 1 at pi and 2 pi
    values = np.array([f(x) for x in grid])
    rough = L.unit_crossings(grid, values)
    assert [c.residual for c in rough] == [None, None]
    assert [c.x for c in rough] == pytest.approx([math.pi, 2 * math.pi], abs=1e-2)  # spline through 14 points
    polished = L.unit_crossings(grid, values, exact=f)
    assert [c.x for c in polished] == pytest.approx([math.pi, 2 * math.pi], abs=1e-7)
    assert all(abs(c.residual) < 1e-9 for c in polished)
    # another level: e^{1/2} at sin x = 1/2, i.e. pi/6, 5 pi/6 and 13 pi/6; the residual is f(x) - level
    level = math.exp(0.5)
    at_level = L.unit_crossings(grid, values, exact=f, level=level)
    assert [c.x for c in at_level] == pytest.approx([math.pi / 6, 5 * math.pi / 6, 13 * math.pi / 6], abs=1e-7)
    assert all(abs(c.residual) < 1e-9 for c in at_level)
    rough = [c.x for c in L.unit_crossings(grid, values, level=level)]  # the same as scaling the curve
    assert rough == pytest.approx([c.x for c in L.unit_crossings(grid, values / level)], abs=1e-12)
    # a curve that only touches 1 (within the touch band) does not cross it
    touching = np.exp(1e-4 * np.sin(grid))
    assert L.unit_crossings(grid, touching) == []
    assert L.unit_crossings(grid, np.full(grid.size, 2.0)) == []


def test_compare_paths():
    h_fo = np.array([1, 2, 3, 4, 5, 6])
    err_fo = np.array([0.5, np.inf, 0.4, 0.3, 0.3, 0.3])
    h_fb = np.array([2, 3, 4, 5, 6, 7])
    err_fb = np.array([0.9, 0.5, 0.35, 0.2, 0.1, 0.05])
    d_o = np.array([90, 60, 40, 30, 20, 10])
    f = L.compare_paths(h_fo, err_fo, h_fb, err_fb, d_o)
    # common h: 2..6; the budget path wins at 2 (the other is infinite), loses at 3, 4, wins from 5 on
    assert f["tail"] == 5 and f["tail_do"] == 30
    assert f["local"] == [2] and f["nlocal"] == 1 and f["local_lo"] == f["local_hi"] == 2
    assert (f["best_fo"], f["min_fo"]) == (4, 0.3)  # first of the smallest finite errors
    assert (f["best_fb"], f["min_fb"]) == (7, 0.05)
    # losing at the last common point: no tail; winning everywhere: the tail is the first common point
    assert L.compare_paths(h_fo, err_fo, h_fb, np.r_[err_fb[:-2], 0.5, 0.5], d_o)["tail"] is None
    assert L.compare_paths(h_fo, err_fo, h_fb, err_fb / 100, d_o)["tail"] == 2


def test_refined_paths_find_what_the_full_paths_find():
    """Figure 2(c)'s two paths at n = 128 (d_K = 8), at the end of training and at t = 10: the
    findings and the crossings of a level of a grid every 3 or 5 head counts, refined, against
    those of every head count (step 1)."""
    import functools

    base_fo = AttentionConfig(n=128, d=128, h=4, d_k=8, d_o=64)
    base_fb = AttentionConfig(n=128, d=128, h=4, d_k=8, d_o=9 * 128)
    make = {
        "fo": functools.partial(L.fixed_output_path, base_fo),
        "fb": functools.partial(L.fixed_budget_path, base_fb),
    }
    heads = {"fo": range(2, 16), "fb": range(4, 16)}
    laws = MK.LimitLaws()
    keys = ("tail", "tail_do", "local_lo", "local_hi", "best_fo", "best_fb", "min_fo", "min_fb")
    level = 0.5
    for t in (math.inf, 10.0):
        full, want = L.refined_paths(make, heads, laws, t, 0.5, 1)
        assert list(full["fo"]["h"]) == list(range(2, 16)) and list(full["fb"]["h"]) == list(range(4, 16))
        assert full["fo"]["bounds"] == [8]  # h d_V = d_O = 64
        cur = {k: L.path_errors(make[k](heads[k]), laws, t, 0.5) for k in make}  # step 1 is compare_paths
        assert want == L.compare_paths(
            cur["fo"]["h"], cur["fo"]["error"], cur["fb"]["h"], cur["fb"]["error"], cur["fb"]["d_o"]
        )
        crossings = {k: L.level_crossings(full[k]["h"], full[k]["error"], level) for k in make}
        assert all(hi - lo == 1 for k in make for lo, hi in crossings[k]) and crossings["fo"]
        for step in (3, 5):
            curves, got = L.refined_paths(make, heads, laws, t, 0.5, step, levels=(level,))
            assert len(curves["fo"]["h"]) + len(curves["fb"]["h"]) < 26
            assert {k: got[k] for k in keys} == {k: want[k] for k in keys}, (step, t)
            for k in make:  # the refined curves are the full ones at the head counts evaluated
                assert L.level_crossings(curves[k]["h"], curves[k]["error"], level) == crossings[k], (step, t, k)
                idx = np.searchsorted(full[k]["h"], curves[k]["h"])
                for field in ("d_o", "error"):
                    np.testing.assert_array_equal(curves[k][field], full[k][field][idx])
    # without the level, the grid every 5 misses where the fixed-output path crosses 0.5 at t = 10 (between 4 and 5)
    coarse, _ = L.refined_paths(make, heads, laws, 10.0, 0.5, 5)
    assert L.level_crossings(coarse["fo"]["h"], coarse["fo"]["error"], level) == [(2, 7)]
    assert crossings["fo"] == [(4, 5)]


def test_error_map_grid():
    hs, d_os = L.error_map_grid(512, 2, 16.0, 2, 0.5)
    assert 512 // 64 in hs and np.all(np.diff(hs) == 2) and hs[0] >= 2 and hs[-1] <= 16
    assert 512 in d_os and np.all(np.diff(np.log2(d_os / 512)) == pytest.approx(0.5, abs=0.01))
    assert d_os[0] / 512 >= 2**-2.75 * 0.99 and d_os[-1] / 512 <= 2**3.5 * 1.01
    hs3, _ = L.error_map_grid(256, 1, 8.0, 3, 1.5)
    assert 4 in hs3 and np.all(np.diff(hs3) == 3) and hs3.min() >= 1


# --- figures -----------------------------------------------------------------------------


@pytest.fixture
def agg():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def summary(mean, ci):
    from gelib.spectra import Summary

    return Summary(mean, ci, ci, 3)


def panel_data(name, ge, mha=(), table_d1=(), dimensions=None):
    """A panel in :mod:`gelib.figure_data`'s schema: GE series ``(label, x, y)``, MHA series
    ``(label, [(x, summary)])`` (added by ``add_markers``) and Table D.1 rows ``(value, half-width)``."""
    import dataclasses

    from gelib import figure_data

    data = {
        "panel": name,
        "quantity": "q",
        "x_label": "x",
        "reading": dataclasses.asdict(L.TABLE_D1_READING),
        "dimensions": dimensions or {},
        "series": [{"label": lb, "kind": "ge", "x": list(x), "y": list(y), "ci95": None} for lb, x, y in ge],
        "table_d1": [{"quantity": "q", "value": v, "half_width": hw} for v, hw in table_d1],
    }
    for label, pts in mha:
        figure_data.add_markers(data, label, pts)
    return data


def test_ge_and_mha_draws_the_curve_and_the_markers(agg):
    from gelib.plotting import ge_and_mha, log2_axis, tex_sci

    fig, ax = agg.subplots()
    ge_and_mha(
        ax,
        [1, 2, 4],
        [1.0, np.inf, 3.0],
        [(2, summary(2.5, 0.1))],
        color="C0",
        label="GE",
        mark_label="MHA",
        offset=1.1,
    )
    line = ax.lines[0]
    np.testing.assert_array_equal(line.get_ydata(), [1.0, np.nan, 3.0])  # a gap at the divergence
    assert line.get_label() == "GE"
    bars = ax.containers[0]
    np.testing.assert_allclose(bars.lines[0].get_xydata(), [[2.2, 2.5]])
    log2_axis(ax, [1, 2, 4])
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]
    assert tex_sci(393216.0) == "3.93 \\times 10^{5}" and tex_sci(2.5) == "2.5"
    assert tex_sci(1.007e8) == "1.01 \\times 10^{8}" and tex_sci(0.00123) == "0.00123"


def test_sharing_figures(agg):
    base = AttentionConfig(n=64, d=64, h=4, d_k=16, d_o=128)
    widths = [base.replace(h_kv=g) for g in (4, 2, 1)]
    budget = [p.cfg for p in L.shared_widths(base, [4, 2, 1])]
    cb = np.array([1.0, 1.2, 1.3])
    rows = [("fixed widths", 1.1, 0.2), ("fixed $N_{par}$", 1.2, 0.1)]
    fig = LF.sharing_across_figure(
        widths, budget, np.ones(3), cb, [(4, summary(1.01, 0.02))], [], "note", 1e-4, table_d1=rows
    )
    ax = fig.axes[0]
    line = next(ln for ln in ax.lines if ln.get_label() == "GE, fixed $N_{par}$ (widths grow)")
    np.testing.assert_array_equal(line.get_ydata(), cb)
    assert [a.get_text() for a in ax.texts] == [f"$w = {c.d_k}$" for c in budget]
    assert "$d_O = 2n$" in ax.get_title() and "0.0001" in ax.get_ylabel()
    bands = [p for p in ax.patches if p.get_label().startswith("Table D.1")]  # one band per row, value ± half-width
    assert [p.get_label() for p in bands] == ["Table D.1: fixed widths", "Table D.1: fixed $N_{par}$"]
    assert (bands[1].get_y(), bands[1].get_height()) == pytest.approx((1.1, 0.2))
    np.testing.assert_allclose(ax.containers[0].lines[0].get_xydata(), [[4 * 0.96, 1.01]])  # marker at x, offset
    layers = [AttentionConfig(n=64, d=128, h=h, d_k=32 // h, d_o=32, tie_kv=True) for h in (2, 4)]
    curves = {"GQA": np.array([1.0, 2.0]), "K=V": np.array([0.5, 0.25])}
    marks = {"GQA": [(2, summary(1.0, 0.1))], "K=V": []}
    fig = LF.sharing_within_figure(layers, curves, marks, "note", 0.25, 1e4, [("3(b)", 0.9, 0.05)])
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and ax.get_yscale() == "log" and "$\\sigma = 0.25$" in ax.get_ylabel()
    assert "$d = 2n$, $d_O = n/2$" in ax.get_title()
    np.testing.assert_array_equal(next(ln for ln in ax.lines if ln.get_label() == "GE, K=V").get_ydata(), curves["K=V"])


def test_readout_figures(agg):
    from gelib.attention_law import output_law

    n, eps = 64, L.TABLE_D1_READING.epsilon
    panel = [AttentionConfig(n=n, d=n, h=h, d_k=16, d_o=2 * n) for h in (2, 4)]
    t = np.geomspace(0.01, 10, 5)
    curves = {c.h: L.training_loss(output_law(c), t) for c in panel}
    ge = [(f"h = {c.h}", t, curves[c.h]) for c in panel]
    fig = LF.loss_figure(panel_data("2a", ge, [("h = 2", [(t[1], summary(0.5, 0.01))])], [(0.04, 0.005)]), panel, "n")
    ax = fig.axes[0]
    line = next(ln for ln in ax.lines if ln.get_label().startswith("GE, $h = 2$"))
    np.testing.assert_allclose(line.get_ydata(), curves[2])
    assert len(ax.containers) == 1  # markers for the first layer only: the data has one MHA series
    np.testing.assert_allclose(ax.containers[0].lines[0].get_xydata(), [[t[1], 0.5]])
    assert any(list(ln.get_ydata()) == [eps, eps] for ln in ax.lines) and ax.get_ylim()[0] == pytest.approx(eps / 3)
    d1 = next(ln for ln in ax.lines if ln.get_label().startswith("Table D.1"))
    assert list(d1.get_ydata()) == [0.04, 0.04] and "0.005" in d1.get_label()
    fo = L.fixed_output_path(AttentionConfig(n=n, d=n, h=1, d_k=16, d_o=n // 2), range(1, 5))
    fb = L.fixed_budget_path(AttentionConfig(n=n, d=n, h=1, d_k=16, d_o=9 * n), range(1, 4))
    hs, d_os = L.error_map_grid(n, 1, 6.0, 1, 1.0)
    z = np.full((d_os.size, hs.size), 0.5)
    z[0, 0], z[1, 1] = np.inf, 2.0
    rows = [(f"d_O = {d}", hs, row) for d, row in zip(d_os, z)]
    fig = LF.error_map_figure(panel_data("2b", rows, dimensions={"d_o": list(d_os)}), fo, fb, "note")
    mesh = fig.axes[0].collections[0]
    assert mesh.get_array().ravel()[0] == pytest.approx(300.0)  # inf drawn at the top
    assert mesh.get_array().ravel()[1] == pytest.approx(math.log10(0.5))
    assert mesh.get_clim() == pytest.approx((math.log10(0.5), math.log10(2.0)))  # the finite cells span the colours
    assert "t = 10000" in fig.axes[0].get_title()
    paths = {name: L.path_errors(pts, output_law, 1e4, 0.25) for name, pts in [("fo", fo), ("fb", fb)]}
    data = panel_data("2c", [(k, c["h"], c["error"]) for k, c in paths.items()], [("fo", [(3.0, summary(0.4, 0.02))])])
    fig = LF.paths_figure(data, [c["bounds"] for c in paths.values()], "note")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "t = 10000" in ax.get_title() and len(ax.containers) == 1
    assert paths["fo"]["bounds"] == [2] and any(list(ln.get_xdata()) == [2, 2] for ln in ax.lines)  # h d_V = d_O
    betas = np.linspace(0.5, 2.0, 4)
    data = panel_data("2d", [("r", betas, betas)], [("r", [(1.0, summary(1.0, 0.1))])], [(1.5, 0.01)])
    fig = LF.ratio_figure(data, [L.Crossing(1.2, 0.0)], panel[0], "note")
    ax = fig.axes[0]
    assert any(list(line.get_xdata()) == [1.2, 1.2] for line in ax.lines)
    np.testing.assert_allclose(ax.containers[0].lines[0].get_xydata(), [[1.0, 1.0]])
    assert any(list(ln.get_ydata()) == [1.5, 1.5] and ln.get_label().startswith("Table D.1") for ln in ax.lines)


def test_convergence_figure(agg):
    from gelib.spectra import Summary

    ns = (128, 256, 512)
    dep = lambda means, ci: tuple(Summary(m, ci, ci, 8) for m in means)  # noqa: E731
    noisy = MK.Convergence("loss", ns, dep([0.01, -0.005, 0.002], 0.02), -1.2, 1.5)
    good = MK.Convergence("arrival", ns, dep([0.4, 0.2, 0.1], 0.02), -1.0, 0.1)
    assert good.resolved and not noisy.resolved
    fig = LF.convergence_figure([noisy, good], "note")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["128", "256", "512"]
    first, second = ax.containers
    np.testing.assert_allclose(first.lines[0].get_ydata(), [0.01, 0.005, 0.002])  # |departure|
    np.testing.assert_allclose(second.lines[0].get_xdata(), np.array(ns) * 1.04)  # side by side
    assert "not resolved" in first.get_label() and "not resolved" not in second.get_label()
    lows = [seg[0][1] for seg in first.lines[2][0].get_segments()]
    assert all(lo > 0 for lo in lows)  # a bar wider than its point is clipped above 0 on the log axis
    guide = next(ln for ln in ax.lines if ln.get_label() == "$n^{-1}$")  # through the resolved result's middle
    np.testing.assert_allclose(guide.get_ydata(), [0.4, 0.2, 0.1])


def test_shift_figure(agg):
    layers = tuple(AttentionConfig(n=64, d=64, h=h, d_k=16, d_o=128) for h in (2, 4, 6))
    v = MK.ShiftedValues(np.array([0.5, 0.2, 0.1]), np.array([0.49, 0.196, 0.0979]), np.full(3, 0.0218), layers)
    fig = LF.shift_figure({"fixed output": v}, 0.56, "note")
    assert list(fig.axes[0].lines[0].get_xdata()) == [2, 4, 6]
    ax, ax2 = fig.axes
    solid, dashed = ax.lines[:2]
    np.testing.assert_allclose(solid.get_ydata(), v.ge)
    assert dashed.get_linestyle() == "--" and dashed.get_color() == solid.get_color()
    np.testing.assert_allclose(dashed.get_ydata(), v.shifted)
    np.testing.assert_allclose(ax2.lines[0].get_ydata(), 100 * (v.shifted / v.ge - 1))  # in %
    (band,) = ax2.patches  # Table D.1's bar around 0
    assert "0.56" in band.get_label() and "+2.18" in fig.texts[0].get_text()


@pytest.mark.parametrize("c", [0.25, 1.0, 3.0])
def test_initial_rate_is_the_slope_of_the_loss_at_zero(c):
    """2 m_2 / m_1 = 2 (1 + c) for Marchenko-Pastur with mean 1, against a central
    difference of the loss (error O(dt^2), about 1e-6 relative here) on the law and
    on the same formula for eigenvalues."""
    law = marchenko_pastur(c)
    assert L.initial_rate(law) == pytest.approx(2 * (1 + c), rel=1e-12)
    dt = 1e-3 / (2 * (1 + c))
    l_minus, l_plus = L.training_loss(law, np.array([-dt, dt]))
    assert (l_minus - l_plus) / (2 * dt) == pytest.approx(2 * (1 + c), rel=1e-5)
    lam = np.array([0.5, 1.0, 2.5])
    assert L.initial_rate(lam) == pytest.approx(2 * np.mean(lam**2) / np.mean(lam), rel=1e-14)


def test_figures_draw_the_markers_own_curves_beside_them(agg):
    """Shrunk markers (s = 1/4) sit at h / s beside their own GE curve, thin and dashed in the same colour."""
    s = 0.25
    data = panel_data("2c", [("fo", [8, 16, 24], [0.5, 2.0, 0.3])], [("fo", [(8.0, summary(0.61, 0.02))])])
    fig = LF.paths_figure(data, [[16]], "note", own=[([2, 4, 6], [0.6, 0.4, 0.2])], s=s)
    ax = fig.axes[0]
    dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 2 and list(dashed[0].get_xdata()) == [8.0, 16.0, 24.0]  # own at h / s; and its legend entry
    assert dashed[0].get_color() == ax.lines[0].get_color() and dashed[1].get_label() == LF.OWN_LABEL
    np.testing.assert_allclose(ax.containers[0].lines[0].get_xydata(), [[8.0, 0.61]])  # where the data puts it
    fig = LF.paths_figure(data, [[16]], "note")  # paper scale: no dashed curve
    assert not [ln for ln in fig.axes[0].lines if ln.get_linestyle() == "--"]
    layers = [AttentionConfig(n=64, d=64, h=h, d_k=16, d_o=128) for h in (4, 8)]
    sims = [L.shrink(c, s) for c in layers]
    t = np.geomspace(0.1, 10, 4)
    curves = {c.h: np.exp(-t * c.h) for c in layers}
    data = panel_data("2a", [(f"h = {c.h}", t, curves[c.h]) for c in layers])
    fig = LF.loss_figure(data, layers, "n", own=curves, marker_layers=sims)
    assert sum(ln.get_linestyle() == "--" for ln in fig.axes[0].lines) == 3  # two curves, one legend entry
    widths = [c.replace(h_kv=g) for c in layers[:1] for g in (4, 2, 1)]
    budget = [p.cfg for p in L.shared_widths(layers[0], [4, 2, 1])]
    arr, own3 = np.ones(3), {"groups": [1], "w": [1.1], "b": [1.2]}
    fig = LF.sharing_across_figure(widths, budget, arr, arr, [(1 / s, summary(1.1, 0.1))], [], "n", 0.1, own3, s)
    assert any(list(ln.get_xdata()) == [4.0] and ln.get_linestyle() == "--" for ln in fig.axes[0].lines)
    betas = np.linspace(0.5, 2.0, 4)
    fig = LF.ratio_figure(panel_data("2d", [("r", betas, betas)]), [], layers[0], "n", own=(betas[:2], [1, 2]))
    assert sum(ln.get_linestyle() == "--" for ln in fig.axes[0].lines) == 1  # the own curve


def test_hard_edge_asymptotics_on_the_square_wishart_law():
    """Marchenko-Pastur at ratio 1 has density sqrt(4 - l) / (2 pi sqrt(l)) = (1 / pi) l^{-1/2} (1 - l / 8 + ...):
    c = 1 / pi, and 1 / (pi sqrt(a)) for the law scaled by a. The next term of the density makes the loss's
    t^{-3/2} law miss by 3 / (32 t): edge / loss - 1 = 3 / (32 t) + O(t^-2). The noise's sqrt(t) law misses
    by a constant, sigma^2 [int_0^4 (rho(l) - l^{-1/2} / pi) / l dl - int_4^inf l^{-3/2} / pi dl]."""
    import scipy.integrate

    for a in (1.0, 2.5):
        assert L.edge_coefficient(marchenko_pastur(1.0, a)) == pytest.approx(1 / (math.pi * math.sqrt(a)), rel=1e-9)
    mp, n = marchenko_pastur(1.0), 1000
    scaled = [(L.edge_loss(mp, t)[0] / L.training_loss(mp, t)[0] - 1) * t for t in (40.0, 160.0)]
    assert abs(scaled[1] - 3 / 32) < abs(scaled[0] - 3 / 32) < 0.01 * 3 / 32  # O(1 / t) closer at 4t

    def noise(t):
        return L.coefficient_error(mp, t, n, n, 1.0)[0] - L.coefficient_error(mp, t, n, n, 0.0)[0]

    inner = scipy.integrate.quad(lambda u: (math.sqrt(4 - u * u) / 2 - 1) * 2 / (math.pi * u * u), 0, 2)[0]  # l = u^2
    offset = inner - 1 / math.pi  # int_4^inf l^{-3/2} / pi dl = 1 / pi
    gaps = [noise(t) - L.edge_noise(mp, t, 1.0)[0] - offset for t in (400.0, 1600.0)]
    assert abs(gaps[1]) < abs(gaps[0]) < 0.02 * abs(offset)  # the constant, up to terms that vanish with t
    with pytest.raises(ValueError, match="no hard edge"):
        L.edge_coefficient(marchenko_pastur(0.5))
