"""``python -m gelib presets``: the attention dimensions of public models.

Lists every preset known to ``--preset`` (:mod:`gelib.presets`), as a table or
as JSON (strict: a row without a reported distance has ``null``), with its
source and, for the paper's Table 2 rows, the reported relative W1 and KS distances.
"""

from __future__ import annotations

import argparse

from gelib.presets import PRESETS

from .common import add_command, dumps

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``presets`` sub-command to an argparse ``subparsers`` object."""
    p = add_command(
        subparsers,
        "presets",
        help="list the dimensions of public models",
        description="The attention dimensions of public models known to --preset.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the presets."""
    rows = [p for p in PRESETS.values()]
    if args.json:
        print(
            dumps(
                {
                    p.name: {
                        **p.config().as_dict(),
                        "source": p.source,
                        "paper_rel_w1_percent": p.paper_rel_w1,
                        "paper_ks": p.paper_ks,
                    }
                    for p in rows
                }
            )
        )
        return 0
    print(f"{'name':<18}{'n':>6}{'d':>7}{'h/h_kv':>9}{'d_k':>6}  sharing  {'paper rel. W1 (%)':<18}paper KS")
    for p in rows:
        paper = f"{p.paper_rel_w1[0]:.2f} +- {p.paper_rel_w1[1]:.2f}" if p.paper_rel_w1 else "-"
        paper_ks = f"{p.paper_ks[0]:.4f} +- {p.paper_ks[1]:.4f}" if p.paper_ks else "-"
        print(f"{p.name:<18}{p.n:>6}{p.d:>7}{f'{p.h}/{p.h_kv}':>9}{p.d_k:>6}  {p.sharing:<7}  {paper:<18}{paper_ks}")
    return 0
