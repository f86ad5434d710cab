"""The teaching page: its class plan adds up to 90 minutes, and every page and label it cites exists."""

import re
from pathlib import Path

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


def test_the_plan_adds_up_to_90_minutes():
    minutes = plan_minutes(PAGE.read_text())
    assert len(minutes) >= 5 and all(m > 0 for m in minutes), minutes
    assert sum(minutes) == 90, minutes


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
