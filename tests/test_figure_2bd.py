"""Figure 2(d)'s roots and curve, and Figure 2(b)'s width boundaries (issue 41, points 1, 10, 11).

2(d): the GE ratio at Table D.3's dimensions crosses 1 twice and takes Table D.1's value twice on
``D2_BETA_RANGE``; each root reported by ``d2_roots`` is checked by bisection (the ratio changes
sign about it within a relative 1e-4) and the set by the sign changes on another grid (each cell
where the ratio crosses a level holds exactly one reported root, and no reported root lies in a
cell where it does not). The drawn curve passes through the marked temperatures. 2(b): every
drawn boundary point is on a width boundary (``gelib.learning.on_width_boundary``) and every
boundary cell of the map is on a drawn segment.
"""

import json
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from bookrun.cli import main  # noqa: E402
from gelib import figure_data  # noqa: E402
from gelib.config import AttentionConfig  # noqa: E402
from gelib.freeprob import scale  # noqa: E402
from gelib.learning import TABLE_D1_READING, error_map_grid, on_width_boundary, readout_error  # noqa: E402
from gelib.learning_markers import LimitLaws  # noqa: E402
from gelib.models import mha_shift_exact  # noqa: E402
from gelib.plotting import learning_plots as LP  # noqa: E402
from gelib.presets import TABLE_D1  # noqa: E402

D1 = next(r.value for r in TABLE_D1 if r.panel == "2d")
#: The independent grid: 16 points even in log beta, none of them (but the ends) on D2_ROOT_GRID.
CHECK_GRID = np.geomspace(*figure_data.D2_BETA_RANGE, 16)


def check_roots(f, roots, grid, level, rel=1e-4):
    """Raise AssertionError unless ``roots`` are every root of ``f - level`` that ``grid`` sees.

    Bisection certificate: ``f - level`` changes sign on ``[r (1 - rel), r (1 + rel)]`` for each
    root ``r``; completeness: each cell of ``grid`` where ``f - level`` changes sign holds exactly
    one root, and every other cell none. ``f`` must be cached or cheap (values are reused)."""
    for r in roots:
        assert (f(r * (1 - rel)) - level) * (f(r * (1 + rel)) - level) < 0, ("no sign change about", r)
    g = [f(x) - level for x in grid]
    for a, b, ga, gb in zip(grid, grid[1:], g, g[1:]):
        inside = [r for r in roots if a < r < b]
        assert len(inside) == (1 if ga * gb < 0 else 0), (a, b, ga, gb, inside)


@pytest.fixture(scope="module")
def laws():
    return LimitLaws(1e-9)


@pytest.fixture(scope="module")
def data(laws):
    return figure_data.panel("2d", laws=laws)  # its own grid: the roots, the range, the curve through them


@pytest.fixture(scope="module")
def ratio(laws):
    cache = {}

    def f(beta):
        beta = float(beta)
        if beta not in cache:
            cache[beta] = figure_data.ratio_2d(beta, laws)
        return cache[beta]

    return f


def test_level_roots_finds_every_root_and_the_check_fails_on_one():
    """On a function with eight roots of a level, every one to xtol; the check rejects a list that keeps
    one root, and one with a root moved by 1 %."""
    f = lambda x: 2 + math.sin(x)  # noqa: E731
    grid = np.linspace(0.1, 4 * math.pi + 0.1, 40)
    roots = figure_data.level_roots(f, grid, 2.4, xtol=1e-10)
    a = math.asin(0.4)
    exact = sorted(x + 2 * math.pi * k for k in (0, 1) for x in (a, math.pi - a))
    assert roots == pytest.approx(exact, abs=1e-9)
    check_roots(f, roots, np.linspace(0.1, 4 * math.pi + 0.1, 23), 2.4)
    with pytest.raises(AssertionError):
        check_roots(f, roots[:1], np.linspace(0.1, 4 * math.pi + 0.1, 23), 2.4)
    with pytest.raises(AssertionError, match="no sign change"):
        check_roots(f, [roots[0] * 1.01, *roots[1:]], grid, 2.4)
    assert figure_data.level_roots(f, [0.0, math.pi / 2], 3.0) == [math.pi / 2]  # a grid point on the level


