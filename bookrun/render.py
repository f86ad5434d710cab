"""Rendering a run folder: the mirror tree of the book, Jupyter Book with execution off, publishing.

:func:`mirror_files` is what a run folder needs beside the executed chapters
(the book's configuration with execution off, the bibliography, the plain
pages, each exercise sheet filled with its exercises' text: :func:`sheet_page`);
:func:`prepare_mirror` writes it through the folder's manifest
(:class:`bookrun.runfolder.RunFolder`), after checking every path;
:func:`missing_chapters` names the chapters without an executed notebook and
:func:`fill_missing_chapters` puts their sources in their place;
:func:`hide_injected_in_run` removes Papermill's injected parameters cell from the pages
(tag ``remove-cell``; the notebook keeps it); :func:`render_book` runs Jupyter Book (``-n -W`` by default) into
``<output>/_build/html`` and records what it wrote; :func:`publish` swaps a
rendered copy in as the book's ``_build/html``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

from .chapters import ROOT_FILES, BatchError, is_chapter, toc_files
from .runfolder import RunFolder
from .startup import jupyter_book_command

__all__ = [
    "mirror_files",
    "chapter_exercises",
    "sheet_page",
    "prepare_mirror",
    "missing_chapters",
    "fill_missing_chapters",
    "status_page",
    "write_status_page",
    "render_book",
    "publish",
    "INJECTED_TAG",
    "hide_injected_parameters",
    "hide_injected_in_run",
]


def mirror_files(root: Path) -> dict[str, bytes]:
    """What :func:`prepare_mirror` writes into a run folder, ``{relative path: bytes}``: the
    book's configuration with execution off, ``_toc.yml``, the bibliography and the pages
    that are not chapters."""
    root = Path(root)
    files = {name: (root / name).read_bytes() for name in ROOT_FILES}
    cfg = files["_config.yml"].decode()
    if "execute_notebooks: cache" not in cfg:
        raise BatchError("_config.yml has no 'execute_notebooks: cache' line to turn off")
    files["_config.yml"] = cfg.replace("execute_notebooks: cache", "execute_notebooks: 'off'").encode()
    for extra in sorted((root / "book").glob("*.bib")):
        files[f"book/{extra.name}"] = extra.read_bytes()
    pages = [(f, root / f"{f}.md") for f in toc_files(root)]
    exercises = {}
    for f, src in pages:
        if src.exists() and is_chapter(src):
            exercises.update({label: (f, ex) for label, ex in chapter_exercises(src.read_text()).items()})
    for f, src in pages:
        if src.exists() and not is_chapter(src):
            text = src.read_text()
            files[f"{f}.md"] = sheet_page(text, exercises, f).encode() if SHEET.search(text) else src.read_bytes()
    return files


#: A sheet page lists its exercises between ``<!-- sheet: exercises -->`` (or ``solutions``) and
#: ``<!-- end of sheet -->``, one ``* {ref}`label``` a line; the render puts their text there.
SHEET = re.compile(r"^<!-- sheet: (exercises|solutions) -->\n(.*?)^<!-- end of sheet -->$", re.M | re.S)
_DIRECTIVE = re.compile(r"^(`{3,})\{(exercise|solution)\}([^\n]*)\n(.*?)^\1[ \t]*$", re.M | re.S)
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$")
_GATED = re.compile(
    r"^```\{solution-start\}[ \t]*(\S+)\n(?::[\w-]+:[^\n]*\n)*```\n(.*?)^```\{solution-end\}[ \t]*\n```", re.M | re.S
)


def chapter_exercises(text: str) -> dict[str, dict]:
    """``{label: {"title", "text", "solution"}}`` of every ``{exercise}`` directive (and its
    ``{solution}``, or its gated ``{solution-start}`` ... ``{solution-end}``) in a chapter's MyST
    source ``text``: the directive's title and body, less its options (``:label:``, ``:class:``...)."""
    found: dict[str, dict] = {}
    solutions = {}
    for m in _DIRECTIVE.finditer(text):
        lines = m.group(4).split("\n")
        options = {}
        while lines and _OPTION.match(lines[0]):
            key, value = _OPTION.match(lines.pop(0)).groups()  # type: ignore[union-attr]
            options[key] = value
        body = "\n".join(lines).strip("\n")
        if m.group(2) == "exercise" and options.get("label"):
            found[options["label"]] = {"title": m.group(3).strip(), "text": body, "solution": None}
        elif m.group(2) == "solution":
            solutions[m.group(3).strip()] = body
    for m in _GATED.finditer(text):  # a solution that holds code cells: sphinx-exercise's gated form
        solutions[m.group(1)] = m.group(2).strip("\n")
    for label, ex in found.items():
        ex["solution"] = solutions.get(label)
    return found


