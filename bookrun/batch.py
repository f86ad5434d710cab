"""The batch: execute every chapter once with Papermill, then render the book.

``python -m gelib batch --scale {ci,default,paper}``:

1. reads the chapters from ``_toc.yml`` (their order lives there only) and
   checks every ``-p NAME VALUE`` override against the chapters' ``parameters``
   cells before anything runs (a name no selected chapter has is an error; a
   chapter receives only the names it has);
2. executes the chapters with Papermill, several at once (``--jobs``; one per
   CPU core up to 4, one on a GPU), each in a worker process of its own, the
   longest first, ``scale`` and the overrides injected after the ``parameters``
   cell, into a mirror tree ``_build/runs/<scale>-<time>/`` (plain Markdown
   pages are copied; each kernel's log goes to ``logs/<chapter>.log``);
3. records, after every chapter, ``record.json`` (written atomically:
   a temporary file renamed over the old one): parameters, per-chapter
   parameters, status, run time, failing code cell, device, commit, package
   versions and every glued number;
4. renders the mirror tree with Jupyter Book, execution off, into the run's
   own ``<run>/_build/html`` (each chapter executes exactly once); when every
   chapter ran and the rendering succeeded, that copy becomes the book,
   ``_build/html``. A partial run takes the chapters it did not run from the
   latest complete run and stays in its folder, so it never replaces a
   complete book, nor does a failed rendering.

A failing chapter does not stop the others; the run then exits non-zero and
names each failed chapter with its failing code cell. ``--resume`` continues
the latest unfinished run of a scale without redoing finished chapters (also
after a crash or a kill), with the selection the run recorded (chapters, jobs,
render, parameters, timeout); Ctrl-C stops the workers and prints the exact
command that continues the run. A run folder is locked while a batch uses it.

Nothing the batch did not write is ever deleted or overwritten. Every run
folder carries a marker, :data:`RUN_MARKER`, written when the folder is made; a
new run never overwrites an earlier run's results, and ``--out DIR --force``
clears only what a batch writes (:func:`run_entries`) from a folder with the
marker (or an empty one), unless that run is live. The repository, its
chapters' folders, the folders above them and a folder inside them are never a
run folder (:func:`unsafe_run_folder`); ``render`` checks the same before it
writes anything (:func:`check_run_folder`).

The same loading (:func:`load_chapter`) serves nbval through ``conftest.py``.
This module is the engine only; its command line (the flags above) is
:mod:`bookrun.cli.batch`.
"""

from __future__ import annotations

import ast
import copy
import datetime as _dt
import fnmatch
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    # annotations only (nbformat is not a gelib dependency); where nbformat is named, Sphinx
    # reads the annotations as written, so those spell out pathlib.Path (a bare Path does not resolve)
    import pathlib

    import nbformat

__all__ = [
    "BatchError",
    "RUN_MARKER",
    "is_run_folder",
    "run_entries",
    "unsafe_run_folder",
    "check_run_folder",
    "mark_run_folder",
    "resume_command",
    "is_chapter",
    "load_chapter",
    "toc_files",
    "glued_values",
    "chapter_parameters",
    "chapter_overrides",
    "default_jobs",
    "execute_chapter",
    "run_batch",
    "estimate",
    "format_estimate",
    "planned_layers",
    "chapter_rates",
    "prepare_mirror",
    "fill_missing_chapters",
    "render_book",
]

#: Where neither an earlier run of the scale nor a reference run of it on this kind of
#: machine (:mod:`bookrun.reference_times`) gives the chapters' times, these start first,
#: slowest first: at the default scale the finite-size table (every row of Table 2 at
#: its exact dimensions) takes several minutes, the learning chapters about two each,
#: every other chapter about one.
SLOW_FIRST: tuple[str, ...] = ("finite_size_table", "readout_learning", "parameter_sharing")

ROOT_FILES = ("_config.yml", "_toc.yml")
#: The name of the file that makes a folder a run folder, written by the batch (and by the
#: chapter tests' ``--executed-dir``) when it makes the folder. ``--force`` clears, and
#: ``render`` writes into, only a folder that has it (or a ``record.json`` of a batch, as
#: runs made before the marker existed have).
RUN_MARKER = ".gelib-run"
VERSIONED = ("gelib", "jax", "jaxlib", "numpy", "scipy", "matplotlib", "papermill", "jupyter-book", "myst-nb")


class BatchError(SystemExit):
    """A run that cannot start: nothing to resume, other parameters, or a run
    folder in the way.  A :class:`SystemExit`, so that a script calling
    :func:`run_batch` ends with the message; ``python -m gelib batch`` reports it
    as ``python -m gelib batch: error: <message>``."""


# --- chapters ---------------------------------------------------------------------


def is_chapter(path: str | Path) -> bool:
    """A ``.md`` file whose front matter declares a Jupyter kernel."""
    path = Path(path)
    if path.suffix != ".md" or not path.is_file():
        return False
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "\nkernelspec:" in head


def load_chapter(path: str | pathlib.Path, parameters: dict | None = None) -> nbformat.NotebookNode:
    """The chapter as a notebook, with ``parameters`` injected after its parameters cell."""
    import jupytext
    from papermill.parameterize import parameterize_notebook

    nb = jupytext.read(str(path))
    # The metadata Papermill adds when it loads an .ipynb (papermill.iorw.load_notebook_node).
    nb.metadata.setdefault("papermill", {"default_parameters": {}, "parameters": {}, "environment_variables": {}})
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
        cell.metadata.setdefault("papermill", {})
    if not any("parameters" in c.metadata["tags"] for c in nb.cells):
        raise ValueError(f"{path}: no cell tagged 'parameters'")
    if parameters:
        nb = parameterize_notebook(copy.deepcopy(nb), dict(parameters))
    return nb


