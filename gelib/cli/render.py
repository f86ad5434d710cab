"""``python -m gelib render RUN_DIR``: render executed chapters into the HTML book.

The chapter tests (``make test``) execute every chapter once under nbval and
write the executed notebooks into a run folder (``conftest.py``,
``--executed-dir``); this command renders that folder (or any run folder of
``python -m gelib batch``) with Jupyter Book, execution off and, by default,
nitpicky with warnings as errors, so the rendered book and the chapter tests
share one execution of each chapter.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from .. import batch as engine
from .common import report_error

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``render`` sub-command to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "render",
        help="render a folder of executed chapters into _build/html",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
    )
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="folder with the executed chapters (.ipynb)")
    p.add_argument("--lenient", action="store_true", help="warnings do not fail the build (no -n -W)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help="write the HTML to OUTPUT/_build/html (default: the book's own _build/html)",
    )
    p.add_argument("--root", type=Path, default=Path("."), help="the book's folder (with _toc.yml)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Prepare the mirror tree in ``RUN_DIR`` and render it; 2 when it cannot start."""
    root = args.root.resolve()
    if not (root / "_toc.yml").exists():
        return report_error("render", f"no _toc.yml in {root}")
    run_dir = args.run_dir.resolve()
    if not run_dir.is_dir():
        return report_error("render", f"{run_dir} is not a folder of executed chapters")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        engine.prepare_mirror(root, run_dir)
    except engine.BatchError as e:
        return report_error("render", e)
    missing = engine.fill_missing_chapters(root, run_dir)
    if missing and not args.lenient:
        return report_error("render", f"{run_dir} has no executed notebook of: {', '.join(missing)}")
    return engine.render_book(root, run_dir, strict=not args.lenient, output=args.output)
