"""The repository's address is set in one place (``_config.yml``'s ``repository: url``): with it,
the built pages show the repository and issue buttons and point them at that address, and a
chapter shows Binder's launch button opening its Jupytext source; without it, no such button
shows (tools/book_offline). Two pages built with the book's own configuration: a Markdown page and
an executed notebook read from a Jupytext ``.md``, as a run folder holds them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
URL = "https://github.com/example-owner/example-book"

pytestmark = pytest.mark.skipif(
    shutil.which("jupyter-book") is None and not (Path(sys.executable).parent / "jupyter-book").exists(),
    reason="jupyter-book is not installed",
)


def build(tmp_path: Path, url: str) -> tuple[str, str]:
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r'^repository:\n  url: ""\n', config, flags=re.M), "the address's one place moved"
    config = config.replace('repository:\n  url: ""\n', f'repository:\n  url: "{url}"\n')
    config = re.sub(r"^bibtex_bibfiles:\n  - book/references.bib\n", "", config, flags=re.M)
    assert "\n  execute_notebooks: cache\n" in config and "\nlaunch_buttons:\n" in config
    config = config.replace("\n  execute_notebooks: cache\n", '\n  execute_notebooks: "off"\n')
    book = tmp_path / "book"
    book.mkdir(parents=True)
    (book / "_config.yml").write_text(config)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n- file: chapter\n")
    (book / "intro.md").write_text("# A page\n\nText, and $x^2$.\n")
    jupytext = {"text_representation": {"extension": ".md", "format_name": "myst", "format_version": 0.13}}
    notebook = {
        "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# A chapter\n"]}],
        "metadata": {"jupytext": jupytext, "kernelspec": {"display_name": "Python 3", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (book / "chapter.ipynb").write_text(json.dumps(notebook))
    jb = Path(sys.executable).parent / "jupyter-book"
    run = subprocess.run(
        [str(jb) if jb.exists() else "jupyter-book", "build", str(book), "--builder", "html"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    html = book / "_build" / "html"
    return (html / "intro.html").read_text(), (html / "chapter.html").read_text()


def test_buttons_where_the_address_is_set_and_none_where_not(tmp_path):
    with_url, chapter = build(tmp_path / "set", URL)
    assert f'href="{URL}"' in with_url  # the repository button
    assert f'href="{URL}/issues/new?title=Issue%20on%20page%20%2Fintro.html' in with_url  # the issue button
    # Binder opens the chapter's Jupytext source in JupyterLab, not the executed .ipynb
    binder = "https://mybinder.org/v2/gh/example-owner/example-book/main?urlpath=lab/tree/chapter.md"
    assert f'href="{binder}"' in chapter
    assert "urlpath=lab/tree/chapter.ipynb" not in chapter
    assert "mybinder.org" not in with_url  # a Markdown page has no kernel to launch
    without, chapter_without = build(tmp_path / "unset", "")
    for page in (without, chapter_without):
        assert "github.com" not in page
        assert "/issues/new" not in page
        assert "btn-source-repository-button" not in page
        assert "mybinder.org" not in page and "launch-buttons" not in page


def test_binder_installs_the_lock_and_starts_with_the_books_jupyter_configuration():
    """binder/: the lock the tests passed with, gelib, Python 3.11; its start script gives JupyterLab
    the configuration `make lab` gives (a chapter's .md opens as a notebook)."""
    binder = ROOT / "binder"
    lines = [x.strip() for x in (binder / "requirements.txt").read_text().splitlines()]
    lines = [x for x in lines if x and not x.startswith("#")]
    assert lines == ["-r ../requirements.txt", "-e ."]
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    env = subprocess.run(
        [str(binder / "start"), "env"], capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}
    )
    assert env.returncode == 0, env.stderr
    values = dict(line.split("=", 1) for line in env.stdout.splitlines() if "=" in line)
    config = Path(values["JUPYTER_CONFIG_PATH"].split(":")[0])
    assert config == ROOT / ".jupyter"
    viewers = json.loads((config / "labconfig" / "default_setting_overrides.json").read_text())
    assert viewers["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Jupytext Notebook"
    assert (Path(values["JUPYTER_PATH"].split(":")[0]) / "kernels" / "python3" / "kernel.json").is_file()
