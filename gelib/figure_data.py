"""The numbers of the paper's learning figures (2, 3) and of Figure D.1, for re-plotting.

:func:`panel` returns one panel as plain data::

    {"panel": "3a", "quantity": "arrival time", "x_label": "h_KV",
     "reading": {"epsilon": ..., "sigma": ..., "horizon": ...},
     "dimensions": {"n": 4096, "d": 4096, "h": 64, "h_kv": [1, ..., 64], ...},
     "series": [{"label": ..., "kind": "ge", "x": [...], "y": [...], "ci95": null}, ...],
     "table_d1": [{"quantity": ..., "value": ..., "half_width": ..., "relative_percent": ...}]}

The GE curves are functionals of the limit law of each layer at Table D.3's dimensions
(:func:`gelib.attention_law.output_law`, checked by :class:`gelib.learning_markers.LimitLaws`),
read as :data:`gelib.learning.TABLE_D1_READING` says; 2(b) is the coefficient-error map, one
series per output width; D1a-D1c are the densities of Figure D.1's limit laws (the book's
dimensions, ``n = 4096``: the paper does not give them). ``table_d1`` holds the paper's Table
D.1 rows of the panel (the value its largest error bar belongs to, and that half-width).
``dimensions`` lists each field of the panel's layers: one value where all share it, else the
sorted values. Panel 2d on its own grid adds ``"beta_range"``, ``"root_range"`` and
``"roots": {"unit": [...], "table_d1": [...]}``, every ``beta`` in :data:`D2_BETA_RANGE` where
the GE ratio crosses 1 and where it takes Table D.1's value (:func:`d2_roots`); its curve passes
through each.

:func:`add_simulated_markers` appends the MHA markers (``"kind": "mha"``, with ``ci95``, the
95 % Student-t half-widths over seeds) simulated on the layers of :func:`marker_layers` (the
chapters' choice below Table D.3's size), after :func:`marker_seconds` has priced them;
:func:`add_markers` appends markers computed elsewhere (the chapters'). :func:`to_rows`
flattens a panel into the rows of a CSV table, :func:`write_csv` writes them.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import scipy.optimize
import scipy.stats

from .config import AttentionConfig
from .learning import (
    TABLE_D1_READING,
    Reading,
    arrival_teacher_std,
    arrival_time,
    consistent_seeds,
    error_map_grid,
    error_teacher_std,
    fixed_budget_path,
    fixed_output_path,
    level_crossings,
    loss_teacher_std,
    readout_error,
    seed_bar,
    shared_widths,
    shrink,
    training_loss,
)
from .learning_markers import LimitLaws, SoftmaxSpectra, predicted_shift, simulation_seconds
from .presets import TABLE_D1
from .spectra import summarize

__all__ = [
    "PanelSpec",
    "PANELS",
    "d1_layer",
    "panel",
    "MARKER_BETAS",
    "marker_layers",
    "marker_layer_set",
    "marker_seconds",
    "add_simulated_markers",
    "add_markers",
    "table_d1_comparison",
    "D1_BETA_BRACKET",
    "d1_temperature",
    "D2_BETA_RANGE",
    "D2_ROOT_GRID",
    "D2_PEAK_BETAS",
    "ratio_2d",
    "d2_shift",
    "level_roots",
    "d2_roots",
    "d2_betas",
    "d2_summary",
    "teacher_bars",
    "teacher_glue",
    "to_rows",
    "write_csv",
]


def _layer(h: int, d_o: int, n: int = 4096, d: int = 4096, d_k: int = 64, d_v: int = 64, **kw) -> AttentionConfig:
    return AttentionConfig(n=n, d=d, h=h, d_k=d_k, d_v=d_v, d_o=d_o, **kw)


def _tied(h: int) -> AttentionConfig:
    """Figure 3(b)'s K=V layer: ``h d_K = h d_V = d_O = n / 2`` (n = 4096, d = 8192)."""
    w = 4096 // (2 * h)
    return AttentionConfig(n=4096, d=8192, h=h, d_k=w, d_v=w, d_o=2048, tie_kv=True)


def _ratio_pair(beta: float) -> tuple[AttentionConfig, AttentionConfig]:
    """Figure 2(d): ``(d_K, d_V) = (64, 192)`` over ``(128, 128)``, n = 8192, d = d_O = 12288, h = 96."""
    base = AttentionConfig(n=8192, d=12288, h=96, d_k=128, d_v=128, d_o=12288, beta=beta)
    return base.replace(d_k=64, d_v=192), base


# Each panel: (quantity, x label, series as (label, [(x, layers)]), the functional of a series point).
# A point's layers are one layer, or two for a ratio.
_Series = list[tuple[str, list[tuple[float, tuple[AttentionConfig, ...]]]]]


def _series_2a() -> _Series:
    return [(f"h = {h}", [(0.0, (_layer(h, 8192),))]) for h in (32, 64, 128)]


def _series_2c(step: int) -> _Series:
    fo = fixed_output_path(_layer(32, 2048), range(16, 121, step))
    fb = fixed_budget_path(_layer(32, 36864), range(32, 121, step))
    return [
        ("fixed output (d_O = 2048)", [(p.cfg.h, (p.cfg,)) for p in fo]),
        ("fixed budget (N_par of h = 32, d_O = 36864)", [(p.cfg.h, (p.cfg,)) for p in fb]),
    ]


