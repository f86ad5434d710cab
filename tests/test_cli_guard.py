"""The one boundary of the command line (:func:`bookrun.cli.main`): every failure of every
command is one line ``python -m gelib <command>: error: ...`` with its exit status, and a
traceback shows only with ``--debug``."""

import subprocess
import sys

import pytest

from bookrun import cli
from bookrun.cli import presets


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize(
    "error, shown",
    [
        (
            OverflowError("Python int too large to convert to C long"),
            "OverflowError: Python int too large to convert to C long",
        ),
        (ArithmeticError("the integral did not converge"), "ArithmeticError: the integral did not converge"),
        (PermissionError(13, "Permission denied", "/x/y.csv"), "PermissionError: Permission denied: /x/y.csv"),
        (RuntimeError("boom\nsecond line"), "RuntimeError: boom second line"),
    ],
)
def test_an_unexpected_error_is_one_line_that_names_debug(monkeypatch, capsys, error, shown):
    def fail(args):
        raise error

    monkeypatch.setattr(presets, "run", fail)
    assert cli.main(["presets"]) == 1
    line = one_line(capsys.readouterr().err)
    assert line == f"python -m gelib presets: error: {shown} (run with --debug for the traceback)", line
    with pytest.raises(type(error)):  # --debug, before or after the command: the exception itself
        cli.main(["presets", "--debug"])
    with pytest.raises(type(error)):
        cli.main(["--debug", "presets"])


def test_ctrl_c_in_any_command_is_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(presets, "run", interrupted)
    assert cli.main(["presets"]) == 130
    assert one_line(capsys.readouterr().err) == "python -m gelib presets: error: interrupted (Ctrl-C)"


def run_shell(line: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, timeout=120)


def test_a_closed_or_full_stdout_or_a_closed_stderr_is_reported_not_a_traceback():
    py = sys.executable
    closed = run_shell(f"'{py}' -m gelib presets >&-")
    assert closed.returncode == 1
    assert one_line(closed.stderr) == (
        "python -m gelib presets: error: standard output is closed; give it a file, or /dev/null"
    )
    full = run_shell(f"'{py}' -m gelib presets --json >/dev/full")
    assert full.returncode == 1
    assert (
        one_line(full.stderr) == "python -m gelib presets: error: cannot write standard output: No space left on device"
    )
    # stderr closed: the error has nowhere to go, the exit status still tells it
    bad = run_shell(f"'{py}' -m gelib law --n 0 2>&-")
    assert bad.returncode == 2 and bad.stdout == ""
