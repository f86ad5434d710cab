"""The batch: execute every chapter once with Papermill, then render the book.

``python -m gelib batch --scale {ci,default,paper}``:

1. reads the chapters from ``_toc.yml`` (:mod:`bookrun.chapters`) and checks
   every ``-p NAME VALUE`` override against the chapters' ``parameters`` cells
   before anything runs (a name no selected chapter has, a name the batch sets
   itself, ``scale`` or ``data_dir``, and a value that is not a finite number
   are errors; a chapter receives only the names it has);
2. opens the run folder (:mod:`bookrun.runfolder`): a new one, or with
   ``--force`` the files an earlier run recorded there removed, or with
   ``--resume`` the unfinished run; every path the run will write is checked
   before the first chapter starts;
3. executes the chapters with Papermill (:mod:`bookrun.execute`), several at
   once (``--jobs``; one per CPU core up to 4, one on a GPU), each in a worker
   process of its own, the longest first (:mod:`bookrun.estimate` prices a
   paper-scale run before it starts), into a mirror tree
   ``_build/runs/<scale>-<time>/`` (plain Markdown pages are copied; each
   kernel's log goes to ``logs/<chapter>.log``);
4. records, after every chapter, ``record.json`` (written atomically):
   parameters, per-chapter parameters, status, run time, failing code cell,
   device, commit, package versions and every glued number;
5. renders the mirror tree with Jupyter Book (:mod:`bookrun.render`), execution
   off, into the run's own ``<run>/_build/html`` (each chapter executes exactly
   once); when every chapter ran and the rendering succeeded, that copy becomes
   the book, ``_build/html``. A partial run takes the chapters it did not run
   from the latest complete run and stays in its folder, so it never replaces a
   complete book, nor does a failed rendering.

A failing chapter does not stop the others; the run then exits non-zero and
names each failed chapter with its failing code cell. ``--resume`` continues
the latest unfinished run of a scale without redoing finished chapters (also
after a crash or a kill), with the selection the run recorded (chapters, jobs,
render, parameters, timeout); Ctrl-C (once or more) stops the workers, records
the running chapters as interrupted and prints the exact command that
continues the run, naming the Python that ran it. A run folder is locked while
a batch uses it.

Nothing the batch did not write is ever deleted or overwritten: a run folder
owns only the files recorded in its manifest (:class:`bookrun.runfolder.RunFolder`).
This module is the engine only; its command line (the flags above) is
:mod:`bookrun.cli.batch`.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from .chapters import (
    ROOT_FILES,
    BatchError,
    chapter_overrides,
    chapter_parameters,
    glued_values,
    is_chapter,
    load_chapter,
    toc_files,
)
from .estimate import _reference_seconds, chapter_rates, estimate, format_estimate, planned_layers
from .execute import _commit, _device, _versions, compilation_cache_env, default_jobs, execute_chapter
from .render import fill_missing_chapters, mirror_files, prepare_mirror, publish, render_book, write_status_page
from .runfolder import (
    MANIFEST,
    RUN_MARKER,
    RunFolder,
    RunLock,
    check_run_folder,
    is_run_folder,
    latest_complete_run,
    mark_run_folder,
    read_record,
    runs,
    unsafe_run_folder,
    write_json,
)

__all__ = [
    "BatchError",
    "RUN_MARKER",
    "MANIFEST",
    "RunFolder",
    "is_run_folder",
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
    "compilation_cache_env",
    "execute_chapter",
    "run_batch",
    "estimate",
    "format_estimate",
    "planned_layers",
    "chapter_rates",
    "prepare_mirror",
    "fill_missing_chapters",
    "render_book",
    "ROOT_FILES",
]


def _write_json(path: Path, data: dict) -> None:
    """Write the run's ``record.json`` (or another file of the run) atomically, and record it
    in the run folder's manifest."""
    write_json(path, data)
    RunFolder(Path(path).parent).record(Path(path).name)


#: Where neither an earlier run of the scale nor a reference run of it on this kind of
#: machine (:mod:`bookrun.reference_times`) gives the chapters' times, these start first,
#: slowest first: at the default scale the finite-size table (every row of Table 2 at
#: its exact dimensions) takes several minutes, the learning chapters about two each,
#: every other chapter about one.
SLOW_FIRST: tuple[str, ...] = ("finite_size_table", "readout_learning", "parameter_sharing")


