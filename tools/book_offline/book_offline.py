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

import importlib.util
import json
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


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx.ext.mathjax")
    app.set_html_assets_policy("always")
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _page_context)
    app.connect("html-page-context", _launch_source, priority=502)
    _figures_setup(app)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
