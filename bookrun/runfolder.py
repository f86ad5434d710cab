"""Run folders: where the batch, ``render`` and the chapter tests write, and what they own there.

A run folder is made by the batch (``_build/runs/<scale>-<time>/`` or ``--out``),
by ``render --output`` or by the chapter tests' ``--executed-dir``, and carries
a marker, :data:`RUN_MARKER`. It owns only what was written into it: every file
the batch, a render or the chapter tests write is recorded with its SHA-256 in
the folder's manifest, :data:`MANIFEST` (:class:`RunFolder`), and

* ``--force`` removes exactly the recorded files whose bytes are still those
  written (:meth:`RunFolder.clear`), and only after checking them all: a file
  recorded but changed since (an edited ``_toc.yml``) stops it before anything
  is removed, and a file that is not recorded (a user's notes under ``book/`` or
  ``logs/``) is never touched; a folder is removed only when emptied of
  recorded files, never whole;
* a file is written only where nothing is, or over a file of the manifest that
  is unchanged (:meth:`RunFolder.check_writable`, checked for every path a run
  will write before it starts);
* no symbolic link is followed out of the folder, for reading or writing: a
  run folder that holds a link leading outside it is refused
  (:meth:`RunFolder.links_out`), and every write checks that its target and
  the folders above it resolve inside the run folder;
* the repository, its chapters' folders, the folders above them and a folder
  inside them or ``.git`` are never a run folder (:func:`unsafe_run_folder`).

Files written by other processes (the chapters' notebooks by the Papermill
worker, the figures' CSVs by the chapters, the HTML by Jupyter Book) are
claimed before such a process starts where their paths are known
(:meth:`RunFolder.claim`: a chapter's notebook, log and result, listed as
``writing`` in the manifest until recorded, so that a batch killed mid-chapter,
``SIGKILL`` included, resumes over its own partial files), and recorded after
they finish, as the files under a folder that are new or
changed since a :meth:`RunFolder.snapshot` taken before (:meth:`RunFolder.adopt`):
a file of a user's that was already there, and that they did not rewrite, is
not claimed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import tempfile
from pathlib import Path

from .chapters import BatchError, toc_files

__all__ = [
    "RUN_MARKER",
    "MANIFEST",
    "RunFolder",
    "write_json",
    "read_record",
    "runs",
    "latest_complete_run",
    "RunLock",
    "mark_run_folder",
    "is_run_folder",
    "unsafe_run_folder",
    "check_run_folder",
]

#: The name of the file that makes a folder a run folder, written by the batch (and by the
#: chapter tests' ``--executed-dir`` and ``render --output``) when it makes the folder.
RUN_MARKER = ".gelib-run"
#: The manifest of a run folder, naming every file written there with its SHA-256.
MANIFEST = ".gelib-files.json"
#: Names that the folder's own machinery keeps: never user files, never in the manifest.
_OWN = (RUN_MARKER, MANIFEST, MANIFEST + ".tmp", ".lock", MANIFEST + ".lock")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_bytes(path: Path, data: bytes) -> None:
    """``data`` into ``path`` through a temporary file of the same folder renamed over it:
    a reader (or a crash) never sees half a file. Mode ``0666 & ~umask``, as ``open`` gives."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` atomically (a temporary file renamed over ``path``). Strict JSON (no NaN)."""
    _atomic_bytes(Path(path), json.dumps(data, indent=1, allow_nan=False).encode())


