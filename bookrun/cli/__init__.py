"""Command line: ``python -m gelib {compare,law,report,presets,figure,batch,render,pdf}``.

``report`` writes a one-page report (figure and JSON) for one layer;
``compare`` samples the original multi-head attention and its Gaussian
equivalent (or any two models of Table 1) from shared draws and reports the
relative W1 and KS distances between their spectra over seeds; ``law``
evaluates the free-probability limit law; ``presets`` lists the dimensions
of public models; ``figure`` prints the GE curves of one panel of the
learning figures; ``batch`` executes every chapter and renders the book;
``render`` renders chapters executed elsewhere (by the chapter tests);
``pdf`` prints a run folder's executed chapters into one PDF.

One argparse tree (:func:`build_parser`), one module per sub-command
(:mod:`~bookrun.cli.compare`, :mod:`~bookrun.cli.law`, :mod:`~bookrun.cli.report`,
:mod:`~bookrun.cli.presets`, :mod:`~bookrun.cli.figure`, :mod:`~bookrun.cli.batch`,
:mod:`~bookrun.cli.render`, :mod:`~bookrun.cli.pdf`), each with ``register(subparsers)`` and
``run(args) -> int``; the layer flags and the error format are shared
(:mod:`~bookrun.cli.common`): every error reads
``python -m gelib <command>: error: <message>``, with exit status 2 for a bad
command line.

Output into a pipe that closes early (``python -m gelib presets | head -1``)
ends quietly, as ``yes | head -1`` does: no traceback, nothing more written,
and exit status 141 (128 + SIGPIPE), the status a shell reports for a
command that a broken pipe ended, so that ``set -o pipefail`` sees it as the
same kind of event.  (The Python documentation's recipe, which this follows,
points stdout at ``/dev/null`` so that the final flush cannot fail again.)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gelib.config import ConfigError

from . import batch, compare, figure, law, pdf, presets, render, report
from .common import PROG, CommandParser, add_config_args, config_from_args, report_error

__all__ = ["main", "build_parser", "add_config_args", "config_from_args", "BROKEN_PIPE_STATUS", "INTERRUPTED_STATUS"]

#: The exit status when the output pipe closed early (``| head``), 128 + SIGPIPE (13), as a shell reports it.
BROKEN_PIPE_STATUS = 141
#: The exit status after Ctrl-C, 128 + SIGINT (2), as a shell reports it.
INTERRUPTED_STATUS = 130

COMMANDS = ("compare", "law", "report", "presets", "figure", "batch", "render", "pdf")
_REGISTRATION = (compare, presets, figure, batch, law, report, render, pdf)  # the order of the sub-commands in --help


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every sub-command."""
    parser = CommandParser(  # argparse's errors in one line, as every sub-command's
        prog=PROG,
        description="Gaussian equivalence for multi-head self-attention (Hayase and Karakida, 2026).",
    )
    parser.add_argument(  # read by main() wherever it stands on the command line
        "--debug", action="store_true", help="show the traceback of an unexpected error (anywhere on the line)"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(COMMANDS) + "}")
    for module in _REGISTRATION:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the sub-command, return
    its exit status: the one boundary where every failure becomes one line.

    A bad command line exits with status 2 (argparse's own errors, and a
    :class:`~gelib.config.ConfigError` that a sub-command raises); a closed
    output pipe ends quietly with status 141 (:data:`BROKEN_PIPE_STATUS`); a
    closed or full stdout is an error with status 1 (as ``yes >&-`` reports
    one); Ctrl-C ends with status 130 (128 + SIGINT); any other failure
    (a numerical one, an ``OverflowError``, a file that cannot be written) is
    one line ``python -m gelib <command>: error: <what>: <why> (run with
    --debug for the traceback)`` with status 1, and ``--debug``, anywhere on
    the command line, shows the traceback instead."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv[: argv.index("--") if "--" in argv else len(argv)]
    if debug:
        argv.remove("--debug")
    parser = build_parser()
    command = next((a for a in argv if a in COMMANDS), "")
    try:
        args = parser.parse_args(argv)  # --help into a closed pipe, too
        command = args.command
        if sys.stdout is None:  # started with stdout closed (>&-): nothing could show the result
            return report_error(command, "standard output is closed; give it a file, or /dev/null", 1)
        out = sys.stdout = _Watched(sys.stdout)
        try:
            status = args.func(args)
            sys.stdout.flush()  # a broken pipe or a full disk surfaces here, not in the interpreter's final flush
        except ConfigError as e:
            raise SystemExit(report_error(command, e)) from None
        except BrokenPipeError:
            raise
        except KeyboardInterrupt:
            return report_error(command, "interrupted (Ctrl-C)", INTERRUPTED_STATUS)
        except Exception as e:
            if debug:
                raise
            if e is out.failed:
                _silence_stdout()
                return report_error(command, f"cannot write standard output: {e.strerror or e}", 1)
            return report_error(command, f"{_describe(e)} (run with --debug for the traceback)", 1)
        finally:
            if sys.stdout is out:
                sys.stdout = out.stream
        return status
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(BROKEN_PIPE_STATUS) from None


class _Watched:
    """stdout as the command sees it, remembering the error of a failed write or flush, so
    that a full or closed stdout is told from a file that could not be written."""

    def __init__(self, stream):
        self.stream, self.failed = stream, None

    def write(self, text):
        try:
            return self.stream.write(text)
        except OSError as e:
            self.failed = e
            raise

    def flush(self):
        try:
            return self.stream.flush()
        except OSError as e:
            self.failed = e
            raise

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _describe(e: BaseException) -> str:
    """``<kind>: <message>`` of an exception, in one line."""
    text = " ".join(str(e).split())
    kind = type(e).__name__
    if isinstance(e, OSError) and e.strerror:
        text = f"{e.strerror}" + (f": {e.filename}" if e.filename else "")
    return f"{kind}: {text}" if text else kind


def _silence_stdout() -> None:
    """Point stdout at ``/dev/null``, so that the interpreter's last flush of what is still
    buffered does not fail again (the recipe of Python's ``signal`` documentation)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (in-process tests)
        pass
