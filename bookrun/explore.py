"""Slider explorers for the chapters: one factory, one fallback.

A chapter's explorer is a plain function of a few layer parameters that draws
one figure. :func:`explorer` wraps it so that

* an impossible layer (a :class:`gelib.ConfigError`: ``n > d``, ``h`` not
  divisible by ``h_kv``, ``beta`` out of range, ...) prints the one-line
  message ``not available: ...`` instead of a traceback;
* it is called once with its default values; or, given ``static=(name,
  values)``, once per value of that one parameter, and the figures become one
  self-contained HTML block (:func:`slider_html`): a range input that swaps
  precomputed PNGs with a few lines of inline JavaScript, so the static book's
  slider works offline, with no kernel; ``static=(name, values, layers)`` draws
  those values at a few other layers too, and a second range input picks the
  layer (:func:`grid_html`);
* in a live notebook with ``ipywidgets`` it gets a slider per parameter and a
  "redraw" button (manual: each new shape compiles once, a few seconds on a
  CPU); without ``ipywidgets`` one line says how to get them.

The returned :class:`Explorer` can be called with any values, which is how
readers without widgets, and the tests, use it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import inspect
import io
import json
import numbers
import sys
from collections.abc import Callable, Sequence
from unittest import mock

from gelib.config import ConfigError

__all__ = [
    "CHECK_HASH",
    "Choice",
    "Explorer",
    "Frames",
    "explorer",
    "figure_png",
    "grid_html",
    "show_frames",
    "slider_html",
    "slider_kind",
    "value_label",
]

#: The URL hash on which a static slider moves itself and records the images it showed
#: (``tools/check_pages.py``'s ``slider`` check).
CHECK_HASH = "#slider-check"


@dataclasses.dataclass(frozen=True)
class Choice:
    """A parameter that takes one of a few values (a preset's name, a flag):
    a drop-down menu in the widgets, a check box for ``(False, True)``.

    >>> Choice("bert-base", ("bert-base", "gpt3-175b")).value
    'bert-base'
    """

    value: object
    options: tuple

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(self.options))
        if self.value not in self.options:
            raise ValueError(f"choice {self.value!r} is not among the options {self.options}")


@dataclasses.dataclass(frozen=True)
class Frames:
    """The precomputed figures of an :class:`Explorer`: one parameter's ``values`` at each of a few
    ``layers`` (one row per layer, the default layer first).

    ``layers`` holds each layer's label (``"default"``, ``"d_k = 8"``, ...), ``pngs`` one row
    of PNGs per layer (the reason, a string, where that layer is not available), ``skipped``
    the ``(setting, reason)`` pairs of the layers not available, ``start`` the index of the
    default value in ``values`` (the frame shown first: the default layer at it).
    """

    name: str
    values: tuple
    layers: tuple
    pngs: tuple
    skipped: tuple
    start: int

    @property
    def drawn(self) -> tuple:
        """``(value, png)`` of the default layer's frames, in slider order."""
        return tuple((v, png) for v, png in zip(self.values, self.pngs[0]) if isinstance(png, bytes))

    def html(self) -> str:
        """The static slider over these frames: :func:`slider_html` for one layer, else
        :func:`grid_html` with a slider over the layers above the one over ``name``."""
        axes = [("layer", self.layers, ": ")] if len(self.layers) > 1 else []
        axes.append((self.name, [value_label(v) for v in self.values], " = "))
        return grid_html(axes, [png for row in self.pngs for png in row], self.start, self.skipped)


@dataclasses.dataclass(frozen=True)
class Explorer:
    """A chapter's drawing function with its slider ranges.

    ``sliders`` maps each parameter to ``(value, min, max, step)``, or to a
    :class:`Choice`.
    """

    fn: Callable[..., object]
    sliders: dict

    def defaults(self) -> dict:
        """The parameters' default values (the static book's state)."""
        return {name: spec.value if isinstance(spec, Choice) else spec[0] for name, spec in self.sliders.items()}

    def __call__(self, **values):
        """Draw at ``values`` (missing ones at their defaults) and show the figures the drawing
        function opened (``plt.show()``: it need not call it); a bad layer prints why.

        Returns what the drawing function returns, or ``None`` when the layer is
        not available.
        """
        unknown = sorted(set(values) - set(self.sliders))
        if unknown:
            raise TypeError(f"unknown explorer parameter(s) {unknown}; known: {sorted(self.sliders)}")
        for name, value in values.items():
            spec = self.sliders[name]
            if isinstance(spec, Choice) and value not in spec.options:
                print(f"not available: {name} = {value!r}; choose one of {', '.join(map(repr, spec.options))}")
                return None
        plt = sys.modules.get("matplotlib.pyplot")  # a drawing function has imported it by the time it draws
        before = set(plt.get_fignums()) if plt else set()
        try:
            out = self.fn(**{**self.defaults(), **values})
        except ConfigError as err:
            print(f"not available: {err}")
            return None
        plt = sys.modules.get("matplotlib.pyplot")
        if plt and set(plt.get_fignums()) - before:
            plt.show()  # the figures it drew, here (in a notebook, the inline backend shows and closes them)
        return out

    def frames(self, name: str, values: Sequence, layers: Sequence[dict] = ()) -> Frames:
        """The figure at each of ``values`` of parameter ``name``, as PNGs: at the default layer, and
        at each of ``layers`` (each a dict of other parameters' values, the rest at their defaults).

        The default value is added when missing; the values are sorted (a
        :class:`Choice`'s in the order of its options). ``plt.show()`` shows
        nothing while the figures are drawn, and every figure a call opens is
        closed after it; a layer that is not available (:class:`gelib.ConfigError`)
        is left out with its reason, and so is a value or a layer with no frame at all.
        """
        values = self._static_values(name, values)
        rows = [{}]
        for layer in layers:
            layer = dict(layer)
            if name in layer or not layer:
                raise ValueError(f"a static layer sets other parameters than {name!r}, and at least one: {layer}")
            for key, value in layer.items():
                self._static_values(key, [value])
            rows.append(layer)
        labels = ["default", *(", ".join(f"{k} = {value_label(v)}" for k, v in r.items()) for r in rows[1:])]
        grid, skipped = [], []
        for label, layer in zip(labels, rows):
            grid.append([])
            for value in values:
                png, why = self._draw({**layer, name: value})
                grid[-1].append(png if why is None else why)
                if why is not None:
                    setting = (
                        f"{name} = {value_label(value)}" if not layer else f"{label}, {name} = {value_label(value)}"
                    )
                    skipped.append((setting, why))
        keep = [j for j in range(len(values)) if any(isinstance(row[j], bytes) for row in grid)]
        if len(rows) > 1:  # a value no layer has is listed once, as at the default layer
            out = {f"{name} = {value_label(values[j])}" for j in range(len(values)) if j not in keep}
            skipped = [s for s in skipped if s[0] in out or not s[0].endswith(tuple(f", {o}" for o in out))]
        kept = [i for i, row in enumerate(grid) if i == 0 or any(isinstance(png, bytes) for png in row)]
        default = self.defaults()[name]
        values = [values[j] for j in keep]
        row = [isinstance(grid[0][j], bytes) for j in keep]  # the default layer's frames drawn
        start = next((j for j, v in enumerate(values) if v == default and row[j]), row.index(True) if any(row) else 0)
        return Frames(
            name,
            tuple(values),
            tuple(labels[i] for i in kept),
            tuple(tuple(grid[i][j] for j in keep) for i in kept),
            tuple(skipped),
            start,
        )

    def _static_values(self, name: str, values: Sequence) -> list:
        """``values`` of parameter ``name`` with its default, sorted, each checked against its slider."""
        if name not in self.sliders:
            raise TypeError(f"unknown explorer parameter {name!r}; known: {sorted(self.sliders)}")
        spec, default = self.sliders[name], self.defaults()[name]
        values = list(dict.fromkeys([*values, default]))
        if isinstance(spec, Choice):
            wrong = [v for v in values if v not in spec.options]
            if wrong:
                raise ValueError(f"static values {wrong} of {name!r} are not among its options {spec.options}")
            values.sort(key=spec.options.index)
        else:
            wrong = [v for v in values if not spec[1] <= v <= spec[2]]
            if wrong:
                raise ValueError(f"static values {wrong} of {name!r} are outside its slider [{spec[1]}, {spec[2]}]")
            values.sort()
        return values

    def _draw(self, values: dict) -> tuple[bytes, None] | tuple[None, str]:
        """The PNG of the figure at ``values`` (the others at their defaults), or ``None`` and why not."""
        import matplotlib.pyplot as plt

        before = set(plt.get_fignums())
        try:
            with mock.patch.object(plt, "show", lambda *args, **kwargs: None):
                self.fn(**{**self.defaults(), **values})
            new = [n for n in plt.get_fignums() if n not in before]
            if not new:
                return None, "the explorer drew no figure"
            return figure_png(plt.gcf() if plt.gcf().number in new else plt.figure(new[-1])), None
        except ConfigError as err:
            return None, str(err)
        finally:
            for n in set(plt.get_fignums()) - before:
                plt.close(n)

    def widgets(self):
        """An ``ipywidgets.interactive`` with one slider per parameter and a redraw button."""
        import ipywidgets

        controls = {}
        for name, spec in self.sliders.items():
            if isinstance(spec, Choice) and spec.options == (False, True):
                controls[name] = ipywidgets.Checkbox(value=spec.value, description=name)
            elif isinstance(spec, Choice):
                controls[name] = ipywidgets.Dropdown(value=spec.value, options=spec.options, description=name)
            else:
                value, lo, hi, step = spec
                cls = ipywidgets.IntSlider if slider_kind(value, lo, hi, step) is int else ipywidgets.FloatSlider
                controls[name] = cls(value=value, min=lo, max=hi, step=step)

        def redraw(**values):
            return self(**values)

        redraw.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=v) for name, v in self.defaults().items()]
        )
        return ipywidgets.interactive(redraw, {"manual": True, "manual_name": "redraw"}, **controls)


