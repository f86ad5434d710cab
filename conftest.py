"""Collect the book's Jupytext chapters as nbval notebooks, at "ci" scale.

nbval only collects ``.ipynb``; here a chapter (``book/*.md`` with a
``kernelspec`` in its front matter) is read with Jupytext, ``scale = "ci"``
is injected after its ``parameters`` cell (as Papermill would), and nbval's
own collector runs every cell. Chapters store no outputs, so nbval checks
that every cell runs; the chapters' ``assert``s check what they claim.
"""

import os
from unittest import mock

# Kernels inherit this: see the Makefile (XLA and OpenBLAS thread pools compete).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import nbformat
import nbval.plugin

from gelib.batch import is_chapter, load_chapter

CI_PARAMETERS = {"scale": "ci"}


class _Reader:
    """Stands in for ``nbformat`` inside nbval's collector: returns our notebook."""

    def __init__(self, nb):
        self._nb = nb

    def read(self, *args, **kwargs):
        return self._nb

    def __getattr__(self, name):
        return getattr(nbformat, name)


class ChapterFile(nbval.plugin.IPyNbFile):
    def collect(self):
        nb = load_chapter(self.path, CI_PARAMETERS)
        with mock.patch.object(nbval.plugin, "nbformat", _Reader(nb)):
            return list(super().collect())


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if (opt.nbval or opt.nbval_lax) and is_chapter(file_path):
        return ChapterFile.from_parent(parent, path=file_path)
