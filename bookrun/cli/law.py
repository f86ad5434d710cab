"""``python -m gelib law``: the limit spectral law of an attention layer.

Prints the exact moments and/or the density (with support edges and atoms)
of the law of the eigenvalues of ``Y Y^T / n`` (``--level output``), of the
value covariance ``mu_V`` or of the output covariance ``mu_VO``
(:mod:`gelib.attention_law`).
"""

from __future__ import annotations

import argparse

from gelib.attention_law import attention_law, output_covariance_law, output_law, value_law
from gelib.config import ConfigError
from gelib.freeprob import ConvergenceError, LawError

from .common import (
    add_command,
    add_config_args,
    check_beta,
    config_from_args,
    dumps,
    positive_int_at_most,
    report_error,
)

__all__ = ["register", "run", "MAX_MOMENTS", "MAX_POINTS"]

MAX_MOMENTS = 200  # --moments: the moment algebra costs K^3 (200: a few seconds)
MAX_POINTS = 100_000  # --density: about 0.5 ms per point

_LEVELS = {"output": output_law, "mu_v": value_law, "mu_vo": output_covariance_law, "attention": attention_law}
_TITLES = {
    "output": "eigenvalues of Y Y^T / n",
    "attention": "squared singular values of one head's sqrt(n) A^perp (n x n)",
    "mu_v": "mu_V (value covariance)",
    "mu_vo": "mu_VO (output covariance)",
}


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``law`` sub-command to an argparse ``subparsers`` object."""
    p = add_command(
        subparsers,
        "law",
        help="limit spectral law of the Gaussian-equivalent output",
        description=(
            "The free-probability limit law (Hayase and Karakida 2026, Table A.4) of the "
            "eigenvalues of Y Y^T / n, or of the intermediate laws mu_V and mu_VO: exact "
            "moments (--moments K) and the density on a grid clustered at the support "
            "edges, with the edges and the atoms (--density N). Default: --moments 4. "
            "A number that cannot be computed correctly in float64 (a moment that overflows, "
            "a support that does not carry the whole mass) is refused with exit status 1."
        ),
    )
    add_config_args(p)
    p.add_argument(
        "--moments",
        type=positive_int_at_most(MAX_MOMENTS, "the exact moment algebra costs K^3"),
        metavar="K",
        help=f"first K moments m_1..m_K (K <= {MAX_MOMENTS})",
    )
    p.add_argument(
        "--density",
        type=positive_int_at_most(MAX_POINTS, "each point is one solve of the chain"),
        metavar="N",
        help=f"density at about N points (N <= {MAX_POINTS})",
    )
    p.add_argument(
        "--level",
        choices=tuple(_LEVELS),
        default="output",
        help="output (default): eigenvalues of Y Y^T / n; mu_v, mu_vo: the value and output covariances; "
        "attention: the squared singular values of one head's centred attention sqrt(n) A^perp (n x n), whose "
        "Gaussian equivalent is (beta S + alpha Z) / sqrt(n), mean e^(beta^2) - 1 (the predecessor paper's "
        "one-head law: it needs only --n, --dk and --beta; --d defaults to n and --h to 1, and h, d_V, d_O play "
        "no part)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)
    return p


def _compute(law, k: int, density: int | None) -> dict:
    """Moments and/or density, edges and atoms; every number finite and checked (raises
    :class:`~gelib.freeprob.LawError` otherwise)."""
    out = {}
    if k:
        out["moments"] = law.moments(k).tolist()
    if density:
        law.check_support()  # the components carry the whole continuous mass: no truncated support
        x = law.grid(density)
        out.update(
            x=x.tolist(),
            density=law.density(x).tolist(),
            atoms=[list(a) for a in law.atoms()],
            edges=[list(e) for e in law.edges()],
        )
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``law``; returns 2 for a bad layer, 1 for a number that cannot be
    computed correctly in float64 (:class:`~gelib.freeprob.LawError`: an
    overflow, a truncated support, a numerical method that missed its tolerance)."""
    if args.level == "attention" and not args.preset and not args.hf_config:
        # the one-head law involves only n, d_k and beta: any d >= n and any h give a valid layer
        if args.d is None:
            args.d = args.n
        if args.h is None:
            args.h = 1
    try:
        cfg = config_from_args(args)
        check_beta(cfg)  # beta^2 a normal float64 number
    except ConfigError as e:
        return report_error("law", e)
    k = args.moments if args.moments or args.density else 4
    where = f"{_TITLES[args.level]} at beta = {cfg.beta:g}"
    try:
        out = _compute(_LEVELS[args.level](cfg), k, args.density)
        text = dumps(out)  # strict JSON, and a last check that every number is finite
    except ConvergenceError as e:
        return report_error(
            "law",
            f"numerical failure for {where}: {e}; the solver cannot resolve this law in float64 "
            "(its moments are exact: --moments K)",
            status=1,
        )
    except LawError as e:
        return report_error("law", f"{where}: {e}", status=1)
    except ValueError as e:  # dumps: a number that is not finite
        return report_error("law", f"{where}: {e}", status=1)
    if args.json:
        print(text)
        return 0
    lines = [f"layer  {cfg.describe()}", f"law    {_TITLES[args.level]}"]
    if k:
        lines += ["", f"{'k':>3}  {'m_k':>22}"] + [f"{i:>3}  {m:>22.15g}" for i, m in enumerate(out["moments"], 1)]
    if args.density:
        lines += [
            "",
            "support edges: " + ", ".join(f"[{a:.10g}, {b:.10g}]" for a, b in out["edges"]),
            "atoms: " + (", ".join(f"{m:.10g} at {x:.10g}" for x, m in out["atoms"]) or "none"),
            "",
            f"{'x':>22}  {'density':>22}",
        ]
        lines += [f"{x:>22.15g}  {d:>22.15g}" for x, d in zip(out["x"], out["density"])]
    print("\n".join(lines))
    return 0
