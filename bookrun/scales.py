"""The three scales a chapter runs at.

* ``"ci"``: each chapter in under a minute on a 2-core CPU (the tests);
* ``"default"``: what the book is built with on a CPU (about a minute per chapter);
* ``"paper"``: the paper's dimensions (meant for a GPU).

Every chapter has one Papermill ``parameters`` cell with ``scale`` and
``seed``; its sizes derive from the scale through :func:`choose`, and a
reader can override any of them.
"""

from __future__ import annotations

from typing import Any

#: The scales a chapter runs at, "ci" (tests), "default" (the CPU book) and "paper" (the paper's sizes).
SCALES = ("ci", "default", "paper")

__all__ = ["SCALES", "check_scale", "choose", "regimes"]


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return scale


def choose(scale: str, *, ci: Any, default: Any, paper: Any, **overrides: Any) -> Any:
    """The value for ``scale``; a dict value is updated with the non-``None`` overrides.

    >>> choose("ci", ci=dict(n=64), default=dict(n=256), paper=dict(n=2048), n=None)
    {'n': 64}
    """
    value = {"ci": ci, "default": default, "paper": paper}[check_scale(scale)]
    if isinstance(value, dict):
        value = dict(value)
        value.update({k: v for k, v in overrides.items() if v is not None})
    elif overrides:
        raise TypeError("overrides need dict values")
    return value


def regimes(scale: str, cfg: Any) -> tuple[dict, int]:
    """The layers and seeds at which a Table 1 chapter measures a control in the regimes of real models.

    :func:`gelib.sweeps.regime_layers` (``"ratio"``: ``d_K = n/8``; ``"fixed"``: ``d_K = 64``) with the
    heads and ``beta`` of the chapter's layer ``cfg``, at the context lengths of ``scale``:
    128 to 512 (``"ci"`` and ``"default"``: a 1024 costs the default book about two minutes), 512 to 4096
    (``"paper"``).

    >>> import gelib.sweeps
    >>> layers, seeds = regimes("ci", gelib.sweeps.proportional(256, h=4, d_k=1 / 2, d_v=1 / 2, d_o=3 / 2))
    >>> [c.n for c in layers["ratio"]], [c.d_k for c in layers["fixed"]], seeds
    ([128, 256, 512], [64, 64, 64], 8)
    """
    import gelib.sweeps

    ns, seeds = {
        "ci": ((128, 256, 512), 8),
        "default": ((128, 256, 512), 8),
        "paper": ((512, 1024, 2048, 4096), 6),
    }[check_scale(scale)]
    return gelib.sweeps.regime_layers(ns, h=cfg.h, beta=cfg.beta), seeds
