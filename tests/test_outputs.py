"""bookrun.outputs: where a command may write, checked before computing, and files written whole."""

import ast
import os
import stat
import sys
from pathlib import Path

import pytest

import bookrun
from bookrun import outputs
from bookrun.outputs import (
    STDOUT,
    OutputError,
    check_output_file,
    check_output_folder,
    repository_sources,
    write_atomic,
    write_output,
)

ROOT = Path(bookrun.__file__).resolve().parent.parent


def test_the_sources_are_the_clones_own_folders_and_files():
    sources = repository_sources()
    names = {p.name for p in sources}
    assert names == {".git", "book", "gelib", "bookrun", "tests", "tools", "_config.yml", "_toc.yml"}
    assert all(p.parent == ROOT.resolve() for p in sources)
    assert repository_sources(ROOT) == sources


def test_the_module_is_a_leaf_of_the_standard_library():
    tree = ast.parse(Path(outputs.__file__).read_text())
    imported = {a.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported


# --- a file: refused before anything is computed ---------------------------------------------


def test_a_writable_file_and_stdout_pass(tmp_path):
    assert check_output_file(STDOUT, "--csv") == STDOUT
    assert check_output_file(tmp_path / "new.csv", "--csv") == tmp_path / "new.csv"
    (tmp_path / "old.csv").write_text("x")
    assert check_output_file(str(tmp_path / "old.csv"), "--csv") == tmp_path / "old.csv"  # replacing: the caller's call
    assert [p.name for p in tmp_path.iterdir()] == ["old.csv"]  # the probe is gone


def refuses_file(path, message):
    with pytest.raises(OutputError, match=message) as e:
        check_output_file(path, "--csv")
    assert isinstance(e.value, ValueError) and "--csv" in str(e.value)


def test_file_destinations_that_are_refused(tmp_path):
    refuses_file("", "needs a file name")
    refuses_file(tmp_path, "is a folder")
    refuses_file(tmp_path / "missing" / "x.csv", "there is no folder")
    refuses_file(os.devnull, "not a regular file")
    target = tmp_path / "target.csv"
    target.write_text("mine")
    (tmp_path / "link.csv").symlink_to(target)
    refuses_file(tmp_path / "link.csv", "symbolic link")
    (tmp_path / "dangling.csv").symlink_to(tmp_path / "nowhere.csv")
    refuses_file(tmp_path / "dangling.csv", "symbolic link")
    assert target.read_text() == "mine"


@pytest.mark.parametrize("where", ["book/x.csv", ".git/x.csv", "gelib/x.csv", "tests/x.csv", "_toc.yml", "_config.yml"])
def test_a_file_in_the_repositorys_sources_is_refused(where):
    path = ROOT / where
    existed = path.exists()
    refuses_file(path, "inside the repository's own")
    assert path.exists() == existed


def test_a_file_reached_through_a_linked_folder_into_the_sources_is_refused(tmp_path):
    (tmp_path / "pages").symlink_to(ROOT / "book")
    refuses_file(tmp_path / "pages" / "x.csv", "inside the repository's own book")


def test_an_unwritable_folder_is_refused_by_the_probe(tmp_path, monkeypatch):
    """os.access says yes to root; the probe file says what a read-only mount would."""
    import tempfile

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    refuses_file(tmp_path / "x.csv", "cannot write --csv .*Permission denied")
    monkeypatch.undo()
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    refuses_file(tmp_path / "x.csv", "Permission denied")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path):
    tmp_path.chmod(0o555)
    try:
        refuses_file(tmp_path / "x.csv", "Permission denied")
    finally:
        tmp_path.chmod(0o755)


# --- a folder ---------------------------------------------------------------------------------


def test_folder_destinations(tmp_path, monkeypatch):
    assert check_output_folder(tmp_path / "a" / "b", "--out") == tmp_path / "a" / "b"
    assert not (tmp_path / "a").exists()  # nothing created
    for path, message in [
        ("", "needs a folder name"),
        (ROOT / ".git" / "report", "inside the repository's own .git"),
        (ROOT / "book", "inside the repository's own book"),
        (ROOT / "bookrun" / "new" / "deeper", "inside the repository's own bookrun"),
    ]:
        with pytest.raises(OutputError, match=message):
            check_output_folder(path, "--out")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        check_output_folder(tmp_path / "file", "--out")
    with pytest.raises(OutputError, match="file is not a folder"):
        check_output_folder(tmp_path / "file" / "sub", "--out")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(OutputError, match="symbolic link"):
        check_output_folder(tmp_path / "link", "--out")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(OutputError, match=r"cannot write the folder .*: Permission denied \(in "):
        check_output_folder(tmp_path / "new", "--out")


# --- writing: whole or not at all, with the user's modes --------------------------------------


@pytest.fixture
def umask():
    """Set the umask for one test, and put the old one back."""
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_has_the_umasks_mode_and_a_replaced_one_keeps_its_own(tmp_path, umask):
    umask(0o022)
    write_atomic(tmp_path / "a.csv", "x,y\n")
    assert mode(tmp_path / "a.csv") == 0o644 and (tmp_path / "a.csv").read_text() == "x,y\n"
    umask(0o077)
    write_atomic(tmp_path / "b.csv", b"\x00\x01")
    assert mode(tmp_path / "b.csv") == 0o600 and (tmp_path / "b.csv").read_bytes() == b"\x00\x01"
    (tmp_path / "a.csv").chmod(0o640)
    write_atomic(tmp_path / "a.csv", "new\n")  # --force: the user's mode stays
    assert mode(tmp_path / "a.csv") == 0o640 and (tmp_path / "a.csv").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "b.csv"]  # no temporary file


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "a.csv"
    path.write_text("old")

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.csv"]


def test_write_output_to_stdout_or_a_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_output("-", "a,b\n")
    assert capsys.readouterr().out == "a,b\n"
    assert not (tmp_path / "-").exists()
    write_output(tmp_path / "t.csv", "a,b\n")
    assert (tmp_path / "t.csv").read_text() == "a,b\n"
