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
  slider works offline, with no kernel;
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
    """The precomputed figures of one parameter of an :class:`Explorer`.

    ``drawn`` holds ``(value, png)`` pairs in slider order, ``skipped`` the
    ``(value, reason)`` pairs whose layer is not available, ``start`` the index
    of the default value's frame.
    """

    name: str
    drawn: tuple
    skipped: tuple
    start: int

    def html(self) -> str:
        """The static slider over these frames (:func:`slider_html`)."""
        return slider_html(self.name, self.drawn, self.start, self.skipped)


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
        """Draw at ``values`` (missing ones at their defaults); a bad layer prints why.

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
        try:
            return self.fn(**{**self.defaults(), **values})
        except ConfigError as err:
            print(f"not available: {err}")
            return None

    def frames(self, name: str, values: Sequence) -> Frames:
        """The figure at each of ``values`` of parameter ``name`` (the others at their defaults), as PNGs.

        The default value is added when missing; the values are sorted (a
        :class:`Choice`'s in the order of its options). ``plt.show()`` shows
        nothing while the figures are drawn, and every figure a call opens is
        closed after it; a layer that is not available (:class:`gelib.ConfigError`)
        is left out with its reason.
        """
        import matplotlib.pyplot as plt

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
        drawn, skipped = [], []
        for value in values:
            before = set(plt.get_fignums())
            try:
                with mock.patch.object(plt, "show", lambda *args, **kwargs: None):
                    self.fn(**{**self.defaults(), name: value})
                new = [n for n in plt.get_fignums() if n not in before]
                if new:
                    fig = plt.gcf() if plt.gcf().number in new else plt.figure(new[-1])
                    drawn.append((value, figure_png(fig)))
                else:
                    skipped.append((value, "the explorer drew no figure"))
            except ConfigError as err:
                skipped.append((value, str(err)))
            finally:
                for n in set(plt.get_fignums()) - before:
                    plt.close(n)
        start = next((i for i, (v, _) in enumerate(drawn) if v == default), 0)
        return Frames(name, tuple(drawn), tuple(skipped), start)

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


# The static slider's behaviour: the input event swaps the image; on CHECK_HASH the slider moves
# itself as a reader's drag would and writes what the image was before and after (frame:checksum).
_SCRIPT = """(function () {
  var root = document.getElementById(%(id)s), input = root.querySelector("input"), img = root.querySelector("img");
  var out = root.querySelector("output"), frames = %(frames)s, labels = %(labels)s;
  frames[%(start)d] = img.getAttribute("src");
  input.addEventListener("input", function () {
    var i = Number(input.value);
    img.setAttribute("src", frames[i]);
    img.setAttribute("alt", %(alt)s + labels[i]);
    out.textContent = %(name)s + " = " + labels[i];
  });
  if (window.location.hash !== %(hash)s) return;
  function sum(s) {
    for (var h = 0, k = 0; k < s.length; k++) h = (Math.imul(h, 31) + s.charCodeAt(k)) | 0;
    return (h >>> 0).toString(16);
  }
  var before = input.value + ":" + sum(img.getAttribute("src")), last = frames.length - 1;
  input.value = Number(input.value) === last ? 0 : last;
  input.dispatchEvent(new Event("input", {bubbles: true}));
  root.setAttribute("data-check-before", before);
  root.setAttribute("data-check-after", input.value + ":" + sum(img.getAttribute("src")));
  img.decode().then(function () { root.setAttribute("data-check-width", String(img.naturalWidth)); },
                    function () { root.setAttribute("data-check-width", "0"); });
})();"""


def slider_html(name: str, frames: Sequence[tuple[object, bytes]], start: int = 0, skipped: Sequence = ()) -> str:
    """One self-contained HTML block: a range input over ``frames`` (``(value, png)`` pairs) that
    swaps an ``<img>``'s PNG data URI, starting at ``frames[start]``.

    Nothing is loaded from anywhere: the PNGs are in the block, the script is inline.
    ``skipped`` ``(value, reason)`` pairs are listed under the slider. The block is
    marked ``data-static-slider`` for ``tools/check_pages.py``, which loads the page
    with the hash ``#slider-check`` (:data:`CHECK_HASH`): the script then moves the
    slider to its last frame (its first, when it starts at the last), through the
    same ``input`` event as a drag, and records ``frame:checksum`` of the image's
    ``src`` before and after (``data-check-before``, ``data-check-after``) and the
    decoded image's width (``data-check-width``).
    """
    if not frames:
        raise ValueError(f"a static slider over {name!r} needs at least one frame")
    labels = [value_label(v) for v, _ in frames]
    uris = ["data:image/png;base64," + base64.b64encode(png).decode("ascii") for _, png in frames]
    digest = hashlib.sha256(json.dumps([name, labels, uris, [list(map(str, s)) for s in skipped]]).encode())
    uid = "explorer-slider-" + digest.hexdigest()[:12]
    js = [None if i == start else u for i, u in enumerate(uris)]  # the shown frame is read from the <img>

    def lit(obj) -> str:  # a JavaScript literal that cannot close the <script>
        return json.dumps(obj).replace("</", "<\\/")

    script = _SCRIPT % dict(
        id=lit(uid),
        frames=lit(js),
        labels=lit(labels),
        start=start,
        alt=lit(f"the explorer's figure at {name} = "),
        name=lit(name),
        hash=lit(CHECK_HASH),
    )
    e = html.escape
    gone = "".join(f"<li>not available: {e(name)} = {e(value_label(v))}: {e(str(why))}</li>" for v, why in skipped)
    return (
        f'<div class="explorer-slider" id="{uid}" data-static-slider="{e(name)}" data-frames="{len(frames)}">\n'
        f'<div><label for="{uid}-range">{e(name)}: {len(frames)} precomputed frames ({e(", ".join(labels))});'
        " move the slider (no kernel needed)</label></div>\n"
        f'<div><input type="range" id="{uid}-range" min="0" max="{len(frames) - 1}" step="1" value="{start}"'
        f' style="width:18em;max-width:90%;vertical-align:middle"> <output for="{uid}-range">'
        f"{e(name)} = {e(labels[start])}</output></div>\n"
        + (f'<ul style="margin:0.2em 0">{gone}</ul>\n' if gone else "")
        + f'<img src="{uris[start]}" alt="the explorer\'s figure at {e(name)} = {e(labels[start])}"'
        ' style="max-width:100%;height:auto">\n'
        f"<script>\n{script}\n</script>\n</div>"
    )


def explorer(
    fn: Callable[..., object],
    *,
    show: bool = True,
    static: tuple[str, Sequence] | None = None,
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
    PNG too, for front ends that show no HTML. A live notebook gets the
    ``ipywidgets`` sliders below it as well.

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
    for front ends that show neither); with no frame at all, print why each value is not available."""
    if not frames.drawn:
        for value, why in frames.skipped:
            print(f"not available: {frames.name} = {value_label(value)}: {why}")
        return
    from IPython.display import display

    values = ", ".join(value_label(v) for v, _ in frames.drawn)
    bundle = {
        "text/plain": f"<static slider over {frames.name} = {values}: {len(frames.drawn)} frames>",
        "text/html": frames.html(),
        "image/png": base64.b64encode(frames.drawn[frames.start][1]).decode("ascii"),
    }
    display(bundle, raw=True)
