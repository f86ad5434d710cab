"""Numbers for the chapters' prose: many values glued in one call.

A chapter quotes a computed number in its text with ``{glue:text}`name:fmt```
(myst-nb); the cell that computes it glues it, without showing it, under a name
with the chapter's prefix. :func:`values` does that for many values at once, so
that a chapter's cell ends with one line instead of a loop.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["values"]


def values(prefix: str = "", values: Mapping[str, object] | None = None, /, **more: object) -> None:
    """Glue every value of ``values`` and of the keywords under ``prefix + name``, not displayed.

    The values are passed on unchanged (``myst_nb.glue(name, value, display=False)``), in
    the order given; a name in both ``values`` and the keywords is an error, as is a
    name that is not a string.

    >>> values("den_", slope=-0.61, slope_ci=0.04)   # glues den_slope and den_slope_ci  # doctest: +SKIP
    """
    from myst_nb import glue as _glue

    items = dict(values or {})
    if not all(isinstance(name, str) for name in items):
        raise TypeError(f"glue names must be strings: {list(items)}")
    twice = sorted(set(items) & set(more))
    if twice:
        raise ValueError(f"glued twice: {', '.join(twice)}")
    for name, value in {**items, **more}.items():
        _glue(f"{prefix}{name}", value, display=False)
