"""The repository's address is set in one place (``_config.yml``'s ``repository: url``): with it,
the built pages show the repository and issue buttons and point them at that address; without it,
no such button shows (tools/book_offline). One page built with the book's own configuration."""

from __future__ import annotations

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


def build(tmp_path: Path, url: str) -> str:
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r'^repository:\n  url: ""\n', config, flags=re.M), "the address's one place moved"
    config = config.replace('repository:\n  url: ""\n', f'repository:\n  url: "{url}"\n')
    config = re.sub(r"^bibtex_bibfiles:\n  - book/references.bib\n", "", config, flags=re.M)
    book = tmp_path / "book"
    book.mkdir(parents=True)
    (book / "_config.yml").write_text(config)
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (book / "intro.md").write_text("# A page\n\nText, and $x^2$.\n")
    jb = Path(sys.executable).parent / "jupyter-book"
    run = subprocess.run(
        [str(jb) if jb.exists() else "jupyter-book", "build", str(book), "--builder", "html"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return (book / "_build" / "html" / "intro.html").read_text()


def test_buttons_where_the_address_is_set_and_none_where_not(tmp_path):
    with_url = build(tmp_path / "set", URL)
    assert f'href="{URL}"' in with_url  # the repository button
    assert f'href="{URL}/issues/new?title=Issue%20on%20page%20%2Fintro.html' in with_url  # the issue button
    without = build(tmp_path / "unset", "")
    assert "github.com" not in without
    assert "/issues/new" not in without
    assert "btn-source-repository-button" not in without
