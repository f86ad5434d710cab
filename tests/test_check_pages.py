"""tools/check_pages.py, the browser check of the built book, on tiny synthetic books.

One correct book passes; one broken book has exactly one defect per page and each
defect must be reported on its own page, and on no other. The browser runs are
skipped without a system Chromium (`.ci/run` installs it); the text rules are
tested without one.
"""

import importlib.util
import re
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from bookrun.explore import CHECK_HASH, grid_html, slider_html

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "check_pages.py"

_spec = importlib.util.spec_from_file_location("check_pages", TOOL)
check_pages = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("check_pages", check_pages)  # its dataclasses look their module up
_spec.loader.exec_module(check_pages)

BROWSER = check_pages.find_browser()
needs_browser = pytest.mark.skipif(
    BROWSER is None, reason="no system Chromium on this machine (apt-get install chromium; .ci/run installs it)"
)


def mathjax_dir():
    """MathJax's es5 folder from the package the book serves it from (requirements.txt)."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None:
        pytest.skip("sphinx-mathjax-offline (MathJax 3) is not installed: pip install -r requirements.txt")
    return Path(spec.origin).parent / "static" / "mathjax"


def copy_mathjax(dest: Path, fonts: bool = True) -> None:
    """The main script and, unless told otherwise, the CHTML fonts it loads from beside itself."""
    src = mathjax_dir()
    dest.mkdir(parents=True)
    shutil.copy(src / "tex-chtml.js", dest / "tex-chtml.js")
    if fonts:
        shutil.copytree(src / "output" / "chtml" / "fonts", dest / "output" / "chtml" / "fonts")


# A 1x1 PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def png_of(rgb: tuple[int, ...], size: int = 4, font_pt: float | None = 8.0, dpi: int | None = 200) -> bytes:
    """A ``size`` x ``size`` PNG of one colour (RGB, or RGBA for four numbers), saying, as the book's
    figures do, its resolution (pHYs; ``dpi``) and its smallest font size (``font_pt``; None: neither
    chunk). Shown at its natural width, 8 pt at 200 dpi is text 22 px high."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes(rgb) * size for _ in range(size))
    head = struct.pack(">IIBBBBB", size, size, 8, 6 if len(rgb) == 4 else 2, 0, 0, 0)
    meta = b""
    if dpi is not None:
        per_metre = round(dpi / 0.0254)
        meta += chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1))
    if font_pt is not None:
        meta += chunk(b"tEXt", check_pages.MIN_FONT_KEY.encode() + b"\x00" + f"{font_pt:g}".encode())
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + meta + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    )


# Light tints: a figure must bring a light background to stay legible on the dark theme.
RED, BLUE, GREEN = png_of((255, 220, 220)), png_of((220, 220, 255)), png_of((220, 255, 220))
WHITE = png_of((255, 255, 255))
# As the book theme's "auto" mode does: the page's data-theme follows the browser's colour scheme.
THEME = (
    "<script>document.documentElement.dataset.theme ="
    " matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';</script>"
)


def page(body: str, head: str = "") -> str:
    head = f'<meta charset="utf-8"><title>t</title>{head}'
    return f"<!DOCTYPE html>\n<html><head>{head}</head><body>{body}</body></html>\n"


MATHJAX = '<script defer src="mathjax/tex-chtml.js"></script>'
GOOD = page(
    textwrap.dedent(r"""
    <h1 id="top">A chapter</h1>
    <p>Inline <span class="math">\(\sqrt n A^\perp\)</span> and prices of $5 and $10.</p>
    <p>Typeset text: \(\text{the shell's \$x\$ and \\(y\\)}\), typeset.</p>
    <div class="math">\[ \sum_{r=1}^h Y_r = \mathbb E\big[f(S)\big] \]</div>
    <pre>echo $HOME; printf '\(not math\)'; x = "$y$"</pre>
    <p>Run <code>$PATH</code>, see <a href="page2.html#results">the results</a>,
       <a href="#top">the top</a>, <a href="https://example.org/">a paper</a>.</p>
    <img src="_images/fig.png" alt="a figure">
    """),
    MATHJAX + THEME,
)
PAGE2 = page('<h2 id="results">Results</h2><p>Back to <a href="index.html">the start</a>.</p>')
SEARCH_HEAD = "<script>var Search = {setIndex: function (d) { window.INDEX = d; }};</script>"
SEARCH_BODY = """
<div id="search-results"></div>
<script src="searchindex.js"></script>
<script>
  const q = new URLSearchParams(location.search).get("q");
  const hits = (window.INDEX ? INDEX.titles : []).filter((t) => LISTS && q && t.toLowerCase().includes(q));
  if (hits.length) {
    const ul = document.createElement("ul");
    for (const t of hits) { const li = document.createElement("li"); li.textContent = t; ul.appendChild(li); }
    document.getElementById("search-results").appendChild(ul);
  }
</script>
"""


