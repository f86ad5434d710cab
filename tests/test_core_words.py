"""tools/core_words.py, the count of the words a reader meets with every fold closed.

Checked on small pages whose count is known by hand, and on the book against the same rules applied
page by page (a fold hides its text; code, display math and labels never count).
"""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("core_words", ROOT / "tools" / "core_words.py")
core_words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(core_words)

PAGE = """---
jupytext: {}
---
(label)=
# Three words here

Visible text with $x^2$ math.

$$
a + b = c
$$

```{code-cell} ipython3
print("not prose")
```

:::{dropdown} Folded title
hidden words everywhere
:::

```{solution} ex-a
:class: dropdown

hidden solution
```

```{exercise}
:label: ex-a

Shown exercise
```

::::{dropdown} Outer
:::{note}
nested hidden
:::
::::
"""


def test_counts_what_a_reader_sees():
    # "Three words here" (3) + "Visible text with x math" (5) + "Shown exercise" (2)
    assert core_words.count(PAGE) == 10


def test_the_book_pages_and_total(capsys):
    assert core_words.main(["--root", str(ROOT)]) == 0
    out = capsys.readouterr().out
    assert "book/intro.md" in out and "book/api.md" not in out and "book/status.md" not in out
    total = int(out.strip().splitlines()[-1].split()[2])
    assert total == sum(core_words.count(p.read_text()) for p in core_words.pages(ROOT))
    assert core_words.main(["--root", str(ROOT), "--limit", str(total - 1)]) == 1
