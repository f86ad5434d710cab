"""bookrun.glue.values: every value under its prefixed name, not displayed; NumPy scalars as Python numbers."""

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
    value, array = np.float64(0.25), np.arange(3)
    bookrun.glue.values("den_", {"rl-h1": 3}, slope=value, n=np.int64(512), a=array)
    assert calls[:3] == [("den_rl-h1", 3, False), ("den_slope", 0.25, False), ("den_n", 512, False)]
    # NumPy 2 writes a scalar's repr as "np.float64(0.25)", which {glue:text}`name:.2f` cannot format
    assert type(calls[1][1]) is float and type(calls[2][1]) is int and repr(calls[1][1]) == "0.25"
    assert calls[3][1] is array  # anything else passed on unchanged


def test_no_prefix_and_bad_names(calls):
    bookrun.glue.values(m1_law=1.5)
    assert calls == [("m1_law", 1.5, False)]
    with pytest.raises(ValueError, match="glued twice: a"):
        bookrun.glue.values("x_", {"a": 1}, a=2)
    with pytest.raises(TypeError, match="must be strings"):
        bookrun.glue.values("x_", {1: 1})
    assert len(calls) == 1
