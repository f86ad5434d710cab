"""Every chapter's exercises: at least one for pen and paper and one that takes seconds.

Each ``{exercise}`` directive carries one of three classes, and a title that says
it to the reader (sphinx-exercise prints it after the number):

* ``pen-and-paper`` ("Pen and paper"): a derivation or an estimate; no code, no rerun;
* ``quick`` ("Seconds"): the chapter's explorer at a stated setting: its static
  slider on the published page (precomputed, so instant) or ``explore(...)`` in a
  live notebook (one layer, a few seconds), or one short command on one layer;
* ``rerun`` ("A rerun"): the chapter rerun with other parameters (minutes).

A solution of a quick exercise describes what the build drew; it quotes no
measured number unless the build glued it (no decimal number or percentage
outside math and ``{glue:...}`` roles).
"""

import re
from pathlib import Path

import pytest

from bookrun.batch import is_chapter

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p for p in (ROOT / "book").glob("*.md") if is_chapter(p))
TITLES = {"pen-and-paper": "Pen and paper", "quick": "Seconds", "rerun": "A rerun"}
#: A solution that holds code cells, in sphinx-exercise's gated form.
GATED = re.compile(r"^```\{solution-start\}\s*(\S+)\n(.*?)^```\{solution-end\}", re.MULTILINE | re.DOTALL)
FENCE = re.compile(r"^(`{3,})\{(exercise|solution)\}([^\n]*)\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str):
    """``(kind, argument, options, body)`` of every exercise and solution directive."""
    for m in FENCE.finditer(text):
        lines = m.group(4).splitlines()
        options = dict(re.match(r":(\S+):\s*(.*)", ln).groups() for ln in lines if re.match(r":\S+:", ln))
        body = "\n".join(ln for ln in lines if not re.match(r":\S+:", ln))
        yield m.group(2), m.group(3).strip(), options, body


def exercises(path: Path) -> dict:
    """``{label: (class, title, text, solution text)}`` of one chapter."""
    out, solutions = {}, {}
    for kind, arg, options, body in blocks(path.read_text()):
        if kind == "exercise":
            out[options.get("label")] = (options.get("class"), arg, body)
        else:
            solutions[arg] = body
    for m in GATED.finditer(path.read_text()):
        solutions[m.group(1)] = "\n".join(ln for ln in m.group(2).splitlines() if not re.match(r":\S+:", ln))
    return {label: (*v, solutions.get(label)) for label, v in out.items()}


def visible_numbers(text: str) -> list[str]:
    """Decimal numbers and percentages in ``text`` outside math, code and glue roles."""
    text = re.sub(
        r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\{glue:[a-z]+\}`[^`]*`|\{[a-z:]+\}`[^`]*`", " ", text, flags=re.DOTALL
    )
    return re.findall(r"\d+\.\d+|\d+\s?%", text)


def test_the_contract_reads_the_fences_of_a_chapter():
    text = (
        "```{exercise} Pen and paper\n:label: ex-a\n:class: pen-and-paper\n\nDerive $x = 1.5$.\n```\n\n"
        "````{solution} ex-a\n:class: dropdown\n\nIt is 2.5.\n````\n"
    )
    ((k1, a1, o1, b1), (k2, a2, o2, b2)) = blocks(text)
    assert (k1, a1, o1["label"], o1["class"]) == ("exercise", "Pen and paper", "ex-a", "pen-and-paper")
    assert (k2, a2) == ("solution", "ex-a") and "2.5" in b2
    assert visible_numbers(b2) == ["2.5"] and visible_numbers(b1) == []
    assert visible_numbers("{glue:text}`x:.2f` and 3 % and $a = 0.4$") == ["3 %"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_has_a_pen_and_paper_exercise_and_a_quick_one(path):
    ex = exercises(path)
    assert ex, f"{path.name} has no exercise"
    for label, (cls, title, text, solution) in ex.items():
        assert cls in TITLES, f"{path.name}: exercise {label} has class {cls!r}, not one of {sorted(TITLES)}"
        assert title.startswith(TITLES[cls]), f"{path.name}: {label}'s title {title!r} does not say {TITLES[cls]!r}"
        assert solution is not None, f"{path.name}: exercise {label} has no solution"
        if cls == "pen-and-paper":
            assert not re.search(r"\brerun\b|python -m|explore\(", text, re.IGNORECASE), (
                f"{path.name}: {label} is for pen and paper but asks for a run"
            )
        if cls == "quick":
            assert re.search(r"slider|explore\(|python -m gelib", text), (
                f"{path.name}: quick exercise {label} names no slider, explore(...) call or command"
            )
            assert not visible_numbers(solution), (
                f"{path.name}: the solution of {label} types measured numbers {visible_numbers(solution)}: glue them"
            )
    classes = {cls for cls, *_ in ex.values()}
    assert {"pen-and-paper", "quick"} <= classes, f"{path.name}: exercise classes {sorted(classes)}"
