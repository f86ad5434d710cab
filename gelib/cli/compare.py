"""``python -m gelib compare``: spectral distances between two models of Table 1.

Samples the original multi-head attention and its Gaussian equivalent (or any
two models of the paper's Table 1) from shared draws and reports the relative
W1 and KS distances between their spectra over seeds, as a table or as JSON.
"""

from __future__ import annotations

import argparse
import json
import time

from ..config import ConfigError
from ..presets import get_preset
from .common import add_config_args, config_from_args

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``compare`` sub-command to an argparse ``subparsers`` object."""
    c = subparsers.add_parser(
        "compare",
        help="spectral distance between MHA and its Gaussian equivalent",
        description=(
            "Sample random multi-head attention layers and compare the spectra (eigenvalues of "
            "Y Y^T / n) of two models of the paper's Table 1 built from the same draws: by default "
            "the original softmax MHA (mha) against the Gaussian equivalent Y^G (yg). Reports the "
            "relative W1 distance (W1 / mean eigenvalue of the second model, as a fraction in "
            "--json) and the KS distance, with mean and 95%% confidence interval over seeds."
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
    c.add_argument("--seed", type=int, default=0, help="root seed of the JAX key (default 0)")
    c.add_argument(
        "--path",
        choices=("fast", "literal"),
        default="fast",
        help="sample Q, K, V directly (fast) or build X and the weights (literal)",
    )
    c.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=run)
    return c


def run(args: argparse.Namespace) -> int:
    """Run ``compare``; a bad layer or bad flags raise :class:`~gelib.config.ConfigError`."""
    import jax

    from ..models import LABELS, check_models
    from ..spectra import compare

    cfg = config_from_args(args)
    models = check_models(m.strip() for m in args.models.split(","))
    if len(models) != 2 or models[0] == models[1]:
        raise ConfigError(f"--models needs two different models A,B, got {args.models!r}")
    if args.seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {args.seeds}")
    t0 = time.perf_counter()
    res = compare(jax.random.key(args.seed), cfg, models, args.seeds, args.path, progress=not args.quiet)
    elapsed = time.perf_counter() - t0
    out = res.as_dict()
    out.update(seed=args.seed, path=args.path, seconds=elapsed, device=jax.devices()[0].platform)
    if args.preset:
        p = get_preset(args.preset)
        out["preset"] = p.name
        if p.paper_rel_w1 is not None and models == ("mha", "yg") and cfg == p.config(dtype=cfg.dtype):
            out["paper_rel_w1"] = {"mean": p.paper_rel_w1[0] / 100, "ci95": p.paper_rel_w1[1] / 100}
    if args.json:
        print(json.dumps(out))
        return 0
    a, b = (LABELS[m] for m in models)
    rw, k = res.rel_w1_summary, res.ks_summary
    lines = [
        f"layer     {cfg.describe()}",
        f"models    {a}  against  {b}  ({res.rel_w1.size} seeds from seed {args.seed}, {args.path} path)",
        "",
        f"{'distance':<12}{'mean':>10}{'95% CI':>12}",
        f"{'rel. W1 (%)':<12}{100 * rw.mean:>10.3f}{'+-' + format(100 * rw.ci95, '.3f'):>12}",
        f"{'KS':<12}{k.mean:>10.4f}{'+-' + format(k.ci95, '.4f'):>12}",
    ]
    if "paper_rel_w1" in out:
        pm, pc = p.paper_rel_w1
        lines.append(f"{'paper (%)':<12}{pm:>10.3f}{'+-' + format(pc, '.3f'):>12}")
    lines += [
        "",
        f"mean eigenvalue: {a} {out['mean_eigenvalue'][models[0]]:.4f}, {b} "
        f"{out['mean_eigenvalue'][models[1]]:.4f}, limit "
        f"= {cfg.first_moment:.4f}",
        f"time {elapsed:.1f} s on {out['device']}",
    ]
    print("\n".join(lines))
    return 0
