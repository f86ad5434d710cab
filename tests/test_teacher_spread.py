"""The spread of one teacher draw (gelib.learning), against a second spectrum and Monte Carlo."""

import math

import jax
import numpy as np
import pytest
import scipy.stats

from gelib import figure_data
from gelib import learning as L


def features(n, d_o, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d_o)) * rng.uniform(0.3, 2.0, size=d_o)


def coordinate_variances(y, t, sigma):
    """The variances v_j of the d_o coordinates of theta(t) - theta*, from H = Y^T Y / n directly."""
    n, d_o = y.shape
    lam = np.linalg.eigvalsh(y.T @ y / n)
    pos = lam > 1e-10 * lam.max()
    safe = np.where(pos, lam, 1.0)
    noise = np.where(pos, sigma**2 * np.expm1(-t * safe) ** 2 / (n * safe), 0.0)
    return np.where(pos, np.exp(-2 * t * safe), 1.0) / d_o + noise


@pytest.mark.parametrize("d_o", [19, 47])  # fewer and more outputs than n = 31
def test_error_spread_from_g_equals_the_spread_from_h(d_o):
    """The formula on the n eigenvalues of G = Y Y^T / n against sqrt(2 sum v_j^2) over the d_o of H."""
    n, t, sigma = 31, 0.7, 0.5
    y = features(n, d_o, 1)
    got = L.error_teacher_std(np.linalg.eigvalsh(y @ y.T / n), t, n, d_o, sigma)
    assert got == pytest.approx(math.sqrt(2 * np.sum(coordinate_variances(y, t, sigma) ** 2)), rel=1e-9)


@pytest.mark.parametrize("d_o", [30, 60])
def test_error_spread_against_trained_readouts(d_o):
    """The variance over teachers of ||theta(T) - theta*||^2 from readouts trained on one feature matrix.

    The error is sum_j v_j chi^2_1: its cumulants are k2 = 2 sum v^2, k4 = 48 sum v^4, so the sample
    variance of R draws has variance k4 / R + 2 k2^2 / (R - 1); the tolerance is four of its standard
    deviations.
    """
    n, t, sigma, reps = 40, 3.0, 0.5, 20000
    y = features(n, d_o, 2)
    errs = L.teacher_errors(jax.random.key(3), y, t, sigma, reps)
    v = coordinate_variances(y, t, sigma)
    k2, k4 = 2 * np.sum(v**2), 48 * np.sum(v**4)
    predicted = L.error_teacher_std(np.linalg.eigvalsh(y @ y.T / n), t, n, d_o, sigma) ** 2
    assert abs(errs.var(ddof=1) - predicted) < 4 * math.sqrt(k4 / reps + 2 * k2**2 / (reps - 1))


def relative_losses(y, t, reps, seed):
    """L(t) / L(0) of ``reps`` noiseless teachers theta* ~ N(0, I / d_o), each trained on ``y``."""
    n, d_o = y.shape
    theta = np.random.default_rng(seed).normal(size=(reps, d_o)) / math.sqrt(d_o)
    zero = np.zeros((reps, n))
    return L.simulate_readout(y, theta, zero, 0.0, t)[0] / L.simulate_readout(y, theta, zero, 0.0, 0.0)[0]


def test_loss_spread_against_trained_readouts():
    """The relative spread of one teacher's L(t) / L(0) against readouts trained on one feature matrix.

    The formula is the delta method, leading order in 1 / n: its relative error is O(1 / n), and the
    sample standard deviation of R draws has relative standard error sqrt((kurtosis - 1) / (4 R)); the
    tolerance is four of those plus 2 / n.
    """
    n, d_o, reps = 300, 450, 20000
    y = features(n, d_o, 4)
    lam = np.linalg.eigvalsh(y @ y.T / n)
    for t in (0.2 / lam.mean(), 2.0 / lam.mean()):
        r = relative_losses(y, t, reps, 5)
        measured = r.std(ddof=1) / r.mean()
        se = measured * math.sqrt((scipy.stats.kurtosis(r, fisher=False) - 1) / (4 * reps))
        assert abs(measured - L.loss_teacher_std(lam, t, n)[0]) < 4 * se + 2 / n * measured, t


