"""What every sub-command shares: the layer flags, argument types, error reports, output formats.

:func:`.add_config_args` adds the flags that describe one attention layer
(a preset, or explicit dimensions) and :func:`.config_from_args` turns them
into an :class:`~gelib.config.AttentionConfig`; :func:`positive_int` (and
:func:`positive_int_at_most`) is the argument type of counts and
:func:`memory_size` that of sizes (``4GB``);
:func:`report_error` prints every sub-command's errors in one format,
``python -m gelib <command>: error: <message>``, and :class:`CommandParser`
(made by :func:`add_command`) gives argparse's own errors of a sub-command,
unrecognised arguments included, that same prefix.  :func:`dumps` writes
strict JSON (no ``NaN`` or ``Infinity``: an undefined value is ``null``), and
:func:`fmt` writes numbers of any size in a fixed width.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from ..config import AttentionConfig, ConfigError
from ..presets import PRESETS, get_preset

__all__ = [
    "PROG",
    "CommandParser",
    "add_command",
    "add_config_args",
    "config_from_args",
    "positive_int",
    "positive_int_at_most",
    "memory_size",
    "report_error",
    "dumps",
    "fmt",
]

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
    g = p.add_argument_group(
        "layer",
        "a preset, a model's config.json, or explicit dimensions; explicit flags override the values read",
    )
    g.add_argument("--preset", metavar="NAME", help=f"dimensions of a public model: {', '.join(PRESETS)}")
    g.add_argument(
        "--hf-config",
        metavar="PATH",
        help="a model's config.json (Hugging Face transformers format, read offline): width, heads, "
        "key/value heads, head_dim and context length; n = the context length capped at d unless --n is given",
    )
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
    """An :class:`~gelib.AttentionConfig` from the flags of :func:`.add_config_args`
    (a preset, a ``config.json`` read by :mod:`gelib.hfconfig`, or explicit
    dimensions, explicit flags winning); raises :class:`~gelib.config.ConfigError`
    for a missing or invalid layer."""
    fields: dict = {}
    hf_config = getattr(args, "hf_config", None)
    if args.preset and hf_config:
        raise ConfigError("give --preset or --hf-config, not both")
    if args.preset:
        p = get_preset(args.preset)
        fields = dict(n=p.n, d=p.d, h=p.h, h_kv=p.h_kv, d_k=p.d_k)
    elif hf_config:
        from ..hfconfig import dims_from_hf_config, read_hf_config

        dims = dims_from_hf_config(read_hf_config(hf_config), source=hf_config)
        fields = dims.fields()
        given = [
            f"--{flag.replace('_', '-')} {getattr(args, flag)}" for flag in _FIELDS if getattr(args, flag) is not None
        ]
        notes = [*dims.notes, *(["overridden on the command line: " + ", ".join(given)] if given else [])]
        command = getattr(args, "command", None)
        for note in notes:  # what was read and assumed, on stderr (stdout may be JSON)
            print(f"{PROG}{' ' + command if command else ''}: {hf_config}: {note}", file=sys.stderr, flush=True)
    for flag, field in _FIELDS.items():
        value = getattr(args, flag)
        if value is not None:
            fields[field] = value
    required = {"n": "--n", "d": "--d", "h": "--h", "d_k": "--dk"}
    missing = [flag for field, flag in required.items() if field not in fields]
    if missing:
        raise ConfigError(f"give --preset NAME, --hf-config PATH or all of {', '.join(missing)}")
    if (args.preset or hf_config) and args.h is not None and args.h_kv is None:
        fields["h_kv"] = fields["h"]  # a new head count without --h-kv: unshared
    return AttentionConfig(**fields, tie_kv=args.tie_kv, dtype=args.dtype)


def positive_int(text: str) -> int:
    """Argument type: an integer >= 1 (argparse reports ``invalid positive integer value: 'x'``
    for a word and ``must be a positive integer, got 0`` for a number below 1)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


positive_int.__name__ = "positive integer"  # argparse: "invalid positive integer value: 'x'"


def positive_int_at_most(limit: int, why: str) -> Callable[[str], int]:
    """Argument type: an integer in ``1 .. limit``; above it argparse reports
    ``at most <limit> (<why>), got <value>``."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"at most {limit} ({why}), got {text}")
        return value

    parse.__name__ = "positive integer"
    return parse


def memory_size(text: str) -> int:
    """Argument type: a size in bytes such as ``4GB``, ``512MiB`` or ``1e9``
    (:func:`gelib.memory.parse_size`)."""
    from ..memory import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


memory_size.__name__ = "memory size"  # argparse: "invalid memory size value: 'x'"


class CommandParser(argparse.ArgumentParser):
    """The parser of one sub-command: rejects unrecognised arguments itself, so
    that the error reads ``python -m gelib <command>: error: unrecognized
    arguments: ...`` (with the sub-command's usage) like every other error of
    that command, not ``python -m gelib: error: ...``."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error("unrecognized arguments: " + " ".join(extras))
        return namespace, extras


def add_command(subparsers: argparse._SubParsersAction, name: str, **kwargs: Any) -> CommandParser:
    """``subparsers.add_parser(name, **kwargs)``, as a :class:`CommandParser`."""
    parser = subparsers.add_parser(name, **kwargs)
    if not isinstance(parser, CommandParser):  # the tree's parser class is argparse's own
        parser.__class__ = CommandParser  # a subclass that only adds a check: safe to switch
    return parser


def report_error(command: str, message: object, status: int = 2) -> int:
    """Print ``python -m gelib <command>: error: <message>`` to stderr and
    return ``status`` (the exit status: 2 for a bad command line)."""
    text = " ".join(str(message).split("\n"))  # one line, whatever the message
    print(f"{PROG} {command}: error: {text}", file=sys.stderr)
    return status


def _non_finite(obj: Any, path: str = "") -> str | None:
    """The path (``rel_w1.ci95``, ``moments[2]``) of the first NaN or infinite float in ``obj``, or ``None``."""
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (path or "the value")
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, (list, tuple)) else ()
    for k, v in items:
        found = _non_finite(v, f"{path}.{k}" if isinstance(k, str) else f"{path}[{k}]")
        if found:
            return found.lstrip(".")
    return None


def dumps(obj: Any) -> str:
    """Strict JSON, ``json.dumps(obj, allow_nan=False)``: an undefined value must
    be ``None`` (``null``; e.g. the interval of one seed), and a NaN or an
    infinity raises ``ValueError`` naming where it is, instead of writing the
    ``NaN`` or ``Infinity`` that JSON does not have."""
    bad = _non_finite(obj)
    if bad:
        raise ValueError(f"{bad} is not a finite number; it cannot be written as JSON")
    return json.dumps(obj, allow_nan=False)


def fmt(x: float | None, digits: int = 4, width: int = 0) -> str:
    """A number for a table: ``digits`` decimals (``.4f``) while ``1e-3 <= |x| < 1e6``
    (or ``x == 0``), else ``digits`` significant digits in exponent form
    (``.4e``), so that a huge mean never prints hundreds of digits; ``None`` and
    ``NaN`` print as ``n/a``.  Right-aligned in ``width`` characters."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        text = "n/a"
    elif x == 0 or (math.isfinite(x) and 1e-3 <= abs(x) < 1e6):
        text = f"{x:.{digits}f}"
    else:
        text = f"{x:.{digits}e}"
    return f"{text:>{width}}"
