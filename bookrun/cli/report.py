"""``python -m gelib report``: a one-page report for one model's attention dimensions.

For a preset, a model's ``config.json`` (``--hf-config``) or explicit
dimensions, writes into ``--out`` a figure of the softmax layer's spectrum over
the limit law (``report.png``) and the distances, the predicted first-moment
shift, the law's edges and atoms and the parameter count (``report.json``),
computed by :mod:`gelib.report`, and prints a summary.

Everything that can refuse is checked before anything is sampled or
created: the layer, ``beta``, the memory, the folder (not a file, not a
symbolic link, not inside the repository's ``.git``, ``book/`` or other
sources: :func:`bookrun.outputs.check_output_folder`), an earlier report in
it (``report.png`` or ``report.json``: refused unless ``--force``), whether
it can be written (a probe file, created and removed), and the layer's limit
law (a law that the solver cannot resolve in float64, a density that is not
integrable next to an edge, is refused with status 1, as ``law`` refuses
it).  A report that fails leaves no folder it created itself behind, and no
file in the folder other than ``report.png`` and ``report.json`` is ever
written or removed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import jax

from gelib.attention_law import output_law
from gelib.config import AttentionConfig, ConfigError
from gelib.freeprob import ConvergenceError, LawError
from gelib.memory import check_memory
from gelib.report import REPORT_FILES, make_report, write_report

from ..outputs import OutputError, check_output_folder
from .common import (
    add_command,
    add_config_args,
    check_beta,
    config_from_args,
    fmt,
    memory_size,
    one_line,
    positive_int,
    report_error,
    seed_int,
)

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
    p.add_argument("--seed", type=seed_int, default=0, help="root seed of the JAX key, 0 <= seed < 2**63 (default 0)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="output folder, created if needed (default report-<preset, or the config's folder name>); "
        "other files in it are left alone; not a symbolic link, and not inside the repository's .git, "
        "book/ or other sources",
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


def _check_folder(name: str, force: bool) -> Path:
    """The folder ``name`` (``--out``) as a path, once it is known that it may be
    written; refuse, before anything is created, a destination that
    :func:`~bookrun.outputs.check_output_folder` refuses (an empty name, a file,
    a symbolic link, a folder inside the repository's sources, a parent that
    cannot be written), and an earlier report in it (unless ``force``)."""
    try:
        out = check_output_folder(name, "--out")
    except OutputError as e:
        raise ConfigError(str(e)) from None
    if out.is_dir() and not force:
        for file in REPORT_FILES:
            if (out / file).exists() or (out / file).is_symlink():
                raise ConfigError(
                    f"{out / file} already exists (an earlier report); give --force to overwrite "
                    f"{' and '.join(REPORT_FILES)}, or another --out"
                )
    return out


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


def _law_refusal(cfg: AttentionConfig, e: LawError) -> str:
    """The one line of a limit law that cannot be computed, as ``law`` words it."""
    where = f"the limit law of the eigenvalues of Y Y^T / n at beta = {cfg.beta:g}"
    if isinstance(e, ConvergenceError):
        return (
            f"numerical failure for {where}: {e}; the solver cannot resolve this law in float64, so the report's "
            "distances to it cannot be computed (its moments are exact: python -m gelib law --moments K)"
        )
    return f"{where}: {e}"


def run(args: argparse.Namespace) -> int:
    """Run ``report``; a bad layer, an earlier report (without ``--force``) or an
    unwritable or forbidden folder is a one-line error (status 2), raised before
    anything is computed; a limit law that cannot be computed in float64 is one
    line with status 1, before anything is sampled. A failed report leaves no
    folder behind that this run created."""
    cfg = config_from_args(args)
    hf_info = _hf_config_info(args)
    name = report_name(args)
    check_beta(cfg, ("mha", "yg"))
    check_memory(cfg, ("mha", "yg"), "fast", args.seeds, limit=args.max_memory)
    out = _check_folder(args.out if args.out is not None else f"report-{name}", args.force)
    try:  # the law first: seconds, where the sampling may take minutes
        output_law(cfg).check_support()
    except LawError as e:
        return report_error("report", _law_refusal(cfg, e), status=1)
    created = _make_folder(out)
    done = False
    try:
        try:
            rep = make_report(jax.random.key(args.seed), cfg, args.seeds, name=name, progress=not args.quiet)
        except LawError as e:
            return report_error("report", _law_refusal(cfg, e), status=1)
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
        f"weights   {data['weights']}",
        f"parameters of the projections   {data['parameters']:,}",
        f"MHA against Y^G   rel. W1 (%) {interval(data['mha_vs_ge']['rel_w1'], 100)}   "
        f"KS {interval(data['mha_vs_ge']['ks'], 1, 4)}",
        *[
            f"  {what} {data['mha_vs_ge'][key]['resolution']['words']}"
            for key, what in (("rel_w1", "rel. W1"), ("ks", "KS"))
            if not data["mha_vs_ge"][key]["resolution"]["resolved"]
        ],
        "floor             rel. W1 (%) >= "
        + ("n/a (tied)" if data["floor"]["rel_w1"] is None else fmt(data["floor"]["rel_w1"], 3))
        + " (the exact expected shift of the mean eigenvalue at this size)",
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
    lines.append(  # the paths on one printable line (a name may hold a newline or an undecodable byte)
        f"wrote {one_line(out / 'report.png')} and {one_line(out / 'report.json')} ({data['seconds']:.1f} s)"
    )
    print("\n".join(lines))
    return 0
