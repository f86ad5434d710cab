"""gelib.sweeps.agree_at_every_size: a joint (Bonferroni) Student-t check over the sizes of a sweep."""

import numpy as np
import pytest
import scipy.stats

from gelib.sweeps import agree_at_every_size


def test_agreement_threshold_and_z():
    values = np.array([[1.0, 2.0, 3.0], [10.0, 10.0, 13.0]])
    a = agree_at_every_size(values, [2.0, 11.0])
    assert a.threshold == pytest.approx(scipy.stats.t.ppf(1 - 0.05 / 4, 2))
    assert a.z == pytest.approx([0.0, 0.0])
    assert a.ok
    assert not agree_at_every_size(values, [2.0, 30.0]).ok


def test_agreement_false_alarm_rate_is_at_most_the_level():
    rng = np.random.default_rng(5)
    fails = sum(not agree_at_every_size(rng.standard_normal((4, 8)), np.zeros(4)).ok for _ in range(4000))
    assert 0.02 < fails / 4000 < 0.06  # Bonferroni: at most 5 %, and close to it for independent sizes
    # a shift of 4.5 standard errors of the mean at one size is found most of the time
    offset = np.array([[0.0], [0.0], [0.0], [4.5 / np.sqrt(8)]])
    shifted = sum(not agree_at_every_size(rng.standard_normal((4, 8)) + offset, np.zeros(4)).ok for _ in range(2000))
    assert shifted / 2000 > 0.5


def test_agreement_needs_seeds():
    with pytest.raises(ValueError):
        agree_at_every_size(np.ones((3, 1)), np.ones(3))
