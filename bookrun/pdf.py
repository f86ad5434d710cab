"""The whole book as one PDF: the executed chapters' single-page build, printed by Chromium.

``python -m gelib pdf RUN_DIR`` (``make pdf``) prints the chapters a run folder
already holds, executed once (by the batch or by the chapter tests): nothing is
executed again and nothing is downloaded.

1. :func:`build_single_page` runs Jupyter Book's ``singlehtml`` builder on the
   run folder, execution off, into ``<folder>/_build/singlehtml``: every chapter
   in ``_toc.yml``'s order on one page, with the book's MathJax served from the
   build (``tools/book_offline``). Where ``<folder>`` is the folder that
   ``render --output`` wrote (``make test``), Sphinx reuses that render's
   environment and reads no chapter again.
2. :func:`print_page` writes that page again at the build's root as
   :data:`PRINT_PAGE`, its links made internal to the one page, with the print
   stylesheet :data:`PRINT_CSS` and the script :data:`PRINT_JS`: no sidebar,
   navigation or buttons; code folded on the page (``hide-input`` and its kin)
   not printed at all, nor the code inside a folded block, whose prose and
   figures are printed open; each chapter on a new page, with its exercises'
   solutions gathered at its end under "Solutions"; displayed formulas and
   figures never split across pages; A4, the book's title at the top of every
   page and the page number at the bottom (CSS page-margin boxes: no raw TeX,
   no file path, no date).
3. :func:`print_pdf` prints it with the system's headless Chromium
   (``--print-to-pdf``, networking blocked, a virtual-time budget for MathJax
   to typeset every formula first).

:func:`check_pdf` reads the PDF back with :func:`pdf_text` (a reader of the
PDFs Chromium writes, on the standard library: page tree, content streams,
``ToUnicode`` maps) and reports a missing chapter title
(:func:`chapter_titles`), raw TeX left in the text (:data:`RAW_TEX`) or fewer
images than the printed page shows.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import TextIO

from .chapters import BatchError, toc_files
from .runfolder import RunFolder
from .startup import jupyter_book_command

__all__ = [
    "PDF_NAME",
    "PRINT_PAGE",
    "PRINT_CSS",
    "PRINT_JS",
    "RAW_TEX",
    "TEX_COMMANDS",
    "PdfError",
    "find_browser",
    "HEADLESS_FLAGS",
    "build_single_page",
    "print_page",
    "print_pdf",
    "chapter_titles",
    "pdf_text",
    "pdf_image_count",
    "check_pdf",
]

#: The PDF's default file name.
PDF_NAME = "book.pdf"
#: The page that is printed, at the root of the single-page build.
PRINT_PAGE = "gelib-print.html"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Headless Chromium with its networking blocked (a dead proxy and a resolver that resolves
#: nothing): the book is offline. ``tools/check_pages.py`` starts the browser with these too.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--mute-audio",
    "--proxy-server=127.0.0.1:9",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
)
# Chromium's own header and footer show the file's path and the date
BROWSER_FLAGS = (*HEADLESS_FLAGS, "--no-pdf-header-footer")

#: The print stylesheet, ``{title}`` the book's title (CSS-escaped).
PRINT_CSS = """
@page { size: A4; margin: 18mm 15mm 16mm 15mm;
  @top-center { content: "{title}"; font: 8pt sans-serif; color: #666; }
  @bottom-center { content: counter(page) " / " counter(pages); font: 8pt sans-serif; color: #666; } }
html, body { background: #fff !important; }
.bd-header, .bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer, .bd-footer-article,
.bd-footer-content, .prev-next-area, .header-article-items, #jb-print-docs-body, .skip-link, .search-button-field,
.headerlink, .copybtn, button.toggle-button, .toggle-hint, .theme-switch-button, .bd-search, .sidebar-toggle,
.onlyprint, .tag_injected-parameters, .gelib-print-drop { display: none !important; }
.bd-page-width, .bd-main, .bd-content, .bd-article-container, .bd-article, .bd-container, .bd-container__inner {
  max-width: none !important; width: auto !important; margin: 0 !important; padding: 0 !important;
  display: block !important; }
body { font-size: 10.5pt; }
/* the theme hides a page's first h1 in print (its print-only header repeats it): here it is the book's title */
.bd-main .bd-content .bd-article h1:first-of-type { display: block !important; }
/* folded on the page, not printed: a hidden cell's source (hide-input), output (hide-output) or both */
details.hide { display: none !important; }
/* a folded block's prose, formulas and figures are printed open; the code inside it was folded */
details.sd-dropdown .cell_input { display: none !important; }
details.sd-dropdown > summary .sd-summary-up, details.sd-dropdown > summary .sd-summary-down { display: none; }
/* every chapter on a new page, its solutions at its end */
span[id^="document-"] + section { break-before: page; }
section.gelib-print-solutions { break-before: auto; margin-top: 2em; border-top: 1px solid #999; }
.toggle-hidden, .solution .toggle-hidden { visibility: visible !important; opacity: 1 !important;
  height: auto !important; overflow: visible !important; }
/* a formula or a figure is never split across pages, nor cut at the column's edge */
mjx-container[display="true"], .math-wrapper, div.math, figure, .cell_output img, table { break-inside: avoid; }
mjx-container[jax="CHTML"][display="true"], .math-wrapper, div.math { overflow: visible !important; }
img { max-width: 100% !important; height: auto; }
h1, h2, h3, h4, .admonition-title, .sd-summary-title { break-after: avoid; }
pre { white-space: pre-wrap !important; word-break: break-word; font-size: 8pt; }
a { color: inherit; text-decoration: none; }
"""

#: The script run before printing; it opens every folded block and moves each chapter's solutions to its end.
PRINT_JS = """
window.addEventListener("load", () => {
  document.querySelectorAll("details.sd-dropdown").forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
  document.querySelectorAll('span[id^="document-"]').forEach((mark) => {
    const chapter = mark.nextElementSibling;
    if (!chapter || chapter.tagName !== "SECTION") return;
    const solutions = chapter.querySelectorAll("div.solution");
    if (!solutions.length) return;
    const part = document.createElement("section");
    part.className = "gelib-print-solutions";
    const heading = document.createElement("h3");
    heading.textContent = "Solutions";
    part.appendChild(heading);
    solutions.forEach((s) => part.appendChild(s));
    chapter.appendChild(part);
  });
});
"""

#: The TeX commands a formula of the book may hold (Greek letters, operators, relations, fonts,
#: accents, delimiters, environments); ``\n`` and the other escapes of code are not among them.
TEX_COMMANDS = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma "
    "tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega "
    "frac tfrac dfrac binom sqrt sum prod int oint lim sup inf max min log exp sin cos det tr operatorname "
    "mathbb mathcal mathrm mathbf mathring mathit boldsymbol text textstyle displaystyle rm bf "
    "hat bar tilde widehat widetilde dot vec overline underbrace overbrace "
    "left right big Big bigg Bigg lvert rvert lVert rVert langle rangle mid "
    "top perp pm mp times cdot cdots ldots dots circ star boxtimes otimes oplus "
    "le leq ge geq ne neq approx sim simeq equiv propto gg ll gtrsim lesssim in notin subset to mapsto "
    "infty partial nabla downarrow uparrow rightarrow Rightarrow qquad quad begin end R"
).split()
#: Raw TeX that a printed page must not show, MathJax having typeset every formula first; a
#: delimiter (``\(``, ``\)``, ``\[``, ``\]``, ``$$``) or a command of :data:`TEX_COMMANDS`. A
#: delimiter or command after a second backslash is a Python string's repr (``'\\beta'``, code on the API
#: page), not counted.
RAW_TEX = re.compile(
    r"(?<!\\)\\[()\[\]]|\$\$|(?<!\\)\\(?:" + "|".join(sorted(TEX_COMMANDS, key=len, reverse=True)) + r")(?![A-Za-z])"
)


class PdfError(BatchError):
    """The PDF could not be built (no browser, a failed build or print)."""


def find_browser(explicit: str | None = None) -> str | None:
    """The Chromium to print with: ``explicit``, else ``$CHROMIUM``, else the first on ``PATH``."""
    if explicit:
        return shutil.which(explicit) or (explicit if Path(explicit).is_file() else None)
    if os.environ.get("CHROMIUM"):
        return shutil.which(os.environ["CHROMIUM"])
    return next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def build_single_page(root: Path, run_dir: Path, output: Path, stream: TextIO | None = None) -> Path:
    """Build the executed mirror tree ``run_dir`` (prepared by :func:`bookrun.render.prepare_mirror`)
    with Jupyter Book's ``singlehtml`` builder into ``<output>/_build/singlehtml``, execution off;
    ``output`` is a run folder, and what Jupyter Book wrote there is recorded in its manifest, the
    log in ``run_dir``'s (``logs/pdf.log``). Returns the page of the book's root chapter."""
    stream = stream or sys.stderr
    folder, target = RunFolder(run_dir), RunFolder(output)
    target.check_links()
    log_rel = "logs/pdf.log"
    folder.check_writable([log_rel])
    before = target.snapshot("_build") if (target.path / "_build").is_dir() else {}
    cmd = jupyter_book_command("build", str(run_dir), "--builder", "singlehtml", "--path-output", str(output))
    cmd.append("--keep-going")
    log_path = folder.write(log_rel, "")
    print(f"pdf: building the single page ... full log: {log_path}", file=stream, flush=True)
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    try:
        with open(log_path, "w") as log:
            res = subprocess.run(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT, env=env)
    finally:
        folder.record(log_rel)
        if (target.path / "_build").is_dir():
            target.adopt("_build", before)
    text = re.sub(r"\x1b\[[0-9;]*m", "", log_path.read_text(errors="replace"))
    for line in [ln for ln in text.splitlines() if re.search(r"\b(WARNING|ERROR|CRITICAL)\b", ln)][:20]:
        print(f"  {line}", file=stream)
    page = output / "_build" / "singlehtml" / f"{_root_doc(run_dir)}.html"
    if res.returncode or not page.is_file():
        raise PdfError(f"the single-page build failed; see {log_path}")
    return page


def _root_doc(run_dir: Path) -> str:
    """The ``root:`` of ``run_dir``'s ``_toc.yml`` (``book/intro``)."""
    m = re.search(r"^root:\s*(\S+)", (Path(run_dir) / "_toc.yml").read_text(), flags=re.M)
    if not m:
        raise PdfError(f"no root in {Path(run_dir) / '_toc.yml'}")
    return m.group(1).removesuffix(".md")


def print_page(page: Path, title: str) -> str:
    """The HTML of :data:`PRINT_PAGE`: the single page ``page`` (written by Sphinx beside its
    chapter, ``book/intro.html``, with links relative to the build's root) as it reads from the
    root, links to itself made internal, with :data:`PRINT_CSS` (``title`` in every page's
    header) and :data:`PRINT_JS`."""
    page = Path(page)
    build = next(p for p in page.parents if p.name == "singlehtml")
    rel = page.relative_to(build).as_posix()
    text = page.read_text(encoding="utf-8")
    depth = rel.count("/")
    up = "(?:\\.\\./){" + str(depth) + "}(?!\\.\\./)"
    text = re.sub(r'((?:src|href)=")' + up, r"\1", text) if depth else text
    text = re.sub(r'href="' + re.escape(rel) + r'(#[^"]*)?"', lambda m: f'href="{m[1] or "#"}"', text)
    css = PRINT_CSS.replace("{title}", title.replace("\\", "\\\\").replace('"', '\\"'))
    inject = f"<style>{css}</style>\n<script>{PRINT_JS}</script>\n"
    if "</head>" not in text:
        raise PdfError(f"{page} has no </head>")
    return text.replace("</head>", inject + "</head>", 1)


def print_pdf(browser: str, page: Path, pdf: Path, budget_ms: int = 60000, timeout: float = 600) -> None:
    """Print ``page`` with ``browser`` (headless, networking blocked) into the file ``pdf``, after
    ``budget_ms`` of the page's virtual time (MathJax typesets every formula in it)."""
    with tempfile.TemporaryDirectory(prefix="gelib-pdf-") as tmp:
        cmd = [
            browser,
            *BROWSER_FLAGS,
            f"--user-data-dir={tmp}/profile",
            f"--virtual-time-budget={budget_ms}",
            f"--print-to-pdf={pdf}",
            Path(page).resolve().as_uri(),
        ]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            _out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise PdfError(f"the browser did not print in {timeout:.0f} s") from None
    if proc.returncode or not Path(pdf).is_file() or Path(pdf).stat().st_size == 0:
        tail = " | ".join(err.decode("utf-8", "replace").strip().splitlines()[-3:])
        raise PdfError(f"the browser failed to print (exit {proc.returncode}): {tail}")


def chapter_titles(root: Path) -> list[str]:
    """The title of every page of ``_toc.yml`` (its first level-1 heading outside code), in order."""
    titles = []
    for f in toc_files(root):
        fence = False
        for line in (Path(root) / f"{f}.md").read_text(encoding="utf-8").splitlines():
            if line.startswith(("```", "~~~")):
                fence = not fence
            elif not fence and line.startswith("# "):
                titles.append(line[2:].strip())
                break
    return titles


# ----------------------------------------------------------------------------- reading the PDF back

_OBJ = re.compile(rb"(\d+)\s+(\d+)\s+obj\b")
_REF = rb"(\d+)\s+\d+\s+R"


def _objects(data: bytes) -> dict[int, bytes]:
    """``{number: body}`` of every indirect object (dictionary and stream, up to ``endobj``),
    read from the object headers in order; a stream is cut by its ``/Length``."""
    objs: dict[int, bytes] = {}
    pos = 0
    while True:
        m = _OBJ.search(data, pos)
        if not m:
            return objs
        start = m.end()
        head_end = data.find(b"endobj", start)
        sm = re.search(rb"stream\r?\n", data[start : head_end if head_end > 0 else None])
        if sm and (head_end < 0 or start + sm.start() < head_end):
            head = data[start : start + sm.start()]
            length = re.search(rb"/Length\s+(\d+)(\s+\d+\s+R)?", head)
            body_start = start + sm.end()
            n = int(length.group(1)) if length and not length.group(2) else -1
            if n < 0:  # an indirect length: read it, or else end at "endstream"
                if length:
                    ref = re.search(rb"%d\s+0\s+obj\s*(\d+)" % int(length.group(1)), data)
                    n = int(ref.group(1)) if ref else -1
                if n < 0:
                    n = data.find(b"endstream", body_start) - body_start
            objs[int(m.group(1))] = data[start : body_start + n]
            pos = body_start + n
        else:
            objs[int(m.group(1))] = data[start : head_end if head_end > 0 else len(data)]
            pos = head_end if head_end > 0 else len(data)


def _stream(obj: bytes) -> bytes:
    """The decoded data of a stream object (``FlateDecode`` or none)."""
    m = re.search(rb"stream\r?\n", obj)
    if not m:
        return b""
    head, data = obj[: m.start()], obj[m.end() :]
    if b"/FlateDecode" in head:
        try:
            return zlib.decompressobj().decompress(data)
        except zlib.error:
            return b""
    return data


def _cmap(data: bytes) -> tuple[dict[bytes, str], int]:
    """A ``ToUnicode`` CMap: ``{code bytes: text}`` and the code length in bytes."""
    text = data.decode("latin-1")
    out: dict[bytes, str] = {}
    space = re.search(r"begincodespacerange\s*<([0-9A-Fa-f]+)>", text)
    width = len(space.group(1)) // 2 if space else 2

    def utf16(h: str) -> str:
        return bytes.fromhex(h).decode("utf-16-be", "replace")

    for block in re.findall(r"beginbfchar(.*?)endbfchar", text, re.S):
        for src, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]*)>", block):
            out[bytes.fromhex(src)] = utf16(dst)
    for block in re.findall(r"beginbfrange(.*?)endbfrange", text, re.S):
        for lo, hi, dst in re.findall(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]*>|\[[^\]]*\])", block):
            a, b, n = int(lo, 16), int(hi, 16), len(lo) // 2
            if dst.startswith("["):
                items = re.findall(r"<([0-9A-Fa-f]*)>", dst)
                for i, h in enumerate(items[: b - a + 1]):
                    out[(a + i).to_bytes(n, "big")] = utf16(h)
            else:
                base = bytes.fromhex(dst[1:-1])
                first, last = base[:-2], int.from_bytes(base[-2:], "big")
                for i in range(b - a + 1):
                    out[(a + i).to_bytes(n, "big")] = (first + (last + i).to_bytes(2, "big")).decode(
                        "utf-16-be", "replace"
                    )
    return out, width


_TOKEN = re.compile(
    rb"\s*(?:(<[0-9A-Fa-f\s]*>)|(\((?:\\.|[^\\()]|\((?:\\.|[^\\()])*\))*\))|(/[^\s/<>\[\]()]+)|(\[)|(\])"
    rb"|([-+]?(?:\d+\.?\d*|\.\d+))|(<<|>>)|([A-Za-z'\"*]+)|(%[^\n]*)|(.))",
    re.S,
)
_ESC = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _literal(s: bytes) -> bytes:
    """The bytes of a PDF literal string ``(...)`` (escapes resolved)."""
    body = s[1:-1]
    return re.sub(
        rb"\\([0-7]{1,3}|.)",
        lambda m: bytes([int(m[1], 8) & 255]) if m[1][:1].isdigit() else _ESC.get(m[1], m[1]),
        body,
        flags=re.S,
    )


def _resources(objs: dict[int, bytes], obj: bytes) -> bytes:
    """The resource dictionary of a page or form (inline, or an indirect object), as bytes."""
    m = re.search(rb"/Resources\s+" + _REF, obj)
    if m:
        return objs.get(int(m.group(1)), b"")
    m = re.search(rb"/Resources\s*<<", obj)
    return obj[m.start() :] if m else b""


def _named(objs: dict[int, bytes], resources: bytes, kind: bytes) -> dict[bytes, int]:
    """``{name: object number}`` of a resource dictionary's ``/Font`` or ``/XObject`` entry."""
    m = re.search(rb"/" + kind + rb"\s*(?:<<(.*?)>>|" + _REF + rb")", resources, re.S)
    if not m:
        return {}
    body = m.group(1) if m.group(1) is not None else objs.get(int(m.group(2)), b"")
    return {name: int(num) for name, num in re.findall(rb"/([^\s/<>\[\]()]+)\s+" + _REF, body)}


class _Reader:
    """Text and image draws of a PDF's pages (:func:`pdf_text`, :func:`pdf_image_count`)."""

    def __init__(self, data: bytes):
        if not data.startswith(b"%PDF-"):
            raise ValueError("not a PDF (no %PDF- header)")
        self.objs = _objects(data)
        self.fonts: dict[int, tuple[dict[bytes, str], int, bool]] = {}
        self.images: set[int] = set()

    def pages(self) -> list[int]:
        """The page objects in reading order (the page tree from the catalogue's ``/Pages``)."""
        objs = self.objs
        root = next((n for n, o in objs.items() if re.search(rb"/Type\s*/Catalog\b", o)), None)
        if root is None:
            raise ValueError("no document catalogue")
        m = re.search(rb"/Pages\s+" + _REF, objs[root])
        out: list[int] = []
        stack = [int(m.group(1))] if m else []
        seen: set[int] = set()
        while stack:
            n = stack.pop()
            if n in seen or n not in objs:
                continue
            seen.add(n)
            kids = re.search(rb"/Kids\s*\[([^\]]*)\]", objs[n])
            if kids and re.search(rb"/Type\s*/Pages\b", objs[n]):
                stack.extend(reversed([int(k) for k in re.findall(_REF, kids.group(1))]))
            elif re.search(rb"/Type\s*/Page\b", objs[n]):
                out.append(n)
        return out

    def font(self, num: int) -> tuple[dict[bytes, str], int, bool]:
        """A font's ``ToUnicode`` map, its code length, and whether it is a monospace font (code)."""
        if num not in self.fonts:
            obj = self.objs.get(num, b"")
            m = re.search(rb"/ToUnicode\s+" + _REF, obj)
            cmap, width = _cmap(_stream(self.objs.get(int(m.group(1)), b""))) if m else ({}, 1)
            name = re.search(rb"/BaseFont\s*/([^\s/<>\[\]()]+)", obj)
            mono = bool(name and re.search(rb"Mono|Courier|Code|Consol", name.group(1)))
            self.fonts[num] = (cmap, width, mono)
        return self.fonts[num]

    def page_text(self, page: int) -> tuple[str, str]:
        """The page's text, and its prose: the text less what monospace fonts show (code)."""
        obj = self.objs[page]
        contents = re.search(rb"/Contents\s*(?:\[([^\]]*)\]|" + _REF + rb")", obj)
        nums = []
        if contents:
            nums = (
                [int(k) for k in re.findall(_REF, contents.group(1))] if contents.group(1) else [int(contents.group(2))]
            )
        data = b"\n".join(_stream(self.objs.get(n, b"")) for n in nums)
        return self.run(data, _resources(self.objs, obj), depth=0)

    def run(self, data: bytes, resources: bytes, depth: int) -> tuple[str, str]:
        """The text a content stream shows, one line per change of the text line, forms followed;
        and the same less the text of monospace fonts."""
        fonts = _named(self.objs, resources, b"Font")
        xobjects = _named(self.objs, resources, b"XObject")
        out: list[str] = []
        prose: list[str] = []
        stack: list = []
        cmap: dict[bytes, str] = {}
        width, y, mono = 1, None, False

        def show(s: bytes) -> None:
            text = "".join(cmap.get(s[i : i + width], "") for i in range(0, len(s) - width + 1, width))
            out.append(text)
            prose.append(" " if mono else text)

        def newline() -> None:
            out.append("\n")
            prose.append("\n")

        for m in _TOKEN.finditer(data):
            hexs, lit, name, lb, rb, num, op = m.group(1, 2, 3, 4, 5, 6, 8)
            if hexs:
                stack.append(bytes.fromhex(re.sub(rb"\s", b"", hexs[1:-1]).decode() + ("0" if len(hexs) % 2 else "")))
            elif lit:
                stack.append(_literal(lit))
            elif name:
                stack.append(name[1:])
            elif lb:
                stack.append("[")
            elif rb:
                arr = []
                while stack and stack[-1] != "[":
                    arr.append(stack.pop())
                if stack:
                    stack.pop()
                stack.append(list(reversed(arr)))
            elif num:
                stack.append(float(num))
            elif op:
                if op == b"Tf" and len(stack) >= 2 and isinstance(stack[-2], bytes):
                    cmap, width, mono = self.font(fonts.get(stack[-2], -1))
                elif op in (b"Tj", b"'", b'"') and stack and isinstance(stack[-1], bytes):
                    show(stack[-1])
                elif op == b"TJ" and stack and isinstance(stack[-1], list):
                    for item in stack[-1]:
                        if isinstance(item, bytes):
                            show(item)
                elif op == b"Tm" and len(stack) >= 2 and isinstance(stack[-1], float):
                    if y is None or abs(stack[-1] - y) > 0.5:  # the same y: the same line, another run
                        newline()
                    y = stack[-1]
                elif op in (b"Td", b"TD") and len(stack) >= 2 and isinstance(stack[-1], float):
                    if abs(stack[-1]) > 0.5:  # a move along the line (a kerning break) is no new line
                        newline()
                        y = None
                elif op == b"T*":
                    newline()
                elif op == b"Do" and stack and isinstance(stack[-1], bytes):
                    num_x = xobjects.get(stack[-1])
                    x = self.objs.get(num_x or -1, b"")
                    if re.search(rb"/Subtype\s*/Image\b", x[:400]):
                        self.images.add(num_x or -1)
                    elif re.search(rb"/Subtype\s*/Form\b", x[:400]) and depth < 8:
                        text, text_prose = self.run(_stream(x), _resources(self.objs, x) or resources, depth + 1)
                        out.append(text)
                        prose.append(text_prose)
                stack = []
        return "".join(out), "".join(prose)


def pdf_text(data: bytes) -> list[str]:
    """The text of each page of the PDF ``data``, in order (what Chromium's PDFs hold: fonts with
    ``ToUnicode`` maps, content streams compressed or not, forms drawn by ``Do``). A line break
    wherever the text moves to another line; words as the PDF spells them. ``ValueError`` for
    data that is not a readable PDF."""
    reader = _Reader(data)
    return [reader.page_text(p)[0] for p in reader.pages()]


def pdf_image_count(data: bytes) -> int:
    """The number of distinct images that the pages of the PDF ``data`` draw."""
    reader = _Reader(data)
    for p in reader.pages():
        reader.page_text(p)
    return len(reader.images)


def _squash(text: str) -> str:
    """``text`` without white space and with typographic quotes as ASCII (for finding a title)."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", "", html.unescape(text))


def check_pdf(data: bytes, titles: list[str], min_images: int = 0, running: str = "") -> list[str]:
    """What is wrong with the book's PDF ``data``, one line each (none: it is right): a title of
    ``titles`` not found in its text (the title's words outside its ``$...$`` formulas, which
    MathJax typesets, each found in order; the lines that are exactly ``running``, the running
    header, are not searched), raw TeX left in a page's prose (:data:`RAW_TEX`, with its page and
    an excerpt; code, set in a monospace font, may hold TeX, a figure's label), fewer than
    ``min_images`` images drawn, no page at all."""
    try:
        reader = _Reader(data)
        read = [reader.page_text(p) for p in reader.pages()]
    except (ValueError, KeyError, IndexError) as e:
        return [f"the PDF cannot be read: {e}"]
    if not read:
        return ["the PDF has no page"]
    pages = [text for text, _prose in read]
    problems = []
    body = ["\n".join(ln for ln in p.splitlines() if not running or ln.strip() != running) for p in pages]
    whole = _squash("".join(body))
    for title in titles:
        parts = [_squash(p) for p in re.split(r"\$[^$]+\$", title)]
        pos = 0
        for part in (p for p in parts if p):
            found = whole.find(part, pos)
            if found < 0:
                problems.append(f"no chapter title {title!r} in the PDF (missing: {part!r})")
                break
            pos = found + len(part)
    for number, (_text, text) in enumerate(read, 1):
        for m in list(RAW_TEX.finditer(text))[:3]:
            excerpt = " ".join(text[max(0, m.start() - 30) : m.end() + 30].split())
            problems.append(f"raw TeX on page {number}: {m.group()!r} in {excerpt!r}")
    if len(reader.images) < min_images:
        problems.append(f"the PDF draws {len(reader.images)} images; the printed page shows {min_images}")
    return problems


def page_images(page_html: str) -> int:
    """The number of distinct image files (``<img src>``, ``data:`` images included) a page shows."""
    return len(set(re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', page_html)))


def write_pdf(
    root: Path,
    run_dir: Path,
    output_folder: Path,
    pdf_rel: str,
    title: str,
    browser: str,
    budget_ms: int = 60000,
    stream: TextIO | None = None,
) -> tuple[Path, int]:
    """Build the single page of ``run_dir`` into the run folder ``output_folder`` and print it
    into ``output_folder / pdf_rel`` (through a temporary file, renamed into place, recorded in
    the folder's manifest). Returns the PDF's path and the number of images its page shows."""
    stream = stream or sys.stderr
    target = RunFolder(output_folder)
    target.check_writable([pdf_rel, f"_build/singlehtml/{PRINT_PAGE}"])
    t0 = time.perf_counter()
    page = build_single_page(root, run_dir, output_folder, stream)
    t1 = time.perf_counter()
    text = print_page(page, title)
    printed = target.write(f"_build/singlehtml/{PRINT_PAGE}", text)
    pdf = target.path / pdf_rel
    fd, tmp = tempfile.mkstemp(dir=pdf.parent, prefix=f".{pdf.name}.", suffix=".tmp")
    os.close(fd)
    try:
        print("pdf: printing with Chromium ...", file=stream, flush=True)
        print_pdf(browser, printed, Path(tmp), budget_ms=budget_ms)
        target.write(pdf_rel, Path(tmp).read_bytes())
    finally:
        Path(tmp).unlink(missing_ok=True)
    t2 = time.perf_counter()
    print(f"pdf: {pdf} (single page {t1 - t0:.0f} s, print {t2 - t1:.0f} s)", file=stream)
    return pdf, page_images(text)