def _series_2d(betas: Sequence[float]) -> _Series:
    return [("(64, 192) / (128, 128)", [(float(b), _ratio_pair(float(b))) for b in betas])]


def _series_3a() -> _Series:
    base, groups = _layer(64, 8192), (64, 32, 16, 8, 4, 2, 1)
    return [
        ("fixed widths (d_K = d_V = 64)", [(g, (base.replace(h_kv=g),)) for g in groups]),
        ("fixed parameter count (widths grow)", [(p.cfg.h_kv, (p.cfg,)) for p in shared_widths(base, groups)]),
    ]


def _series_3b() -> _Series:
    heads = (2, 4, 8, 16, 32)
    return [
        ("GQA (h_KV = h / 2)", [(h, (_tied(h).replace(tie_kv=False, h_kv=h // 2),)) for h in heads]),
        ("within-head K=V", [(h, (_tied(h),)) for h in heads]),
    ]


def _series_2b(step: int = 8, log2_step: float = 0.25) -> _Series:
    """One series per output width of the map (rows ``d_O``, points ``h``), Table D.3's ``n = 4096``."""
    hs, d_os = error_map_grid(4096, 16, 128, step, log2_step)
    return [(f"d_O = {d_o}", [(int(h), (_layer(int(h), int(d_o)),)) for h in hs]) for d_o in d_os]


def d1_layer(h: int, n: int = 4096, d_o: int | None = None, **kw) -> AttentionConfig:
    """Figure D.1's layers as the book chooses them (its dimensions are not in the paper):
    ``h d_V = n`` split into ``h`` heads, ``d_K = d_V = n / h``, ``d = max(n, d_O)``, ``d_O = n``
    unless given; the keywords (``h_kv``, ``tie_kv``, ``beta``) go to :class:`~gelib.AttentionConfig`."""
    d_o = n if d_o is None else d_o
    return AttentionConfig(n=n, d=max(n, d_o), h=h, d_k=n // h, d_o=d_o, **kw)


def _series_d1(name: str, n: int = 4096) -> _Series:
    """Figure D.1's panels at context length ``n``: one series per layer, the point ``x = 0``
    standing for the whole density."""
    layers = {
        "D1a": {f"h = {h}": d1_layer(h, n) for h in (1, 4, 16, 64)},
        "D1b": {f"d_O = {f}": d1_layer(4, n, d_o=int(n * v)) for f, v in (("n/2", 0.5), ("n", 1), ("2n", 2))},
        "D1c": {
            "unshared": d1_layer(4, n),
            "GQA (h_KV = 2)": d1_layer(4, n, h_kv=2),
            "MQA (h_KV = 1)": d1_layer(4, n, h_kv=1),
            "K=V tied": d1_layer(4, n, tie_kv=True),
        },
    }[name]
    return [(label, [(0.0, (cfg,))]) for label, cfg in layers.items()]


@dataclasses.dataclass(frozen=True)
class PanelSpec:
    """One panel: its plotted quantity, its x axis, and the function that lists its series."""

    quantity: str
    x_label: str
    series: Callable[..., _Series]


#: The panels :func:`panel` knows, by the name ``python -m gelib figure`` takes.
PANELS: dict[str, PanelSpec] = {
    "2a": PanelSpec("relative training loss", "t", _series_2a),
    "2b": PanelSpec("coefficient error (one series per d_O)", "h", _series_2b),
    "2c": PanelSpec("coefficient error", "h", _series_2c),
    "2d": PanelSpec("coefficient-error ratio", "beta", _series_2d),
    "3a": PanelSpec("arrival time", "h_KV", _series_3a),
    "3b": PanelSpec("coefficient error", "h", _series_3b),
    "D1a": PanelSpec("density of the limit law", "eigenvalue", functools.partial(_series_d1, "D1a")),
    "D1b": PanelSpec("density of the limit law", "eigenvalue", functools.partial(_series_d1, "D1b")),
    "D1c": PanelSpec("density of the limit law", "eigenvalue", functools.partial(_series_d1, "D1c")),
}


def _read_error(mu: Any, cfg: AttentionConfig, reading: Reading) -> float:
    """The coefficient error of ``cfg`` on ``mu`` (a law or eigenvalues) as ``reading`` reads it."""
    return readout_error(mu, cfg, reading.horizon, reading.sigma)


def _dimensions(layers: Sequence[AttentionConfig]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in ("n", "d", "h", "h_kv", "d_k", "d_v", "d_o", "beta", "tie_kv"):
        values = sorted({getattr(c, field) for c in layers})
        out[field] = values[0] if len(values) == 1 else values
    return out


def panel(
    name: str,
    reading: Reading = TABLE_D1_READING,
    laws: LimitLaws | None = None,
    times: Sequence[float] = tuple(np.geomspace(1e-2, 1e2, 41)),
    step: int = 4,
    betas: Sequence[float] | None = None,
    map_step: int = 16,
    map_log2_step: float = 0.5,
    points: int = 200,
    beta_points: int = 13,
    beta_extra: Iterable[float] = (),
) -> dict[str, Any]:
    """The GE curves of one panel at Table D.3's dimensions (the module's schema).

    ``name``: a key of :data:`PANELS` (a :class:`KeyError` names the known ones);
    ``laws``: a :class:`~gelib.learning_markers.LimitLaws` cache to share between calls;
    ``times``: the time grid of 2(a); ``step``: the spacing of the head counts of 2(c);
    ``betas``: the inverse temperatures of 2(d) (default :func:`d2_betas` of ``beta_points``
    points, every root and ``beta_extra``, so that the curve passes through them); ``map_step``
    and ``map_log2_step``: the spacing of the head counts and of ``log2 d_O`` of the map 2(b)
    (:func:`gelib.learning.error_map_grid`); ``points``: about how many points of each density
    of Figure D.1 (:meth:`gelib.freeprob.Law.grid`, clustered at the edges; an atom's mass is
    in its series' label).

    Panel 2d on its own grid (``betas`` not given) also has ``"beta_range"`` (the smallest and
    largest ``beta`` drawn), ``"roots"`` (:func:`d2_roots` on :data:`D2_BETA_RANGE`: every
    ``beta`` where the GE ratio crosses 1, and every one where it takes Table D.1's value) and
    ``"root_range"``, the range they were searched on.
    """
    if name not in PANELS:
        raise KeyError(f"unknown panel {name!r}; known panels: {', '.join(PANELS)}")
    spec = PANELS[name]
    laws = LimitLaws(1e-9) if laws is None else laws
    roots = d2_roots(laws, reading) if name == "2d" and betas is None else None
    if roots is not None:
        betas = d2_betas(roots, beta_points, beta_extra)
    args = {"2b": (map_step, map_log2_step), "2c": (step,), "2d": (betas,)}.get(name, ())
    t = np.asarray(times, dtype=float)

    def error(cfg: AttentionConfig) -> float:
        return _read_error(laws(cfg), cfg, reading)

    series, layers = [], []
    for label, pts in spec.series(*args):
        layers += [c for _, cs in pts for c in cs]
        if name == "2a":
            (cfg,) = pts[0][1]
            x, y = t.tolist(), training_loss(laws(cfg), t).tolist()
        elif name.startswith("D1"):
            law = laws(pts[0][1][0])
            grid = law.grid(points)
            x, y = grid.tolist(), law.density(grid).tolist()
            label += "".join(f" (atom of mass {m:.3g} at {loc:g})" for loc, m in law.atoms())
        else:
            x = [p for p, _ in pts]
            if name == "3a":
                y = [arrival_time(laws(cs[0]), reading.epsilon) for _, cs in pts]
            elif name == "2d":
                y = [error(cs[0]) / error(cs[1]) for _, cs in pts]
            else:
                y = [error(cs[0]) for _, cs in pts]
        series.append({"label": label, "kind": "ge", "x": x, "y": [float(v) for v in y], "ci95": None})
    out: dict[str, Any] = {
        "panel": name,
        "quantity": spec.quantity,
        "x_label": spec.x_label,
        "reading": dataclasses.asdict(reading),
        "dimensions": _dimensions(layers),
        "series": series,
        "table_d1": [
            {"quantity": row.quantity, "value": row.value, "half_width": row.absolute, "relative_percent": row.relative}
            for row in TABLE_D1
            if row.panel == name
        ],
    }
    if roots is not None:
        x = series[0]["x"]
        out |= {"beta_range": [min(x), max(x)], "root_range": list(D2_BETA_RANGE), "roots": roots}
    return out


#: The inverse temperatures of 2(d)'s markers besides Table D.1's, which is always marked
#: (:func:`d1_temperature`), as the chapter's default scale draws them. The softmax layer's
#: first-moment shift grows like ``e^{2 beta^2} / n``, so the markers stop at ``beta = 1`` below
#: Table D.3's size.
MARKER_BETAS = (0.25, 0.75, 1.0)


def marker_layers(name: str, n: int) -> list[tuple[str, list[tuple[float, tuple[AttentionConfig, ...]]]]]:
    """The softmax layers behind the MHA markers of a panel at context length ``n``.

    Learning panels as the chapters simulate them: Table D.3's layers shrunk by
    ``s = n / 4096`` (:func:`gelib.learning.shrink`: head counts and widths ``n``, ``d``,
    ``d_O`` times ``s``, head widths kept; 2(d) at ``2n``, at :data:`MARKER_BETAS` and at Table
    D.1's temperature, :func:`d1_temperature`), each point drawn at the table's
    ``x`` (``h / s``, ``h_KV / s``), where the shrunk layer is representable (integer head
    counts); 3(b) keeps ``h`` and every ratio (``d_K = n / (2h)``), drawn where ``d_K / 2 >= 32`` (its
    half-size companion's too, :func:`gelib.learning_markers.halve`);
    Figure D.1 at ``n`` itself. Series as in :data:`PANELS`: ``(label, [(x, layers)])``.
    Raises :class:`ValueError` for 2(b) (the map is the limit law only) and for an ``n``
    that is not ``4096 / 2^k``.
    """
    if name not in PANELS:
        raise KeyError(f"unknown panel {name!r}; known panels: {', '.join(PANELS)}")
    if name == "2b":
        raise ValueError("panel 2b is a map of the limit law: it has no markers")
    if n < 64 or 4096 % n:
        raise ValueError(f"n = {n}: the markers need n = 4096 / 2^k, at least 64")
    s = n / 4096
    if name.startswith("D1"):  # as the book's chapter: no head narrower than 32 below Table D.3's size
        return [(lb, pts) for lb, pts in _series_d1(name, n) if pts[0][1][0].d_k >= 32]
    if name == "3b":
        return [
            (
                label,
                [
                    (h, (c.replace(n=n, d=2 * n, d_k=n // (2 * h), d_v=n // (2 * h), d_o=n // 2),))
                    for h, (c,) in pts
                    if n // (4 * h) >= 32
                ],
            )
            for label, pts in _series_3b()
        ]
    if name == "2c":  # the paths rebuilt on the shrunk base layers, at every head count they allow
        fo, fb = shrink(_layer(32, 2048), s), shrink(_layer(32, 36864), s)
        return [
            (label, [(p.cfg.h / s, (p.cfg,)) for p in path])
            for label, path in (
                ("fixed output (d_O = 2048)", fixed_output_path(fo, range(max(1, round(16 * s)), round(120 * s) + 1))),
                ("fixed budget (N_par of h = 32, d_O = 36864)", fixed_budget_path(fb, range(fo.h, round(120 * s) + 1))),
            )
        ]
    if name == "3a":  # the widths bought by sharing recomputed on the shrunk layer
        base = shrink(_layer(64, 8192), s)
        groups = [base.h // 2**k for k in range(base.h.bit_length())]
        return [
            ("fixed widths (d_K = d_V = 64)", [(g / s, (base.replace(h_kv=g),)) for g in groups]),
            ("fixed parameter count (widths grow)", [(p.cfg.h_kv / s, (p.cfg,)) for p in shared_widths(base, groups)]),
        ]
    args = {"2d": (sorted({*MARKER_BETAS, d1_temperature()}),)}.get(name, ())
    out = []
    for label, pts in PANELS[name].series(*args):
        keep = []
        for x, cs in pts:
            try:
                keep.append((x, tuple(shrink(c, s) for c in cs)))
            except ValueError:  # a head count that s does not divide
                continue
        out.append((label, keep))
    return out


def marker_layer_set(name: str, n: int) -> list[AttentionConfig]:
    """The distinct softmax layers of a panel's markers (:func:`marker_layers`), in order."""
    return list(dict.fromkeys(c for _, pts in marker_layers(name, n) for _, cs in pts for c in cs))


def marker_seconds(name: str, n: int, seeds: int) -> float | None:
    """The floor of simulating a panel's markers on this CPU (:func:`gelib.learning_markers.simulation_seconds`)."""
    return simulation_seconds(marker_layer_set(name, n), seeds)


def add_simulated_markers(
    data: dict[str, Any], key: jax.Array, n: int, seeds: int, reading: Reading = TABLE_D1_READING, progress=None
) -> dict[str, Any]:
    """Simulate a panel's softmax layers (:func:`marker_layers`) and append their markers (in place).

    Each point: the panel's quantity on each seed's eigenvalues, mean and 95 % interval over
    ``seeds`` (:func:`gelib.spectra.summarize`); 2(a) at every 5th time of the curve; Figure D.1
    as histograms (density per bin over the law's support and 1 % beyond, per seed, then mean and
    interval). Every layer on its own stream ``stream(key, panel, label, f"{x:g}", i)`` (``i`` its
    place in a ratio). ``progress``: a callable taking one message per layer, or ``None``.
    """
    name = data["panel"]
    spectra = SoftmaxSpectra(key, seeds)
    if name == "2a":  # the markers at every 5th time of the curve
        t = np.asarray(next(sr["x"] for sr in data["series"] if sr["kind"] == "ge"), dtype=float)[::5]
    for label, pts in marker_layers(name, n):
        marks = []
        for x, cs in pts:
            if progress is not None:
                progress(f"{label}, {data['x_label']} = {x:g}: {', '.join(c.describe() for c in cs)}")
            evs = [spectra(c, name, label, f"{x:g}", i) for i, c in enumerate(cs)]
            c = cs[0]
            if name == "2a":
                per_seed = np.array([training_loss(e, t) for e in evs[0]])
                marks += [(float(tj), summarize(per_seed[:, j])) for j, tj in enumerate(t)]
                continue
            if name.startswith("D1"):
                law = LimitLaws(1e-9)(c)
                lo = min(a for a, _ in law.edges())
                hi = max(b for _, b in law.edges())
                bins = np.linspace(lo, hi + 0.01 * (hi - lo), 41)
                dens = np.array([np.histogram(e, bins=bins)[0] / (len(e) * np.diff(bins)) for e in evs[0]])
                marks += [(float(m), summarize(dens[:, j])) for j, m in enumerate((bins[1:] + bins[:-1]) / 2)]
                continue

            error = functools.partial(_read_error, reading=reading)

            if name == "3a":
                vals = [arrival_time(e, reading.epsilon) for e in evs[0]]
            elif name == "2d":
                vals = [error(a, cs[0]) / error(b, cs[1]) for a, b in zip(*evs)]
            else:
                vals = [error(e, c) for e in evs[0]]
            marks.append((float(x), summarize(vals)))
        add_markers(data, f"{label} (MHA, n = {pts[0][1][0].n if pts else n})", marks)
    data["markers"] = {"n": n, "seeds": seeds}
    return data


def add_markers(data: dict[str, Any], label: str, points: Iterable[tuple[float, Any]]) -> dict[str, Any]:
    """Append one series of MHA markers to a panel (in place; returns it).

    ``points``: ``(x, summary)`` pairs, ``summary`` with ``mean`` and ``ci95`` (a
    :class:`gelib.spectra.Summary`); the series is ``{"label", "kind": "mha", "x", "y", "ci95"}``.
    """
    pts = list(points)
    data["series"].append(
        {
            "label": label,
            "kind": "mha",
            "x": [float(x) for x, _ in pts],
            "y": [float(s.mean) for _, s in pts],
            "ci95": [float(s.ci95) for _, s in pts],
        }
    )
    return data


def table_d1_comparison(data: dict[str, Any]) -> dict[str, float]:
    """A panel's first Table D.1 row beside the panel's own MHA markers.

    ``d1`` and ``hw``: the row's value and 95 % half-width; ``rel``: that half-width relative
    to the value (%); ``ours``: the largest relative 95 % half-width ``ci95 / |y|`` over every
    point of the panel's ``"mha"`` series (%, :func:`~gelib.figure_data.add_markers`).
    """
    row = data["table_d1"][0]
    bars = [s for s in data["series"] if s["kind"] == "mha"]
    return {
        "d1": row["value"],
        "hw": row["half_width"],
        "rel": 100 * row["half_width"] / row["value"],
        "ours": 100 * max(c / abs(y) for s in bars for y, c in zip(s["y"], s["ci95"])),
    }


#: The bracket in ``beta`` searched by :func:`d1_temperature`: the higher of the two temperatures
#: where Figure 2(d)'s GE ratio takes Table D.1's value (:func:`d2_roots` finds both), the one at
#: which the book simulates markers.
D1_BETA_BRACKET = (0.25, 0.5)


def d1_temperature(laws: LimitLaws | None = None, reading: Reading = TABLE_D1_READING, xtol: float = 1e-6) -> float:
    """The higher inverse temperature at which Figure 2(d)'s GE ratio takes Table D.1's value.

    The ratio takes it twice on :data:`D2_BETA_RANGE` (:func:`d2_roots`); this is the root of
    ``log(ratio(beta) / value)`` in :data:`D1_BETA_BRACKET` by Brent's method on the
    exact GE ratio at Table D.3's dimensions (``ratio``: the coefficient errors of
    ``(d_K, d_V) = (64, 192)`` over ``(128, 128)``, read as ``reading`` says); ``laws``: a
    :class:`~gelib.learning_markers.LimitLaws` cache to share (without one, the root is computed
    once per process).
    """
    if laws is None:
        return _d1_temperature_cached(reading, xtol)
    (value,) = (row.value for row in TABLE_D1 if row.panel == "2d")

    def err(c: AttentionConfig) -> float:
        return _read_error(laws(c), c, reading)

    return float(
        scipy.optimize.brentq(
            lambda b: math.log(err(_ratio_pair(b)[0]) / err(_ratio_pair(b)[1]) / value), *D1_BETA_BRACKET, xtol=xtol
        )
    )


@functools.cache
def _d1_temperature_cached(reading: Reading, xtol: float) -> float:
    return d1_temperature(LimitLaws(1e-9), reading, xtol)


#: The inverse temperatures on which the book draws Figure 2(d) and makes its claims, down to
#: where the ratio has risen back to about 0.9 on its way to 1 (both errors tend to 1 as
#: ``beta -> 0``), well above where the limit law's solver stops converging (near ``beta = 0.001``
#: at Table D.3's dimensions); up to 2.5, where the ratio is within 0.1 % of 1 (the solver stops
#: near 3).
D2_BETA_RANGE = (0.005, 2.5)

#: The grid on which :func:`d2_roots` brackets the roots: 13 points evenly spaced in
#: ``log beta`` over :data:`D2_BETA_RANGE` (a factor 1.68 apart), each pair of neighbours holding
#: at most one root of each level (the tests check the roots against another grid and by
#: bisection).
D2_ROOT_GRID = tuple(float(b) for b in np.geomspace(*D2_BETA_RANGE, 13))


#: Four more temperatures of the drawn curve of Figure 2(d), where it bends most, around the peak of the ratio
#: between the two temperatures of Table D.1's value (near 0.135 and 0.345), which :data:`D2_ROOT_GRID`
#: holds only at 0.188, so that a line straight between the drawn points does not cut the peak. Each
#: costs two limit laws at Table D.3's dimensions, under 2 s on one CPU core.
D2_PEAK_BETAS = (0.16, 0.22, 0.25, 0.28)


def ratio_2d(beta: float, laws: LimitLaws | None = None, reading: Reading = TABLE_D1_READING) -> float:
    """Figure 2(d)'s GE ratio at ``beta``: the coefficient errors of ``(d_K, d_V) = (64, 192)`` over
    ``(128, 128)`` at Table D.3's dimensions, read as ``reading`` says (``laws``: a
    :class:`~gelib.learning_markers.LimitLaws` cache to share)."""
    laws = LimitLaws(1e-9) if laws is None else laws
    a, b = _ratio_pair(float(beta))
    return _read_error(laws(a), a, reading) / _read_error(laws(b), b, reading)


def d2_shift(beta: float, laws: LimitLaws | None = None, reading: Reading = TABLE_D1_READING) -> dict[str, float]:
    """Where Figure 2(d)'s softmax markers at Table D.3's dimensions should sit, if the first-moment
    shift is all that moves them: the GE ratio (:func:`ratio_2d`) at ``beta`` against the same ratio on
    the two layers' limit laws shifted each by its own ``b(8192, d_K)``
    (:meth:`~gelib.learning_markers.LimitLaws.shifted`). Returns, in per cent, ``b-wide`` and
    ``b-equal`` (the shifts of ``(64, 192)`` and ``(128, 128)``) and ``change`` (the shifted ratio
    over the GE ratio, minus 1), and ``bars``: ``|change|`` over Table D.1's relative bar of 2(d)."""
    laws = LimitLaws(1e-9) if laws is None else laws
    pair = _ratio_pair(float(beta))
    shifted = [laws.shifted(c) for c in pair]
    ratio = _read_error(shifted[0], pair[0], reading) / _read_error(shifted[1], pair[1], reading)
    change = 100 * (ratio / ratio_2d(beta, laws, reading) - 1)
    (bar,) = (row.relative for row in TABLE_D1 if row.panel == "2d")
    b_wide, b_equal = (100 * b for b in map(predicted_shift, pair) if b is not None)  # both untied: two shifts
    return {"b-wide": b_wide, "b-equal": b_equal, "change": change, "bars": abs(change) / bar}


def level_roots(f: Callable[[float], float], grid: Sequence[float], level: float, xtol: float = 1e-6) -> list[float]:
    """Every root of ``log(f(x) / level)`` that ``grid`` brackets, in increasing order.

    ``f``: a positive function; ``grid``: increasing points. Between each pair of neighbours
    where ``f - level`` changes sign (a grid point on the level is a root itself), Brent's method
    to ``xtol``. A pair of roots between two neighbours is not seen: the grid must be finer
    than the roots' spacing.
    """
    x = [float(v) for v in grid]
    g = [math.log(f(v) / level) for v in x]
    out = [a for a, ga in zip(x, g) if ga == 0.0]
    for a, b, ga, gb in zip(x, x[1:], g, g[1:]):
        if ga * gb < 0:
            out.append(float(scipy.optimize.brentq(lambda u: math.log(f(u) / level), a, b, xtol=xtol)))
    return sorted(out)


def d2_roots(
    laws: LimitLaws | None = None,
    reading: Reading = TABLE_D1_READING,
    grid: Sequence[float] = D2_ROOT_GRID,
    xtol: float = 1e-6,
) -> dict[str, list[float]]:
    """Every ``beta`` in ``grid``'s range where Figure 2(d)'s GE ratio (:func:`ratio_2d`) crosses
    1 (``"unit"``) and every one where it takes Table D.1's value (``"table_d1"``), by
    :func:`level_roots` on ``grid`` (default :data:`D2_ROOT_GRID`). Under Table D.1's reading
    there are two of each on :data:`D2_BETA_RANGE`."""
    laws = LimitLaws(1e-9) if laws is None else laws
    (value,) = (row.value for row in TABLE_D1 if row.panel == "2d")

    @functools.cache
    def f(b: float) -> float:
        return ratio_2d(b, laws, reading)

    return {"unit": level_roots(f, grid, 1.0, xtol), "table_d1": level_roots(f, grid, value, xtol)}


def d2_betas(
    roots: dict[str, list[float]], points: int = len(D2_ROOT_GRID), extra: Iterable[float] = ()
) -> list[float]:
    """The inverse temperatures at which Figure 2(d)'s curve is drawn: ``points`` evenly spaced in
    ``log beta`` over :data:`D2_BETA_RANGE`, :data:`D2_ROOT_GRID` (whose laws :func:`d2_roots` has
    computed), :data:`D2_PEAK_BETAS` (around the peak), every root of ``roots`` (:func:`d2_roots`)
    and ``extra`` (the markers' temperatures), sorted, points within a relative ``1e-9`` of each
    other taken once, so that the drawn curve passes through the marked temperatures exactly."""
    grid = np.geomspace(*D2_BETA_RANGE, points) if points > 1 else np.array(D2_BETA_RANGE)
    marked = [float(b) for r in roots.values() for b in r] + [float(b) for b in extra]
    out: list[float] = []
    for b in sorted([*marked, *D2_ROOT_GRID, *D2_PEAK_BETAS, *(float(b) for b in grid)]):
        if out and b - out[-1] <= 1e-9 * b:
            if b in marked:  # a marked temperature is kept exactly
                out[-1] = b
            continue
        out.append(b)
    return out


def d2_summary(betas: Sequence[float], ratios: Sequence[float], roots: dict[str, list[float]]) -> dict[str, Any]:
    """Figure 2(d)'s curve in numbers, for a chapter's glue: the roots (:func:`d2_roots`, two of
    each level) as ``beta-cross-lo``, ``beta-cross`` (crossings of 1) and ``beta-d1-lo``,
    ``beta-d1`` (Table D.1's value); on the drawn points ``betas`` (increasing) and ``ratios``,
    the lowest ratio below the first crossing (``beta-min-lo``, ``ratio-min-lo``), the highest
    between the crossings (``beta-top``, ``ratio-top``), the lowest above the second
    (``beta-min``, ``ratio-min``), the ends (``beta-low``, ``ratio-low``, ``beta-high``,
    ``ratio-high``) and ``d2-points``, the number of points. Raises :class:`ValueError` unless
    there are exactly two roots of each level."""
    (u0, u1), (v0, v1) = roots["unit"], roots["table_d1"]  # ValueError for any other count
    b, r = np.asarray(betas, dtype=float), np.asarray(ratios, dtype=float)

    def pick(sel: np.ndarray, f: Callable) -> tuple[float, float]:
        k = int(f(r[sel]))
        return float(b[sel][k]), float(r[sel][k])

    (b_lo, r_lo), (b_top, r_top), (b_min, r_min) = (
        pick(b < u0, np.argmin),
        pick((b > u0) & (b < u1), np.argmax),
        pick(b > u1, np.argmin),
    )
    return {
        "beta-cross-lo": u0,
        "beta-cross": u1,
        "beta-d1-lo": v0,
        "beta-d1": v1,
        "beta-min-lo": b_lo,
        "ratio-min-lo": r_lo,
        "beta-top": b_top,
        "ratio-top": r_top,
        "beta-min": b_min,
        "ratio-min": r_min,
        "beta-low": float(b[0]),
        "ratio-low": float(r[0]),
        "beta-high": float(b[-1]),
        "ratio-high": float(r[-1]),
        "d2-points": int(b.size),
    }


def _seed_ranges(seeds: Sequence[int]) -> str:
    """Seed counts as ranges; ``"none"`` for no seed count.

    >>> _seed_ranges([2, 3, 4, 7]), _seed_ranges([])
    ('2-4, 7', 'none')
    """
    runs: list[list[int]] = []
    for s in seeds:
        if runs and s == runs[-1][-1] + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs) or "none"


def _teacher_points(name: str, value: float, laws: LimitLaws, reading: Reading) -> list[tuple[str, float]]:
    """``(point, relative spread of one teacher draw)`` at the GE points of a panel that take ``value``."""

    def err(c: AttentionConfig) -> float:
        return _read_error(laws(c), c, reading)

    def err_sd(c: AttentionConfig) -> float:
        return error_teacher_std(laws(c), reading.horizon, c.n, c.d_o, reading.sigma) / err(c)

    if name == "2a":
        out = []
        for _, ((_, (c,)),) in _series_2a():
            t = arrival_time(laws(c), value)
            out.append((f"h = {c.h}, t = {t:.3g}", float(loss_teacher_std(laws(c), t, c.n)[0])))
        return out
    if name == "2c":  # the fixed-budget path, at the head counts on either side of each crossing
        coarse = fixed_budget_path(_layer(32, 36864), range(32, 121, 4))
        hs = [p.cfg.h for p in coarse]
        brackets = level_crossings(hs, [err(p.cfg) for p in coarse], value)
        near = {h for lo, hi in brackets for h in range(int(lo), int(hi) + 1)}
        fine = fixed_budget_path(_layer(32, 36864), sorted(near))
        errs = [err(p.cfg) for p in fine]
        pick = {i + k for i in range(len(fine) - 1) if (errs[i] - value) * (errs[i + 1] - value) < 0 for k in (0, 1)}
        return [(f"h = {fine[i].cfg.h}, d_O = {fine[i].cfg.d_o}", err_sd(fine[i].cfg)) for i in sorted(pick)]
    if name == "2d":  # independent teachers for the two layers: relative variances add
        beta = d1_temperature(laws)  # Table D.1's point under its own reading; the spreads under ``reading``
        low, high = (err_sd(c) for c in _ratio_pair(beta))
        return [(f"beta = {beta:.4f}", math.hypot(low, high))]
    if name == "3a":  # both rows on the unshared layer
        c = _layer(64, 8192)
        return [(f"unshared layer (h_KV = {c.h_kv})", arrival_teacher_std(laws(c), reading.epsilon, c.n))]
    if name == "3b":  # the GQA layer closest to the value
        gqa = [cs[0] for _, cs in _series_3b()[0][1]]
        c = min(gqa, key=lambda c: abs(err(c) - value))
        return [(f"GQA, h = {c.h}", err_sd(c))]
    raise ValueError(f"panel {name!r} has no Table D.1 row")


def teacher_bars(
    laws: LimitLaws | None = None,
    reading: Reading = TABLE_D1_READING,
    seeds: int = 3,
    max_seeds: int = 20,
    panels: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Each Table D.1 row beside the bar that one fresh teacher per seed would give there.

    The book averages the teacher out exactly (:func:`gelib.learning.coefficient_error`), so its
    bars are the spread over softmax layers, ``O(1 / n)`` for a functional smooth on the bulk of
    the spectrum. A readout trained for one teacher draw (and one noise draw) per run carries
    the teacher's spread too, ``O(n^{-1/2})``, whether the teacher is fresh each run or fixed (the
    layers' eigenvectors are uniformly random, so both spread alike):
    :func:`~gelib.learning.loss_teacher_std`, :func:`~gelib.learning.error_teacher_std` and
    :func:`~gelib.learning.arrival_teacher_std` on the limit laws at Table D.3's dimensions, at
    the GE points that take the row's value (2(a): each head count, at the time its loss takes
    it; 2(c): the fixed-budget layers on either side of each crossing; 2(d):
    :func:`d1_temperature` under Table D.1's reading, the two layers' teachers independent;
    3(a): the unshared layer; 3(b): the GQA layer closest to it).

    One dict per row: ``name`` (the panel, ``-1``, ``-2`` added where a panel has two rows),
    ``panel``, ``quantity``, Table D.1's ``value``, ``half_width`` and ``relative`` (%), ``points``
    (``[(point, spread in %)]``), ``std`` (the largest spread, %), ``bar``, ``lo`` and ``hi``
    (:func:`~gelib.learning.seed_bar` of that spread with ``seeds`` seeds, %), ``seeds``: the
    seed counts up to ``max_seeds`` at which Table D.1's bar is a likely draw at one of the
    points (:func:`~gelib.learning.consistent_seeds`), as text (``"2-4"``, or ``"none"``),
    ``fits``: whether ``seeds`` is one of them, ``needs``: about how many seeds a mean over
    fresh teachers needs for a bar as small as Table D.1's, ``(z std / relative)^2`` at the
    smallest spread of the row's points (``z`` the normal 97.5 % quantile: many seeds), and
    ``band``: ``z`` times the largest spread (%), the half-width of a ``+- 1.96`` standard-deviation
    band of single runs (another way to draw a 95 % bar, under which the seed count is not
    identified); also ``n_seeds`` and ``max_seeds``, the arguments. ``panels``: the rows of these
    panels only (default: every row). :func:`teacher_glue` flattens the rows for a chapter.
    """
    laws = LimitLaws(1e-9) if laws is None else laws
    z = float(scipy.stats.norm.ppf(0.975))
    out = []
    for row in TABLE_D1:
        if panels is not None and row.panel not in panels:
            continue
        points = _teacher_points(row.panel, row.value, laws, reading)
        sd = max(v for _, v in points)
        bar, lo, hi = seed_bar(sd, seeds)
        fits = consistent_seeds(row.relative / 100, [v for _, v in points], max_seeds)
        twins = [r for r in TABLE_D1 if r.panel == row.panel]
        name = row.panel if len(twins) == 1 else f"{row.panel}-{twins.index(row) + 1}"
        out.append(
            {
                "name": name,
                "panel": row.panel,
                "quantity": row.quantity,
                "value": row.value,
                "half_width": row.absolute,
                "relative": row.relative,
                "points": [(p, 100 * v) for p, v in points],
                "std": 100 * sd,
                "bar": 100 * bar,
                "lo": 100 * lo,
                "hi": 100 * hi,
                "seeds": _seed_ranges(fits),
                "fits": seeds in fits,
                "needs": math.ceil((z * min(v for _, v in points) / (row.relative / 100)) ** 2),
                "band": 100 * z * sd,
                "n_seeds": seeds,
                "max_seeds": max_seeds,
            }
        )
    return out


def teacher_glue(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rows of :func:`teacher_bars` as flat values for a chapter's glue: Table D.1's row as
    ``{name}-d1`` (value), ``{name}-hw`` (half-width) and ``{name}-rel`` (%), ``{name}-t{key}``
    for the keys ``std``, ``bar``, ``lo``, ``hi``, ``seeds``, ``needs`` and ``band`` (e.g.
    ``3b-tbar``), and once ``teacher-seeds`` and ``teacher-max-seeds`` (the arguments)."""
    keys = ("std", "bar", "lo", "hi", "seeds", "needs", "band")
    out: dict[str, Any] = {"teacher-seeds": rows[0]["n_seeds"], "teacher-max-seeds": rows[0]["max_seeds"]}
    for r in rows:
        out |= {f"{r['name']}-d1": r["value"], f"{r['name']}-hw": r["half_width"], f"{r['name']}-rel": r["relative"]}
        out |= {f"{r['name']}-t{k}": r[k] for k in keys}
    return out


def write_csv(data: dict[str, Any], path: str | Path) -> Path:
    """Write :func:`to_rows` of the panel to ``path`` as CSV, by rename (the file is the old one or
    the whole new one); the folder must exist. Whether an existing file may be replaced is the
    caller's decision. Returns the path."""
    path = Path(path)
    rows = to_rows(data)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["panel", "quantity", "series", "kind", "x", "y", "ci95"])
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def to_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The panel as table rows: ``panel, quantity, series, kind, x, y, ci95`` (one per point)."""
    return [
        {
            "panel": data["panel"],
            "quantity": data["quantity"],
            "series": s["label"],
            "kind": s["kind"],
            "x": x,
            "y": y,
            "ci95": "" if s["ci95"] is None else s["ci95"][i],
        }
        for s in data["series"]
        for i, (x, y) in enumerate(zip(s["x"], s["y"]))
    ]