def toc_files(root: Path) -> list[str]:
    """The book's files in ``_toc.yml`` order (paths without extension)."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                files.append(e["file"])
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def glued_values(nb: nbformat.NotebookNode) -> dict:
    """Every value a notebook glued with myst-nb (``{name: text/plain}``)."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name is not None:
                data = o.get("data", {})  # display=False glue prefixes the mime types
                text = [v for k, v in data.items() if k.endswith("text/plain")]
                out[name] = text[0] if text else sorted(data)
    return out


# --- one run ------------------------------------------------------------------------


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def _commit(root: Path) -> str | None:
    """The book's git commit (``+dirty`` when the tree has changes), or None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=20)
        if head.returncode:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True, timeout=20)
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _device() -> tuple[str, bool]:
    """The JAX devices the chapters will see, and whether they are accelerators.

    Asked in a child process: initialising JAX here would hold GPU memory for
    the whole run, memory the chapters' kernels then lack."""
    code = (
        "import jax; d = jax.devices(); print(f'{len(d)} x {d[0].platform} ({d[0].device_kind})'); print(d[0].platform)"
    )
    try:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        text, platform_ = res.stdout.strip().splitlines()[-2:]
        return text, platform_ != "cpu"
    except (OSError, subprocess.SubprocessError, ValueError):
        return "unknown", False


#: The size at which JAX's compilation cache (:func:`compilation_cache_env`) drops its least
#: recently used entries: a ``make test`` wrote 44 MB into an empty one.
COMPILATION_CACHE_BYTES = 1 << 30


