"""``python -m gelib batch``: execute every chapter, then render the book.

The command line of the batch engine (:mod:`bookrun.batch`): the scale, the
chapters, parameter overrides, the run folder and resumption.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .. import batch as engine
from ..scales import SCALES
from .common import positive_int, report_error

__all__ = ["register", "run"]


def _parse_value(text: str):
    """A ``-p NAME VALUE`` value: JSON if it parses, else the string itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
    except ValueError as e:  # an integer past Python's limit of digits for a conversion
        raise engine.BatchError(f"-p value {text[:20]}...: {e}") from None


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``batch`` sub-command to an argparse ``subparsers`` object."""
    p = subparsers.add_parser(
        "batch",
        help="execute every chapter with Papermill and render the book",
        description=engine.__doc__.split("\n\n")[0] + " Results are kept per run in _build/runs/.",
    )
    p.add_argument("--scale", choices=SCALES, default="default", help="sizes of every chapter (default: default)")
    p.add_argument(
        "--chapters",
        nargs="+",
        metavar="PATTERN",
        help="only chapters whose file name matches one of these glob patterns (e.g. 'centering*')",
    )
    p.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="inject a parameter into every chapter (VALUE parsed as JSON, else a string)",
    )
    p.add_argument("--out", type=Path, help="run folder (default _build/runs/<scale>-<time>)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the latest run of this scale (or --out), skipping finished chapters, with the chapters, "
        "parameters, jobs, timeout and render choice it was started with (unless given again)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="reuse an existing --out run folder: clears what an earlier batch wrote there (only a folder the batch "
        "made, never one of your own)",
    )
    p.add_argument("--no-render", action="store_true", help="execute only, do not build the HTML")
    p.add_argument(
        "--estimate",
        action="store_true",
        help="print the expected time of each selected chapter at this scale on this machine, saying which are "
        "measured (here or on this kind of machine), scaled from another CPU by the matmul rates, or extrapolated "
        "from the layers a chapter plans to simulate, and exit; a --scale paper run prints it before it starts",
    )
    p.add_argument("--timeout", type=positive_int, default=None, help="per-cell timeout in seconds (default: none)")
    p.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=None,
        help="chapters executed at once (default: one per CPU core up to 4; 1 on a GPU)",
    )
    p.add_argument("--root", type=Path, default=Path("."), help="the book's folder (with _toc.yml)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the batch; returns 2 when the run cannot start (no book, a run
    folder in the way, nothing to resume), else the engine's status."""
    root = args.root.resolve()
    if not (root / "_toc.yml").exists():
        return report_error("batch", f"no _toc.yml in {root}")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # kernels inherit it; see the Makefile
    try:
        params = {k: _parse_value(v) for k, v in args.parameter}
        return engine.run_batch(
            root,
            args.scale,
            args.chapters,
            params,
            args.out,
            args.resume,
            args.force,
            False if args.no_render else None,
            args.timeout,
            jobs=args.jobs,
            only_estimate=args.estimate,
        )
    except engine.BatchError as e:
        return report_error("batch", e)
