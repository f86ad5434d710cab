"""Property-based tests (Hypothesis) of the command line's contract.

For every command line drawn, ``bookrun.cli.main(argv)``, run in-process:

* either exits 0 and, where the command takes ``--json`` and it was given,
  prints strict JSON on stdout (one document; ``NaN`` and ``Infinity`` are
  refused) -- ``report`` has no ``--json``: its ``report.json`` must be strict
  JSON instead -- and whatever it prints on stdout can be written by a UTF-8
  stdout;
* or exits 1 or 2 and writes exactly one error line on stderr,
  ``python -m gelib <command>: error: <message>`` (``python -m gelib: error:``
  when the first word is no command), the last line; the only other lines
  allowed above it are the ``--hf-config`` notes, each of the form
  ``python -m gelib <command>: <the config's path>: <note>``;
* never a traceback;
* and no file outside the destination changes: a sandbox is checksummed before
  and after every run (a temporary folder holding the working directory with a
  user's files, an earlier report, a read-only folder, symbolic links into a
  folder beside it, config files; plus the repository's ``book/``,
  ``_toc.yml``, the names at the top of the repository and of its ``.git``).
  The destination of a run that exits 0 is ``report --out DIR`` (``DIR``
  and its missing parents may be created, and ``DIR/report.png`` and
  ``DIR/report.json`` written, as the link-free and the resolved path) or
  ``figure --csv FILE`` (that file only). A run that exits non-zero changes
  nothing at all, its destination included.

The command lines are drawn for the fast commands -- ``law``, ``presets``,
``compare`` and ``report`` at tiny dimensions, ``figure`` without markers --
mixing valid and invalid values: integers at and past every limit (0, -1,
2**63, 2**64, a 5000-digit number), floats (``nan``, ``inf``, ``1e308``,
``1e-320``, ``1e``, ``''``), random text, unknown and duplicated flags,
``--flag=value`` forms, and paths of every kind for ``--out``, ``--csv`` and
``--hf-config`` (new, nested, an existing folder or file, ``-``, ``''``,
``.``, a symbolic link to a folder or file outside, a dangling or looping
link, a read-only folder, a path through a file, a name too long, odd
characters and undecodable bytes, ``/proc``, and new names inside the
repository's ``book/`` and ``.git``). ``--hf-config`` files are drawn too:
JSON objects with the field names :mod:`gelib.hfconfig` reads (and nested
``text_config``, ``attn_config``, ``vision_config``, encoder/decoder
objects), values of every JSON type, huge integers, missing fields, and
malformed files (truncated, duplicated keys, a 5000-digit literal, deep
nesting, a byte-order mark, Latin-1, not an object). ``batch`` and
``render`` are drawn only as refusals that cannot start anything (their
``--root`` is never the repository's and the working directory holds no
``_toc.yml``).

Kept fast: valid ``compare`` and ``report`` runs all have the layer
``n=8, d=16, h=2, d_k=4`` (JAX compiles one shape; ``--seed``, ``--seeds``
1..3 and ``--beta`` roam), the other values drawn for their dimensions are
invalid ones; ``law`` roams over any dimensions with the exact moments (the
density, a solve per point, only at that layer and up to 8 points);
``figure`` draws the cheap panels (``D1a``, ``D1b``, ``D1c``, ``3a``) and
``--markers`` only where it is refused; ``--seeds`` is never a count that
would run (only 1..3, or <= 0, or >= 2**63).  The long search lifts these
limits (every panel, every pair of models, both paths and dtypes, any small
layer, densities up to 200 points, moments up to 200).

Profiles: ``ci`` (the default: derandomized, no example database, no
deadline; about a minute on two cores) and ``long`` (50 times the examples,
randomized), selected by the environment::

    GELIB_HYPOTHESIS=long .venv/bin/pytest tests/test_properties.py

(``-x`` stops at the first property that fails; the failing example, shrunk,
is printed with the observed output and a ``@reproduce_failure`` blob.)  The
examples of each property are ``weight x`` the profile's ``max_examples``
(the weights are in :data:`WEIGHTS`).

A failure's message gives the command line as a shell would run it from the
sandbox's working directory (``<sandbox>`` the sandbox folder, with the layout
of :class:`Sandbox`) and the drawn ``config.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
import traceback
import uuid
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from bookrun.cli import build_parser, main
from bookrun.cli.common import one_line
from bookrun.cli.report import report_name

REPO = Path(__file__).resolve().parent.parent
PROG = "python -m gelib"

# --- profiles -------------------------------------------------------------------------------

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=10,  # the unit: each property draws WEIGHTS[name] x this
    suppress_health_check=_SUPPRESS,
    print_blob=False,
)
settings.register_profile(
    "long",
    derandomize=False,
    database=None,  # no .hypothesis folder (it would be written inside the sandbox's working directory)
    deadline=None,
    max_examples=500,
    suppress_health_check=_SUPPRESS,
    print_blob=True,
)
LONG = os.environ.get("GELIB_HYPOTHESIS", "").strip().lower() == "long"
PROFILE = "long" if LONG else "ci"

#: Examples of each property, in units of the profile's max_examples (ci: 10, long: 500).
WEIGHTS = {
    "law": 15,
    "compare": 8,
    "report": 3,
    "figure": 6,
    "presets": 3,
    "hf_config": 12,
    "batch_render": 4,
    "first_word": 3,
}


def examples(name: str) -> settings:
    """The settings of the property ``name``: the profile's, with its share of the examples."""
    profile = settings.get_profile(PROFILE)
    return settings(profile, max_examples=WEIGHTS[name] * profile.max_examples)


# --- placeholders in drawn tokens, replaced per example -------------------------------------

S = "\ue000"  # the sandbox folder (absolute)
R = "\ue001"  # the repository (absolute)
P = "\ue002"  # a name unique to the example (gelib-prop-<hex>), for new paths inside the repository

FIXED = {"--n": "8", "--d": "16", "--h": "2", "--dk": "4"}  # the one layer compare and report run at (ci)
FIXED_EXTRA = {"--h-kv": "2", "--dv": "4", "--do": "16"}  # the same layer, spelled out

# --- the parser, for the options each command knows -------------------------------------------

_SUBPARSERS = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
COMMANDS = tuple(_SUBPARSERS)


def known_options(command: str) -> set[str]:
    return set(_SUBPARSERS[command]._option_string_actions)


# --- strategies: values ---------------------------------------------------------------------

_TEXT_ALPHABET = st.characters(exclude_categories=("Cs", "Co", "Cn"), exclude_characters="\x00")
random_text = st.text(_TEXT_ALPHABET, max_size=10)