def compilation_cache_env(root: str | Path, environ: dict | None = None) -> dict[str, str]:
    """The environment variables that give the chapters' kernels (and the tests) one shared
    JAX compilation cache, ``<root>/_build/jax-cache``, or ``{}`` where
    ``JAX_COMPILATION_CACHE_DIR`` is already set in ``environ`` (default ``os.environ``:
    the user's choice wins, an empty value turns the cache off).

    At the CPU scales most of a chapter's time is XLA compiling (a chapter at the
    default scale ran in 58 s with an empty cache and 33 s with a full one), and
    the chapters compile many of the same functions at the same shapes, so even a
    first build, which starts with an empty cache, gains.
    Every compilation is cached (no minimum compile time); the cache keeps at most
    :data:`COMPILATION_CACHE_BYTES`, dropping the least recently used entries under
    a file lock that the concurrent kernels share (with ``filelock`` installed, as
    ``requirements.txt`` has it; without, the cache is not bounded). An entry is keyed by the
    computation, the JAX version and the device, so it is never used for anything
    else; ``make clean`` removes it with the rest of ``_build``."""
    environ = os.environ if environ is None else environ
    if "JAX_COMPILATION_CACHE_DIR" in environ:
        return {}
    env = {
        "JAX_COMPILATION_CACHE_DIR": str(Path(root).resolve() / "_build" / "jax-cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    import importlib.util

    if importlib.util.find_spec("filelock") is not None:  # JAX evicts only under filelock's lock
        env["JAX_COMPILATION_CACHE_MAX_SIZE"] = str(COMPILATION_CACHE_BYTES)
    return env


def default_jobs(accelerator: bool) -> int:
    """Chapters executed at once: one on an accelerator (each kernel would claim
    the device's memory), else one per CPU core up to 4 (a chapter at the default
    scale keeps about one core busy)."""
    if accelerator:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def chapter_parameters(path: str | Path) -> dict:
    """The names a chapter's ``parameters`` cell assigns, with their default
    values (``None`` where the default is not a literal)."""
    nb = load_chapter(path)
    cell = next(c for c in nb.cells if "parameters" in c.metadata["tags"])
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    try:
                        out[target.id] = ast.literal_eval(node.value)
                    except ValueError:
                        out[target.id] = None
    return out


def _check_value(name: str, value, default, chapter: str) -> None:
    if default is None or value is None:
        return
    kinds = {bool: (bool,), int: (int,), float: (int, float), str: (str,), tuple: (list, tuple), list: (list, tuple)}
    want = kinds.get(type(default))
    ok = want is None or (isinstance(value, want) and not (isinstance(value, bool) and bool not in want))
    if not ok:
        raise BatchError(
            f"-p {name} {json.dumps(value)}: {chapter} expects {type(default).__name__} (its default is {default!r})"
        )


def _data_dir(root: Path, chapter: str, run_dir: Path) -> dict:
    """``{"data_dir": run_dir/data/NAME}`` for a chapter whose parameters cell has ``data_dir`` (it
    writes its figures' numbers there as CSV, :func:`bookrun.glue.figure_csv`), else ``{}``."""
    if "data_dir" not in chapter_parameters(root / f"{chapter}.md"):
        return {}
    return {"data_dir": str(Path(run_dir) / "data" / Path(chapter).name)}


def chapter_overrides(root: Path, chapters: list[str], parameters: dict) -> dict[str, dict]:
    """The overrides each chapter receives: only the names its parameters cell has.

    Raises :class:`BatchError` for a name no selected chapter has (naming the
    chapters of the book that do) or a value of the wrong type."""
    if "data_dir" in parameters:
        raise BatchError("-p data_dir: set by the batch itself (the run folder's data/CHAPTER), not a user parameter")
    own = {f: chapter_parameters(root / f"{f}.md") for f in chapters}
    for name, value in parameters.items():
        having = [f for f in chapters if name in own[f]]
        if not having:
            book = [f for f in toc_files(root) if is_chapter(root / f"{f}.md")]
            elsewhere = [Path(f).name for f in book if name in chapter_parameters(root / f"{f}.md")]
            hint = f"; the chapters that have it: {', '.join(elsewhere)}" if elsewhere else ""
            raise BatchError(f"-p {name}: not a parameter of any chapter selected{hint}")
        for f in having:
            _check_value(name, value, own[f][name], Path(f).name)
    return {f: {k: v for k, v in parameters.items() if k in own[f]} for f in chapters}


def _failing_cell(nb) -> tuple[int | None, str | None]:
    """The failing code cell: its number among the chapter's own code cells
    (1-based, as in its source: Papermill's injected cell is not counted) and its source."""
    k = 0
    for cell in nb.cells:
        if cell.cell_type != "code" or "injected-parameters" in cell.metadata.get("tags", []):
            continue
        k += 1
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return k, cell.source
    return None, None


def execute_chapter(
    source: str | Path, target: str | Path, parameters: dict, cwd: str | Path, timeout: int | None = None
) -> dict:
    """Execute one chapter with Papermill into ``target`` (``.ipynb``).

    Returns the record entry: ``status`` (``ok`` or ``failed``), ``glued``,
    ``seconds`` and, on failure, ``error``, ``cell`` (the failing code cell,
    counted among code cells from 1) and ``cell_source``."""
    import nbformat
    import papermill

    t0 = time.perf_counter()
    entry: dict = {}
    try:
        nb = load_chapter(source, parameters)
        executed = papermill.execute_notebook(
            nb,
            str(target),
            kernel_name="python3",
            cwd=str(cwd),
            progress_bar=False,
            log_output=False,
            execution_timeout=timeout,
        )
        entry.update(status="ok", glued=glued_values(executed))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a chapter's failure is recorded, not raised
        entry.update(
            status="failed",
            error=f"{getattr(exc, 'ename', type(exc).__name__)}: {getattr(exc, 'evalue', exc)}"[:2000],
            cell=None,
            cell_source=None,
        )
        if Path(target).exists():
            failed_nb = nbformat.read(str(target), as_version=4)
            entry["cell"], entry["cell_source"] = _failing_cell(failed_nb)
            entry["glued"] = glued_values(failed_nb)
        if entry["cell"] is None:
            entry["traceback"] = traceback.format_exc()[-4000:]
    entry["seconds"] = round(time.perf_counter() - t0, 2)
    return entry


def _worker(spec_path: str) -> int:
    """A batch worker (``python bookrun/batch.py SPEC``): executes one chapter and
    writes its record entry next to the spec. Ctrl-C belongs to the batch, which
    ends a worker with SIGTERM; the kernel is shut down on the way out."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    spec = json.loads(Path(spec_path).read_text())
    try:
        entry = execute_chapter(spec["source"], spec["target"], spec["parameters"], spec["cwd"], spec["timeout"])
    except KeyboardInterrupt:
        return 130
    _write_json(Path(spec["result"]), entry)
    return 0


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` atomically: a temporary file renamed over ``path``, so a
    reader (or a crash) never sees half a file. Strict JSON (no NaN)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, allow_nan=False))
    tmp.replace(path)


def _write_status_page(run_dir: Path, record: dict) -> None:
    rows = ["| chapter | status | time (s) | failing code cell | executed in |", "|---|---|---|---|---|"]
    for name, ch in record["chapters"].items():
        rows.append(
            f"| `{name}` | {ch['status']} | {ch.get('seconds', 0):.1f} | {ch.get('cell') or ''} "
            f"| {ch.get('from_run', 'this run')} |"
        )
    text = (
        "(status)=\n# Execution status\n\n"
        f"Executed by `python -m gelib batch` at scale **{record['scale']}** on "
        f"{record['device']}, started {record['started']}, commit `{record.get('commit')}`; parameters "
        f"`{json.dumps(record['parameters'])}`. Total "
        f"{sum(c.get('seconds', 0) for c in record['chapters'].values()):.0f} s.\n\n"
        + "\n".join(rows)
        + "\n\nPackage versions: "
        + ", ".join(f"{k} {v}" for k, v in record["versions"].items())
        + ".\n\nThe run's `record.json` also holds every number each chapter glued.\n"
    )
    status = run_dir / "book" / "status.md"
    if status.exists():
        status.write_text(text)


def _runs(build: Path, scale: str) -> list[Path]:
    return sorted(p for p in (build / "runs").glob(f"{scale}-*") if (p / "record.json").exists())


def _read_record(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / "record.json").read_text())
    except (OSError, ValueError):
        return None


def _latest_complete_run(build: Path, scale: str, parameters: dict, exclude: Path) -> Path | None:
    """The newest run of ``scale`` with these parameters in which every chapter ran."""
    for run in reversed(_runs(build, scale)):
        rec = _read_record(run)
        if run.resolve() != exclude.resolve() and rec and rec.get("complete") and rec["parameters"] == parameters:
            return run
    return None


class _Lock:
    """An exclusive lock on a run folder (``.lock``, ``flock``), held while a batch uses it."""

    def __init__(self, run_dir: Path):
        self.path = run_dir / ".lock"
        self.file = None

    def acquire(self) -> None:
        import fcntl

        self.file = open(self.path, "a+")  # noqa: SIM115 - held open for the run
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.seek(0)
            pid = self.file.read().strip() or "?"
            self.file.close()
            raise BatchError(f"{self.path.parent} is in use by another batch (pid {pid})") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        if self.file:
            self.file.close()
            self.path.unlink(missing_ok=True)


def mark_run_folder(run_dir: Path, made_by: str = "python -m gelib batch") -> None:
    """Write :data:`RUN_MARKER` into ``run_dir`` (kept if it is there already)."""
    marker = Path(run_dir) / RUN_MARKER
    if not marker.exists():
        marker.write_text(
            json.dumps({"made_by": made_by, "created": _dt.datetime.now().isoformat(timespec="seconds")}) + "\n"
        )


def is_run_folder(path: Path) -> bool:
    """Whether ``path`` is a folder a batch (or the chapter tests) made: it has
    :data:`RUN_MARKER`, or the ``record.json`` of a batch (a run made before the marker)."""
    path = Path(path)
    if (path / RUN_MARKER).is_file():
        return True
    record = _read_record(path)
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


def run_entries(root: Path) -> set[str]:
    """The names a batch writes at the top of a run folder: all that ``--force`` removes."""
    tops = set()
    for f in toc_files(root):
        parts = Path(f).parts
        tops |= {parts[0]} if len(parts) > 1 else {f"{parts[0]}.md", f"{parts[0]}.ipynb"}
    # "data": the figures' numbers the chapters write there (:func:`_data_dir`), so that a forced
    # rerun never leaves an earlier run's CSV beside this run's
    own = {"record.json", "record.json.tmp", "logs", ".work", "_build", ".write-test", "data", RUN_MARKER}
    return tops | set(ROOT_FILES) | own


def check_run_folder(root: Path, path: Path) -> None:
    """Raise :class:`BatchError` unless ``path`` is an existing run folder that is safe to write
    (:func:`is_run_folder`, not :func:`unsafe_run_folder`); ``render`` calls it before writing anything."""
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


def _open_run_dir(root: Path, run_dir: Path, fresh: bool, force: bool) -> _Lock:
    """Create (or, with ``force``, clear) the run folder and lock it; a clear
    :class:`BatchError` when it cannot be written, is in use, or holds what a batch did not write."""
    why = unsafe_run_folder(root, run_dir)
    if why:
        raise BatchError(f"{why}; the batch never writes there: give another --out")
    existed = run_dir.exists()
    if existed and not run_dir.is_dir():
        raise BatchError(f"{run_dir} exists and is not a folder; give another --out")
    occupied = existed and any(run_dir.iterdir())
    if fresh and occupied and not force:
        raise BatchError(f"{run_dir} exists; use --resume, --force or another --out")
    if fresh and occupied and not is_run_folder(run_dir):
        raise BatchError(
            f"{run_dir} was not made by the batch (no {RUN_MARKER}): --force clears only a run folder, "
            "and this one holds files of its own; give another --out"
        )
    if not fresh and not is_run_folder(run_dir):
        raise BatchError(f"{run_dir} is not a run folder (no {RUN_MARKER} nor record.json): nothing to resume")
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        lock = _Lock(run_dir)
        lock.acquire()
        probe = run_dir / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as e:
        if not existed:
            _remove_empty(run_dir)
        raise BatchError(f"cannot write the run folder {run_dir}: {e.strerror or e}") from None
    if fresh and force:
        ours = run_entries(root)
        for p in run_dir.iterdir():
            if p.name in ours and p.name != ".lock":
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    if fresh:
        mark_run_folder(run_dir)
    return lock


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def estimate(
    root: Path,
    scale: str,
    chapters: list[str],
    device: str,
    accelerator: bool,
    rate: float | None = None,
    eig_seconds: float | None = None,
) -> list[dict]:
    """What each chapter is expected to take at ``scale`` on this machine, and why.

    Per chapter (names as in ``_toc.yml``): the seconds of its latest finished
    run at this scale on a machine with the same ``device`` description in this
    book's ``_build/runs`` ("measured here"), else the measured reference run
    (:mod:`bookrun.reference_times`) of this scale on the same kind of machine
    (an accelerator or not), else none. Never extrapolated: where nothing was
    measured, ``seconds`` is ``None`` and the basis names the nearest measurement
    (another kind of machine), if any. A reference run on a CPU that recorded its
    machine's float64 matmul rate (``matmul_gflops``, :func:`gelib.spectra.machine_rates`
    with the same BLAS threads) is scaled to this CPU by the ratio of the two rates:
    the chapters' work is mostly matrix products and eigensolves, which follow it.
    On a CPU, a chapter with nothing measured at this scale on a CPU but a
    ``plan`` cell (:func:`planned_layers`: the learning chapters at ``paper``)
    is priced from its sizes: the floor of its simulations
    (:func:`gelib.learning_markers.simulation_seconds`), a lower bound, since the limit
    laws' work comes on top. ``rate`` is this machine's rate in GFLOP/s and
    ``eig_seconds`` its ``1024 x 1024`` eigensolve (measured when needed if ``None``).
    Rows: ``chapter``, ``seconds``, ``lower_bound`` (the chapter was stopped, or
    only its simulations are counted, so it takes longer), ``kind`` (``"measured
    here"``, ``"reference"``, ``"reference, scaled"``, ``"from sizes"`` or
    ``"none"``) and ``basis``; the last row carries ``busy`` when the machine
    looked loaded while its rates were measured (:class:`gelib.spectra.MachineRates`).
    """
    from bookrun import reference_times  # here, not at the top: this file also runs as a worker script

    here: dict[str, tuple[float, str]] = {}
    runs = [p.parent for p in (root / "_build" / "runs").glob("*/record.json")]
    for run in sorted(runs, key=lambda p: (p / "record.json").stat().st_mtime, reverse=True):  # newest first
        rec = _read_record(run) or {}
        if rec.get("scale") != scale or rec.get("device") != device:
            continue
        for name, c in rec.get("chapters", {}).items():
            if c.get("status") == "ok" and name not in here:
                here[name] = (float(c["seconds"]), f"measured here ({run.name}, {(rec.get('commit') or '?')[:7]})")
    refs = [r for r in reference_times.REFERENCE_RUNS if r["scale"] == scale]
    rows = []
    busy = None
    for f in chapters:
        name = Path(f).name
        row = {
            "chapter": name,
            "seconds": None,
            "lower_bound": False,
            "kind": "none",
            "basis": "no measurement at this scale",
        }
        if name in here:
            row["seconds"], row["basis"] = here[name]
            row["kind"] = "measured here"
        for ref in sorted(refs, key=lambda r: r["accelerator"] != accelerator):  # same kind of machine first
            if name in here or name not in ref["chapters"]:
                continue
            value = ref["chapters"][name]
            bound = isinstance(value, (tuple, list))
            secs = float(value[1] if bound else value)
            where = f"{ref['machine']}, {ref['jobs']} at a time, {ref['commit']} ({ref['date']})"
            if ref["accelerator"] == accelerator:
                note = ": stopped, not finished" if bound else ""
                if not accelerator and ref.get("matmul_gflops"):
                    if rate is None:
                        measured = chapter_rates()
                        rate, busy = measured[0] / 1e9, measured.busy
                    secs *= ref["matmul_gflops"] / rate
                    note += f", scaled by the matmul rate ({rate:.0f} GFLOP/s here, {ref['matmul_gflops']:.0f} there)"
                kind = "reference, scaled" if not accelerator and ref.get("matmul_gflops") else "reference"
                row.update(seconds=secs, lower_bound=bound, basis=where + note, kind=kind)
            else:
                row["basis"] = f"not measured on this kind of machine; {'> ' if bound else ''}{secs:.0f} s on {where}"
            break
        if row["seconds"] is None and not accelerator and is_chapter(root / f"{f}.md"):
            plan = planned_layers(root / f"{f}.md", {"scale": scale})
            if plan is not None:
                from gelib.learning_markers import simulation_seconds

                if rate and eig_seconds:
                    rates = (rate * 1e9, eig_seconds)
                else:
                    rates = chapter_rates()
                    busy = rates.busy
                layers, seeds = plan
                row.update(
                    seconds=simulation_seconds(layers, seeds, rates),
                    lower_bound=True,
                    kind="from sizes",
                    basis=f"from its sizes: {len(layers)} softmax layers x {seeds} seeds at "
                    f"{rates[0] / 1e9:.0f} GFLOP/s (their simulations alone); {row['basis']}",
                )
        rows.append(row)
    if busy and rows:
        rows[-1]["busy"] = busy
    return rows


def chapter_rates():
    """:func:`gelib.spectra.machine_rates` as the chapters' kernels see the machine: measured
    in a child process with one BLAS thread (``OPENBLAS_NUM_THREADS=1``, as the batch and
    ``make`` run the chapters, and as the reference runs recorded their rate). In this
    process the BLAS may already run on every core, which made a 2-core CPU look about twice
    as fast (106 against 54 GFLOP/s) as its chapters run."""
    from gelib.spectra import MachineRates

    code = (
        "import json; from gelib.spectra import machine_rates; r = machine_rates(); "
        "print(json.dumps([r.matmul, r.eig, r.busy]))"
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if res.returncode:
        raise BatchError(f"could not measure this machine's rates: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
    matmul, eig, busy = json.loads(res.stdout.strip().splitlines()[-1])
    return MachineRates(matmul, eig, busy)


_PLAN_SCRIPT = r"""
import json, sys
import matplotlib
matplotlib.use("Agg")
namespace = {"__name__": "__plan__"}
exec(compile(sys.stdin.read(), "<chapter cells up to the plan>", "exec"), namespace)
print("\n" + json.dumps({"layers": [c.as_dict() for c in namespace["SIMULATED"]], "seeds": int(namespace["SEEDS"])}))
"""


def planned_layers(path: str | Path, parameters: dict | None = None, timeout: float = 300.0):
    """The softmax layers a chapter will simulate, and the seeds of each, from its sizes alone.

    A chapter that simulates layers may tag one cell ``plan``; that cell and
    the cells before it define ``SIMULATED`` (the layers, each simulated once)
    and ``SEEDS`` without simulating any, and the chapter's last cell checks that
    ``SIMULATED`` is what it simulated. This runs those cells (with
    ``parameters`` injected, IPython magics dropped) in a fresh interpreter and
    returns ``(layers, seeds)``, or ``None`` for a chapter with no ``plan`` cell.
    Raises :class:`BatchError` if the cells fail.
    """
    from gelib.config import AttentionConfig

    nb = load_chapter(path, parameters)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    last = next((i for i, c in enumerate(cells) if "plan" in c.metadata["tags"]), None)
    if last is None:
        return None
    source = "\n".join(
        line for c in cells[: last + 1] for line in c.source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    root = str(Path(path).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-c", _PLAN_SCRIPT],
        input=source,
        capture_output=True,
        text=True,
        cwd=Path(path).parent,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise BatchError(f"{Path(path).name}: the cells up to its plan failed: {tail}")
    plan = json.loads(proc.stdout.strip().splitlines()[-1])
    return [AttentionConfig(**c) for c in plan["layers"]], plan["seeds"]


def _seconds(value: float) -> str:
    """Seconds as a table shows them: whole above 10, else two significant digits."""
    return f"{value:.0f} s" if value >= 10 else f"{value:.2g} s"


#: How :func:`format_estimate` names each kind of basis.
ESTIMATE_KINDS = {
    "measured here": "measured",
    "reference": "measured",
    "reference, scaled": "scaled",
    "from sizes": "from sizes",
    "none": "",
}


def format_estimate(rows: list[dict], scale: str, device: str, jobs: int) -> str:
    """The table printed before a ``--scale paper`` run and by ``--estimate``: per
    chapter its time and how it was obtained, *measured* (a run of it on this machine,
    or a reference run on this kind of machine), *scaled* (a reference run on another
    CPU, by the two matmul rates) or *from sizes* (a lower bound from the layers the
    chapter plans to simulate: extrapolated, not measured)."""
    lines = [f"estimated time of each chapter at scale {scale!r} on {device}:"]
    for r in rows:
        t = "?" if r["seconds"] is None else ("> " if r["lower_bound"] else "") + _seconds(r["seconds"])
        lines.append(f"  {r['chapter']:<26} {t:>9}  {ESTIMATE_KINDS[r.get('kind', 'none')]:<10}  {r['basis']}")
    known = [r["seconds"] for r in rows if r["seconds"] is not None]
    if known:
        total = sum(known)
        wall = max(total / max(jobs, 1), max(known))
        more = len(rows) - len(known)
        lines.append(
            f"  total {'at least ' if more or any(r['lower_bound'] for r in rows) else ''}{_seconds(total)} of chapter "
            f"time{f' (+{more} unknown)' if more else ''}, about {_seconds(wall)} of wall time with {jobs} at a time;"
            " pick chapters with --chapters PATTERN"
        )
    sizes = [r["chapter"] for r in rows if r.get("kind") == "from sizes"]
    if sizes:
        lines.append(f"  extrapolated from sizes, not measured: {', '.join(sizes)}")
    for r in rows:
        if r.get("busy"):
            lines.append(f"  note: {r['busy']}")
    return "\n".join(lines)


def run_batch(
    root: Path,
    scale: str,
    chapters: list[str] | None = None,
    parameters: dict | None = None,
    out: Path | None = None,
    resume: bool = False,
    force: bool = False,
    render: bool | None = None,
    timeout: int | None = None,
    stream: TextIO | None = None,
    jobs: int | None = None,
    only_estimate: bool = False,
) -> int:
    """Execute the chapters and render the book; returns the exit status: 0 when
    every selected chapter ran and the book rendered, 1 when a chapter failed or
    the rendering did, 130 when interrupted (Ctrl-C).

    ``root`` holds ``_toc.yml``; ``chapters`` are glob patterns of file names
    (default: all); ``parameters`` are injected after ``scale`` into each
    chapter whose parameters cell has the name (a name no selected chapter has
    is an error); ``out`` is the run folder (default
    ``_build/runs/<scale>-<time>``); ``jobs`` chapters run at once (default
    :func:`default_jobs`); ``render`` (default: yes) builds the HTML. The
    record keeps that selection, so ``resume`` redoes it: on resume, a
    selection, ``render``, ``jobs``, ``timeout`` or ``parameters`` left out is
    the run's own. Before a run at the paper scale, and instead of the run with
    ``only_estimate``, prints :func:`estimate`'s table.

    Every run renders into its own folder, ``<run>/_build/html``. A run in
    which every chapter of the book ran, once rendered without error, then
    replaces the book (``_build/html``) with it. Any other run (some chapters
    selected, or one failed) takes the chapters it did not run from the latest
    complete run of the same scale and parameters (their source where there is
    none) and stays in its folder, so it never replaces a complete book. Raises
    :class:`BatchError` when the run cannot start."""
    stream = stream or sys.stderr
    root = Path(root).resolve()
    build = root / "_build"
    params = {"scale": scale, **(parameters or {})}
    if timeout is not None and timeout <= 0:
        raise BatchError(f"--timeout must be a positive number of seconds, not {timeout}")

    files = toc_files(root)
    all_chapters = [f for f in files if is_chapter(root / f"{f}.md")]
    if only_estimate:
        todo = _select(all_chapters, chapters)
        chapter_overrides(root, todo, parameters or {})
        device, accelerator = _device()
        rows = estimate(root, scale, todo, device, accelerator)
        print(format_estimate(rows, scale, device, jobs or default_jobs(accelerator)), file=stream)
        return 0

    if resume:
        run_dir = Path(out) if out else (_runs(build, scale) or [None])[-1]
        if run_dir is None or not (run_dir / "record.json").exists():
            raise BatchError(f"no earlier run of scale {scale!r} to resume" + (f" in {out}" if out else ""))
        lock = _open_run_dir(root, run_dir, fresh=False, force=False)
        try:
            record = _read_record(run_dir)
            if record is None:
                raise BatchError(f"{run_dir / 'record.json'} cannot be read")
            # what the run was started with, unless given again: the chapters, render, jobs, timeout, parameters
            selection = record.setdefault("selection", {})
            chapters = chapters if chapters is not None else selection.get("chapters")
            render = render if render is not None else selection.get("render", True)
            jobs = jobs if jobs is not None else selection.get("jobs")
            timeout = timeout if timeout is not None else selection.get("timeout")
            if not parameters and record["parameters"].get("scale") == scale:
                params = record["parameters"]
            if record["parameters"] != params:
                raise BatchError(f"{run_dir} ran with parameters {record['parameters']}, not {params}")
            todo = _select(all_chapters, chapters)
            overrides = chapter_overrides(root, todo, {k: v for k, v in params.items() if k != "scale"})
        except BaseException:
            lock.release()
            raise
        record["selection"] = {"chapters": chapters, "render": render, "jobs": jobs, "timeout": timeout}
    else:
        render = True if render is None else render
        todo = _select(all_chapters, chapters)
        overrides = chapter_overrides(root, todo, parameters or {})
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = Path(out) if out else build / "runs" / f"{scale}-{stamp}"
        lock = _open_run_dir(root, run_dir, fresh=True, force=force)
        device, accelerator = _device()
        record = {
            "scale": scale,
            "parameters": params,
            "selection": {"chapters": chapters, "render": render, "jobs": jobs, "timeout": timeout},
            "started": _dt.datetime.now().isoformat(timespec="seconds"),
            "device": device,
            "accelerator": accelerator,
            "commit": _commit(root),
            "versions": _versions(),
            "chapters": {},
        }
        if scale == "paper":
            rows = estimate(root, scale, todo, device, accelerator)
            print(format_estimate(rows, scale, device, jobs or default_jobs(accelerator)), file=stream)
    try:
        return _run(root, run_dir, record, todo, all_chapters, overrides, scale, timeout, render, stream, jobs)
    except OSError as e:  # a full disk, a folder removed under us
        saved = (
            "the last saved record.json is intact" if _read_record(run_dir) is not None else "no record.json was saved"
        )
        print(
            f"python -m gelib batch: error: cannot write {run_dir}: {e.strerror or e}; {saved}; free the space "
            f"and continue with: {resume_command(root, run_dir, record)}",
            file=stream,
        )
        return 2
    finally:
        lock.release()


def _select(all_chapters: list[str], patterns: list[str] | None) -> list[str]:
    """The chapters whose file name matches one of the glob ``patterns`` (all if ``None``)."""
    todo = [f for f in all_chapters if not patterns or any(fnmatch.fnmatch(Path(f).name, p) for p in patterns)]
    if not todo:
        names = ", ".join(Path(f).name for f in all_chapters)
        raise BatchError(f"no chapter matches {' '.join(patterns or [])!r}; the chapters: {names} (globs: 'denom*')")
    return todo


def _as_cli_value(value) -> str:
    """``value`` as ``-p NAME VALUE`` reads it back (JSON where it parses, else the string)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except json.JSONDecodeError:
            return value
    return json.dumps(value)


def resume_command(root: Path, run_dir: Path, record: dict) -> str:
    """The command line that continues the run of ``record`` in ``run_dir``: the same
    scale, chapters, parameters, jobs, timeout and render choice (also kept in the record)."""
    import shlex

    sel = record.get("selection", {})
    words = ["python", "-m", "gelib", "batch", "--scale", record["scale"], "--resume", "--out", str(run_dir)]
    if Path(root).resolve() != Path.cwd().resolve():
        words += ["--root", str(root)]
    if sel.get("chapters"):
        words += ["--chapters", *sel["chapters"]]
    for name, value in record.get("parameters", {}).items():
        if name != "scale":
            words += ["-p", name, _as_cli_value(value)]
    if sel.get("jobs"):
        words += ["--jobs", str(sel["jobs"])]
    if sel.get("timeout"):
        words += ["--timeout", str(sel["timeout"])]
    if sel.get("render") is False:
        words.append("--no-render")
    return " ".join(shlex.quote(w) for w in words)


def _reference_seconds(scale: str, accelerator: bool) -> dict[str, float]:
    """Chapter seconds of the newest reference run (:mod:`bookrun.reference_times`) of ``scale``
    on the same kind of machine, ``{}`` if none (a stopped chapter counts its lower bound)."""
    from bookrun import reference_times

    refs = [r for r in reference_times.REFERENCE_RUNS if r["scale"] == scale and r["accelerator"] == accelerator]
    if not refs:
        return {}
    ref = max(refs, key=lambda r: r["date"])
    return {n: float(v[1] if isinstance(v, (tuple, list)) else v) for n, v in ref["chapters"].items()}


def _publish(html: Path, book: Path) -> None:
    """Replace the book's HTML folder by a copy of ``html``, swapping by renames."""
    new, old = book.with_name(book.name + ".new"), book.with_name(book.name + ".old")
    shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(html, new)
    if book.exists():
        book.rename(old)
    new.rename(book)
    shutil.rmtree(old, ignore_errors=True)


def _run(root, run_dir, record, todo, all_chapters, overrides, scale, timeout, render, stream, jobs) -> int:
    prepare_mirror(root, run_dir)
    work, logs = run_dir / ".work", run_dir / "logs"
    work.mkdir(exist_ok=True)
    jobs = jobs or default_jobs(record.get("accelerator", False))
    for f in all_chapters:  # the record lists chapters in the book's order
        record["chapters"].setdefault(Path(f).name, {"source": f"{f}.md", "status": "not run"})
    pending = []
    for f in todo:
        name = Path(f).name
        if record["chapters"][name].get("status") == "ok" and (run_dir / f"{f}.ipynb").exists():
            print(f"  {name:<28} already done ({record['chapters'][name]['seconds']:.1f} s)", file=stream)
        else:
            pending.append(f)
    # longest first (times of the last run of this scale), so the slowest chapter does not start last
    last = {}
    for run in reversed(_runs(root / "_build", scale)):
        rec = _read_record(run) or {}
        last = {n: c.get("seconds", 0) for n, c in rec.get("chapters", {}).items() if c.get("status") == "ok"}
        if last:
            break
    if not last:  # a fresh clone: the newest measured reference run of this scale and kind, else SLOW_FIRST
        last = _reference_seconds(scale, record.get("accelerator", False))
        last = last or {name: len(SLOW_FIRST) - i for i, name in enumerate(SLOW_FIRST)}
    pending.sort(key=lambda f: -last.get(Path(f).name, 0))
    _write_json(run_dir / "record.json", record)

    running: dict = {}  # name -> (process, file, t0)
    total, started = len(pending), 0
    t_start = time.perf_counter()
    print(f"executing {total} chapter(s), {min(jobs, max(total, 1))} at a time, into {run_dir}", file=stream)
    try:
        while pending or running:
            while pending and len(running) < jobs:
                f = pending.pop(0)
                name = Path(f).name
                started += 1
                target = run_dir / f"{f}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.unlink(missing_ok=True)
                spec = {
                    "source": str(root / f"{f}.md"),
                    "target": str(target),
                    "parameters": {"scale": scale, **overrides[f], **_data_dir(root, f, run_dir)},
                    "cwd": str((root / f).parent),
                    "timeout": timeout,
                    "result": str(work / f"{name}.result.json"),
                }
                (work / f"{name}.result.json").unlink(missing_ok=True)
                _write_json(work / f"{name}.spec.json", spec)
                record["chapters"][name] = {
                    "source": f"{f}.md",
                    "parameters": spec["parameters"],
                    "status": "running",
                }
                _write_json(run_dir / "record.json", record)
                logs.mkdir(exist_ok=True)
                with open(logs / f"{name}.log", "w") as log:  # the kernel's own chatter, kept out of the console
                    proc = subprocess.Popen(
                        # run as a script: no gelib (nor JAX) to import in the worker itself
                        [sys.executable, str(Path(__file__).resolve()), str(work / f"{name}.spec.json")],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, **compilation_cache_env(root)},
                    )
                running[name] = (proc, f, time.perf_counter())
                print(
                    f"[{started}/{total}] {name:<28} started   (elapsed {time.perf_counter() - t_start:4.0f} s)",
                    file=stream,
                    flush=True,
                )
            time.sleep(0.2)
            for name, (proc, _f, t0) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[name]
                result = work / f"{name}.result.json"
                entry = record["chapters"][name]
                if proc.returncode == 0 and result.exists():
                    entry.update(json.loads(result.read_text()))
                else:
                    entry.update(
                        status="failed",
                        error=f"the chapter's worker ended with status {proc.returncode}; see {logs / name}.log",
                        seconds=round(time.perf_counter() - t0, 2),
                    )
                _write_json(run_dir / "record.json", record)
                print(f"      {name:<28} {entry['status']} in {entry['seconds']:.1f} s", file=stream, flush=True)
    except KeyboardInterrupt:
        for proc, _, _ in running.values():
            proc.terminate()
        for proc, _, _ in running.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for name in running:
            record["chapters"][name].update(status="interrupted")
        _write_json(run_dir / "record.json", record)
        names = ", ".join(running) or "none running"
        print(f"\ninterrupted ({names}); continue with: {resume_command(root, run_dir, record)}", file=stream)
        return 130
    shutil.rmtree(work, ignore_errors=True)

    ok = {n for n, c in record["chapters"].items() if c["status"] == "ok"}
    record["complete"] = all(Path(f).name in ok for f in all_chapters)
    record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    failed = {n: c for n, c in record["chapters"].items() if c["status"] == "failed"}

    width = max([len(n) for n in record["chapters"]] + [8])
    print(f"\n{'chapter':<{width}}  status   time (s)", file=stream)
    for n, c in record["chapters"].items():
        print(f"{n:<{width}}  {c['status']:<7}  {c.get('seconds', 0):8.1f}", file=stream)
    print(f"\nrun folder: {run_dir}", file=stream)

    for f in all_chapters:  # a bare source left by an earlier partial render would shadow the notebook
        if (run_dir / f"{f}.ipynb").exists():
            (run_dir / f"{f}.md").unlink(missing_ok=True)
    status = 0
    if render:
        strict = True
        if not record["complete"]:
            base = _latest_complete_run(root / "_build", scale, record["parameters"], run_dir)
            for f in all_chapters:
                name = Path(f).name
                if name in ok:
                    continue
                (run_dir / f"{f}.ipynb").unlink(missing_ok=True)
                if base is not None and (base / f"{f}.ipynb").exists():
                    shutil.copy(base / f"{f}.ipynb", run_dir / f"{f}.ipynb")
                    record["chapters"][name]["from_run"] = base.name
            missing = fill_missing_chapters(root, run_dir)
            strict = not missing
            print(
                f"a partial run: rendered into its own folder; chapters not run here come from "
                f"{base.name if base else 'no complete run'}"
                + (f", unexecuted: {', '.join(missing)}" if missing else ""),
                file=stream,
            )
        _write_json(run_dir / "record.json", record)
        _write_status_page(run_dir, record)
        # always into the run folder first: a failed rendering never touches the book
        status = render_book(root, run_dir, strict=strict, stream=stream, output=run_dir)
        if status == 0 and record["complete"]:
            _publish(run_dir / "_build" / "html", root / "_build" / "html")
            print(f"book: {root / '_build' / 'html' / 'index.html'}", file=stream)
    else:
        _write_json(run_dir / "record.json", record)
    for n, c in failed.items():
        where = f"code cell {c['cell']}" if c.get("cell") is not None else "before any cell"
        print(f"FAILED {n} at {where}: {c.get('error', '')}", file=stream)
    return 1 if failed else status