GRID_AXES = [("layer", ["default", "d_k = 8"], ": "), ("beta", ["0.5", "1", "2"], " = ")]


def make_book(root: Path, lists_results: bool = True) -> Path:
    (root / "_images").mkdir(parents=True)
    (root / "_images" / "fig.png").write_bytes(WHITE)
    (root / "_images" / "tiny.png").write_bytes(png_of((255, 255, 255), size=400, font_pt=2))  # 5.6 px text
    (root / "_images" / "unsized.png").write_bytes(png_of((255, 255, 255), font_pt=None))
    (root / "_images" / "clear.png").write_bytes(png_of((255, 255, 255, 0)))  # transparent
    (root / "_images" / "black.png").write_bytes(png_of((20, 20, 20)))
    copy_mathjax(root / "mathjax")
    (root / "index.html").write_text(GOOD)
    (root / "page2.html").write_text(PAGE2)
    # an explorer's static slider (bookrun.explore), started at its middle frame
    frames = [(0.5, RED), (1.0, BLUE), (1.5, GREEN)]
    (root / "explorer.html").write_text(page(slider_html("beta", frames, 1, [(3.0, "beta must be at most 2")])))
    # a static slider over two axes (a layer, then beta), one combination not available
    (root / "explorer2.html").write_text(page(grid_html(GRID_AXES, [RED, BLUE, GREEN, "n/a", RED, BLUE], 1)))
    body = SEARCH_BODY.replace("LISTS", "true" if lists_results else "false")
    (root / "search.html").write_text(page(body, SEARCH_HEAD))
    (root / "searchindex.js").write_text('Search.setIndex({"titles": ["Gaussian chapter", "Results"]})\n')
    return root