def read_record(run_dir: Path) -> dict | None:
    """The run's ``record.json``, or ``None`` if it is missing or unreadable."""
    try:
        data = json.loads((Path(run_dir) / "record.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class RunFolder:
    """A run folder and its manifest (:data:`MANIFEST`): what the batch, a render or the
    chapter tests wrote there (paths relative to the folder, with their SHA-256)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).resolve()
        self.files: dict[str, str] = {}
        self.writing: set[str] = set()  # claimed by a process that has not finished (RunFolder.claim)
        self._held = 0  # the depth of this object's hold on the manifest's lock (RunFolder._locked)
        self.legacy = False  # a run folder made before the manifest existed
        self._load()

    @contextlib.contextmanager
    def _locked(self):
        """Hold the manifest's lock (``flock`` on ``MANIFEST.lock`` beside it; re-entrant for this object):
        every change of the manifest reads it, changes it and saves it inside, so that two commands
        writing into one run folder at once (``render`` and ``pdf`` in ``make test``) lose no entry of
        each other's. Where the lock cannot be had (no ``fcntl``; a folder not yet made, or read-only),
        the change goes on unlocked, as before."""
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        try:
            import fcntl

            fd = os.open(self.path / (MANIFEST + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        except (ImportError, OSError):
            fd = None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._held = 1
            yield
        finally:
            self._held = 0
            if fd is not None:
                os.close(fd)  # releases the lock

    def _load(self) -> None:
        """Read the manifest again (several parts of one run each hold a :class:`RunFolder`)."""
        try:
            data = json.loads((self.path / MANIFEST).read_text())
            self.files = {str(k): str(v) for k, v in data["files"].items()}
            self.writing = {str(r) for r in data.get("writing", [])}
            self.legacy = False
        except FileNotFoundError:
            self.files, self.writing = {}, set()
            self.legacy = is_run_folder(self.path)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise BatchError(f"{self.path / MANIFEST} cannot be read: the run folder's record of its files") from None

    # --- where a path leads ------------------------------------------------------

    def rel(self, path: str | os.PathLike) -> str:
        """``path`` (absolute, or relative to the folder) as a path relative to it; a
        :class:`~bookrun.chapters.BatchError` if it leads outside (through ``..`` or a symbolic link)."""
        p = Path(path)
        full = p if p.is_absolute() else self.path / p
        parent = full.parent.resolve()
        if parent != self.path and self.path not in parent.parents:
            raise BatchError(f"{full} leads outside the run folder {self.path}; nothing was written")
        if full.is_symlink():
            raise BatchError(f"{full} is a symbolic link; the batch never writes through one")
        return str((parent / full.name).relative_to(self.path))

    def links_out(self) -> list[str]:
        """The symbolic links in the folder (at any depth) that lead outside it, or nowhere."""
        found = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                if p.is_symlink():
                    target = p.resolve()
                    if not target.exists() or (target != self.path and self.path not in target.parents):
                        found.append(str(p.relative_to(self.path)))
        return sorted(found)

    def check_links(self) -> None:
        """Refuse a folder whose entries lead outside it."""
        out = self.links_out()
        if out:
            shown = ", ".join(out[:5]) + (f" and {len(out) - 5} more" if len(out) > 5 else "")
            raise BatchError(
                f"{self.path} holds symbolic links that lead outside it ({shown}); the batch never reads or writes "
                "through them: remove them or give another run folder"
            )

    # --- ownership ---------------------------------------------------------------

    def owns(self, rel: str) -> bool:
        """Whether ``rel`` may be written or removed: missing, recorded and unchanged, or claimed by a
        process of the run that never finished (:meth:`claim`)."""
        p = self.path / rel
        if p.is_symlink():
            return False
        if not p.exists():
            return True
        if rel in self.writing:
            return p.is_file()
        return p.is_file() and rel in self.files and _sha256(p) == self.files[rel]

    def check_writable(self, paths) -> None:
        """Refuse, before anything is written, when one of ``paths`` holds what the batch did
        not write (a user's file, or one of the run's files changed since it was written). Under the
        manifest's lock: a file another command is writing is seen with its record, never before it."""
        with self._locked():
            self._load()
            foreign = [r for r in (self.rel(p) for p in paths) if not self.owns(r)]
        if foreign:
            shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
            raise BatchError(
                f"{self.path} holds files the batch did not write or that changed since ({shown}); the batch "
                "never overwrites them: move them away or give another run folder"
            )

    def save(self) -> None:
        data: dict = {"files": dict(sorted(self.files.items()))}
        if self.writing:
            data["writing"] = sorted(self.writing)
        write_json(self.path / MANIFEST, data)

    def claim(self, *paths: str | os.PathLike) -> None:
        """Claim ``paths`` for a process of the run that is about to write them (a chapter's worker and
        its kernel): until :meth:`record` records them they are the run's whatever their bytes, so that a
        run killed before it could record them (``SIGKILL``, a power cut) resumes over its own partial
        files. Each path must be :meth:`owns`-writable now (refused otherwise, nothing claimed)."""
        with self._locked():
            self._load()
            rels = [self.rel(p) for p in paths]
            self.check_writable(rels)
            self.writing.update(rels)
            self.save()

    def record(self, *paths: str | os.PathLike, save: bool = True) -> None:
        """Record the files ``paths`` (a folder: every file under it) as written by the run."""
        with self._locked():
            self._load()
            for path in paths:
                rel = self.rel(path)
                full = self.path / rel
                self.writing.discard(rel)
                if full.is_dir():
                    for dirpath, _dirs, names in os.walk(full):
                        for name in names:
                            q = Path(dirpath) / name
                            if q.is_file() and not q.is_symlink():
                                self.files[str(q.relative_to(self.path))] = _sha256(q)
                elif full.is_file():
                    self.files[rel] = _sha256(full)
            if save:
                self.save()

    def write(self, path: str | os.PathLike, data: str | bytes) -> Path:
        """Write ``data`` to ``path`` in the folder, atomically, and record it; refused where
        the path holds what the run did not write (:meth:`owns`) or leads outside."""
        with self._locked():
            self._load()
            rel = self.rel(path)
            if not self.owns(rel):
                raise BatchError(f"{self.path / rel} was not written by the batch (or changed since); it is kept")
            full = self.path / rel
            full.parent.mkdir(parents=True, exist_ok=True)
            self.rel(full)  # the folders just made cannot lead out, but a folder that was there might
            _atomic_bytes(full, data.encode() if isinstance(data, str) else data)
            self.record(rel)
            return full

    def remove(self, path: str | os.PathLike) -> None:
        """Remove ``path`` if the run wrote it and it is unchanged (else leave it)."""
        with self._locked():
            self._load()
            rel = self.rel(path)
            full = self.path / rel
            if full.is_file() and (rel in self.files or rel in self.writing) and self.owns(rel):
                full.unlink()
            if not full.exists() and (self.files.pop(rel, None) is not None or rel in self.writing):
                self.writing.discard(rel)
                self.save()

    def snapshot(self, folder: str | os.PathLike) -> dict[str, tuple[int, int]]:
        """``{relative path: (size, mtime_ns)}`` of the files under ``folder`` (for :meth:`adopt`)."""
        full = self.path / self.rel(folder) if str(folder) not in ("", ".") else self.path
        out = {}
        for dirpath, _dirs, names in os.walk(full):
            for name in names:
                q = Path(dirpath) / name
                if not q.is_symlink():
                    st = q.stat()
                    out[str(q.relative_to(self.path))] = (st.st_size, st.st_mtime_ns)
        return out

    def adopt(self, folder: str | os.PathLike, before: dict[str, tuple[int, int]]) -> None:
        """Record the files under ``folder`` that are new or changed since ``before``
        (:meth:`snapshot`): what another process (Papermill, a chapter, Jupyter Book) wrote there."""
        with self._locked():
            self._load()
            now = self.snapshot(folder)
            changed = [rel for rel, st in now.items() if before.get(rel) != st or rel in self.files]
            for rel in changed:
                if Path(rel).name not in _OWN:
                    self.files[rel] = _sha256(self.path / rel)
                    self.writing.discard(rel)
            self.save()

    def clear(self) -> list[str]:
        """Remove every recorded file (``--force``), after checking that each is unchanged;
        then the folders emptied by it. A file the run did not write is never touched.
        Returns the paths removed."""
        with self._locked():
            self._load()
            if self.legacy:
                raise BatchError(
                    f"{self.path} was made by an earlier version of the batch, which kept no record of the files it "
                    f"wrote ({MANIFEST}): --force cannot tell them from yours; give another --out"
                )
            changed = [rel for rel in self.files if (self.path / rel).exists() and not self.owns(rel)]
            if changed:
                shown = ", ".join(sorted(changed)[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
                raise BatchError(
                    f"--force: {self.path} holds files the batch wrote that changed since ({shown}); nothing was "
                    "removed: move them away or give another --out"
                )
            removed, folders = [], set()
            for rel in sorted(set(self.files) | self.writing):
                full = self.path / rel
                if full.is_file() and not full.is_symlink():
                    full.unlink()
                    removed.append(rel)
                folders |= {self.path / p for p in Path(rel).parents if str(p) != "."}
            for folder in sorted(folders, key=lambda p: -len(p.parts)):  # deepest first, only if empty
                try:
                    folder.rmdir()
                except OSError:
                    pass
            self.files, self.writing = {}, set()
            self.save()
            return removed


def runs(build: Path, scale: str) -> list[Path]:
    """The run folders of ``scale`` under ``build/runs``, oldest first."""
    return sorted(p for p in (Path(build) / "runs").glob(f"{scale}-*") if (p / "record.json").exists())


def latest_complete_run(build: Path, scale: str, parameters: dict, exclude: Path) -> Path | None:
    """The newest run of ``scale`` with these parameters in which every chapter ran."""
    for run in reversed(runs(build, scale)):
        rec = read_record(run)
        if run.resolve() != Path(exclude).resolve() and rec and rec.get("complete") and rec["parameters"] == parameters:
            return run
    return None


class RunLock:
    """An exclusive lock on a run folder (``.lock``, ``flock``), held while a batch uses it."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / ".lock"
        self.file = None

    def acquire(self) -> None:
        import fcntl

        if self.path.is_symlink():
            raise BatchError(f"{self.path} is a symbolic link; the batch never writes through one")
        self.file = open(self.path, "a+")  # noqa: SIM115 - held open for the run
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.seek(0)
            pid = self.file.read().strip() or "?"
            self.file.close()
            self.file = None
            raise BatchError(f"{self.path.parent} is in use by another batch (pid {pid})") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        """Unlock and remove the lock file; never raises (a folder made read-only, or removed,
        under the batch keeps its ``.lock``, which no longer locks anything)."""
        if self.file:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None
            try:
                self.path.unlink(missing_ok=True)
            except OSError:
                pass


def mark_run_folder(run_dir: Path, made_by: str = "python -m gelib batch") -> None:
    """Write :data:`RUN_MARKER` and an empty :data:`MANIFEST` into ``run_dir`` (kept if there)."""
    run_dir = Path(run_dir)
    marker = run_dir / RUN_MARKER
    if not marker.exists():
        text = json.dumps({"made_by": made_by, "created": _dt.datetime.now().isoformat(timespec="seconds")}) + "\n"
        _atomic_bytes(marker, text.encode())
    if not (run_dir / MANIFEST).exists():
        write_json(run_dir / MANIFEST, {"files": {}})


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a folder a batch (or the chapter tests, or a render) made: it has
    :data:`RUN_MARKER`, or the ``record.json`` of a batch (a run made before the marker)."""
    path = Path(path)
    if (path / RUN_MARKER).is_file() and not (path / RUN_MARKER).is_symlink():
        return True
    record = read_record(path)
    return isinstance(record, dict) and {"scale", "parameters", "chapters"} <= set(record)


def _source_folders(root: Path) -> set[Path]:
    """The folders that hold the book's pages (``book/``), resolved."""
    return {(root / f).parent.resolve() for f in toc_files(root)} - {root.resolve()}


def unsafe_run_folder(root: Path, path: Path) -> str | None:
    """Why ``path`` can never be a run folder of the book at ``root``, or ``None``.

    Not the repository (``root``) or a folder above it, not a folder of the
    book's pages (``book/``) or one above or inside it, not inside ``.git``:
    the batch writes and clears run folders, and these hold what it did not write."""
    root, path = Path(root).resolve(), Path(path).resolve()
    if path == root:
        return f"{path} is the book's own folder (the repository)"
    if path in root.parents:
        return f"{path} holds the book's folder {root}"
    if (root / ".git") in (path, *path.parents):
        return f"{path} is inside the repository's .git"
    for src in sorted(_source_folders(root)):
        if path == src or path in src.parents:
            return f"{path} holds the book's chapters ({src})"
        if src in path.parents:
            return f"{path} is inside the book's chapters folder {src}"
    return None


def check_run_folder(root: Path, path: Path) -> None:
    """Raise :class:`~bookrun.chapters.BatchError` unless ``path`` is an existing run folder that is safe to read
    and write (:func:`is_run_folder`, not :func:`unsafe_run_folder`, no link leading out of it);
    ``render`` calls it before writing anything."""
    path = Path(path)
    why = unsafe_run_folder(root, path)
    if why:
        raise BatchError(f"{why}: not a run folder; give a folder made by the batch or the chapter tests")
    if not path.is_dir():
        raise BatchError(f"{path} is not a folder of executed chapters")
    if not is_run_folder(path):
        raise BatchError(
            f"{path} is not a run folder (it has no {RUN_MARKER}, which python -m gelib batch and the "
            "chapter tests' --executed-dir write); nothing was written"
        )
    RunFolder(path).check_links()
