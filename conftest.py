"""Collect the book's Jupytext chapters as nbval notebooks, at "ci" scale.

nbval only collects ``.ipynb``; here a chapter (``book/*.md`` with a
``kernelspec`` in its front matter) is read with Jupytext, ``scale = "ci"``
is injected after its ``parameters`` cell (as Papermill would), and nbval's
own collector runs every cell. Chapters store no outputs, so nbval checks
that every cell runs; the chapters' ``assert``s check what they claim.

With ``--executed-dir DIR`` the outputs nbval received are kept: at the end
of the session every chapter whose cells all passed is written to
``DIR/<path>.ipynb``, and ``python -m gelib render DIR`` renders the book from
them, so the rendered book and the chapter tests share one execution.
"""

import os
from pathlib import Path
from unittest import mock

# Kernels inherit this: see the Makefile (XLA and OpenBLAS thread pools compete).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import nbformat  # noqa: E402
import nbval.plugin  # noqa: E402
import pytest  # noqa: E402

from bookrun.batch import (  # noqa: E402
    RUN_MARKER,
    compilation_cache_env,
    is_chapter,
    is_run_folder,
    load_chapter,
    mark_run_folder,
    unsafe_run_folder,
)
from bookrun.chapters import BatchError, toc_files  # noqa: E402
from bookrun.runfolder import RunFolder  # noqa: E402

CI_PARAMETERS = {"scale": "ci"}
#: The chapters that take longest at "ci" scale, slowest first (their cells' seconds in a
#: `make test` on the 2-core CI machine's kind); the other chapters follow in the book's order.
CI_SLOWEST_FIRST = ("readout_learning", "spectral_shapes", "finite_size_table", "parameter_sharing", "limit_law")
#: The test files that take longest (their durations in a `make test` on 2 cores, about 120 s
#: down to 35 s each), slowest first: they follow the chapters, so that the short files end the run
#: and the two workers finish together (started last, test_batch_interrupted alone kept one worker
#: busy for about 100 s after the other had finished).
SLOW_TEST_FILES = (
    "test_batch",
    "test_spectra",
    "test_batch_interrupted",
    "test_models_controls",
    "test_sampling",
    "test_numerics_host_linalg",
    "test_lab",
    "test_report",
)
ROOT = Path(__file__).resolve().parent
# One JAX compilation cache for the tests, their workers and the chapters' kernels, as the
# batch gives its kernels (bookrun.batch.compilation_cache_env); set before anything imports JAX.
os.environ.update(compilation_cache_env(ROOT))


class _Reader:
    """Stands in for ``nbformat`` inside nbval's collector: returns our notebook."""

    def __init__(self, nb):
        self._nb = nb

    def read(self, *args, **kwargs):
        return self._nb

    def __getattr__(self, name):
        return getattr(nbformat, name)


class ChapterFile(nbval.plugin.IPyNbFile):
    def collect(self):
        self.chapter_nb = load_chapter(self.path, CI_PARAMETERS)
        with mock.patch.object(nbval.plugin, "nbformat", _Reader(self.chapter_nb)):
            return list(super().collect())


def pytest_addoption(parser):
    parser.addoption(
        "--executed-dir",
        metavar="DIR",
        default=None,
        help="write every chapter that passed, with its outputs, to DIR (for `gelib render`)",
    )
    parser.addoption(
        "--time-table",
        metavar="N",
        type=int,
        default=0,
        help="end with the N files (chapters and test files) that took longest: seconds, share, tests",
    )


def pytest_collect_file(file_path, parent):
    opt = parent.config.option
    if (opt.nbval or opt.nbval_lax) and is_chapter(file_path):
        return ChapterFile.from_parent(parent, path=file_path)


_FAILED: set = set()


def pytest_collection_modifyitems(session, config, items):
    """The chapters first, the slowest first (:data:`CI_SLOWEST_FIRST`), then the slowest test
    files (:data:`SLOW_TEST_FILES`), then the other test files in their order. ``make test``
    spreads the suite over the cores with ``--dist loadfile`` (a chapter's cells, and a file's
    tests, on one worker, in order: a chapter's cells share one kernel): the longest files then
    start first instead of last, and the cores finish together."""
    slow = {name: k for k, name in enumerate(CI_SLOWEST_FIRST)}
    slow_files = {name: k for k, name in enumerate(SLOW_TEST_FILES)}

    def rank(item):
        stem = Path(item.path).stem
        if isinstance(item.parent, ChapterFile):
            return (0, slow.get(stem, len(slow)))
        return (1, slow_files.get(stem, len(slow_files)))

    items[:] = sorted(items, key=rank)  # stable: the cells of a chapter, and the tests of a file, keep their order


