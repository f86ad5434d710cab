#!/usr/bin/env python3
"""Check a built HTML book as a reader's browser shows it, with no network.

    python tools/check_pages.py _build/html                 # every page; exit 1 on any failure
    python tools/check_pages.py _build/html --screenshot shots  # and 1400 px wide screenshots

Every page is loaded from ``file://`` by the system's headless Chromium (no
browser is downloaded), with networking blocked (a dead proxy and a host
resolver that resolves nothing), and its DOM is dumped once the page's scripts,
MathJax included, have run (``--virtual-time-budget``). On that DOM:

``tex``
    no raw TeX delimiters left in the visible text: ``\\(``, ``\\)``, ``\\[``,
    ``\\]``, ``$$`` and inline ``$...$`` (Pandoc's rule: no space inside the
    dollars, no digit after the closing one). Code (``pre``, ``code``, ...),
    scripts, MathJax's typeset output and its assistive MathML are not visible
    text; a MathJax error (``mjx-merror``) fails too.
``img``
    every ``<img>`` is a non-empty file inside the build (a remote image fails).
``link``
    every internal ``href`` (links and ``<link rel=...>``) resolves to a file in
    the build, and its ``#anchor`` to an ``id`` (or ``<a name>``) of that page.
``asset``
    every script, stylesheet, preload, icon, iframe or media source of the page,
    and every ``url()`` of its ``<style>`` elements (MathJax's ``@font-face``
    rules: its fonts) is a file in the build; so is every ``url()``/``@import``
    of the build's stylesheets. A remote one fails: the book must work copied to
    a laptop with no network.
``net``
    the page made no network request at all (read from Chromium's NetLog), so a
    ``fetch`` or a font a script asks for at view time fails as well.
``search``
    ``search.html`` exists, its assets resolve (above), and a query for a word of
    the book's titles lists at least one page, with no raw TeX in the results
    and no network request.
``slider``
    every page with static sliders (the explorers' precomputed figures, blocks
    marked ``data-static-slider``: ``bookrun.explore.slider_html``) is loaded a
    second time with the hash ``#slider-check``, on which each slider's own
    script moves it to another frame through the ``input`` event a reader's
    drag fires, and writes the frame and a checksum of the image's ``src``
    before and after, and the decoded image's width, on the block. Every slider
    of the page must report, with a new frame, a changed image and a width > 0,
    and with no network request.

``dark``
    the book's dark theme: the front page is loaded a third time with the
    browser's dark mode (``--force-dark-mode``, which the theme's "auto" mode
    follows) and must come up with ``data-theme="dark"``; and every figure a
    page shows (each ``<img>`` file under ``_images``, and each slider's shown
    frame, a ``data:`` PNG) must carry its own light, opaque background: no pixel more
    than slightly transparent, and the image's border light (median luminance
    above 0.8), so that its dark lines and labels stay legible on the dark page
    (a transparent figure's black text vanishes there). ``--screenshot`` adds a
    screenshot of the front page in the dark theme.

``layout``
    each page is loaded at 1280 px (``--layout-width``) as a copy with
    ``tools/check_pages_layout.js`` appended (written beside the page for the load, removed after),
    which measures the page as a reader sees it: every displayed formula, with every fold
    opened, must fit the column it sits in (its typeset width at most the column's); on the
    Table 1 chapters (``--code-page``) the code cells a reader sees open, with every fold
    closed, take at most ``--open-code-limit`` per cent (10) of the article's height; the
    smallest text of each figure shown, its smallest font size in points (the PNG text chunk
    ``gelib-min-font-pt`` the book's figures carry, :func:`gelib.plotting.style.book_png`)
    times its resolution (pHYs) and the ratio of its shown to its natural width, is at
    least ``--figure-text-px`` CSS px (11: an em of 11 px has the x-height, about 6 px, of the
    page's footnote text; the body text's em is 16 px); a figure without that chunk fails,
    since its text cannot be measured; every figure's ``alt`` text is a description, not
    empty and not a file name or path; and the page's ``<title>`` carries no raw TeX
    (``\\sqrt``, ``$``, ``^``). One line per page prints those figures.

Pages run in parallel (``--jobs``, 2 by default: CI has 2 cores). One line per
failing check (at most ``--max-lines`` per page and check, then a count), then a
summary; the exit status is 1 on any failure, 2 when the checker cannot run (no
HTML folder, no Chromium). ``index.html``-style redirect pages are checked for
their target only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import html.parser
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from bookrun.pdf import HEADLESS_FLAGS, find_browser

# The browser: headless, networking blocked (a dead proxy, a resolver that resolves nothing), as the
# PDF's print starts it (bookrun.pdf), and no scrollbars (the layout check measures the whole width).
BROWSER_FLAGS = (*HEADLESS_FLAGS, "--hide-scrollbars")
# The layout check: the window width, the script it runs in the page, the Table 1 chapters whose open
# code it bounds, and the limits (tools/check_pages_layout.js says what it measures).
LAYOUT_WIDTH = 1280
LAYOUT_JS = Path(__file__).with_name("check_pages_layout.js")
LAYOUT_ID = "check-pages-layout"
CODE_PAGES = (
    "book/denominator_replacement.html",
    "book/centering.html",
    "book/gaussian_rows.html",
    "book/covariance_approximation.html",
    "book/query_substitution.html",
)
OPEN_CODE_LIMIT = 10.0  # per cent of the article's height
FIGURE_TEXT_PX = 11.0  # CSS px, a figure's smallest em as shown
MIN_FONT_KEY = "gelib-min-font-pt"  # gelib.plotting.style.MIN_FONT_KEY
# Raw TeX in a <title>: a command, a dollar, a superscript or a braced subscript.
TITLE_TEX = re.compile(r"\\[A-Za-z]+|\$|\^|_\{")
# An alt text that names a file instead of describing the figure.
PATH_ALT = re.compile(r"(^|[/\\])[^\s/\\]+\.(png|jpe?g|svg|gif|webp)$|^[^\s]*/[^\s]*$", re.IGNORECASE)
# The URL hash on which a static slider moves itself (bookrun.explore.CHECK_HASH).
SLIDER_HASH = "#slider-check"
# The pages screenshotted when --screenshot is given without --shot.
DEFAULT_SHOTS = ("book/intro.html", "book/centering.html", "book/limit_law.html", "book/finite_size_table.html")

VOID = set("area base br col embed hr img input link meta param source track wbr".split())
# Subtrees whose text is not prose MathJax should have typeset: code, scripts,
# MathJax's own output (mjx-container holds the assistive MathML too), and
# anything marked for MathJax to ignore.
NOT_PROSE = set("head title script style noscript template textarea pre code kbd samp tt svg".split()) | {
    "math",
    "mjx-container",
    "mjx-assistive-mml",
}
NOT_PROSE_CLASSES = {"highlight", "sig", "pre"}  # code, and the signatures of the API page
# Elements that load something at view time, and the attributes that say what.
LOADING = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
}
LOADING_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "apple-touch-icon", "manifest", "import"}

# A whole \(...\), \[...\] or $$...$$, else a lone delimiter.
TEX_SPANS = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$|\\[()\[\]]|\$\$", re.DOTALL)
# Pandoc's inline math: $ then a non-space, ..., a non-space then $ not followed by a digit.
TEX_INLINE = re.compile(r"(?<![\\$])\$(?=[^\s$])([^$\n]*?[^\s\\$])\$(?![\d$])")
CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]*?)\1\s*\)|@import\s+(['"])([^'"]+)\3""", re.IGNORECASE)
REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.IGNORECASE)
SKIP_SCHEMES = ("mailto:", "tel:", "javascript:", "data:", "blob:", "about:")