def prepare_mirror(root: Path, run_dir: Path) -> None:
    """Make ``run_dir`` a renderable copy of the book at ``root``: its
    configuration with execution off, the bibliography and the static pages.
    Executed chapters (``.ipynb``) are put there by the batch, or by the
    chapter tests (``conftest.py``)."""
    root, run_dir = Path(root), Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ROOT_FILES:
        shutil.copy(root / name, run_dir / name)
    cfg = (run_dir / "_config.yml").read_text()
    if "execute_notebooks: cache" not in cfg:
        raise BatchError("_config.yml has no 'execute_notebooks: cache' line to turn off")
    (run_dir / "_config.yml").write_text(cfg.replace("execute_notebooks: cache", "execute_notebooks: 'off'"))
    for extra in (root / "book").glob("*.bib"):
        (run_dir / "book").mkdir(exist_ok=True)
        shutil.copy(extra, run_dir / "book" / extra.name)
    for f in toc_files(root):
        src = root / f"{f}.md"
        if src.exists() and not is_chapter(src):
            (run_dir / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, run_dir / f"{f}.md")


def fill_missing_chapters(root: Path, run_dir: Path) -> list[str]:
    """Copy the source of every chapter that has no executed notebook in
    ``run_dir`` (so the book still builds); returns their names."""
    missing = []
    for f in toc_files(Path(root)):
        if is_chapter(Path(root) / f"{f}.md") and not (Path(run_dir) / f"{f}.ipynb").exists():
            shutil.copy(Path(root) / f"{f}.md", Path(run_dir) / f"{f}.md")
            missing.append(Path(f).name)
    return missing