HUGE_DIGITS = "9" * 5000
INT_EDGES = [
    "0", "-1", "1", "2", "3", "+1", "-0", "007", " 4", "1_6", "\u0664",  # int() takes these
    str(2**31 - 1), str(2**31), str(2**32), str(2**53 + 1), str(2**63 - 1), str(2**63), str(2**64),
    str(-(2**63)), str(-(2**63) - 1), "9" * 4300, "9" * 4301, HUGE_DIGITS, "1" + "0" * 400,
    "1.5", "8.0", "1e3", "0x10", "", "x", "nan", "inf", "-", "--", "-x",
]  # fmt: skip
FLOAT_EDGES = [
    "1", "0.5", "2", "0", "-0", "-1", "nan", "-nan", "inf", "-inf", "Infinity", "1e308", "1e309", "-1e308",
    "1e-320", "5e-324", "2.3e-12", "2.2e-12", "1.5e-152", "1e-11", "1e", "", ".", "1,5", "0x1p-3", "1_0",
    "\u0661", "nanx", HUGE_DIGITS, "1" + "0" * 400, "-" + HUGE_DIGITS, "x",
]  # fmt: skip
SIZE_EDGES = [
    "1", "1kB", "50kB", "1MB", "64MiB", "1GB", "1.5GiB", "4G", "2tb", "1e9", " 1MB ", "0", "0.5", "-1", "1e400",
    "9" * 400, "nan", "inf", "", "lots", "1e", "5 GB", "1KiB", "1iB", "1e-320", HUGE_DIGITS,
]  # fmt: skip


#: Whether the command line being drawn is a clean one (:func:`clean_line`): then :func:`mostly` is
#: always valid, and no junk, no invalid dimension, no refusing group is added.
_CLEAN = [False]


@contextlib.contextmanager
def clean_line(draw):
    """Half the command lines drawn are clean, so that many runs get past the checks; the other half
    mix invalid values in. (A flag read at draw time: Hypothesis draws in order, in one thread.)"""
    _CLEAN[0] = draw(st.booleans())
    try:
        yield _CLEAN[0]
    finally:
        _CLEAN[0] = False


def mostly(valid: st.SearchStrategy, other: st.SearchStrategy) -> st.SearchStrategy:
    """``valid`` seven times in eight, else ``other``; always ``valid`` in a clean line."""
    return st.sampled_from(range(8)).flatmap(lambda k: other if k == 0 and not _CLEAN[0] else valid)


def one_in(draw, k: int) -> bool:
    """True about once in ``k`` draws (``st.integers(0, k - 1) == 0`` is far more often true: Hypothesis
    favours the bounds of a range)."""
    return draw(st.sampled_from(range(k))) == 0


def dirty(draw, k: int) -> bool:
    """True about once in ``k`` draws of a line that is not clean; never in a clean one."""
    return not _CLEAN[0] and one_in(draw, k)


def small_float_text() -> st.SearchStrategy[str]:
    return st.floats(min_value=1e-3, max_value=5).map(lambda x: f"{x:.6g}")


def any_int_text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(INT_EDGES), st.integers().map(str), random_text)


def any_float_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(FLOAT_EDGES),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.floats(min_value=1e-3, max_value=30).map(lambda x: f"{x:.6g}"),
        random_text,
    )


def invalid_int_text(extra: tuple[str, ...] = ()) -> st.SearchStrategy[str]:
    """Values of a dimension of compare and report that refuse in any layer drawn (ci):
    not integers, not positive, or so large that the memory check or n <= d refuses."""
    return st.sampled_from(
        ["0", "-1", str(-(2**63)), "1.5", "8.0", "1e3", "0x10", "", "x", "nan", "9" * 4301, HUGE_DIGITS, *extra]
    )


#: --seeds (compare, report) that refuse before anything runs: not a count, <= 0, or a count no memory holds.
INVALID_SEEDS = ["0", "-1", str(-(2**63)), str(2**63), str(2**64), "1" + "0" * 30, "1.5", "", "x", "1e3", HUGE_DIGITS]


def seeds_text() -> st.SearchStrategy[str]:
    return mostly(st.sampled_from(["1", "2", "3", " 2", "+3"]), st.sampled_from(INVALID_SEEDS))


def memory_text() -> st.SearchStrategy[str]:
    """--max-memory: valid sizes at most 2 TB (so that --seeds 2**63 stays refused), and invalid ones."""
    valid = st.sampled_from(["64MiB", "1GB", "1.5GiB", "4G", "2tb", "1e9", " 1MB ", "50MB"])
    return mostly(valid, st.one_of(st.sampled_from(SIZE_EDGES), random_text))


# --- strategies: paths ----------------------------------------------------------------------

_PATHS_COMMON = [
    "new", "new/a/b", "-", "", ".", "./", "..", "user.txt/sub", "missing/x", "notes", "readonly", "readonly/new",
    "link_out", "link_out/sub", "link_dangling", "link_loop", "../outside/dir/new", "sp ace", "new\nline",
    "caf\u00e9", "bad-\udcff-byte", "a" * 300, "d/" * 2100, f"{S}/cwd/abs", f"{S}/outside/dir",
    f"{R}/book/{P}", f"{R}/book/{P}/r", f"{R}/.git/{P}", f"{R}/.git/{P}/r", f"/proc/1/{P}", f"{S}/nonexistent/x",
]  # fmt: skip
#: --out of report: also an existing file, an earlier report, the repository's _toc.yml (a file: refused).
OUT_PATHS = [*_PATHS_COMMON, "user.txt", "prior", "existing.csv", "/proc/version", f"{R}/_toc.yml"]
#: --csv of figure: never an existing file of the repository, nor a device (--force would replace it).
CSV_PATHS = [
    *_PATHS_COMMON, "out.csv", "user.txt", "existing.csv", "prior/report.json", "link_file", "notes/new.csv",
    f"{R}/book", f"{R}/book/{P}.csv", f"{R}/.git/{P}.csv", "/proc/version", "/proc/1/x.csv",
]  # fmt: skip
#: --hf-config: the drawn config under several names, and every other kind of path.
CONFIG_PATHS = [
    "config.json", "config.json", "sub/config.json", "odd\nname.json", "link_cfg", f"{S}/outside/config.json",
    "", "-", ".", "notes", "missing.json", "link_dangling", "link_loop", "user.txt", "user.txt/sub", "a" * 300,
    "/dev/null", "/proc/version", f"{R}/_toc.yml", f"{R}/book", f"{R}/.git/config", "bad-\udcff-byte",
]  # fmt: skip


def path_text(choices: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(choices), random_text)


# --- strategies: config.json ----------------------------------------------------------------


