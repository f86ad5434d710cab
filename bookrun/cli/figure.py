"""``python -m gelib figure PANEL``: the numbers of one panel of the paper's learning figures.

The GE curves at Table D.3's exact dimensions, read as
:data:`gelib.learning.TABLE_D1_READING` says (:func:`gelib.figure_data.panel`): the limit
law only, seconds per panel, nothing sampled. ``--json`` prints the panel as one JSON
object (the schema in :mod:`gelib.figure_data`), ``--csv FILE`` writes it as a table
(one row per point; an existing file is kept unless ``--force``). Without either, a short
table with Table D.1's value for the panel beside it.
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
from pathlib import Path

from gelib.figure_data import PANELS, panel, to_rows

from .common import add_command, dumps, report_error

__all__ = ["register", "run"]

SCHEMA = """output (--json): {"panel", "quantity", "x_label", "reading": {"epsilon", "sigma",
"horizon"}, "dimensions": {field: value, or the sorted values where the layers differ},
"series": [{"label", "kind": "ge", "x": [...], "y": [...], "ci95": null}],
"table_d1": [{"quantity", "value", "half_width"}]}; --csv: the columns panel, quantity,
series, kind, x, y, ci95. The MHA markers are not computed by this command (yet): every
series is a GE curve."""


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``figure`` sub-command to an argparse ``subparsers`` object."""
    p = add_command(
        subparsers,
        "figure",
        help="the GE curves of one panel of Figures 2-3, at Table D.3's dimensions",
        description="The numbers of one panel of the paper's learning figures: the GE curves at "
        "Table D.3's dimensions (the limit law only), read as Table D.1 requires. " + SCHEMA,
    )
    p.add_argument("panel", choices=tuple(PANELS), help="the panel: " + ", ".join(PANELS))
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--csv", type=Path, metavar="FILE", help="write the points as a CSV table to FILE")
    p.add_argument("--force", action="store_true", help="with --csv: replace an existing FILE")
    p.set_defaults(func=run)
    return p


def _write_csv(path: Path, rows: list[dict]) -> None:
    """Write by rename, so that FILE is either the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> int:
    """Print (or write) the panel."""
    if args.csv is not None:
        if args.csv.exists() and not args.force:
            return report_error("figure", f"{args.csv} exists; pass --force to replace it")
        if not args.csv.parent.is_dir():
            return report_error("figure", f"no folder {args.csv.parent} for {args.csv}")
    data = panel(args.panel)
    if args.csv is not None:
        _write_csv(args.csv, to_rows(data))
    if args.json:
        print(dumps(data))
    elif args.csv is None:
        r = data["reading"]
        print(
            f"panel {data['panel']}: {data['quantity']} (GE; epsilon = {r['epsilon']:g}, "
            f"sigma = {r['sigma']:g}, read at t = {r['horizon']:g})"
        )
        for s in data["series"]:
            lo, hi = min(s["y"]), max(s["y"])
            print(
                f"  {s['label']}: {len(s['y'])} points, {data['x_label']} {s['x'][0]:g}..{s['x'][-1]:g}, "
                f"{data['quantity']} {lo:.4g}..{hi:.4g}"
            )
        for row in data["table_d1"]:
            print(f"  Table D.1: {row['quantity']}, about {row['value']:.4g} (95 % half-width {row['half_width']:g})")
    return 0