def render_book(
    root: Path, run_dir: Path, strict: bool = True, stream: TextIO | None = None, output: Path | None = None
) -> int:
    """Render the executed mirror tree ``run_dir`` into ``<output>/_build/html``
    (``output`` defaults to ``root``) with Jupyter Book, execution off.
    ``strict``: nitpicky, warnings as errors (``-n -W``), so a broken
    cross-reference or a missing glued value fails. Returns 0 on success, else 1."""
    stream = stream or sys.stderr
    output = Path(output) if output is not None else Path(root)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(run_dir), "--path-output", str(output), "--keep-going"]
    if strict:
        cmd[3:3] = ["-n", "-W"]
    logs = Path(run_dir) / "logs"
    logs.mkdir(exist_ok=True)
    log_path = logs / "render.log"
    print(f"rendering ({'-n -W' if strict else 'lenient'}) ... full log: {log_path}", file=stream, flush=True)
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        res = subprocess.run(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    text = re.sub(r"\x1b\[[0-9;]*m", "", log_path.read_text(errors="replace"))
    problems = [ln for ln in text.splitlines() if re.search(r"\b(WARNING|ERROR|CRITICAL)\b|^Traceback", ln)]
    for line in problems[:20]:
        print(f"  {line}", file=stream)
    if len(problems) > 20:
        print(f"  ... and {len(problems) - 20} more in the log", file=stream)
    if res.returncode:
        print(f"gelib batch: rendering failed ({len(problems)} warnings or errors); see {log_path}", file=stream)
        return 1
    index = output / "_build" / "html" / "index.html"
    print(f"book: {index} (rendered in {time.perf_counter() - t0:.0f} s)", file=stream)
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1]))
