"""The teaching page: its class plan fills 80 of 90 minutes and says so, every page and label it cites
exists, and every slider setting it shows is one the chapter's static slider precomputes."""

import ast
import re
from pathlib import Path

from bookrun.explore import value_label

BOOK = Path(__file__).resolve().parents[1] / "book"
PAGE = BOOK / "teaching.md"
TOC = BOOK.parent / "_toc.yml"


def plan_minutes(text: str) -> list[int]:
    """The Minutes column of the page's plan: the first Markdown table whose header starts with it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\|\s*Minutes\s*\|", line))
    assert re.match(r"\|[-\s|:]+\|$", lines[start + 1]), "the plan's header has no separator row"
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(int(line.split("|")[1].strip()))
    return rows


def targets(text: str, role: str) -> set[str]:
    """The targets of every ``{role}`...``` in ``text`` (``Text <target>`` or ``target``)."""
    found = set()
    for body in re.findall(r"\{" + role + r"\}`([^`]+)`", text):
        m = re.search(r"<([^<>]+)>\s*$", body)
        found.add((m.group(1) if m else body).strip())
    return found


def book_labels() -> set[str]:
    """Every label the book defines: ``(name)=`` targets, directive ``:label:`` and figure ``name:`` options."""
    labels = set()
    for path in BOOK.glob("*.md"):
        text = path.read_text()
        labels |= set(re.findall(r"^\(([\w-]+)\)=\s*$", text, flags=re.M))
        labels |= set(re.findall(r"^\s*:label:\s*([\w-]+)\s*$", text, flags=re.M))
        labels |= set(re.findall(r"^\s*:?name:\s*([\w-]+)\s*$", text, flags=re.M))
    return labels


def test_the_plan_fills_80_minutes_and_states_its_slack():
    text = PAGE.read_text()
    minutes = plan_minutes(text)
    assert len(minutes) >= 5 and all(m > 0 for m in minutes), minutes
    assert sum(minutes) == 80, minutes
    assert "The plan fills 80 of the 90 minutes; the other 10 are slack" in text


def test_every_cited_page_and_label_exists():
    text = PAGE.read_text()
    docs, refs = targets(text, "doc"), targets(text, "ref")
    assert docs and refs
    missing_docs = sorted(d for d in docs if not (BOOK / f"{d}.md").exists())
    assert not missing_docs, missing_docs
    missing_refs = sorted(refs - book_labels())
    assert not missing_refs, missing_refs


def test_the_page_follows_the_intro_in_the_table_of_contents():
    files = re.findall(r"^\s*(?:root|- file):\s*(\S+)\s*$", TOC.read_text(), flags=re.M)
    assert files[:2] == ["book/intro", "book/teaching"], files[:3]


def test_the_helpers_see_what_they_check():
    sample = "| Minutes | What |\n|---|---|\n| 40 | a |\n| 50 | b |\n\nafter\n"
    assert plan_minutes(sample) == [40, 50]
    assert targets("{ref}`the diagram <fig-x>` and {doc}`intro`", "ref") == {"fig-x"}
    assert targets("{ref}`the diagram <fig-x>` and {doc}`intro`", "doc") == {"intro"}


def test_the_exercises_handed_out_are_of_their_kind():
    """The page's pen-and-paper list holds only exercises marked so in their chapters, and its
    "Seconds" list only quick ones (tests/test_exercises.py reads the classes)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_exercises import CHAPTERS, exercises

    classes = {label: cls for path in CHAPTERS for label, (cls, *_) in exercises(path).items()}
    text = PAGE.read_text()
    pen = text[text.index("## Pen and paper") : text.index("## Seconds")]
    quick = text[text.index("## Seconds") : text.index("## Running the class")]
    for section, kind in ((pen, "pen-and-paper"), (quick, "quick")):
        cited = targets(section, "ref")
        assert len(cited) >= 4, cited
        assert {classes.get(label) for label in cited} == {kind}, {label: classes.get(label) for label in cited}


