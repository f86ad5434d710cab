"""The book's figures on the page: alt text from the caption (tools/book_offline), the lightbox
and sticky-column files it serves, and the injected parameters cell left off the page (bookrun.render)."""

from __future__ import annotations

import book_offline
import nbformat
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document

from bookrun.render import hide_injected_in_run, hide_injected_parameters
from bookrun.runfolder import RunFolder, mark_run_folder


def _doctree() -> nodes.document:
    doc = new_document("test", get_default_settings(Parser))
    figure = nodes.figure()
    figure += nodes.image(uri="_images/abc123.png")
    caption = nodes.caption()
    caption += nodes.Text("Left: the spectra of ")
    caption += nodes.math(text="Y^f")
    caption += nodes.Text(" and\n  its limit.")
    figure += caption
    doc += figure
    doc += nodes.image(uri="_images/def456.png")  # an output image with no figure
    doc += nodes.image(uri="_images/own.png", alt="its own alt")
    return doc


def test_alt_text_from_caption_not_path():
    doc = _doctree()
    book_offline._image_alts(None, doc, "book/x")
    alts = [im["alt"] for im in doc.findall(nodes.image)]
    assert alts[0] == "Left: the spectra of Y^f and its limit."
    assert alts[2] == "its own alt"  # an author's alt text is kept
    assert all(".png" not in a and "_images" not in a for a in alts)


def test_alt_of_image_outside_figure_is_none():
    doc = _doctree()
    images = list(doc.findall(nodes.image))
    assert book_offline.image_alt(images[1]) is None
    assert book_offline.image_alt(images[0]).startswith("Left:")


def test_static_files_and_setup():
    js = (book_offline.FIGURES_STATIC / "book_figures.js").read_text()
    css = (book_offline.FIGURES_STATIC / "book_figures.css").read_text()
    assert "book-lightbox" in js and "Escape" in js
    assert "position: sticky" in css and "td:first-child" in css
    assert "://" not in js and "://" not in css  # offline: nothing remote


def _notebook(injected=True):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("scale = 'default'", metadata={"tags": ["parameters"]})]
    if injected:
        nb.cells.append(
            nbformat.v4.new_code_cell("# Parameters\nscale = 'ci'", metadata={"tags": ["injected-parameters"]})
        )
    nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
    return nb


def test_injected_parameters_removed_from_page_kept_in_notebook():
    nb = _notebook()
    assert hide_injected_parameters(nb)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert tags == [["parameters"], ["injected-parameters", "remove-cell"], []]
    assert len(nb.cells) == 3  # the cell stays in the notebook
    assert not hide_injected_parameters(nb)  # once
    assert not hide_injected_parameters(_notebook(injected=False))


def test_hide_injected_in_run(tmp_path):
    mark_run_folder(tmp_path)
    folder = RunFolder(tmp_path)
    folder.write("book/a.ipynb", nbformat.writes(_notebook()))
    (tmp_path / "book" / "user.ipynb").write_text(nbformat.writes(_notebook()))  # not the run's: left alone
    assert hide_injected_in_run(tmp_path) == ["book/a.ipynb"]
    a = nbformat.read(str(tmp_path / "book" / "a.ipynb"), as_version=4)
    assert "remove-cell" in a.cells[1].metadata["tags"]
    user = nbformat.read(str(tmp_path / "book" / "user.ipynb"), as_version=4)
    assert "remove-cell" not in user.cells[1].metadata["tags"]
    assert RunFolder(tmp_path).owns("book/a.ipynb")  # recorded as the run's
