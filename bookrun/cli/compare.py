"""``python -m gelib compare``: spectral distances between two models of Table 1.

Samples the original multi-head attention and its Gaussian equivalent (or any
two models of the paper's Table 1) from shared draws and reports the relative
W1 and KS distances between their spectra over seeds, as a table or as JSON
(strict JSON: an interval that one seed leaves undefined is ``null``).  Before
sampling, the working set of the layer is estimated (:mod:`gelib.memory`) and
a layer that does not fit in the available memory, or in ``--max-memory``,
is refused with one line.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from gelib.config import ConfigError
from gelib.presets import get_preset

from .common import add_command, add_config_args, check_beta, config_from_args, dumps, fmt, memory_size, seed_int

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``compare`` sub-command to an argparse ``subparsers`` object."""
    c = add_command(
        subparsers,
        "compare",
        help="spectral distance between MHA and its Gaussian equivalent",
        description=(
            "Sample random multi-head attention layers and compare the spectra (eigenvalues of "
            "Y Y^T / n) of two models of the paper's Table 1 built from the same draws: by default "
            "the original softmax MHA (mha) against the Gaussian equivalent Y^G (yg). Reports the "
            "relative W1 distance (W1 / mean eigenvalue of the second model, as a fraction in "
            "--json) and the KS distance, with mean and 95 % confidence interval over seeds."
        ),
    )
    add_config_args(c)
    c.add_argument(
        "--models",
        default="mha,yg",
        metavar="A,B",
        help="two models of Table 1: mha, yf, yf_ring, yg_sigma_f, yg_sigma_g, yg (default mha,yg)",
    )
    c.add_argument("--seeds", type=int, default=10, help="number of independent draws (default 10)")
    c.add_argument("--seed", type=seed_int, default=0, help="root seed of the JAX key, 0 <= seed < 2**63 (default 0)")
    c.add_argument(
        "--path",
        choices=("fast", "literal"),
        default="fast",
        help="sample Q, K, V directly (fast) or build X and the weights (literal)",
    )
    c.add_argument(
        "--max-memory",
        type=memory_size,
        metavar="SIZE",
        help="refuse a layer whose estimated working set exceeds SIZE (e.g. 4GB, 512MiB; "
        "default: the memory available now)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=run)
    return c


def _interval(summary: dict) -> dict:
    """A summary's dict with the undefined spread of one seed as ``None`` (``null`` in JSON)."""
    out = dict(summary)
    if out["count"] < 2:
        out["ci95"] = out["std"] = None
    return out


def _ci(value: float, count: int, scale: float = 1.0, digits: int = 3, mean: float | None = None) -> str:
    """The 95 % half-width for the table: ``+-0.123``, or why there is none; a
    half-width that is rounding error next to ``mean`` prints as 0 (:func:`fmt`)."""
    if count < 2 or not math.isfinite(value):
        return f"n/a ({count} seed)" if count < 2 else "n/a"
    return "+-" + fmt(scale * value, digits, ref=None if mean is None else scale * mean)


def run(args: argparse.Namespace) -> int:
    """Run ``compare``; a bad layer or bad flags raise :class:`~gelib.config.ConfigError`
    (a layer too large for the memory :class:`~gelib.memory.MemoryLimitError`,
    spectra that overflow float64 a ``ConfigError`` too: both exit with status 2)."""
    import jax

    from gelib.memory import check_memory
    from gelib.models import LABELS, check_models
    from gelib.spectra import compare, estimate_seconds, machine_rates

    cfg = config_from_args(args)
    models = check_models(m.strip() for m in args.models.split(","))
    if len(models) != 2 or models[0] == models[1]:
        raise ConfigError(f"--models needs two different models A,B, got {args.models!r}")
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
    check_beta(cfg, models)
    check_memory(cfg, models, args.path, args.seeds, limit=args.max_memory)
    expected = estimate_seconds(cfg, args.seeds) if args.path == "fast" else None
    if expected is not None and expected > 20 and not args.quiet:
        busy = machine_rates().busy
        print(
            f"expected: about {expected:.0f} s for {args.seeds} seed{'s' * (args.seeds > 1)} on this CPU at rest, "
            "an estimate from the matmul and eigensolve rates measured now on this machine (the layer's flops "
            "at the fastest of several timed products, plus its eigensolves)" + (f"; {busy}" if busy else ""),
            file=sys.stderr,
        )
    t0 = time.perf_counter()
    try:
        res = compare(jax.random.key(args.seed), cfg, models, args.seeds, args.path, progress=not args.quiet)
    except np.linalg.LinAlgError:
        res = None
    if res is None or not all(np.all(np.isfinite(res.spectra[m])) for m in models):
        raise ConfigError(
            f"the spectra of {' or '.join(LABELS[m] for m in models)} overflow float64 at beta = {cfg.beta:g} "
            f"(the mean eigenvalue of the Gaussian equivalent alone is e^(beta^2) d_o / n = {fmt(cfg.first_moment)}); "
            "lower beta"
        )
    elapsed = time.perf_counter() - t0
    out = res.as_dict()
    out.update(rel_w1=_interval(out["rel_w1"]), ks=_interval(out["ks"]))
    out.update(seed=args.seed, path=args.path, seconds=elapsed, device=jax.devices()[0].platform)
    if args.preset:
        p = get_preset(args.preset)
        out["preset"] = p.name
        if p.paper_rel_w1 is not None and models == ("mha", "yg") and cfg == p.config(dtype=cfg.dtype):
            out["paper_rel_w1"] = {"mean": p.paper_rel_w1[0] / 100, "ci95": p.paper_rel_w1[1] / 100}
            out["paper_ks"] = {"mean": p.paper_ks[0], "ci95": p.paper_ks[1]}
    if args.json:
        print(dumps(out))
        return 0
    a, b = (LABELS[m] for m in models)
    rw, k = res.rel_w1_summary, res.ks_summary
    seeds = f"{res.rel_w1.size} seed{'s' * (res.rel_w1.size > 1)}"
    lines = [
        f"layer     {cfg.describe()}",
        f"models    {a}  against  {b}  ({seeds} from seed {args.seed}, {args.path} path)",
        "",
        f"{'distance':<12}{'mean':>10}{'95% CI':>14}",
        f"{'rel. W1 (%)':<12}{fmt(100 * rw.mean, 3, 10)}{_ci(rw.ci95, rw.count, 100, 3, rw.mean):>14}",
        f"{'KS':<12}{fmt(k.mean, 4, 10)}{_ci(k.ci95, k.count, 1, 4, k.mean):>14}",
    ]
    if "paper_rel_w1" in out:
        pm, pc = p.paper_rel_w1
        lines.append(f"{'paper (%)':<12}{fmt(pm, 3, 10)}{'+-' + fmt(pc, 3):>14}")
        km, kc = p.paper_ks
        lines.append(f"{'paper KS':<12}{fmt(km, 4, 10)}{'+-' + fmt(kc, 4):>14}")
    lines += [
        "",
        f"mean eigenvalue: {a} {fmt(out['mean_eigenvalue'][models[0]])}, {b} "
        f"{fmt(out['mean_eigenvalue'][models[1]])}, limit = {fmt(cfg.first_moment)}",
        f"time {elapsed:.1f} s on {out['device']}",
    ]
    print("\n".join(lines))
    return 0
