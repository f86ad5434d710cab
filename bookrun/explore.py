"""Slider explorers for the chapters: one factory, one fallback.

A chapter's explorer is a plain function of a few layer parameters that draws
one figure. :func:`explorer` wraps it so that

* an impossible layer (a :class:`gelib.ConfigError`: ``n > d``, ``h`` not
  divisible by ``h_kv``, ``beta`` out of range, ...) prints the one-line
  message ``not available: ...`` instead of a traceback;
* it is called once with its default values (the state the static book
  shows);
* in a live notebook with ``ipywidgets`` it gets a slider per parameter and a
  "redraw" button (manual: each new shape compiles once, a few seconds on a
  CPU); without ``ipywidgets`` one line says how to get them.

The returned :class:`Explorer` can be called with any values, which is how
readers without widgets, and the tests, use it.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
from collections.abc import Callable, Sequence

from gelib.config import ConfigError

__all__ = ["Choice", "Explorer", "explorer", "slider_kind"]


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


def explorer(fn: Callable[..., object], *, show: bool = True, **sliders: Sequence[float]) -> Explorer:
    """Wrap ``fn`` as an :class:`Explorer`, draw its default state, offer sliders.

    Each keyword is a parameter of ``fn`` with its ``(value, min, max, step)``
    (``step`` may be left out: 1), or a :class:`Choice`. With ``show=False`` nothing is drawn or
    displayed (for tests and for chapters that draw the default state
    elsewhere).

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
    if show:
        ex()
        try:
            import ipywidgets  # noqa: F401
            from IPython.display import display
        except ImportError:
            print("install ipywidgets for the interactive explorer")
        else:
            display(ex.widgets())
    return ex