@dataclass
class Dom:
    """What the checks need from one (rendered or static) page."""

    ids: set = field(default_factory=set)
    text: list = field(default_factory=list)  # visible prose text nodes
    links: list = field(default_factory=list)  # (tag, rel, href)
    loads: list = field(default_factory=list)  # (tag, attribute, url)
    imgs: list = field(default_factory=list)
    merrors: list = field(default_factory=list)
    refresh: str | None = None
    search_results: int = 0
    sliders: list = field(default_factory=list)  # the attributes of each static slider block
    theme: str | None = None  # the <html> element's data-theme, as the theme's scripts set it
    alts: dict = field(default_factory=dict)  # img src -> its alt text (None: no alt attribute)
    title: str = ""  # the <title> text


class _Parser(html.parser.HTMLParser):
    """A stack parser for Chromium's serialised DOM (every non-void element is closed)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.dom = Dom()
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, prose hidden, inside search results)

    def _hidden(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def _in_results(self) -> bool:
        return bool(self.stack) and self.stack[-1][2]

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        d = self.dom
        if "id" in a:
            d.ids.add(a["id"])
        if tag == "a" and "name" in a:
            d.ids.add(a["name"])
        if tag in ("a", "area") and "href" in a:
            d.links.append((tag, "", a["href"]))
        if tag == "link" and "href" in a:
            rels = set(a.get("rel", "").lower().split())
            if rels & LOADING_RELS:
                d.loads.append((tag, "href", a["href"]))
            else:
                d.links.append((tag, " ".join(sorted(rels)), a["href"]))
        for attr in LOADING.get(tag, ()):
            if a.get(attr):
                for url in _srcset(a[attr]) if attr == "srcset" else [a[attr]]:
                    d.loads.append((tag, attr, url))
        if tag == "img":
            d.imgs.append(a.get("src", ""))
            d.alts.setdefault(a.get("src", ""), dict(attrs).get("alt"))
        if tag == "html":
            d.theme = a.get("data-theme")
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            m = re.search(r"url\s*=\s*['\"]?([^'\"]+)", a.get("content", ""), re.IGNORECASE)
            d.refresh = m.group(1).strip() if m else None
        if "style" in a:
            d.loads += [("style", "url()", u) for u in css_urls(a["style"])]
        if "data-static-slider" in a:
            d.sliders.append(a)
        if tag == "mjx-merror":
            d.merrors.append(a.get("data-mjx-error", "") or a.get("title", ""))
        classes = set(a.get("class", "").split())
        in_results = self._in_results() or a.get("id") == "search-results"
        if in_results and tag == "li":
            d.search_results += 1
        if tag in VOID:
            return
        hidden = self._hidden() or tag in NOT_PROSE or bool(classes & NOT_PROSE_CLASSES)
        self.stack.append((tag, hidden, in_results))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        if len(self.stack) > 1 and self.stack[-1][0] == "title" and self.stack[-2][0] == "head":
            self.dom.title += data
        if self.stack and self.stack[-1][0] == "style":  # MathJax's @font-face rules live here
            self.dom.loads += [("style", "url()", u) for u in css_urls(data)]
        if not self._hidden() and data.strip():
            self.dom.text.append(data)


def css_urls(css: str) -> list[str]:
    """The ``url()`` and ``@import`` references of a stylesheet (comments left out)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    urls = [m.group(2) if m.group(2) is not None else m.group(4) for m in CSS_URL.finditer(css)]
    return [u.strip() for u in urls if u and u.strip() and not u.strip().startswith("#")]


