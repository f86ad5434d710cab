"""The batch: execute every chapter once with Papermill, then render the book.

``python -m gelib batch --scale {ci,default,paper}``:

1. reads the chapters from ``_toc.yml`` (their order lives there only);
2. executes each Jupytext chapter with Papermill, ``scale`` (and any ``-p``
   overrides) injected after its ``parameters`` cell, into a mirror tree
   ``_build/runs/<scale>-<time>/`` (plain Markdown pages are copied);
3. records, after every chapter, ``record.json``: parameters, status, run
   time, failing cell, device, package versions and every glued number;
4. renders the mirror tree with Jupyter Book, execution off, into
   ``_build/html`` (so each chapter executes exactly once).

A failing chapter does not stop the others; the run then exits non-zero and
names each failed chapter with its failing cell. ``--resume`` continues the
latest unfinished run of a scale without redoing finished chapters; a new run
never overwrites an earlier run's results (``--out DIR --force`` does).

The same loading (:func:`load_chapter`) serves nbval through ``conftest.py``.
This module is the engine only; its command line (the flags above) is
:mod:`gelib.cli.batch`.
"""

from __future__ import annotations

import copy
import datetime as _dt
import fnmatch
import importlib.metadata
import json
import platform
import shutil
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
    "is_chapter",
    "load_chapter",
    "toc_files",
    "glued_values",
    "run_batch",
    "prepare_mirror",
    "fill_missing_chapters",
    "render_book",
]

ROOT_FILES = ("_config.yml", "_toc.yml")
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


def _device() -> str:
    import jax

    devs = jax.devices()
    return f"{len(devs)} x {devs[0].platform} ({devs[0].device_kind})"


def _failure(exc: BaseException) -> dict:
    cell = getattr(exc, "exec_count", None)
    return {
        "error": f"{getattr(exc, 'ename', type(exc).__name__)}: {getattr(exc, 'evalue', exc)}"[:2000],
        "cell": cell,
        "cell_source": None,
    }


def _failing_cell(nb) -> tuple[int | None, str | None]:
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return i, cell.source
    return None, None