def _names(*groups: str) -> list[str]:
    import gelib.hfconfig as hf

    out: list[str] = []
    for g in groups:
        out += list(getattr(hf, g, ()))
    return out


FIELDS = sorted(
    {
        *_names("WIDTH", "HEADS", "KV_HEADS", "HEAD_DIM", "CONTEXT", "MLA_FIELDS", "BLOCKS"),
        *"multi_query new_decoder_architecture use_sliding_window sliding_window sliding_window_size".split(),
        *"attn_logit_softcapping query_pre_attn_scalar attention_multiplier scale_attn_weights".split(),
        *"scale_attn_by_inverse_layer_idx alibi relative_attention_num_buckets position_embedding_type".split(),
        *"qk_layernorm use_qk_norm clip_qkv layer_types model_type text_config vision_config".split(),
        *"encoder decoder is_encoder_decoder encoder_attention_heads decoder_attention_heads".split(),
        *"max_source_positions max_target_positions image_size patch_size num_register_tokens".split(),
        *"attn_type softmax_scale qk_ln prefix_lm attention_dropout architectures num_hidden_layers".split(),
        *"use_relative_position_bias torch_dtype rope_scaling".split(),
    }
)
MODEL_TYPES = [
    "llama", "gemma3", "gemma3_text", "t5", "bloom", "qwen3", "mpt", "dbrx", "vit", "deit", "dinov2",
    "dinov2_with_registers", "whisper", "bart", "llava", "falcon", "gpt2", "",
]  # fmt: skip

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2, 4, 8, 16, 2**31 - 1, 2**31, 2**63, 2**64, 10**30, 10**99, 10**100]),
    st.integers(min_value=-10, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([8.0, 16.0, 0.5, 1e308, 5e-324, -0.0]),
    st.text(_TEXT_ALPHABET, max_size=6),
    st.sampled_from(MODEL_TYPES + ["relative_key", "full_attention", "sliding_attention", "multiquery_attention"]),
    st.sampled_from(["a\nb", "8", "16", "true"]),
)
json_keys = st.one_of(st.sampled_from(FIELDS), st.text(_TEXT_ALPHABET, max_size=8), st.just("attn\nx"))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(json_keys, children, max_size=3)),
    max_leaves=6,
)


@st.composite
def config_objects(draw) -> dict:
    """A config.json object: one of a few starting points at the layer FIXED (n=8 d=16 h=2 d_k=4),
    then fields set to any JSON value, deleted, or added, at the top level or one level down."""
    width = draw(st.sampled_from(["hidden_size", "n_embd", "d_model", "n_embed"]))
    heads = draw(st.sampled_from(["num_attention_heads", "n_head", "num_heads", "n_heads"]))
    context = draw(st.sampled_from(["max_position_embeddings", "n_positions", "n_ctx", "seq_length"]))
    layer = {width: 16, heads: 2, "head_dim": 4, context: 8}
    start = draw(
        st.sampled_from(
            ["plain", "plain", "empty", "text_config", "llama_text", "mpt", "whisper", "vit", "encoder_objects"]
        )
    )
    if start == "plain":
        obj: dict = dict(layer)
    elif start == "empty":
        obj = {}
    elif start == "text_config":
        obj = {"model_type": "llava", "text_config": dict(layer), "vision_config": {"hidden_size": 8}}
    elif start == "llama_text":
        obj = {"model_type": "llava", "text_config": {"model_type": "llama"}}
    elif start == "mpt":
        obj = {"model_type": "mpt", "d_model": 16, "n_heads": 2, "max_seq_len": 8,
               "attn_config": {"attn_type": "multihead_attention", "alibi": False, "kv_n_heads": 2}}  # fmt: skip
    elif start == "whisper":
        obj = {"model_type": "whisper", "d_model": 16, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
               "max_source_positions": 8, "max_target_positions": 8, "is_encoder_decoder": True}  # fmt: skip
    elif start == "vit":
        obj = {"model_type": "vit", "hidden_size": 16, "num_attention_heads": 2, "image_size": 4, "patch_size": 2}
    else:
        obj = {"is_encoder_decoder": True, "encoder": dict(layer), "decoder": dict(layer)}
    for _ in range(draw(st.integers(0, 4))):
        target = obj
        nested = [k for k, v in obj.items() if isinstance(v, dict)]
        if nested and draw(st.booleans()):
            target = obj[draw(st.sampled_from(nested))]
        key = draw(json_keys)
        if target and dirty(draw, 3):
            target.pop(draw(st.sampled_from(sorted(target))), None)
        else:
            target[key] = draw(json_values)
    return obj


RAW_CONFIGS = [
    b"", b"null", b"[]", b'"config"', b"1e5000", b"{", b"NaN", b"{}", b"{}{}", b"\xef\xbb\xbf{}",
    b'{"hidden_size": 16, "hidden_size": 17}', b'{"hidden_size": 16, "hidden_size": 16}',
    b'{"hidden_size": ' + HUGE_DIGITS.encode() + b"}", b'{"x": ' + b"1" * 101 + b"}", b'{"hidden_size": 1e400}',
    b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b'{"hidden_size": 64, "model_type": "caf\xe9"}', b"\xff\xfe{\x00}\x00", b'{"\\ud800": 1}',
]  # fmt: skip


@st.composite
def config_bytes(draw) -> bytes:
    """A config.json file: a drawn object written as JSON (NaN and Infinity as Python writes them),
    sometimes mangled (truncated, a key repeated, a huge literal, garbage appended), or a raw sample."""
    if dirty(draw, 4):
        return draw(st.sampled_from(RAW_CONFIGS))
    text = json.dumps(draw(config_objects()), allow_nan=True)
    edits = ["none", "truncate", "repeat", "huge", "suffix", "bom"]
    edit = draw(st.sampled_from(edits)) if dirty(draw, 2) else "none"
    if edit == "truncate":
        text = text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    elif edit == "repeat" and text.startswith("{") and len(text) > 2:
        text = '{"hidden_size": 17, ' + text[1:] if text != "{}" else '{"hidden_size": 17, "hidden_size": 18}'
    elif edit == "huge" and text.startswith("{"):
        key = draw(st.sampled_from(["hidden_size", "head_dim", "max_position_embeddings", "attn_x", "vocab_size"]))
        digits = draw(st.sampled_from(["9" * 99, "9" * 100, "9" * 101, "9" * 4301, HUGE_DIGITS]))
        text = (
            "{"
            + json.dumps(key)
            + ": "
            + digits
            + ("" if text == "{}" else ", " + text[1:])
            + ("}" if text == "{}" else "")
        )
    elif edit == "suffix":
        text += draw(st.sampled_from(["x", "}", " ", "\n", "\x00", ",", "[]"]))
    data = text.encode("utf-8", "surrogatepass")
    return b"\xef\xbb\xbf" + data if edit == "bom" else data