def _srcset(value: str) -> list[str]:
    return [part.strip().split()[0] for part in value.split(",") if part.strip()]


def parse(text: str) -> Dom:
    p = _Parser()
    p.feed(text)
    p.close()
    return p.dom


def tex_findings(text_nodes: list[str]) -> list[str]:
    """Raw TeX in visible text nodes: one short excerpt per formula (or lone delimiter)."""
    out = []
    for t in text_nodes:
        found = [m.group() for m in TEX_SPANS.finditer(t)]
        rest = TEX_SPANS.sub(" ", t)
        found += [m.group() for m in TEX_INLINE.finditer(rest)]
        out += [s if len(s) <= 80 else s[:77] + "..." for s in (" ".join(f.split()) for f in found)]
    return out


# ----------------------------------------------------------------------------- browser


@dataclass
class Load:
    dom: str = ""
    requests: list = field(default_factory=list)  # URLs the page asked the network for
    error: str | None = None
    seconds: float = 0.0


def page_requests(netlog: Path) -> list[str]:
    """The http(s)/ws URLs that a ``file://`` page requested (Chromium's own
    background requests, whose initiator is not the page, are left out)."""
    try:
        raw = netlog.read_text(errors="replace")
    except OSError:
        return []
    try:
        log = json.loads(raw)
    except json.JSONDecodeError:  # cut short: close the events list
        try:
            log = json.loads(raw.rstrip().rstrip(",") + "]}")
        except json.JSONDecodeError:
            return ["(unreadable NetLog)"]
    types = log.get("constants", {}).get("logEventTypes", {})
    start = types.get("URL_REQUEST_START_JOB")
    urls = []
    for e in log.get("events", []):
        p = e.get("params") or {}
        if e.get("type") != start or "url" not in p:
            continue
        key = str(p.get("network_isolation_key", "")) + " " + str(p.get("site_for_cookies", ""))
        if "file://" in key or p.get("initiator") == "null":
            if not p["url"].startswith(("file:", "data:", "blob:")) and p["url"] not in urls:
                urls.append(p["url"])
    return urls