def _elsewhere(body: str, chapter: str) -> str:
    """``body`` of a chapter's exercise as another page shows it: its glued numbers read from the
    chapter (``{glue:text}`chapter.ipynb::key:format```), its code cells as plain code."""

    def glue(m: re.Match) -> str:
        key, _, fmt = m.group(2).partition(":")
        return f"{m.group(1)}`{Path(chapter).name}.ipynb::{key}:{fmt or 's'}`"

    body = re.sub(r"(\{glue:text\})`([^`:]+(?::[^`]*)?)`", glue, body)
    return re.sub(r"^(`{3,})\{code-cell\}[^\n]*\n((?::[\w-]+:[^\n]*\n)*)", r"\1python\n", body, flags=re.M)


def sheet_page(text: str, exercises: dict[str, tuple[str, dict]], page: str = "the sheet") -> str:
    """A sheet page's source ``text`` with its list of exercises replaced by their text (on an
    ``exercises`` sheet) or their solutions' (on a ``solutions`` sheet), each an admonition
    titled with the exercise's reference (its number) and title, and a link to its chapter.

    ``exercises`` maps each label to ``(chapter, exercise)`` (:func:`chapter_exercises`): the
    chapter's directive is the one source of the text. A label that is not there, or text
    that would define a label a second time, is refused (:class:`~bookrun.chapters.BatchError`)."""

    def fill(m: re.Match) -> str:
        labels = re.findall(r"^\*\s*\{ref\}`([\w-]+)`\s*$", m.group(2), flags=re.M)
        missing = [label for label in labels if label not in exercises]
        if missing or not labels:
            raise BatchError(f"{page}: no exercise {missing or 'listed'} in the chapters")
        out = []
        for label in labels:
            chapter, ex = exercises[label]
            body = ex["text"] if m.group(1) == "exercises" else ex["solution"]
            if body is None:
                raise BatchError(f"{page}: exercise {label} has no solution")
            body = _elsewhere(body, chapter)
            if re.search(r"^:label:|^\([\w-]+\)=\s*$", body, flags=re.M):
                raise BatchError(f"{page}: the text of {label} defines a label, which the sheet would repeat")
            # a tilde fence: its title may hold a role's backticks (a backtick fence's may not)
            fence = "~" * max(3, 1 + max((len(f) for f in re.findall(r"~{3,}", body)), default=0))
            title = re.sub(r"^Pen and paper: ", "", ex["title"])
            head = "" if m.group(1) == "exercises" else "Solution of "
            out.append(
                f"{fence}{{admonition}} {head}{{ref}}`{label}`: {title}\n:class: sheet-{m.group(1)[:-1]}\n\n"
                f"{body}\n\n*From {{doc}}`/{chapter}`.*\n{fence}\n"
            )
        return "\n".join(out)

    return SHEET.sub(fill, text)


def prepare_mirror(root: Path, run_dir: Path) -> None:
    """Make ``run_dir`` a renderable copy of the book at ``root`` (:func:`mirror_files`),
    every path checked before the first is written (:meth:`~bookrun.runfolder.RunFolder.check_writable`).
    Executed chapters (``.ipynb``) are put there by the batch, or by the chapter tests
    (``conftest.py``)."""
    folder = RunFolder(run_dir)
    files = mirror_files(root)
    folder.check_writable(files)
    for rel, data in files.items():
        if not (folder.path / rel).is_file() or (folder.path / rel).read_bytes() != data:
            folder.write(rel, data)


def missing_chapters(root: Path, run_dir: Path) -> list[str]:
    """The chapters (paths as in ``_toc.yml``) with no executed notebook in ``run_dir``."""
    root, run_dir = Path(root), Path(run_dir)
    return [f for f in toc_files(root) if is_chapter(root / f"{f}.md") and not (run_dir / f"{f}.ipynb").exists()]


