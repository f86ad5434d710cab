"""The chain diagram of Table 1: every model and step is labelled, the measured numbers are written."""

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gelib.config import AttentionConfig  # noqa: E402
from gelib.models import MODELS, STEPS  # noqa: E402
from gelib.plotting import CHAIN_MODELS, CHAIN_STEPS, chain_diagram  # noqa: E402
from gelib.plotting.diagram import diagram_numbers, ks_at_resolution, why_not_additive  # noqa: E402
from gelib.spectra import Summary  # noqa: E402

END = (MODELS[0], MODELS[-1])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def distances(scale: float) -> dict:
    """Made-up summaries for the five steps and the end-to-end pair, all different."""
    pairs = [(a, b) for _, a, b in STEPS] + [END]
    return {p: Summary(scale * (i + 1.234), scale * 0.05 * (i + 1), 1.0, 8) for i, p in enumerate(pairs)}


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_every_model_and_step_is_labelled_and_the_numbers_are_written():
    w1, ks = distances(1.0), distances(0.01)
    fig = chain_diagram(w1, ks, title="a layer")
    shown = "\n".join(texts(fig))
    assert set(CHAIN_MODELS) == set(MODELS) and set(CHAIN_STEPS) == {name for name, *_ in STEPS}
    for label in CHAIN_MODELS.values():
        assert label in texts(fig), label
    for label, what, control in CHAIN_STEPS.values():
        for part in (label, what, control):
            assert part in texts(fig), part
    # mean and 95 % half-width, to the interval's 2 significant digits: 1.234 +- 0.05 -> "1.234 ± 0.050"
    assert "rel. W1  1.234 ± 0.050 %" in shown and "KS  0.01234 ± 0.00050" not in shown
    assert "KS  0.0123 ± 0.0005" in shown
    end = w1[END]
    assert f"rel. W1  {end.mean:.2f} ± {end.ci95:.2f} %" in shown, shown
    assert "a layer" in shown


def test_the_background_is_opaque_white():
    fig = chain_diagram(distances(1.0))
    assert mcolors.to_rgba(fig.get_facecolor()) == (1.0, 1.0, 1.0, 1.0)
    assert not any("KS" in t for t in texts(fig))  # no KS given, none written


@pytest.mark.parametrize("which", ["w1", "ks"])
def test_a_missing_step_is_named(which):
    w1, ks = distances(1.0), distances(0.01)
    del (w1 if which == "w1" else ks)[("yf", "yf_ring")]
    with pytest.raises(ValueError, match=f"{which} has no distance for yf -> yf_ring"):
        chain_diagram(w1, ks)


def test_a_missing_end_to_end_distance_is_named():
    w1 = distances(1.0)
    del w1[END]
    with pytest.raises(ValueError, match="mha -> yg"):
        chain_diagram(w1)


def shifts(*values: float) -> dict:
    """Made-up shifts of the mean eigenvalue (fractions) for the five steps."""
    return {(a, b): Summary(v, 0.001, 0.001, 8) for (_, a, b), v in zip(STEPS, values)}


def test_the_diagram_says_why_the_steps_do_not_add_up_with_its_numbers():
    w1 = distances(1.0)  # steps 1.234, 2.234, ..., 5.234: sum 16.17; end to end 6.234
    line = why_not_additive(w1, shifts(-0.041, 0.002, 0.0, 0.023, 0.0))
    assert "end to end (6.23 %) is at most the sum of the steps (16.17 %)" in line
    assert "step 1 -4.10 %, step 4 +2.30 %" in line
    assert "undo" not in why_not_additive(w1, shifts(0.01, 0.02, 0.0, 0.03, 0.0))  # no shift to undo another
    assert "undo" not in why_not_additive(w1)
    fig = chain_diagram(w1, distances(0.01), shifts=shifts(-0.041, 0.002, 0.0, 0.023, 0.0))
    assert line in " ".join(" ".join(texts(fig)).split())  # wrapped to the figure's width


def test_a_ks_of_zero_interval_is_named_as_its_resolution():
    assert ks_at_resolution(Summary(1 / 512, 0.0, 0.0, 8), 512) == 1
    assert ks_at_resolution(Summary(3 / 256, 0.0, 0.0, 8), 256) == 3
    assert ks_at_resolution(Summary(1 / 512, 0.0, 0.0, 8), None) is None  # N unknown
    assert ks_at_resolution(Summary(1 / 512, 1e-4, 1e-4, 8), 512) is None  # seeds differ
    assert ks_at_resolution(Summary(0.0021, 0.0, 0.0, 8), 512) is None  # not a multiple of 1/N
    w1, ks = distances(1.0), distances(0.01)
    ks[("yf", "yf_ring")] = Summary(1 / 512, 0.0, 0.0, 8)
    shown = "\n".join(texts(chain_diagram(w1, ks, n_eigenvalues=512)))
    assert "KS  1/512, every seed" in shown and "steps of 1/N" in shown
    assert not re.search(r"± 0(?![.0-9])", shown)  # no bare "± 0"
    assert "steps of 1/N" not in "\n".join(texts(chain_diagram(w1, distances(0.01), n_eigenvalues=512)))


def test_the_diagrams_numbers_by_name():
    w1, ks = distances(1.0), distances(0.01)
    cfg = AttentionConfig(n=64, d=96, h=2, d_k=16, d_v=8, d_o=96, beta=1.5)
    out = diagram_numbers(w1, ks, shifts(-0.04, 0.002, 0.0, 0.02, 0.0), cfg, 8)
    assert out["w1_denominator"] == w1[("mha", "yf")].mean and out["w1_end_ci"] == w1[END].ci95
    assert out["ks_query_substitution"] == ks[("yg_sigma_g", "yg")].mean
    assert out["shift_denominator"] == pytest.approx(-4.0) and "shift_end" not in out
    assert out["sum_w1"] == pytest.approx(sum(w1[(a, b)].mean for _, a, b in STEPS))
    assert (out["n"], out["d_k"], out["d_v"], out["d_o"], out["beta"], out["seeds"]) == (64, 16, 8, 96, 1.5, 8)
