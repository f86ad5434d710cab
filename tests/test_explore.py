"""The explorer factory: defaults, bad layers as one line, sliders of the right kind, the static slider."""

import base64
import importlib.util
import io
import json
import re

import pytest
from PIL import Image

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


# ----------------------------------------------------------------------------- the static slider


def draw_curve(beta, n):
    """A figure that depends on beta; beta > 2 is an impossible layer (a ConfigError, as in the chapters)."""
    import matplotlib.pyplot as plt

    AttentionConfig(n=n, d=n, h=1, d_k=n, beta=beta if beta <= 2 else -beta)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, beta, 2 * beta])
    ax.set_title(f"beta = {beta}")
    plt.show()


def frames_of(html):
    """The slider's value attribute, its shown image and the other frames of its script."""
    start = int(re.search(r'<input type="range"[^>]* value="(\d+)"', html).group(1))
    shown = re.search(r'<img src="(data:image/png;base64,[^"]+)"', html).group(1)
    script = re.search(r"frames = (\[.*?\]), labels = (\[.*?\]);", html)
    return start, shown, json.loads(script.group(1)), json.loads(script.group(2))


def test_static_frames_one_per_available_value_default_first():
    import matplotlib.pyplot as plt

    ex = explorer(draw_curve, show=False, beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    fr = ex.frames("beta", (0.5, 1.5, 2.0, 2.5))  # the default 1.0 is added; 2.5 is not available
    assert [v for v, _ in fr.drawn] == [0.5, 1.0, 1.5, 2.0] and fr.start == 1
    assert [p[:8] for _, p in fr.drawn] == [b"\x89PNG\r\n\x1a\n"] * 4 and len({p for _, p in fr.drawn}) == 4
    frame = Image.open(io.BytesIO(fr.drawn[0][1]))
    assert frame.mode == "P"  # an opaque figure gets a palette (figure_png)
    # and keeps what the browser check reads its text size from: the smallest font and the dpi
    assert float(frame.text["gelib-min-font-pt"]) >= 8 and frame.info["dpi"][0] > 0
    assert len(fr.skipped) == 1 and fr.skipped[0][0] == 2.5 and "beta" in fr.skipped[0][1]
    assert plt.get_fignums() == []  # every frame's figure was closed
    html = fr.html()
    start, shown, others, labels = frames_of(html)
    assert labels == ["0.5", "1", "1.5", "2"] and len(others) == 4 and others[start] is None
    assert start == 1 and shown.endswith(base64.b64encode(fr.drawn[1][1]).decode())  # the default is shown first
    assert sum(o is not None for o in others) == 3 and 'max="3"' in html and "4 precomputed frames" in html
    assert "not available: beta = 2.5: " in html and html.count("<li>") == 1
    # same inputs, same HTML; nothing from the network
    assert (
        explorer(draw_curve, show=False, beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
        .frames("beta", (0.5, 1.5, 2.0, 2.5))
        .html()
        == html
    )
    code = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", html)  # the HTML and script, less the PNGs
    assert "http" not in code.lower() and "//" not in code and re.findall(r'src="([^"]*)"', code) == [""]


def test_static_values_are_checked():
    ex = explorer(draw_curve, show=False, beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    with pytest.raises(TypeError, match="unknown explorer parameter"):
        ex.frames("d_k", (8, 16))
    with pytest.raises(ValueError, match="outside its slider"):
        ex.frames("beta", (0.1, 1.0))
    from bookrun.explore import Choice

    def pick(name, n):
        draw_curve({"a": 1.0, "b": 1.5, "c": 2.0}[name], n)

    ex = explorer(pick, show=False, name=Choice("b", ("a", "b", "c")), n=(8, 1, 16))
    assert [v for v, _ in ex.frames("name", ("c", "a")).drawn] == ["a", "b", "c"]  # the options' order
    with pytest.raises(ValueError, match="not among its options"):
        ex.frames("name", ("d",))


def test_static_explorer_displays_the_slider_then_the_widgets(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    explorer(draw_curve, static=("beta", (2.0, 1.5)), beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    (bundle, raw), *rest = shown
    assert raw and set(bundle) == {"text/plain", "text/html", "image/png"}
    html = bundle["text/html"]
    assert 'data-static-slider="beta"' in html and "3 precomputed frames (1, 1.5, 2)" in html
    assert html.count(bundle["image/png"]) == 1 and frames_of(html)[0] == 0  # the default frame, also as a plain PNG
    if importlib.util.find_spec("ipywidgets"):
        assert len(rest) == 1 and not isinstance(rest[0][0], dict)  # the live widgets, below the slider