def run_browser(
    browser: str,
    url: str,
    budget_ms: int,
    timeout: float,
    screenshot: Path | None = None,
    size=(1400, 1800),
    dark: bool = False,
    window: int | None = None,
) -> Load:
    """Load ``url`` with networking blocked; dump its DOM (or write a screenshot); ``dark``: in the
    browser's dark mode; ``window``: the width of the window the DOM is dumped from."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="check-pages-") as tmp:
        netlog = Path(tmp) / "net.json"
        cmd = [
            browser,
            *BROWSER_FLAGS,
            f"--user-data-dir={tmp}/profile",
            f"--log-net-log={netlog}",
            f"--virtual-time-budget={budget_ms}",
            *(["--force-dark-mode"] if dark else []),
        ]
        if screenshot is not None:
            cmd += [f"--window-size={size[0]},{size[1]}", f"--screenshot={screenshot}"]
        else:
            cmd += ["--dump-dom", *([f"--window-size={window},1800"] if window else [])]
        cmd.append(url)
        if screenshot is not None:
            screenshot.unlink(missing_ok=True)
        # its own process group: on a time-out the whole browser (a launcher script
        # and its children) is ended, not just the launcher
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return Load(error=f"the browser did not finish in {timeout:.0f} s", seconds=time.perf_counter() - t0)
        load = Load(dom=out.decode("utf-8", "replace"), requests=page_requests(netlog))
        if proc.returncode != 0 or (screenshot is None and "<html" not in load.dom[:2000].lower()):
            tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
            load.error = f"the browser failed (exit {proc.returncode}): " + " | ".join(tail)
        if screenshot is not None and not screenshot.is_file():
            load.error = load.error or "no screenshot written"
    load.seconds = time.perf_counter() - t0
    return load


# ----------------------------------------------------------------------------- checks


class Book:
    def __init__(self, root: Path):
        self.root = root.resolve()
        self._ids: dict[Path, set] = {}

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def target(self, page: Path, ref: str) -> tuple[Path | None, str, str | None]:
        """(file, fragment, problem) for a local reference from ``page``."""
        parts = urlsplit(ref)
        if parts.scheme == "file":
            path = Path(unquote(parts.path))
        elif parts.path:
            path = page.parent / unquote(parts.path)
        else:
            path = page
        path = Path(os.path.normpath(path))
        try:
            path.resolve().relative_to(self.root)
        except ValueError:
            return None, parts.fragment, f"{ref} points outside the build"
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            return None, parts.fragment, (f"{ref}: " if parts.scheme != "file" else "") + f"no file {self.rel(path)}"
        return path, unquote(parts.fragment), None

    def ids(self, path: Path) -> set:
        path = path.resolve()
        if path not in self._ids:
            self._ids[path] = parse(path.read_text(errors="replace")).ids
        return self._ids[path]


def is_remote(url: str) -> bool:
    return bool(REMOTE.match(url)) and not url.lower().startswith("file:")


def skipped(url: str) -> bool:
    return not url.strip() or url.strip().lower().startswith(SKIP_SCHEMES)


def check_page(book: Book, page: Path, dom: Dom, load: Load) -> list[tuple[str, str]]:
    """The findings (check, message) for one rendered page (links' anchors are checked later)."""
    out = []
    if load.error:
        out.append(("browser", load.error))
    out += [("tex", f"raw TeX in the visible text: “{excerpt}”") for excerpt in tex_findings(dom.text)]
    for msg in dom.merrors:
        out.append(("tex", f"MathJax error: {msg or '(no message)'}"))
    for src in dom.imgs:
        if not src:
            out.append(("img", "an <img> without src"))
        elif src.startswith("data:"):
            continue
        elif is_remote(src):
            out.append(("img", f"remote image {src}"))
        else:
            path, _, problem = book.target(page, src)
            if problem:
                out.append(("img", problem))
            elif path.stat().st_size == 0:
                out.append(("img", f"{src}: empty file"))
    for tag, attr, url in dom.loads:
        if skipped(url) or tag == "img":
            continue
        if is_remote(url):
            out.append(("asset", f"<{tag} {attr}> loads {url} from the network"))
        else:
            _, _, problem = book.target(page, url)
            if problem:
                out.append(("asset", f"<{tag} {attr}> {problem}"))
    for url in load.requests:
        out.append(("net", f"requested {url}"))
    return out


def check_sliders(static: Dom, dom: Dom, load: Load) -> list[tuple[str, str]]:
    """The findings for a page's ``#slider-check`` load: every static slider of the page's file moved
    each of its axes in turn (``data-static-slider`` names them, comma-separated; each move is one
    ``frame:checksum`` of ``data-check-after``), and each move changed the frame and the image
    (another ``src`` checksum), and its new image decoded (``data-check-width``, one per move)."""
    if load.error:
        return [("slider", f"#slider-check load: {load.error}")]
    out = [("net", f"requested {url} (#slider-check load)") for url in load.requests]
    moved = {a.get("id"): a for a in dom.sliders}
    for i, a in enumerate(static.sliders):
        axes = (a.get("data-static-slider") or "?").split(", ")
        what = f"slider {i + 1} over {', '.join(axes)}"
        got = moved.get(a.get("id"), {})
        before, after = got.get("data-check-before"), got.get("data-check-after")
        if before is None or after is None:
            out.append(("slider", f"{what} did not report: its script did not run, or has no #slider-check hook"))
            continue
        states, widths = [before, *after.split()], got.get("data-check-width", "").split()
        if len(states) != len(axes) + 1:
            out.append(("slider", f"{what} reported {len(states) - 1} move(s) for {len(axes)} axes"))
        for k, (prev, new) in enumerate(zip(states, states[1:])):
            who = what if len(axes) == 1 else f"{what}, moving {axes[min(k, len(axes) - 1)]}"
            (f0, _, sum0), (f1, _, sum1) = prev.partition(":"), new.partition(":")
            if f0 == f1:
                out.append(("slider", f"{who} did not move (frame {f0}; {a.get('data-frames', '?')} frame(s))"))
            elif sum0 == sum1:
                out.append(("slider", f"{who}: moving it from frame {f0} to {f1} left the image unchanged"))
            elif (widths[k] if k < len(widths) else "0") == "0":
                out.append(("slider", f"{who}: the image of frame {f1} did not decode"))
    return out


def figure_problem(data: bytes) -> str | None:
    """Why a figure (PNG or JPEG bytes) would not be legible on the dark theme, or ``None``:
    transparent pixels (alpha below 250 anywhere), or a dark border (median luminance of its
    outermost pixels at most 0.8): the figure must bring its own light background."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        im = Image.open(io.BytesIO(data))
        im.load()
    except (UnidentifiedImageError, OSError) as exc:
        return f"not a readable image ({exc})"
    if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
        rgba = im.convert("RGBA")
        low = rgba.getchannel("A").getextrema()[0]
        if low < 250:
            return f"transparent pixels (alpha down to {low}): its dark text would vanish on the dark theme"
    g = im.convert("L")
    w, h = g.size
    border = [g.getpixel((x, y)) for x in range(w) for y in (0, h - 1)] + [
        g.getpixel((x, y)) for y in range(h) for x in (0, w - 1)
    ]
    median = sorted(border)[len(border) // 2] / 255
    if median <= 0.8:
        return f"a dark background (border luminance {median:.2f}): not legible on the dark theme"
    return None


def image_bytes(book: Book, page: Path, src: str) -> bytes | None:
    """The bytes of a figure an ``<img>`` shows: a ``data:`` URI's (base64), or the build's file
    under ``_images`` (where Sphinx puts the figures); ``None`` for anything else (the theme's
    icons; a missing file, which the ``img`` check reports)."""
    import base64

    if src.startswith("data:"):
        head, _, payload = src.partition(",")
        return base64.b64decode(payload) if head.endswith(";base64") and head[5:].startswith("image/") else None
    if is_remote(src) or skipped(src):
        return None
    path, _, problem = book.target(page, src)
    if problem or path is None or "_images" not in path.parts or path.suffix.lower() not in (".png", ".jpg", ".jpeg"):
        return None  # not a figure: the theme's own icons live in _static
    return path.read_bytes()


def check_dark(book: Book, page: Path, dom: Dom, seen: dict) -> list[tuple[str, str]]:
    """The ``dark`` findings for one page's figures (``seen``: verdicts by image, shared across pages)."""
    out = []
    for src in dom.imgs:
        key = src if src.startswith("data:") else (page.parent.resolve(), src)  # a relative src is the page's
        if key in seen:
            problem = seen[key]
        else:
            data = image_bytes(book, page, src)
            problem = seen[key] = None if data is None else figure_problem(data)
        if problem:
            name = "a slider frame (data: PNG)" if src.startswith("data:") else src
            out.append(("dark", f"{name}: {problem}"))
    return out


@dataclass
class Layout:
    """One page's layout figures, as ``check_layout`` prints them."""

    formulas: int = 0
    widest: float = 0.0  # the widest formula's width over its column's
    open_code: float | None = None  # per cent of the article's height (Table 1 chapters only)
    figures: int = 0
    smallest_text: float | None = None  # CSS px


def layout_copy(page: Path, script: str) -> Path:
    """A copy of ``page`` beside it (so its relative URLs resolve alike) with the layout script
    appended to its body; the caller removes it."""
    text = page.read_text(errors="replace")
    tag = f"<script>\n{script}\n</script>"
    at = text.lower().rfind("</body>")
    text = text[:at] + tag + text[at:] if at >= 0 else text + tag
    fd, name = tempfile.mkstemp(prefix=f".check-pages-{page.stem}-", suffix=".html", dir=page.parent)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return Path(name)


def layout_of(dom: str) -> dict | None:
    """The measurements the layout script wrote into a dumped DOM, or ``None`` where it wrote none."""
    found = list(re.finditer(rf'<script[^>]*id="{LAYOUT_ID}"[^>]*>(.*?)</script>', dom, re.DOTALL))
    if not found:
        return None
    m = found[-1]  # the element the script appended last to <body>
    try:
        return json.loads(m.group(1))  # a script's text is dumped as it is
    except ValueError:
        return None


def png_text_px(data: bytes, shown_px: float) -> tuple[float | None, str | None]:
    """The smallest text of a figure, in CSS px, as shown ``shown_px`` wide: (px, None), or (None, why
    not) where the PNG does not say its smallest font size or its resolution."""
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        im = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError) as exc:
        return None, f"not a readable image ({exc})"
    font = im.info.get(MIN_FONT_KEY)
    dpi = im.info.get("dpi")
    if font is None:
        return None, f"no {MIN_FONT_KEY} text chunk: its text size cannot be measured"
    if not dpi or not dpi[0]:
        return None, "no resolution (pHYs): its text size cannot be measured"
    return float(font) / 72 * float(dpi[0]) * shown_px / im.size[0], None


