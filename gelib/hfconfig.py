"""Attention dimensions from a model's ``config.json`` (the Hugging Face ``transformers`` format), read offline.

:func:`read_hf_config` reads the file and :func:`dims_from_hf_config` maps the
field names of the common model families to the dimensions of one attention
layer. Every field that bears on the attention of one layer is either read
into the paper's model, softmax(beta Q K^T / sqrt(d_K)) V W^O with i.i.d.
Gaussian inputs, or named: refused, or listed as not modelled.

**Read.**

* width ``d``: ``hidden_size``, ``n_embd``, ``d_model`` or ``n_embed``;
* query heads ``h``: ``num_attention_heads``, ``n_head`` or ``num_heads``;
* key/value groups ``h_KV``: ``num_key_value_heads``, ``num_kv_heads`` or
  ``n_head_kv``; one for ``multi_query: true`` (multi-query attention), else
  ``h``. With Falcon's ``new_decoder_architecture: true`` the key/value head
  count wins and ``multi_query`` is ignored, as in ``transformers``;
* head width ``d_K``: ``head_dim``, ``d_kv`` (T5) or ``kv_channels``, else
  ``d / h`` (which must be an integer); value width ``d_V``: ``v_head_dim``
  where present, else ``d_K``;
* context length: ``max_position_embeddings``, ``n_positions``, ``n_ctx``,
  ``max_sequence_length`` or ``seq_length``; ``n`` is the context length capped
  at ``d`` (the input needs ``X X^T / d = I_n``, so ``n <= d``, as in the
  paper's Table 2), or the ``n`` given (``--n``), which also makes a missing
  context field (T5 v1.1, Falcon-40B) no error.

A multimodal configuration whose top level lacks the width or head count is
read from its ``text_config``. ``transformers`` leaves out of a saved
``text_config`` the fields equal to the defaults of the text model's class;
for ``llama`` (LLaVA) and ``gemma3_text`` (Gemma 3) those defaults are filled
in, each named in the notes. ``beta = 1`` and ``d_O = d``, as in the paper's
table. Nothing is downloaded.

**Refused**, with a one-line :class:`~gelib.config.ConfigError`:

* a path that is not a regular file (a directory, a FIFO, a device), is
  larger than :data:`MAX_BYTES`, is not UTF-8 or not a JSON object, or repeats
  a key with different values;
* a missing or invalid field, and a field that should be a JSON boolean but
  is not (``multi_query``, ``use_sliding_window``, ``alibi``, ...);
* two fields that disagree: two names of the width, of the head count, of the
  key/value head count, of the head width or of the context length with
  different values, or ``multi_query: true`` with a key/value head count
  other than one;
* multi-head latent attention (DeepSeek-V2/V3: ``kv_lora_rank``,
  ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``): keys and
  values from a shared low-rank latent are not the paper's model.

**Not modelled**, named in :attr:`HFDims.unmodelled` and in notes
``not modelled: ...``: fields that change the attention of one layer, each
named with its value and what it does: a ``sliding_window`` shorter than ``n`` (unless ``use_sliding_window: false``),
``attn_logit_softcapping``, a score scale other than ``1/sqrt(d_K)``
(``query_pre_attn_scalar != d_K``, ``attention_multiplier``,
``scale_attn_weights: false``, ``scale_attn_by_inverse_layer_idx: true``, and
T5, whose scores carry no ``1/sqrt(d_K)``), additive score biases (ALiBi:
``alibi: true`` and BLOOM; T5's ``relative_attention_num_buckets``; a
relative ``position_embedding_type``), query/key normalisation
(``qk_layernorm``, ``use_qk_norm``, and Gemma 3, Qwen3, OLMo-2, OLMoE, which
have it without a field), ``clip_qkv``, ``layer_types`` other than full or
sliding attention, and any other field whose name speaks of attention, heads,
keys/values or windows that is not recognised here.

**Not named**: positional encodings that are not score biases (absolute position
embeddings, RoPE and ``rope_scaling``: the paper's inputs carry no positions,
and a rotation keeps each query and key Gaussian), dropout, projection biases
(``attention_bias``), numerics (``attention_softmax_in_fp32``),
``final_logit_softcapping`` (it caps the output logits, not the scores), and
the causal mask of decoders, which is the architecture's and no field (the
presets of decoders share it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, cast

from .config import ConfigError

__all__ = [
    "HFDims",
    "read_hf_config",
    "dims_from_hf_config",
    "WIDTH",
    "HEADS",
    "KV_HEADS",
    "HEAD_DIM",
    "CONTEXT",
    "MLA_FIELDS",
    "MAX_BYTES",
]

#: Field names of the model width, in the order they are looked for.
WIDTH = ("hidden_size", "n_embd", "d_model", "n_embed")
#: Field names of the number of query heads.
HEADS = ("num_attention_heads", "n_head", "num_heads")
#: Field names of the number of key/value heads.
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
#: Field names of the key/query width per head.
HEAD_DIM = ("head_dim", "d_kv", "kv_channels")
#: Field names of the context length.
CONTEXT = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length")
#: Fields of multi-head latent attention (DeepSeek-V2/V3), which is refused.
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
#: The largest ``config.json`` read, in bytes (real ones are a few kilobytes).
MAX_BYTES = 10 * 2**20

_SLIDING = ("sliding_window", "sliding_window_size")
# Defaults of transformers' text-model classes, for the fields a saved text_config leaves out.
_TEXT_DEFAULTS: dict[str, tuple[str, dict[str, int]]] = {
    "llama": ("LlamaConfig", {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 2048}),
    "gemma3_text": (
        "Gemma3TextConfig",
        {
            "hidden_size": 2304,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "max_position_embeddings": 131072,
            "query_pre_attn_scalar": 256,
            "sliding_window": 4096,
        },
    ),
}
_GROUP = {name: group for group in (WIDTH, HEADS, KV_HEADS, HEAD_DIM, CONTEXT, _SLIDING) for name in group}
# Families whose scores carry no 1/sqrt(d_K) (it is folded into the initialisation of W^Q).
_UNSCALED_TYPES = {"t5", "mt5", "umt5", "longt5", "switch_transformers"}
# Families that normalise queries and keys before the scores, with no config field saying so.
_QK_NORM_TYPES = {"gemma3", "gemma3_text", "qwen3", "qwen3_moe", "olmo2", "olmoe"}
_ATTENTION_LAYER_TYPES = {"full_attention", "sliding_attention"}
# Names that speak of attention; such a field that is neither read, judged nor harmless is named.
_ATTENTION_WORDS = re.compile(r"attn|attention|head|kv|quer|window|alibi|softcap|qk|lora|softmax")
# Attention fields that leave the computation of one random layer as it is.
_HARMLESS = {
    "attention_dropout",
    "attention_probs_dropout_prob",
    "attn_pdrop",
    "attn_dropout",
    "attention_bias",
    "qkv_bias",
    "attention_softmax_in_fp32",
    "scale_attention_softmax_in_fp32",
    "reorder_and_upcast_attn",
    "parallel_attn",
    "pre_allocate_kv_cache",
    "attn_implementation",
    "_attn_implementation",
    "use_flash_attn",
    "final_logit_softcapping",
    "max_window_layers",
    "sliding_window_pattern",
    "_sliding_window_pattern",
    "relative_attention_max_distance",
}
_JUDGED = {
    *_GROUP,
    "multi_query",
    "new_decoder_architecture",
    "use_sliding_window",
    "attn_logit_softcapping",
    "query_pre_attn_scalar",
    "attention_multiplier",
    "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx",
    "alibi",
    "relative_attention_num_buckets",
    "position_embedding_type",
    "qk_layernorm",
    "use_qk_norm",
    "clip_qkv",
    "layer_types",
    *MLA_FIELDS,
}


@dataclasses.dataclass(frozen=True)
class HFDims:
    """The dimensions read from a configuration.

    ``n, d, h, h_kv, d_k`` (and ``d_v`` where the configuration gives a value
    width of its own); ``notes``, one line per field read or assumed (for the
    user); ``unmodelled``, one line per field that changes the attention of
    the layer but is not in the paper's model (``"name=value: what it does"``;
    each is also a note ``"not modelled: ..."``); ``context``, the context
    length the configuration gives (``None`` where it gives none and ``--n``
    was used), of which ``n`` is the part up to ``d``.
    """

    n: int
    d: int
    h: int
    h_kv: int
    d_k: int
    notes: tuple[str, ...]
    unmodelled: tuple[str, ...] = ()
    d_v: int | None = None
    context: int | None = None

    def fields(self) -> dict[str, int]:
        """The :class:`~gelib.config.AttentionConfig` fields (``d_V = d_K`` unless read, ``d_O = d``)."""
        out = dict(n=self.n, d=self.d, h=self.h, h_kv=self.h_kv, d_k=self.d_k)
        if self.d_v is not None:
            out["d_v"] = self.d_v
        return out

    @property
    def unmodelled_fields(self) -> tuple[str, ...]:
        """The names of the fields in :attr:`unmodelled`, in its order."""
        return tuple(line.split("=", 1)[0].split(":", 1)[0] for line in self.unmodelled)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready record: the dimensions, the notes and the fields not modelled."""
        return {
            **self.fields(),
            "d_v": self.d_k if self.d_v is None else self.d_v,
            "notes": list(self.notes),
            "unmodelled": list(self.unmodelled),
        }


