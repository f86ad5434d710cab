"""The book's chapters: which files they are, how one is loaded as a notebook, and its parameters.

A chapter is a Jupytext MyST-markdown file of ``book/`` whose front matter
declares a kernel (:func:`is_chapter`); :func:`toc_files` lists the book's
files in ``_toc.yml`` order (their order lives there only); :func:`load_chapter`
reads one as a notebook with parameters injected after its ``parameters``
cell, as Papermill does (the batch and nbval through ``conftest.py`` share it);
:func:`chapter_overrides` checks ``-p NAME VALUE`` against the chapters'
``parameters`` cells before anything runs. :class:`BatchError` is the error of
every part of the batch.
"""

from __future__ import annotations

import ast
import copy
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # annotations only (nbformat is not a gelib dependency); where nbformat is named, Sphinx
    # reads the annotations as written, so those spell out pathlib.Path (a bare Path does not resolve)
    import pathlib

    import nbformat

__all__ = [
    "BatchError",
    "ROOT_FILES",
    "is_chapter",
    "load_chapter",
    "toc_files",
    "glued_values",
    "chapter_parameters",
    "chapter_overrides",
]

ROOT_FILES = ("_config.yml", "_toc.yml")


class BatchError(SystemExit):
    """A run that cannot start: nothing to resume, other parameters, or a run
    folder in the way.  A :class:`SystemExit`, so that a script calling
    :func:`~bookrun.batch.run_batch` ends with the message; ``python -m gelib batch`` reports it
    as ``python -m gelib batch: error: <message>``."""


def is_chapter(path: str | Path) -> bool:
    """A ``.md`` file whose front matter declares a Jupyter kernel."""
    path = Path(path)
    if path.suffix != ".md" or not path.is_file():
        return False
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "\nkernelspec:" in head


def load_chapter(path: str | pathlib.Path, parameters: dict | None = None) -> nbformat.NotebookNode:
    """The chapter as a notebook, with ``parameters`` injected after its parameters cell."""
    import jupytext
    from papermill.parameterize import parameterize_notebook

    nb = jupytext.read(str(path))
    # The metadata Papermill adds when it loads an .ipynb (papermill.iorw.load_notebook_node).
    nb.metadata.setdefault("papermill", {"default_parameters": {}, "parameters": {}, "environment_variables": {}})
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
        cell.metadata.setdefault("papermill", {})
    if not any("parameters" in c.metadata["tags"] for c in nb.cells):
        raise ValueError(f"{path}: no cell tagged 'parameters'")
    if parameters:
        nb = parameterize_notebook(copy.deepcopy(nb), dict(parameters))
    return nb


def toc_files(root: Path) -> list[str]:
    """The book's files in ``_toc.yml`` order (paths without extension)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def glued_values(nb: nbformat.NotebookNode) -> dict:
    """Every value a notebook glued with myst-nb (``{name: text/plain}``)."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                data = o.get("data", {})  # display=False glue prefixes the mime types
                text = [v for k, v in data.items() if k.endswith("text/plain")]
                out[name] = text[0] if text else sorted(data)
    return out


def chapter_parameters(path: str | Path) -> dict:
    """The names a chapter's ``parameters`` cell assigns, with their default
    values (``None`` where the default is not a literal)."""
    nb = load_chapter(path)
    cell = next(c for c in nb.cells if "parameters" in c.metadata["tags"])
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    try:
                        out[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        out[target.id] = None
    return out


def _check_value(name: str, value, default, chapter: str) -> None:
    if default is None or value is None:
        return
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,), tuple: (list, tuple), list: (list, tuple)}
    want = kinds.get(type(default))
    ok = want is None or (isinstance(value, want) and not (isinstance(value, bool) and bool not in want))
    if not ok:
        raise BatchError(
            f"-p {name} {json.dumps(value)}: {chapter} expects {type(default).__name__} (its default is {default!r})"
        )


def _as_text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _non_finite(value) -> str | None:
    """The first NaN or infinity in ``value`` (a number, or lists and dicts of them), as text, or ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    for v in items:
        found = _non_finite(v)
        if found is not None:
            return found
    return None


def chapter_overrides(root: Path, chapters: list[str], parameters: dict) -> dict[str, dict]:
    """The overrides each chapter receives: only the names its parameters cell has.

    Raises :class:`BatchError` for a name no selected chapter has (naming the
    chapters of the book that do) or a value of the wrong type."""
    if "data_dir" in parameters:
        raise BatchError("-p data_dir: set by the batch itself (the run folder's data/CHAPTER), not a user parameter")
    if "scale" in parameters:
        raise BatchError(
            f"-p scale: set by the batch itself; give --scale {_as_text(parameters['scale'])} instead of -p scale"
        )
    for name, value in parameters.items():
        bad = _non_finite(value)
        if bad is not None:
            raise BatchError(f"-p {name} {bad}: not a finite number; a chapter's parameters are finite")
    own = {f: chapter_parameters(root / f"{f}.md") for f in chapters}
    for name, value in parameters.items():
        having = [f for f in chapters if name in own[f]]
        if not having:
            book = [f for f in toc_files(root) if is_chapter(root / f"{f}.md")]
            elsewhere = [Path(f).name for f in book if name in chapter_parameters(root / f"{f}.md")]
            hint = f"; the chapters that have it: {', '.join(elsewhere)}" if elsewhere else ""
            raise BatchError(f"-p {name}: not a parameter of any chapter selected{hint}")
        for f in having:
            _check_value(name, value, own[f][name], Path(f).name)
    return {f: {k: v for k, v in parameters.items() if k in own[f]} for f in chapters}
