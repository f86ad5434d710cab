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
    """The first slider's value attribute, its shown image, the frames of its script and the labels of its last axis."""
    start = int(re.search(r'<input type="range"[^>]* value="(\d+)"', html).group(1))
    shown = re.search(r'<img src="(data:image/png;base64,[^"]+)"', html).group(1)
    script = re.search(r"frames = (\[.*?\]), axes = (\[.*?\]), gone = (\{.*?\});", html)
    return start, shown, json.loads(script.group(1)), json.loads(script.group(2))[-1][1]


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
    assert len(fr.skipped) == 1 and fr.skipped[0][0] == "beta = 2.5" and "beta" in fr.skipped[0][1]
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


def test_called_explorer_shows_the_figures_it_drew(monkeypatch):
    """The drawing function need not call ``plt.show()``: the explorer shows what it drew, once."""
    import matplotlib.pyplot as plt

    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(len(plt.get_fignums())))

    def curve(beta):
        plt.subplots()
        plt.plot([0, beta])

    ex = explorer(curve, show=False, beta=(1.0, 0.25, 2.0, 0.05))
    ex(beta=1.5)
    assert shown == [1]
    ex = explorer(lambda beta: beta, show=False, beta=(1.0, 0.25, 2.0, 0.05))
    assert ex(beta=0.5) == 0.5 and shown == [1]  # nothing drawn, nothing shown
    plt.close("all")


def draw_two(beta, n):
    """A figure that depends on beta and n; beta > 2 is impossible, and so is beta = 2 at n = 32."""
    import matplotlib.pyplot as plt

    AttentionConfig(n=n, d=n, h=1, d_k=n, beta=beta if beta < 2 or (beta == 2 and n < 32) else -beta)
    plt.subplots(figsize=(3, 2))
    plt.plot([0, 1, 2], [0, beta, n])


def test_static_layers_make_a_grid_of_frames_default_layer_first():
    import matplotlib.pyplot as plt

    ex = explorer(draw_two, show=False, beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    fr = ex.frames("beta", (0.5, 2.0, 2.5), ({"n": 16}, {"n": 32}))
    assert fr.values == (0.5, 1.0, 2.0) and fr.layers == ("default", "n = 16", "n = 32") and fr.start == 1
    kinds = [[type(p).__name__ for p in row] for row in fr.pngs]
    assert kinds == [["bytes"] * 3, ["bytes"] * 3, ["bytes", "bytes", "str"]], kinds
    pngs = [p for row in fr.pngs for p in row if isinstance(p, bytes)]
    assert len(set(pngs)) == 8 and plt.get_fignums() == []  # 8 different figures, every one closed
    # beta = 2.5 is no layer's: listed once; beta = 2 at n = 32 is listed with its layer
    assert [s for s, _ in fr.skipped] == ["beta = 2.5", "n = 32, beta = 2"], fr.skipped
    # the default layer's frames are those of the one-axis slider
    assert fr.drawn == ex.frames("beta", (0.5, 2.0)).drawn
    html = fr.html()
    assert 'data-static-slider="layer, beta"' in html and 'data-frames="9"' in html
    assert "8 precomputed frames, layer (default, n = 16, n = 32) by beta (0.5, 1, 2)" in html
    start, shown, frames, labels = frames_of(html)
    assert start == 0 and labels == ["0.5", "1", "2"]  # the first input is the layer's, at the default
    assert shown.endswith(base64.b64encode(fr.pngs[0][1]).decode()) and frames[1] is None  # read from the <img>
    assert frames[8] == "" and sum(bool(f) for f in frames) == 7  # n = 32, beta = 2: not available
    gone = json.loads(re.search(r"gone = (\{.*?\});", html).group(1))
    assert list(gone) == ["8"] and "beta must be positive" in gone["8"]
    assert re.findall(r'<input type="range"[^>]* max="(\d+)" step="1" value="(\d+)"', html) == [("2", "0"), ("2", "1")]


def test_static_layers_are_checked():
    ex = explorer(draw_two, show=False, beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    with pytest.raises(ValueError, match="other parameters than 'beta'"):
        ex.frames("beta", (0.5,), ({"beta": 2.0},))
    with pytest.raises(ValueError, match="other parameters than 'beta'"):
        ex.frames("beta", (0.5,), ({},))
    with pytest.raises(TypeError, match="unknown explorer parameter 'd_k'"):
        ex.frames("beta", (0.5,), ({"d_k": 8},))
    with pytest.raises(ValueError, match="outside its slider"):
        ex.frames("beta", (0.5,), ({"n": 128},))


def test_a_grid_needs_a_frame_per_combination():
    from bookrun.explore import grid_html

    axes = [("layer", ["a", "b"], ": "), ("beta", ["1", "2"], " = ")]
    with pytest.raises(ValueError, match="one frame per combination"):
        grid_html(axes, [b"x"] * 3)
    with pytest.raises(ValueError, match="drawn start frame"):
        grid_html(axes, ["not drawn", b"x", b"x", b"x"], 0)


def test_static_explorer_with_layers_displays_the_grid(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    explorer(draw_two, static=("beta", (1.5,), ({"n": 16},)), beta=(1.0, 0.25, 3.0, 0.05), n=(8, 8, 64))
    bundle = shown[0][0]
    assert bundle["text/plain"] == "<static slider over beta = 1, 1.5 at 2 layers (default; n = 16): 4 frames>"
    assert 'data-static-slider="layer, beta"' in bundle["text/html"]
