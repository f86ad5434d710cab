"""``python -m gelib figure PANEL``: the numbers of one panel of the paper's Figures 2, 3 and D.1.

The GE curves at Table D.3's exact dimensions (Figure D.1: the book's choice, ``n = 4096``),
read as :data:`gelib.learning.TABLE_D1_READING` says (:func:`gelib.figure_data.panel`): the
limit law only, seconds per panel (the map 2b, and 2d with its roots, about half a minute), nothing
sampled.
``--markers`` adds the MHA markers at ``--scale`` (they sample softmax layers: the expected
time is printed first, :func:`gelib.figure_data.marker_seconds`). ``--json`` prints the panel
as one JSON object (the schema in :mod:`gelib.figure_data`), ``--csv FILE`` writes it as a
table (one row per point; ``-`` standard output; an existing file is kept unless ``--force``).
Without either, a short table with Table D.1's value for the panel beside it.

Everything that can refuse is checked before anything is computed: the flags (``--seeds``,
``--seed`` and ``--scale`` need ``--markers``, ``--force`` needs ``--csv``), the memory of the
markers' layers, and the CSV's destination (:func:`bookrun.outputs.check_output_file`: not a
folder, a link, a place in the repository's sources or a folder that cannot be written). The
CSV is written whole or not at all (:func:`bookrun.outputs.write_atomic`), with the mode the
umask gives a new file, or the mode of the file it replaces.
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import Any

from gelib.figure_data import PANELS, add_simulated_markers, marker_layer_set, marker_seconds, panel, to_rows

from ..outputs import STDOUT, OutputError, check_output_file, write_output
from .common import add_command, dumps, report_error, seed_int

__all__ = ["register", "run"]

SCHEMA = """output (--json): {"panel", "quantity", "x_label", "reading": {"epsilon", "sigma",
"horizon"}, "dimensions": {field: value, or the sorted values where the layers differ},
"series": [{"label", "kind": "ge", "x": [...], "y": [...], "ci95": null}],
"table_d1": [{"quantity", "value", "half_width", "relative_percent"}]}; panel 2d also "beta_range" (the betas
drawn), "root_range" (the betas searched) and "roots": {"unit": [every beta where the ratio crosses 1],
"table_d1": [every beta where it takes Table D.1's value]}; --csv: the columns panel, quantity,
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
    p.add_argument("--csv", metavar="FILE", help="write the points as a CSV table to FILE ('-': standard output)")
    p.add_argument("--force", action="store_true", help="with --csv: replace an existing FILE")
    p.add_argument(
        "--markers",
        action="store_true",
        help="also simulate the MHA markers at --scale (minutes at default; the expected time is printed first)",
    )
    p.add_argument(
        "--scale",
        choices=tuple(MARKER_SCALES),
        default=None,
        help="with --markers: the context length of the simulated layers (default: default), "
        + ", ".join(f"{k} n = {v[0]}" for k, v in MARKER_SCALES.items())
        + " (Table D.3's layers shrunk by n / 4096, head widths kept, as in the book's chapters)",
    )
    p.add_argument(
        "--seeds", type=int, default=None, help="with --markers: softmax layers per marker (default: the scale's)"
    )
    p.add_argument(
        "--seed",
        type=seed_int,
        default=None,
        help="with --markers: the seed of the key streams, 0 <= seed < 2**63 (default 0)",
    )
    p.set_defaults(func=run)
    return p


#: --scale: (n, seeds) of the simulated markers, as the learning chapters' scales.
MARKER_SCALES = {"ci": (256, 3), "default": (512, 4), "paper": (4096, 10)}


#: The columns of --csv, in order (:func:`gelib.figure_data.to_rows`).
CSV_COLUMNS = ("panel", "quantity", "series", "kind", "x", "y", "ci95")


def seconds_floor(secs: float) -> str:
    """A floor on a time for a message: ``at least 12 s``, or ``under 1 s`` where it rounds to 0."""
    return f"at least {secs:.0f} s" if round(secs) >= 1 else "under 1 s"


def csv_text(data: dict[str, Any]) -> str:
    """The panel as CSV, :data:`CSV_COLUMNS` (one row per point), as
    :func:`gelib.figure_data.write_csv` writes it."""
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS))
    writer.writeheader()
    writer.writerows(to_rows(data))
    return buf.getvalue()


def _refusal(args: argparse.Namespace) -> str | None:
    """Why the command line cannot run, before anything is computed (or ``None``)."""
    if not args.markers:
        flags = (("--seeds", args.seeds), ("--seed", args.seed), ("--scale", args.scale))
        given = [flag for flag, value in flags if value is not None]
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            return f"{' and '.join(given)} only {verb} with --markers (they set the simulated markers)"
    if args.force and args.csv is None:
        return "--force only applies with --csv FILE (it replaces an existing FILE)"
    if args.csv == STDOUT and args.json:
        return "--csv - and --json both write to standard output; give one of them"
    return None


def run(args: argparse.Namespace) -> int:
    """Print (or write) the panel; refusals (status 2) come before anything is computed."""
    why = _refusal(args)
    if why:
        return report_error("figure", why)
    scale = args.scale or "default"
    n, seeds = MARKER_SCALES[scale]
    seeds = seeds if args.seeds is None else args.seeds
    seed = 0 if args.seed is None else args.seed
    if args.markers:
        if seeds < 2:
            return report_error("figure", f"--seeds must be at least 2 (an interval needs two), got {seeds}")
        if args.panel == "2b":
            return report_error("figure", "panel 2b is a map of the limit law: it has no markers")
    if args.csv is not None:
        try:
            destination = check_output_file(args.csv, "--csv")
        except OutputError as e:
            return report_error("figure", e)
        if destination != STDOUT and destination.exists() and not args.force:
            return report_error("figure", f"{destination} exists; pass --force to replace it")
    if args.markers:
        from gelib.memory import check_memory

        for cfg in marker_layer_set(args.panel, n):  # every seed's eigenvalues are held at once
            check_memory(cfg, ("mha",), "fast", seeds)
    data = panel(args.panel)
    if args.markers:
        import jax

        layers = len(marker_layer_set(args.panel, n))
        secs = marker_seconds(args.panel, n, seeds)
        where = (
            f"the sampling {seconds_floor(secs)} on this CPU at rest from their sizes, plus a few seconds of "
            "compilation per layer"
            if secs is not None
            else "no estimate off a CPU"
        )
        print(f"markers: {layers} softmax layers at n = {n}, {seeds} seeds each; {where}", file=sys.stderr)
        add_simulated_markers(data, jax.random.key(seed), n, seeds, progress=lambda m: print("  " + m, file=sys.stderr))
    if args.csv is not None:
        if destination != STDOUT and destination.exists() and not args.force:  # made while this one computed
            return report_error("figure", f"{destination} appeared while the panel was computed; kept it", 1)
        try:
            write_output(destination, csv_text(data))
        except OSError as e:
            return report_error("figure", f"cannot write --csv {destination}: {e.strerror or e}", 1)
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
        if "roots" in data:
            lo, hi = data["root_range"]
            for key, what in (("unit", "crosses 1"), ("table_d1", "takes Table D.1's value")):
                at = ", ".join(f"{b:.4f}" for b in data["roots"][key]) or "nowhere"
                print(f"  on beta in [{lo:g}, {hi:g}] the ratio {what} at beta = {at}")
    return 0
