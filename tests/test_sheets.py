"""The class's exercise and solution sheets: filled at render time from the chapters' directives.

The sheet pages in ``book/`` list labels only; ``bookrun.render.sheet_page`` puts each exercise's
text (or its solution's) there, so the chapter's directive stays the one source of that text.
"""

import re
import sys
from pathlib import Path

import pytest

from bookrun.chapters import BatchError
from bookrun.render import SHEET, chapter_exercises, mirror_files, sheet_page

ROOT = Path(__file__).resolve().parents[1]
SHEETS = ("book/exercise_sheet", "book/solution_sheet")

CHAPTER = """
```{exercise} Pen and paper: a sum
:label: ex-a
:class: pen-and-paper

Show that $1 + 1 = 2$ at {glue:text}`n_max` and {glue:text}`rate:.2f`.
```

````{solution} ex-a
:class: dropdown

It is {glue:text}`two:.0f`.
````

```{exercise} Seconds: a cell
:label: ex-b
:class: quick

Run it.
```

```{solution-start} ex-b
:class: dropdown
```

Like this:

```{code-cell} ipython3
:tags: [hide-input]

print(2)
```

```{solution-end}
```
"""


def test_the_exercises_of_a_chapter_are_read_with_their_solutions():
    ex = chapter_exercises(CHAPTER)
    assert set(ex) == {"ex-a", "ex-b"}
    assert ex["ex-a"]["title"] == "Pen and paper: a sum" and ex["ex-a"]["text"].startswith("Show that")
    assert ":label:" not in ex["ex-a"]["text"] and ex["ex-a"]["solution"] == "It is {glue:text}`two:.0f`."
    assert ex["ex-b"]["solution"].startswith("Like this:") and "print(2)" in ex["ex-b"]["solution"]


def test_a_sheet_holds_the_exercises_or_the_solutions_and_nothing_else():
    exercises = {label: ("book/ch", ex) for label, ex in chapter_exercises(CHAPTER).items()}
    page = "# Sheet\n\n<!-- sheet: exercises -->\n* {ref}`ex-a`\n<!-- end of sheet -->\n\nafter\n"
    out = sheet_page(page, exercises)
    assert out.startswith("# Sheet\n\n~~~{admonition} {ref}`ex-a`: a sum\n:class: sheet-exercise\n") and "after" in out
    # the glued numbers are read from the chapter, with the default format where there was none
    assert "{glue:text}`ch.ipynb::n_max:s` and {glue:text}`ch.ipynb::rate:.2f`" in out
    assert "It is" not in out and "*From {doc}`/book/ch`.*" in out
    solved = sheet_page(page.replace("exercises", "solutions").replace("ex-a", "ex-b"), exercises)
    assert "Solution of {ref}`ex-b`: Seconds: a cell" in solved and "Run it." not in solved
    assert "```python\n\nprint(2)\n```" in solved and "code-cell" not in solved and ":tags:" not in solved
    with pytest.raises(BatchError, match="no exercise"):
        sheet_page(page.replace("ex-a", "ex-z"), exercises)
    labelled = {"ex-a": ("book/ch", {**exercises["ex-a"][1], "text": "(eq-x)=\n$$x$$"})}
    with pytest.raises(BatchError, match="defines a label"):
        sheet_page(page, labelled)


def teaching_pen_and_paper() -> list[str]:
    text = (ROOT / "book" / "teaching.md").read_text()
    section = text[text.index("## Pen and paper") : text.index("## Seconds")]
    return list(dict.fromkeys(re.findall(r"\{ref\}`([\w-]+)`", section)))


def subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(any(line == other for other in it) for line in short)


def test_the_sheets_hold_the_class_exercises_from_their_chapters():
    """Both sheets list the teaching page's pen-and-paper exercises, in its order, by label only; the
    rendered sheets carry each exercise's text (or solution) exactly as its chapter has it."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_exercises import CHAPTERS, exercises

    classes = {label: cls for path in CHAPTERS for label, (cls, *_) in exercises(path).items()}
    want = teaching_pen_and_paper()
    assert len(want) >= 5
    files = mirror_files(ROOT)
    source = {label: ex for p in CHAPTERS for label, ex in chapter_exercises(p.read_text()).items()}
    for sheet, kind in zip(SHEETS, ("text", "solution")):
        stub = (ROOT / f"{sheet}.md").read_text()
        lists = [m.group(2) for m in SHEET.finditer(stub)]
        assert lists and all(re.fullmatch(r"(\* \{ref\}`[\w-]+`\n)+", body) for body in lists), sheet
        labels = re.findall(r"\{ref\}`([\w-]+)`", "".join(lists))
        assert labels == want, (sheet, labels, want)
        assert {classes[label] for label in labels} == {"pen-and-paper"}
        filled = files[f"{sheet}.md"].decode()
        assert "<!-- sheet:" not in filled
        for label in labels:  # every line of the text, in its order (less a code cell's fence and options)
            body = [
                ln for ln in source[label][kind].splitlines() if not ln.startswith(("```", ":")) and "{glue:" not in ln
            ]
            assert subsequence(body, filled.splitlines()), (sheet, label)
        other = "solution" if kind == "text" else "text"
        assert not any(source[label][other][:80] in filled for label in labels), sheet  # never both


def test_the_sheets_are_pages_of_the_book():
    toc = (ROOT / "_toc.yml").read_text()
    assert all(f"- file: {sheet}\n" in toc for sheet in SHEETS)
