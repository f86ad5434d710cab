"""``python -m gelib report``: a one-page report for one model's attention dimensions.

For a preset, a model's ``config.json`` (``--hf-config``) or explicit
dimensions, writes into ``--out`` a figure of the softmax layer's spectrum over
the limit law (``report.png``) and the distances, the predicted first-moment
shift, the law's edges and atoms and the parameter count (``report.json``),
computed by :mod:`gelib.report`, and prints a summary.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import jax

from ..config import ConfigError
from ..memory import check_memory
from ..report import make_report, write_report
from .common import add_command, add_config_args, config_from_args, fmt, memory_size, positive_int

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to an argparse ``subparsers`` object."""
    p = add_command(
        subparsers,
        "report",
        help="a one-page report (figure and JSON) for one model's dimensions",
        description=(
            "What the paper says about one layer: the spectrum of the softmax attention (MHA) "
            "over the limit law, the relative W1 and KS distances to its Gaussian equivalent and "
            "to the law (mean and 95%% interval over seeds), the predicted first-moment shift, "
            "the law's edges and atoms and the parameter count, written to --out as report.png "
            "and report.json."
        ),
    )
    add_config_args(p)
    p.add_argument("--seeds", type=positive_int, default=5, help="independent draws (default 5)")
    p.add_argument("--seed", type=int, default=0, help="root seed of the JAX key (default 0)")
    p.add_argument("--out", metavar="DIR", help="output folder (default report-<preset or config name>)")
    p.add_argument(
        "--max-memory",
        type=memory_size,
        metavar="SIZE",
        help="refuse a layer whose estimated working set exceeds SIZE (default: the memory available now)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``report``; a bad layer or an unwritable folder is a one-line error (status 2)."""
    cfg = config_from_args(args)
    name = args.preset or (Path(args.hf_config).stem if args.hf_config else "layer")
    out = Path(args.out or f"report-{name}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"cannot write the folder {out}: {e.strerror or e}") from None
    check_memory(cfg, ("mha", "yg"), "fast", args.seeds, limit=args.max_memory)
    rep = make_report(jax.random.key(args.seed), cfg, args.seeds, name=name, progress=not args.quiet)
    data = write_report(rep, out)

    def interval(s: dict, scale: float = 1.0, digits: int = 3) -> str:
        ci = "n/a (1 seed)" if s["ci95"] is None else "+- " + fmt(scale * s["ci95"], digits)
        return f"{fmt(scale * s['mean'], digits, 9)} {ci}"

    law = data["law"]
    shift = data["mean_shift"]
    lines = [
        f"{name}: {cfg.describe()}",
        f"parameters of the projections   {data['parameters']:,}",
        f"MHA against Y^G   rel. W1 (%) {interval(data['mha_vs_ge']['rel_w1'], 100)}   "
        f"KS {interval(data['mha_vs_ge']['ks'], 1, 4)}",
        f"MHA against law   rel. W1 (%) {interval(data['mha_vs_law']['rel_w1'], 100)}   "
        f"KS {interval(data['mha_vs_law']['ks'], 1, 4)}",
        f"mean shift (%)    measured {interval(shift['measured'], 100)}   predicted "
        + ("n/a (tied)" if shift["predicted"] is None else fmt(100 * shift["predicted"], 3)),
        "law: support "
        + ", ".join(f"[{fmt(a)}, {fmt(b)}]" for a, b in law["edges"])
        + "; atoms "
        + (", ".join(f"{fmt(m)} at {fmt(x)}" for x, m in law["atoms"]) or "none"),
        f"wrote {out / 'report.png'} and {out / 'report.json'} ({data['seconds']:.1f} s)",
    ]
    print("\n".join(lines))
    return 0
