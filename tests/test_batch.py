"""The batch: chapters executed with injected parameters, failures kept apart, resumable."""

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from gelib.batch import is_chapter, load_chapter, run_batch, toc_files

ROOT = Path(__file__).resolve().parents[1]
FRONT = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
        format_version: 0.13
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    """)


def chapter(body_cells):
    cells = "\n".join(f"```{{code-cell}} ipython3\n{c}\n```\n" for c in body_cells)
    return (
        FRONT
        + '\n# A chapter\n\n```{code-cell} ipython3\n:tags: [parameters]\nscale = "default"\nseed = 0\n```\n\n'
        + cells
    )


@pytest.fixture
def book(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "_toc.yml").write_text(
        textwrap.dedent("""\
        format: jb-book
        root: book/intro
        chapters:
          - file: book/good
          - file: book/bad
          - file: book/status
        """)
    )
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nText.\n")
    (tmp_path / "book" / "status.md").write_text("# Status\n\nplaceholder\n")
    (tmp_path / "book" / "good.md").write_text(
        chapter(
            [
                "from myst_nb import glue\nglue('answer', 6 * 7 if scale == 'ci' else 0, display=False)",
                "assert scale == 'ci'",
            ]
        )
    )
    (tmp_path / "book" / "bad.md").write_text(chapter(["x = 1", "raise RuntimeError('boom ' + scale)"]))
    return tmp_path


def test_toc_order_and_chapter_detection(book):
    assert toc_files(book) == ["book/intro", "book/good", "book/bad", "book/status"]
    assert is_chapter(book / "book" / "good.md") and not is_chapter(book / "book" / "intro.md")
    nb = load_chapter(book / "book" / "good.md", {"scale": "ci"})
    tags = [c.metadata["tags"] for c in nb.cells if c.cell_type == "code"]
    assert tags[0] == ["parameters"] and tags[1] == ["injected-parameters"]
    with pytest.raises(ValueError, match="no cell tagged"):
        (book / "book" / "none.md").write_text(FRONT + "```{code-cell} ipython3\nx = 1\n```\n")
        load_chapter(book / "book" / "none.md")


def test_a_failing_chapter_does_not_stop_the_others_and_runs_resume(book, capsys):
    out = book / "_build" / "runs" / "ci-test"
    assert run_batch(book, "ci", out=out, render=False) == 1
    err = capsys.readouterr().err
    assert "FAILED bad at cell" in err and "boom ci" in err
    record = json.loads((out / "record.json").read_text())
    assert record["chapters"]["good"]["status"] == "ok"
    assert record["chapters"]["good"]["glued"] == {"answer": "42"}
    bad = record["chapters"]["bad"]
    assert bad["status"] == "failed" and "raise RuntimeError" in bad["cell_source"]
    assert (out / "book" / "good.ipynb").exists() and (out / "book" / "bad.ipynb").exists()
    assert record["versions"]["jax"] and record["device"]

    # a new run never overwrites an earlier one unless asked
    with pytest.raises(SystemExit, match="exists"):
        run_batch(book, "ci", out=out, render=False)

    # resume: the finished chapter is not redone, the failed one is retried
    (book / "book" / "bad.md").write_text(chapter(["x = 1"]))
    mtime = (out / "book" / "good.ipynb").stat().st_mtime
    assert run_batch(book, "ci", out=out, resume=True, render=False) == 0
    assert "already done" in capsys.readouterr().err
    assert (out / "book" / "good.ipynb").stat().st_mtime == mtime
    assert json.loads((out / "record.json").read_text())["chapters"]["bad"]["status"] == "ok"
