"""Helpers moved out of the learning chapters (Figures 2 and 3), each against a second computation."""

import numpy as np
import pytest

from gelib import AttentionConfig, figure_data
from gelib import learning as L
from gelib import learning_markers as MK
from gelib.freeprob import marchenko_pastur
from gelib.spectra import Summary


class PairSpectra:
    """Stand-in for :class:`gelib.learning_markers.SoftmaxSpectra`: MP(1/2) samples, the paths asked for recorded."""

    def __init__(self):
        self.rng, self.paths = np.random.default_rng(0), []

    def pair(self, cfg, *path):
        self.paths.append(path)
        x = self.rng.normal(size=(2, 3, 40, 80))
        ev = np.linalg.eigvalsh(x @ np.swapaxes(x, -1, -2) / 80)
        return ev[0] * (1 + 1e-3), ev[1][:, :20]


LAYERS = [AttentionConfig(n=256, d=256, h=4, d_k=64, d_o=512), AttentionConfig(n=256, d=256, h=8, d_k=32, d_o=512)]


def test_measure_pairs_is_the_sequence_of_marker_calls():
    laws = MK.LimitLaws(law_fn=lambda c: marchenko_pastur(0.5))
    fn = lambda a, b: (
        L.expect(a, np.square) / L.expect(b, lambda x: x)
    )  # of two layers: m_2 of one over m_1 of the other
    spectra = PairSpectra()
    table = MK.MarkerTable(laws)
    got = table.measure_pairs(spectra, "d", "ratio", fn, LAYERS, "ratio", 3)
    assert spectra.paths == [("ratio", 3, 0), ("ratio", 3, 1)]  # layer i on the path with i appended
    # second method: the same draws through the explicit calls
    again, by_hand = PairSpectra(), MK.MarkerTable(laws)
    evs = [again.pair(c, "ratio", 3, i) for i, c in enumerate(LAYERS)]
    for c, (ev, _) in zip(LAYERS, evs):
        by_hand.measure_mean("d", f"h={c.h}, d_K={c.d_k}, d_O={c.d_o}", c, ev)
    per_seed = [fn(a, b) for a, b in zip(evs[0][0], evs[1][0])]
    want = by_hand.check(
        "d", "ratio", fn, LAYERS, per_seed, half_per_seed=[fn(a, b) for a, b in zip(evs[0][1], evs[1][1])]
    )
    assert got == want and table.markers == by_hand.markers
    assert [m.label for m in table.markers] == ["h=4, d_K=64, d_O=512, m_1", "h=8, d_K=32, d_O=512, m_1", "ratio"]
    assert got.mean == pytest.approx(np.mean(per_seed), rel=1e-12)  # the marker is the mean over seeds


def test_sharing_layers_keep_the_parameter_count():
    base = AttentionConfig(n=4096, d=4096, h=64, d_k=64, d_o=8192)  # Table D.3, 3(a)
    widths, budget = L.sharing_layers(base)
    assert [c.h_kv for c in widths] == [c.h_kv for c in budget] == [64, 32, 16, 8, 4, 2, 1]
    assert all(c == base.replace(h_kv=c.h_kv) for c in widths)
    # fixed N_par: the width w solves N_par = w (h d + 2 h_KV d + h d_O) to the nearest integer
    for c in budget:
        exact = L.n_params(base) / (c.h * c.d + 2 * c.h_kv * c.d + c.h * c.d_o)
        assert c.d_k == c.d_v == round(exact) and abs(L.n_params(c) / L.n_params(base) - 1) < 0.01
    assert [c.d_k for c in budget] == [64, 80, 91, 98, 102, 104, 106]  # Table D.3's 64 -> 106
    small = L.sharing_layers(AttentionConfig(n=512, d=512, h=8, d_k=64, d_o=1024))[0]
    assert [c.h_kv for c in small] == [8, 4, 2, 1]


def test_table_d1_comparison_against_the_panel():
    data = {
        "table_d1": [{"quantity": "q", "value": 2.0, "half_width": 0.1}, {"value": 9.0, "half_width": 9.0}],
        "series": [{"kind": "ge", "y": [1.0], "ci95": None}],
    }
    figure_data.add_markers(data, "a", [(1, Summary(4.0, 0.2, 0.1, 3)), (2, Summary(-2.0, 0.3, 0.1, 3))])
    figure_data.add_markers(data, "b", [(1, Summary(1.0, 0.1, 0.1, 3))])
    got = figure_data.table_d1_comparison(data)
    assert got == {"d1": 2.0, "hw": 0.1, "rel": pytest.approx(5.0), "ours": pytest.approx(15.0)}  # 0.3 / |-2|