def _data_dir(root: Path, chapter: str, run_dir: Path) -> dict:
    """``{"data_dir": run_dir/data/NAME}`` for a chapter whose parameters cell has ``data_dir`` (it
    writes its figures' numbers there as CSV, :func:`bookrun.glue.figure_csv`), else ``{}``."""
    if "data_dir" not in chapter_parameters(root / f"{chapter}.md"):
        return {}
    return {"data_dir": str(Path(run_dir) / "data" / Path(chapter).name)}


# --- the run folder -----------------------------------------------------------------

#: The folders Jupyter Book writes into under a run folder's ``_build``: every file already
#: there must be the run's own before a run starts (a user's file elsewhere in ``_build`` is left alone).
RENDERED = ("_build/html", "_build/.doctrees", "_build/jupyter_execute")


def planned_writes(root: Path, run_dir: Path, all_chapters: list[str]) -> list[str]:
    """Every path a run of the book at ``root`` may write into ``run_dir`` (relative), for
    :meth:`~bookrun.runfolder.RunFolder.check_writable` before it starts: the mirror tree, the record, each
    chapter's notebook, source, log and work files, and every file already in a chapter's
    data folder (``data/<chapter>/``, where it writes its CSVs) and under the folders Jupyter
    Book writes (:data:`RENDERED`)."""
    paths = [*mirror_files(root), "record.json", "logs/render.log"]
    for f in all_chapters:
        name = Path(f).name
        paths += [f"{f}.ipynb", f"{f}.md", f"logs/{name}.log", f".work/{name}.spec.json", f".work/{name}.result.json"]
    for folder in (*(f"data/{Path(f).name}" for f in all_chapters), *RENDERED):
        base = Path(run_dir) / folder
        if base.is_dir() and not base.is_symlink():
            paths += [str(p.relative_to(run_dir)) for p in base.rglob("*") if p.is_file() or p.is_symlink()]
    return paths


