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

from ..chapters import BatchError
from ..render import fill_missing_chapters, mirror_files, missing_chapters, prepare_mirror, render_book
from ..runfolder import (
    MANIFEST,
    RUN_MARKER,
    RunFolder,
    check_run_folder,
    is_run_folder,
    mark_run_folder,
    unsafe_run_folder,
)
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

    Everything is checked before a byte is written, and a refusal leaves nothing
    behind: ``RUN_DIR`` is a run folder (:func:`bookrun.runfolder.check_run_folder`:
    made by the batch or the chapter tests, not the repository nor its chapters'
    folder, no entry leading out of it), every chapter has its executed notebook
    (unless ``--lenient``), every file of the mirror can be written, and
    ``--output`` is a folder the render may write its ``_build`` into (the book's
    own, a run folder, or a new or empty one, made and marked only after every
    other check passed)."""
    root = args.root.resolve()
    if not (root / "_toc.yml").exists():
        return report_error("render", f"no _toc.yml in {root}")
    run_dir = args.run_dir.resolve()
    try:
        check_run_folder(root, run_dir)
        output = None if args.output is None else _check_output(root, args.output.resolve())
        missing = missing_chapters(root, run_dir)
        if missing and not args.lenient:
            raise BatchError(
                f"{run_dir} has no executed notebook of: {', '.join(Path(f).name for f in missing)} "
                "(--lenient renders their sources in their place); nothing was written"
            )
        folder = RunFolder(run_dir)
        folder.check_writable([*mirror_files(root), *(f"{f}.md" for f in missing), "logs/render.log"])
        made = output is not None and output != root and not is_run_folder(output)
        if made:
            _make_output(output)
        try:
            prepare_mirror(root, run_dir)
            fill_missing_chapters(root, run_dir)
        except BaseException:
            if made:
                _unmake_output(output)
            raise
    except BatchError as e:
        return report_error("render", e)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return render_book(root, run_dir, strict=not args.lenient, output=output)


def _check_output(root: Path, output: Path) -> Path:
    """``output`` if the render may write ``output/_build`` there (the book's own folder, a run
    folder with no link leading out of it, or a new or empty folder); nothing is written."""
    if output == root:
        return output
    if is_run_folder(output):
        RunFolder(output).check_links()
        return output
    why = unsafe_run_folder(root, output)
    if why:
        raise BatchError(f"--output {why}; give a new folder")
    if output.is_symlink():
        raise BatchError(f"--output {output} is a symbolic link; give the folder itself")
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise BatchError(
            f"--output {output} exists and was not made by a render or a batch (no {RUN_MARKER}); "
            "give a new or empty folder"
        )
    parent = next((p for p in (output, *output.parents) if p.exists()), None)
    if parent is None or not os.access(parent, os.W_OK | os.X_OK):
        raise BatchError(f"cannot write --output {output}: {parent} is not writable")
    return output


def _make_output(output: Path) -> None:
    """Make ``output`` (new or empty) a run folder (:func:`~bookrun.runfolder.mark_run_folder`)."""
    try:
        output.mkdir(parents=True, exist_ok=True)
        mark_run_folder(output, made_by="python -m gelib render")
    except OSError as e:
        _unmake_output(output)
        raise BatchError(f"cannot write --output {output}: {e.strerror or e}") from None


def _unmake_output(output: Path) -> None:
    """Undo :func:`_make_output` where the render did not start: its two files, then the
    folders it made, each only if empty."""
    for name in (RUN_MARKER, MANIFEST):
        (output / name).unlink(missing_ok=True)
    for p in (output, *output.parents):
        try:
            p.rmdir()  # only an empty folder, so never one that held anything of yours
        except OSError:
            break
