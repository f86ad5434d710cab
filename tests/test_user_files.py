"""Nothing a user owns is ever deleted or overwritten by the batch, ``render`` or the chapter tests.

Each test fills folders with files the project did not write (a thesis, data,
a git folder), runs a command that could touch them, and checks afterwards
that every one of them is byte for byte what it was, and that the refusal is
one line naming the reason.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import test_batch

from bookrun.batch import RUN_MARKER, BatchError, run_batch
from bookrun.cli import main
from bookrun.runfolder import MANIFEST, RunLock

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


def test_force_clears_only_the_files_a_batch_wrote_never_a_folder_whole(book, capsys):
    out = book / "_build" / "runs" / "ci-mine"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    assert (out / RUN_MARKER).is_file() and (out / "book" / "good.ipynb").is_file()
    manifest = json.loads((out / MANIFEST).read_text())["files"]
    assert {"book/good.ipynb", "record.json", "_toc.yml", "logs/good.log"} <= set(manifest), manifest
    ours = {rel: (out / rel).read_bytes() for rel in manifest}
    kept = user_files(out / "keep")  # a user's folder dropped into the run folder
    (out / "mine.txt").write_text("mine")
    # a file of the user's in a chapter's data folder, where the chapter may write: refused, nothing removed
    (out / "data" / "good").mkdir(parents=True)
    (out / "data" / "good" / "fig.csv").write_text("my numbers\n")
    before = snapshot(out)
    with pytest.raises(BatchError, match=r"did not write or that changed since \(data/good/fig.csv\)"):
        run_batch(book, "ci", ["good"], out=out, force=True, render=False)
    assert snapshot(out) == before
    (out / "data" / "good" / "fig.csv").rename(out / "data" / "fig.csv")
    # a user's files inside the batch's own folders (book/, logs/, data/): kept, byte for byte
    mine = ("book/notes.ipynb", "logs/mine.log", "data/mine.csv", "book/sub/deep.md")
    for rel in mine:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(f"{rel} is mine\n")
    assert run_batch(book, "ci", ["good"], out=out, force=True, render=False) == 0
    assert snapshot(out / "keep") == kept and (out / "mine.txt").read_text() == "mine"
    assert (out / "data" / "fig.csv").read_text() == "my numbers\n"
    for rel in mine:
        assert (out / rel).read_text() == f"{rel} is mine\n", rel
    assert (out / "book" / "good.ipynb").is_file() and (out / "book" / "good.ipynb").read_bytes() != ours[
        "book/good.ipynb"
    ]  # executed again: a new execution time in its metadata
    assert not set(json.loads((out / MANIFEST).read_text())["files"]) & {"mine.txt", "book/notes.ipynb"}


def test_force_refuses_where_a_file_the_batch_wrote_was_edited_and_removes_nothing(book, capsys):
    out = book / "_build" / "runs" / "ci-edited"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    capsys.readouterr()
    (out / "_toc.yml").write_text((out / "_toc.yml").read_text() + "# my edit\n")
    before = snapshot(out)
    assert main(["batch", "--root", str(book), "--scale", "ci", "--no-render", "--force", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed since (_toc.yml)" in err[0] and "never overwrites" in err[0], err
    assert snapshot(out) == before


def test_a_run_folder_made_before_the_manifest_is_never_cleared_nor_resumed(book, capsys):
    out = book / "_build" / "runs" / "ci-old"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    capsys.readouterr()
    (out / MANIFEST).unlink()  # as an earlier version of the batch left it
    before = snapshot(out)
    for flag in ("--force", "--resume"):
        assert main(["batch", "--root", str(book), "--scale", "ci", "--no-render", flag, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "earlier version of the batch" in err[0], err
    assert snapshot(out) == before


def test_links_out_of_a_run_folder_are_never_followed(book, tmp_path_factory, capsys):
    """``RUN/book`` a link to a user's folder: neither ``--resume`` nor ``render`` writes
    through it, and a refused render leaves no output folder behind."""
    out = book / "_build" / "runs" / "ci-link"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0
    capsys.readouterr()
    mine = tmp_path_factory.mktemp("mine")
    theirs = user_files(mine)
    (mine / "intro.md").write_text("# my intro\n")
    theirs = snapshot(mine)
    shutil.rmtree(out / "book")
    (out / "book").symlink_to(mine, target_is_directory=True)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.is_symlink() and mine not in p.parents}
    assert main(["batch", "--root", str(book), "--scale", "ci", "--no-render", "--resume", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "symbolic links that lead outside it (book)" in err[0], err
    new_output = tmp_path_factory.mktemp("html") / "new"
    assert main(["render", str(out), "--root", str(book), "--output", str(new_output)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lead outside it" in err[0], err
    assert snapshot(mine) == theirs and not new_output.exists()
    assert {p: p.read_bytes() for p in before} == before


def test_render_checks_every_chapter_before_it_writes_and_leaves_nothing_behind(book, tmp_path_factory, capsys):
    out = book / "_build" / "runs" / "ci-half"
    assert run_batch(book, "ci", ["good"], out=out, render=False) == 0  # no executed `bad`
    capsys.readouterr()
    (out / "book" / "intro.md").unlink()  # a page the render would write again
    before = snapshot(out)
    new_output = tmp_path_factory.mktemp("html") / "a" / "b"
    assert main(["render", str(out), "--root", str(book), "--output", str(new_output)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no executed notebook of: bad" in err[0] and "nothing was written" in err[0], err
    assert snapshot(out) == before and not new_output.parent.exists()
    # a user's file where the render would write a page of its own: refused, nothing written
    (out / "book" / "intro.md").write_text("my intro\n")
    before = snapshot(out)
    assert main(["render", str(out), "--root", str(book), "--lenient", "--output", str(new_output)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did not write" in err[0] and "book/intro.md" in err[0], err
    assert snapshot(out) == before and not new_output.parent.exists()


@pytest.mark.parametrize(
    "name, value, why",
    [
        ("scale", "paper", "give --scale"),
        ("n", "NaN", "not a finite number"),
        ("beta", "Infinity", "not a finite number"),
        ("beta", "1e999", "not a finite number"),  # JSON reads it as infinity
        ("n", "9" * 5000, "digits"),
    ],
)
def test_parameters_the_batch_owns_or_not_finite_are_refused_before_a_folder_is_made(book, capsys, name, value, why):
    out = book / "_build" / "runs" / "ci-p"
    cmd = ["batch", "--root", str(book), "--scale", "ci", "--no-render", "--out", str(out), "-p", name, value]
    assert main(cmd) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0] and "Traceback" not in err[0], err
    assert not out.exists() and not (book / "_build").exists()


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


def test_a_lock_that_cannot_be_removed_is_released_without_an_error(tmp_path, monkeypatch):
    """A run folder made read-only under a running batch: the lock's file cannot be
    removed (simulated, as root may remove it anyway); releasing never raises."""
    lock = RunLock(tmp_path)
    lock.acquire()

    def refuse(self, missing_ok=False):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "unlink", refuse)
    lock.release()
    monkeypatch.undo()
    lock = RunLock(tmp_path)
    lock.acquire()  # the stale lock file locks nothing: a new batch may take the folder
    lock.release()


def test_files_claimed_for_a_worker_are_the_runs_until_recorded_and_a_users_never_are(tmp_path):
    """A chapter's notebook and log, claimed before its worker starts, may be overwritten after a kill
    (nothing recorded them), cleared by --force, and are ordinary recorded files once recorded; a user's
    file beside them is refused all along, and cannot be claimed."""
    from bookrun.runfolder import RunFolder, mark_run_folder

    run = tmp_path / "run"
    run.mkdir()
    mark_run_folder(run)
    folder = RunFolder(run)
    mine = user_files(run / "logs")
    folder.write("logs/ch.log", "")
    folder.claim("book/ch.ipynb", "logs/ch.log")
    (run / "book").mkdir()
    (run / "book" / "ch.ipynb").write_text('{"partial": true}')  # the worker, then a SIGKILL
    (run / "logs" / "ch.log").write_text("kernel chatter\n")
    again = RunFolder(run)  # the resumed batch reads the manifest again
    assert again.writing == {"book/ch.ipynb", "logs/ch.log"}
    again.check_writable(["book/ch.ipynb", "logs/ch.log"])  # its own partial files: no refusal
    with pytest.raises(BatchError, match="did not write"):
        again.check_writable(["logs/thesis.tex"])
    with pytest.raises(BatchError, match="did not write"):
        again.claim("logs/notes.md")
    assert RunFolder(run).writing == {"book/ch.ipynb", "logs/ch.log"}  # a refused claim claims nothing
    again.record("book/ch.ipynb", "logs/ch.log")
    assert RunFolder(run).writing == set()
    (run / "book" / "ch.ipynb").write_text("edited by hand")  # recorded, then changed: no longer the run's
    with pytest.raises(BatchError, match="changed since"):
        RunFolder(run).check_writable(["book/ch.ipynb"])
    (run / "book" / "ch.ipynb").unlink()
    folder = RunFolder(run)
    folder.claim("book/ch.ipynb")
    (run / "book" / "ch.ipynb").write_text("partial")
    removed = RunFolder(run).clear()  # --force: the run's files, claimed ones included, never a user's
    assert {"book/ch.ipynb", "logs/ch.log"} <= set(removed)
    assert snapshot(run / "logs") == mine and RunFolder(run).writing == set()


def test_two_processes_recording_into_one_run_folder_lose_no_entry(tmp_path):
    """``render`` and ``pdf`` write into one run folder at once in ``make test``: every change of the
    manifest is made under its lock, so 2 x 60 files recorded by two processes at once are all in it
    (unlocked, each process's read-modify-write of the manifest drops entries of the other's), and a
    third process checking them meanwhile never finds one written but not yet recorded."""
    from bookrun.runfolder import RunFolder, mark_run_folder

    run = tmp_path / "run"
    run.mkdir()
    mark_run_folder(run)
    code = (
        "import sys\nfrom bookrun.runfolder import RunFolder\nf = RunFolder(sys.argv[1])\n"
        "for i in range(60):\n    f.write(f'{sys.argv[2]}/{i}.txt', str(i))\n"
    )
    # and a third that checks, while they write, that every file there is the run's (as pdf checks the
    # mirror while render writes it): under the lock a file is never seen before its record
    check = (
        "import sys, time\nfrom pathlib import Path\nfrom bookrun.runfolder import RunFolder\n"
        "f, t0 = RunFolder(sys.argv[1]), time.monotonic()\n"
        "while time.monotonic() - t0 < 60 and len(list(Path(sys.argv[1]).glob('[ab]/*.txt'))) < 120:\n"
        "    f.check_writable([str(p) for p in Path(sys.argv[1]).glob('[ab]/*.txt')])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(run), name], env=env) for name in ("a", "b")]
    procs.append(subprocess.Popen([sys.executable, "-c", check, str(run)], env=env))
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    files = RunFolder(run).files
    assert {f"{d}/{i}.txt" for d in "ab" for i in range(60)} <= set(files)