def _write_status_page(run_dir: Path, record: dict) -> None:
    rows = ["| chapter | status | time (s) | failing cell |", "|---|---|---|---|"]
    for name, ch in record["chapters"].items():
        rows.append(f"| `{name}` | {ch['status']} | {ch.get('seconds', 0):.1f} | {ch.get('cell') or ''} |")
    text = (
        "(status)=\n# Execution status\n\n"
        f"Executed by `python -m gelib batch` at scale **{record['scale']}** on "
        f"{record['device']}, started {record['started']}; parameters "
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


def _save(record: dict, run_dir: Path) -> None:
    tmp = run_dir / "record.json.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(run_dir / "record.json")


def _latest_run(build: Path, scale: str) -> Path | None:
    runs = sorted((build / "runs").glob(f"{scale}-*"))
    return runs[-1] if runs else None


def run_batch(
    root: Path,
    scale: str,
    chapters: list[str] | None = None,
    parameters: dict | None = None,
    out: Path | None = None,
    resume: bool = False,
    force: bool = False,
    render: bool = True,
    timeout: int | None = None,
    stream: TextIO | None = None,
) -> int:
    """Execute the chapters and render the book; returns the exit status (0 when
    every chapter ran and the book rendered, else 1).

    ``root`` holds ``_toc.yml``; ``chapters`` are glob patterns of file names
    (default: all); ``parameters`` are injected into every chapter after
    ``scale``; ``out`` is the run folder (default
    ``_build/runs/<scale>-<time>``).  Raises :class:`BatchError` when the run
    cannot start."""
    import papermill

    stream = stream or sys.stderr
    root = Path(root).resolve()
    build = root / "_build"
    params = {"scale": scale, **(parameters or {})}
    if resume:
        run_dir = Path(out) if out else _latest_run(build, scale)
        if run_dir is None or not (run_dir / "record.json").exists():
            raise BatchError(f"no earlier run of scale {scale!r} to resume")
        record = json.loads((run_dir / "record.json").read_text())
        if record["parameters"] != params:
            raise BatchError(f"{run_dir} ran with parameters {record['parameters']}, not {params}")
    else:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = Path(out) if out else build / "runs" / f"{scale}-{stamp}"
        if run_dir.exists():
            if not force:
                raise BatchError(f"{run_dir} exists; use --resume, --force or another --out")
            shutil.rmtree(run_dir)
        record = {
            "scale": scale,
            "parameters": params,
            "started": _dt.datetime.now().isoformat(timespec="seconds"),
            "device": _device(),
            "versions": _versions(),
            "chapters": {},
        }
    run_dir.mkdir(parents=True, exist_ok=True)

    files = toc_files(root)
    selected = [f for f in files if not chapters or any(fnmatch.fnmatch(Path(f).name, p) for p in chapters)]
    todo = [f for f in selected if is_chapter(root / f"{f}.md")]
    prepare_mirror(root, run_dir)

    t_start = time.perf_counter()
    for k, f in enumerate(todo, 1):
        name = Path(f).name
        done = record["chapters"].get(name, {}).get("status") == "ok"
        prefix = f"[{k}/{len(todo)}] {name:<28}"
        if resume and done:
            print(f"{prefix} already done ({record['chapters'][name]['seconds']:.1f} s)", file=stream, flush=True)
            continue
        print(f"{prefix} running ... (elapsed {time.perf_counter() - t_start:.0f} s)", file=stream, flush=True)
        target = run_dir / f"{f}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = {"source": f"{f}.md", "parameters": params, "status": "running"}
        record["chapters"][name] = entry
        _save(record, run_dir)
        t0 = time.perf_counter()
        try:
            nb = load_chapter(root / f"{f}.md", params)
            executed = papermill.execute_notebook(
                nb,
                str(target),
                kernel_name="python3",
                cwd=str((root / f).parent),
                progress_bar=False,
                log_output=False,
                execution_timeout=timeout,
            )
            entry.update(status="ok", glued=glued_values(executed))
        except Exception as exc:  # noqa: BLE001 - a chapter's failure is recorded, not raised
            entry.update(status="failed", **_failure(exc))
            if target.exists():
                import nbformat

                failed_nb = nbformat.read(str(target), as_version=4)
                entry["cell"], entry["cell_source"] = _failing_cell(failed_nb)
                entry["glued"] = glued_values(failed_nb)
            else:
                entry["traceback"] = traceback.format_exc()[-4000:]
        entry["seconds"] = round(time.perf_counter() - t0, 2)
        _save(record, run_dir)
        print(f"{prefix} {entry['status']} in {entry['seconds']:.1f} s", file=stream, flush=True)

    fill_missing_chapters(root, run_dir)
    record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    _save(record, run_dir)
    _write_status_page(run_dir, record)

    failed = {n: c for n, c in record["chapters"].items() if c["status"] != "ok"}
    width = max([len(n) for n in record["chapters"]] + [8])
    print(f"\n{'chapter':<{width}}  status   time (s)", file=stream)
    for n, c in record["chapters"].items():
        print(f"{n:<{width}}  {c['status']:<7}  {c.get('seconds', 0):8.1f}", file=stream)
    print(f"\nrun folder: {run_dir.relative_to(root) if run_dir.is_relative_to(root) else run_dir}", file=stream)

    status = 0
    if render:
        status = render_book(root, run_dir, strict=not failed, stream=stream)
    if failed:
        for n, c in failed.items():
            where = f"cell {c['cell']}" if c.get("cell") is not None else "before any cell"
            print(f"FAILED {n} at {where}: {c.get('error', '')}", file=stream)
        status = 1
    return status


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
    print(f"rendering: {' '.join(cmd[1:])}", file=stream, flush=True)
    res = subprocess.run(cmd, cwd=root)
    if res.returncode:
        print("gelib batch: rendering failed", file=stream)
        return 1
    print(f"book: {output / '_build' / 'html' / 'index.html'}", file=stream)
    return 0
