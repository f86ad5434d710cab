"""Running the book's chapters: loading with injected parameters.

Chapters are Jupytext MyST-markdown notebooks in ``book/``. Their order lives
in ``_toc.yml`` only. Each has one cell tagged ``parameters``; Papermill's
parameterisation inserts an ``injected-parameters`` cell after it, as it does
for ``.ipynb`` files, so the same mechanism serves nbval (``conftest.py``) and
the batch.
"""

from __future__ import annotations

import copy
from pathlib import Path

__all__ = ["is_chapter", "load_chapter"]


def is_chapter(path) -> bool:
    """A ``.md`` file whose front matter declares a Jupyter kernel."""
    path = Path(path)
    if path.suffix != ".md":
        return False
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "\nkernelspec:" in head


def load_chapter(path, parameters: dict | None = None):
    """The chapter as a notebook, with ``parameters`` injected after its parameters cell."""
    import jupytext
    from papermill.parameterize import parameterize_notebook

    nb = jupytext.read(str(path))
    # The metadata Papermill adds when it loads an .ipynb (papermill.iorw.load_notebook_node).
    nb.metadata.setdefault("papermill", {"default_parameters": {}, "parameters": {},
                                         "environment_variables": {}})
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
        cell.metadata.setdefault("papermill", {})
    if not any("parameters" in c.metadata.get("tags", []) for c in nb.cells):
        raise ValueError(f"{path}: no cell tagged 'parameters'")
    if parameters:
        nb = parameterize_notebook(copy.deepcopy(nb), dict(parameters))
    return nb
