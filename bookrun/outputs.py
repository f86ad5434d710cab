"""Where a command may write a file or a folder of its own, checked before anything is computed.

``figure --csv FILE`` and ``report --out DIR`` write what a user names. Before
the first number is computed, :func:`check_output_file` and
:func:`check_output_folder` refuse, with :class:`OutputError` (a
``ValueError``) and a message that names the destination, one that could
never be written, or should never be: an empty name, a folder where a file is
wanted (or the other way round), a symbolic link (wherever it leads: the write
would replace the link, not what the user thinks it names), a device or a
pipe, a folder that does not exist or cannot be written (asked with
``os.access`` and, to be sure, with a probe file created and removed), and a
place inside the repository's own sources (:func:`repository_sources`: its
``.git``, the book's pages, the packages, the tests, the tools, ``_config.yml``
and ``_toc.yml``). ``-`` names standard output, for a file.

:func:`write_atomic` writes a file through a temporary file in the same folder,
renamed into place, so that the destination is the old file or the whole new
one; a new file gets the mode the user's umask gives (``0644`` under ``022``),
a replaced one keeps its own. :func:`write_output` is the same, or standard
output for ``-``.

A leaf of ``bookrun``: it imports only the standard library.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = [
    "STDOUT",
    "OutputError",
    "repository_root",
    "repository_sources",
    "check_output_file",
    "check_output_folder",
    "write_atomic",
    "write_output",
]

#: The file name that means standard output.
STDOUT = "-"

#: The repository's folders and top-level files that no command writes into.
SOURCE_FOLDERS = (".git", "book", "gelib", "bookrun", "tests", "tools")
SOURCE_FILES = ("_config.yml", "_toc.yml")


class OutputError(ValueError):
    """A destination that a command refuses to write (see the module docstring)."""


def repository_root() -> Path:
    """The clone this ``bookrun`` was imported from: the folder above the package."""
    return Path(__file__).resolve().parent.parent


def repository_sources(root: str | Path | None = None) -> tuple[Path, ...]:
    """The paths, resolved, that a command must never write into: the clone's
    ``.git``, ``book/``, ``gelib/``, ``bookrun/``, ``tests/``, ``tools/`` and
    the files ``_config.yml`` and ``_toc.yml`` (``root``: the repository,
    default :func:`repository_root`)."""
    base = Path(root).resolve() if root is not None else repository_root()
    return tuple((base / name).resolve() for name in (*SOURCE_FOLDERS, *SOURCE_FILES))


def _source_holding(path: Path, root: str | Path | None) -> Path | None:
    """The entry of :func:`repository_sources` that ``path`` (resolved) is or lies inside, or ``None``."""
    resolved = path.resolve()
    for src in repository_sources(root):
        if resolved == src or src in resolved.parents:
            return src
    return None


def _unwritable(folder: Path) -> str | None:
    """Why no file can be created in ``folder`` (``Permission denied``), or ``None``:
    ``os.access``, then a probe file created and removed (``os.access`` says yes to
    root, and to anyone on a read-only mount)."""
    if not os.access(folder, os.W_OK | os.X_OK):
        return "Permission denied"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".gelib-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return str(e.strerror or e)
    return None


def check_output_file(path: str | Path, flag: str, root: str | Path | None = None) -> Path | str:
    """Refuse, with :class:`OutputError`, a file destination ``path`` (given as
    ``flag``) that cannot or must not be written; return ``path`` as a
    :class:`~pathlib.Path`, or :data:`STDOUT` for ``-``. Nothing is written,
    except the probe of ``_unwritable``. Whether an existing file may be
    replaced is the caller's decision."""
    text = os.fspath(path)
    if text == STDOUT:
        return STDOUT
    if not text:
        raise OutputError(f"{flag} needs a file name ('-' for standard output), got ''")
    p = Path(text)
    if p.is_symlink():
        raise OutputError(f"{flag} {p} is a symbolic link; give the file itself (a link is never written through)")
    if p.is_dir():
        raise OutputError(f"{flag} {p} is a folder; give a file name in it")
    if p.exists() and not p.is_file():
        raise OutputError(f"{flag} {p} is not a regular file (a device, a pipe or a socket); give a file")
    parent = p.parent
    if not parent.is_dir():
        raise OutputError(f"{flag} {p}: there is no folder {parent}")
    src = _source_holding(p, root)
    if src is not None:
        raise OutputError(
            f"{flag} {p} is inside the repository's own {src.name} ({src}); write it outside the clone's sources"
        )
    why = _unwritable(parent)
    if why:
        raise OutputError(f"cannot write {flag} {p}: {why} (in the folder {parent})")
    return p


def check_output_folder(path: str | Path, flag: str, root: str | Path | None = None) -> Path:
    """Refuse, with :class:`OutputError`, a folder destination ``path`` (given as
    ``flag``, created later if missing) that cannot or must not be written: an
    empty name, a symbolic link, a file, a place inside :func:`repository_sources`,
    and a folder (or, when missing, the nearest folder above it) in which no
    file can be created. Returns ``path`` as a :class:`~pathlib.Path`; nothing is
    created."""
    text = os.fspath(path)
    if not text:
        raise OutputError(f"{flag} needs a folder name, got ''")
    p = Path(text)
    if p.is_symlink():
        raise OutputError(f"{flag} {p} is a symbolic link; give the folder itself (a link is never written through)")
    if p.exists() and not p.is_dir():
        raise OutputError(f"cannot write the folder {p}: it exists and is not a folder")
    src = _source_holding(p, root)
    if src is not None:
        raise OutputError(
            f"{flag} {p} is inside the repository's own {src.name} ({src}); write it outside the clone's sources"
        )
    existing = next((q for q in (p, *p.parents) if q.exists() or q.is_symlink()), None)
    if existing is None:  # nothing above it exists: a relative path in a removed working folder
        raise OutputError(f"cannot write the folder {p}: no folder above it exists")
    if not existing.is_dir():
        raise OutputError(f"cannot write the folder {p}: {existing} is not a folder")
    why = _unwritable(existing)
    if why:
        raise OutputError(f"cannot write the folder {p}: {why}" + ("" if existing == p else f" (in {existing})"))
    return p


def _new_file_mode() -> int:
    """``0o666`` less the process's umask: the mode ``open()`` would give a new file."""
    mask = os.umask(0)  # the only way to read it is to set it: set it back at once
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` (``str``: UTF-8) to ``path`` through a temporary file in the
    same folder, flushed to the disk and renamed into place, so that ``path`` is
    the old file or the whole new one; the temporary file is removed on any
    failure. The file keeps the mode of the file it replaces, and a new one gets
    ``0o666`` less the umask. Returns ``path``."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_output(path: str | Path, text: str) -> None:
    """``text`` to standard output for ``-`` (:data:`STDOUT`), else to the file ``path``
    (:func:`write_atomic`)."""
    if os.fspath(path) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_atomic(path, text)