DEFAULT_CONFIG = json.dumps({"hidden_size": 16, "num_attention_heads": 2, "head_dim": 4, "max_position_embeddings": 8})


# --- strategies: command lines ----------------------------------------------------------------


def opt(flag: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """``[flag, value]``, or ``[flag=value]``."""
    return st.tuples(values, st.integers(0, 5)).map(lambda t: [f"{flag}={t[0]}"] if t[1] == 0 else [flag, t[0]])


def junk(command: str) -> st.SearchStrategy[list[str]]:
    """An unknown flag (with or without a value), a stray word, ``--`` or ``-``: never ``-h``, ``--help``,
    ``--debug``, nor a prefix of a flag the command knows (argparse takes abbreviations)."""
    known = known_options(command) | {"--help", "--debug"}

    def unknown(flag: str) -> bool:
        return len(flag) > 2 and not any(k.startswith(flag) for k in known) and flag != "--debug"

    flags = st.one_of(
        st.sampled_from(["--no-such-flag", "--densty", "--outt", "--jsonn", "--x", "--N", "--Json", "--seedz"]),
        st.text(st.characters(categories=("Ll", "Nd"), include_characters="-_"), min_size=1, max_size=8).map(
            lambda t: "--" + t
        ),
    ).filter(unknown)
    words = st.sampled_from(["foo", "report", "compare", "-1", "-", "x y", "caf\u00e9", "--", "-x", "-e"])
    return st.one_of(
        flags.map(lambda f: [f]),
        st.tuples(flags, any_int_text()).map(list),
        words.map(lambda w: [w]),
        random_text.filter(lambda t: not t.startswith("-")).map(lambda t: [t]),
    )


@st.composite
def command_line(draw, command: str, groups: list[st.SearchStrategy[list[str]]], fixed=(), tail=()) -> list[str]:
    """``command`` and, in a drawn order, the ``fixed`` groups, a drawn subset of ``groups``, some
    junk and some repeated groups; then the ``tail`` groups, last (their values win)."""
    chosen = [list(g) for g in fixed]
    for g in groups:
        if one_in(draw, 3):
            chosen.append(draw(g))
    for _ in range(draw(st.integers(1, 2)) if dirty(draw, 3) else 0):
        chosen.append(draw(junk(command)))
    if chosen and one_in(draw, 5):  # a flag given twice, with another value
        chosen.append(draw(draw(st.sampled_from(groups))) if groups else list(chosen[0]))
    order = draw(st.permutations(range(len(chosen)))) if chosen else []
    argv = [command]
    for i in order:
        argv += chosen[i]
    for g in tail:
        argv += g
    return argv


@st.composite
def layer_groups(draw, command: str, dims: str):
    """(fixed, optional, tail) groups of the layer flags.

    ``dims="fixed"`` (compare, report in ci): the layer FIXED, in several spellings, with at most
    two of its values replaced by values that refuse; a flag left out only where nothing fills it.
    ``dims="any"`` (law; compare and report in the long search): any values, mostly small ones."""
    fixed: list[list[str]] = []
    optional: list[st.SearchStrategy[list[str]]] = []
    tail: list[list[str]] = []
    source = draw(st.sampled_from(["explicit", "explicit", "explicit", "preset", "hf"]))
    if source == "preset":
        from gelib.presets import PRESETS

        bad = st.one_of(st.sampled_from(["gpt-5", "", "BERT-BASE"]), random_text)
        fixed.append(["--preset", draw(mostly(st.sampled_from(list(PRESETS)), bad))])
    elif source == "hf":
        good = st.sampled_from(["config.json", "sub/config.json", "link_cfg", f"{S}/outside/config.json"])
        fixed.append(["--hf-config", draw(mostly(good, path_text(CONFIG_PATHS)))])
        if one_in(draw, 4):
            fixed.append(["--stack", draw(st.sampled_from(["encoder", "decoder", "both", ""]))])
    if dims == "any":
        small = {"--n": (1, 64), "--d": (1, 512), "--h": (1, 16), "--h-kv": (1, 2), "--dk": (1, 64)}
        for flag in (*FIXED, *FIXED_EXTRA):
            if (source == "explicit" and flag in FIXED) or one_in(draw, 4):
                lo, hi = small.get(flag, (1, 64))
                fixed.append(draw(opt(flag, mostly(st.integers(lo, hi).map(str), any_int_text()))))
        optional.append(st.just(["--tie-kv"]))
        return fixed, optional, tail
    spelled = {**FIXED, **{k: v for k, v in FIXED_EXTRA.items() if draw(st.booleans())}}
    invalid = {
        "--n": invalid_int_text(("17", "1000", str(2**63))),
        "--d": invalid_int_text(("7", str(2**63), str(2**64))),
        "--h": invalid_int_text((str(2**63),)),
        "--h-kv": invalid_int_text(("3", "4")),
        "--dk": invalid_int_text((str(2**63),)),
        "--dv": invalid_int_text((str(2**63),)),
        "--do": invalid_int_text((str(2**63),)),
    }
    mutate = dirty(draw, 2)
    mutated = draw(st.lists(st.sampled_from(sorted(invalid)), min_size=1, max_size=2, unique=True)) if mutate else []
    for flag in sorted(set(spelled) | set(mutated)):
        if flag in mutated:
            fixed.append(draw(opt(flag, invalid[flag])))
        elif source == "explicit" and flag in FIXED and dirty(draw, 20):
            continue  # left out: "give --preset NAME, --hf-config PATH or all of ..."
        else:
            alt = {"8": ["8", "+8", "08", " 8"], "16": ["16", "1_6", "016"], "2": ["2", "+2"], "4": ["4", "04"]}
            fixed.append(draw(opt(flag, st.sampled_from(alt.get(spelled[flag], [spelled[flag]])))))
    if dirty(draw, 4):  # K=V tying: refused here, d_V = 5 != d_K
        optional.append(st.just(["--tie-kv", "--dv", "5"]))
    if source == "hf" and dirty(draw, 2):
        tail.append(["--max-memory", "1"])  # whatever the file gives, refused before anything runs
    return fixed, optional, tail


def seed_group() -> st.SearchStrategy[list[str]]:
    return opt("--seed", mostly(st.integers(0, 2**63 - 1).map(str), any_int_text()))


def beta_group() -> st.SearchStrategy[list[str]]:
    return opt("--beta", mostly(small_float_text(), any_float_text()))


def dtype_group(valid: list[str]) -> st.SearchStrategy[list[str]]:
    return opt("--dtype", mostly(st.sampled_from(valid), st.sampled_from(["float16", "FLOAT64", "", "float"])))


MODEL_PAIRS = ["mha,yg", " mha , yg ", "mha,yg,"]
INVALID_MODELS = ["mha", "mha,mha", "foo,yg", "", ",", "mha,yg,yf", "MHA,yg", "yg;mha", "mha,,yg"]


@st.composite
def compare_lines(draw) -> list[str]:
    with clean_line(draw):
        return _compare_lines(draw)


def _compare_lines(draw) -> list[str]:
    from gelib.models import MODELS

    fixed, optional, tail = draw(layer_groups("compare", "any" if LONG else "fixed"))
    pairs = [f"{a},{b}" for a in MODELS for b in MODELS] if LONG else MODEL_PAIRS
    groups = [
        *optional,
        opt("--seeds", seeds_text()),
        seed_group(),
        beta_group(),
        opt("--models", mostly(st.sampled_from(pairs), st.one_of(st.sampled_from(INVALID_MODELS), random_text))),
        opt(
            "--path", mostly(st.sampled_from(["fast", "literal"] if LONG else ["fast"]), st.sampled_from(["slow", ""]))
        ),
        dtype_group(["float64", "float32"] if LONG else ["float64"]),
        opt("--max-memory", memory_text()),
        st.just(["--json"]),
        st.just(["--json"]),
    ]
    quiet = [["--quiet"]] if not one_in(draw, 5) else []
    return draw(command_line("compare", groups, fixed=[*fixed, *quiet], tail=tail))


@st.composite
def report_lines(draw) -> list[str]:
    with clean_line(draw):
        return _report_lines(draw)


def _report_lines(draw) -> list[str]:
    fixed, optional, tail = draw(layer_groups("report", "any" if LONG else "fixed"))
    groups = [
        *optional,
        opt("--seeds", seeds_text()),
        seed_group(),
        beta_group(),
        dtype_group(["float64", "float32"] if LONG else ["float64"]),
        opt("--max-memory", memory_text()),
        st.just(["--force"]),
    ]
    good = st.sampled_from(["new", "new/a/b", "notes", "link_out", ".", "prior", f"{R}/book/{P}/r", f"{S}/abs"])
    out = [draw(opt("--out", mostly(good, path_text(OUT_PATHS))))] if not one_in(draw, 6) else []
    quiet = [["--quiet"]] if not one_in(draw, 5) else []
    seeds = [["--seeds", draw(st.one_of(st.sampled_from(["1", "2", "3"]), seeds_text()))]]
    return draw(command_line("report", groups, fixed=[*fixed, *out, *quiet, *seeds], tail=tail))


LEVELS = ["output", "mu_v", "mu_vo", "attention"]


@st.composite
def law_lines(draw) -> list[str]:
    with clean_line(draw):
        return _law_lines(draw)


def _law_lines(draw) -> list[str]:
    density_ok = LONG or one_in(draw, 10)  # ci: a few densities, at the layer FIXED only
    if density_ok and not LONG:
        fixed = [[k, v] for k, v in FIXED.items()]
        optional: list = []
        densities = st.integers(1, 8).map(str)
    else:
        fixed, optional, _ = draw(layer_groups("law", "any"))
        densities = st.integers(1, 200).map(str) if LONG else st.nothing()
    bad_counts = st.sampled_from(["0", "-1", "201", "100001", str(2**63), "1e3", "x", "", HUGE_DIGITS])
    groups = [
        *optional,
        beta_group(),
        dtype_group(["float64", "float32"]),
        opt("--level", mostly(st.sampled_from(LEVELS), st.sampled_from(["Output", "mu", ""]))),
        opt("--moments", mostly(st.integers(1, 200 if LONG else 12).map(str), bad_counts)),
        opt("--density", mostly(densities, bad_counts)),
        st.just(["--json"]),
        st.just(["--json"]),
    ]
    if not density_ok:  # ci: the density is drawn only from values that refuse, now and then
        groups.pop(-3)
        if one_in(draw, 8):
            fixed = [*fixed, draw(opt("--density", bad_counts))]
    return draw(command_line("law", groups, fixed=fixed))


CHEAP_PANELS = ["D1a", "D1b", "D1c", "3a"]
GOOD_CSV = ["out.csv", "new.csv", "link_out/p.csv", f"{R}/book/{P}.csv"]


@st.composite
def figure_lines(draw) -> list[str]:
    with clean_line(draw):
        return _figure_lines(draw)


def _figure_lines(draw) -> list[str]:
    from gelib.figure_data import PANELS

    panels = list(PANELS) if LONG else CHEAP_PANELS
    panel = draw(mostly(st.sampled_from(panels), st.sampled_from(["2e", "d1c", "", "D1", "-1"])))
    groups = [
        st.just(["--json"]),
        opt("--csv", mostly(st.sampled_from(GOOD_CSV), path_text(CSV_PATHS))),
        opt("--csv", path_text(CSV_PATHS)),
        st.just(["--force"]),
    ]
    marker_flags = [  # they set the simulated markers (refused without --markers)
        opt("--scale", mostly(st.sampled_from(["ci", "default", "paper"]), st.sampled_from(["huge", "", "CI"]))),
        opt("--seeds", any_int_text()),
        opt("--seed", any_int_text()),
    ]
    tail: list[list[str]] = []
    markers = draw(st.sampled_from(["none"] * 4 + ["seeds", "2b"])) if dirty(draw, 2) else "none"
    if markers != "none" or dirty(draw, 4):
        groups += marker_flags
    if markers == "seeds":  # --markers only where it is refused before anything is simulated: --seeds < 2
        tail = [["--markers", "--seeds", draw(st.sampled_from(["1", "0", "-1", str(-(2**63))]))]]
    elif markers == "2b":  # or panel 2b, which has no markers (refused whatever --seeds says)
        panel, tail = "2b", [["--markers"]]
    return draw(command_line("figure", groups, fixed=[] if dirty(draw, 10) else [[panel]], tail=tail))


@st.composite
def presets_lines(draw) -> list[str]:
    return draw(command_line("presets", [st.just(["--json"]), st.just(["--json"])]))


@st.composite
def batch_render_lines(draw) -> list[str]:
    """batch and render lines that refuse before they start: the working directory (the sandbox's)
    has no _toc.yml, and --root is never the repository for batch."""
    roots = st.sampled_from([".", "new", "notes", f"{S}/outside/dir", "user.txt", "", f"{S}/nonexistent"])
    if draw(st.booleans()):
        groups = [
            opt("--scale", st.sampled_from(["ci", "default", "paper", "huge", ""])),
            st.lists(st.sampled_from(["*", "centering*", "[", "", "../*"]), min_size=0, max_size=2).map(
                lambda p: ["--chapters", *p]
            ),
            st.tuples(random_text, st.one_of(any_int_text(), any_float_text())).map(lambda t: ["-p", *t]),
            st.just(["-p", "scale", "9" * 5000]),
            opt("--out", path_text(OUT_PATHS)),
            st.sampled_from([["--resume"], ["--force"], ["--no-render"], ["--estimate"]]),
            opt("--timeout", any_int_text()),
            opt("--jobs", any_int_text()),
            opt("-j", any_int_text()),
        ]
        return draw(command_line("batch", groups, tail=[["--root", draw(roots)]] if not one_in(draw, 4) else []))
    groups = [
        st.just(["--lenient"]),
        opt("--output", path_text(OUT_PATHS)),
        opt("--root", st.one_of(roots, st.just(R))),
    ]
    run_dir = (
        [[draw(path_text([*OUT_PATHS, R, f"{R}/book", f"{R}/.git", f"{R}/_build"]))]] if not one_in(draw, 6) else []
    )
    return draw(command_line("render", groups, fixed=run_dir))


# --- the sandbox ----------------------------------------------------------------------------

_REPO_DYNAMIC = {"_build", ".pytest_cache", ".hypothesis", ".ruff_cache", ".mypy_cache", "__pycache__", ".coverage"}


def _entry(path: str) -> tuple | None:
    try:
        s = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(s.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(s.st_mode):
        return ("dir", stat.S_IMODE(s.st_mode))
    if stat.S_ISREG(s.st_mode):
        with open(path, "rb") as f:
            return ("file", stat.S_IMODE(s.st_mode), hashlib.sha256(f.read()).hexdigest())
    return ("other", s.st_mode)


def _walk(path: str, out: dict) -> None:
    e = _entry(path)
    if e is None:
        return
    out[path] = e
    if e[0] == "dir":
        for name in sorted(os.listdir(path)):
            _walk(os.path.join(path, name), out)


class Sandbox:
    """A temporary folder for one run, and what a run must leave alone.

    ``<sandbox>/cwd`` (the working directory): ``user.txt``; ``notes/keep.txt``; ``prior/`` with an
    earlier report (``report.json``, ``report.png``) and ``keep.txt``; ``existing.csv``; ``readonly/``
    (mode 555) with ``keep.txt``; ``config.json``, ``sub/config.json``, ``odd\\nname.json`` (the drawn
    config); links ``link_out -> ../outside/dir``, ``link_file -> ../outside/file.csv``,
    ``link_cfg -> ../outside/config.json``, ``link_dangling -> ../outside/nope``, ``link_loop ->
    link_loop``.  ``<sandbox>/outside``: ``dir/keep.txt``, ``file.csv``, ``config.json``."""

    def __init__(self, config: bytes | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="gelib-props-"))
        self.probe = "gelib-prop-" + uuid.uuid4().hex[:12]
        self.config = DEFAULT_CONFIG.encode() if config is None else config
        cwd, outside = self.root / "cwd", self.root / "outside"
        for folder in (cwd / "notes", cwd / "prior", cwd / "readonly", cwd / "sub", outside / "dir"):
            folder.mkdir(parents=True)
        files = {
            cwd / "user.txt": b"a user's file\n",
            cwd / "notes" / "keep.txt": b"keep\n",
            cwd / "prior" / "report.json": b'{"earlier": true}\n',
            cwd / "prior" / "report.png": b"\x89PNG earlier\n",
            cwd / "prior" / "keep.txt": b"keep\n",
            cwd / "existing.csv": b"a,b\n1,2\n",
            cwd / "readonly" / "keep.txt": b"keep\n",
            outside / "dir" / "keep.txt": b"keep\n",
            outside / "file.csv": b"x,y\n",
        }
        for name in ("config.json", "sub/config.json", "odd\nname.json"):
            files[cwd / name] = self.config
        files[outside / "config.json"] = self.config
        for path, data in files.items():
            path.write_bytes(data)
        for name, target in {
            "link_out": "../outside/dir",
            "link_file": "../outside/file.csv",
            "link_cfg": "../outside/config.json",
            "link_dangling": "../outside/nope",
            "link_loop": "link_loop",
        }.items():
            os.symlink(target, cwd / name)
        (cwd / "readonly").chmod(0o555)
        self.cwd = cwd

    def subst(self, token: str) -> str:
        return token.replace(S, str(self.root)).replace(R, str(REPO)).replace(P, self.probe)

    def snapshot(self) -> dict:
        out: dict = {}
        _walk(str(self.root), out)
        for name in sorted(os.listdir(REPO)):
            path = os.path.join(REPO, name)
            if name in ("book", "_toc.yml"):
                _walk(path, out)
            elif name == ".git":
                out[path] = ("dir",)
                for inner in sorted(os.listdir(path)):
                    if inner.startswith(self.probe):
                        _walk(os.path.join(path, inner), out)
                    elif not inner.endswith(".lock"):
                        out[os.path.join(path, inner)] = ("entry",)
            elif name not in _REPO_DYNAMIC:
                out[path] = ("entry",)
        return out

    def cleanup(self) -> None:
        for dirpath, dirnames, _ in os.walk(self.root):
            for d in dirnames:
                if not os.path.islink(os.path.join(dirpath, d)):
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(dirpath, d), 0o755)
        shutil.rmtree(self.root, ignore_errors=True)
        for parent in (REPO / "book", REPO / ".git"):  # what a run made there, under this example's own name
            for name in os.listdir(parent):
                if name.startswith(self.probe):
                    p = parent / name
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    def describe(self, argv: list[str]) -> str:
        line = "cd <sandbox>/cwd && " + shlex.join([PROG.split()[0], "-m", "gelib", *argv])
        line = line.replace(str(self.root), "<sandbox>")
        cfg = self.config if len(self.config) <= 600 else self.config[:300] + b"..." + self.config[-100:]
        return f"{line}\n  config.json = {cfg!r}"


