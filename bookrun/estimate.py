"""What each chapter is expected to take at a scale on this machine, and on what basis.

:func:`estimate` prices each chapter from its latest run here, a reference run
on this kind of machine (:mod:`bookrun.reference_times`), scaled by the matmul
rates where the CPU differs, or from the sizes of the layers it plans to
simulate (:func:`planned_layers`); :func:`format_estimate` prints the table a
``--scale paper`` run shows before it starts (and ``batch --estimate``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .chapters import BatchError, is_chapter, load_chapter
from .runfolder import read_record

__all__ = ["estimate", "format_estimate", "planned_layers", "chapter_rates", "ESTIMATE_KINDS"]


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
    from bookrun import reference_times

    here: dict[str, tuple[float, str]] = {}
    runs = [p.parent for p in (root / "_build" / "runs").glob("*/record.json")]
    for run in sorted(runs, key=lambda p: (p / "record.json").stat().st_mtime, reverse=True):  # newest first
        rec = read_record(run) or {}
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
    Raises :class:`~bookrun.chapters.BatchError` if the cells fail.
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


def _reference_seconds(scale: str, accelerator: bool) -> dict[str, float]:
    """Chapter seconds of the newest reference run (:mod:`bookrun.reference_times`) of ``scale``
    on the same kind of machine, ``{}`` if none (a stopped chapter counts its lower bound)."""
    from bookrun import reference_times

    refs = [r for r in reference_times.REFERENCE_RUNS if r["scale"] == scale and r["accelerator"] == accelerator]
    if not refs:
        return {}
    ref = max(refs, key=lambda r: r["date"])
    return {n: float(v[1] if isinstance(v, (tuple, list)) else v) for n, v in ref["chapters"].items()}