def _open_run_dir(root: Path, run_dir: Path, fresh: bool, force: bool, all_chapters: list[str]) -> RunLock:
    """Create (or, with ``force``, clear of what an earlier run recorded) the run folder and lock
    it; a clear :class:`~bookrun.chapters.BatchError`, before anything is written, when it cannot be written, is in
    use, holds links that lead outside it, or holds files in the way that a batch did not write."""
    why = unsafe_run_folder(root, run_dir)
    if why:
        raise BatchError(f"{why}; the batch never writes there: give another --out")
    if run_dir.is_symlink() and not run_dir.exists():
        raise BatchError(f"{run_dir} is a symbolic link that leads nowhere; give another --out")
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
    if existed:
        folder = RunFolder(run_dir)
        folder.check_links()
    created = []
    missing = Path(run_dir)
    while not missing.exists() and not missing.is_symlink() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    lock = RunLock(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        lock.acquire()
        import tempfile

        fd, probe = tempfile.mkstemp(dir=run_dir, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        lock.release()
        for folder_made in created:  # deepest first; rmdir never removes what holds anything
            try:
                folder_made.rmdir()
            except OSError:
                break
        raise BatchError(f"cannot write the run folder {run_dir}: {e.strerror or e}") from None
    try:
        if existed and RunFolder(run_dir).legacy:  # after the lock: a live batch's folder is "in use" first
            raise BatchError(
                f"{run_dir} was made by an earlier version of the batch, which kept no record of the files it "
                f"wrote ({MANIFEST}): it can be neither resumed nor cleared safely; give another --out"
            )
        if fresh:
            mark_run_folder(run_dir)
        folder = RunFolder(run_dir)
        # every path checked before anything is removed or written: a recorded, unchanged file is
        # the run's own (cleared below with --force), anything else in the way stops the batch here
        folder.check_writable(planned_writes(root, run_dir, all_chapters))
        if fresh and force:
            folder.clear()
    except BaseException:
        lock.release()
        raise
    return lock


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
    :func:`~bookrun.execute.default_jobs`); ``render`` (default: yes) builds the HTML. The
    record keeps that selection, so ``resume`` redoes it: on resume, a
    selection, ``render``, ``jobs``, ``timeout`` or ``parameters`` left out is
    the run's own. Before a run at the paper scale, and instead of the run with
    ``only_estimate``, prints :func:`~bookrun.estimate.estimate`'s table.

    Every run renders into its own folder, ``<run>/_build/html``. A run in
    which every chapter of the book ran, once rendered without error, then
    replaces the book (``_build/html``) with it. Any other run (some chapters
    selected, or one failed) takes the chapters it did not run from the latest
    complete run of the same scale and parameters (their source where there is
    none) and stays in its folder, so it never replaces a complete book. Raises
    :class:`~bookrun.chapters.BatchError` when the run cannot start."""
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
        run_dir = Path(out) if out else (runs(build, scale) or [None])[-1]
        if run_dir is None or not (run_dir / "record.json").exists():
            raise BatchError(f"no earlier run of scale {scale!r} to resume" + (f" in {out}" if out else ""))
        lock = _open_run_dir(root, run_dir, fresh=False, force=False, all_chapters=all_chapters)
        try:
            record = read_record(run_dir)
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
        device, accelerator = _device()
        lock = _open_run_dir(root, run_dir, fresh=True, force=force, all_chapters=all_chapters)
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
    except KeyboardInterrupt:  # Ctrl-C outside the chapters' loop (the mirror, the rendering): the same account
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for entry in record["chapters"].values():
                if entry.get("status") == "running":
                    entry["status"] = "interrupted"
            try:
                _write_json(run_dir / "record.json", record)
            except OSError:
                pass
            print(f"\ninterrupted; continue with: {resume_command(root, run_dir, record)}", file=stream, flush=True)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return 130
    except OSError as e:  # a full disk, a folder removed under us
        saved = (
            "the last saved record.json is intact" if read_record(run_dir) is not None else "no record.json was saved"
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
    scale, chapters, parameters, jobs, timeout and render choice (also kept in the record),
    run by the same Python (``sys.executable``, absolute) on the same folder (absolute)."""
    import shlex

    sel = record.get("selection", {})
    # the Python that runs this batch (a venv's, absolute): the command works from a shell with no venv activated
    python = str(Path(sys.executable).absolute()) if sys.executable else "python3"
    out = str(Path(run_dir).absolute())
    words = [python, "-m", "gelib", "batch", "--scale", record["scale"], "--resume", "--out", out]
    if Path(root).resolve() != Path.cwd().resolve():
        words += ["--root", str(Path(root).absolute())]
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


def _stop_workers(running: dict) -> None:
    """End the running chapters' workers (SIGTERM, then SIGKILL after 20 s): none outlives the batch."""
    for proc, _, _ in running.values():
        if proc.poll() is None:
            proc.terminate()
    for proc, _, _ in running.values():
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _run(root, run_dir, record, todo, all_chapters, overrides, scale, timeout, render, stream, jobs) -> int:
    folder = RunFolder(run_dir)
    prepare_mirror(root, run_dir)
    work, logs = run_dir / ".work", run_dir / "logs"
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
    for run in reversed(runs(root / "_build", scale)):
        rec = read_record(run) or {}
        last = {n: c.get("seconds", 0) for n, c in rec.get("chapters", {}).items() if c.get("status") == "ok"}
        if last:
            break
    if not last:  # a fresh clone: the newest measured reference run of this scale and kind, else SLOW_FIRST
        last = _reference_seconds(scale, record.get("accelerator", False))
        last = last or {name: len(SLOW_FIRST) - i for i, name in enumerate(SLOW_FIRST)}
    pending.sort(key=lambda f: -last.get(Path(f).name, 0))
    _write_json(run_dir / "record.json", record)

    running: dict = {}  # name -> (process, file, t0)
    data_before: dict = {}  # name -> the data folder's files before the chapter ran (RunFolder.snapshot)
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
                folder.remove(target)
                spec = {
                    "source": str(root / f"{f}.md"),
                    "target": str(target),
                    "parameters": {"scale": scale, **overrides[f], **_data_dir(root, f, run_dir)},
                    "cwd": str((root / f).parent),
                    "timeout": timeout,
                    "result": str(work / f"{name}.result.json"),
                }
                folder.remove(work / f"{name}.result.json")
                folder.write(work / f"{name}.spec.json", json.dumps(spec, indent=1))
                target.parent.mkdir(parents=True, exist_ok=True)
                if "data_dir" in spec["parameters"]:
                    data = Path(spec["parameters"]["data_dir"])
                    data.mkdir(parents=True, exist_ok=True)
                    data_before[name] = folder.snapshot(data)
                record["chapters"][name] = {
                    "source": f"{f}.md",
                    "parameters": spec["parameters"],
                    "status": "running",
                }
                _write_json(run_dir / "record.json", record)
                log_path = folder.write(logs / f"{name}.log", "")
                # the worker and its kernel write these: the run's from now on, recorded when it ends, so a
                # batch killed mid-chapter (SIGKILL: nothing recorded) resumes over them (RunFolder.claim)
                folder.claim(target, log_path, work / f"{name}.result.json")
                with open(log_path, "w") as log:  # the kernel's own chatter, kept out of the console
                    proc = subprocess.Popen(
                        # run as a script: no gelib (nor JAX) to import in the worker itself
                        [sys.executable, str(Path(__file__).with_name("execute.py")), str(work / f"{name}.spec.json")],
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
            for name, (proc, f, t0) in list(running.items()):
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
                _record_chapter(folder, run_dir, f, data_before.pop(name, None))
                _write_json(run_dir / "record.json", record)
                print(f"      {name:<28} {entry['status']} in {entry['seconds']:.1f} s", file=stream, flush=True)
    except KeyboardInterrupt:
        # a second Ctrl-C while the workers stop must not cut this account short
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            _stop_workers(running)
            for name, (_proc, f, _t0) in running.items():
                record["chapters"][name].update(status="interrupted")
                _record_chapter(folder, run_dir, f, data_before.get(name))
            _write_json(run_dir / "record.json", record)
            names = ", ".join(running) or "none running"
            print(f"\ninterrupted ({names}); continue with: {resume_command(root, run_dir, record)}", file=stream)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return 130
    except BaseException:
        _stop_workers(running)  # a folder that cannot be written any more: no worker goes on alone
        raise
    for f in all_chapters:
        name = Path(f).name
        folder.remove(work / f"{name}.spec.json")
        folder.remove(work / f"{name}.result.json")
    try:
        work.rmdir()
    except OSError:
        pass

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
            folder.remove(run_dir / f"{f}.md")
    status = 0
    if render:
        strict = True
        if not record["complete"]:
            base = latest_complete_run(root / "_build", scale, record["parameters"], run_dir)
            for f in all_chapters:
                name = Path(f).name
                if name in ok:
                    continue
                folder.remove(run_dir / f"{f}.ipynb")
                if base is not None and (base / f"{f}.ipynb").is_file() and not (base / f"{f}.ipynb").is_symlink():
                    folder.write(f"{f}.ipynb", (base / f"{f}.ipynb").read_bytes())
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
        write_status_page(run_dir, record)
        # always into the run folder first: a failed rendering never touches the book
        status = render_book(root, run_dir, strict=strict, stream=stream, output=run_dir)
        if status == 0 and record["complete"]:
            publish(run_dir / "_build" / "html", root / "_build" / "html")
            print(f"book: {root / '_build' / 'html' / 'index.html'}", file=stream)
    else:
        _write_json(run_dir / "record.json", record)
    for n, c in failed.items():
        where = f"code cell {c['cell']}" if c.get("cell") is not None else "before any cell"
        print(f"FAILED {n} at {where}: {c.get('error', '')}", file=stream)
    return 1 if failed else status


def _record_chapter(folder: RunFolder, run_dir: Path, f: str, data_before: dict | None) -> None:
    """Record what one chapter's worker wrote: its notebook, its log, its result, its data files."""
    name = Path(f).name
    written = (f"{f}.ipynb", f"logs/{name}.log", f".work/{name}.result.json")
    folder.record(*written)  # a file the worker never wrote is recorded as nothing, and no longer claimed
    if data_before is not None:
        folder.adopt(Path("data") / name, data_before)
