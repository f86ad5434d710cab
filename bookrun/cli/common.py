"""What every sub-command shares: the layer flags, argument types, error reports, output formats.

:func:`.add_config_args` adds the flags that describe one attention layer
(a preset, or explicit dimensions) and :func:`.config_from_args` turns them
into an :class:`~gelib.config.AttentionConfig`; :func:`positive_int` (and
:func:`positive_int_at_most`) is the argument type of counts and
:func:`memory_size` that of sizes (``4GB``); :func:`check_beta` refuses a
``beta`` so small that the models' numbers would be rounding error
(:func:`beta_floor`);
:func:`report_error` prints every sub-command's errors in one format,
``python -m gelib <command>: error: <message>``, and :class:`CommandParser`
(made by :func:`add_command`) gives argparse's own errors of a sub-command,
unrecognised arguments included, that same prefix and one line.  :func:`dumps` writes
strict JSON (no ``NaN`` or ``Infinity``: an undefined value is ``null``), and
:func:`fmt` writes numbers of any size in a fixed width (an interval that
is rounding error as 0).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from gelib.config import AttentionConfig, ConfigError
from gelib.presets import PRESETS, get_preset

__all__ = [
    "PROG",
    "CommandParser",
    "add_command",
    "add_config_args",
    "config_from_args",
    "positive_int",
    "seed_int",
    "positive_int_at_most",
    "memory_size",
    "beta_floor",
    "check_beta",
    "report_error",
    "one_line",
    "dumps",
    "fmt",
]

PROG = "python -m gelib"

ZERO_RELATIVE = 1e-12  # fmt: below this fraction of the number it qualifies, a half-width is rounding error
DIGITS = 1e4  # beta_floor: the sampled models must keep at least four significant digits

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
        "key/value heads, head width (head_dim, d_kv) and context length; n = the context length capped at d "
        "unless --n is given; attention features outside the paper's model (a sliding window, logit "
        "soft-capping, ALiBi, ...) are named on stderr as 'not modelled', and multi-head latent attention "
        "is refused; for a vision transformer (ViT, DeiT, BEiT, DINOv2) n counts its patches and class "
        "tokens; --d, --h, --h-kv, --dk and --n fill a field the file lacks",
    )
    g.add_argument(
        "--stack",
        choices=("encoder", "decoder"),
        help="with --hf-config of an encoder-decoder (Whisper, BART, T5, ...): the stack whose self-attention "
        "is read, encoder (the default) or decoder (causal; its cross-attention is another layer); "
        "refused for a config with one stack",
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
    g.add_argument(
        "--beta",
        type=float,
        help="inverse temperature beta > 0 (default 1); a beta so small that the spectra would be rounding "
        "error is refused (for mha below 1e4 machine epsilons: 2.3e-12 in float64)",
    )
    g.add_argument("--tie-kv", action="store_true", help="within-head key-value tying W^V = W^K (needs d_V = d_K)")
    g.add_argument(
        "--dtype", choices=("float64", "float32"), default="float64", help="floating-point precision (default float64)"
    )


def config_from_args(args: argparse.Namespace) -> AttentionConfig:
    """An :class:`~gelib.AttentionConfig` from the flags of :func:`.add_config_args`
    (a preset, a ``config.json`` read by :mod:`gelib.hfconfig`, or explicit
    dimensions, explicit flags winning); raises :class:`~gelib.config.ConfigError`
    for a missing or invalid layer."""
    args.hf_dims = None  # the gelib.hfconfig.HFDims read by --hf-config (report.json names its unmodelled fields)
    fields: dict = {}
    hf_config = getattr(args, "hf_config", None)
    stack = getattr(args, "stack", None)
    if args.preset and hf_config:
        raise ConfigError("give --preset or --hf-config, not both")
    if stack and not hf_config:
        raise ConfigError(f"--stack {stack} needs --hf-config (it picks a stack of an encoder-decoder's config.json)")
    if args.preset:
        p = get_preset(args.preset)
        fields = dict(n=p.n, d=p.d, h=p.h, h_kv=p.h_kv, d_k=p.d_k)
    elif hf_config:
        from gelib.hfconfig import dims_from_hf_config, read_hf_config

        dims = dims_from_hf_config(
            read_hf_config(hf_config),
            source=hf_config,
            n=args.n,
            d=args.d,
            h=args.h,
            h_kv=args.h_kv,
            d_k=args.dk,
            stack=stack,
        )
        args.hf_dims = dims
        fields = dims.fields()
        given = [  # a flag that filled a field the file lacks is in the notes already
            f"--{flag.replace('_', '-')} {getattr(args, flag)}"
            for flag, field in _FIELDS.items()
            if getattr(args, flag) is not None and field not in dims.filled
        ]
        notes = [*dims.notes, *(["overridden on the command line: " + ", ".join(given)] if given else [])]
        command = getattr(args, "command", None)
        for note in notes:  # what was read and assumed, on stderr (stdout may be JSON), one line each
            line = f"{PROG}{' ' + command if command else ''}: {one_line(hf_config)}: {one_line(note)}"
            print(line, file=sys.stderr, flush=True)
    for flag, field in _FIELDS.items():
        value = getattr(args, flag)
        if value is not None:
            fields[field] = value
    required = {"n": "--n", "d": "--d", "h": "--h", "d_k": "--dk"}
    missing = [flag for field, flag in required.items() if field not in fields]
    if missing:
        raise ConfigError(f"give --preset NAME, --hf-config PATH or all of {', '.join(missing)}")
    filled_h = args.hf_dims is not None and "h" in args.hf_dims.filled  # --h filled the file's missing count
    if (args.preset or hf_config) and args.h is not None and args.h_kv is None and not filled_h:
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


#: --seed: jax.random.key takes a signed 64-bit integer; the seeds are its non-negative half.
SEED_LIMIT = 2**63


def seed_int(text: str) -> int:
    """Argument type of ``--seed``: an integer ``0 <= seed < 2**63``, the non-negative
    seeds that ``jax.random.key`` takes (a signed 64-bit integer); anything else is
    argparse's error ``invalid seed value: '<text>'``, with the range named."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"invalid seed value: {text!r} (an integer 0 <= seed < 2**63 = {SEED_LIMIT}, as jax.random.key takes)"
        )
    return value


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
    from gelib.memory import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


