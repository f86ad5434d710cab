"""Derivations that several chapters use are written once and referenced (issue 29).

The first-moment shift of the softmax layer, ``b(n, d_K)`` at leading order and its
exact form (one softmax row's mean energy), is derived in the finite-size chapter
under the label ``first-moment-shift`` (its proposition ``prop-mean-shift``); every
other page that names it links there instead of deriving it again.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").glob("*.md"))
HOME = "finite_size_table.md"
# The leading-order formula as typed in LaTeX: the 1/d_K term and the (3 e_1 - 2 e_2)/n term, in any spelling.
FORMULA = re.compile(r"\\frac\{\\beta\^4\}\{d_K\}\s*\+\s*\\frac\{3\s*(e_1|\(e\^\{\\beta\^2\}\s*-\s*1\))")
NAMED = re.compile(r"first[- ]moment shift", re.IGNORECASE)


def test_the_leading_order_formula_is_typed_on_one_page_only():
    typed = [p.name for p in PAGES if FORMULA.search(p.read_text())]
    assert typed == [HOME], typed
    home = (ROOT / "book" / HOME).read_text()
    assert "(first-moment-shift)=" in home and ":label: prop-mean-shift" in home


def test_every_page_that_names_the_shift_links_to_its_derivation():
    for p in PAGES:
        text = p.read_text()
        if p.name != HOME and NAMED.search(text):
            assert re.search(r"first-moment-shift>?`|prop-mean-shift`", text), (
                f"{p.name} names the shift, links nowhere"
            )


def test_the_formula_pattern_matches_both_spellings_it_replaced():
    assert FORMULA.search(r"b = \frac{e^{\beta^2}}{e_1}\left( \frac{\beta^4}{d_K} + \frac{3 e_1 - 2 e_2}{n} \right)")
    assert FORMULA.search(r"\big(\frac{\beta^4}{d_K} + \frac{3(e^{\beta^2}-1) - 2(e^{2\beta^2}-1)}{n}\big)")