def slider_kind(value: float, lo: float, hi: float, step: float) -> type:
    """``int`` when all four numbers are integers, else ``float``.

    >>> slider_kind(4, 1, 16, 1), slider_kind(1.0, 0.25, 2.0, 0.05)
    (<class 'int'>, <class 'float'>)
    """
    parts = (value, lo, hi, step)
    if not all(isinstance(p, numbers.Real) and not isinstance(p, bool) for p in parts):
        raise TypeError(f"slider values must be numbers, got {parts}")
    if not lo <= value <= hi or step <= 0:
        raise ValueError(f"a slider needs min <= value <= max and step > 0, got {parts}")
    return int if all(isinstance(p, numbers.Integral) for p in parts) else float


def value_label(value: object) -> str:
    """A slider value as the static slider writes it: ``0.5``, ``64``, ``bert-base``.

    >>> value_label(0.5), value_label(64), value_label(2.0), value_label("bert-base")
    ('0.5', '64', '2', 'bert-base')
    """
    return f"{value:g}" if isinstance(value, float) else str(value)


def figure_png(fig, colors: int | None = 256) -> bytes:
    """The PNG of ``fig`` as the book writes it (:func:`gelib.plotting.book_png`: fitted to the column,
    a tight box, its dpi and smallest font size recorded), at the figure's own dpi, undated.

    With ``colors`` (the default), an opaque figure is stored with a palette of at
    most that many colours, undithered: line plots and histograms look the same,
    at about a third of the bytes (a slider holds several frames). The palette PNG keeps
    the resolution and the font-size chunk, which ``tools/check_pages.py`` reads.
    """
    from PIL import Image, PngImagePlugin

    from gelib.plotting.style import book_png

    data = book_png(fig, dpi=fig.dpi)
    if colors is None:
        return data
    image = Image.open(io.BytesIO(data))
    if image.mode == "RGBA" and image.getextrema()[3][0] < 255:  # transparent somewhere: keep it exact
        return data
    info = PngImagePlugin.PngInfo()
    for key, value in image.text.items():
        info.add_text(key, value)
    small = io.BytesIO()
    image.convert("RGB").quantize(colors, Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        small, "PNG", optimize=True, pnginfo=info, dpi=image.info.get("dpi", (fig.dpi, fig.dpi))
    )
    return min(small.getvalue(), data, key=len)


