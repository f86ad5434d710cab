"""A one-page report for one layer: what the paper says about a model's dimensions.

:func:`make_report` samples the original softmax layer (MHA) and its Gaussian
equivalent ``Y^G`` over seeds (:func:`gelib.spectra.compare`), evaluates the
limit law of the eigenvalues of ``Y Y^T / n`` (:func:`gelib.attention_law.output_law`)
and collects, in a :class:`Report`:

* the relative W1 and KS distances between the two spectra (mean and 95 %
  Student-t interval over seeds), and from the MHA spectrum to the limit law;
* the first-moment shift ``mean(mu_MHA) / mean(mu_GE) - 1`` per seed against
  its leading-order prediction ``b(n, d_K)`` (:func:`gelib.spectra.mean_shift`);
* the law's support edges, atoms and first moments;
* the parameter count of the layer's projections (:func:`attention_parameters`).

:func:`write_report` writes ``report.png`` (the MHA spectrum over the
law's density, on a logarithmic axis where the spectrum spans decades) and
``report.json`` (strict JSON) to a folder, each through a temporary file
renamed into place, so that a failed write leaves no half report; on the
logarithmic axis an atom at 0, which the axis cannot show, is drawn at its
left edge and the legend says so. The command line is
``python -m gelib report`` (:mod:`bookrun.cli.report`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import time
from pathlib import Path

import jax
import numpy as np
import scipy.stats
from matplotlib.figure import Figure

from .attention_law import output_law
from .config import AttentionConfig
from .finite_size import mean_shifts
from .freeprob import Law, distances_to_law
from .models import mha_shift_exact
from .spectra import Comparison, Summary, compare, mean_shift, summarize

__all__ = [
    "REPORT_FILES",
    "ATOM_AT_ZERO_LABEL",
    "Report",
    "RANDOM_WEIGHTS",
    "attention_parameters",
    "resolution",
    "seeds_to_resolve",
    "make_report",
    "report_dict",
    "report_figure",
    "write_report",
]

REPORT_FILES = ("report.png", "report.json")  # what write_report writes, and nothing else
#: The legend entry of an atom at 0 on a logarithmic axis, where it is drawn at the left edge.
ATOM_AT_ZERO_LABEL = "atom {mass:.3g} at 0 (drawn at the axis' left edge)"


#: What every report answers for (a layer of a model's dimensions with random weights, not a checkpoint).
RANDOM_WEIGHTS = (
    "random: the paper's model at initialisation (Gaussian Q, K, V, W^O at this model's dimensions), "
    "not the trained checkpoint"
)


def seeds_to_resolve(summary: Summary, max_seeds: int = 100_000) -> int | None:
    """The fewest seeds whose predicted 95 % half-width is below the measured value.

    With the spread ``std`` measured over the seeds of ``summary``, ``m`` seeds give the
    half-width ``t_{0.975, m-1} std / sqrt(m)`` (Student t); returned is the smallest
    ``m >= 2`` for which that is below ``|mean|``. ``None`` when no count up to
    ``max_seeds`` would do (a mean of zero), or the spread is unknown (one seed).

    >>> seeds_to_resolve(Summary(1.709, 2.524, 0.281, 2))  # BERT at two seeds: t = 12.7
    3
    """
    mean, std = abs(summary.mean), summary.std
    if not (np.isfinite(std) and np.isfinite(mean)) or mean == 0:
        return None
    if std == 0:
        return 2

    def half(m: int) -> float:
        return float(scipy.stats.t.ppf(0.975, m - 1) * std / np.sqrt(m))

    if half(max_seeds) >= mean:
        return None
    lo, hi = 1, max_seeds  # half(hi) < mean; the half-width falls with m
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if half(mid) < mean else (mid, hi)
    return max(hi, 2)


def resolution(summary: Summary) -> dict:
    """Whether the seeds resolve a value: ``resolved`` when its 95 % half-width is below the value.

    Returns ``{"resolved": bool, "seeds_needed": int | None, "words": str}``: ``seeds_needed``
    from :func:`seeds_to_resolve` (``None`` where resolved), ``words`` one sentence to print.

    >>> resolution(Summary(1.709, 2.524, 0.281, 2))["words"]
    'not resolved: the 95 % half-width is larger than the value at 2 seeds; about 3 seeds would resolve it'
    """
    if np.isfinite(summary.ci95) and summary.ci95 < abs(summary.mean):
        return {"resolved": True, "seeds_needed": None, "words": f"resolved at {summary.count} seeds"}
    needed = seeds_to_resolve(summary)
    if not np.isfinite(summary.ci95):
        why = "one seed gives no interval; run at least 2 seeds (--seeds)"
    else:
        why = f"the 95 % half-width is larger than the value at {summary.count} seeds; " + (
            f"about {needed} seeds would resolve it" if needed else "no feasible seed count would resolve it"
        )
    return {"resolved": False, "seeds_needed": needed, "words": f"not resolved: {why}"}


def attention_parameters(cfg: AttentionConfig) -> int:
    """Parameters of the layer's four projections (biases not counted).

    ``W^Q``: ``d x h d_K``; ``W^K``: ``d x h_KV d_K``; ``W^V``: ``d x h_KV d_V``
    (none of its own when tied, ``W^V = W^K``); ``W^O``: ``h d_V x d_O``. In all
    ``d h d_K + d h_KV (d_K + d_V) + h d_V d_O``, less ``d h_KV d_V`` when tied.
    """
    value = 0 if cfg.tie_kv else cfg.d * cfg.h_kv * cfg.d_v
    return cfg.d * cfg.h * cfg.d_k + cfg.d * cfg.h_kv * cfg.d_k + value + cfg.h * cfg.d_v * cfg.d_o


@dataclasses.dataclass(frozen=True)
class Report:
    """What :func:`make_report` measured and computed for one layer (see the module docstring)."""

    name: str
    cfg: AttentionConfig
    comparison: Comparison
    law: Law
    rel_w1: Summary
    ks: Summary
    law_rel_w1: Summary
    law_ks: Summary
    shift: Summary
    shift_pred: float
    seconds: float


def make_report(key: jax.Array, cfg: AttentionConfig, seeds: int = 5, name: str = "", progress: bool = True) -> Report:
    """Sample ``seeds`` draws of the layer (MHA and ``Y^G`` from the same ``Q, K, V, W^O``,
    seed ``s`` from ``fold_in(key, s)``, as :func:`gelib.spectra.compare`) and
    evaluate its limit law. ``name`` labels the report."""
    t0 = time.perf_counter()
    res = compare(key, cfg, ("mha", "yg"), seeds, progress=progress)
    law = output_law(cfg)
    law_w1, law_ks = distances_to_law(res.spectra["mha"], law)
    return Report(
        name=name or cfg.describe(),
        cfg=cfg,
        comparison=res,
        law=law,
        rel_w1=summarize(res.rel_w1),
        ks=summarize(res.ks),
        law_rel_w1=summarize(law_w1),
        law_ks=summarize(law_ks),
        shift=summarize(mean_shifts(res)),
        shift_pred=mean_shift(cfg.n, cfg.d_k, cfg.beta) if not cfg.tie_kv else float("nan"),
        seconds=time.perf_counter() - t0,
    )


def _summary(s: Summary) -> dict:
    ci = None if not np.isfinite(s.ci95) else float(s.ci95)
    return {"mean": float(s.mean), "ci95": ci, "seeds": int(s.count)}


def _resolution(s: Summary) -> dict:
    """:func:`resolution` with the spread over seeds it was judged by (``None`` for one seed)."""
    return {**resolution(s), "std": float(s.std) if np.isfinite(s.std) else None}


def report_dict(rep: Report) -> dict:
    """The report as a JSON-ready dictionary (an interval that one seed leaves undefined is ``None``)."""
    law = rep.law
    return {
        "name": rep.name,
        "config": rep.cfg.as_dict(),
        "parameters": attention_parameters(rep.cfg),
        "weights": RANDOM_WEIGHTS,
        "mha_vs_ge": {
            "rel_w1": {**_summary(rep.rel_w1), "resolution": _resolution(rep.rel_w1)},
            "ks": {**_summary(rep.ks), "resolution": _resolution(rep.ks)},
        },
        "mha_vs_law": {"rel_w1": _summary(rep.law_rel_w1), "ks": _summary(rep.law_ks)},
        "floor": {
            "rel_w1": None if rep.cfg.tie_kv else 100 * abs(mha_shift_exact(rep.cfg.n, rep.cfg.d_k, rep.cfg.beta)),
            "note": "per cent; the relative W1 averaged over seeds is at least |E mean(mu_MHA) / mean(mu_GE) - 1| "
            "(W1 >= the difference of the means), the exact expected shift at this size (untied layers only)",
        },
        "mean_shift": {
            "measured": _summary(rep.shift),
            "predicted": None if np.isnan(rep.shift_pred) else rep.shift_pred,
            "note": "mean(mu_MHA) / mean(mu_GE) - 1; predicted b(n, d_K) (untied layers only)",
        },
        "law": {
            "moments": [float(m) for m in law.moments(4)],
            "edges": [[float(a), float(b)] for a, b in law.edges()],
            "atoms": [[float(x), float(m)] for x, m in law.atoms()],
        },
        "seconds": rep.seconds,
    }


def report_figure(rep: Report) -> Figure:
    """The MHA and ``Y^G`` spectra (all seeds pooled) over the limit law's density, on a
    logarithmic axis where the continuous part of the law spans more than two decades.
    On that axis an atom at 0 is drawn at the left edge, and the legend says so
    (:data:`ATOM_AT_ZERO_LABEL`)."""
    from .plotting import law_histograms

    (lo, _), (_, hi) = rep.law.edges()[0], rep.law.edges()[-1]
    log = lo <= 0 or hi / lo > 100
    fig = Figure(figsize=(7.5, 4.2), layout="constrained")  # no pyplot: drawn straight to a file
    ax = fig.subplots()
    spectra = {"MHA": rep.comparison.spectra["mha"], "$Y^G$": rep.comparison.spectra["yg"]}
    title = (
        f"{rep.name}: {rep.cfg.describe()}\nMHA against $Y^G$: rel. W1 = {100 * rep.rel_w1.mean:.2f} %, "
        f"KS = {rep.ks.mean:.4f} (mean of {rep.rel_w1.count} seed(s))"
    )
    law_histograms(ax, spectra, rep.law, log=log, legend=True)
    zero = [mass for x, mass in rep.law.atoms() if x == 0]
    if log and zero:  # the stem of an atom at 0 stands at the axis' left edge, not at 0
        ax.plot([], [], "v", color="black", ms=5, label=ATOM_AT_ZERO_LABEL.format(mass=float(zero[0])))
        ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=9)
    ax.set_ylabel("density of log(eigenvalue)" if log else "density")
    return fig


def write_report(rep: Report, out: str | Path, extra: dict | None = None) -> dict:
    """Write ``report.png`` and ``report.json`` into the folder ``out`` (created);
    returns the dictionary written, :func:`report_dict` with ``extra`` (e.g.
    ``{"hf_config": ...}``) added.  Each file is written to a temporary file in
    ``out`` and renamed over its name once both are complete, so a failure
    leaves no half report and no temporary file; no other file in ``out`` is touched."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = {**report_dict(rep), **(extra or {})}
    text = json.dumps(data, indent=1, allow_nan=False) + "\n"  # strict JSON: a NaN or an infinity raises
    fig = report_figure(rep)
    temps = {}
    try:
        for file in REPORT_FILES:
            temp = out / f".{file}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            # a new file (O_EXCL), with the permissions a plain open gives (0666 less the umask)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            temps[file] = temp
            with os.fdopen(fd, "wb") as f:
                if file == "report.png":
                    fig.savefig(f, format="png", dpi=120)
                else:
                    f.write(text.encode())
        for file, temp in temps.items():
            os.replace(temp, out / file)
    finally:
        for temp in temps.values():
            if os.path.lexists(temp):
                os.unlink(temp)
    return data