# --- running a command line -----------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    status: object
    out: str
    err: str
    raised: str | None = None  # an exception that left main(): the interpreter would print its traceback


def _python_default_warnings() -> None:
    """The warning filters of ``python -m gelib`` (Python's defaults), not pytest's: a warning a
    run emits is printed on its stderr, as a user would see it."""
    warnings.resetwarnings()
    warnings.simplefilter("default")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category)


def run_cli(argv: list[str], cwd: Path) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    raised = None
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            _python_default_warnings()
            try:
                status: object = main(list(argv))
            except SystemExit as e:
                status = 0 if e.code is None else e.code
            except Exception:  # noqa: BLE001  # what `python -m gelib` would end with: a traceback
                raised = traceback.format_exc()
                status = 1
    finally:
        os.chdir(here)
    return Outcome(status, out.getvalue(), err.getvalue(), raised)


def parsed(argv: list[str]):
    """The namespace argparse gives ``argv`` (what the command saw), or ``None`` where it refuses."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return build_parser().parse_args(list(argv))
        except SystemExit:
            return None


def strict_json(text: str):
    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # a long integer is still JSON
    try:
        return json.loads(text, parse_constant=refuse)
    finally:
        sys.set_int_max_str_digits(limit)


def _destination(command: str, args, cwd: Path) -> tuple[set[str], set[str]]:
    """(files that may change, folders that may be created) by a run of ``args`` that exits 0."""
    files: set[str] = set()
    folders: set[str] = set()
    if args is None:
        return files, folders

    def forms(p: Path) -> set[str]:
        p = p if p.is_absolute() else cwd / p
        return {os.path.abspath(p), os.path.realpath(p)}

    if command == "report":
        for d in forms(Path(args.out or f"report-{report_name(args)}")):
            files |= {os.path.join(d, "report.png"), os.path.join(d, "report.json")}
            folders |= {d, *map(str, Path(d).parents)}
    elif command == "figure" and args.csv is not None and os.fspath(args.csv) != "-":
        files |= forms(Path(args.csv))
    return files, folders


class ContractError(AssertionError):
    """The contract does not hold; raised from one line per kind of failure (:func:`_fail`), so that
    Hypothesis reports each kind as a distinct failure with its own shrunk example."""


def check(argv: list[str], box: Sandbox, res: Outcome, before: dict, after: dict) -> None:
    """The contract (module docstring); a failure names the command line and what was seen."""
    command = argv[0] if argv and argv[0] in COMMANDS else ""
    prefixes = [f"{PROG}{' ' + command if command else ''}: "]
    later = next((a for a in argv if a in COMMANDS), None)
    if not command and later:  # no command first: argparse's top-level error, or that of the command named later
        prefixes.append(f"{PROG} {later}: ")
    problems: list[tuple[str, str]] = []  # (kind, what)
    if res.raised:
        problems.append(("traceback", "an exception left main() (a traceback):\n" + res.raised[-3000:]))
    if "Traceback (most recent call last)" in res.err:
        problems.append(("traceback", "a traceback on stderr"))
    status = res.status
    args = parsed(argv) if status == 0 else None
    if not isinstance(status, int) or isinstance(status, bool):
        problems.append(("status", f"exit status {status!r} is not an integer"))
    elif status == 0 and not res.raised:
        try:
            res.out.encode("utf-8")
        except UnicodeEncodeError as e:
            problems.append(("utf8", f"stdout cannot be written as UTF-8 (a real stdout fails): {e}"))
        if getattr(args, "json", False):
            try:
                strict_json(res.out)
            except ValueError as e:
                problems.append(("json", f"--json: stdout is not one strict JSON document: {e}"))
        if command == "report" and args is not None:
            out = Path(args.out or f"report-{report_name(args)}")
            out = out if out.is_absolute() else box.cwd / out
            try:
                strict_json((out / "report.json").read_text())
                assert (out / "report.png").stat().st_size > 0
            except (OSError, ValueError, AssertionError) as e:
                problems.append(("report", f"report exited 0, but {out}/report.json is not strict JSON: {e!r}"))
    elif status not in (1, 2):
        problems.append(("status", f"exit status {status}: a refusal exits 2 (a bad command line) or 1"))
    if status != 0 and not res.raised:
        lines = res.err.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        else:
            problems.append(("error-line", "stderr does not end with a newline"))
        prefix = next((p for p in prefixes if lines and lines[-1].startswith(p + "error: ")), prefixes[0])
        errors = [i for i, line in enumerate(lines) if line.startswith(prefix + "error: ")]
        if len(errors) != 1 or errors[0] != len(lines) - 1 or lines[-1] == prefix + "error: ":
            problems.append(("error-line", f"not one error line `{prefix}error: <message>`, the last on stderr"))
        else:
            ns = parsed(argv)
            hf = getattr(ns, "hf_config", None) if ns is not None else None
            note_prefix = f"{prefix}{one_line(hf)}: " if hf else None
            stray = [line for line in lines[:-1] if note_prefix is None or not line.startswith(note_prefix)]
            if stray:
                problems.append(
                    ("stray", f"{len(stray)} line(s) on stderr that are neither the error nor a note: {stray[:3]!r}")
                )
    allowed_files, allowed_folders = _destination(command, args, box.cwd) if status == 0 else (set(), set())
    changed = []
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if b == a:
            continue
        if path in allowed_files or (path in allowed_folders and b is None and a is not None and a[0] == "dir"):
            continue
        changed.append(f"{path.replace(str(box.root), '<sandbox>')}: {b and b[:2]} -> {a and a[:2]}")
    if changed:
        problems.append(("files", "files outside the destination changed:\n    " + "\n    ".join(changed[:20])))
    if problems:
        shown_err = res.err if len(res.err) < 3000 else res.err[:1500] + "\n...\n" + res.err[-1500:]
        _fail(
            problems[0][0],
            "the command-line contract does not hold:\n  "
            + "\n  ".join(what for _, what in problems)
            + f"\ncommand line:\n  {box.describe(argv)}\nexit status: {status!r}"
            + f"\nstdout: {res.out[:800]!r}\nstderr: {shown_err!r}",
        )


def _fail(kind: str, message: str) -> None:
    # one raise per kind (Hypothesis tells failures apart by where they are raised)
    if kind == "traceback":
        raise ContractError(message)
    if kind == "status":
        raise ContractError(message)
    if kind == "utf8":
        raise ContractError(message)
    if kind == "json":
        raise ContractError(message)
    if kind == "report":
        raise ContractError(message)
    if kind == "error-line":
        raise ContractError(message)
    if kind == "stray":
        raise ContractError(message)
    if kind == "files":
        raise ContractError(message)
    raise ContractError(message)


def run_and_check(argv: list[str], config: bytes | None = None) -> Outcome:
    box = Sandbox(config)
    try:
        argv = [box.subst(a) for a in argv]
        if currently_in_test_context():  # (also called outside Hypothesis: test_known_reproducers)
            note(box.describe(argv))
        before = box.snapshot()
        res = run_cli(argv, box.cwd)
        after = box.snapshot()
        if currently_in_test_context():
            event(f"exit status {res.status}")
        check(argv, box, res, before, after)
        return res
    finally:
        box.cleanup()


# --- the properties -------------------------------------------------------------------------


@examples("law")
@given(law_lines())
def test_law_contract(argv):
    run_and_check(argv)


@examples("compare")
@given(compare_lines())
def test_compare_contract(argv):
    run_and_check(argv)


@examples("report")
@given(report_lines())
def test_report_contract(argv):
    run_and_check(argv)


@examples("figure")
@given(figure_lines())
def test_figure_contract(argv):
    run_and_check(argv)


@examples("presets")
@given(presets_lines())
def test_presets_contract(argv):
    run_and_check(argv)


@st.composite
def hf_cases(draw) -> tuple[list[str], bytes]:
    """A command that reads ``--hf-config`` with a drawn file (the command line, the file): law with
    any flags (cheap), compare and report with the layer FIXED given in full (ci) or a
    ``--max-memory 1`` that refuses last. In a clean line the file is a JSON object whose
    dimensions are FIXED's, with fields added (of any value), and the flags are valid."""
    with clean_line(draw):
        return _hf_config_lines(draw), draw(config_bytes())


