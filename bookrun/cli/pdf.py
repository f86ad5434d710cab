"""``python -m gelib pdf [RUN_DIR]``: the whole book as one PDF, from chapters already executed.

The run folder's executed chapters (``make book``'s latest complete run, or
the chapter tests' ``--executed-dir``) are built into one page by Jupyter
Book's ``singlehtml`` builder, execution off, and printed by the system's
headless Chromium with the book's print stylesheet (:mod:`bookrun.pdf`):
every chapter, its formulas typeset, its figures, code folded on the page
left out, its exercises' solutions at its end. ``--check`` reads the PDF
back and fails on a missing chapter title, raw TeX or a missing figure.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

from ..chapters import BatchError
from ..outputs import OutputError, check_output_file
from ..pdf import PDF_NAME, chapter_titles, check_pdf, find_browser, write_pdf
from ..render import fill_missing_chapters, hide_injected_in_run, mirror_files, missing_chapters, prepare_mirror
from ..runfolder import RunFolder, check_run_folder, is_run_folder, read_record, runs
from .common import report_error
from .render import _check_output, _make_output, _unmake_output

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``pdf`` sub-command to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "pdf",
        help="print the executed chapters of a run folder into one PDF",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1],
    )
    p.add_argument(
        "run_dir",
        type=Path,
        nargs="?",
        default=None,
        metavar="RUN_DIR",
        help="folder with the executed chapters (default: the latest complete run of --scale under _build/runs)",
    )
    p.add_argument("--scale", default="default", help="the scale whose latest complete run to print (no RUN_DIR)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"the PDF (default: RUN_DIR/{PDF_NAME}); its folder is a run folder or a new or empty one, where "
        "the single-page build goes too (_build/singlehtml); a file there is replaced only if this command wrote it",
    )
    p.add_argument("--check", action="store_true", help="read the PDF back: every chapter's title, no raw TeX, figures")
    p.add_argument("--lenient", action="store_true", help="print chapters that were not executed from their sources")
    p.add_argument("--budget-ms", type=int, default=60000, help="the page's virtual time for MathJax (default 60000)")
    p.add_argument("--chromium", default=None, help="the browser (default: $CHROMIUM, else chromium on PATH)")
    p.add_argument("--root", type=Path, default=Path("."), help="the book's folder (with _toc.yml)")
    p.set_defaults(func=run)
    return p


def _latest_run(root: Path, scale: str) -> Path:
    """The newest run of ``scale`` under ``root/_build/runs`` in which every chapter ran."""
    for run_dir in reversed(runs(root / "_build", scale)):
        rec = read_record(run_dir)
        if rec and rec.get("complete"):
            return run_dir
    raise BatchError(f"no complete run of scale {scale!r} under {root / '_build' / 'runs'} (make book first)")


def _book_title(root: Path) -> str:
    m = re.search(r'^title:\s*"?(.*?)"?\s*$', (root / "_config.yml").read_text(), flags=re.M)
    return m.group(1) if m else "The book"


def run(args: argparse.Namespace) -> int:
    """Check everything, then build and print; 2 when it cannot start, 1 when the build, the
    print or ``--check`` fails.

    Before a byte is written: ``RUN_DIR`` is a run folder with every chapter executed (unless
    ``--lenient``), the browser is there, and ``--output`` is a PDF file name (not a link, a
    folder or a place in the repository's sources) in a folder that is a run folder, or a new
    or empty one (made and marked only after every other check passed), where nothing this
    command did not write is overwritten (:meth:`~bookrun.runfolder.RunFolder.check_writable`).
    The PDF is written through a temporary file renamed into place."""
    root = args.root.resolve()
    if not (root / "_toc.yml").exists():
        return report_error("pdf", f"no _toc.yml in {root}")
    made = None
    try:
        run_dir = args.run_dir.resolve() if args.run_dir is not None else _latest_run(root, args.scale)
        check_run_folder(root, run_dir)
        browser = find_browser(args.chromium)
        if browser is None:
            raise BatchError("no Chromium found (install the system package: apt-get install chromium)")
        pdf = (args.output if args.output is not None else run_dir / PDF_NAME).absolute()
        checked = check_output_file(pdf, "--output", root)
        if not isinstance(checked, Path) or checked.suffix.lower() != ".pdf":
            raise BatchError(f"--output {pdf}: give a file name ending in .pdf")
        folder = _check_output(root, pdf.parent.resolve())
        missing = missing_chapters(root, run_dir)
        if missing and not args.lenient:
            raise BatchError(
                f"{run_dir} has no executed notebook of: {', '.join(Path(f).name for f in missing)} "
                "(--lenient prints their sources in their place); nothing was written"
            )
        RunFolder(run_dir).check_writable([*mirror_files(root), *(f"{f}.md" for f in missing), "logs/pdf.log"])
        if is_run_folder(folder):
            RunFolder(folder).check_writable([pdf.name])
        else:
            _make_output(folder)
            made = folder
        prepare_mirror(root, run_dir)
        fill_missing_chapters(root, run_dir)
        hide_injected_in_run(run_dir)  # as render does: this command may run before or beside it (make test)
    except (BatchError, OutputError) as e:
        if made is not None:
            _unmake_output(made)
        return report_error("pdf", e)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    t0 = time.perf_counter()
    try:
        out, images = write_pdf(root, run_dir, folder, pdf.name, _book_title(root), browser, budget_ms=args.budget_ms)
    except (BatchError, OutputError) as e:
        return report_error("pdf", e, 1)
    print(f"pdf: {out} ({out.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - t0:.0f} s)")
    if not args.check:
        return 0
    t1 = time.perf_counter()
    titles = chapter_titles(root)
    problems = check_pdf(out.read_bytes(), titles, min_images=images, running=_book_title(root))
    for line in problems:
        print(f"pdf --check: {line}")
    verdict = f"FAILED, {len(problems)} problems" if problems else "ok, every title found, no raw TeX"
    print(
        f"pdf --check: {verdict} ({len(titles)} chapter titles, at least {images} images looked for, "
        f"{time.perf_counter() - t1:.0f} s)"
    )
    return 1 if problems else 0
