"""Command line: ``python -m gelib {compare,law,report,presets,batch,render}``.

``report`` writes a one-page report (figure and JSON) for one layer;
``compare`` samples the original multi-head attention and its Gaussian
equivalent (or any two models of Table 1) from shared draws and reports the
relative W1 and KS distances between their spectra over seeds; ``law``
evaluates the free-probability limit law; ``presets`` lists the dimensions
of public models; ``batch`` executes every chapter and renders the book;
``render`` renders chapters executed elsewhere (by the chapter tests).

One argparse tree (:func:`build_parser`), one module per sub-command
(:mod:`~gelib.cli.compare`, :mod:`~gelib.cli.law`, :mod:`~gelib.cli.report`, :mod:`~gelib.cli.presets`,
:mod:`~gelib.cli.batch`, :mod:`~gelib.cli.render`), each with ``register(subparsers)`` and
``run(args) -> int``; the layer flags and the error format are shared
(:mod:`~gelib.cli.common`): every error reads
``python -m gelib <command>: error: <message>``, with exit status 2 for a bad
command line.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..config import ConfigError
from . import batch, compare, law, presets, render, report
from .common import PROG, add_config_args, config_from_args, report_error

__all__ = ["main", "build_parser", "add_config_args", "config_from_args"]

COMMANDS = ("compare", "law", "report", "presets", "batch", "render")
_REGISTRATION = (compare, presets, batch, law, report, render)  # the order of the sub-commands in --help


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every sub-command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Gaussian equivalence for multi-head self-attention (Hayase and Karakida, 2026).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for module in _REGISTRATION:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the sub-command, return
    its exit status.  A bad command line exits with status 2 (argparse's own
    errors, and a :class:`~gelib.config.ConfigError` that a sub-command raises)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        raise SystemExit(report_error(args.command, e)) from None
