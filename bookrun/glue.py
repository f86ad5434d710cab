"""Numbers for the chapters' prose: many values glued in one call.

A chapter quotes a computed number in its text with ``{glue:text}`name:fmt```
(myst-nb); the cell that computes it glues it, without showing it, under a name
with the chapter's prefix. :func:`values` does that for many values at once, so
that a chapter's cell ends with one line instead of a loop.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["values", "figure_csv"]


def values(prefix: str = "", values: Mapping[str, object] | None = None, /, **more: object) -> None:
    """Glue every value of ``values`` and of the keywords under ``prefix + name``, not displayed.

    The values are passed on (``myst_nb.glue(name, value, display=False)``), NumPy scalars
    as the Python numbers they hold, in the order given; a name in both ``values`` and the keywords is an error, as is a
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
        # a NumPy scalar as the Python number it holds: its repr, not its value, would reach the format
        value = value.item() if hasattr(value, "item") and getattr(value, "shape", None) == () else value
        _glue(f"{prefix}{name}", value, display=False)


def figure_csv(data: Mapping, data_dir: str | None, name: str) -> str | None:
    """Write a figure's numbers (a :mod:`gelib.figure_data` panel) as ``data_dir/name.csv``.

    ``data_dir`` is the folder the batch gives a chapter in its run folder (the chapter's
    ``data_dir`` parameter, ``_build/runs/RUN/data/CHAPTER``); ``None`` (a chapter run by hand
    or by the book's own build) writes nothing. Returns the path written, or ``None``.
    """
    if data_dir is None:
        return None
    from pathlib import Path

    from gelib.figure_data import write_csv

    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return str(write_csv(dict(data), folder / f"{name}.csv"))
