"""Sphinx extension: the book's HTML works with no network.

Listed in ``_config.yml`` (``sphinx: extra_extensions``), installed editable by
``requirements.txt``. It

* serves MathJax 3 from the build: the files of the PyPI package
  ``sphinx-mathjax-offline`` (MathJax 3.2.2's ``es5`` folder as released: the
  main scripts with the ``input/tex/extensions``, ``output/chtml/fonts`` and
  ``a11y`` components they load from beside themselves) are copied to
  ``_static/mathjax/`` through ``html_static_path``; ``mathjax_path`` (set in
  ``_config.yml``, relative to ``_static``) must name one of them, and a remote
  ``mathjax_path`` is refused;
* loads MathJax on every page, not only on the pages with equations (Sphinx's
  default): the navigation, the previous/next links and the search results'
  titles carry the chapters' titles, TeX included, onto pages with no math of
  their own (the indices, the search page, the status page);
* typesets the search page's results: Sphinx's search inserts them (the
  chapters' titles, TeX included) after MathJax's first pass;
* opens each figure at full size on a click (``figures_static/book_figures.js``, an
  overlay with no library), keeps the first column of a wide table in view while it
  scrolls in its box (``figures_static/book_figures.css``), and gives every image with
  no alt text of its own its figure's caption as alt text (not its file path);
* shows the repository and issue buttons exactly where the repository's
  address is set (``_config.yml``'s ``repository: url``, the one place it is
  set): without one, no button leads nowhere;
* shows the launch button for Binder (``_config.yml``'s ``launch_buttons``)
  only where that address is set too, and points it at the chapter the
  repository holds (``book/<chapter>.md``, a Jupytext notebook that Binder's
  JupyterLab opens as a notebook: ``binder/``), not at the executed
  ``.ipynb`` a run folder renders, which the repository does not hold.

``tools/check_pages.py`` checks the result in a network-blocked browser.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ExtensionError

__version__ = "0.1.0"
MATHJAX_PACKAGE = "sphinx-mathjax-offline"  # its folder is named so, hyphens included


def mathjax_static() -> Path:
    """The folder holding ``mathjax/`` (MathJax's es5 files) in the installed package."""
    spec = importlib.util.find_spec(MATHJAX_PACKAGE)
    if spec is None or not spec.origin:
        raise ExtensionError(f"book_offline: the package {MATHJAX_PACKAGE} is not installed (requirements.txt)")
    static = Path(spec.origin).parent / "static"
    if not (static / "mathjax" / "tex-chtml.js").is_file():
        raise ExtensionError(f"book_offline: no MathJax in {static}")
    return static


def _config_inited(app: Sphinx, config: Config) -> None:
    path = str(config.mathjax_path)
    if "://" in path or path.startswith("//"):
        raise ExtensionError(
            f"book_offline: mathjax_path {path!r} is remote; the book must work offline (set mathjax_path: "
            "mathjax/tex-chtml.js in _config.yml)"
        )
    static = mathjax_static()
    if not (static / path).is_file():
        raise ExtensionError(f"book_offline: mathjax_path {path!r} is not a file of {static} (relative to _static)")
    config.html_static_path = [*config.html_static_path, str(static)]
    _repository_buttons(config)


def _repository_buttons(config: Config) -> None:
    """Turn the repository and issue buttons on where the repository's address is set, off where not."""
    options = dict(config.html_theme_options or {})
    has_url = bool(str(options.get("repository_url") or "").strip())
    options["use_repository_button"] = has_url
    options["use_issues_button"] = has_url
    if not has_url:
        # The theme builds its launch links from the repository's address: none without one.
        options.pop("launch_buttons", None)
    config.html_theme_options = options


def _jupytext_extension(path: Path) -> str | None:
    """The extension of the Jupytext file an executed notebook was read from (``.md``), or None."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError):
        return None
    ext = ((meta.get("jupytext") or {}).get("text_representation") or {}).get("extension")
    return ext if isinstance(ext, str) and ext.startswith(".") and "/" not in ext else None


def _launch_source(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Point the launch links of a page rendered from an executed ``.ipynb`` at its Jupytext source.

    The theme names the file the page was built from (``book/x.ipynb`` in a run folder); the
    repository holds ``book/x.md``. Runs after the theme's ``add_launch_buttons`` (priority 501).
    """
    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".ipynb":
        return
    ext = _jupytext_extension(source)
    if ext is None:
        return
    for group in context.get("header_buttons") or ():
        if not isinstance(group, dict) or group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons") or ():
            url = button.get("url")
            if isinstance(url, str) and url.endswith(f"{pagename}.ipynb"):
                button["url"] = url[: -len(".ipynb")] + ext


# Typeset what the search inserts into #search-results (once it has settled a little).
SEARCH_JS = """\
document.addEventListener("DOMContentLoaded", () => {
  const results = document.getElementById("search-results");
  if (!results) return;
  let timer = null;
  new MutationObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        MathJax.startup.promise = MathJax.startup.promise.then(() => MathJax.typesetPromise([results]));
      }
    }, 50);
  }).observe(results, { childList: true, subtree: true });
});"""


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if pagename == "search" and app.builder.format == "html":
        app.add_js_file(None, body=SEARCH_JS)


FIGURES_STATIC = Path(__file__).resolve().parent / "figures_static"


def image_alt(image: nodes.image) -> str | None:
    """The alt text for ``image`` where it has none of its own: its figure's caption, as plain
    text (TeX source for math), or None outside a captioned figure."""
    figure = image.parent
    while figure is not None and not isinstance(figure, nodes.figure):
        figure = figure.parent
    if figure is None:
        return None
    caption = next(iter(figure.findall(nodes.caption)), None)
    text = " ".join(caption.astext().split()) if caption is not None else ""
    return text or None


def _image_alts(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Alt text from the caption for every image of ``doctree`` with none (docutils writes the file path)."""
    for image in doctree.findall(nodes.image):
        if not image.get("alt"):
            alt = image_alt(image)
            image["alt"] = alt if alt is not None else "a figure computed by the chapter (see the text above it)"


def _figures_setup(app: Sphinx) -> None:
    """The figures' lightbox, the wide tables' sticky column and the images' alt texts."""
    app.connect("config-inited", lambda app, config: config.html_static_path.append(str(FIGURES_STATIC)))
    app.add_js_file("book_figures.js")
    app.add_css_file("book_figures.css")
    app.connect("doctree-resolved", _image_alts)


def _singlehtml_handlers(app: Sphinx) -> None:
    """Give the single-page builder (``singlehtml``, which the whole-book PDF prints:
    ``bookrun.pdf``) every HTML visitor it lacks. Sphinx looks a builder's visitors up by its
    name and falls back to those of its format (``html``) only when the name has none; one
    extension (sphinx-exercise) registers ``singlehtml`` visitors, so the others' nodes
    (sphinx-proof's theorems) would have none there."""
    if app.builder.name != "singlehtml":
        return
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for name, pair in handlers.get("html", {}).items():
        single.setdefault(name, pair)


# ----------------------------------------------------------------------------- titles as plain text

# TeX in a chapter's title (its heading "$\sqrt n A^\perp$") is typeset by MathJax on the page, but
# a browser's tab, a printed page's header (the theme's print-only <h1>) and the <link rel=next/prev>
# titles are plain text that no MathJax reaches: there the title's TeX is written in Unicode.
TEX_SYMBOLS = {
    **dict(
        zip(
            "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho "
            "sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi "
            "Omega".split(),
            "αβγδϵεζηθϑικλμνξπρστυϕφχψωΓΔΘΛΞΠΣΥΦΨΩ",
        )
    ),
    "perp": "⊥", "top": "⊤", "infty": "∞", "pm": "±", "mp": "∓", "times": "×", "cdot": "·", "circ": "∘",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "sim": "∼",
    "to": "→", "rightarrow": "→", "mapsto": "↦", "in": "∈", "ell": "ℓ", "partial": "∂", "nabla": "∇",
    "sum": "∑", "prod": "∏", "int": "∫", "dots": "…", "ldots": "…", "cdots": "⋯", "otimes": "⊗",
    "oplus": "⊕", "star": "⋆", "ast": "∗", "langle": "⟨", "rangle": "⟩", "|": "‖", "R": "ℝ",
}  # fmt: skip
TEX_ACCENTS = {"mathring": "\u030a", "hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303",
               "widetilde": "\u0303", "bar": "\u0304", "overline": "\u0305", "dot": "\u0307",
               "vec": "\u20d7"}  # fmt: skip
TEX_DOUBLE_STRUCK = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ", "1": "𝟙"}
SUPERSCRIPTS = dict(
    zip("0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW⊤",
        "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵀ")
)  # fmt: skip
SUPERSCRIPTS.update({"⊥": "⊥", "*": "*", "∗": "*", "′": "′", "'": "′"})  # A^\\perp reads A⊥
SUBSCRIPTS = dict(zip("0123456789+-=()aehijklmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓ"))
_SCRIPT_ARG = r"(\{[^{}^_]*\}|[^\s{}\\^_])"  # a script's argument with no script inside: innermost first
_TEX_ARG = r"(\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|[^\s{}\\])"  # a braced group (one level), a command, a character


def _tex_group(arg: str) -> str:
    """The text of one TeX argument: a braced group without its braces, or a command or a character."""
    return arg[1:-1] if arg.startswith("{") else arg


def _script(text: str, table: dict, mark: str) -> str:
    """``text`` in Unicode super- or subscripts where every character has one, else ``mark`` + text."""
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return mark + (text if len(text) == 1 else f"({text})")  # the mark: a placeholder until the end


def _double_struck(m: re.Match) -> str:
    return "".join(TEX_DOUBLE_STRUCK.get(c, c) for c in _tex_group(m[1]))


def _fraction(m: re.Match) -> str:
    return "/".join(g if len(g) == 1 else f"({g})" for g in map(_tex_group, m.groups()))


def _root(m: re.Match) -> str:
    g = _tex_group(m[1])
    return "√" + (g if len(g) == 1 or g.startswith("\\") else f"({g})")


def tex_to_text(tex: str) -> str:
    """The TeX of a formula as plain Unicode text, for places no MathJax reaches (a tab's title):
    ``\\sqrt n A^\\perp`` gives ``√n A⊥``, ``\\mathring Y^f`` gives ``Y̊ᶠ``, ``Y^G[\\Sigma_f]``
    gives ``Yᴳ[Σ_f]``: Greek letters and common symbols in Unicode, accents as combining marks,
    super- and subscripts in Unicode where each character has one (else ``^``/``_`` before it),
    font commands (``\\mathrm``, ``\\mathbf``, ``\\text``, ...) reduced to their text and any other
    command to its name; no backslash, brace or dollar is left."""
    s = tex
    fonts = r"\\(?:mathrm|mathbf|mathit|mathsf|mathcal|boldsymbol|operatorname|text|textrm|textit)\s*"
    accents = r"\\(" + "|".join(TEX_ACCENTS) + r")\s*"
    for _ in range(4):  # nested constructs, innermost first
        s = re.sub(r"\\mathbb\s*" + _TEX_ARG, _double_struck, s)
        s = re.sub(r"\\[tdc]?frac\s*" + _TEX_ARG + r"\s*" + _TEX_ARG, _fraction, s)
        s = re.sub(fonts + _TEX_ARG, lambda m: _tex_group(m[1]), s)
        s = re.sub(r"\\sqrt\s*" + _TEX_ARG, _root, s)
        s = re.sub(accents + _TEX_ARG, lambda m: _tex_group(m[2]) + TEX_ACCENTS[m[1]], s)
        s = re.sub(r"\\([A-Za-z]+|\|)", lambda m: TEX_SYMBOLS.get(m[1], m[1]), s)
        s = re.sub(r"\^\s*" + _SCRIPT_ARG, lambda m: _script(_tex_group(m[1]), SUPERSCRIPTS, "\x01"), s)
        s = re.sub(r"_\s*" + _SCRIPT_ARG, lambda m: _script(_tex_group(m[1]), SUBSCRIPTS, "\x02"), s)
    s = re.sub(r"\\[,;:!> ]", " ", s)
    s = s.replace("\\", "").replace("{", "").replace("}", "").replace("$", "")
    s = s.replace("\x01", "^").replace("\x02", "_")
    return re.sub(r"\s+", " ", s).strip()


_TITLE_MATH = re.compile(r"\\\((.*?)\\\)|\$\$(.*?)\$\$|\$([^$]+)\$", re.S)


def plain_title(title: str) -> str:
    """A title as plain text (HTML tags removed, entities decoded) with the TeX of its formulas,
    ``\\(...\\)`` or ``$...$``, written by :func:`tex_to_text`."""
    text = html.unescape(re.sub(r"<[^>]+>", "", title))
    return _TITLE_MATH.sub(lambda m: tex_to_text(next(g for g in m.groups() if g is not None)), text)


def title_text(title) -> str:
    """The text of a title node (docutils), its math nodes written by :func:`tex_to_text`."""
    from docutils import nodes

    if isinstance(title, nodes.math):
        return tex_to_text(title.astext())
    if isinstance(title, nodes.Text):
        return str(title)
    return "".join(title_text(child) for child in title.children)


def _plain_titles(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The page's ``<title>``, its print-only header (``pagetitle``) and the ``<link rel=next/prev>``
    titles with no raw TeX (:func:`plain_title`); the navigation and the page keep their TeX
    for MathJax."""
    if context.get("title"):
        context["title"] = html.escape(plain_title(str(context["title"])), quote=False)
    title = getattr(getattr(app, "env", None), "titles", {}).get(pagename)
    if context.get("pagetitle") and title is not None:  # the theme's pagetitle: the title's text, TeX bare
        context["pagetitle"] = html.escape(title_text(title), quote=False)
    for key in ("prev", "next"):
        link = context.get(key)
        if isinstance(link, dict) and link.get("title"):
            context[key] = {**link, "title": html.escape(plain_title(str(link["title"])), quote=False)}


def _reference_titles(app: Sphinx, doctree, docname: str) -> None:
    """A cross-reference whose text is a page's title (``{ref}`` to a chapter) shows that title
    with its formulas for MathJax, not their TeX as text: Sphinx writes the title's plain text
    there (``from \\sqrt n A^\\perp to Y^f``), which no MathJax typesets, so the reference's text is
    replaced by a copy of the title, math nodes included."""
    from docutils import nodes
    from sphinx.util.nodes import clean_astext

    titles = {}
    for title in app.env.titles.values():
        if any(isinstance(n, nodes.math) for n in title.findall()):
            titles[clean_astext(title)] = title
    if not titles:
        return
    for ref in doctree.findall(nodes.reference):
        inner = ref.children[0] if len(ref.children) == 1 and isinstance(ref.children[0], nodes.inline) else ref
        title = titles.get(inner.astext())
        if title is not None and not any(isinstance(n, nodes.math) for n in inner.findall()):
            inner.children = []
            inner.extend(child.deepcopy() for child in title.children)


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    app.set_html_assets_policy("always")
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _page_context)
    app.connect("html-page-context", _launch_source, priority=502)
    _figures_setup(app)
    app.connect("builder-inited", _singlehtml_handlers)
    app.connect("html-page-context", _plain_titles, priority=900)  # after the theme sets pagetitle
    app.connect("doctree-resolved", _reference_titles)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
