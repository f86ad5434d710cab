"""The batch: chapters executed with injected parameters, failures kept apart, resumable."""

import json
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from bookrun.batch import BatchError, chapter_parameters, is_chapter, load_chapter, run_batch, toc_files
from bookrun.runfolder import RunLock

ROOT = Path(__file__).resolve().parents[1]
FRONT = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
        format_version: 0.13
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    """)


def chapter(body_cells):
    cells = "\n".join(f"```{{code-cell}} ipython3\n{c}\n```\n" for c in body_cells)
    return (
        FRONT
        + '\n# A chapter\n\n```{code-cell} ipython3\n:tags: [parameters]\nscale = "default"\nseed = 0\n```\n\n'
        + cells
    )


@pytest.fixture
def book(tmp_path):
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "_toc.yml").write_text(
        textwrap.dedent("""\
        format: jb-book
        root: book/intro
        chapters:
          - file: book/good
          - file: book/bad
          - file: book/status
        """)
    )
    (tmp_path / "book" / "intro.md").write_text("# Intro\n\nText.\n")
    (tmp_path / "book" / "status.md").write_text("# Status\n\nplaceholder\n")
    (tmp_path / "book" / "good.md").write_text(
        chapter(
            [
                "from myst_nb import glue\nglue('answer', 6 * 7 if scale == 'ci' else 0, display=False)",
                "assert scale == 'ci'",
            ]
        )
    )
    (tmp_path / "book" / "bad.md").write_text(chapter(["x = 1", "raise RuntimeError('boom ' + scale)"]))
    return tmp_path


def test_toc_order_and_chapter_detection(book):
    assert toc_files(book) == ["book/intro", "book/good", "book/bad", "book/status"]
    assert is_chapter(book / "book" / "good.md") and not is_chapter(book / "book" / "intro.md")
    nb = load_chapter(book / "book" / "good.md", {"scale": "ci"})
    tags = [c.metadata["tags"] for c in nb.cells if c.cell_type == "code"]
    assert tags[0] == ["parameters"] and tags[1] == ["injected-parameters"]
    with pytest.raises(ValueError, match="no cell tagged"):
        (book / "book" / "none.md").write_text(FRONT + "```{code-cell} ipython3\nx = 1\n```\n")
        load_chapter(book / "book" / "none.md")


def test_a_failing_chapter_does_not_stop_the_others_and_runs_resume(book, capsys):
    out = book / "_build" / "runs" / "ci-test"
    assert run_batch(book, "ci", out=out, render=False) == 1
    err = capsys.readouterr().err
    assert "FAILED bad at code cell 3: RuntimeError: boom ci" in err  # its third code cell
    record = json.loads((out / "record.json").read_text())
    assert record["chapters"]["good"]["status"] == "ok"
    assert record["chapters"]["good"]["glued"] == {"answer": "42"}
    bad = record["chapters"]["bad"]
    assert bad["status"] == "failed" and "raise RuntimeError" in bad["cell_source"]
    assert (out / "book" / "good.ipynb").exists() and (out / "book" / "bad.ipynb").exists()
    assert record["versions"]["jax"] and record["device"] and "commit" in record
    assert record["chapters"]["bad"]["cell"] == 3 and record["complete"] is False

    # a new run never overwrites an earlier one unless asked
    with pytest.raises(SystemExit, match="exists"):
        run_batch(book, "ci", out=out, render=False)

    # resume: the finished chapter is not redone, the failed one is retried
    (book / "book" / "bad.md").write_text(chapter(["x = 1"]))
    mtime = (out / "book" / "good.ipynb").stat().st_mtime
    assert run_batch(book, "ci", out=out, resume=True, render=False) == 0
    assert "already done" in capsys.readouterr().err
    assert (out / "book" / "good.ipynb").stat().st_mtime == mtime
    assert json.loads((out / "record.json").read_text())["chapters"]["bad"]["status"] == "ok"


def test_slow_chapters_start_first_on_a_fresh_clone_then_by_the_last_run(book, capsys, monkeypatch):
    import bookrun.batch

    def started():
        return re.findall(r"\] (\w+) +started", capsys.readouterr().err)

    (book / "book" / "bad.md").write_text(chapter(["x = 1"]))
    monkeypatch.setattr(bookrun.batch, "SLOW_FIRST", ("bad",))  # no earlier run: the named slow one first
    assert run_batch(book, "ci", out=book / "_build" / "runs" / "ci-1", render=False, jobs=1) == 0
    assert started() == ["bad", "good"]  # the book's order is good, bad
    monkeypatch.setattr(bookrun.batch, "SLOW_FIRST", ())
    (book / "book" / "good.md").write_text(chapter(["x = 1"]))
    assert run_batch(book, "default", out=book / "_build" / "runs" / "default-1", render=False, jobs=1) == 0
    assert started() == ["good", "bad"]  # nothing known: the book's order
    # a fresh clone with a reference run of the scale on this kind of machine: its times decide
    ref = {
        "machine": "M",
        "accelerator": False,
        "scale": "ci",
        "jobs": 1,
        "commit": "c",
        "date": "2026-01-01",
        "chapters": {"bad": 30.0, "good": 2.0},
    }
    monkeypatch.setattr("bookrun.reference_times.REFERENCE_RUNS", (ref,))
    monkeypatch.setattr(bookrun.batch, "_device", lambda: ("cpu", False))
    shutil.rmtree(book / "_build" / "runs")  # no earlier run of any scale
    assert run_batch(book, "ci", out=book / "_build" / "runs" / "ci-2", render=False, jobs=1) == 0
    assert started() == ["bad", "good"]


def test_overrides_are_checked_against_each_chapters_parameters(book, capsys):
    (book / "book" / "bad.md").write_text(
        chapter(
            [
                "from myst_nb import glue\nglue('w', width, display=False)",
                "from bookrun.glue import figure_csv\nfigure_csv({'panel': 'p', 'quantity': 'q', 'series': "
                "[{'label': 'l', 'kind': 'ge', 'x': [1], 'y': [width], 'ci95': None}]}, data_dir, 'fig')",
            ]
        ).replace("seed = 0\n", "seed = 0\nwidth = 3\ndata_dir = None\n")
    )
    assert chapter_parameters(book / "book" / "bad.md") == {
        "scale": "default",
        "seed": 0,
        "width": 3,
        "data_dir": None,
    }
    with pytest.raises(BatchError, match="-p data_dir: set by the batch itself"):
        run_batch(book, "ci", None, {"data_dir": "/tmp"}, out=book / "r0", render=False)
    with pytest.raises(BatchError, match="-p typo: not a parameter of any chapter selected$"):
        run_batch(book, "ci", None, {"typo": 3}, out=book / "r0", render=False)
    with pytest.raises(BatchError, match="-p width: not a parameter .*the chapters that have it: bad"):
        run_batch(book, "ci", ["good"], {"width": 5}, out=book / "r1", render=False)
    with pytest.raises(BatchError, match="bad expects int"):
        run_batch(book, "ci", None, {"width": "wide"}, out=book / "r2", render=False)
    assert not (book / "r0").exists() and not (book / "r1").exists()  # refused before anything ran

    # a name some chapters have goes to those only, and the record says so per chapter
    assert run_batch(book, "ci", None, {"width": 5}, out=book / "r3", render=False) == 0
    chapters = json.loads((book / "r3" / "record.json").read_text())["chapters"]
    data_dir = str(book / "r3" / "data" / "bad")  # the batch gives the chapter a folder in the run folder
    assert chapters["bad"]["parameters"] == {"scale": "ci", "width": 5, "data_dir": data_dir}
    assert chapters["bad"]["glued"] == {"w": "5"}
    assert (book / "r3" / "data" / "bad" / "fig.csv").read_text().splitlines() == [
        "panel,quantity,series,kind,x,y,ci95",
        "p,q,l,ge,1,5,",
    ]
    assert chapters["good"]["parameters"] == {"scale": "ci"}


def test_bad_selections_and_folders_are_one_line_errors(book, capsys, monkeypatch):
    with pytest.raises(BatchError, match="no chapter matches 'denominator'; the chapters: good, bad"):
        run_batch(book, "ci", ["denominator"], render=False)
    with pytest.raises(BatchError, match="--timeout must be a positive"):
        run_batch(book, "ci", timeout=0, render=False)
    with pytest.raises(BatchError, match="cannot write the run folder /proc/x"):
        run_batch(book, "ci", out=Path("/proc/x"), render=False)
    with pytest.raises(BatchError, match="no earlier run"):
        run_batch(book, "ci", resume=True, render=False)

    # a folder in use by a live batch: neither --resume nor --force touches it
    out = book / "_build" / "runs" / "ci-live"
    out.mkdir(parents=True)
    (out / "record.json").write_text(json.dumps({"scale": "ci", "parameters": {"scale": "ci"}, "chapters": {}}))
    lock = RunLock(out)
    lock.acquire()
    try:
        with pytest.raises(BatchError, match=f"{out} is in use by another batch"):
            run_batch(book, "ci", out=out, resume=True, render=False)
        with pytest.raises(BatchError, match="in use"):
            run_batch(book, "ci", out=out, force=True, render=False)
        assert (out / "record.json").exists()
    finally:
        lock.release()

    # a full disk while the record is written: one line, and the last record stays readable
    import bookrun.batch

    real, calls = bookrun.batch._write_json, []

    def fill_up(path, data):
        calls.append(path)
        if len(calls) > 2:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(bookrun.batch, "_write_json", fill_up)
    out = book / "_build" / "runs" / "ci-full"
    assert run_batch(book, "ci", out=out, render=False) == 2
    err = capsys.readouterr().err
    assert "cannot write" in err and "No space left on device" in err and "--resume" in err
    assert "Traceback" not in err
    assert json.loads((out / "record.json").read_text())["parameters"] == {"scale": "ci"}
    assert not (out / ".lock").exists()


def visible(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", page.read_text()))


def test_a_partial_run_never_replaces_the_complete_book(book, capsys):
    (book / "book" / "bad.md").write_text(
        chapter(["from myst_nb import glue\nglue('other', 7, display=False)", "print('bad fixed')"])
    )
    (book / "book" / "good.md").write_text(
        (book / "book" / "good.md").read_text() + "\nThe answer is {glue:text}`answer`.\n"
    )
    (book / "book" / "bad.md").write_text((book / "book" / "bad.md").read_text() + "\nSeven: {glue:text}`other`.\n")
    runs = book / "_build" / "runs"
    assert run_batch(book, "ci", out=runs / "ci-1") == 0  # complete: renders the book
    page = book / "_build" / "html" / "book" / "good.html"
    assert "The answer is 42" in visible(page)
    before = page.stat().st_mtime_ns

    assert run_batch(book, "ci", ["bad*"], out=runs / "ci-2") == 0  # partial: its own folder
    err = capsys.readouterr().err
    assert "partial run" in err and "ci-1" in err
    assert page.stat().st_mtime_ns == before
    own = runs / "ci-2" / "_build" / "html" / "book"
    assert "Seven: 7" in visible(own / "bad.html")
    assert "The answer is 42" in visible(own / "good.html")  # from the complete run ci-1
    record = json.loads((runs / "ci-2" / "record.json").read_text())
    assert record["chapters"]["good"]["from_run"] == "ci-1" and record["complete"] is False

    # a complete run whose rendering fails (a glue name that no cell defines) leaves the book as it was
    (book / "book" / "bad.md").write_text((book / "book" / "bad.md").read_text() + "\n{glue:text}`missing`\n")
    assert run_batch(book, "ci", out=runs / "ci-3") == 1
    assert page.stat().st_mtime_ns == before and "rendering failed" in capsys.readouterr().err


def test_estimate_uses_this_machines_runs_then_a_measured_reference_never_a_guess(book, capsys, monkeypatch):
    from bookrun import batch
    from bookrun.reference_times import REFERENCE_RUNS

    run = book / "_build" / "runs" / "mine"
    run.mkdir(parents=True)
    chapters = {"good": {"status": "ok", "seconds": 12.5}, "bad": {"status": "failed", "seconds": 3.0}}
    (run / "record.json").write_text(json.dumps({"scale": "paper", "device": "D", "chapters": chapters}))
    todo = ["book/good", "book/bad", "book/model", "book/denominator_replacement"]
    rows = {r["chapter"]: r for r in batch.estimate(book, "paper", todo, "D", True)}
    assert rows["good"]["seconds"] == 12.5 and rows["good"]["basis"].startswith("measured here (mine")
    assert rows["bad"]["seconds"] is None  # a failed run measures nothing
    ref = next(r for r in REFERENCE_RUNS if r["scale"] == "paper" and r["accelerator"])
    assert rows["model"]["seconds"] == ref["chapters"]["model"] and "H200" in rows["model"]["basis"]
    assert rows["denominator_replacement"]["lower_bound"]  # stopped in the reference run
    # another machine: its own run does not count, and an accelerator's time is quoted but not used
    rows = {r["chapter"]: r for r in batch.estimate(book, "paper", todo, "E", False)}
    assert rows["good"]["seconds"] is None and rows["model"]["seconds"] is None
    assert "not measured on this kind of machine" in rows["model"]["basis"]
    # a CPU reference that recorded its matmul rate is scaled to this CPU's rate
    cpu = {
        "machine": "M",
        "accelerator": False,
        "scale": "paper",
        "jobs": 1,
        "commit": "c",
        "date": "d",
        "matmul_gflops": 60.0,
        "chapters": {"model": 100.0, "centering": (">", 50.0)},
    }
    monkeypatch.setattr("bookrun.reference_times.REFERENCE_RUNS", (cpu,))
    rows = {r["chapter"]: r for r in batch.estimate(book, "paper", ["book/model", "book/centering"], "E", False, 120.0)}
    assert rows["model"]["seconds"] == pytest.approx(50.0) and "120 GFLOP/s here, 60 there" in rows["model"]["basis"]
    assert rows["model"]["kind"] == "reference, scaled"
    assert rows["centering"]["seconds"] == pytest.approx(25.0) and rows["centering"]["lower_bound"]
    monkeypatch.setattr("bookrun.reference_times.REFERENCE_RUNS", REFERENCE_RUNS)
    # --estimate prints the table and runs nothing
    monkeypatch.setattr(batch, "_device", lambda: ("D", True))
    assert run_batch(book, "paper", only_estimate=True) == 0
    err = capsys.readouterr().err
    assert "good" in err and "12 s" in err and "measured here" in err
    assert re.search(r"good +12 s +measured ", err), err
    assert sorted(p.name for p in (book / "_build" / "runs").iterdir()) == ["mine"]


def test_a_chapter_without_a_cpu_measurement_is_priced_from_its_planned_layers(book):
    """The plan cell's layers, for the injected scale, and the estimate from their sizes: the sum of
    the layers' floors (gelib.learning_markers.simulation_seconds), a lower bound; nothing after the plan runs."""
    from bookrun import batch
    from gelib.config import AttentionConfig
    from gelib.learning_markers import simulation_seconds

    plan = (
        ":tags: [plan]\n"
        "from gelib import AttentionConfig\n"
        "SEEDS = 3 if scale == 'paper' else 1\n"
        "ns = (64, 128) if scale == 'paper' else (64,)\n"
        "SIMULATED = [AttentionConfig(n=n, d=n, h=2, d_k=16, d_o=64) for n in ns]"
    )
    (book / "book" / "sim.md").write_text(chapter([plan, "raise RuntimeError('simulating')"]))
    layers, seeds = batch.planned_layers(book / "book" / "sim.md", {"scale": "paper"})
    assert seeds == 3 and [c.n for c in layers] == [64, 128] and isinstance(layers[0], AttentionConfig)
    assert batch.planned_layers(book / "book" / "sim.md")[1] == 1  # the chapter's own default scale
    assert batch.planned_layers(book / "book" / "good.md") is None  # no plan cell
    rows = batch.estimate(book, "paper", ["book/sim", "book/good"], "E", False, 50.0, 0.25)
    want = simulation_seconds(layers, 3, (50e9, 0.25))
    assert rows[0]["seconds"] == pytest.approx(want) and rows[0]["lower_bound"]
    assert "2 softmax layers x 3 seeds at 50 GFLOP/s" in rows[0]["basis"]
    assert rows[1]["seconds"] is None
    # the table says which rows are extrapolated from sizes, and a small lower bound is not "> 0 s"
    assert rows[0]["kind"] == "from sizes" and rows[1]["kind"] == "none"
    text = batch.format_estimate(rows, "paper", "E", 2)
    assert "extrapolated from sizes, not measured: sim" in text and "from sizes" in text.splitlines()[1]
    assert "> 0 s" not in batch.format_estimate([{**rows[0], "seconds": 0.034}], "ci", "E", 2)
    assert "> 0.034 s" in batch.format_estimate([{**rows[0], "seconds": 0.034}], "ci", "E", 2)
    (book / "book" / "broken.md").write_text(chapter([":tags: [plan]\nSIMULATED = undefined_name"]))
    with pytest.raises(batch.BatchError, match="broken.md: the cells up to its plan failed: NameError"):
        batch.planned_layers(book / "book" / "broken.md")