def _hf_config_lines(draw) -> list[str]:
    command = draw(st.sampled_from(["law", "law", "compare", "report"]))
    path = draw(mostly(st.sampled_from(["config.json", "sub/config.json", "link_cfg"]), st.just("odd\nname.json")))
    fixed = [["--hf-config", path]]
    tail: list[list[str]] = []
    groups: list[st.SearchStrategy[list[str]]] = [
        beta_group(),
        opt("--stack", mostly(st.sampled_from(["encoder", "decoder"]), st.just("x"))),
        opt("--n", mostly(st.integers(1, 64).map(str), any_int_text())),
    ]
    if command == "law":
        groups += [
            opt("--moments", st.integers(1, 8).map(str)),
            st.just(["--json"]),
            *[opt(flag, mostly(st.integers(1, 64).map(str), any_int_text())) for flag in ("--d", "--h", "--dk")],
        ]
    else:
        groups = groups[:2] + [st.just(["--quiet"]), opt("--seeds", st.sampled_from(["1", "2"]))]
        if command == "compare":
            groups.append(st.just(["--json"]))
        else:
            fixed.append(["--out", draw(mostly(st.sampled_from(["new", "link_out"]), st.sampled_from(["prior", "-"])))])
        if dirty(draw, 2):
            tail.append(["--max-memory", "1"])
        elif not LONG:  # ci: the layer FIXED, whatever the file gives (the long search keeps the file's)
            fixed += [[k, v] for k, v in {**FIXED, "--dv": "4", "--h-kv": "2"}.items()]
    return draw(command_line(command, groups, fixed=fixed, tail=tail))