def fill_missing_chapters(root: Path, run_dir: Path) -> list[str]:
    """Copy the source of every chapter that has no executed notebook in
    ``run_dir`` (so the book still builds); returns their names."""
    folder = RunFolder(run_dir)
    missing = missing_chapters(root, run_dir)
    folder.check_writable([f"{f}.md" for f in missing])
    for f in missing:
        folder.write(f"{f}.md", (Path(root) / f"{f}.md").read_bytes())
    return [Path(f).name for f in missing]


def status_page(record: dict) -> str:
    """The page ``book/status.md`` of a run: its chapters, times, device, commit and versions."""
    rows = ["| chapter | status | time (s) | failing code cell | executed in |", "|---|---|---|---|---|"]
    for name, ch in record["chapters"].items():
        rows.append(
            f"| `{name}` | {ch['status']} | {ch.get('seconds', 0):.1f} | {ch.get('cell') or ''} "
            f"| {ch.get('from_run', 'this run')} |"
        )
    return (
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


def write_status_page(run_dir: Path, record: dict) -> None:
    """Fill the run's copy of ``book/status.md`` (where the book has that page)."""
    if (Path(run_dir) / "book" / "status.md").exists():
        RunFolder(run_dir).write("book/status.md", status_page(record))


#: The tag Papermill gives the cell it injects after a chapter's ``parameters`` cell.
INJECTED_TAG = "injected-parameters"


def hide_injected_parameters(nb) -> bool:
    """Tag the injected parameters cell of the notebook ``nb`` (Papermill's :data:`INJECTED_TAG`)
    ``remove-cell``, so that the page does not show it (the chapter's own parameters cell
    stays, folded); the cell stays in the notebook. Returns whether ``nb`` changed."""
    changed = False
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if INJECTED_TAG in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
            changed = True
    return changed


def hide_injected_in_run(run_dir: Path) -> list[str]:
    """:func:`hide_injected_parameters` on every executed chapter (``.ipynb``) of the run folder
    ``run_dir`` that the run wrote (:meth:`~bookrun.runfolder.RunFolder.owns`; another file is
    left as it is); returns the paths rewritten."""
    import nbformat

    folder = RunFolder(run_dir)
    done = []
    for path in sorted(Path(run_dir).glob("**/*.ipynb")):
        rel = folder.rel(path)
        if rel.startswith("_build/") or not folder.owns(rel):
            continue
        nb = nbformat.read(str(path), as_version=4)
        if hide_injected_parameters(nb):
            folder.write(rel, nbformat.writes(nb) + "\n")
            done.append(rel)
    return done


def publish(html: Path, book: Path) -> None:
    """Replace the book's HTML folder by a copy of ``html``, swapping by renames."""
    new, old = book.with_name(book.name + ".new"), book.with_name(book.name + ".old")
    shutil.rmtree(new, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    shutil.copytree(html, new)
    if book.exists():
        book.rename(old)
    new.rename(book)
    shutil.rmtree(old, ignore_errors=True)


def render_book(
    root: Path, run_dir: Path, strict: bool = True, stream: TextIO | None = None, output: Path | None = None
) -> int:
    """Render the executed mirror tree ``run_dir`` into ``<output>/_build/html``
    (``output`` defaults to ``root``) with Jupyter Book, execution off.
    ``strict``: nitpicky, warnings as errors (``-n -W``), so a broken
    cross-reference or a missing glued value fails. Returns 0 on success, else 1.
    What Jupyter Book wrote into a run folder ``output`` is recorded in its manifest."""
    stream = stream or sys.stderr
    output = Path(output) if output is not None else Path(root)
    folder = RunFolder(run_dir)
    target = None if output.resolve() == Path(root).resolve() else RunFolder(output)
    log_rel = "logs/render.log"
    folder.check_writable([log_rel])
    before = {}
    if target is not None:
        target.check_links()
        before = target.snapshot("_build") if (target.path / "_build").is_dir() else {}
    hide_injected_in_run(run_dir)
    cmd = jupyter_book_command("build", *(["-n", "-W"] if strict else []), str(run_dir))
    cmd += ["--path-output", str(output), "--keep-going"]
    log_path = folder.write(log_rel, "")
    print(f"rendering ({'-n -W' if strict else 'lenient'}) ... full log: {log_path}", file=stream, flush=True)
    t0 = time.perf_counter()
    try:
        with open(log_path, "w") as log:
            res = subprocess.run(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT)
    finally:
        folder.record(log_rel)
        if target is not None and (target.path / "_build").is_dir():
            target.adopt("_build", before)
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