memory_size.__name__ = "memory size"  # argparse: "invalid memory size value: 'x'"


def beta_floor(models: Sequence[str], dtype: str = "float64") -> tuple[float, str]:
    """``(floor, why)``: the smallest ``beta`` at which ``models`` (of Table 1) are
    computed to four significant digits in ``dtype`` (``eps`` its machine epsilon,
    ``tiny`` its least normal number; the floor rounded up to two digits), and
    the reason, for a message.

    * ``mha``: the centred softmax ``A^perp = softmax(beta S) - 1/n`` is an
      ``O(beta)`` difference of ``O(1)`` weights and keeps about
      ``log10(beta / eps)`` digits: ``beta >= 1e4 eps`` (2.3e-12 in float64,
      1.2e-3 in float32). In three layers (n = 24 .. 256, float64) the
      relative W1 at ``1e4 eps`` was within 3e-4 of itself at ``beta = 1e-6``
      (the linear regime), at ``1e3 eps`` within 3.4e-3, and at ``1e2 eps``
      off by up to 1.6e-2, with the KS distance changed.
    * ``yg_sigma_f``: the kernel ``Sigma_f`` is an ``O(beta^2)`` difference of
      ``O(1)`` exponentials: ``beta^2 >= 1e4 eps``, ``beta >= 100 sqrt(eps)``
      (1.5e-6, 3.5e-2).
    * the others (and the limit law, ``models=()``): their entries are
      ``O(beta)`` and the eigenvalues ``O(beta^2)``, computed without
      cancellation; ``beta^2`` must be a normal number with four decades to
      spare, ``beta >= 100 sqrt(tiny)`` (1.5e-152, 1.1e-17). Below it ``beta^2``
      underflows (the shift ``e^(beta^2) - 1`` and the spectrum are 0) and the
      relative distances divide by zero.
    """
    info = np.finfo(dtype)
    eps, tiny = float(info.eps), float(info.tiny)
    if "mha" in models:
        return _round_up(DIGITS * eps), (
            f"the centred softmax weights of mha, softmax(beta S) - 1/n, are O(beta) differences of O(1) "
            f"numbers and keep about log10(beta / eps) digits ({dtype} eps = {eps:.3g})"
        )
    if "yg_sigma_f" in models:
        return _round_up(math.sqrt(DIGITS * eps)), (
            f"the kernel Sigma_f of yg_sigma_f is an O(beta^2) difference of O(1) exponentials and keeps about "
            f"log10(beta^2 / eps) digits ({dtype} eps = {eps:.3g})"
        )
    return _round_up(math.sqrt(DIGITS * tiny)), (
        f"the eigenvalues are O(beta^2), and beta^2 must stay a normal {dtype} number "
        f"(the least is {tiny:.3g}) with four decades to spare"
    )