def test_2d_has_two_crossings_of_1_and_two_temperatures_of_table_d1(data, ratio):
    """Both levels, against bisection and the sign changes on CHECK_GRID; the JSON states the range."""
    roots = data["roots"]
    assert data["beta_range"] == list(figure_data.D2_BETA_RANGE) == data["root_range"]
    assert len(roots["unit"]) == len(roots["table_d1"]) == 2, roots
    check_roots(ratio, roots["unit"], CHECK_GRID, 1.0)
    check_roots(ratio, roots["table_d1"], CHECK_GRID, D1)
    with pytest.raises(AssertionError):  # the former report: one crossing and one temperature, above 0.25
        check_roots(ratio, [r for r in roots["table_d1"] if r > 0.25], CHECK_GRID, D1)
    (u0, u1), (v0, v1) = roots["unit"], roots["table_d1"]
    assert u0 < v0 < v1 < u1 and ratio(v1) == pytest.approx(D1, rel=1e-5)
    summary = figure_data.d2_summary(data["series"][0]["x"], data["series"][0]["y"], roots)
    assert summary["ratio-top"] > D1 and summary["ratio-min-lo"] < 1 and summary["ratio-min"] < 1
    with pytest.raises(ValueError):
        figure_data.d2_summary([0.1, 1.0], [1.0, 1.0], {"unit": [u1], "table_d1": [v0, v1]})


def test_2d_curve_passes_through_the_marked_temperatures(data):
    """The drawn GE line, read at each root as matplotlib draws it (straight in log beta), takes the
    level there to 1e-5 (the root is a vertex, found to xtol = 1e-6 in beta, where the log ratio's slope
    is below 10); without the roots among its points the line reads
    Table D.1's temperature off by more than 2 % (the interpolation error of the 13-point grid)."""
    fig = LP.ratio_figure(data, [], figure_data._ratio_pair(1.0)[0], "note")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    line = next(ln for ln in ax.lines if ln.get_label() == "GE")
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    read = lambda xs, ys, b: float(np.interp(math.log(b), np.log(xs), ys))  # noqa: E731
    for level, key in ((1.0, "unit"), (D1, "table_d1")):
        for b in data["roots"][key]:
            assert read(x, y, b) == pytest.approx(level, rel=1e-5)
    d1_lines = [ln for ln in ax.lines if ln.get_linestyle() == "-." and ln.get_xdata()[0] == ln.get_xdata()[1]]
    assert sorted(ln.get_xdata()[0] for ln in d1_lines) == pytest.approx(data["roots"]["table_d1"])
    assert "Table D.1's value, $\\beta = " + ", ".join(f"{b:.3f}" for b in data["roots"]["table_d1"]) + "$" in [
        ln.get_label() for ln in d1_lines
    ]
    marked = {b for r in data["roots"].values() for b in r}
    keep = np.array([b not in marked for b in x])
    beta = data["roots"]["table_d1"][1]
    assert abs(read(x[keep], y[keep], beta) / D1 - 1) > 0.02


def test_2d_curve_follows_the_peak_between_its_points(data, ratio):
    """Between the two temperatures of Table D.1's value the ratio peaks and bends most: read off the
    drawn line (straight in log beta) at six temperatures on no grid, it is within 2 % of the exact GE
    ratio; without D2_PEAK_BETAS among its points the line cuts the peak by more than 5 %."""
    x, y = (np.asarray(data["series"][0][k], float) for k in "xy")
    assert set(figure_data.D2_PEAK_BETAS) <= set(x)
    keep = np.array([b not in figure_data.D2_PEAK_BETAS for b in x])
    off = [0.15, 0.17, 0.2, 0.235, 0.265, 0.3]
    read = lambda xs, ys, b: float(np.interp(math.log(b), np.log(xs), ys)) / ratio(b) - 1  # noqa: E731
    assert max(abs(read(x, y, b)) for b in off) < 0.02
    assert max(abs(read(x[keep], y[keep], b)) for b in off) > 0.05


def test_2d_shift_is_the_ratio_on_the_laws_rescaled_by_each_layers_own_shift(laws):
    """At Table D.1's higher temperature, composed by hand: each layer's limit law rescaled by
    1 + mha_shift_exact(8192, d_K) (freeprob.scale), read as the reading says, the ratio of the two
    against the GE ratio; the wider-value layer (d_K = 64) has the larger shift, so its error falls
    more and the ratio falls, by about what the noise term alone (1 / m_1) gives,
    (1 + b_128) / (1 + b_64) - 1."""
    beta, read = figure_data.d1_temperature(laws), TABLE_D1_READING
    wide, equal = figure_data._ratio_pair(beta)
    b = [mha_shift_exact(c.n, c.d_k, beta) for c in (wide, equal)]
    err = [readout_error(scale(laws(c), 1 + s), c, read.horizon, read.sigma) for c, s in zip((wide, equal), b)]
    out = figure_data.d2_shift(beta, laws)
    assert out["b-wide"] == pytest.approx(100 * b[0]) and out["b-equal"] == pytest.approx(100 * b[1])
    assert out["change"] == pytest.approx(100 * (err[0] / err[1] / figure_data.ratio_2d(beta, laws) - 1), rel=1e-9)
    noise_only = 100 * ((1 + b[1]) / (1 + b[0]) - 1)  # the noise term dominates at t = T: close to it
    assert b[0] > b[1] > 0 and out["change"] < 0 and abs(out["change"] / noise_only - 1) < 0.1
    bar = next(r.relative for r in TABLE_D1 if r.panel == "2d")
    assert out["bars"] == pytest.approx(abs(out["change"]) / bar)