# The static slider's behaviour: an input event shows the frame of the inputs' values (row-major over
# the axes); on CHECK_HASH the inputs move themselves in turn, as a reader's drags would, and the block
# records what the image was before and after each move (frame:checksum) and each new image's width.
_SCRIPT = """(function () {
  var root = document.getElementById(%(id)s), inputs = root.querySelectorAll("input"), img = root.querySelector("img");
  var outs = root.querySelectorAll("output"), note = root.querySelector("p.explorer-slider-gone");
  var frames = %(frames)s, axes = %(axes)s, gone = %(gone)s;
  frames[%(start)d] = img.getAttribute("src");
  function index() {
    for (var i = 0, a = 0; a < inputs.length; a++) i = i * axes[a][1].length + Number(inputs[a].value);
    return i;
  }
  function show() {
    var i = index(), said = [];
    for (var a = 0; a < inputs.length; a++) {
      var text = axes[a][0] + axes[a][2] + axes[a][1][Number(inputs[a].value)];
      outs[a].textContent = text;
      said.push(text);
    }
    img.hidden = !frames[i];
    note.hidden = !!frames[i];
    note.textContent = frames[i] ? "" : "not available: " + said.join(", ") + ": " + gone[i];
    if (frames[i]) img.setAttribute("src", frames[i]);
    img.setAttribute("alt", "the explorer's figure at " + said.join(", "));
  }
  for (var a = 0; a < inputs.length; a++) inputs[a].addEventListener("input", show);
  if (window.location.hash !== %(hash)s) return;
  function state() {
    for (var h = 0, s = img.hidden ? "" : img.getAttribute("src"), k = 0; k < s.length; k++)
      h = (Math.imul(h, 31) + s.charCodeAt(k)) | 0;
    return index() + ":" + (h >>> 0).toString(16);
  }
  var states = [state()], widths = [];
  for (var b = 0; b < inputs.length; b++) {
    var last = Number(inputs[b].max);
    inputs[b].value = Number(inputs[b].value) === last ? 0 : last;
    inputs[b].dispatchEvent(new Event("input", {bubbles: true}));
    states.push(state());
    var im = new Image();
    im.src = frames[index()] || "";
    widths.push(im.decode().then(function (x) { return function () { return x.naturalWidth; }; }(im),
                                 function () { return 0; }));
  }
  root.setAttribute("data-check-before", states[0]);
  root.setAttribute("data-check-after", states.slice(1).join(" "));
  Promise.all(widths).then(function (w) { root.setAttribute("data-check-width", w.join(" ")); });
})();"""


