"""The README's commands work as shown: each ``python -m gelib`` line of its shell blocks
parses, and every one that takes seconds runs with the line's words, with exit status 0 (one of
them in a new Python exactly as a shell runs it, the others by the same ``main`` in-process)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from bookrun.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
#: The README's lines that take minutes on a CPU (a layer of Falcon-7B at five seeds, a panel's
#: simulated markers); they are parsed, not run.
EXPENSIVE = ("falcon-7b", "--markers")


def readme_commands() -> list[str]:
    """The ``python -m gelib`` command lines of the README's ``bash`` blocks, comments removed."""
    text = (ROOT / "README.md").read_text()
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            if re.match(r"(\.venv/bin/)?python -m gelib ", line):
                lines.append(line)
    return lines


COMMANDS = readme_commands()


def test_the_readme_shows_commands_and_each_parses():
    assert len(COMMANDS) >= 7, COMMANDS
    for line in COMMANDS:
        args = build_parser().parse_args(shlex.split(line)[3:])
        assert callable(args.func), line


CHEAP = [c for c in COMMANDS if not any(e in c for e in EXPENSIVE)]


def test_the_readme_command_line_runs_as_a_shell_runs_it(tmp_path):
    """The first cheap line exactly as a shell runs it, a new Python with ``-m gelib`` (the entry point
    gelib/__main__.py); the others call the same ``main`` in this process (below)."""
    line = next(c for c in CHEAP if " presets" in c)
    words = shlex.split(line)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, *words[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, f"{line}\n{res.stderr[-2000:]}"
    assert res.stdout.strip()


@pytest.mark.parametrize("line", CHEAP)
def test_a_cheap_readme_command_runs_as_shown(line, tmp_path, monkeypatch, capsys):
    """Run by the command line's ``main`` with the line's words, in an empty folder that sees the
    repository's ``tests/`` (the example configs), so a command that writes (``report --out my-model``)
    writes there, not into the repository. In this process: a new Python per line (2.5 s of imports
    each) would test again only the entry point, which the test above runs."""
    from bookrun.cli import main

    (tmp_path / "tests").symlink_to(ROOT / "tests")
    words = shlex.split(line)
    assert words[1:3] == ["-m", "gelib"], line
    monkeypatch.chdir(tmp_path)
    try:
        status = main(words[3:])
    except SystemExit as e:  # argparse's own exits
        status = e.code
    err = capsys.readouterr().err
    assert status in (0, None), f"{line}\n{err[-2000:]}"
    assert "Traceback" not in err