def test_simulation_seconds_is_the_sum_of_the_layers_floors():
    from gelib.config import AttentionConfig
    from gelib.learning_markers import simulation_seconds
    from gelib.spectra import estimate_seconds, seed_flops

    a, b = AttentionConfig(n=256, d=256, h=4, d_k=64, d_o=512), AttentionConfig(n=512, d=512, h=8, d_k=64, d_o=256)
    rates = (4e10, 0.2)
    f = seed_flops(a, ("mha",))
    want_a = 5 * ((f["attention"] + f["output"]) / 4e10 + 0.2 / 64)  # one eigensolve of 256 = 1024 / 4
    assert estimate_seconds(a, 5, rates, ("mha",)) == pytest.approx(want_a)
    want = estimate_seconds(a, 5, rates, ("mha",)) + estimate_seconds(b, 5, rates, ("mha",))
    assert simulation_seconds([a, b, a], 5, rates) == pytest.approx(want)  # each layer once


def test_chapter_rates_are_measured_with_one_blas_thread_as_the_chapters_run(monkeypatch):
    """The rate that scales a CPU reference run is measured as the kernels run: in a child
    process with OPENBLAS_NUM_THREADS=1 (set before NumPy loads its BLAS), not in this one."""
    from bookrun import batch

    seen = {}
    real = subprocess.run

    def spy(cmd, **kwargs):
        seen["env"] = kwargs["env"]
        return real(cmd, **kwargs)

    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    monkeypatch.setattr(batch.subprocess, "run", spy)
    rates = batch.chapter_rates()
    assert seen["env"]["OPENBLAS_NUM_THREADS"] == "1"
    assert rates.matmul > 1e8 and 0 < rates.eig < 60 and (rates.busy is None or "busy" in rates.busy)


