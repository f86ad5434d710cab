"""What the paper says about the attention layers of popular models, read from their ``config.json`` files.

:func:`model_rows` reads every ``*.json`` of a folder (by default
:data:`CONFIG_FOLDER`, the configurations shipped with the repository) with
:func:`gelib.hfconfig.dims_from_hf_config` and, per model, from the limit law
alone (no sampling, a fraction of a second per distinct layer):

* the dimensions of one layer, ``n`` (the context length capped at ``d``, as
  in the paper's Table 2), ``d``, ``h / h_KV`` and ``d_K``;
* the edges and atoms of the limit law of the eigenvalues of ``Y Y^T / n``
  (:func:`gelib.attention_law.output_law`, the accessors that :func:`gelib.report.report_dict`
  reports), which is the law of the softmax layer and of its Gaussian
  equivalent ``Y^G`` alike;
* the first-moment shift of the softmax layer against ``Y^G``: its leading
  order ``b(n, d_K)`` (:func:`gelib.spectra.mean_shift`) and its exact
  expectation (:func:`gelib.models.mha_shift_exact`). A relative W1 distance
  is at least the relative difference of the means, so the expected distance
  between the two spectra is at least about ``|exact shift|``;
* the fields the configuration has that change the attention but are not in
  the paper's model (sliding window, soft-capping, score scale, ...), or the
  reason it is refused (multi-head latent attention, a missing field).

:func:`measure_rows` samples the layers that are cheap (one seed at most
``gflop`` GFLOP, :func:`gelib.spectra.seed_flops`: the choice depends on the
layer, not on the machine) and measures the distance to ``Y^G`` and the
shift per seed (:func:`gelib.spectra.compare`, the root key for every layer,
as ``python -m gelib compare --hf-config`` uses it). :func:`markdown_table`
writes the table, :func:`measured_markdown` the sampled layers,
:func:`left_out_markdown` what each field not modelled does, and
:func:`plot_shifts` draws each model's predicted and measured shift.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import jax
import numpy as np
from matplotlib.axes import Axes

from .attention_law import output_law
from .config import AttentionConfig, ConfigError
from .finite_size import mean_shifts
from .hfconfig import dims_from_hf_config, read_hf_config
from .models import mha_shift_exact
from .numerics import MeanTest
from .spectra import Summary, compare, mean_shift, seed_flops, shape_w1, summarize

__all__ = [
    "CONFIG_FOLDER",
    "HEADER",
    "ModelRow",
    "MeasuredRow",
    "model_rows",
    "cheap_rows",
    "measure_row",
    "measure_rows",
    "markdown_table",
    "measured_markdown",
    "left_out_markdown",
    "plot_shifts",
]

#: The folder of ``config.json`` files the table is read from by default (the one place its path is written).
CONFIG_FOLDER: Path = Path(__file__).resolve().parents[1] / "tests" / "data" / "hf"

#: The columns of :func:`markdown_table`.
HEADER: tuple[str, ...] = (
    "model",
    "n (context)",
    "d",
    "h/h_KV",
    "d_K",
    "law: support",
    "law: atom",
    "b(n, d_K) (%)",
    "measured rel. W1 (%)",
    "what the result says at this size",
    "not in the paper's model",
)


@functools.cache
def _exact_shift(n: int, d_k: int, beta: float) -> float:
    return mha_shift_exact(n, d_k, beta)


@dataclasses.dataclass(frozen=True)
class ModelRow:
    """One model of the table: its layer and what the law says about it, or why it is refused.

    ``name`` is the file's stem; ``cfg`` the layer (``None`` when refused), with
    ``context`` the context length the configuration gives (``n`` unless it was
    capped at ``d``); ``notes`` and ``unmodelled`` as
    :class:`gelib.hfconfig.HFDims` has them; ``refused`` the
    :class:`~gelib.config.ConfigError` message of a refused configuration (else
    ``""``); ``edges``, ``atoms`` and ``moments`` (the first four) of the limit
    law; ``shift_pred`` the leading-order shift ``b(n, d_K)`` and ``shift_exact``
    its exact expectation (relative, not in per cent).
    """

    name: str
    path: Path
    cfg: AttentionConfig | None = None
    context: int | None = None
    notes: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()
    refused: str = ""
    edges: tuple[tuple[float, float], ...] = ()
    atoms: tuple[tuple[float, float], ...] = ()
    moments: tuple[float, ...] = ()
    shift_pred: float = math.nan
    shift_exact: float = math.nan

    @property
    def reason(self) -> str:
        """The refusal in a few words (``"multi-head latent attention"``): the message
        without its file and up to its first parenthesis, colon or semicolon."""
        if not self.refused:
            return ""
        text = self.refused.split(": ", 1)[-1]
        return re.split(r" \(|: |; ", text, maxsplit=1)[0]

    @property
    def unmodelled_fields(self) -> tuple[str, ...]:
        """``"field=value"`` of each line of :attr:`unmodelled` (what it does left out)."""
        return tuple(line.split(": ", 1)[0] for line in self.unmodelled)

    @property
    def status(self) -> str:
        """``"refused"``, ``"dimensions only"`` (fields the paper's model lacks) or ``"the paper's layer"``."""
        if self.cfg is None:
            return "refused"
        return "dimensions only" if self.unmodelled else "the paper's layer"

    @property
    def floor(self) -> float:
        """``|shift_exact|``: the expected relative W1 between the softmax layer's spectrum and
        ``Y^G``'s is at least about this (``W1 >=`` the difference of the means, per seed)."""
        return abs(self.shift_exact)

    @property
    def verdict(self) -> str:
        """The table's "what the result says at this size" cell, the floor (``rel. W1 ≳ ...``) after
        "dims only" where the configuration has fields not modelled, or "refused"."""
        if self.cfg is None:
            return "refused"
        bound = f"rel. W1 ≳ {100 * self.floor:.2f} %"
        return f"dims only; {bound}" if self.unmodelled else bound


def _row(path: Path, beta: float) -> ModelRow:
    name = path.stem
    try:
        dims = dims_from_hf_config(read_hf_config(path), source=path.name)
        cfg = AttentionConfig(n=dims.n, d=dims.d, h=dims.h, h_kv=dims.h_kv, d_k=dims.d_k, d_v=dims.d_v, beta=beta)
    except ConfigError as e:
        return ModelRow(name=name, path=path, refused=str(e))
    law = output_law(cfg)
    return ModelRow(
        name=name,
        path=path,
        cfg=cfg,
        context=dims.context or cfg.n,
        notes=tuple(dims.notes),
        unmodelled=dims.unmodelled,
        edges=tuple((float(a), float(b)) for a, b in law.edges()),
        atoms=tuple((float(x), float(m)) for x, m in law.atoms()),
        moments=tuple(float(m) for m in law.moments(4)),
        shift_pred=mean_shift(cfg.n, cfg.d_k, beta),
        shift_exact=_exact_shift(cfg.n, cfg.d_k, beta),
    )


def model_rows(folder: str | Path = CONFIG_FOLDER, beta: float = 1.0) -> list[ModelRow]:
    """One :class:`ModelRow` per ``*.json`` file of ``folder``, sorted by name, at inverse temperature ``beta``.

    A configuration that :mod:`gelib.hfconfig` refuses (or whose layer
    :class:`~gelib.config.AttentionConfig` refuses) is a row with ``refused``
    set, not an error. Raises :class:`FileNotFoundError` for a folder with no
    ``*.json`` file.
    """
    paths = sorted(Path(folder).glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no *.json file in {folder}")
    return [_row(p, float(beta)) for p in paths]


def cheap_rows(rows: Iterable[ModelRow], gflop: float) -> list[ModelRow]:
    """The rows (not refused) whose one seed of MHA against ``Y^G`` costs at most ``gflop`` GFLOP
    (:func:`gelib.spectra.seed_flops`), in their order."""
    return [r for r in rows if r.cfg is not None and seed_flops(r.cfg)["total"] <= gflop * 1e9]


@dataclasses.dataclass(frozen=True, eq=False)
class MeasuredRow:
    """One sampled layer: per seed the relative W1 between the spectra of the softmax layer and
    of ``Y^G`` (``rel_w1``), the shift ``mean(MHA) / mean(GE) - 1`` (``shift``) and the shape
    part ``W1(MHA, s GE) / mean(GE)`` (``shape``, :func:`gelib.spectra.shape_w1`), all
    relative (not in per cent), against ``shift_exact`` (:func:`gelib.models.mha_shift_exact`)."""

    cfg: AttentionConfig
    rel_w1: np.ndarray
    shift: np.ndarray
    shape: np.ndarray
    shift_exact: float
    seconds: float

    @property
    def seeds(self) -> int:
        return int(self.rel_w1.size)

    @property
    def rel_w1_summary(self) -> Summary:
        return summarize(self.rel_w1)

    @property
    def shift_summary(self) -> Summary:
        return summarize(self.shift)

    @property
    def shift_z(self) -> float:
        """``(mean shift - exact) / ci95``: the departure from the exact expectation in 95 % half-widths."""
        s = self.shift_summary
        return (s.mean - self.shift_exact) / s.ci95

    @property
    def above_floor(self) -> float:
        """The mean over seeds of ``rel. W1 - |shift|``: what the distance has beyond the floor
        (between 0 and the shape part at every seed)."""
        return float(np.mean(self.rel_w1 - np.abs(self.shift)))

    @property
    def shift_test(self) -> MeanTest:
        """The mean shift against the exact expectation, a two-sided Student-t test at
        :data:`~gelib.numerics.checks.CHECK_LEVEL` (:class:`~gelib.numerics.MeanTest`)."""
        return MeanTest.of(self.shift_summary, self.shift_exact)

    @property
    def shift_agrees(self) -> bool:
        """:attr:`shift_test` passes (the expectation is exact: the seeds' spread is the whole tolerance)."""
        return self.shift_test.passes

    @property
    def sandwich_holds(self) -> bool:
        """At every seed ``|shift| <= rel. W1 <= |shift| + shape`` (1e-12 for rounding): the first
        because W1 bounds the difference of the means, the second by the triangle inequality."""
        lo = np.abs(self.shift)
        return bool(np.all(self.rel_w1 >= lo - 1e-12) and np.all(self.rel_w1 <= lo + self.shape + 1e-12))


def measure_row(key: jax.Array, cfg: AttentionConfig, seeds: int) -> MeasuredRow:
    """Sample ``seeds`` draws of the layer ``cfg`` (:func:`gelib.spectra.compare`, seed ``s`` from
    ``fold_in(key, s)``) and measure it."""
    t0 = time.perf_counter()
    res = compare(key, cfg, ("mha", "yg"), seeds, progress=False)
    return MeasuredRow(
        cfg=cfg,
        rel_w1=np.asarray(res.rel_w1),
        shift=mean_shifts(res),
        shape=shape_w1(res.spectra["mha"], res.spectra["yg"]),
        shift_exact=_exact_shift(cfg.n, cfg.d_k, cfg.beta),
        seconds=time.perf_counter() - t0,
    )


def measure_rows(key: jax.Array, rows: Iterable[ModelRow], seeds: int) -> dict[str, MeasuredRow]:
    """:func:`measure_row` for every row (none refused), by model name; rows with the same layer share one
    measurement, all from the same ``key`` (as the command line's ``--seed``)."""
    done: dict[AttentionConfig, MeasuredRow] = {}
    out = {}
    for r in rows:
        if r.cfg is None:
            raise ValueError(f"{r.name} is refused: {r.reason}")
        if r.cfg not in done:
            done[r.cfg] = measure_row(key, r.cfg, seeds)
        out[r.name] = done[r.cfg]
    return out


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|")


def _cells(r: ModelRow, m: MeasuredRow | None) -> list[str]:
    if r.cfg is None:
        return [r.name, *["—"] * 8, r.verdict, r.reason]
    c = r.cfg
    sharing = "" if c.sharing == "none" else f" ({c.sharing})"
    support = " ∪ ".join(f"[{a:.3g}, {b:.3g}]" for a, b in r.edges)
    atoms = ", ".join(f"{mass:.3g} at {x:.3g}" for x, mass in r.atoms) or "—"
    measured = f"{100 * m.rel_w1_summary.mean:.2f} ± {100 * m.rel_w1_summary.ci95:.2f}" if m else "—"
    return [
        r.name,
        f"{c.n}" if r.context == c.n else f"{c.n} ({r.context})",
        f"{c.d}",
        f"{c.h}/{c.h_kv}{sharing}",
        f"{c.d_k}" if c.d_v == c.d_k else f"{c.d_k} (d_V {c.d_v})",
        support,
        atoms,
        f"{100 * r.shift_pred:+.2f}",
        measured,
        r.verdict,
        ", ".join(r.unmodelled_fields) or "—",
    ]


def markdown_table(rows: Iterable[ModelRow], measured: Mapping[str, MeasuredRow] | None = None) -> str:
    """The rows as a Markdown table with the columns :data:`HEADER`, one line per row.

    ``n (context)`` shows the context length in brackets where ``n`` is capped at ``d``;
    the law's support (its components) and atoms (mass at location); ``b(n, d_K)`` in per
    cent; the measured relative W1 (mean ± 95 % half-width over seeds, per cent) where
    ``measured`` has the model; what the result says (:attr:`ModelRow.verdict`); the fields
    not modelled (``field=value``) or the reason of a refusal. A ``|`` in a cell is escaped.
    """
    measured = measured or {}
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cell(x) for x in _cells(r, measured.get(r.name))) + " |" for r in rows]
    return "\n".join(lines)