def check_layout(
    book: Book, page: Path, dom: Dom, layout: dict | None, *, code_page: bool, code_limit: float, text_px: float
) -> tuple[list[tuple[str, str]], Layout]:
    """The ``layout`` findings of one page and its figures (``layout``: what the script measured)."""
    out: list[tuple[str, str]] = []
    fig = Layout()
    if TITLE_TEX.search(dom.title):
        out.append(("layout", f"raw TeX in the page title: “{dom.title.strip()[:80]}”"))
    for src, alt in dom.alts.items():
        if image_bytes(book, page, src) is None:
            continue  # the theme's icons
        name = "a slider frame (data: PNG)" if src.startswith("data:") else src
        if not (alt or "").strip():
            out.append(("layout", f"{name}: no alt text"))
        elif PATH_ALT.search(alt.strip()):
            out.append(("layout", f"{name}: its alt text is a file name, “{alt.strip()[:60]}”"))
    if layout is None or "error" in layout:
        why = "the layout script wrote nothing" if layout is None else f"the layout script failed: {layout['error']}"
        return out + [("layout", why)], fig
    for f in layout.get("formulas", []):
        fig.formulas += 1
        ratio = f["width"] / f["column"] if f["column"] else math.inf
        fig.widest = max(fig.widest, ratio)
        if f["width"] > f["column"] + 1 or f.get("scrolls"):
            tex = " ".join(str(f["tex"]).split())
            tex = tex if len(tex) <= 70 else tex[:67] + "..."
            out.append(("layout", f"a formula {f['width']:.0f} px wide in a {f['column']:.0f} px column: {tex}"))
    if code_page:
        fig.open_code = 100 * layout["code_px"] / layout["article_px"] if layout.get("article_px") else 0.0
        if fig.open_code > code_limit:
            out.append(
                ("layout", f"open code is {fig.open_code:.1f} % of the page's height (at most {code_limit:g} %)")
            )
    seen: set = set()
    for img in layout.get("images", []):
        if img["src"] in seen or img["width"] <= 0:
            continue
        seen.add(img["src"])
        data = image_bytes(book, page, img["src"])
        if data is None:
            continue
        name = "a slider frame (data: PNG)" if img["src"].startswith("data:") else img["src"]
        fig.figures += 1
        px, why = png_text_px(data, img["width"])
        if px is None:
            out.append(("layout", f"{name}: {why}"))
            continue
        fig.smallest_text = px if fig.smallest_text is None else min(fig.smallest_text, px)
        if px < text_px:
            out.append(("layout", f"{name}: its smallest text is {px:.1f} px as shown (at least {text_px:g} px)"))
    return out, fig