def test_the_kernels_share_one_compilation_cache_under_build_unless_the_user_set_one(book, monkeypatch):
    from bookrun.batch import compilation_cache_env

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    (book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/jit\n")
    (book / "book" / "jit.md").write_text(
        chapter(
            [
                "import os\nimport jax\nfrom myst_nb import glue\n"
                "glue('cache', os.environ['JAX_COMPILATION_CACHE_DIR'], display=False)\n"
                "assert float(jax.jit(lambda x: 3 * x + 1)(2.0)) == 7.0",
            ]
        )
    )
    out = book / "_build" / "runs" / "cache"
    assert run_batch(book, "ci", out=out, render=False) == 0
    cache = book / "_build" / "jax-cache"
    assert json.loads((out / "record.json").read_text())["chapters"]["jit"]["glued"] == {"cache": f"'{cache}'"}
    assert any(p.name.endswith("-cache") for p in cache.iterdir())  # the kernel wrote its compilation there
    # the user's choice wins, an empty value (the cache off) included
    assert compilation_cache_env(book, {"JAX_COMPILATION_CACHE_DIR": ""}) == {}
    assert compilation_cache_env(book, {})["JAX_COMPILATION_CACHE_DIR"] == str(cache)


def test_the_device_is_asked_once_per_process_and_again_where_the_environment_changes(monkeypatch):
    """The child that reports JAX's devices starts once per process and device environment (the
    tests run many batches in one process); a changed JAX_PLATFORMS asks again, and a failed
    answer ("unknown") is never kept."""
    from bookrun import execute

    calls = []
    answers = iter([("unknown", False), ("1 x cpu (cpu)", False), ("1 x cpu (cpu)", False)])
    monkeypatch.setattr(execute, "_DEVICES", {})
    monkeypatch.setattr(execute, "_probe_device", lambda: calls.append(1) or next(answers))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert execute._device() == ("unknown", False)
    assert execute._device() == execute._device() == ("1 x cpu (cpu)", False)
    assert len(calls) == 2
    monkeypatch.setenv("JAX_PLATFORMS", "")
    execute._device()
    assert len(calls) == 3
