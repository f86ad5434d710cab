"""The chain diagram of Table 1: every model and step is labelled, the measured numbers are written."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from gelib.models import MODELS, STEPS  # noqa: E402
from gelib.plotting import CHAIN_MODELS, CHAIN_STEPS, chain_diagram  # noqa: E402
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