def measured_markdown(measured: Mapping[str, MeasuredRow]) -> str:
    """The sampled layers as a Markdown table, one line per model, in per cent: the relative W1, the
    mean shift (mean ± 95 % half-width over seeds) and its exact expectation, the distance above the
    floor (:attr:`MeasuredRow.above_floor`) and the mean shape part."""
    head = ("model", "seeds", "rel. W1 (%)", "shift (%)", "exact shift (%)", "above the floor (%)", "shape part (%)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, m in measured.items():
        w, s = m.rel_w1_summary, m.shift_summary
        cells = (
            name,
            m.seeds,
            f"{100 * w.mean:.2f} ± {100 * w.ci95:.2f}",
            f"{100 * s.mean:+.2f} ± {100 * s.ci95:.2f}",
            f"{100 * m.shift_exact:+.2f}",
            f"{100 * m.above_floor:.2f}",
            f"{100 * float(np.mean(m.shape)):.2f}",
        )
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def left_out_markdown(rows: Iterable[ModelRow]) -> str:
    """A Markdown list, one item per field not modelled (``field=value``: what it does) and per refusal
    (the whole message), under the model's name; ``""`` when there is none."""
    items = []
    for r in rows:
        if r.refused:
            items.append(f"* **{r.name}**, refused: {r.refused.split(': ', 1)[-1]}")
        for line in r.unmodelled:
            field, _, what = line.partition(": ")
            items.append(f"* **{r.name}**: `{field}`: {what}")
    return "\n".join(items)


def plot_shifts(ax: Axes, rows: Iterable[ModelRow], measured: Mapping[str, MeasuredRow] | None = None) -> None:
    """The first-moment shift of each model's layer (per cent), one line per row that is not refused, in
    the rows' order: ``b(n, d_K)`` (open circle), the exact expectation (dot) and, where ``measured``
    has the model, the measured mean shift with its 95 % interval."""
    rows = [r for r in rows if r.cfg is not None]
    measured = measured or {}
    y = np.arange(len(rows))[::-1]
    ax.axvline(0, color="grey", lw=0.6)
    ax.plot([100 * r.shift_pred for r in rows], y, "o", mfc="none", ms=6, label="b(n, d_K), leading order")
    ax.plot([100 * r.shift_exact for r in rows], y, "o", ms=3.5, label="exact expectation")
    label: str | None = "measured, 95 % interval"
    for yi, r in zip(y, rows):
        if r.name in measured:
            s = measured[r.name].shift_summary
            ax.errorbar(100 * s.mean, yi, xerr=100 * s.ci95, fmt="x", color="black", capsize=3, label=label)
            label = None
    # rows holds only those with a cfg (filtered above), which mypy does not carry into the comprehension
    ax.set_yticks(y, [f"{r.name}  (n={r.cfg.n}, d_K={r.cfg.d_k})" for r in rows], fontsize=7)  # type: ignore[union-attr]
    ax.set_xlabel("first-moment shift, mean(MHA) / mean(GE) - 1 (%)")
    ax.legend(fontsize=7)
