"""The explorer factory: defaults, bad layers as one line, sliders of the right kind."""

import pytest

from bookrun.explore import explorer, slider_kind
from gelib import AttentionConfig


def draw(n, h, beta):
    return AttentionConfig(n=n, d=n, h=h, d_k=max(1, n // h), beta=beta)


def test_called_with_defaults_and_with_new_values():
    ex = explorer(draw, show=False, n=(64, 16, 256, 16), h=(4, 1, 16), beta=(1.0, 0.25, 2.0, 0.05))
    assert ex.defaults() == {"n": 64, "h": 4, "beta": 1.0}
    assert ex().n == 64 and ex(n=128).n == 128 and ex(n=128).h == 4


def test_an_impossible_layer_prints_one_line(capsys):
    ex = explorer(draw, show=False, n=(64, 16, 256, 16), h=(4, 1, 16), beta=(1.0, 0.25, 2.0, 0.05))
    assert ex(beta=-1.0) is None
    out = capsys.readouterr().out
    assert out.startswith("not available: ") and out.count("\n") == 1 and "beta" in out


def test_unknown_parameters_are_refused():
    ex = explorer(draw, show=False, n=(64, 16, 256, 16), h=(4, 1, 16), beta=(1.0, 0.25, 2.0, 0.05))
    with pytest.raises(TypeError, match="unknown explorer parameter"):
        ex(d_k=8)


def test_slider_kinds_and_ranges():
    assert slider_kind(4, 1, 16, 1) is int
    assert slider_kind(1.0, 0.25, 2.0, 0.05) is float
    with pytest.raises(ValueError):
        slider_kind(4, 1, 16, 0)
    ex = explorer(draw, show=False, n=(2048, 16, 1024, 16), h=(4, 1, 16), beta=(1.0, 0.25, 2.0, 0.05))
    assert ex.sliders["n"] == (2048, 16, 2048, 16)  # the default state stays reachable


def test_widgets_have_one_slider_per_parameter():
    widgets = pytest.importorskip("ipywidgets")
    ex = explorer(draw, show=False, n=(64, 16, 256, 16), h=(4, 1, 16), beta=(1.0, 0.25, 2.0, 0.05))
    w = ex.widgets()
    kinds = {c.description: type(c) for c in w.children if isinstance(c, widgets.widgets.ValueWidget)}
    assert kinds == {"n": widgets.IntSlider, "h": widgets.IntSlider, "beta": widgets.FloatSlider}


def test_choices_are_checked_and_become_menus(capsys):
    from bookrun.explore import Choice

    def pick(name, tied, n):
        return name, tied, n

    ex = explorer(pick, show=False, name=Choice("a", ("a", "b")), tied=Choice(False, (False, True)), n=(8, 1, 16))
    assert ex() == ("a", False, 8) and ex(name="b", tied=True) == ("b", True, 8)
    assert ex(name="c") is None
    assert capsys.readouterr().out == "not available: name = 'c'; choose one of 'a', 'b'\n"
    with pytest.raises(ValueError, match="not among the options"):
        Choice("c", ("a", "b"))
    widgets = pytest.importorskip("ipywidgets")
    kinds = {c.description: type(c) for c in ex.widgets().children if isinstance(c, widgets.widgets.ValueWidget)}
    assert kinds == {"name": widgets.Dropdown, "tied": widgets.Checkbox, "n": widgets.IntSlider}