def slider_html(name: str, frames: Sequence[tuple[object, bytes]], start: int = 0, skipped: Sequence = ()) -> str:
    """One self-contained HTML block: a range input over ``frames`` (``(value, png)`` pairs) that
    swaps an ``<img>``'s PNG data URI, starting at ``frames[start]``; ``skipped`` ``(value,
    reason)`` pairs are listed under the slider. :func:`grid_html` with one axis.
    """
    if not frames:
        raise ValueError(f"a static slider over {name!r} needs at least one frame")
    axes = [(name, [value_label(v) for v, _ in frames], " = ")]
    return grid_html(
        axes, [png for _, png in frames], start, [(f"{name} = {value_label(v)}", why) for v, why in skipped]
    )


def grid_html(axes: Sequence[tuple], pngs: Sequence[bytes | str], start: int = 0, skipped: Sequence = ()) -> str:
    """One self-contained HTML block: a range input per axis that swaps an ``<img>``'s PNG data URI,
    starting at ``pngs[start]``.

    ``axes`` holds ``(name, labels, separator)`` per slider (its output reads
    ``name + separator + label``: ``beta = 1.5``, ``layer: d_k = 8``); ``pngs`` the
    frames in row-major order over the axes (the last axis varies fastest), a string
    where that combination is not available (the reason, which the block then shows
    instead of a figure). Nothing is loaded from anywhere: the PNGs are in the block,
    the script is inline. ``skipped`` ``(setting, reason)`` pairs are listed under the
    sliders. The block is marked ``data-static-slider`` (the axes' names, comma-separated)
    for ``tools/check_pages.py``, which loads the page with the hash ``#slider-check``
    (:data:`CHECK_HASH`): the script then moves each slider in turn to its last
    position (its first, when it is at the last), through the same ``input`` event
    as a drag, and records ``frame:checksum`` of the image's ``src`` before
    (``data-check-before``) and after each move (``data-check-after``, one per axis,
    space-separated), and the width of each new image once decoded (``data-check-width``,
    one per axis).
    """
    axes = [(str(name), [str(label) for label in labels], str(sep)) for name, labels, sep in axes]
    positions: list[list[int]] = [[]]
    for _, labels, _ in axes:  # each frame's position on every axis, row-major
        positions = [[*head, k] for head in positions for k in range(len(labels))]
    if not axes or len(positions) != len(pngs) or not 0 <= start < len(pngs) or isinstance(pngs[start], str):
        raise ValueError(
            f"a static slider needs one frame per combination of its axes ({len(positions)}, got {len(pngs)})"
            " and a drawn start frame"
        )
    uris = [p if isinstance(p, str) else "data:image/png;base64," + base64.b64encode(p).decode("ascii") for p in pngs]
    drawn = [not isinstance(p, str) for p in pngs]
    digest = hashlib.sha256(json.dumps([axes, uris, [list(map(str, s)) for s in skipped]]).encode())
    uid = "explorer-slider-" + digest.hexdigest()[:12]
    # the shown frame is read from the <img>; a frame not available is "" and its reason is in `gone`
    js = [None if i == start else (u if ok else "") for i, (u, ok) in enumerate(zip(uris, drawn))]
    gone = {i: u for i, (u, ok) in enumerate(zip(uris, drawn)) if not ok}
    said = [f"{name}{sep}{labels[k]}" for (name, labels, sep), k in zip(axes, positions[start])]

    def lit(obj) -> str:  # a JavaScript literal that cannot close the <script>
        return json.dumps(obj).replace("</", "<\\/")

    script = _SCRIPT % dict(
        id=lit(uid), frames=lit(js), axes=lit(axes), gone=lit(gone), start=start, hash=lit(CHECK_HASH)
    )
    e = html.escape
    names = ", ".join(name for name, _, _ in axes)

    def listing(labels: list[str]) -> str:
        return ("; " if any(", " in label for label in labels) else ", ").join(labels)

    if len(axes) == 1:
        what = f"{names}: {len(pngs)} precomputed frames ({listing(axes[0][1])}); move the slider"
    else:
        grid = " by ".join(f"{name} ({listing(labels)})" for name, labels, _ in axes)
        what = f"{sum(drawn)} precomputed frames, {grid}; move the sliders"
    listed = "".join(f"<li>not available: {e(str(s))}: {e(str(why))}</li>" for s, why in skipped)
    inputs = "".join(
        f'<div><label for="{uid}-range-{a}" style="display:inline-block;min-width:3em">{e(name)}</label> '
        f'<input type="range" id="{uid}-range-{a}" min="0" max="{len(labels) - 1}" step="1" value="{k}"'
        f' style="width:18em;max-width:65%;vertical-align:middle"> <output for="{uid}-range-{a}">'
        f"{e(text)}</output></div>\n"
        for a, ((name, labels, _), k, text) in enumerate(zip(axes, positions[start], said))
    )
    return (
        f'<div class="explorer-slider" id="{uid}" data-static-slider="{e(names)}" data-frames="{len(pngs)}">\n'
        f"<div>{e(what)} (no kernel needed)</div>\n"
        + inputs
        + (f'<ul style="margin:0.2em 0">{listed}</ul>\n' if listed else "")
        + '<p class="explorer-slider-gone" hidden></p>\n'
        + f'<img src="{uris[start]}" alt="the explorer\'s figure at {e(", ".join(said))}"'
        ' style="max-width:100%;height:auto">\n'
        f"<script>\n{script}\n</script>\n</div>"
    )


