"""What every sub-command shares: the layer flags, argument types, error reports.

:func:`.add_config_args` adds the flags that describe one attention layer
(a preset, or explicit dimensions) and :func:`.config_from_args` turns them
into an :class:`~gelib.config.AttentionConfig`; :func:`positive_int` is the
argument type of counts; :func:`report_error` prints every sub-command's
errors in one format, ``python -m gelib <command>: error: <message>``.
"""

from __future__ import annotations

import argparse
import sys

from ..config import AttentionConfig, ConfigError
from ..presets import PRESETS, get_preset

__all__ = ["PROG", "add_config_args", "config_from_args", "positive_int", "report_error"]

PROG = "python -m gelib"

_FIELDS = {  # flag -> AttentionConfig field
    "n": "n",
    "d": "d",
    "h": "h",
    "h_kv": "h_kv",
    "dk": "d_k",
    "dv": "d_v",
    "do": "d_o",
    "beta": "beta",
}


def add_config_args(p: argparse.ArgumentParser) -> None:
    """The flags that describe one attention layer (shared by every sub-command)."""
    g = p.add_argument_group("layer", "a preset, or explicit dimensions; explicit flags override the preset's values")
    g.add_argument("--preset", metavar="NAME", help=f"dimensions of a public model: {', '.join(PRESETS)}")
    g.add_argument("--n", type=int, help="context length n (n <= d)")
    g.add_argument("--d", type=int, help="input width d")
    g.add_argument("--h", type=int, help="number of query heads h")
    g.add_argument(
        "--h-kv",
        type=int,
        help="key/value groups h_KV dividing h (default h, also when --h overrides a preset; 1 = MQA)",
    )
    g.add_argument("--dk", type=int, help="key/query width per head d_K")
    g.add_argument("--dv", type=int, help="value width per head d_V (default d_K)")
    g.add_argument("--do", type=int, help="output width d_O (default d)")
    g.add_argument("--beta", type=float, help="inverse temperature beta > 0 (default 1)")
    g.add_argument("--tie-kv", action="store_true", help="within-head key-value tying W^V = W^K (needs d_V = d_K)")
    g.add_argument(
        "--dtype", choices=("float64", "float32"), default="float64", help="floating-point precision (default float64)"
    )


def config_from_args(args: argparse.Namespace) -> AttentionConfig:
    """An :class:`~gelib.AttentionConfig` from the flags of :func:`.add_config_args`;
    raises :class:`~gelib.config.ConfigError` for a missing or invalid layer."""
    fields: dict = {}
    if args.preset:
        p = get_preset(args.preset)
        fields = dict(n=p.n, d=p.d, h=p.h, h_kv=p.h_kv, d_k=p.d_k)
    for flag, field in _FIELDS.items():
        value = getattr(args, flag)
        if value is not None:
            fields[field] = value
    required = {"n": "--n", "d": "--d", "h": "--h", "d_k": "--dk"}
    missing = [flag for field, flag in required.items() if field not in fields]
    if missing:
        raise ConfigError(f"give --preset NAME or all of {', '.join(missing)}")
    if args.preset and args.h is not None and args.h_kv is None:
        fields["h_kv"] = fields["h"]  # a new head count without --h-kv: unshared
    return AttentionConfig(**fields, tie_kv=args.tie_kv, dtype=args.dtype)


def positive_int(text: str) -> int:
    """Argument type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


positive_int.__name__ = "positive integer"  # argparse: "invalid positive integer value: 'x'"


def report_error(command: str, message: object, status: int = 2) -> int:
    """Print ``python -m gelib <command>: error: <message>`` to stderr and
    return ``status`` (the exit status: 2 for a bad command line)."""
    print(f"{PROG} {command}: error: {message}", file=sys.stderr)
    return status