def check_links(book: Book, page: Path, dom: Dom, rendered: dict[Path, Dom]) -> list[tuple[str, str]]:
    out, seen = [], set()
    for tag, _rel, href in dom.links:
        if skipped(href) or is_remote(href) or href in seen:
            continue
        seen.add(href)
        path, frag, problem = book.target(page, href)
        if problem:
            out.append(("link", f"<{tag}> {problem}"))
        elif frag and path.suffix.lower() in (".html", ".htm"):
            ids = rendered[path.resolve()].ids if path.resolve() in rendered else book.ids(path)
            if frag not in ids:
                out.append(("link", f"<{tag}> {href}: no id “{frag}” in {book.rel(path)}"))
    return out


def check_css(book: Book) -> list[tuple[str, str, str]]:
    """Every stylesheet of the build: its ``url()``s and ``@import``s are files of the build."""
    out = []
    for css in sorted(book.root.rglob("*.css")):
        for url in css_urls(css.read_text(errors="replace")):
            if skipped(url):
                continue
            if is_remote(url):
                out.append(("asset", book.rel(css), f"stylesheet loads {url} from the network"))
            else:
                _, _, problem = book.target(css, url)
                if problem:
                    out.append(("asset", book.rel(css), f"stylesheet url() {problem}"))
    return out


def search_term(root: Path) -> str | None:
    """A word of the book's titles, to query the search page with."""
    index = root / "searchindex.js"
    if not index.is_file():
        return None
    text = index.read_text(errors="replace")
    try:  # Search.setIndex({...})
        titles = json.loads(text[text.index("(") + 1 : text.rindex(")")]).get("titles", [])
    except (ValueError, AttributeError):
        return None
    for title in titles:
        for word in re.findall(r"[A-Za-z]{6,}", re.sub(r"\\[A-Za-z]+", " ", title)):
            return word.lower()
    return None


def cap(failures: list[tuple[str, str, str]], n: int) -> list[tuple[str, str, str]]:
    """At most ``n`` lines per (check, page), then one line counting the rest."""
    out, count = [], {}
    for check, page, msg in failures:
        count[check, page] = count.get((check, page), 0) + 1
        if count[check, page] <= n:
            out.append((check, page, msg))
    for (check, page), k in count.items():
        if k > n:
            at = max(i for i, f in enumerate(out) if f[:2] == (check, page))
            out.insert(at + 1, (check, page, f"... and {k - n} more"))
    return out


def front_page(root: Path, browsed: list[Path]) -> Path | None:
    """The page ``index.html`` leads to (its redirect's target, else itself), if it is among ``browsed``."""
    index = root / "index.html"
    if not index.is_file():
        return None
    target = parse(index.read_text(errors="replace")).refresh
    page = Path(os.path.normpath(root / unquote(urlsplit(target).path))) if target else index
    return next((p for p in browsed if p.resolve() == page.resolve()), None)


