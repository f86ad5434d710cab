"""``python -m gelib figure PANEL``: the numbers of one panel of the paper's Figures 2, 3 and D.1.

The GE curves at Table D.3's exact dimensions (Figure D.1: the book's choice, ``n = 4096``),
read as :data:`gelib.learning.TABLE_D1_READING` says (:func:`gelib.figure_data.panel`): the
limit law only, seconds per panel (the map 2b about half a minute), nothing sampled.
``--markers`` adds the MHA markers at ``--scale`` (they sample softmax layers: the expected
time is printed first, :func:`gelib.figure_data.marker_seconds`). ``--json`` prints the panel
as one JSON object (the schema in :mod:`gelib.figure_data`), ``--csv FILE`` writes it as a
table (one row per point; an existing file is kept unless ``--force``). Without either, a
short table with Table D.1's value for the panel beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gelib.figure_data import PANELS, add_simulated_markers, marker_layer_set, marker_seconds, panel, write_csv

from .common import add_command, dumps, report_error

__all__ = ["register", "run"]

SCHEMA = """output (--json): {"panel", "quantity", "x_label", "reading": {"epsilon", "sigma",
"horizon"}, "dimensions": {field: value, or the sorted values where the layers differ},
"series": [{"label", "kind": "ge", "x": [...], "y": [...], "ci95": null}],
"table_d1": [{"quantity", "value", "half_width", "relative_percent"}]}; --csv: the columns panel, quantity,
series, kind, x, y, ci95. Every series is a GE curve unless --markers (then "kind": "mha"
series with "ci95", the 95 % Student-t half-widths over seeds, and "markers": {"n", "seeds"})."""


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
    p.add_argument(
        "--markers",
        action="store_true",
        help="also simulate the MHA markers at --scale (minutes at default; the expected time is printed first)",
    )
    p.add_argument(
        "--scale",
        choices=tuple(MARKER_SCALES),
        default="default",
        help="with --markers: the context length of the simulated layers, "
        + ", ".join(f"{k} n = {v[0]}" for k, v in MARKER_SCALES.items())
        + " (Table D.3's layers shrunk by n / 4096, head widths kept, as in the book's chapters)",
    )
    p.add_argument(
        "--seeds", type=int, default=None, help="with --markers: softmax layers per marker (default: the scale's)"
    )
    p.add_argument("--seed", type=int, default=0, help="with --markers: the seed of the key streams (default 0)")
    p.set_defaults(func=run)
    return p


#: --scale: (n, seeds) of the simulated markers, as the learning chapters' scales.
MARKER_SCALES = {"ci": (256, 3), "default": (512, 4), "paper": (4096, 10)}


def run(args: argparse.Namespace) -> int:
    """Print (or write) the panel."""
    n, seeds = MARKER_SCALES[args.scale]
    seeds = seeds if args.seeds is None else args.seeds
    if args.markers:
        if seeds < 2:
            return report_error("figure", f"--seeds must be at least 2 (an interval needs two), got {seeds}")
        if args.panel == "2b":
            return report_error("figure", "panel 2b is a map of the limit law: it has no markers")
    if args.csv is not None:
        if args.csv.exists() and not args.force:
            return report_error("figure", f"{args.csv} exists; pass --force to replace it")
        if not args.csv.parent.is_dir():
            return report_error("figure", f"no folder {args.csv.parent} for {args.csv}")
    data = panel(args.panel)
    if args.markers:
        import jax

        layers = len(marker_layer_set(args.panel, n))
        secs = marker_seconds(args.panel, n, seeds)
        where = (
            f"the sampling at least {secs:.0f} s on this CPU at rest from their sizes, plus a few seconds of "
            "compilation per layer"
            if secs is not None
            else "no estimate off a CPU"
        )
        print(f"markers: {layers} softmax layers at n = {n}, {seeds} seeds each; {where}", file=sys.stderr)
        add_simulated_markers(
            data, jax.random.key(args.seed), n, seeds, progress=lambda m: print("  " + m, file=sys.stderr)
        )
    if args.csv is not None:
        write_csv(data, args.csv)
    if args.json:
        print(dumps(data))
    elif args.csv is None:
        r = data["reading"]
        how = f"epsilon = {r['epsilon']:g}, sigma = {r['sigma']:g}, read at t = {r['horizon']:g}"
        print(
            f"panel {data['panel']}: {data['quantity']} (GE" + ("" if args.panel.startswith("D1") else "; " + how) + ")"
        )
        for s in data["series"]:
            if not s["y"]:
                print(f"  {s['label']}: no point at this scale")
                continue
            lo, hi = min(s["y"]), max(s["y"])
            print(
                f"  {s['label']} ({s['kind']}): {len(s['y'])} points, {data['x_label']} {s['x'][0]:g}..{s['x'][-1]:g}, "
                f"{data['quantity']} {lo:.4g}..{hi:.4g}"
            )
        for row in data["table_d1"]:
            print(f"  Table D.1: {row['quantity']}, about {row['value']:.4g} (95 % half-width {row['half_width']:g})")
    return 0