@examples("hf_config")
@given(hf_cases())
def test_hf_config_contract(case):
    argv, config = case
    note(f"config.json = {config[:2000]!r}")
    run_and_check(argv, config)


@examples("batch_render")
@given(batch_render_lines())
def test_batch_and_render_refusals_contract(argv):
    res = run_and_check(argv)
    assert res.status != 0, "batch and render cannot start here (no _toc.yml in the working directory)"


@examples("first_word")
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["", "comapre", "Law", "-x", "--json", "--no-such-flag", "presets", "--"]), random_text
        ),
        max_size=3,
    )
)
def test_any_first_word_contract(argv):
    assume(not argv or argv[0] not in COMMANDS)  # the commands' own lines are drawn above
    assume("--debug" not in argv)
    run_and_check(argv)


_LAYER = {"hidden_size": 16, "num_attention_heads": 2, "head_dim": 4, "max_position_embeddings": 8}


def _cfg(**extra) -> bytes:
    return json.dumps({**_LAYER, **extra}).encode()


#: The shrunk counterexamples the properties found, kept as fixed cases (the module docstring's
#: contract; each fails until its cause is fixed, and then guards against its return).
REPRODUCERS = {
    # a note of --hf-config spans lines when the path holds a newline (refused run: notes + error)
    "config path with a newline": (["law", "--hf-config", "odd\nname.json", "--beta", "0"], None),
    # ... or when the file's field name or value does
    "config key with a newline": (["law", "--hf-config", "config.json", "--beta", "0"], _cfg(**{"attn\nx": 1})),
    "config value with a newline": (["law", "--hf-config", "config.json", "--beta", "0"], _cfg(attn_x="a\nb")),
    "layer type with a newline": (["law", "--hf-config", "config.json", "--beta", "0"], _cfg(layer_types=["a\nb"])),
    # report prints the --out path on stdout: a name that is not UTF-8 cannot be written there
    "report --out not UTF-8": (["report", *sum(map(list, FIXED.items()), []), "--out", "bad-\udcff", "--quiet"], None),
}


