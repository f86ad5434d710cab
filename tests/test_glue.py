"""bookrun.glue.values: every value under its prefixed name, unchanged, not displayed."""

import numpy as np
import pytest

import bookrun.glue


@pytest.fixture
def calls(monkeypatch):
    import myst_nb

    seen = []
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: seen.append((name, value, display)))
    return seen


def test_glues_mapping_then_keywords_with_the_prefix(calls):
    value = np.float64(0.25)
    bookrun.glue.values("den_", {"rl-h1": 3}, slope=value, n=512)
    assert calls == [("den_rl-h1", 3, False), ("den_slope", value, False), ("den_n", 512, False)]
    assert calls[1][1] is value  # passed on unchanged


def test_no_prefix_and_bad_names(calls):
    bookrun.glue.values(m1_law=1.5)
    assert calls == [("m1_law", 1.5, False)]
    with pytest.raises(ValueError, match="glued twice: a"):
        bookrun.glue.values("x_", {"a": 1}, a=2)
    with pytest.raises(TypeError, match="must be strings"):
        bookrun.glue.values("x_", {1: 1})
    assert len(calls) == 1