class _DuplicateKey(Exception):
    pass


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj and obj[key] != value:
            raise _DuplicateKey(f"the key {key!r} appears twice, as {_show(obj[key])} and {_show(value)}")
        obj[key] = value
    return obj


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a plain file"


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object of a ``config.json``.

    A path that is missing or not a regular file (checked before it is
    opened, so that a FIFO or a device cannot block), a file larger than
    :data:`MAX_BYTES`, text that is not UTF-8, invalid JSON, a key repeated
    with different values, or a value that is not an object is a one-line
    :class:`~gelib.config.ConfigError`.
    """
    path = Path(path)
    where = f"--hf-config {path}"
    try:
        st = os.stat(path)
    except OSError as e:
        raise ConfigError(f"{where}: cannot read it ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{where}: not a regular file ({_file_kind(st.st_mode)}); give the path of a config.json")
    if st.st_size > MAX_BYTES:
        raise ConfigError(f"{where}: {st.st_size} bytes, more than a config.json holds (at most {MAX_BYTES})")
    try:  # non-blocking, and checked again once open, in case the path changed since the stat
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ConfigError(f"{where}: not a regular file; give the path of a config.json")
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"{where}: cannot read it ({e.strerror or e})") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{where}: more than {MAX_BYTES} bytes, more than a config.json holds")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{where}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None
    try:
        obj = json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except _DuplicateKey as e:
        raise ConfigError(f"{where}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: not a config.json (JSON nested too deeply)") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{where}: a config.json holds one JSON object, found {type(obj).__name__}")
    return obj


def _show(value: Any) -> str:
    """A JSON value on one short line."""
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _positive_int(cfg: dict, name: str, where: str) -> int:
    value = cfg[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {name!r} must be a positive integer, got {value!r}")
    return value


def _positive_number(cfg: dict, name: str, where: str) -> float | None:
    value = cfg.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise ConfigError(f"{where}: field {name!r} must be a positive number or null, got {value!r}")
    return value


def _flag(cfg: dict, name: str, where: str) -> bool | None:
    """A JSON boolean field: True, False, or None where absent or null."""
    value = cfg.get(name)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{where}: field {name!r} must be true or false, got {value!r}")
    return value


def _synonym(
    cfg: dict, names: tuple[str, ...], where: str, what: str, required: bool = True, hint: str = ""
) -> tuple[str, int] | None:
    """The first of the synonyms ``names`` present (and not null), checked against the others."""
    found = [(name, _positive_int(cfg, name, where)) for name in names if cfg.get(name) is not None]
    for name, value in found[1:]:
        if value != found[0][1]:
            first, v0 = found[0]
            raise ConfigError(f"{where}: {first}={v0} and {name}={value} disagree (both give the {what})")
    if found:
        return found[0]
    if required:
        raise ConfigError(f"{where}: no {what} field (looked for {', '.join(names)}){hint}")
    return None


def _with_text_defaults(cfg: dict, notes: list[str]) -> dict:
    """``cfg`` (a ``text_config``) with the defaults of its class for the fields it leaves out."""
    model_type = cfg.get("model_type")
    if model_type not in _TEXT_DEFAULTS:
        return cfg
    cls, defaults = _TEXT_DEFAULTS[model_type]
    filled = {name: value for name, value in defaults.items() if not any(k in cfg for k in _GROUP.get(name, (name,)))}
    if filled:
        shown = ", ".join(f"{name}={value}" for name, value in filled.items())
        notes.append(f"text_config omits the defaults of transformers' {cls}: {shown}")
    return {**cfg, **filled}


def dims_from_hf_config(cfg: dict[str, Any], source: str = "config.json", n: int | None = None) -> HFDims:
    """The attention dimensions of a ``transformers`` configuration (see the module docstring).

    Parameters
    ----------
    cfg : dict
        The JSON object of the ``config.json``.
    source : str
        The file, for messages.
    n : int, optional
        The context length the layer will have (the command line's ``--n``):
        then the configuration need not give one, and a sliding window is
        judged against this ``n``.

    Raises
    ------
    ConfigError
        Naming the field that is missing, invalid, in conflict with another,
        or refused.
    """
    notes: list[str] = []
    unmodelled: list[str] = []
    has = lambda names: any(cfg.get(k) is not None for k in names)  # noqa: E731
    if isinstance(cfg.get("text_config"), dict) and not (has(WIDTH) and has(HEADS)):
        cfg = cfg["text_config"]
        source = f"{source} (text_config)"
        notes.append("the top level has no width or head count: read from text_config")
        cfg = _with_text_defaults(cfg, notes)
    model_type = cfg.get("model_type")

    mla = [name for name in MLA_FIELDS[:4] if cfg.get(name) is not None]
    if mla:
        shown = ", ".join(f"{name}={_show(cfg.get(name))}" for name in MLA_FIELDS if name in cfg)
        raise ConfigError(
            f"{source}: multi-head latent attention ({shown}) is not the paper's model: keys and values come "
            "from a shared low-rank latent and part of each query/key head is rotary; give the layer with "
            "--n, --d, --h and --dk instead"
        )

    # required (the default): _synonym raises rather than return None
    width_name, d = cast("tuple[str, int]", _synonym(cfg, WIDTH, source, "model width"))
    heads_name, h = cast("tuple[str, int]", _synonym(cfg, HEADS, source, "attention-head count"))
    read = [f"{width_name}={d}", f"{heads_name}={h}"]

    kv = _synonym(cfg, KV_HEADS, source, "key/value head count", required=False)
    multi_query = _flag(cfg, "multi_query", source)
    new_decoder = _flag(cfg, "new_decoder_architecture", source)
    if new_decoder and multi_query is not None:
        notes.append("new_decoder_architecture=true: multi_query is ignored (as transformers' Falcon does)")
        multi_query = None
    if kv is not None:
        if multi_query and kv[1] != 1:
            raise ConfigError(
                f"{source}: multi_query=true and {kv[0]}={kv[1]} disagree "
                "(multi-query attention has one key/value head)"
            )
        h_kv = kv[1]
        read.append(f"{kv[0]}={h_kv}")
    elif multi_query:
        h_kv = 1
        read.append("multi_query=true")
        notes.append("multi-query attention: h_KV = 1")
    else:
        h_kv = h
        notes.append("no key/value head count: h_KV = h (no sharing)")
    if h % h_kv:
        raise ConfigError(f"{source}: {h} attention heads are not divisible by {h_kv} key/value heads")

    head = _synonym(cfg, HEAD_DIM, source, "head width", required=False)
    d_v = _positive_int(cfg, "v_head_dim", source) if cfg.get("v_head_dim") is not None else None
    if head is not None:
        d_k = head[1]
        read.append(f"{head[0]}={d_k}")
    else:
        if d % h:
            raise ConfigError(
                f"{source}: no 'head_dim' field and {width_name}={d} is not divisible by {heads_name}={h}"
            )
        d_k = d // h
        also = "" if d_v is not None else " = d_V"
        notes.append(f"no head_dim: d_K{also} = {width_name} / {heads_name} = {d_k}")
    if d_v is not None:
        read.append(f"v_head_dim={d_v}")

    context = _synonym(
        cfg, CONTEXT, source, "context length", required=n is None, hint="; give the context length with --n"
    )
    if context is not None:
        read.append(f"{context[0]}={context[1]}")
        if model_type in _UNSCALED_TYPES:
            notes.append(f"{context[0]}={context[1]} is the training length (T5's positions are relative)")
    if n is None:
        assert context is not None  # required when n is None: _synonym raised if there was none
        n = min(context[1], d)
        if n < context[1]:
            notes.append(f"n = {n}: the context length {context[1]} capped at d = {d} (the input needs n <= d)")
    elif context is not None and n > context[1]:
        notes.append(f"n = {n} is longer than the context length {context[0]}={context[1]}")

    def name(field: str, what: str) -> None:
        value = cfg[field]
        unmodelled.append(f"{field}={value if isinstance(value, str) else _show(value)}: {what}")

    # --- a sliding window --------------------------------------------------------------------
    window = _synonym(cfg, _SLIDING, source, "sliding window", required=False)
    use_window = _flag(cfg, "use_sliding_window", source)
    if window is not None:
        if use_window is False:
            notes.append(f"{window[0]}={window[1]} is unused (use_sliding_window=false)")
        elif window[1] < n:
            name(
                window[0],
                f"shorter than n = {n}: each query attends only to the {window[1]} most recent keys "
                "(in the layers that use the window), not to all n",
            )
        else:
            notes.append(f"{window[0]}={window[1]} >= n = {n}: the window covers the whole context")
    # --- the scale of the scores ---------------------------------------------------------------
    paper = "; beta = 1 unless --beta is given"
    cap = _positive_number(cfg, "attn_logit_softcapping", source)
    if cap is not None:
        name("attn_logit_softcapping", f"every score s becomes {cap:g} tanh(s / {cap:g}) before the softmax")
    scalar = _positive_number(cfg, "query_pre_attn_scalar", source)
    if scalar is not None:
        if scalar != d_k:
            name(
                "query_pre_attn_scalar",
                f"the scores are scaled by 1/sqrt({scalar:g}), not 1/sqrt(d_K) = 1/sqrt({d_k}) "
                f"(beta = {math.sqrt(d_k / scalar):.4g} in the paper's form{paper})",
            )
        else:
            read.append(f"query_pre_attn_scalar={scalar:g}")
    multiplier = _positive_number(cfg, "attention_multiplier", source)
    if multiplier is not None:
        name(
            "attention_multiplier",
            f"the scores are scaled by {multiplier:g}, not 1/sqrt(d_K) = {1 / math.sqrt(d_k):.4g} "
            f"(beta = {multiplier * math.sqrt(d_k):.4g} in the paper's form{paper})",
        )
    if _flag(cfg, "scale_attn_weights", source) is False:
        name(
            "scale_attn_weights",
            f"the scores are Q K^T without 1/sqrt(d_K) (beta = sqrt({d_k}) = {math.sqrt(d_k):.4g} "
            f"in the paper's form{paper})",
        )
    if _flag(cfg, "scale_attn_by_inverse_layer_idx", source):
        name("scale_attn_by_inverse_layer_idx", "the scores of layer l are divided by l + 1")
    if model_type in _UNSCALED_TYPES:
        name(
            "model_type",
            f"the scores are Q K^T without 1/sqrt(d_K), which T5 folds into the initialisation of W^Q "
            f"(beta = sqrt({d_k}) = {math.sqrt(d_k):.4g} at the paper's weights, 1 at T5's; beta = 1 kept)",
        )
    # --- biases added to the scores ----------------------------------------------------------------
    if _flag(cfg, "alibi", source):
        name("alibi", "a fixed bias -m_head |i - j| (ALiBi) is added to every score")
    if model_type == "bloom":
        name("model_type", "BLOOM adds a fixed bias -m_head |i - j| (ALiBi) to every score")
    if cfg.get("relative_attention_num_buckets") is not None:
        buckets = _positive_int(cfg, "relative_attention_num_buckets", source)
        name(
            "relative_attention_num_buckets",
            f"a learned bias of the offset j - i ({buckets} buckets) is added to every score",
        )
    if cfg.get("position_embedding_type") in ("relative_key", "relative_key_query"):
        name("position_embedding_type", "a learned term of the offset j - i is added to every score")
    # --- queries and keys transformed before the scores ------------------------------------------
    for field in ("qk_layernorm", "use_qk_norm"):
        if _flag(cfg, field, source):
            name(field, "queries and keys are normalised before the scores")
    if model_type in _QK_NORM_TYPES:
        name("model_type", "queries and keys are RMS-normalised per head (q_norm, k_norm) before the scores")
    clip = _positive_number(cfg, "clip_qkv", source)
    if clip is not None:
        name("clip_qkv", f"queries, keys and values are clipped to [-{clip:g}, {clip:g}]")
    # --- layers that are not softmax attention, and fields not recognised ---------------------------
    layer_types = cfg.get("layer_types")
    if isinstance(layer_types, list):
        other = sorted({str(t) for t in layer_types} - _ATTENTION_LAYER_TYPES)
        if other:
            unmodelled.append(f"layer_types: {', '.join(other)} layers are not softmax attention")
    for field, value in cfg.items():
        if field in _JUDGED or field in _HARMLESS or value is None or value is False:
            continue
        if _ATTENTION_WORDS.search(field.lower()):
            name(field, "not recognised by gelib; it may change the attention (check it)")

    notes.insert(0, "read " + ", ".join(read))
    notes.extend(f"not modelled: {line}" for line in unmodelled)
    return HFDims(
        n=n,
        d=d,
        h=h,
        h_kv=h_kv,
        d_k=d_k,
        notes=tuple(notes),
        unmodelled=tuple(unmodelled),
        d_v=d_v,
        context=None if context is None else context[1],
    )