def run_checker(*args, timeout=600):
    res = subprocess.run(
        [sys.executable, str(TOOL), *map(str, args), "--chromium", BROWSER],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    fails = [ln for ln in res.stdout.splitlines() if ln.startswith("FAIL ")]
    return res, fails


def fails_of(fails, page_name):
    return [ln for ln in fails if ln.split()[2].rstrip(":") == page_name]


# ----------------------------------------------------------------------------- text rules, no browser


@pytest.mark.parametrize(
    "text",
    [r"\(x\)", r"before \[ a \] after", r"$$ a $$", r"the $\alpha$ rule", r"$n^2$", "$x$,", r"a \) alone"],
)
def test_raw_tex_is_found(text):
    assert check_pages.tex_findings([text]), text


@pytest.mark.parametrize("text", ["prices of $5 and $10", "US$ 3", "a lone $ sign", "$ x $", "costs $3.50", ""])
def test_dollars_that_are_not_math_are_left_alone(text):
    assert check_pages.tex_findings([text]) == [], text


def test_code_scripts_and_typeset_math_are_not_visible_text():
    dom = check_pages.parse(
        page(
            r"<p>ok</p><pre>\(a\)</pre><code>$b$</code><script>var s='\\(c\\)';</script>"
            r"<mjx-container><mjx-assistive-mml><math><mi>\(d\)</mi></math></mjx-assistive-mml></mjx-container>"
            r'<div class="highlight"><span>$e$</span></div><p>\(f\)</p>'
        )
    )
    assert check_pages.tex_findings(dom.text) == [r"\(f\)"]


def test_raw_tex_in_a_section_that_mathjax_ignores_is_found():
    """myst-nb wraps every page in a section marked tex2jax_ignore / mathjax_ignore (its math is
    already typeset into spans), so a dollar left in a Markdown output, e.g. a table header, is
    exactly what a reader sees raw; an API signature's value repr is code and is left alone."""
    dom = check_pages.parse(
        page(
            '<section class="tex2jax_ignore mathjax_ignore"><table><tr><th><p>$m_1$ at $n$ = 512</p></th></tr>'
            '</table><dl><dt class="sig sig-object py"><em class="property"><span class="pre">\'$K$\'</span>'
            "</em></dt></dl></section>"
        )
    )
    assert check_pages.tex_findings(dom.text) == ["$m_1$", "$n$"]


def test_style_urls_and_links_are_collected():
    dom = check_pages.parse(
        page(
            '<style>@font-face { src: url("fonts/a.woff") } /* url(https://x.org/no) */</style>'
            '<a href="p.html#s">p</a><img src="i.png"><link rel="stylesheet" href="https://cdn.example/s.css">'
        )
    )
    assert ("style", "url()", "fonts/a.woff") in dom.loads
    assert not any("x.org" in u for _, _, u in dom.loads)
    assert ("a", "", "p.html#s") in dom.links and dom.imgs == ["i.png"]
    assert ("link", "href", "https://cdn.example/s.css") in dom.loads


def slider_block(uid: str, over: str, frames: int, **checks) -> str:
    """A static slider's block as its script leaves it after a ``#slider-check`` load (``checks``: the
    ``data-check-*`` attributes it wrote)."""
    attrs = "".join(f' data-check-{k}="{v}"' for k, v in checks.items())
    return f'<div id="{uid}" data-static-slider="{over}" data-frames="{frames}"{attrs}></div>'


def test_slider_reports_are_read_from_the_moved_page():
    """``check_sliders`` on dumped DOMs: a slider passes only if it moved, its image changed and decoded."""

    def block(i, **checks):
        return slider_block(f"s{i}", "beta", 3, **checks)

    static = check_pages.parse(page("".join(block(i) for i in range(5))))
    moved = check_pages.parse(
        page(
            block(0, before="1:aa", after="2:bb", width=640)  # moved, changed, decoded
            + block(1, before="1:aa", after="1:aa", width=640)  # did not move
            + block(2, before="1:aa", after="2:aa", width=640)  # moved, same image
            + block(3, before="1:aa", after="2:bb", width=0)  # moved, the new image is broken
        )  # s4 never reported
    )
    found = check_pages.check_sliders(static, moved, check_pages.Load(requests=["https://x.org/a.js"]))
    msgs = [m for c, m in found if c == "slider"]
    assert len(msgs) == 4 and not any(m.startswith("slider 1 ") for m in msgs), msgs
    assert "did not move" in msgs[0] and "unchanged" in msgs[1] and "did not decode" in msgs[2]
    assert "did not report" in msgs[3]
    assert ("net", "requested https://x.org/a.js (#slider-check load)") in found
    assert check_pages.check_sliders(static, moved, check_pages.Load(error="boom")) == [
        ("slider", "#slider-check load: boom")
    ]
    assert check_pages.SLIDER_HASH == CHECK_HASH  # the hash the checker loads is the one the sliders answer


def test_a_two_axis_slider_reports_one_move_per_axis():
    """A grid slider (``data-static-slider="layer, beta"``) passes only if each axis moved the image."""

    def block(i, **checks):
        return slider_block(f"g{i}", "layer, beta", 6, **checks)

    static = check_pages.parse(page("".join(block(i) for i in range(4))))
    moved = check_pages.parse(
        page(
            block(0, before="1:aa", after="4:bb 5:cc", width="640 640")  # both moves changed the image
            + block(1, before="1:aa", after="4:bb 4:bb", width="640 640")  # beta did not move
            + block(2, before="1:aa", after="4:bb 5:cc", width="640 0")  # the last image is broken
            + block(3, before="1:aa", after="4:bb", width="640")  # one move for two axes
        )
    )
    msgs = [m for c, m in check_pages.check_sliders(static, moved, check_pages.Load()) if c == "slider"]
    assert msgs == [
        "slider 2 over layer, beta, moving beta did not move (frame 4; 6 frame(s))",
        "slider 3 over layer, beta, moving beta: the image of frame 5 did not decode",
        "slider 4 over layer, beta reported 1 move(s) for 2 axes",
    ], msgs


def test_cap_keeps_n_lines_and_counts_the_rest():
    failures = [("tex", "a.html", f"m{i}") for i in range(7)] + [("img", "a.html", "x")]
    out = check_pages.cap(failures, 5)
    assert [m for c, _, m in out if c == "tex"] == ["m0", "m1", "m2", "m3", "m4", "... and 2 more"]
    assert ("img", "a.html", "x") in out


# ----------------------------------------------------------------------------- in the browser


@needs_browser
def test_a_correct_book_passes_and_is_screenshotted(tmp_path):
    book = make_book(tmp_path / "html")
    shots = tmp_path / "shots"
    res, fails = run_checker(book, "--screenshot", shots, "--shot", "index.html")
    assert res.returncode == 0, res.stdout + res.stderr
    assert fails == []
    assert "every check passed" in res.stdout
    assert (shots / "index_dark.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the front page, dark theme
    png = (shots / "index.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, _ = struct.unpack(">II", png[16:24])
    assert width == 1400


BROKEN = {
    # page: (its body and head, the check that must fail on it, a phrase of the message)
    "rawtex.html": (page(r'<p>Math <span class="math">\(\sqrt n A^\perp\)</span> with no MathJax.</p>'), "tex", "\\("),
    "dollar.html": (page(r"<p>An inline $\alpha_r$ that MathJax is not set up for.</p>", MATHJAX), "tex", "$"),
    "texerror.html": (page(r"<p>A formula \(x^^2\) that does not parse.</p>", MATHJAX), "tex", "MathJax error"),
    "noimg.html": (page('<img src="_images/missing.png" alt="gone">'), "img", "missing.png"),
    "anchor.html": (page('<a href="page2.html#no-such-section">a broken anchor</a>'), "link", "no-such-section"),
    "nopage.html": (page('<a href="gone.html">a missing page</a>'), "link", "gone.html"),
    "remote.html": (
        page("<p>plain</p>", '<script src="https://cdn.example.org/lib.js"></script>'),
        "asset",
        "cdn.example.org",
    ),
    # a slider whose frames are one image: moving it changes nothing a reader sees
    "slider_same.html": (page(slider_html("beta", [(0.5, RED), (1.0, RED)])), "slider", "left the image unchanged"),
    # a two-axis slider whose second axis shows one image: moving beta changes nothing at the layer it moved to
    "slider_grid.html": (page(grid_html(GRID_AXES, [RED, BLUE, GREEN, GREEN, RED, RED], 1)), "slider", "moving beta"),
    # a slider with no script (sanitised away, say): it cannot move at all
    "slider_dead.html": (
        page(re.sub(r"<script>.*?</script>", "", slider_html("h", [(1, RED), (2, BLUE)]), flags=re.DOTALL)),
        "slider",
        "did not report",
    ),
    # figures that the dark theme would hide: a transparent one, one on a dark background
    "clear.html": (page('<img src="_images/clear.png" alt="clear">'), "dark", "transparent pixels"),
    "black.html": (page('<img src="_images/black.png" alt="black">'), "dark", "dark background"),
    "nofonts.html": (
        page(r"<p>Typeset \(x^2\), but the fonts are not beside MathJax.</p>", MATHJAX.replace("mathjax/", "mj2/")),
        "asset",
        "woff",
    ),
    # the layout check: a formula wider than its column, the same formula broken to fit beside it
    "widemath.html": (
        page(
            '<div style="width:240px"><div class="math">\\['
            + " + ".join(f"a_{{{i}}} b_{{{i}}}" for i in range(30))
            + '\\]</div><div class="math">\\[\\begin{aligned} a &= b \\\\ &= c \\end{aligned}\\]</div></div>',
            MATHJAX,
        ),
        "layout",
        "px column: " + " + ".join(f"a_{{{i}}} b_{{{i}}}" for i in range(3)),
    ),
    "smalltext.html": (page('<img src="_images/tiny.png" alt="a figure">'), "layout", "smallest text is 5.6 px"),
    "unsized.html": (page('<img src="_images/unsized.png" alt="a figure">'), "layout", "cannot be measured"),
    "pathalt.html": (page('<img src="_images/fig.png" alt="../_images/fig.png">'), "layout", "a file name"),
    "noalt.html": (page('<img src="_images/fig.png">'), "layout", "no alt text"),
    "textitle.html": (
        page("<p>plain</p>").replace("<title>t</title>", r"<title>The step \sqrt n A^\perp</title>"),
        "layout",
        "raw TeX in the page title",
    ),
    # a Table 1 chapter (--code-page) whose open code is most of the page; folded code does not count
    "code.html": (
        page(
            '<article class="bd-article"><div class="cell_input" style="height:600px">x = 1</div>'
            '<details><summary>show</summary><div class="cell_input" style="height:5000px">y</div></details>'
            '<p style="height:400px">text</p></article>'
        ),
        "layout",
        "open code is 5",  # 600 px of about 1030
    ),
}


@needs_browser
def test_each_defect_fails_on_its_page_and_only_there(tmp_path):
    book = make_book(tmp_path / "html", lists_results=False)
    copy_mathjax(book / "mj2", fonts=False)
    for name, (html, _, _) in BROKEN.items():
        (book / name).write_text(html)
    # only the network can tell: a script fetches data at view time
    (book / "fetch.html").write_text(page("<p>plain</p><script>fetch('https://data.example.org/x.json')</script>"))
    res, fails = run_checker(book, "--code-page", "code.html")
    out = res.stdout
    assert res.returncode == 1, out + res.stderr
    for name, (_, check, phrase) in BROKEN.items():
        mine = fails_of(fails, name)
        assert any(ln.split()[1] == check and phrase in ln for ln in mine), f"{name}: no {check} failure in\n{out}"
    # the remote script is seen twice: in the page, and as a request the blocked browser made
    assert any(ln.split()[1] == "net" and "cdn.example.org" in ln for ln in fails_of(fails, "remote.html")), out
    fetch = fails_of(fails, "fetch.html")
    assert fetch and all(ln.split()[1] == "net" and "data.example.org" in ln for ln in fetch), out
    # the correct pages are untouched by their neighbours' defects
    assert fails_of(fails, "index.html") == [] and fails_of(fails, "page2.html") == [], out
    assert fails_of(fails, "explorer.html") == [] and fails_of(fails, "explorer2.html") == [], out
    assert all(
        ln.split()[1] == "slider"
        for name in ("slider_same.html", "slider_dead.html", "slider_grid.html")
        for ln in fails_of(fails, name)
    )
    assert len(fails_of(fails, "slider_grid.html")) == 1, out  # moving the layer changed the image
    assert fails_of(fails, "nofonts.html") and all(ln.split()[1] == "asset" for ln in fails_of(fails, "nofonts.html"))
    # one formula of two overflows; each layout defect is its page's only one
    assert len(fails_of(fails, "widemath.html")) == 1, out
    for name in ("smalltext.html", "unsized.html", "pathalt.html", "noalt.html", "textitle.html", "code.html"):
        assert len(fails_of(fails, name)) == 1, (name, out)
    # no layout copy is left beside the pages
    assert not list(book.rglob(".check-pages-*")), sorted(book.rglob(".check-pages-*"))
    assert re.search(r"widemath.html +2 formula\(s\), widest [2-9]", out), out
    # a search page that lists nothing for a word of the titles
    assert any("search.html" in ln and "listed no page" in ln for ln in fails), out
    assert "failures on" in out.splitlines()[-1]


@needs_browser
def test_a_missing_folder_or_search_page_cannot_pass(tmp_path):
    res, _ = run_checker(tmp_path / "nothing")
    assert res.returncode == 2
    book = make_book(tmp_path / "html")
    (book / "search.html").unlink()
    (book / "index.html").write_text(GOOD.replace(THEME, ""))  # a front page that ignores the dark mode
    res, fails = run_checker(book)
    assert res.returncode == 1 and any("no search page" in ln for ln in fails), res.stdout
    assert any(ln.split()[1] == "dark" and "data-theme is None" in ln for ln in fails_of(fails, "index.html")), fails


def test_figure_text_is_read_from_the_books_png_at_the_size_it_is_shown():
    """gelib's PNG says its smallest font size and its resolution; the checker turns them into CSS px
    as shown: points / 72 x dpi x shown width / natural width (an independent count: the size set)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from gelib.plotting.style import MIN_FONT_KEY, book_png

    assert check_pages.MIN_FONT_KEY == MIN_FONT_KEY
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=9)
    ax.set_title("title", fontsize=12)
    data = book_png(fig, dpi=150, fit=False)
    plt.close(fig)
    natural = Image.open(io.BytesIO(data)).size[0]
    px, why = check_pages.png_text_px(data, natural / 2)
    # pHYs holds whole pixels per metre: 150 dpi is stored as 5906 per metre, 150.01 dpi (1e-4)
    assert why is None and px == pytest.approx(9 / 72 * 150 / 2, rel=1e-4)
    assert check_pages.png_text_px(png_of((255, 255, 255), font_pt=None), 4) == (
        None,
        f"no {MIN_FONT_KEY} text chunk: its text size cannot be measured",
    )
    assert "no resolution" in check_pages.png_text_px(png_of((255, 255, 255), dpi=None), 4)[1]


def test_layout_findings_from_measurements():
    """``check_layout`` on what the page script reports: a formula 1 px over its column passes (rounding),
    2 px over fails; open code is bounded only on a code page; a failed script is a failure."""
    book = check_pages.Book(Path("."))
    dom = check_pages.parse(page("<p>x</p>"))
    formulas = [{"tex": "a", "width": 601, "column": 600}, {"tex": "b = c", "width": 602, "column": 600}]
    lay = {"formulas": formulas, "code_px": 150, "article_px": 1000, "images": []}
    found, fig = check_pages.check_layout(book, Path("p.html"), dom, lay, code_page=False, code_limit=10, text_px=11)
    assert [m for _, m in found] == ["a formula 602 px wide in a 600 px column: b = c"]
    assert fig.formulas == 2 and fig.widest == pytest.approx(602 / 600) and fig.open_code is None
    found, fig = check_pages.check_layout(book, Path("p.html"), dom, lay, code_page=True, code_limit=10, text_px=11)
    assert fig.open_code == pytest.approx(15.0) and any("open code is 15.0 %" in m for _, m in found)
    found, _ = check_pages.check_layout(book, Path("p.html"), dom, None, code_page=False, code_limit=10, text_px=11)
    assert found == [("layout", "the layout script wrote nothing")]
    assert check_pages.layout_of(
        '<body><script type="application/json" id="check-pages-layout">{"a": "x & y"}</script>'
    ) == {"a": "x & y"}


@pytest.mark.parametrize("alt", ["fig.png", "../_images/fig.png", "_images/a b/x.PNG", "book/_images/x"])
def test_a_path_is_not_an_alt_text(alt):
    assert check_pages.PATH_ALT.search(alt)


@pytest.mark.parametrize("alt", ["Relative W1 against n, with the fitted slope", "the 1/n rate", "a png-like figure"])
def test_a_description_is_an_alt_text(alt):
    assert not check_pages.PATH_ALT.search(alt)


def test_a_matplotlib_figure_is_legible_on_the_dark_theme_unless_saved_transparent():
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [1, 0], color="black")
    ax.set_title("label")
    opaque, clear = io.BytesIO(), io.BytesIO()
    fig.savefig(opaque, format="png")  # as myst-nb and the sliders save them
    fig.savefig(clear, format="png", transparent=True)
    plt.close(fig)
    assert check_pages.figure_problem(opaque.getvalue()) is None
    assert "transparent pixels" in check_pages.figure_problem(clear.getvalue())
    assert "dark background" in check_pages.figure_problem(png_of((30, 30, 60)))
    assert check_pages.figure_problem(b"not a png").startswith("not a readable image")
