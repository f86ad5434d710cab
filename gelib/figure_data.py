"""The numbers of the paper's learning figures, for re-plotting: the GE curves at Table D.3's dimensions.

:func:`panel` returns one panel of Figures 2 and 3 as plain data::

    {"panel": "3a", "quantity": "arrival time", "x_label": "h_KV",
     "reading": {"epsilon": ..., "sigma": ..., "horizon": ...},
     "dimensions": {"n": 4096, "d": 4096, "h": 64, "h_kv": [1, ..., 64], ...},
     "series": [{"label": ..., "kind": "ge", "x": [...], "y": [...], "ci95": null}, ...],
     "table_d1": [{"quantity": ..., "value": ..., "half_width": ...}]}

The curves are functionals of the limit law of each layer (:func:`gelib.attention_law.output_law`,
checked by :class:`gelib.learning_markers.LimitLaws`), read as :data:`gelib.learning.TABLE_D1_READING`
says; ``table_d1`` holds the paper's Table D.1 rows of the panel (the value its largest error
bar belongs to, and that half-width). ``dimensions`` lists each field of the panel's layers: one
value where all share it, else the sorted values. :func:`to_rows` flattens a panel into the rows
of a CSV table.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .config import AttentionConfig
from .learning import (
    TABLE_D1_READING,
    Reading,
    arrival_time,
    coefficient_error,
    fixed_budget_path,
    fixed_output_path,
    shared_widths,
    training_loss,
)
from .learning_markers import LimitLaws
from .presets import TABLE_D1

__all__ = ["PanelSpec", "PANELS", "panel", "to_rows"]


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


@dataclasses.dataclass(frozen=True)
class PanelSpec:
    """One panel: its plotted quantity, its x axis, and the function that lists its series."""

    quantity: str
    x_label: str
    series: Callable[..., _Series]


#: The panels :func:`panel` knows, by the name ``python -m gelib figure`` takes.
PANELS: dict[str, PanelSpec] = {
    "2a": PanelSpec("relative training loss", "t", _series_2a),
    "2c": PanelSpec("coefficient error", "h", _series_2c),
    "2d": PanelSpec("coefficient-error ratio", "beta", _series_2d),
    "3a": PanelSpec("arrival time", "h_KV", _series_3a),
    "3b": PanelSpec("coefficient error", "h", _series_3b),
}


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
    betas: Sequence[float] = tuple(np.round(np.arange(0.25, 2.501, 0.25), 2)),
) -> dict[str, Any]:
    """The GE curves of one panel at Table D.3's dimensions (the module's schema).

    ``name``: a key of :data:`PANELS` (a :class:`KeyError` names the known ones);
    ``laws``: a :class:`~gelib.learning_markers.LimitLaws` cache to share between calls;
    ``times``: the time grid of 2(a); ``step``: the spacing of the head counts of 2(c);
    ``betas``: the inverse temperatures of 2(d).
    """
    if name not in PANELS:
        raise KeyError(f"unknown panel {name!r}; known panels: {', '.join(PANELS)}")
    spec = PANELS[name]
    laws = LimitLaws(1e-9) if laws is None else laws
    args = {"2c": (step,), "2d": (betas,)}.get(name, ())
    t = np.asarray(times, dtype=float)

    def error(cfg: AttentionConfig) -> float:
        return float(coefficient_error(laws(cfg), reading.horizon, cfg.n, cfg.d_o, reading.sigma)[0])

    series, layers = [], []
    for label, points in spec.series(*args):
        layers += [c for _, cs in points for c in cs]
        if name == "2a":
            (cfg,) = points[0][1]
            x, y = t.tolist(), training_loss(laws(cfg), t).tolist()
        else:
            x = [p for p, _ in points]
            if name == "3a":
                y = [arrival_time(laws(cs[0]), reading.epsilon) for _, cs in points]
            elif name == "2d":
                y = [error(cs[0]) / error(cs[1]) for _, cs in points]
            else:
                y = [error(cs[0]) for _, cs in points]
        series.append({"label": label, "kind": "ge", "x": x, "y": [float(v) for v in y], "ci95": None})
    return {
        "panel": name,
        "quantity": spec.quantity,
        "x_label": spec.x_label,
        "reading": dataclasses.asdict(reading),
        "dimensions": _dimensions(layers),
        "series": series,
        "table_d1": [
            {"quantity": row.quantity, "value": row.value, "half_width": row.absolute}
            for row in TABLE_D1
            if row.panel == name
        ],
    }


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
