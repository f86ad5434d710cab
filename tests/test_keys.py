"""Named key streams (gelib.keys): deterministic, injective at each level, never coinciding."""

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from gelib.keys import stream, tag


def _data(k):
    return tuple(np.asarray(jax.random.key_data(k)).ravel().tolist())


def test_same_seed_and_path_give_the_same_key_in_another_process():
    code = (
        "import jax, numpy as np; from gelib.keys import stream; "
        "print(np.asarray(jax.random.key_data(stream(3, 'sweep', 512, 7))).tolist())"
    )
    outs = set()
    for hashseed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "JAX_PLATFORMS": "cpu"}
        outs.add(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout.strip()
        )
    assert len(outs) == 1
    assert outs.pop() == str(list(_data(stream(3, "sweep", 512, 7))))


def test_the_empty_path_is_the_seed_key_and_a_path_extends_its_parent():
    assert _data(stream(5)) == _data(jax.random.key(5))
    parent = stream(5, "sweep")
    assert _data(stream(5, "sweep", 64)) == _data(jax.random.fold_in(parent, 64))
    assert _data(stream(parent, 64)) == _data(stream(5, "sweep", 64))


def test_strings_and_integers_never_share_a_tag():
    assert tag(0) == 0 and tag(2**31 - 1) == 2**31 - 1
    names = ["sweep", "noise", "mc", "explore", "draw", "levels", "spectra", "teacher", "panel-a", "5"]
    tags = [tag(s) for s in names]
    assert len(set(tags)) == len(tags)
    assert all(2**31 <= t < 2**32 for t in tags)


@pytest.mark.parametrize("bad", [-1, 2**31, 1.5, True, None, ""])
def test_bad_path_elements_are_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        stream(0, bad)


def test_streams_never_coincide_at_paper_sizes():
    """Every stream a chapter derives at the paper scale (names x lengths x seeds, and
    head-indexed panels up to h = 128) is distinct. With the old integer tags, the
    streams 300 + h and 400 + 10 j + i of one chapter coincided (h = 100, j = i = 0)."""
    seen = {}
    names = ("sweep", "noise", "mc", "explore", "panel-a", "panel-b", "teacher")
    for name in names:
        for n in (128, 256, 512, 1024, 2048, 4096, 8192):
            for s in range(20):
                seen[_data(stream(0, name, n, s))] = (name, n, s)
        for h in range(1, 129):
            seen[_data(stream(0, name, h))] = (name, h)
    assert len(seen) == len(names) * (7 * 20 + 128)
    old = {300 + h for h in range(1, 129)} & {400 + 10 * j + i for j in range(10) for i in range(10)}
    assert old, "the old scheme's collision this test guards against"
