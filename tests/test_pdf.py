"""The whole-book PDF (bookrun.pdf): its reader and checker on tiny PDFs built here, the page it
prints, and the command's refusals. The PDF of the real book is built and checked by
``make test`` (``python -m gelib pdf $(TEST_RUN) --output _build/test-ci-pdf/book.pdf --check``)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from bookrun import pdf
from bookrun.cli import main

ROOT = Path(__file__).resolve().parents[1]

CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
1 begincodespacerange
<0000> <FFFF>
endcodespacerange
2 beginbfchar
<0001> <0020>
<0002> <030A>
endbfchar
1 beginbfrange
<0010> <00FF> <0010>
endbfrange
endcmap
end
end"""


def encode(text: str) -> str:
    """``text`` as the glyph codes of the test font: code = character (space: 1, combining ring: 2)."""
    codes = {" ": 1, "\u030a": 2}
    return "".join(f"{codes.get(c, ord(c)):04X}" for c in text)


CODE = "code: "  # a line that starts so is set in the monospace font, as code is


def make_pdf(pages: list[list[str]], images: int = 0, compress: bool = True) -> bytes:
    """A PDF as Chromium writes them, in small: Type0 fonts (a proportional one and a monospace
    one, for lines starting with :data:`CODE`) with a ToUnicode map, one text line per string (a
    Tm each, its own y), ``images`` image XObjects drawn on the first page."""
    objs: dict[int, bytes] = {}

    def stream(data: bytes, extra: bytes = b"") -> bytes:
        if compress:
            data = zlib.compress(data)
            extra += b" /Filter /FlateDecode"
        return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"

    objs[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objs[3] = stream(CMAP)
    objs[4] = b"<< /Type /Font /Subtype /Type0 /BaseFont /AAAAAA+DejaVuSans /Encoding /Identity-H /ToUnicode 3 0 R >>"
    objs[5] = (
        b"<< /Type /Font /Subtype /Type0 /BaseFont /BAAAAA+DejaVuSansMono /Encoding /Identity-H /ToUnicode 3 0 R >>"
    )
    image_names = []
    for i in range(images):
        objs[10 + i] = stream(b"\xff\x00\x00", b" /Type /XObject /Subtype /Image /Width 1 /Height 1")
        image_names.append(b"/Im%d %d 0 R" % (i, 10 + i))
    kids = []
    for n, lines in enumerate(pages):
        content = b"BT\n/F1 12 Tf\n"
        for k, line in enumerate(lines):
            font = b"/F2 12 Tf " if line.startswith(CODE) else b"/F1 12 Tf "
            line = line.removeprefix(CODE)
            content += font + b"1 0 0 -1 10 %d Tm\n<%s> Tj\n" % (700 - 20 * k, encode(line).encode())
        content += b"ET\n"
        if n == 0:
            content += b"".join(b"q /Im%d Do Q\n" % i for i in range(images))
        page_no, content_no = 100 + 2 * n, 101 + 2 * n
        objs[content_no] = stream(content)
        xobj = b" /XObject << " + b" ".join(image_names) + b" >>" if image_names else b""
        objs[page_no] = (
            b"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 4 0 R /F2 5 0 R >>%s >> /Contents %d 0 R >>"
            % (
                xobj,
                content_no,
            )
        )
        kids.append(b"%d 0 R" % page_no)
    objs[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = b"%PDF-1.4\n"
    for num in sorted(objs):
        out += b"%d 0 obj\n" % num + objs[num] + b"\nendobj\n"
    return out + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"


TITLES = ["The model", "Centering: from $Y^f$ to $\\mathring Y^f$"]
GOOD = [["The model", "Text of the model, x = 1."], ["Centering: from Yf to Y\u030af", "More text."]]


def test_the_reader_reads_each_page_s_lines_in_order():
    for compress in (True, False):
        text = pdf.pdf_text(make_pdf(GOOD, compress=compress))
        assert [t.split() for t in text] == [
            ["The", "model", "Text", "of", "the", "model,", "x", "=", "1."],
            ["Centering:", "from", "Yf", "to", "Y\u030af", "More", "text."],
        ]
        assert text[0].strip().splitlines() == GOOD[0]


def test_a_right_pdf_passes_the_check():
    assert pdf.check_pdf(make_pdf(GOOD, images=2), TITLES, min_images=2) == []
    assert pdf.pdf_image_count(make_pdf(GOOD, images=3)) == 3


def test_a_missing_title_fails():
    problems = pdf.check_pdf(make_pdf([GOOD[0]]), TITLES)
    assert len(problems) == 1 and "Centering" in problems[0]
    # the words around a formula must come in order, in one place
    problems = pdf.check_pdf(make_pdf([["to Y", "Centering: from Y"]]), ["Centering: from $Y^f$ to $Z$"])
    assert problems and "no chapter title" in problems[0]


def test_a_title_in_the_running_header_only_is_missing():
    pages = [["The book", "Text of the model."], ["The book", *GOOD[1]]]
    problems = pdf.check_pdf(make_pdf(pages), ["The book", *TITLES[1:]], running="The book")
    assert problems == ["no chapter title 'The book' in the PDF (missing: 'Thebook')"]
    assert pdf.check_pdf(make_pdf([["The book", "The book"], GOOD[1]]), ["The book"], running="The book")
    assert (
        pdf.check_pdf(make_pdf([["The book", "The book, its title"], GOOD[1]]), ["The book"], running="The book") == []
    )


@pytest.mark.parametrize("raw", ["\\(Y^f\\)", "\\[x\\]", "$$x$$", "\\frac12", "\\sqrt n", "\\mathbb E", "A^\\perp"])
def test_raw_tex_fails_with_its_page(raw):
    pages = [GOOD[0], [*GOOD[1], f"the formula {raw} was not typeset"]]
    problems = pdf.check_pdf(make_pdf(pages), TITLES)
    assert problems and all("raw TeX on page 2" in p for p in problems), problems


def test_text_that_only_looks_like_tex_passes():
    # a one-letter escape of code (\\n), lone dollars, a Python repr of TeX (two backslashes)
    pages = [[*GOOD[0], "print('a\\nb'), 5 $ and $ 6, {'T': '$\\\\beta^2$'}"], GOOD[1]]
    assert pdf.check_pdf(make_pdf(pages), TITLES) == []


def test_a_command_split_by_a_kerning_break_is_one_word():
    data = make_pdf([GOOD[0], GOOD[1]], compress=False).replace(
        b"<%s> Tj" % encode("More text.").encode(),
        b"<%s> Tj 12.5 0 Td <%s> Tj" % (encode("\\r").encode(), encode("ho").encode()),
    )
    text = pdf.pdf_text(data)[1]
    assert "\\rho" in text
    assert any("\\rho" in p for p in pdf.check_pdf(data, TITLES))


def test_tex_in_code_passes_and_in_prose_fails():
    label = 'ax.plot(x, label=r"$\\sqrt{n} A^\\perp$")'
    code = [GOOD[0], [*GOOD[1], CODE + label]]
    assert pdf.check_pdf(make_pdf(code), TITLES) == []
    assert label in pdf.pdf_text(make_pdf(code))[1]  # the text holds the code; the check skips it
    prose = [GOOD[0], [*GOOD[1], label]]
    assert [p.split(":")[0] for p in pdf.check_pdf(make_pdf(prose), TITLES)] == ["raw TeX on page 2"] * 2


def test_too_few_images_fail():
    problems = pdf.check_pdf(make_pdf(GOOD, images=1), TITLES, min_images=2)
    assert problems == ["the PDF draws 1 images; the printed page shows 2"]


def test_no_pdf_and_no_page_fail():
    assert pdf.check_pdf(b"<html></html>", TITLES)[0].startswith("the PDF cannot be read")
    assert pdf.check_pdf(make_pdf([]), TITLES) == ["the PDF has no page"]


def test_the_printed_page_reads_from_the_build_s_root(tmp_path):
    page = tmp_path / "_build" / "singlehtml" / "book" / "intro.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        '<html><head><title>T</title></head><body><img src="../_images/a.png"><img src="_images/b.png">'
        '<a href="book/intro.html#sec">s</a><a href="book/intro.html">top</a><a href="https://x.org/">x</a>'
        "</body></html>"
    )
    out = pdf.print_page(page, 'A "book" \\ title')
    assert 'src="_images/a.png"' in out and 'src="_images/b.png"' in out and "../_images" not in out
    assert 'href="#sec"' in out and 'href="#"' in out and 'href="https://x.org/"' in out
    assert 'content: "A \\"book\\" \\\\ title"' in out
    assert out.index("<style>") < out.index("</head>") and "details.hide { display: none" in out
    assert "gelib-print-solutions" in out  # the solutions moved to their chapter's end


def test_chapter_titles_skip_code_comments(tmp_path):
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: a\nchapters:\n  - file: b\n")
    (tmp_path / "a.md").write_text("---\nx: 1\n---\n\n# First $x$\n\ntext\n")
    (tmp_path / "b.md").write_text("```{code-cell}\n# a comment\n```\n\n# Second\n")
    assert pdf.chapter_titles(tmp_path) == ["First $x$", "Second"]


def test_the_book_s_titles_are_found():
    titles = pdf.chapter_titles(ROOT)
    assert len(titles) >= 15 and "The limit law" in titles


def test_the_command_refuses_before_writing(tmp_path, capsys):
    run_dir = ROOT / "_build" / "no-such-run"
    assert main(["pdf", str(run_dir), "--output", str(tmp_path / "b.pdf")]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["pdf", "--scale", "no-such-scale", "--root", str(ROOT)]) == 2
    assert "no complete run of scale 'no-such-scale'" in capsys.readouterr().err
    assert not (tmp_path / "b.pdf").exists()


def test_the_command_never_writes_over_a_user_s_file(tmp_path, capsys):
    from bookrun.runfolder import mark_run_folder

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    mark_run_folder(run_dir, made_by="the chapter tests (--executed-dir)")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    for target, why in [
        (out / "book.pdf", "exists and was not made by a render or a batch"),
        (tmp_path / "book.txt", "ending in .pdf"),
        (ROOT / "book" / "x.pdf", "inside the repository's own book"),
    ]:
        assert main(["pdf", str(run_dir), "--output", str(target), "--root", str(ROOT), "--lenient"]) == 2
        assert why in capsys.readouterr().err
    mine = run_dir / "book.pdf"
    mine.write_bytes(b"%PDF- a user's own")
    assert main(["pdf", str(run_dir), "--root", str(ROOT), "--lenient"]) == 2
    assert "the batch never overwrites them" in capsys.readouterr().err
    assert mine.read_bytes() == b"%PDF- a user's own" and (out / "notes.txt").read_text() == "mine"