def static_spec(chapter: str) -> tuple[list[str], list[str]]:
    """The layer labels (``"default"`` first) and the ``beta`` labels of a chapter's static slider:
    the ``static=("beta", values, layers)`` literal of its explorer cell, as the slider labels them."""
    text = (BOOK / f"{chapter}.md").read_text()
    start = text.index("static=(") + len("static=")
    depth = 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if depth == 0:
            break
    name, values, *layers = ast.literal_eval(text[start : end + 1])
    assert name == "beta", name
    labels = ["default"] + [
        ", ".join(f"{k} = {value_label(v)}" for k, v in layer.items()) for layer in (layers or [()])[0]
    ]
    return labels, [value_label(float(v)) for v in values]


def shown_settings(text: str) -> dict[str, set[tuple[str, str]]]:
    """``{chapter: {(layer, beta)}}`` of the explorers section: each explorer's paragraph links its
    chapter, and each setting reads `` `layer: L`, `beta = B` `` (then `` `beta = B2` `` at the same layer)."""
    section = text[text.index("## The explorers") : text.index("## Pen and paper")]
    found: dict[str, set[tuple[str, str]]] = {}
    for block in re.split(r"^(?=\*\*[A-Z]\. )", section, flags=re.M)[1:]:
        chapter = re.search(r"\{doc\}`its chapter <([\w-]+)>`", block).group(1)
        pairs = found.setdefault(chapter, set())
        for m in re.finditer(r"`layer: ([^`]+)`,\s+`beta = ([\d.]+)`((?:,?\s+then\s+`beta = [\d.]+`)*)", block):
            pairs |= {(m.group(1), b) for b in [m.group(2), *re.findall(r"`beta = ([\d.]+)`", m.group(3))]}
    return found


def test_every_slider_setting_of_the_plan_is_precomputed():
    """A setting the page tells the teacher to show is a frame of that chapter's static slider (no kernel)."""
    shown = shown_settings(PAGE.read_text())
    assert set(shown) == {"denominator_replacement", "covariance_approximation", "query_substitution"}, shown
    for chapter, pairs in shown.items():
        layers, betas = static_spec(chapter)
        assert len(layers) >= 2, f"{chapter}: its static slider has no layer beside the default"
        missing = sorted((layer, b) for layer, b in pairs if layer not in layers or b not in betas)
        assert not missing, f"{chapter}: the page shows {missing}, not among {layers} x {betas}"
        assert {layer for layer, _ in pairs} == set(layers), f"{chapter}: a precomputed layer the plan never shows"
    # the plan's breaking layers, as the page's prose names them
    assert ("n = 64, d_k = 256", "1") in shown["denominator_replacement"]
    assert {("d_k = 8", "1"), ("d_k = 8", "2"), ("n = 64, d_k = 256", "1")} <= shown["covariance_approximation"]
    assert {("default", "2"), ("d_k = 8", "1")} <= shown["query_substitution"]


def test_the_settings_reader_sees_what_it_checks():
    sample = (
        "## The explorers\n**A. X** ({doc}`its chapter <ch>`).\n* `layer: default`, `beta = 1`: holds.\n"
        "* `layer: default`, `beta = 2`, then `beta = 2.5`: breaks.\n* `layer: d_k = 8`,\n  `beta = 1`.\n"
        "## Pen and paper\n"
    )
    assert shown_settings(sample) == {"ch": {("default", "1"), ("default", "2"), ("default", "2.5"), ("d_k = 8", "1")}}
    layers, betas = static_spec("covariance_approximation")
    assert layers == ["default", "d_k = 8", "n = 64, d_k = 256"] and betas == ["0.5", "1", "1.5", "2"]


def test_the_sheets_are_linked_from_the_page():
    assert {"exercise_sheet", "solution_sheet"} <= targets(PAGE.read_text(), "doc")