def test_the_figure_command_states_the_range_and_every_root(data, capsys, monkeypatch):
    import bookrun.cli.figure

    monkeypatch.setattr(bookrun.cli.figure, "panel", lambda name: data)
    assert main(["figure", "2d", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["beta_range"] == [0.005, 2.5] and out["roots"] == data["roots"]
    assert main(["figure", "2d"]) == 0
    text = capsys.readouterr().out
    assert "crosses 1 at beta = " + ", ".join(f"{b:.4f}" for b in data["roots"]["unit"]) in text
    assert "takes Table D.1's value at beta = " + ", ".join(f"{b:.4f}" for b in data["roots"]["table_d1"]) in text


# --- Figure 2(b): the width boundaries as on_width_boundary defines them -----------------------

N, D_V = 4096, 64


def off_boundary(segments, n=N, d_v=D_V):
    """The sampled points of ``segments`` (``((h0, h1), (y0, y1))`` in ``(h, d_O / n)``) that are not on
    a width boundary: integer head counts along slanted and level segments, 41 output widths along
    vertical ones (their head count is ``n / d_V``)."""
    bad = []
    for (h0, h1), (y0, y1) in segments:
        if h0 == h1:
            pts = [(h0, y) for y in np.linspace(y0, y1, 41)]
        else:
            pts = [(h, y0 + (h - h0) * (y1 - y0) / (h1 - h0)) for h in range(math.ceil(h0), math.floor(h1) + 1)]
        for h, y in pts:
            cfg = AttentionConfig(n=n, d=n, h=int(round(h)), d_k=d_v, d_v=d_v, d_o=int(round(y * n)))
            if not on_width_boundary(cfg):
                bad.append((h, y))
    return bad


def drawn_segments(hs, span):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    LP.width_boundaries(ax, N, hs, D_V, y_span=span)
    segs = [(tuple(ln.get_xdata()), tuple(ln.get_ydata())) for ln in ax.lines]
    plt.close(fig)
    return segs


def test_2b_draws_the_three_half_lines_of_the_ridge():
    hs, d_os = error_map_grid(N, 16, 128, 8, 0.25)
    span = (0.9 * d_os.min() / N, 1.1 * d_os.max() / N)  # the map's rows, and a margin
    segs = drawn_segments(hs, span)
    assert len(segs) == 3 and not off_boundary(segs)
    full = [
        ((N / D_V,) * 2, span),
        ((hs[0], hs[-1]), (1.0, 1.0)),
        ((hs[0], hs[-1]), (hs[0] * D_V / N, hs[-1] * D_V / N)),
    ]
    assert off_boundary(full)  # the former full lines leave the ridge
    on = [
        (h, d / N)
        for h in hs
        for d in d_os
        if on_width_boundary(AttentionConfig(n=N, d=N, h=int(h), d_k=64, d_o=int(d)))
    ]
    assert on  # the map has boundary cells, and each lies on a drawn segment

    def near(h, y):
        for (h0, h1), (y0, y1) in segs:
            if min(h0, h1) - 1e-9 <= h <= max(h0, h1) + 1e-9 and min(y0, y1) - 1e-9 <= y <= max(y0, y1) + 1e-9:
                expect = y0 if h0 == h1 else y0 + (h - h0) * (y1 - y0) / (h1 - h0)
                if h0 == h1 and abs(h - h0) < 1e-9 or abs(y - expect) < 1e-9:
                    return True
        return False

    assert all(near(h, y) for h, y in on), [p for p in on if not near(*p)]
    assert not near(N / D_V, 0.5) and not near(16, 1.0)  # the rest of the full lines is no boundary
    assert LP.width_boundary_segments(N, D_V, (80, 120), (2.0, 4.0)) == []  # none in a window off the ridge