@pytest.mark.parametrize("argv, config", list(REPRODUCERS.values()), ids=list(REPRODUCERS))
def test_known_reproducers(argv, config):
    run_and_check(argv, config)


def test_the_sandbox_sees_what_a_run_changes():
    """The checker itself: a change in the sandbox or in book/ is seen, the destination is not."""
    box = Sandbox()
    try:
        before = box.snapshot()
        (box.cwd / "user.txt").write_text("changed")
        (REPO / "book" / f"{box.probe}.txt").write_text("new")
        after = box.snapshot()
        with pytest.raises(AssertionError, match="user.txt"):
            check(["presets"], box, Outcome(0, "", ""), before, after)
        with pytest.raises(AssertionError, match=box.probe):
            check(["presets"], box, Outcome(0, "", ""), before, after)
        (box.cwd / "user.txt").write_bytes(b"a user's file\n")
        (REPO / "book" / f"{box.probe}.txt").unlink()
        before = box.snapshot()
        (box.cwd / "dest" / "new").mkdir(parents=True)
        (box.cwd / "dest" / "new" / "report.json").write_text("{}")
        (box.cwd / "dest" / "new" / "report.png").write_bytes(b"png")
        check(["report", "--out", "dest/new"], box, Outcome(0, "", ""), before, box.snapshot())  # the destination
        with pytest.raises(AssertionError, match="dest"):  # a refusal leaves even the destination alone
            check(
                ["report", "--out", "dest/new"],
                box,
                Outcome(2, "", "python -m gelib report: error: x\n"),
                before,
                box.snapshot(),
            )
        with pytest.raises(AssertionError, match="one error line"):
            check(["law"], box, Outcome(2, "", "oops\n"), box.snapshot(), box.snapshot())
        with pytest.raises(AssertionError, match="strict JSON"):
            check(["presets", "--json"], box, Outcome(0, '{"x": NaN}', ""), box.snapshot(), box.snapshot())
    finally:
        box.cleanup()
