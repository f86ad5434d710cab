"""The batch stopped by Ctrl-C or killed at random points, then resumed: nothing is lost, and
the command printed after Ctrl-C continues the same selection. (Apart from tests/test_batch.py:
these take two minutes, and ``make test`` runs each file on one core.)"""

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import test_batch
from test_batch import chapter

book = test_batch.book  # the fixture: a two-chapter book in tmp_path


def slow_book(book, seconds=0.6):
    """Three chapters that glue seeded random numbers between pauses, so that a
    kill lands inside a chapter."""
    (book / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        + "".join(f"  - file: book/slow{k}\n" for k in range(3))
        + "  - file: book/status\n"
    )
    for k in range(3):
        cells = [
            f"import time\nimport numpy as np\nfrom myst_nb import glue\nrng = np.random.default_rng(seed + {k})",
            f"time.sleep({seconds})\nglue('x{k}', float(rng.standard_normal()), display=False)",
            f"time.sleep({seconds})\nglue('y{k}', float(rng.standard_normal()), display=False)",
        ]
        (book / "book" / f"slow{k}.md").write_text(chapter(cells))
    return book


def _default_sigint():
    # A shell starts background jobs with SIGINT ignored, and a child inherits that: then Python
    # installs no KeyboardInterrupt handler and the Ctrl-C below would be lost. A terminal's batch has it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def batch_cli(book, *args):
    cmd = [sys.executable, "-m", "gelib", "batch", "--root", str(book), "--scale", "ci", "--no-render", *args]
    return subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


def glued(run):
    record = json.loads((run / "record.json").read_text())
    assert all(c["status"] == "ok" for c in record["chapters"].values()), record["chapters"]
    return {n: c["glued"] for n, c in record["chapters"].items()}


def test_ctrl_c_is_one_line_and_the_run_resumes_as_printed(book):
    slow_book(book, seconds=1.5)  # each chapter: a kernel's start, then 3 s of cells
    out = book / "_build" / "runs" / "ci-int"
    proc = batch_cli(book, "--out", str(out), "--jobs", "1", "--chapters", "slow0", "slow1", "-p", "seed", "3")
    while "started" not in proc.stderr.readline():
        pass
    time.sleep(2)  # inside the first chapter (its kernel starts in about 1.5 s)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # and an impatient second one, while the batch cleans up
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 3, err
    printed = err.split("continue with: ")[1].strip()
    python = str(Path(sys.executable).absolute())  # the Python that ran the batch, not a bare `python`
    assert printed.startswith(f"{shlex.quote(python)} -m gelib batch --scale ci --resume --out {out}"), printed
    statuses = {n: c["status"] for n, c in json.loads((out / "record.json").read_text())["chapters"].items()}
    assert "interrupted" in statuses.values() and "ok" not in statuses.values(), statuses
    # the printed command, run exactly as printed by a shell with no venv activated (no VIRTUAL_ENV, a PATH
    # without the venv), continues the same selection: two chapters, seed 3, no render
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = "/usr/bin:/bin"
    resumed = subprocess.run(
        printed, shell=True, cwd=book, env=env, capture_output=True, text=True, timeout=300, executable="/bin/sh"
    )
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads((out / "record.json").read_text())
    assert {n: c["status"] for n, c in record["chapters"].items()} == {"slow0": "ok", "slow1": "ok", "slow2": "not run"}
    assert record["parameters"] == {"scale": "ci", "seed": 3} and not (out / "_build").exists()
    assert record["selection"] == {"chapters": ["slow0", "slow1"], "render": False, "jobs": 1, "timeout": None}


def test_killed_at_random_points_then_resumed_loses_nothing(book):
    """Fault injection: SIGKILL to the whole batch (workers included) at random
    points, then --resume; the record equals that of an uninterrupted run."""
    slow_book(book)
    runs = book / "_build" / "runs"
    clean = batch_cli(book, "--out", str(runs / "ci-clean"))
    clean.communicate(timeout=300)
    reference = glued(runs / "ci-clean")
    assert set(reference) == {"slow0", "slow1", "slow2"} and all(len(v) == 2 for v in reference.values())

    rng = random.Random(20261203)
    # two kill points, the Ctrl-C test adds a third stop: one at a random time of a random chapter, one
    # once the second chapter's notebook is on disk and its kernel writes its log (nothing has recorded
    # them yet: a resume that did not know them as the batch's would refuse to overwrite them)
    for trial in range(2):
        out = runs / f"ci-kill{trial}"
        proc = batch_cli(book, "--out", str(out), "--jobs", "1")
        chapter_k, starts = (rng.randint(1, 3), 0) if trial == 0 else (2, 0)
        while starts < chapter_k:  # inside the k-th chapter
            starts += "started" in proc.stderr.readline()
        if trial == 0:
            time.sleep(rng.uniform(0.0, 2.5))
        else:
            partial = [out / "book" / "slow1.ipynb", out / "logs" / "slow1.log"]
            deadline = time.monotonic() + 60
            while not (partial[0].exists() and partial[1].stat().st_size) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert partial[0].exists() and partial[1].stat().st_size, "the chapter wrote no notebook and no log"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        assert json.loads((out / "record.json").read_text())["parameters"] == {"scale": "ci"}  # still readable
        resumed = batch_cli(book, "--out", str(out), "--resume")
        _, err = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, err
        assert glued(out) == reference