def test_arrival_spread_against_per_teacher_arrival_times():
    """The delta method for the arrival time against each teacher's own arrival time.

    A teacher's loss curve is sum_i l_i e^{-2 t l_i} z_i^2 / sum_i l_i z_i^2 (z its coordinates in the
    eigenbasis); its arrival time is found by bisection in log t, for every teacher at once.
    """
    n, reps, eps = 300, 4000, 0.01
    y = features(n, 450, 6)
    lam = np.linalg.eigvalsh(y @ y.T / n)
    z2 = np.random.default_rng(7).normal(size=(reps, n)) ** 2
    t0 = L.arrival_time(lam, eps)
    lo, hi = np.full(reps, math.log(t0 / 10)), np.full(reps, math.log(t0 * 10))
    for _ in range(60):
        mid = (lo + hi) / 2
        above = (z2 * lam * np.exp(-2 * np.exp(mid)[:, None] * lam)).sum(1) / (z2 * lam).sum(1) > eps
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    times = np.exp(lo)
    measured = times.std(ddof=1) / times.mean()
    se = measured * math.sqrt((scipy.stats.kurtosis(times, fisher=False) - 1) / (4 * reps))
    assert abs(measured - L.arrival_teacher_std(lam, eps, n)) < 4 * se + 2 / n * measured


def test_seed_bar_and_its_range_by_simulation():
    """The half-width at the true spread (closed form) and the 95 % range of the sample's half-width."""
    sd, seeds, trials = 0.05, 3, 20000
    half, lo, hi = L.seed_bar(sd, seeds)
    assert half == pytest.approx(scipy.stats.t.ppf(0.975, 2) * sd / math.sqrt(3), rel=1e-12)
    draws = np.random.default_rng(8).normal(1.0, sd, size=(trials, seeds))
    halves = scipy.stats.t.ppf(0.975, seeds - 1) * draws.std(axis=1, ddof=1) / math.sqrt(seeds)
    inside = np.mean((lo <= halves) & (halves <= hi))
    assert abs(inside - 0.95) < 4 * math.sqrt(0.95 * 0.05 / trials)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        L.seed_bar(sd, 1)


def test_consistent_seeds_and_their_ranges():
    """A bar far below (above) every count's range fits none; a bar between the ranges of the counts
    keeps exactly the counts whose range holds it."""
    assert L.consistent_seeds(1e-4, [0.05]) == [] and L.consistent_seeds(2.0, [0.05]) == []  # hi(2) = 1.01
    bar = L.seed_bar(0.05, 20)[2] * 1.01  # just above the range of 20 seeds, inside that of few seeds
    fits = L.consistent_seeds(bar, [0.05])
    assert fits and 20 not in fits and fits == [s for s in range(2, 21) if L.seed_bar(0.05, s)[2] >= bar]
    assert L.consistent_seeds(bar, [0.05, 0.06]) == fits + [20]  # any of several points: 0.06 adds 20
    assert figure_data._seed_ranges([2, 3, 4, 7]) == "2-4, 7" and figure_data._seed_ranges([]) == "none"


def test_teacher_glue_flattens_every_row():
    row = {"name": "3b", "value": 2.55, "half_width": 0.03, "relative": 1.18, "std": 16.0, "bar": 40.0, "lo": 6.0}
    row |= {"hi": 77.0, "seeds": "none", "needs": 711, "band": 31.4, "n_seeds": 3, "max_seeds": 20}
    glued = figure_data.teacher_glue([row])
    assert glued["teacher-seeds"] == 3 and glued["teacher-max-seeds"] == 20 and glued["3b-d1"] == 2.55
    assert {k: glued[f"3b-t{k}"] for k in ("std", "bar", "lo", "hi", "seeds", "needs", "band")} == {
        k: row[k] for k in ("std", "bar", "lo", "hi", "seeds", "needs", "band")
    }


def test_table_d1_rows_beside_one_teacher_per_seed():
    """Figure 3's rows at Table D.3's dimensions: the arrival-time bar is what one teacher per seed
    gives with 3 seeds; the coefficient-error bar is far below it at any count up to 20."""
    rows = {r["quantity"]: r for r in figure_data.teacher_bars(panels=("3a", "3b"))}
    assert set(rows) == {"arrival time, fixed widths", "arrival time, fixed parameter count", "coefficient error"}
    arrival = rows["arrival time, fixed widths"]
    assert arrival["lo"] < arrival["relative"] < arrival["hi"] and arrival["fits"]  # 3 seeds
    error = rows["coefficient error"]
    assert error["seeds"] == "none" and error["lo"] > 4 * error["relative"] and error["needs"] > 500
    assert error["band"] == pytest.approx(scipy.stats.norm.ppf(0.975) * error["std"])
