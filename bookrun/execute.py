"""One chapter executed by Papermill in a worker process, and what the run records of the machine.

:func:`execute_chapter` executes one chapter into an ``.ipynb`` and returns its
record entry (status, glued numbers, seconds, the failing code cell);
the batch starts each chapter as a worker, ``python bookrun/execute.py SPEC``
(``_worker``), so that nothing of gelib or JAX is imported in the batch
itself. :func:`compilation_cache_env` gives every kernel one JAX compilation
cache; :func:`default_jobs` the chapters run at once; the device, the commit
and the package versions go into the run's record.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

__all__ = [
    "VERSIONED",
    "DEVICE_ENV",
    "COMPILATION_CACHE_BYTES",
    "compilation_cache_env",
    "default_jobs",
    "execute_chapter",
]

VERSIONED = ("gelib", "jax", "jaxlib", "numpy", "scipy", "matplotlib", "papermill", "jupyter-book", "myst-nb")


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


#: The environment variables that choose the devices a child process's JAX sees (the key of
#: ``_device``'s answers within one process).
DEVICE_ENV = ("JAX_PLATFORMS", "JAX_PLATFORM_NAME", "CUDA_VISIBLE_DEVICES", "XLA_FLAGS")
_DEVICES: dict[tuple, tuple[str, bool]] = {}


def _device() -> tuple[str, bool]:
    """The JAX devices the chapters will see, and whether they are accelerators.

    Asked in a child process: initialising JAX here would hold GPU memory for
    the whole run, memory the chapters' kernels then lack. The answer is kept for
    this process, per Python and :data:`DEVICE_ENV` (a child's start and JAX's import
    take about 1.3 s; one process runs many batches in the tests); an answer that
    could not be had is asked again."""
    key = (sys.executable, *(os.environ.get(v) for v in DEVICE_ENV))
    if key not in _DEVICES:
        found = _probe_device()
        if found[0] == "unknown":
            return found
        _DEVICES[key] = found
    return _DEVICES[key]


def _probe_device() -> tuple[str, bool]:
    """``_device``'s question, asked of a new Python."""
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
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.utils import run_sync

    from bookrun.chapters import glued_values, load_chapter

    t0 = time.perf_counter()
    entry: dict = {}
    # The kernel is ours to stop: when the batch ends this worker (Ctrl-C), the kernel is
    # killed and waited for before the worker exits, so that nothing writes into the chapter's
    # log after the batch has recorded it (an orphaned kernel notices its parent's exit only
    # a second later, and says so in the log).
    km = AsyncKernelManager(kernel_name="python3")
    try:
        nb = load_chapter(source, parameters)
        executed = papermill.execute_notebook(
            nb,
            str(target),
            kernel_name="python3",
            km=km,
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
    finally:
        if km.has_kernel:
            run_sync(km.shutdown_kernel)(now=True)
    entry["seconds"] = round(time.perf_counter() - t0, 2)
    return entry


def _worker(spec_path: str) -> int:
    """A batch worker (``python bookrun/execute.py SPEC``): executes one chapter and
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
    from bookrun.runfolder import write_json

    write_json(Path(spec["result"]), entry)
    return 0


if __name__ == "__main__":
    # run as a script by the batch: the checkout's bookrun, also where gelib is not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bookrun.startup import skip_slow_imports

    skip_slow_imports()  # papermill imports nbformat: a second less per chapter (bookrun/startup.py)
    sys.exit(_worker(sys.argv[1]))
