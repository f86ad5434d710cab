"""Titles without raw TeX (tools/book_offline): the tab's <title>, the printed page's header and the
next/prev link titles in plain Unicode; cross-references to a chapter show its title's formulas for
MathJax; the single-page builder (the PDF's) has every HTML visitor."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import book_offline as bo
import pytest
from docutils import nodes

from bookrun.pdf import RAW_TEX, chapter_titles

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "tex, text",
    [
        (r"\sqrt n A^\perp", "√n A⊥"),
        (r"Y^f", "Yᶠ"),
        (r"\mathring Y^f", "Y\u030aᶠ"),
        (r"Y^G[\Sigma_f]", "Yᴳ[Σ_f]"),
        (r"\frac{1}{\sqrt n}", "1/(√n)"),
        (r"e^{\beta^2}-1", "e^(β²)-1"),
        (r"A_{r}^{\top}", "Aᵣᵀ"),
        (r"\mathbb{R}^{n}", "ℝⁿ"),
        (r"\|M\|_{op}", "‖M‖ₒₚ"),
    ],
)
def test_tex_becomes_unicode(tex, text):
    assert bo.tex_to_text(tex) == text


def test_no_title_of_the_book_keeps_tex():
    titles = chapter_titles(ROOT)
    assert any("$" in t for t in titles), "no title with a formula left to test"
    for title in titles:
        plain = bo.plain_title(title)
        assert not re.search(r"[\\${}]", plain), (title, plain)
        assert not RAW_TEX.search(plain)
    assert bo.plain_title(r"Denominator replacement: from $\sqrt n A^\perp$ to $Y^f$") == (
        "Denominator replacement: from √n A⊥ to Yᶠ"
    )


def test_a_title_as_sphinx_writes_it():
    html = 'From <span class="math notranslate nohighlight">\\(Y^f\\)</span> to &amp; <em>\\(Z\\)</em>'
    assert bo.plain_title(html) == "From Yᶠ to & Z"


def test_the_page_context_loses_its_tex():
    context = {
        "title": 'A <span class="math">\\(\\sqrt n A^\\perp\\)</span> &lt; b',
        "pagetitle": "A Y^f",
        "next": {"title": "C \\(\\mathring Y^f\\)", "link": "c.html"},
        "prev": None,
    }
    app = SimpleNamespace(env=SimpleNamespace(titles={"p": _title(nodes.Text("A "), nodes.math("Y^f", "Y^f"))}))
    bo._plain_titles(app, "p", "page.html", context, None)
    assert context["title"] == "A √n A⊥ &lt; b"
    assert context["pagetitle"] == "A Yᶠ"
    assert context["next"] == {"title": "C Y\u030aᶠ", "link": "c.html"}


def _title(*children):
    t = nodes.title()
    t.extend(children)
    return t


def test_a_reference_to_a_chapter_shows_its_formula():
    title = _title(nodes.Text("Centering: from "), nodes.math("Y^f", "Y^f"))
    app = SimpleNamespace(env=SimpleNamespace(titles={"c": title, "d": _title(nodes.Text("Plain"))}))
    doc = nodes.document(None, None)
    para = nodes.paragraph()
    for text in ("Centering: from Y^f", "Plain", "Something else"):
        ref = nodes.reference(refuri="#c", internal=True)
        ref += nodes.inline(text, text)
        para += ref
    doc += para
    bo._reference_titles(app, doc, "x")
    refs = list(doc.findall(nodes.reference))
    assert [type(n).__name__ for n in refs[0].children[0].children] == ["Text", "math"]
    assert refs[0].children[0].children[1].astext() == "Y^f"
    assert [n.astext() for n in refs[1:]] == ["Plain", "Something else"]
    assert not list(refs[1].findall(nodes.math)) and not list(refs[2].findall(nodes.math))


def test_the_single_page_builder_gets_the_html_visitors():
    def visit(*a):
        return None

    handlers = {"html": {"proof_node": (visit, visit), "both": (visit, None)}, "singlehtml": {"both": (None, None)}}
    app = SimpleNamespace(
        builder=SimpleNamespace(name="singlehtml"), registry=SimpleNamespace(translation_handlers=handlers)
    )
    bo._singlehtml_handlers(app)
    assert handlers["singlehtml"] == {"both": (None, None), "proof_node": (visit, visit)}
    other = {"html": {"x": (visit, None)}}
    bo._singlehtml_handlers(
        SimpleNamespace(builder=SimpleNamespace(name="html"), registry=SimpleNamespace(translation_handlers=other))
    )
    assert "singlehtml" not in other
