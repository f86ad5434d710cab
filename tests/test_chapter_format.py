"""Every chapter is already in the form Jupytext writes, so saving it from JupyterLab changes nothing.

A fast check, without a server, of what ``tests/test_lab.py`` checks through a real
JupyterLab: reading a chapter and writing it back with the repository's ``jupytext.toml``
gives the same text. It fails, for example, on a figure caption in a cell's metadata whose
lines are wrapped differently from the way Jupytext's YAML writer wraps them (a teacher's
save would rewrap them and leave a diff in git).
"""

from pathlib import Path

import jupytext
import pytest
from jupytext.config import load_jupytext_configuration_file

from bookrun.batch import is_chapter

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md") if is_chapter(p))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_what_jupytext_writes(path):
    config = load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))
    text = path.read_text()
    written = jupytext.writes(jupytext.reads(text, fmt="md:myst"), fmt="md:myst", config=config)
    first = next((i for i, (a, b) in enumerate(zip(text.splitlines(), written.splitlines())) if a != b), None)
    assert written == text, f"{path.name}: Jupytext rewrites line {None if first is None else first + 1}"
