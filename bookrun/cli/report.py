"""``python -m gelib report``: a one-page report for one model's attention dimensions.

For a preset, a model's ``config.json`` (``--hf-config``) or explicit
dimensions, writes into ``--out`` a figure of the softmax layer's spectrum over
the limit law (``report.png``) and the distances, the predicted first-moment
shift, the law's edges and atoms and the parameter count (``report.json``),
computed by :mod:`gelib.report`, and prints a summary.

Everything that can refuse is checked before anything is computed or
created: the layer, ``beta``, the memory, an earlier report in the folder
(``report.png`` or ``report.json``: refused unless ``--force``) and whether
the folder can be written (a probe file, created and removed).  A report
that fails leaves no folder it created itself behind, and no file in the
folder other than ``report.png`` and ``report.json`` is ever written or
removed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import jax

from gelib.config import ConfigError
from gelib.memory import check_memory
from gelib.report import REPORT_FILES, make_report, write_report

from .common import add_command, add_config_args, check_beta, config_from_args, fmt, memory_size, positive_int

__all__ = ["register", "run", "report_name"]


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``report`` sub-command to an argparse ``subparsers`` object."""
    p = add_command(
        subparsers,
        "report",
        help="a one-page report (figure and JSON) for one model's dimensions",
        description=(
            "What the paper says about one layer: the spectrum of the softmax attention (MHA) "
            "over the limit law, the relative W1 and KS distances to its Gaussian equivalent and "
            "to the law (mean and 95 % interval over seeds), the predicted first-moment shift, "
            "the law's edges and atoms and the parameter count, written to --out as report.png "
            "and report.json."
        ),
    )
    add_config_args(p)
    p.add_argument("--seeds", type=positive_int, default=5, help="independent draws (default 5)")
    p.add_argument("--seed", type=int, default=0, help="root seed of the JAX key (default 0)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output folder, created if needed (default report-<preset, or the config's folder name>); "
        "other files in it are left alone",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="overwrite the report.png and report.json of an earlier report in --out (refused without it)",
    )
    p.add_argument(
        "--max-memory",
        type=memory_size,
        metavar="SIZE",
        help="refuse a layer whose estimated working set exceeds SIZE (default: the memory available now)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def report_name(args: argparse.Namespace) -> str:
    """The report's name: the preset, else the ``--hf-config`` file's stem, or
    its folder's name when the stem is ``config`` (``.../Mistral-7B-v0.1/config.json``
    is ``Mistral-7B-v0.1``), else ``layer``."""
    if args.preset:
        return args.preset
    hf_config = getattr(args, "hf_config", None)
    if not hf_config:
        return "layer"
    path = Path(hf_config)
    if path.stem == "config":
        return path.resolve().parent.name or path.stem
    return path.stem


def _cannot_write(out: Path, e: OSError) -> ConfigError:
    return ConfigError(f"cannot write the folder {out}: {e.strerror or e}")


def _check_folder(out: Path, force: bool) -> None:
    """Refuse, before anything is created: ``out`` that is not a folder, and an
    earlier report in it (unless ``force``)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"cannot write the folder {out}: it exists and is not a folder")
    if out.is_dir() and not force:
        for file in REPORT_FILES:
            if (out / file).exists() or (out / file).is_symlink():
                raise ConfigError(
                    f"{out / file} already exists (an earlier report); give --force to overwrite "
                    f"{' and '.join(REPORT_FILES)}, or another --out"
                )


def _make_folder(out: Path) -> list[Path]:
    """Create ``out`` (and its missing parents) and check that a file can be
    written in it (a probe, created and removed); returns the folders created,
    deepest first, for :func:`_remove_folders`."""
    created, missing = [], out
    while not missing.exists() and not missing.is_symlink() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".gelib-report-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        _remove_folders(created)
        raise _cannot_write(out, e) from None
    return created


def _remove_folders(created: list[Path]) -> None:
    """Remove the folders :func:`_make_folder` created, deepest first, while empty
    (``rmdir``: a folder that holds anything is never removed)."""
    for folder in created:
        try:
            folder.rmdir()
        except OSError:
            return


def _hf_config_info(args: argparse.Namespace) -> dict | None:
    """What ``report.json`` records of ``--hf-config``: the path, the notes of
    what was read and assumed, and the fields the file sets that the model
    does not include (``args.hf_dims``, set by ``config_from_args``)."""
    hf_config = getattr(args, "hf_config", None)
    if not hf_config:
        return None
    dims = getattr(args, "hf_dims", None)
    return {
        "path": str(hf_config),
        "notes": [str(x) for x in getattr(dims, "notes", ())],
        "not_modelled": [str(x) for x in getattr(dims, "unmodelled", ())],
    }


def run(args: argparse.Namespace) -> int:
    """Run ``report``; a bad layer, an earlier report (without ``--force``) or an
    unwritable folder is a one-line error (status 2), raised before anything
    is computed, and leaves no folder behind that this run created."""
    cfg = config_from_args(args)
    hf_info = _hf_config_info(args)
    name = report_name(args)
    out = Path(args.out or f"report-{name}")
    check_beta(cfg, ("mha", "yg"))
    check_memory(cfg, ("mha", "yg"), "fast", args.seeds, limit=args.max_memory)
    _check_folder(out, args.force)
    created = _make_folder(out)
    done = False
    try:
        rep = make_report(jax.random.key(args.seed), cfg, args.seeds, name=name, progress=not args.quiet)
        try:
            data = write_report(rep, out, extra=None if hf_info is None else {"hf_config": hf_info})
        except OSError as e:
            raise _cannot_write(out, e) from None
        done = True
    finally:
        if not done:
            _remove_folders(created)

    def interval(s: dict, scale: float = 1.0, digits: int = 3) -> str:
        ci = "n/a (1 seed)" if s["ci95"] is None else "+- " + fmt(scale * s["ci95"], digits, ref=scale * s["mean"])
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
    ]
    if hf_info is not None:
        lines.append(
            f"not modelled (set in {hf_info['path']}, not part of the model): "
            + ("; ".join(hf_info["not_modelled"]) or "none")
        )
    lines.append(f"wrote {out / 'report.png'} and {out / 'report.json'} ({data['seconds']:.1f} s)")
    print("\n".join(lines))
    return 0