def explorer(
    fn: Callable[..., object],
    *,
    show: bool = True,
    static: tuple[str, Sequence] | tuple[str, Sequence, Sequence[dict]] | None = None,
    **sliders: Sequence[float],
) -> Explorer:
    """Wrap ``fn`` as an :class:`Explorer`, draw its default state, offer sliders.

    Each keyword is a parameter of ``fn`` with its ``(value, min, max, step)``
    (``step`` may be left out: 1), or a :class:`Choice`. With ``show=False`` nothing is drawn or
    displayed (for tests and for chapters that draw the default state
    elsewhere).

    ``static=("beta", (0.5, 1.0, 1.5, 2.0))`` draws the figure at each of those
    values of one parameter instead of the default state alone (the default
    value is added when missing; :meth:`Explorer.frames`) and displays them as
    one static slider (:func:`slider_html`), which works in the static HTML book
    with no kernel and no network; the bundle carries the default frame as a
    PNG too, for front ends that show no HTML. A third entry, a sequence of
    layers (``({"d_k": 8}, {"n": 64, "d_k": 256})``, each the values of some other
    parameters), draws those values at each of those layers as well: a second
    static slider, over the layers, picks the row (:func:`grid_html`). A live
    notebook gets the ``ipywidgets`` sliders below it as well.

    >>> ex = explorer(lambda n: n * n, show=False, n=(4, 1, 8))
    >>> ex(n=3), ex.defaults()
    (9, {'n': 4})
    """
    specs = {}
    for name, spec in sliders.items():
        if isinstance(spec, Choice):
            specs[name] = spec
            continue
        spec = tuple(spec)
        if len(spec) == 3:
            spec = (*spec, 1)
        if len(spec) != 4:
            raise ValueError(f"slider {name!r}: give (value, min, max[, step]), got {spec}")
        value, lo, hi, step = spec
        spec = (value, min(lo, value), max(hi, value), step)  # the default is always reachable
        slider_kind(*spec)
        specs[name] = spec
    ex = Explorer(fn, specs)
    if show and static is not None:
        show_frames(ex.frames(*static))
    elif show:
        ex()
    if show:
        try:
            import ipywidgets  # noqa: F401
            from IPython.display import display
        except ImportError:
            print("install ipywidgets for the interactive explorer")
        else:
            display(ex.widgets())
    return ex


def show_frames(frames: Frames) -> None:
    """Display ``frames`` as one static slider (HTML, with the default frame as PNG and a line of text
    for front ends that show neither); with no frame at all, print why each setting is not available."""
    if not frames.drawn:
        for setting, why in frames.skipped:
            print(f"not available: {setting}: {why}")
        return
    from IPython.display import display

    values = ", ".join(value_label(v) for v in frames.values)
    layers = f" at {len(frames.layers)} layers ({'; '.join(frames.layers)})" if len(frames.layers) > 1 else ""
    count = sum(isinstance(png, bytes) for row in frames.pngs for png in row)
    bundle = {
        "text/plain": f"<static slider over {frames.name} = {values}{layers}: {count} frames>",
        "text/html": frames.html(),
        "image/png": base64.b64encode(frames.pngs[0][frames.start]).decode("ascii"),
    }
    display(bundle, raw=True)