def _round_up(x: float) -> float:
    """``x`` rounded up to two significant digits (2.2204e-12 -> 2.3e-12): a floor that prints exactly."""
    unit = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(f"{math.ceil(x / unit * (1 - 1e-12)) * unit:.2g}")


def check_beta(cfg: AttentionConfig, models: Sequence[str] = ()) -> None:
    """Raise :class:`~gelib.config.ConfigError` when ``cfg.beta`` is below
    :func:`beta_floor` for ``models`` at ``cfg.dtype`` (``models=()``: the limit
    law, always float64): a beta so small that the numbers would be rounding
    error, or ``beta^2`` would underflow to 0, is refused instead of printed."""
    dtype = cfg.dtype if models else "float64"
    floor, why = beta_floor(models, dtype)
    if cfg.beta < floor:
        four = " to four digits" if models else ""
        raise ConfigError(f"beta = {cfg.beta:g} is too small: {why}; the smallest beta computed{four} is {floor:.2g}")


class CommandParser(argparse.ArgumentParser):
    """The parser of one sub-command: rejects unrecognised arguments itself, so
    that the error reads ``python -m gelib <command>: error: unrecognized
    arguments: ...`` like every other error of that command, not
    ``python -m gelib: error: ...``; and reports every error of its own in one
    line, without argparse's usage above it (``--help`` shows that)."""

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error("unrecognized arguments: " + " ".join(extras))
        return namespace, extras

    def error(self, message: str):
        """``<prog>: error: <message> (see --help)`` on stderr, one line, and exit status 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(str(message).split())} (see --help)\n")


def add_command(subparsers: argparse._SubParsersAction, name: str, **kwargs: Any) -> CommandParser:
    """``subparsers.add_parser(name, **kwargs)``, as a :class:`CommandParser`."""
    parser = subparsers.add_parser(name, **kwargs)
    if not isinstance(parser, CommandParser):  # the tree's parser class is argparse's own
        parser.__class__ = CommandParser  # a subclass that adds no state, only a check and a format: safe
    return parser


def one_line(text: object) -> str:
    """``text`` on one printable line: a newline, tab or other control character (a path may
    hold one) is written as its escape (``\\n``), so one note or error stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def report_error(command: str, message: object, status: int = 2) -> int:
    """Print ``python -m gelib <command>: error: <message>`` to stderr and
    return ``status`` (the exit status: 2 for a bad command line)."""
    text = " ".join(str(message).split("\n"))  # one line, whatever the message
    if sys.stderr is not None:  # None where stderr was closed (2>&-): the exit status still tells
        try:
            print(f"{PROG} {command}: error: {text}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # a full or closed stderr
            pass
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


def fmt(x: float | None, digits: int = 4, width: int = 0, ref: float | None = None) -> str:
    """A number for a table: ``digits`` decimals (``.4f``) while ``1e-3 <= |x| < 1e6``
    (or ``x == 0``), else ``digits`` significant digits in exponent form
    (``.4e``), so that a huge mean never prints hundreds of digits; ``None`` and
    ``NaN`` print as ``n/a``.  Right-aligned in ``width`` characters.

    ``ref``: the number that ``x`` qualifies (the mean of an interval ``x``):
    an ``x`` below ``ZERO_RELATIVE = 1e-12`` times ``|ref|`` is rounding error
    (e.g. the half-width ``3.5e-16`` of seeds whose KS distances are all
    equal) and prints as ``0``, in ``ref``'s format."""
    if x is not None and ref is not None and math.isfinite(x) and abs(x) <= ZERO_RELATIVE * abs(ref):
        x = 0.0
    if x is None or (isinstance(x, float) and math.isnan(x)):
        text = "n/a"
    elif x == 0 or (math.isfinite(x) and 1e-3 <= abs(x) < 1e6):
        text = f"{x:.{digits}f}"
    else:
        text = f"{x:.{digits}e}"
    return f"{text:>{width}}"
