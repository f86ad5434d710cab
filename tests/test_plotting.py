"""The limit-law panels and figures: what is drawn has the areas, masses and fits it claims."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.patches import StepPatch  # noqa: E402

from gelib import AttentionConfig  # noqa: E402
from gelib.attention_law import (
    LEVEL_TITLES,  # noqa: E402
    chain,  # noqa: E402
)
from gelib.freeprob import affine, marchenko_pastur  # noqa: E402
from gelib.numerics import fit_power_law  # noqa: E402
from gelib.plotting import (  # noqa: E402
    allocation_figure,
    at_atoms,
    chain_figure,
    density_curves,
    law_histograms,
    rate_panels,
    rate_plot,
)

P, N = 400, 160  # X X^T / N with X of size P x N: rank N, an atom 1 - N/P = 0.6 at 0


@pytest.fixture(scope="module")
def wishart():
    x = np.random.default_rng(0).standard_normal((P, N))
    return np.linalg.eigvalsh(x @ x.T / N), marchenko_pastur(P / N)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _stairs(ax):
    return [p for p in ax.patches if isinstance(p, StepPatch)]


def _curves(ax):
    return [line for line in ax.get_lines() if len(line.get_xdata()) > 1]


def test_at_atoms_finds_the_rank_deficit(wishart):
    eigs, law = wishart
    assert law.atoms()[0][0] == 0.0 and law.atoms()[0][1] == pytest.approx(0.6)
    assert at_atoms(eigs, law).sum() == P - N
    assert at_atoms(eigs.reshape(20, 20), law).shape == (20, 20)
    assert not at_atoms(affine(law, 1.0, 1.0).grid(50), affine(law, 1.0, 1.0)).any()


@pytest.mark.parametrize("log", [False, True])
def test_histogram_and_curve_areas_are_the_continuous_mass(wishart, log):
    eigs, law = wishart
    fig, ax = plt.subplots()
    law_histograms(ax, {"one draw": eigs}, law, bins=30, log=log)
    (stairs,) = _stairs(ax)
    heights, edges = stairs.get_data().values, stairs.get_data().edges
    width = np.diff(np.log(edges)) if log else np.diff(edges)
    free = eigs[~at_atoms(eigs, law)]
    inside = np.mean((eigs >= edges[0]) & (eigs <= edges[-1]) & ~at_atoms(eigs, law))
    # normalised by all P eigenvalues: the area is the fraction of continuous ones in range
    assert np.sum(heights * width) == pytest.approx(inside, rel=1e-12)
    assert inside == pytest.approx(free.size / P, abs=2 / P)
    # the curve is rho(x) (linear) or x rho(x) against log x: both integrate to 1 - atom
    (curve,) = _curves(ax)
    x, y = curve.get_xdata(), curve.get_ydata()
    area = np.trapezoid(y, np.log(x)) if log else np.trapezoid(y, x)
    assert area == pytest.approx(1 - 0.6, rel=3e-2)


def test_atom_stems_have_the_laws_mass_and_ticks_the_spectrum_fraction(wishart):
    eigs, law = wishart
    fig, ax = plt.subplots()
    law_histograms(ax, {"one draw": eigs, "half": eigs[::2]}, law, bins=30, log=True)
    twin = [a for a in fig.axes if a is not ax][0]
    (stems,) = [c for c in twin.collections if isinstance(c, LineCollection)]
    (seg,) = stems.get_segments()
    assert seg[0, 1] == 0 and seg[1, 1] == pytest.approx(0.6)  # the law's mass
    ticks = [line.get_ydata()[0] for line in twin.get_lines() if line.get_marker() == "_"]
    assert ticks == [pytest.approx(np.mean(at_atoms(e, law))) for e in (eigs, eigs[::2])]
    assert seg[0, 0] == pytest.approx(_stairs(ax)[0].get_data().edges[0])  # at 0: the left end
    assert ax.get_xlim()[0] < seg[0, 0]  # and visible


def test_one_law_per_histogram_equal_laws_drawn_once(wishart):
    eigs, law = wishart
    other = marchenko_pastur(0.5)
    spectra = {"a": eigs, "b": eigs[::-1], "c": np.linspace(0.1, 2.8, 200)}
    laws = {"a": law, "b": marchenko_pastur(P / N), "c": other}
    fig, ax = plt.subplots()
    law_histograms(
        ax,
        spectra,
        laws,
        log=True,
        atoms="legend",
        left_cut=0.01,
        styles={"c": ("--", "limit law, other")},
        legend=True,
    )
    curves = _curves(ax)
    assert len(curves) == 2 and [c.get_linestyle() for c in curves] == ["-", "--"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:3] == ["a (+ atom 0.60 at 0)", "b (+ atom 0.60 at 0)", "c"]
    assert labels[3:] == ["limit law", "limit law, other"]
    assert len(fig.axes) == 1  # no stems
    assert ax.get_xlim()[0] == pytest.approx(
        np.quantile(np.concatenate([eigs[eigs > 1e-6 * law.sigma]] * 2 + [spectra["c"]]), 0.01)
    )
    fig, ax = plt.subplots()  # numerical zeros do not stretch the axis
    law_histograms(ax, {"c": np.r_[1e-12, spectra["c"]]}, other, log=True, left_cut=0.0)
    assert ax.get_xlim()[0] == pytest.approx(0.1)


def test_density_curves_label_atoms():
    fig, ax = plt.subplots()
    density_curves(ax, [marchenko_pastur(2.0), marchenko_pastur(0.5)], ["two", "half"], log=True)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["two, atom 0.50 at 0", "half"]


def test_rate_panels_fit_and_guide_line():
    ns = (128, 256, 512, 1024)
    rng = np.random.default_rng(2)
    values = 3.0 * np.asarray(ns, float)[:, None] ** -0.8 * np.exp(0.05 * rng.standard_normal((4, 5)))
    fig, axes = plt.subplots(1, 2)
    fits = rate_panels(axes, ns, {"w1": values, "ks": 2 * values}, -0.5, guide_slope=-1.0, ylabels=("W1", "KS"))
    assert fits[0].slope == pytest.approx(fit_power_law(ns, values).slope, rel=1e-12)
    assert fits[1].slope == pytest.approx(fits[0].slope, rel=1e-9)
    (guide,) = [line for line in axes[0].get_lines() if line.get_linestyle() == ":"]
    x, y = guide.get_xdata(), guide.get_ydata()
    assert np.allclose(np.diff(np.log(y)) / np.diff(np.log(x)), -1.0)
    # through the geometric mean of the means
    m = values.mean(axis=1)
    at_mean = np.interp(np.mean(np.log(ns)), np.log(x), np.log(y))
    assert at_mean == pytest.approx(np.mean(np.log(m)), abs=1e-12)
    assert axes[1].get_ylabel() == "KS"


# --- the limit-law chapter's figures ---


def test_chain_figure_panels(wishart):
    eigs, law = wishart
    y = np.random.default_rng(1).standard_normal((100, 200))
    full = np.linalg.eigvalsh(y @ y.T / 200)  # no atom: ratio 0.5
    levels = {"W": eigs, "T": 2 * eigs + 0.5, "mu_V": full, "mu_VO": full, "out": eigs}
    laws = {"W": law, "T": affine(law, 2.0, 0.5), "mu_V": marchenko_pastur(0.5), "mu_VO": marchenko_pastur(0.5)}
    laws["out"] = law
    fig = chain_figure(levels, laws, softmax=eigs[::2])
    axes = [a for a in fig.axes if a.get_visible()][:6]
    assert len(axes) == 6
    assert [a.get_title() for a in axes] == [*LEVEL_TITLES.values(), r"output: softmax MHA $Y Y^T / n$"]
    assert [a.get_xscale() for a in axes] == ["linear"] * 3 + ["log"] * 3
    assert (axes[0].get_ylabel(), axes[3].get_ylabel()) == ("density", "density of log(eigenvalue)")
    assert axes[0].get_legend() is not None
    for ax, mu, e in zip(axes, [*laws.values(), law], [*levels.values(), eigs[::2]]):
        # the histogram's area is the fraction of continuous eigenvalues in its range
        (stairs,) = _stairs(ax)
        heights, edges = stairs.get_data().values, stairs.get_data().edges
        width = np.diff(np.log(edges)) if ax.get_xscale() == "log" else np.diff(edges)
        inside = np.mean((e >= edges[0]) & (e <= edges[-1]) & ~at_atoms(e, mu))
        assert np.sum(heights * width) == pytest.approx(inside, rel=1e-12)
        # the curve integrates to the continuous mass of the law
        (curve,) = _curves(ax)
        x, c = curve.get_xdata(), curve.get_ydata()
        area = np.trapezoid(c, np.log(x)) if ax.get_xscale() == "log" else np.trapezoid(c, x)
        assert area == pytest.approx(1 - sum(m for _, m in mu.atoms()), rel=3e-2)
    # without the softmax panel the sixth axis is hidden
    fig = chain_figure(levels, laws)
    assert sum(a.get_visible() for a in fig.axes if a.get_ylabel() != "atom mass") == 5


def test_allocation_figure_curves():
    n = 64
    splits = [AttentionConfig(n=n, d=n, h=h, d_k=n // h, d_o=n) for h in (4, 16)]
    outputs = [AttentionConfig(n=n, d=2 * n, h=4, d_k=n // 4, d_o=d_o) for d_o in (n // 2, 2 * n)]
    fig = allocation_figure(splits, outputs)
    axes = fig.axes
    assert len(axes) == 4
    assert [a.get_xscale() for a in axes] == ["linear", "log", "log", "log"]
    labels = [[t.get_text() for t in a.get_legend().get_texts()] for a in axes]
    assert labels[0] == labels[1] == ["h = 4, $d_V$ = n/4", "h = 16, $d_V$ = n/16"]
    # d_O = n/2 < h d_V = n: the output law has an atom 1/2 at 0; d_O = 2n: Sigma has one
    assert labels[2] == ["$d_O$ = 0.5 n", "$d_O$ = 2 n, atom 0.50 at 0"]
    assert labels[3] == ["$d_O$ = 0.5 n, atom 0.50 at 0", "$d_O$ = 2 n"]
    laws = [
        [chain(c).value for c in splits],
        [chain(c).output for c in splits],
        [chain(c).output_covariance for c in outputs],
        [chain(c).output for c in outputs],
    ]
    for ax, panel in zip(axes, laws):
        curves = _curves(ax)
        assert len(curves) == len(panel)
        for curve, mu in zip(curves, panel):
            x, y = curve.get_xdata(), curve.get_ydata()
            if ax.get_xscale() == "log":  # x rho(x) against log x, cut at 1e-4 sigma
                assert x[0] >= 1e-4 * mu.sigma
                mass = np.trapezoid(y, np.log(x))
            else:  # rho(x) over the whole support: the continuous mass, and the exact mean
                mass = np.trapezoid(y, x)
                assert mass == pytest.approx(1 - mu.point_mass(0.0), rel=1e-2)
                assert np.trapezoid(x * y, x) == pytest.approx(mu.moments(1)[0], rel=1e-2)
            # the continuous mass of the law over the drawn range
            assert mass == pytest.approx(mu.cdf(x[-1]) - mu.cdf(x[0]), rel=1e-2)


def test_law_figure_marks_the_support_and_the_mean():
    import math

    from gelib import AttentionConfig
    from gelib.attention_law import chain
    from gelib.plotting import law_figure, tex_sci

    main = AttentionConfig(n=512, d=768, h=4, d_k=64, d_v=96, d_o=768)  # h d_V < n: an atom at 0
    other = main.replace(h=8, h_kv=8, d_k=32, d_v=32, beta=1.5)
    fig = law_figure(chain(other), chain(main))
    left, right = fig.axes
    for ax, level, log in ((left, "value", False), (right, "output", True)):
        assert ax.get_xscale() == ("log" if log else "linear")
        curves = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
        assert len(curves) == 2 and curves[1].get_linestyle() == "--"  # the main layer beneath, dashed
        marks = sorted(ln.get_xdata()[0] for ln in ax.get_lines() if len(ln.get_xdata()) == 2)
        edges = sorted(x for c in (other, main) for e in getattr(chain(c), level).edges() for x in e)
        edges = [x for x in edges if x > 0 or not log]
        np.testing.assert_allclose(marks, edges, rtol=1e-12)
    title = fig._suptitle.get_text()
    mean = math.expm1(1.5**2) * other.d_o / other.n  # the closed form of m_1
    assert f"output law: mean ${tex_sci(mean)}$, support $[" in title, title
    plt.close(fig)
    main_fig = law_figure(chain(main))
    atom = 1 - main.h * main.d_v / main.n  # rank h d_V of Y^G
    assert f"atom {atom:.3f} at 0" in main_fig._suptitle.get_text()
    plt.close(main_fig)


# --- the step chapters' explorer panels ---


def test_distance_title_and_cdf_differences_against_sorted_eigenvalues():
    """The title's W1 is the mean gap of sorted eigenvalues over the reference mean; the largest
    drawn difference of distribution functions is the KS distance of gelib.spectra."""
    from gelib.plotting import cdf_differences, distance_title
    from gelib.spectra import ks

    rng = np.random.default_rng(7)
    a, b, c = rng.exponential(size=200), 1.1 * rng.exponential(size=200), rng.exponential(size=200) ** 2
    w1_by_hand = np.mean(np.abs(np.sort(a) - np.sort(b))) / b.mean()
    assert distance_title(a, b, **{"h/n": 0.0125}) == (
        f"rel. W1 = {100 * w1_by_hand:.2f} %, KS = {float(ks(a, b)):.3f}, h/n = 0.0125"
    )
    fig, ax = plt.subplots()
    cdf_differences(ax, a, {"a - b": b, "a - c": c}, band=0.02, band_label="band")
    lines = _curves(ax)
    assert [ln.get_label() for ln in lines] == ["a - b", "a - c"]
    for line, other in zip(lines, (b, c)):
        assert np.max(np.abs(line.get_ydata())) == pytest.approx(float(ks(a, other)), abs=1e-12)
    assert "band" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_pair_and_heads_bars_and_reference():
    from gelib.plotting import pair_and_heads

    rng = np.random.default_rng(8)
    a, b, per_head = rng.exponential(size=64), rng.exponential(size=64), np.array([0.5, 1.0, 1.5, 2.0])
    fig = pair_and_heads({"A": a, "B": b}, per_head, "norm", "title", reference=1.2, reference_label="exact")
    left, right = fig.axes
    assert [p.get_height() for p in right.patches] == pytest.approx(per_head)
    assert left.get_title().endswith("h/n = 0.0625") and right.get_title() == "title"
    assert [ln.get_ydata()[0] for ln in right.get_lines()] == [1.2]
    fig = pair_and_heads({"A": a, "B": b}, per_head, "norm", reference=float("inf"))  # infinite: not drawn
    assert fig.axes[1].get_lines() == [] and fig.axes[1].get_legend() is None


def test_rate_plot_of_a_nested_sweep_shows_the_per_seed_interval():
    ns = (64, 128, 256)
    rng = np.random.default_rng(6)
    values = np.asarray(ns, float)[:, None] ** -0.5 * np.exp(0.1 * rng.standard_normal((3, 4)))
    fig, ax = plt.subplots()
    fit = rate_plot(ax, ns, values, -0.5, "nested", nested=True)
    expected = fit_power_law(ns, values, nested=True)
    assert (fit.slope, fit.ci95) == pytest.approx((expected.slope, expected.ci95), rel=1e-12)
    assert fit.ci95 != pytest.approx(fit_power_law(ns, values).ci95, rel=1e-3)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"fit: slope {expected.slope:.2f} ± {expected.ci95:.2f}" in labels
    plt.close(fig)
