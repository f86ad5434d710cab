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
        help="write the HTML to OUTPUT/_build/html (default: the book's own _build/html); OUTPUT is a new or "
        "empty folder, or one a render or batch made",
    )
    p.add_argument("--root", type=Path, default=Path("."), help="the book's folder (with _toc.yml)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Prepare the mirror tree in ``RUN_DIR`` and render it; 2 when it cannot start.

    Nothing is written before ``RUN_DIR`` is known to be a run folder
    (:func:`bookrun.batch.check_run_folder`: made by the batch or the chapter tests,
    not the repository, nor its chapters' folder) and ``--output`` a folder the
    render may write its ``_build`` into (the book's own, a run folder, or a new
    or empty one, which it marks)."""
    root = args.root.resolve()
    if not (root / "_toc.yml").exists():
        return report_error("render", f"no _toc.yml in {root}")
    run_dir = args.run_dir.resolve()
    try:
        engine.check_run_folder(root, run_dir)
        output = None if args.output is None else _output_folder(root, args.output.resolve())
    except engine.BatchError as e:
        return report_error("render", e)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        engine.prepare_mirror(root, run_dir)
    except engine.BatchError as e:
        return report_error("render", e)
    missing = engine.fill_missing_chapters(root, run_dir)
    if missing and not args.lenient:
        return report_error("render", f"{run_dir} has no executed notebook of: {', '.join(missing)}")
    return engine.render_book(root, run_dir, strict=not args.lenient, output=output)


def _output_folder(root: Path, output: Path) -> Path:
    """``output`` if the render may write ``output/_build`` there; made and marked if new."""
    if output == root or engine.is_run_folder(output):
        return output
    why = engine.unsafe_run_folder(root, output)
    if why:
        raise engine.BatchError(f"--output {why}; give a new folder")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise engine.BatchError(
            f"--output {output} exists and was not made by a render or a batch (no {engine.RUN_MARKER}); "
            "give a new or empty folder"
        )
    try:
        output.mkdir(parents=True, exist_ok=True)
        engine.mark_run_folder(output, made_by="python -m gelib render")
    except OSError as e:
        raise engine.BatchError(f"cannot write --output {output}: {e.strerror or e}") from None
    return output
