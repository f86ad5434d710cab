"""Nothing a user owns is ever deleted or overwritten by the batch, ``render`` or the chapter tests.

Each test fills folders with files the project did not write (a thesis, data,
a git folder), runs a command that could touch them, and checks afterwards
that every one of them is byte for byte what it was, and that the refusal is
one line naming the reason.
"""

import subprocess
import sys
from pathlib import Path

import pytest
import test_batch

from bookrun.batch import RUN_MARKER, BatchError, run_batch
from bookrun.cli import main

ROOT = Path(__file__).resolve().parents[1]
book = test_batch.book  # the fixture: a two-chapter book in tmp_path


def user_files(folder: Path) -> dict[str, bytes]:
    """Put a user's files into ``folder`` (made if missing); returns what they hold."""
    files = {"thesis.tex": b"\\documentclass{article}\n", "sub/data.csv": b"x,y\n1,2\n", "notes.md": b"# mine\n"}
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return snapshot(folder)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (``.git`` and ``_build`` included) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def git_repo(folder: Path) -> dict[str, bytes]:
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return snapshot(folder)


def test_force_never_clears_the_repository_its_chapters_or_a_folder_above(book, capsys):
    before = git_repo(book)
    for out in (book, book / "book", book.parent, book / "book" / "new", book / ".git" / "x"):
        with pytest.raises(BatchError, match="never writes there"):
            run_batch(book, "ci", ["good"], out=out, force=True, render=False)
    assert snapshot(book) == before
    # the same through the command line, from inside the repository: one line, status 2
    assert main(["batch", "--root", str(book), "--scale", "ci", "--no-render", "--force", "--out", str(book)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is the book's own folder" in err[0], err
    assert snapshot(book) == before


def test_force_never_clears_a_folder_the_batch_did_not_make(book, tmp_path_factory, capsys):
    mine = tmp_path_factory.mktemp("thesis")
    before = user_files(mine)
    with pytest.raises(BatchError, match="was not made by the batch"):
        run_batch(book, "ci", ["good"], out=mine, force=True, render=False)
    with pytest.raises(BatchError, match="exists; use --resume, --force or another --out"):
        run_batch(book, "ci", ["good"], out=mine, render=False)
    with pytest.raises(BatchError, match="no earlier run of scale 'ci' to resume in"):
        run_batch(book, "ci", ["good"], out=mine, resume=True, render=False)
    (mine / "record.json").write_text("{}")  # a record.json, but not a batch's
    with pytest.raises(BatchError, match="not a run folder"):
        run_batch(book, "ci", ["good"], out=mine, resume=True, render=False)
    (mine / "record.json").unlink()
    assert snapshot(mine) == before


def test_force_clears_only_what_a_batch_wrote_in_its_own_folder(book, capsys):
    out = book / "_build" / "runs" / "ci-mine"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    assert (out / RUN_MARKER).is_file() and (out / "book" / "good.ipynb").is_file()
    kept = user_files(out / "keep")  # a user's folder dropped into the run folder
    (out / "mine.txt").write_text("mine")
    (out / "book" / "stale.ipynb").write_text("{}")  # the batch's own folder: cleared
    (out / "data" / "good").mkdir(parents=True)
    (out / "data" / "good" / "fig.csv").write_text("an earlier run's numbers\n")  # the chapters' CSV: cleared
    assert run_batch(book, "ci", ["good"], out=out, force=True, render=False) == 0
    assert snapshot(out / "keep") == kept and (out / "mine.txt").read_text() == "mine"
    assert not (out / "book" / "stale.ipynb").exists() and (out / "book" / "good.ipynb").is_file()
    assert not (out / "data").exists()


def test_an_empty_folder_can_be_a_run_folder_with_force(book, tmp_path_factory, capsys):
    out = tmp_path_factory.mktemp("empty")
    assert run_batch(book, "ci", ["good"], out=out, force=True, render=False) == 0
    assert (out / RUN_MARKER).is_file()


def test_render_writes_nothing_outside_a_run_folder(book, tmp_path_factory, capsys):
    before = git_repo(book)
    mine = tmp_path_factory.mktemp("mine")
    theirs = user_files(mine)
    for target, why in ((mine, "is not a run folder"), (book / "book", "holds the book's chapters"), (book, "own")):
        assert main(["render", str(target), "--root", str(book)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0] and "Traceback" not in err[0], err
    assert snapshot(mine) == theirs and snapshot(book) == before
    # a run folder, rendered into a folder of the user's: refused before anything is written
    out = book / "_build" / "runs" / "ci-r"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    run_before = snapshot(out)
    assert main(["render", str(out), "--root", str(book), "--output", str(mine)]) == 2
    assert "was not made by a render" in capsys.readouterr().err
    assert snapshot(mine) == theirs and snapshot(out) == run_before


def test_chapter_tests_refuse_an_executed_dir_of_the_users(tmp_path):
    theirs = user_files(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--executed-dir", str(tmp_path)]
        + ["tests/test_keys.py", "-k", "nothing_matches_this"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 4 and "is not a run folder" in res.stderr, res.stderr[-2000:]
    assert snapshot(tmp_path) == theirs