def pages_of(root: Path) -> list[Path]:
    skip = {"_static", "_sources", "_images", "_downloads"}
    return sorted(p for p in root.rglob("*.html") if not (set(p.relative_to(root).parts[:-1]) & skip))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("html_dir", type=Path, help="the built book (e.g. _build/html)")
    ap.add_argument("--jobs", type=int, default=2, help="pages loaded at once (default 2)")
    ap.add_argument(
        "--budget-ms", type=int, default=10000, help="virtual time a page gets to run its scripts (default 10000)"
    )
    ap.add_argument("--timeout", type=float, default=120, help="real seconds before a page load is a failure")
    ap.add_argument("--chromium", default=None, help="the browser (default: $CHROMIUM, else chromium on PATH)")
    ap.add_argument("--screenshot", type=Path, metavar="DIR", help="also write screenshots of --shot pages into DIR")
    ap.add_argument(
        "--shot",
        action="append",
        metavar="PAGE",
        help=f"a page to screenshot, relative to HTML_DIR (repeatable; default: {', '.join(DEFAULT_SHOTS)})",
    )
    ap.add_argument("--size", default="1400x1800", help="screenshot size WIDTHxHEIGHT in px (default 1400x1800)")
    ap.add_argument("--search-term", default=None, help="the word to query the search page with")
    ap.add_argument("--max-lines", type=int, default=5, help="failure lines printed per page and check (default 5)")
    ap.add_argument(
        "--layout-width",
        type=int,
        default=LAYOUT_WIDTH,
        help=f"window width of the layout check (default {LAYOUT_WIDTH})",
    )
    ap.add_argument(
        "--code-page",
        action="append",
        metavar="PAGE",
        help="a page whose open code is bounded, relative to HTML_DIR (repeatable; default: the Table 1 chapters)",
    )
    ap.add_argument(
        "--open-code-limit", type=float, default=OPEN_CODE_LIMIT, help=f"per cent (default {OPEN_CODE_LIMIT:g})"
    )
    ap.add_argument(
        "--figure-text-px",
        type=float,
        default=FIGURE_TEXT_PX,
        help=f"smallest figure text, CSS px (default {FIGURE_TEXT_PX:g})",
    )
    args = ap.parse_args(argv)

    root = args.html_dir
    if not root.is_dir():
        print(f"check_pages: no folder {root}", file=sys.stderr)
        return 2
    browser = find_browser(args.chromium)
    if not browser:
        print("check_pages: no Chromium found (install the system package: apt-get install chromium)", file=sys.stderr)
        return 2
    book = Book(root)
    t0 = time.perf_counter()
    pages = pages_of(book.root)
    failures: list[tuple[str, str, str]] = []  # (check, page, message)

    static = {p: parse(p.read_text(errors="replace")) for p in pages}
    redirects = {p for p, d in static.items() if d.refresh}
    for p in sorted(redirects):
        _, _, problem = book.target(p, static[p].refresh)
        if problem:
            failures.append(("link", book.rel(p), f"redirect {problem}"))
    browsed = [p for p in pages if p not in redirects]

    term = args.search_term or search_term(book.root)
    search = book.root / "search.html"
    # each page is loaded as a copy that measures its layout (removed below, whatever happens)
    script = LAYOUT_JS.read_text()
    copies: dict[Path, Path] = {}
    try:
        for p in browsed:
            copies[p] = layout_copy(p, script)
    except OSError as exc:
        for c in copies.values():
            c.unlink(missing_ok=True)
        print(f"check_pages: cannot write the layout copies beside the pages ({exc})", file=sys.stderr)
        return 2
    jobs: list[tuple[str, Path, str]] = [("page", p, copies[p].resolve().as_uri()) for p in browsed]
    if not search.is_file():
        failures.append(("search", "search.html", "no search page"))
    elif not term:
        failures.append(("search", "search.html", "no searchindex.js titles to query"))
    else:
        jobs.append(("search", search, search.resolve().as_uri() + f"?q={term}"))
    # the pages with static sliders, a second time: each slider moves itself and says what it showed
    jobs += [("slider", p, p.resolve().as_uri() + SLIDER_HASH) for p in browsed if static[p].sliders]
    front = front_page(book.root, browsed)
    if front is not None:
        jobs.append(("dark", front, front.resolve().as_uri()))
    failures += check_css(book)

    jobs.sort(key=lambda j: -j[1].stat().st_size)  # the longest pages (most formulas) first: even load on --jobs
    loads: dict[tuple[str, Path], Load] = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {
                pool.submit(
                    run_browser,
                    browser,
                    url,
                    args.budget_ms,
                    args.timeout,
                    dark=kind == "dark",
                    window=args.layout_width if kind == "page" else None,
                ): (kind, p)
                for kind, p, url in jobs
            }
            for fut in concurrent.futures.as_completed(futures):
                loads[futures[fut]] = fut.result()
    finally:
        for c in copies.values():
            c.unlink(missing_ok=True)

    doms = {p: parse(loads["page", p].dom) for p in browsed}
    # the anchors a link may point to: the rendered page's ids, or the file's where its load failed
    rendered = {p.resolve(): d for p, d in doms.items() if not loads["page", p].error}
    code_pages = {(book.root / c).resolve() for c in (args.code_page or CODE_PAGES)}
    layouts: dict[Path, Layout] = {}
    for p in browsed:
        dom, load = doms[p], loads["page", p]
        for check, msg in check_page(book, p, dom, load) + check_links(book, p, dom, rendered):
            failures.append((check, book.rel(p), msg))
        if not load.error:
            found, layouts[p] = check_layout(
                book,
                p,
                dom,
                layout_of(load.dom),
                code_page=p.resolve() in code_pages,
                code_limit=args.open_code_limit,
                text_px=args.figure_text_px,
            )
            failures += [(check, book.rel(p), msg) for check, msg in found]
    verdicts: dict = {}
    for p in browsed:
        failures += [(check, book.rel(p), msg) for check, msg in check_dark(book, p, doms[p], verdicts)]
    if front is None:
        failures.append(("dark", "index.html", "no front page to load in the dark theme"))
    elif loads["dark", front].error:
        failures.append(("dark", book.rel(front), f"dark-mode load: {loads['dark', front].error}"))
    elif (theme := parse(loads["dark", front].dom).theme) != "dark":
        failures.append(("dark", book.rel(front), f"in the browser's dark mode the page's data-theme is {theme!r}"))
    for (kind, p), load in loads.items():
        if kind == "slider":
            failures += [(check, book.rel(p), msg) for check, msg in check_sliders(static[p], parse(load.dom), load)]
    if ("search", search) in loads:
        load = loads["search", search]
        dom = parse(load.dom)
        if load.error:
            failures.append(("search", "search.html", load.error))
        elif dom.search_results == 0:
            failures.append(("search", "search.html", f"a query for “{term}” listed no page"))
        # search.html's own assets are checked above; here what the query adds
        found = check_page(book, search, dom, load)
        failures += [("search", "search.html", f"query “{term}”: {m}") for c, m in found if c in ("tex", "net")]

    shots = []
    if args.screenshot:
        args.screenshot.mkdir(parents=True, exist_ok=True)
        w, h = (int(x) for x in args.size.lower().split("x"))
        for rel in args.shot or [s for s in DEFAULT_SHOTS if (book.root / s).is_file()]:
            page = book.root / rel
            if not page.is_file():
                failures.append(("screenshot", rel, "no such page"))
                continue
            out = args.screenshot.resolve() / (rel.replace("/", "_").removesuffix(".html") + ".png")
            load = run_browser(browser, page.resolve().as_uri(), args.budget_ms, args.timeout, out, (w, h))
            if load.error:
                failures.append(("screenshot", rel, load.error))
            else:
                shots.append(out)

        if front is not None:
            out = args.screenshot.resolve() / (book.rel(front).replace("/", "_").removesuffix(".html") + "_dark.png")
            load = run_browser(browser, front.resolve().as_uri(), args.budget_ms, args.timeout, out, (w, h), dark=True)
            if load.error:
                failures.append(("screenshot", book.rel(front), f"dark: {load.error}"))
            else:
                shots.append(out)

    failures = sorted(dict.fromkeys(failures), key=lambda f: f[1])  # by page, each page's in check order
    for check, page, msg in cap(failures, args.max_lines):
        print(f"FAIL {check:6} {page}: {msg}")
    elapsed = time.perf_counter() - t0
    for s in shots:
        print(f"screenshot: {s}")
    print(
        f"check_pages: layout at {args.layout_width} px (widest formula / its column; open code; smallest figure text):"
    )
    for p, lay in sorted(layouts.items()):
        code = "" if lay.open_code is None else f", open code {lay.open_code:4.1f} %"
        text = (
            ""
            if lay.smallest_text is None
            else f", smallest text {lay.smallest_text:5.2f} px over {lay.figures} figure(s)"
        )
        print(f"  {book.rel(p):42} {lay.formulas:3} formula(s), widest {lay.widest:4.2f}{code}{text}")
    bad = len({p for _, p, _ in failures})
    slowest = sorted(((ld.seconds, book.rel(p)) for (_, p), ld in loads.items()), reverse=True)[:3]
    if slowest:
        print("check_pages: slowest loads: " + ", ".join(f"{name} {sec:.1f} s" for sec, name in slowest))
    summary = f"check_pages: {len(browsed)} pages of {root} in a network-blocked browser, {elapsed:.1f} s"
    if failures:
        print(f"{summary}: {len(failures)} failures on {bad} pages")
        return 1
    print(f"{summary}: every check passed (tex, img, link, asset, net, search, slider, dark, layout)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
