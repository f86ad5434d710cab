#!/usr/bin/env python3
"""The core path: the words of prose a reader meets with every fold of the book closed.

    python tools/core_words.py            # one line per page, then the total
    python tools/core_words.py --limit N  # and exit 1 when the total is above N

The pages are those of ``_toc.yml`` (in its order) except the API reference and
the status page, which nobody reads through. A page's core text is its Markdown
with these left out:

* the front matter, code cells (``{code-cell}``) and display math (``$$...$$``,
  ``{math}``); inline math, and roles such as ``{glue:text}`` or ``{ref}``,
  count as one word each;
* every directive that is folded when the page opens: ``{dropdown}``,
  ``{toggle}``, and any directive whose options carry a ``dropdown`` or
  ``toggle`` class (an exercise's ``{solution}`` with ``:class: dropdown``, an
  ``{admonition}`` made foldable), with everything nested in it;
* label lines such as ``(name)=``, and directives' options (``:label: ...``).

A word is a run of letters (with inner apostrophes or hyphens). ``make test``
prints the count; the book's target is at most 15,000 words.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SKIPPED_PAGES = ("api", "status")
_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*(?P<directive>\{[^}]*\})?")
_FOLDED = {"{dropdown}", "{toggle}", "{code-cell}", "{math}"}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def pages(root: Path) -> list[Path]:
    """The Markdown pages of the table of contents, in its order, without the API and status pages."""
    toc = (root / "_toc.yml").read_text()
    names = re.findall(r"^\s*(?:-\s*)?(?:root|file):\s*(\S+)", toc, flags=re.M)
    return [root / f"{n}.md" for n in names if Path(n).name not in SKIPPED_PAGES and (root / f"{n}.md").exists()]


def _folded(directive: str, options: list[str]) -> bool:
    if directive in _FOLDED or not directive:  # a plain ``` block is code
        return True
    return any(re.match(r":class:.*\b(dropdown|toggle)\b", o.strip()) for o in options)


def core_text(text: str) -> str:
    """The text of a MyST page that a reader sees with every fold closed."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    lines, kept, open_blocks = text.split("\n"), [], []  # open_blocks: (fence, folded) innermost last
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        match = _FENCE.match(stripped)
        if match and open_blocks and stripped == open_blocks[-1][0]:
            open_blocks.pop()
        elif match:
            options, j = [], i + 1
            while j < len(lines) and lines[j].strip().startswith(":") and not _FENCE.match(lines[j].strip()):
                options.append(lines[j])
                j += 1
            inside_fold = any(f for _, f in open_blocks)
            open_blocks.append((match["fence"], inside_fold or _folded(match["directive"] or "", options)))
            i = j - 1  # a directive's options (":label: ...", ":class: ...") are not prose
        elif not any(f for _, f in open_blocks):
            kept.append(lines[i])
        i += 1
    prose = "\n".join(kept)
    prose = re.sub(r"\$\$.*?\$\$", " ", prose, flags=re.S)
    prose = re.sub(r"\$[^$\n]+\$", " x ", prose)
    prose = re.sub(r"\{[a-z:-]+\}`[^`]*`", " x ", prose)
    return re.sub(r"^\(.*\)=\s*$", "", prose, flags=re.M)


def count(text: str) -> int:
    """The number of core words of a page's text."""
    return len(_WORD.findall(core_text(text)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="the project's root (holds _toc.yml)")
    ap.add_argument("--limit", type=int, default=None, help="exit 1 when the total is above this")
    args = ap.parse_args(argv)
    total = 0
    for page in pages(Path(args.root)):
        words = count(page.read_text())
        total += words
        print(f"{words:6d}  {page.relative_to(args.root)}")
    print(f"core path: {total} words" + (f" (limit {args.limit})" if args.limit else " (target 15000)"))
    return 0 if args.limit is None or total <= args.limit else 1


if __name__ == "__main__":
    sys.exit(main())