def pytest_configure(config):
    """``--executed-dir DIR`` must be a new or empty folder, or a run folder: the
    notebooks written there replace earlier ones, so never a folder of the user's."""
    out = config.getoption("executed_dir", None)
    if not out or hasattr(config, "workerinput"):  # a pytest-xdist worker: the controller checked it
        return
    out = Path(out)
    why = unsafe_run_folder(ROOT, out)
    if why is None and out.exists() and (not out.is_dir() or any(out.iterdir())) and not is_run_folder(out):
        why = f"{out} exists and is not a run folder (no {RUN_MARKER}); give a new or empty folder"
    if why:
        raise pytest.UsageError(f"--executed-dir: {why}")
    try:
        if out.exists():
            folder = RunFolder(out)
            folder.check_links()
            folder.check_writable(_chapter_targets())  # never a notebook the run folder did not write
    except BatchError as e:
        raise pytest.UsageError(f"--executed-dir: {e}") from None
    out.mkdir(parents=True, exist_ok=True)
    mark_run_folder(out, made_by="the chapter tests (--executed-dir)")
    config._executed_before = RunFolder(out).snapshot(".")


def _chapter_targets() -> list[str]:
    """Where ``--executed-dir`` keeps each chapter's executed notebook, relative to it."""
    return [f"{f}.ipynb" for f in toc_files(ROOT) if is_chapter(ROOT / f"{f}.md")]


#: Seconds (setup, call and teardown) and tests per file, as the reports arrive (from the workers too).
_SECONDS: dict[str, list] = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if report.failed:
        _FAILED.add(path)
    entry = _SECONDS.setdefault(path, [0.0, 0])
    entry[0] += report.duration
    entry[1] += report.when == "call"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """``--time-table N``: where the test time went, by file (a chapter's cells are one file)."""
    n = config.getoption("time_table")
    if n <= 0 or not _SECONDS:
        return
    total = sum(s for s, _ in _SECONDS.values())
    rows = sorted(_SECONDS.items(), key=lambda kv: -kv[1][0])
    chapters = sum(s for path, (s, _) in _SECONDS.items() if path.startswith("book/"))
    terminalreporter.section(f"where the time went: the {min(n, len(rows))} longest of {len(rows)} files")
    terminalreporter.write_line(f"{'seconds':>8} {'share':>6} {'tests':>6}  file")
    for path, (seconds, tests) in rows[:n]:
        terminalreporter.write_line(f"{seconds:8.1f} {100 * seconds / total:5.1f}% {tests:6d}  {path}")
    terminalreporter.write_line(
        f"{total:8.1f} seconds of tests in all (the workers' sum; chapters {chapters:.1f} s, "
        f"test files {total - chapters:.1f} s)"
    )


def pytest_sessionfinish(session, exitstatus):
    out = session.config.getoption("executed_dir")
    if not out:
        return
    chapters = {}
    for item in session.items:
        if isinstance(item.parent, ChapterFile):
            chapters.setdefault(item.parent, []).append(item)
    for chapter, items in chapters.items():
        if chapter.nodeid in _FAILED or any(getattr(i, "test_outputs", None) is None for i in items):
            continue  # failed or not run: `gelib render` names it as missing
        for item in items:
            item.cell.outputs = item.test_outputs
        target = Path(out) / Path(chapter.path).resolve().relative_to(ROOT).with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(chapter.chapter_nb, str(target))
    if not hasattr(session.config, "workerinput"):  # the controller: its sessionfinish comes after the workers'
        _record_executed(session.config, Path(out))


def _record_executed(config, out: Path) -> None:
    """Record in the run folder's manifest the notebooks this session wrote (after the
    workers': the controller's sessionfinish comes last), so that a later ``render`` or
    ``batch --force`` knows them from a user's files."""
    before = getattr(config, "_executed_before", {})
    folder = RunFolder(out)
    now = folder.snapshot(".")
    folder.record(*(rel for rel in _chapter_targets() if rel in now and now[rel] != before.get(rel)))
