"""Attention dimensions from a model's ``config.json`` (the Hugging Face ``transformers`` format), read offline.

:func:`read_hf_config` reads the file and :func:`dims_from_hf_config` maps the
field names of the common model families to the dimensions of one attention
layer. Every field that bears on the attention of one layer is either read
into the paper's model, softmax(beta Q K^T / sqrt(d_K)) V W^O with i.i.d.
Gaussian inputs, or named: refused, or listed as not modelled.

**Read.**

* width ``d``: ``hidden_size``, ``n_embd``, ``d_model`` or ``n_embed``;
* query heads ``h``: ``num_attention_heads``, ``n_head``, ``num_heads`` or
  ``n_heads`` (MPT, DBRX); in an encoder-decoder with a head count per stack
  (BART, Whisper, Marian, ...), ``encoder_attention_heads`` or
  ``decoder_attention_heads`` (see *Stacks*);
* key/value groups ``h_KV``: ``num_key_value_heads``, ``num_kv_heads``,
  ``n_head_kv`` or ``kv_n_heads`` (DBRX); one for ``multi_query: true``
  (multi-query attention), else ``h``. With Falcon's
  ``new_decoder_architecture: true`` the key/value head count wins and
  ``multi_query`` is ignored, as in ``transformers``; MPT's ``attn_type``
  decides as in llm-foundry (``multihead_attention``: ``h``,
  ``multiquery_attention``: 1, ``grouped_query_attention``: ``kv_n_heads``);
* head width ``d_K``: ``head_dim``, ``d_kv`` (T5) or ``kv_channels``, else
  ``d / h`` (which must be an integer); value width ``d_V``: ``v_head_dim``
  where present, else ``d_K``;
* context length: ``max_position_embeddings``, ``n_positions``, ``n_ctx``,
  ``max_sequence_length``, ``seq_length`` or ``max_seq_len`` (MPT, DBRX), per
  stack ``max_source_positions`` / ``max_target_positions`` (Whisper) or
  ``max_encoder_position_embeddings`` / ``max_decoder_position_embeddings``
  (LED); for the vision transformers of :data:`VISION_TOKENS` (ViT, DeiT,
  BEiT, DINOv2, ...) the token count ``(image_size / patch_size)^2`` plus
  the class token (DeiT: class and distillation tokens; DINOv2 with
  registers: also ``num_register_tokens``). ``n`` is the context length
  capped at ``d`` (the input needs ``X X^T / d = I_n``, so ``n <= d``, as in
  the paper's Table 2), or the ``n`` given (``--n``), which also makes a
  missing context field (T5 v1.1, Falcon-40B) no error.

Fields inside a nested attention block (:data:`BLOCKS`: MPT's and DBRX's
``attn_config``, ``attention_config``) are read like those of the top level
and named in full (``attn_config.kv_n_heads``); a block field that is off
(``false``, ``null``) or leaves the layer as it is (dropout, the kernel, rotary
positions) is listed in a note, and one that is not recognised is named as
not modelled.

**Fill.** A width, head count, key/value head count, head width or context
length that the configuration lacks is taken from the command line
(``d``, ``h``, ``h_kv``, ``d_k``, ``n``; :attr:`HFDims.filled`), and the
refusal for the missing field names that flag.

**Multimodal.** A configuration whose top level has a width and a head count
is read there, with a note naming its ``text_config`` as not read (and
whether that gives other values); one whose top level lacks them is read from
its ``text_config``. ``transformers`` leaves out of a saved ``text_config`` the
fields equal to the defaults of the text model's class; for ``llama`` (LLaVA)
and ``gemma3_text`` (Gemma 3) those defaults are filled in, each named in the
notes. Other sub-configurations (``vision_config``, ...) are named as not read.

**Stacks.** An encoder-decoder is read for the self-attention of one stack,
``stack="encoder"`` (the default: bidirectional, the closest to the paper's
model) or ``"decoder"`` (causal; its cross-attention is another layer): from
the stack's own head count and context field (BART, Whisper), from the
stack's sub-configuration (``encoder`` / ``decoder`` objects:
``EncoderDecoderModel``, T5Gemma), or, where both stacks share one set of
dimensions (T5, ``is_encoder_decoder: true``), from those. A note says which
stack was read. A ``stack`` for a configuration of one stack is refused.

``beta = 1`` and ``d_O = d``, as in the paper's table. Nothing is downloaded.

**Refused**, with a one-line :class:`~gelib.config.ConfigError` naming the field:

* a path that is not a regular file (a directory, a FIFO, a device), is
  larger than :data:`MAX_BYTES`, is not UTF-8 or not a JSON object, repeats
  a key with different values, or holds an integer of more than 100 digits;
* a missing or invalid field: a size that is not a JSON integer from 1 to
  :data:`MAX_INT` (a boolean, a float such as ``768.0``, a string, 0, a
  negative number), a field that should be a JSON boolean but is not
  (``multi_query``, ``use_sliding_window``, ``alibi``, ...), a number that is
  not positive and finite, a ``model_type`` or ``position_embedding_type``
  that is not a string, a ``layer_types`` that is not a list of strings, a
  ``text_config`` or attention block that is not an object;
* two fields that disagree: two names of the width, of the head count, of the
  key/value head count, of the head width or of the context length with
  different values (also one at the top level and one in ``attn_config``), or
  ``multi_query: true`` with a key/value head count other than one;
* multi-head latent attention (DeepSeek-V2/V3: ``kv_lora_rank``,
  ``q_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``): keys and
  values from a shared low-rank latent are not the paper's model;
* an MPT ``attn_type`` other than the three above.

**Not modelled**, named in :attr:`HFDims.unmodelled` and in notes
``not modelled: ...``: fields that change the attention of one layer, each
named with its value and what it does: a ``sliding_window`` shorter than ``n``
(unless ``use_sliding_window: false``; ``-1`` is no window),
``attn_logit_softcapping``, a score scale other than ``1/sqrt(d_K)``
(``query_pre_attn_scalar != d_K``, ``attention_multiplier``, MPT's
``softmax_scale``, ``scale_attn_weights: false``,
``scale_attn_by_inverse_layer_idx: true``, and T5, whose scores carry no
``1/sqrt(d_K)``), additive score biases (ALiBi: ``alibi: true`` and BLOOM;
T5's ``relative_attention_num_buckets``; a relative
``position_embedding_type``; BEiT's ``use_relative_position_bias``),
query/key normalisation (``qk_layernorm``, ``use_qk_norm``, MPT's ``qk_ln``
and ``qk_gn``, and Gemma 3, Qwen3, OLMo-2, OLMoE, which have it without a
field), ``clip_qkv``, MPT's ``prefix_lm``, ``layer_types`` other than full or
sliding attention, any field of an attention block that is not recognised,
and any other field whose name speaks of attention, heads, keys/values or
windows that is not recognised here.

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
from typing import Any

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
    "MAX_INT",
    "BLOCKS",
    "STACKS",
    "VISION_TOKENS",
]

#: Field names of the model width, in the order they are looked for.
WIDTH = ("hidden_size", "n_embd", "d_model", "n_embed")
#: Field names of the number of query heads.
HEADS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
#: Field names of the number of key/value heads.
KV_HEADS = ("num_key_value_heads", "num_kv_heads", "n_head_kv", "kv_n_heads")
#: Field names of the key/query width per head.
HEAD_DIM = ("head_dim", "d_kv", "kv_channels")
#: Field names of the context length.
CONTEXT = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length", "max_seq_len")
#: Fields of multi-head latent attention (DeepSeek-V2/V3), which is refused.
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
#: The largest ``config.json`` read, in bytes (real ones are a few kilobytes).
MAX_BYTES = 10 * 2**20
#: The largest size read (a width, a head count, a context length); larger is no model's.
MAX_INT = 2**31 - 1
#: Nested blocks of attention fields (MPT, DBRX), read field by field as ``attn_config.<field>``.
BLOCKS = ("attn_config", "attention_config")
#: The stacks of an encoder-decoder, as ``stack`` names them (the first is the default).
STACKS = ("encoder", "decoder")
#: Vision transformers (``model_type``) whose tokens are the patches of ``image_size`` and these extra tokens.
VISION_TOKENS: dict[str, tuple[int, str]] = {
    "vit": (1, "the class token"),
    "vit_msn": (1, "the class token"),
    "deit": (2, "the class and distillation tokens (DeiT)"),
    "beit": (1, "the class token"),
    "data2vec-vision": (1, "the class token"),
    "dinov2": (1, "the class token"),
    "dinov2_with_registers": (1, "the class token"),  # and num_register_tokens
}

_MAX_DIGITS = 100  # read_hf_config: a longer integer literal is refused (int() refuses 4300 digits)
_SLIDING = ("sliding_window", "sliding_window_size")
_STACK_HEADS = {"encoder": "encoder_attention_heads", "decoder": "decoder_attention_heads"}
_STACK_CONTEXT = {
    "encoder": ("max_source_positions", "max_encoder_position_embeddings"),
    "decoder": ("max_target_positions", "max_decoder_position_embeddings"),
}
_ATTN_TYPES = ("multihead_attention", "multiquery_attention", "grouped_query_attention")  # MPT, llm-foundry
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
# Encoder-decoders whose two stacks share one set of dimensions (and may not say is_encoder_decoder).
_SHARED_STACK_TYPES = _UNSCALED_TYPES
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
    "use_auxiliary_head",  # BEiT: a segmentation head
}
_POSITIONS = "rotary positions, which the paper's inputs do not carry"
# Fields of an attention block that leave the layer as it is, and why (they are listed in a note).
_BLOCK_REASONS = {
    "attn_impl": "the kernel",
    "fused_qkv": "the kernel",
    "attn_pdrop": "dropout",
    "attn_dropout": "dropout",
    "rope": _POSITIONS,
    "rope_theta": _POSITIONS,
    "rope_impl": _POSITIONS,
    "rope_scaling": _POSITIONS,
    "rope_dail_config": _POSITIONS,
    "rope_hf_config": _POSITIONS,
    "attn_uses_sequence_id": "masks between packed sequences only",
    "alibi_bias_max": "used only with alibi",
    "model_type": "the block's own type, unused",
}
_JUDGED = {
    *_GROUP,
    *_STACK_HEADS.values(),
    *(name for names in _STACK_CONTEXT.values() for name in names),
    "model_type",
    "is_encoder_decoder",
    "text_config",
    "image_size",
    "patch_size",
    "num_register_tokens",
    "multi_query",
    "new_decoder_architecture",
    "attn_type",
    "use_sliding_window",
    "attn_logit_softcapping",
    "query_pre_attn_scalar",
    "attention_multiplier",
    "softmax_scale",
    "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx",
    "alibi",
    "relative_attention_num_buckets",
    "position_embedding_type",
    "use_relative_position_bias",
    "use_shared_relative_position_bias",
    "qk_layernorm",
    "use_qk_norm",
    "qk_ln",
    "qk_gn",
    "prefix_lm",
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
    was used), of which ``n`` is the part up to ``d``; ``filled``, the fields
    (``"n"``, ``"d"``, ``"h"``, ``"h_kv"``, ``"d_k"``) the configuration lacks
    and the caller gave.
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
    filled: tuple[str, ...] = ()

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


@dataclasses.dataclass(frozen=True)
class _HugeInt:
    """An integer literal of more than ``_MAX_DIGITS`` digits, in place of its value (refused once found)."""

    digits: int

    def __repr__(self) -> str:
        return f"an integer of {self.digits} digits"


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj and obj[key] != value:
            raise _DuplicateKey(f"the key {key!r} appears twice, as {_show(obj[key])} and {_show(value)}")
        obj[key] = value
    return obj


def _parse_int(text: str) -> int | _HugeInt:
    digits = len(text.lstrip("-"))
    return _HugeInt(digits) if digits > _MAX_DIGITS else int(text)


def _find_huge(obj: Any) -> tuple[str, _HugeInt] | None:
    """The path (``attn_config.kv_n_heads``, ``layer_types[2]``) and value of the first :class:`_HugeInt`."""
    todo: list[tuple[str, Any]] = [("", obj)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, _HugeInt):
            return path, value
        if isinstance(value, dict):
            todo.extend((f"{path}.{k}" if path else str(k), v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            todo.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


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
    with different values, an integer of more than 100 digits (named by its
    path, ``attn_config.kv_n_heads``), or a value that is not an object is a
    one-line :class:`~gelib.config.ConfigError`.
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
        obj = json.loads(text, object_pairs_hook=_object_pairs, parse_int=_parse_int)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except _DuplicateKey as e:
        raise ConfigError(f"{where}: {e}") from None
    except RecursionError:
        raise ConfigError(f"{where}: not a config.json (JSON nested too deeply)") from None
    if not isinstance(obj, dict):
        kind = "int" if isinstance(obj, _HugeInt) else type(obj).__name__
        raise ConfigError(f"{where}: a config.json holds one JSON object, found {kind}")
    huge = _find_huge(obj)
    if huge is not None:
        field, value = huge
        raise ConfigError(f"{where}: field {field!r} is {value!r}, larger than any size a config.json gives")
    return obj


def _digits(value: int) -> int:
    """The number of decimal digits of ``value`` (without converting it to a string, which Python limits)."""
    n = abs(value)
    k = max(1, int(n.bit_length() * math.log10(2)))
    while n >= 10**k:
        k += 1
    while k > 1 and n < 10 ** (k - 1):
        k -= 1
    return k


def _brief(value: Any) -> str:
    """``repr(value)`` on one short line; a huge integer as its number of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {_digits(value)} digits"
    try:
        text = repr(value)
    except (ValueError, RecursionError):  # an integer past Python's int-to-string limit, or nesting
        return "a value too large to show"
    return text if len(text) <= 60 else text[:57] + "..."


def _show(value: Any) -> str:
    """A JSON value on one short line."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return _brief(value)
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = _brief(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _text(value: Any) -> str:
    """A field's value in a note: a string as it is (shortened), anything else as :func:`_show`."""
    if isinstance(value, str):
        return value if len(value) <= 60 else value[:57] + "..."
    return _show(value)


def _positive_int(cfg: dict, name: str, where: str) -> int:
    value = cfg[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {name!r} must be a positive integer, got {_brief(value)}")
    if value > MAX_INT:
        raise ConfigError(
            f"{where}: field {name!r} must be a positive integer up to {MAX_INT}, got {_brief(value)} "
            "(no model has such a size)"
        )
    return value


def _variants(name: str) -> tuple[str, ...]:
    """``name`` at the top level and in each attention block."""
    return (name, *(f"{block}.{name}" for block in BLOCKS))


def _lookup(cfg: dict, name: str, where: str) -> tuple[str, Any] | None:
    """``(key, value)`` of ``name`` at the top level or in an attention block (not null), checked against the other."""
    found = [(key, cfg[key]) for key in _variants(name) if cfg.get(key) is not None]
    for key, value in found[1:]:
        if value != found[0][1] or type(value) is not type(found[0][1]):
            first, v0 = found[0]
            raise ConfigError(f"{where}: {first}={_show(v0)} and {key}={_show(value)} disagree")
    return found[0] if found else None


def _number(cfg: dict, name: str, where: str) -> tuple[str, float] | None:
    found = _lookup(cfg, name, where)
    if found is None:
        return None
    key, value = found
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
        raise ConfigError(f"{where}: field {key!r} must be a positive number or null, got {_brief(value)}")
    return key, value


def _flag(cfg: dict, name: str, where: str) -> tuple[str, bool] | None:
    """A JSON boolean field: ``(key, True or False)``, or None where absent or null."""
    found = _lookup(cfg, name, where)
    if found is not None and not isinstance(found[1], bool):
        raise ConfigError(f"{where}: field {found[0]!r} must be true or false, got {_brief(found[1])}")
    return found


def _string(cfg: dict, name: str, where: str) -> tuple[str, str] | None:
    found = _lookup(cfg, name, where)
    if found is not None and not isinstance(found[1], str):
        raise ConfigError(f"{where}: field {found[0]!r} must be a string, got {_brief(found[1])}")
    return found


def _synonym(
    cfg: dict, names: tuple[str, ...], where: str, what: str, required: bool = True, hint: str = ""
) -> tuple[str, int] | None:
    """The first of the synonyms ``names`` present (and not null), at the top level or in an attention
    block, checked against the others."""
    keys = [*names, *(f"{block}.{name}" for block in BLOCKS for name in names)]
    found = [(key, _positive_int(cfg, key, where)) for key in keys if cfg.get(key) is not None]
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
    if not isinstance(model_type, str) or model_type not in _TEXT_DEFAULTS:
        return cfg
    cls, defaults = _TEXT_DEFAULTS[model_type]
    filled = {name: value for name, value in defaults.items() if not any(k in cfg for k in _GROUP.get(name, (name,)))}
    if filled:
        shown = ", ".join(f"{name}={value}" for name, value in filled.items())
        notes.append(f"text_config omits the defaults of transformers' {cls}: {shown}")
    return {**cfg, **filled}


_DIMENSIONS = (*WIDTH, *HEADS, *_STACK_HEADS.values(), *KV_HEADS, *HEAD_DIM, *CONTEXT)


def _dims_shown(cfg: dict) -> dict[str, str]:
    """``{field: value}`` of the dimension fields of ``cfg`` (for notes)."""
    return {name: _show(cfg[name]) for name in _DIMENSIONS if cfg.get(name) is not None}


def _choose_level(cfg: dict, source: str, notes: list[str]) -> tuple[dict, str]:
    """The level read (the top level or its ``text_config``), and a note saying which, and what is not read."""
    text = cfg.get("text_config")
    others = [
        key
        for key, value in cfg.items()
        if isinstance(value, dict) and key.endswith("_config") and key not in ("text_config", *BLOCKS)
    ]
    if others:
        notes.append(f"not read: {', '.join(others)} (sub-configurations of other parts of the model)")
    if text is None:
        return cfg, source
    position = len(notes) - 1 if others else len(notes)  # the choice of level is said first
    if not isinstance(text, dict):
        raise ConfigError(f"{source}: field 'text_config' must be a JSON object, got {_brief(text)}")
    width = [name for name in WIDTH if cfg.get(name) is not None]
    heads = [name for name in (*HEADS, *_STACK_HEADS.values()) if cfg.get(name) is not None]
    top = _dims_shown(cfg)
    if width and heads:
        theirs = _dims_shown(text)
        other = {name: value for name, value in theirs.items() if top.get(name) != value}
        if not theirs:
            says = "it gives no dimensions"
        elif other:
            says = "it gives other values: " + ", ".join(f"{k}={v}" for k, v in other.items())
        else:
            says = "its dimensions are the same"
        notes.insert(
            position,
            f"read the top level, which gives the width and the head count ({width[0]}, {heads[0]}); "
            f"text_config is not read ({says})",
        )
        return cfg, source
    lacks = " or ".join(what for what, names in (("width", width), ("head count", heads)) if not names)
    only = f" (only {', '.join(f'{k}={v}' for k, v in top.items())})" if top else ""
    notes.insert(position, f"the top level has no {lacks}{only}: read from text_config")
    return _with_text_defaults(text, notes), f"{source} (text_config)"


def _flatten(cfg: dict, source: str) -> tuple[dict, dict[str, tuple[str, str]]]:
    """``cfg`` with the fields of its attention blocks as ``attn_config.<field>``, and ``{key: (block, field)}``
    of those."""
    flat = {key: value for key, value in cfg.items() if key not in BLOCKS}
    nested: dict[str, tuple[str, str]] = {}
    for block in BLOCKS:
        inner = cfg.get(block)
        if inner is None:
            continue
        if not isinstance(inner, dict):
            raise ConfigError(f"{source}: field {block!r} must be a JSON object, got {_brief(inner)}")
        for field, value in inner.items():
            key = f"{block}.{field}"
            if key in flat:  # a top-level key with a dot in its name: keep both apart
                raise ConfigError(f"{source}: the top-level key {key!r} and the field {field!r} of {block} clash")
            flat[key] = value
            nested[key] = (block, field)
    return flat, nested


def _side_pair(cfg: dict, name: str, where: str) -> tuple[int, int]:
    value = cfg[name]
    if isinstance(value, list) and len(value) == 2:
        return (_positive_int({name: value[0]}, name, where), _positive_int({name: value[1]}, name, where))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: field {name!r} must be a positive integer or a pair of them, got {_brief(value)}")
    side = _positive_int(cfg, name, where)
    return side, side


def _vision_tokens(cfg: dict, model_type: str | None, where: str, notes: list[str]) -> tuple[str, int] | None:
    """``("image_size=..., patch_size=...", tokens)`` of a vision transformer of :data:`VISION_TOKENS`."""
    if model_type not in VISION_TOKENS or cfg.get("image_size") is None or cfg.get("patch_size") is None:
        return None
    image, patch = _side_pair(cfg, "image_size", where), _side_pair(cfg, "patch_size", where)
    grid = (image[0] // patch[0], image[1] // patch[1])
    if min(grid) < 1:
        raise ConfigError(
            f"{where}: patch_size={_show(cfg['patch_size'])} is larger than image_size={_show(cfg['image_size'])}"
        )
    extra, what = VISION_TOKENS[model_type]
    if model_type == "dinov2_with_registers":
        registers = cfg.get("num_register_tokens")
        if registers is None:
            registers = 4
            notes.append("no num_register_tokens: 4, transformers' Dinov2WithRegistersConfig default")
        elif isinstance(registers, bool) or not isinstance(registers, int) or not 0 <= registers <= MAX_INT:
            raise ConfigError(f"{where}: field 'num_register_tokens' must be an integer >= 0, got {_brief(registers)}")
        extra += registers
        what = f"the class token and {registers} register tokens"
    patches = grid[0] * grid[1]
    side = (
        f"({image[0]} / {patch[0]})^2"
        if image[0] == image[1] and patch[0] == patch[1]
        else (f"{image[0]} / {patch[0]} x {image[1]} / {patch[1]}")
    )
    rounded = "" if image[0] % patch[0] == 0 and image[1] % patch[1] == 0 else " (the patch grid rounded down)"
    tokens = patches + extra
    notes.append(
        f"a vision transformer ({model_type}): {tokens} tokens, {side} = {patches} patches{rounded} and {what}"
    )
    shown = f"image_size={_show(cfg['image_size'])}, patch_size={_show(cfg['patch_size'])}"
    return shown, tokens


def dims_from_hf_config(
    cfg: dict[str, Any],
    source: str = "config.json",
    n: int | None = None,
    *,
    d: int | None = None,
    h: int | None = None,
    h_kv: int | None = None,
    d_k: int | None = None,
    stack: str | None = None,
) -> HFDims:
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
    d, h, h_kv, d_k : int, optional
        The command line's ``--d``, ``--h``, ``--h-kv`` and ``--dk``: each
        fills the field where the configuration has none (listed in
        :attr:`HFDims.filled`; ``d_K = d / h`` is then computed from them).
        Where the configuration has the field, its value is read (the caller
        overrides it).
    stack : str, optional
        The stack of an encoder-decoder whose self-attention is read (default
        the encoder); refused for a configuration of one stack.

    Raises
    ------
    ConfigError
        Naming the field that is missing, invalid, in conflict with another,
        or refused.
    """
    if stack is not None and stack not in STACKS:
        raise ConfigError(f"--stack must be one of {', '.join(STACKS)}, got {_brief(stack)}")
    given = {"n": n, "d": d, "h": h, "h_kv": h_kv, "d_k": d_k}
    for field, value in given.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_INT):
            raise ConfigError(f"--{_FLAGS[field]} must be a positive integer up to {MAX_INT}, got {_brief(value)}")
    subs = [s for s in STACKS if isinstance(cfg.get(s), dict)]
    if subs:  # EncoderDecoderModel, T5Gemma: one sub-configuration per stack
        chosen = stack or subs[0]
        if chosen not in subs:
            raise ConfigError(
                f"{source}: --stack {chosen}: the config has no {chosen!r} sub-configuration, only {subs[0]!r}"
            )
        inner = dims_from_hf_config(cfg[chosen], f"{source} ({chosen})", n, d=d, h=h, h_kv=h_kv, d_k=d_k)
        note = f"encoder-decoder: read the {chosen!r} sub-configuration, {_STACK_WHAT[chosen]}"
        if stack is None and len(subs) > 1:
            note += " (the default; --stack decoder reads the decoder's)"
        return dataclasses.replace(inner, notes=(inner.notes[0], note, *inner.notes[1:]))
    return _Reader(cfg, source, given, stack).dims()


_FLAGS = {"n": "n", "d": "d", "h": "h", "h_kv": "h-kv", "d_k": "dk"}
_STACK_WHAT = {
    "encoder": "its self-attention",
    "decoder": "its self-attention (causal; its cross-attention, over the encoder's output, is another layer)",
}


class _Reader:
    """One pass over one level of a configuration (see :func:`dims_from_hf_config`)."""

    def __init__(self, cfg: dict, source: str, given: dict[str, int | None], stack: str | None):
        self.notes: list[str] = []
        self.unmodelled: list[str] = []
        self.read: list[str] = []
        self.filled: list[str] = []
        self.given = given
        self.stack = stack
        cfg, self.source = _choose_level(cfg, source, self.notes)
        self.cfg, self.nested = _flatten(cfg, self.source)

    def name(self, key: str, what: str) -> None:
        """Name ``key`` as not modelled: ``key=value: what it does``."""
        self.unmodelled.append(f"{key}={_text(self.cfg[key])}: {what}")

    def dimension(self, names: tuple[str, ...], what: str, field: str, hint: str = "") -> tuple[str, int]:
        """``(key, value)`` of a dimension: read, or filled from the caller's ``field``, or refused."""
        found = _synonym(self.cfg, names, self.source, what, required=False)
        if found is not None:
            self.read.append(f"{found[0]}={found[1]}")
            return found
        value = self.given[field]
        flag = f"--{_FLAGS[field]}"
        if value is not None:
            self.filled.append(field)
            self.notes.append(f"{field} = {value} from {flag}: the config has no {what} field")
            return flag, value
        raise ConfigError(
            f"{self.source}: no {what} field (looked for {', '.join(names)}){hint or f'; give it with {flag}'}"
        )

    def dims(self) -> HFDims:
        cfg, source, notes, read = self.cfg, self.source, self.notes, self.read
        model_type = cfg.get("model_type")  # the top level's (an attention block may have its own, unused)
        if model_type is not None and not isinstance(model_type, str):
            raise ConfigError(f"{source}: field 'model_type' must be a string, got {_brief(model_type)}")
        mla = [name for name in MLA_FIELDS[:4] if cfg.get(name) is not None]
        if mla:
            shown = ", ".join(f"{name}={_show(cfg.get(name))}" for name in MLA_FIELDS if name in cfg)
            raise ConfigError(
                f"{source}: multi-head latent attention ({shown}) is not the paper's model: keys and values come "
                "from a shared low-rank latent and part of each query/key head is rotary; give the layer with "
                "--n, --d, --h and --dk instead"
            )
        heads_names, context_first = self.stacks(model_type)

        width_name, d = self.dimension(WIDTH, "model width", "d")
        heads_name, h = self.dimension(heads_names, "attention-head count", "h")
        pair = lambda key, value: f"{key} {value}" if key.startswith("--") else f"{key}={value}"  # noqa: E731

        h_kv = self.kv_heads(h)
        if h % h_kv and self.given["h"] is None and self.given["h_kv"] is None:
            raise ConfigError(f"{source}: {h} attention heads are not divisible by {h_kv} key/value heads")

        head = _synonym(cfg, HEAD_DIM, source, "head width", required=False)
        d_v = _positive_int(cfg, "v_head_dim", source) if cfg.get("v_head_dim") is not None else None
        if head is not None:
            d_k = head[1]
            read.append(f"{head[0]}={d_k}")
        elif self.given["d_k"] is not None:
            d_k = self.given["d_k"]
            self.filled.append("d_k")
            notes.append(f"d_k = {d_k} from --dk: the config has no head width field ({', '.join(HEAD_DIM)})")
        else:
            if d % h:
                raise ConfigError(
                    f"{source}: no 'head_dim' field and {pair(width_name, d)} is not divisible by "
                    f"{pair(heads_name, h)}; give the head width with --dk"
                )
            d_k = d // h
            also = "" if d_v is not None else " = d_V"
            label = lambda key, value: f"{key} {value}" if key.startswith("--") else key  # noqa: E731
            notes.append(f"no head_dim: d_K{also} = {label(width_name, d)} / {label(heads_name, h)} = {d_k}")
        if d_v is not None:
            read.append(f"v_head_dim={d_v}")

        n, context = self.context(model_type, context_first, d)
        self.judge(model_type, n, d_k)
        self.blocks()
        self.unrecognised()
        notes.insert(0, "read " + ", ".join(read))
        notes.extend(f"not modelled: {line}" for line in self.unmodelled)
        return HFDims(
            n=n,
            d=d,
            h=h,
            h_kv=h_kv,
            d_k=d_k,
            notes=tuple(notes),
            unmodelled=tuple(self.unmodelled),
            d_v=d_v,
            context=context,
            filled=tuple(self.filled),
        )

    # --- which stack ---------------------------------------------------------------------------------
    def stacks(self, model_type: str | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The head-count fields and the stack's own context fields of the stack read, and a note on it."""
        cfg, source, stack = self.cfg, self.source, self.stack
        present = [s for s in STACKS if cfg.get(_STACK_HEADS[s]) is not None]
        is_ed = _flag(cfg, "is_encoder_decoder", source)
        if present:  # BART, Whisper, Marian, ...: a head count per stack
            chosen = stack or present[0]
            if chosen not in present:
                raise ConfigError(
                    f"{source}: --stack {chosen}: no {_STACK_HEADS[chosen]} field; the config has only the "
                    f"{present[0]} stack ({_STACK_HEADS[present[0]]})"
                )
            other = next(s for s in STACKS if s != chosen)
            theirs = [
                f"{key}={_show(cfg[key])}"
                for key in (_STACK_HEADS[other], *_STACK_CONTEXT[other])
                if cfg.get(key) is not None
            ]
            if len(present) == 1:
                note = f"one stack, the {chosen} ({_STACK_HEADS[chosen]}): read {_STACK_WHAT[chosen]}"
            else:
                note = f"encoder-decoder: read the {chosen} stack, {_STACK_WHAT[chosen]}"
                if stack is None:
                    note += " (the default; --stack decoder reads the decoder's)"
            if theirs:
                note += f"; the {other}'s {', '.join(theirs)} not read"
            self.notes.append(note)
            heads = (_STACK_HEADS[chosen], *HEADS) if chosen == "encoder" else (_STACK_HEADS[chosen],)
            return heads, _STACK_CONTEXT[chosen]
        if (is_ed is not None and is_ed[1]) or model_type in _SHARED_STACK_TYPES:  # T5: stacks share the dims
            chosen = stack or STACKS[0]
            why = "is_encoder_decoder=true" if is_ed is not None and is_ed[1] else f"model_type={model_type}"
            note = f"encoder-decoder ({why}) whose stacks share these dimensions: read the {chosen}'s self-attention"
            if chosen == "decoder":
                note += " (causal; its cross-attention, over the encoder's output, is another layer)"
            elif stack is None:
                note += " (the default; --stack decoder reads the decoder's)"
            self.notes.append(note)
            return HEADS, ()
        if stack is not None:
            raise ConfigError(
                f"{source}: --stack {stack}: not an encoder-decoder (no encoder_attention_heads or "
                "decoder_attention_heads field, no is_encoder_decoder: true, no encoder/decoder "
                "sub-configuration); leave --stack out"
            )
        return HEADS, ()

    # --- key/value heads -----------------------------------------------------------------------------------
    def kv_heads(self, h: int) -> int:
        cfg, source, notes, read = self.cfg, self.source, self.notes, self.read
        kv = _synonym(cfg, KV_HEADS, source, "key/value head count", required=False)
        attn_type = _string(cfg, "attn_type", source)
        if attn_type is not None:  # MPT (llm-foundry): the type decides; kv_n_heads counts only for GQA
            key, kind = attn_type
            if kind not in _ATTN_TYPES:
                raise ConfigError(
                    f"{source}: {key}={kind!r} is not one of {', '.join(_ATTN_TYPES)} (the attention of MPT)"
                )
            read.append(f"{key}={kind}")
            if kind == "grouped_query_attention":
                if kv is not None:
                    read.append(f"{kv[0]}={kv[1]}")
                    return kv[1]
                if self.given["h_kv"] is not None:
                    self.filled.append("h_kv")
                    notes.append(f"h_kv = {self.given['h_kv']} from --h-kv: {key}=grouped_query_attention gives none")
                    return self.given["h_kv"]
                raise ConfigError(
                    f"{source}: {key}=grouped_query_attention and no key/value head count field "
                    f"(looked for {', '.join(KV_HEADS)}); give it with --h-kv"
                )
            h_kv = h if kind == "multihead_attention" else 1
            if kv is not None and kv[1] != h_kv:
                notes.append(f"{kv[0]}={kv[1]} is unused with {key}={kind} (as in llm-foundry)")
            notes.append(f"{key}={kind}: h_KV = {'h (no sharing)' if h_kv == h else '1 (multi-query attention)'}")
            return h_kv
        multi_query = _flag(cfg, "multi_query", source)
        new_decoder = _flag(cfg, "new_decoder_architecture", source)
        if new_decoder is not None and new_decoder[1] and multi_query is not None:
            notes.append("new_decoder_architecture=true: multi_query is ignored (as transformers' Falcon does)")
            multi_query = None
        if kv is not None:
            if multi_query is not None and multi_query[1] and kv[1] != 1:
                raise ConfigError(
                    f"{source}: multi_query=true and {kv[0]}={kv[1]} disagree "
                    "(multi-query attention has one key/value head)"
                )
            read.append(f"{kv[0]}={kv[1]}")
            return kv[1]
        if multi_query is not None and multi_query[1]:
            read.append("multi_query=true")
            notes.append("multi-query attention: h_KV = 1")
            return 1
        if self.given["h_kv"] is not None:
            self.filled.append("h_kv")
            notes.append(f"h_kv = {self.given['h_kv']} from --h-kv: the config has no key/value head count field")
            return self.given["h_kv"]
        notes.append("no key/value head count: h_KV = h (no sharing)")
        return h

    # --- context -------------------------------------------------------------------------------------------
    def context(self, model_type: str | None, first: tuple[str, ...], d: int) -> tuple[int, int | None]:
        """``(n, context)``: the layer's ``n`` and the context length the configuration gives (or None)."""
        cfg, source, notes, read = self.cfg, self.source, self.notes, self.read
        n = self.given["n"]
        hint = "; give the context length with --n"
        if cfg.get("image_size") is not None and cfg.get("patch_size") is not None:
            hint += " (of a vision model: its token count, the patches of image_size plus any class tokens)"
        vision = _vision_tokens(cfg, model_type, source, notes)
        found = _synonym(cfg, first, source, "context length", required=False) if first else None
        if found is None:
            found = _synonym(cfg, CONTEXT, source, "context length", required=vision is None and n is None, hint=hint)
        context: int | None = None
        if vision is not None:
            if found is not None and found[1] != vision[1]:
                raise ConfigError(f"{source}: {found[0]}={found[1]} and the {vision[1]} tokens of {vision[0]} disagree")
            read.append(vision[0])
            context, label = vision[1], f"of {vision[1]} tokens"
        elif found is not None:
            context, label = found[1], f"{found[0]}={found[1]}"
            read.append(label)
            if model_type in _UNSCALED_TYPES:
                notes.append(f"{label} is the training length (T5's positions are relative)")
        if n is None:
            assert context is not None  # required when n is None: _synonym raised if there was none
            n = min(context, d)
            if n < context:
                notes.append(f"n = {n}: the context length {context} capped at d = {d} (the input needs n <= d)")
        elif context is None:
            self.filled.append("n")
            notes.append(f"n = {n} from --n: the config has no context length field")
        elif n > context:
            notes.append(f"n = {n} is longer than the context length {label}")
        return n, context

    # --- what the paper's model leaves out ---------------------------------------------------------------
    def judge(self, model_type: str | None, n: int, d_k: int) -> None:
        cfg, source, notes, read, name = self.cfg, self.source, self.notes, self.read, self.name
        # a sliding window (-1: none, as llm-foundry writes it)
        for key in [k for base in _SLIDING for k in _variants(base)]:
            if cfg.get(key) == -1 and not isinstance(cfg[key], bool):
                notes.append(f"{key}=-1: no sliding window")
                cfg[key] = None
        window = _synonym(cfg, _SLIDING, source, "sliding window", required=False)
        use_window = _flag(cfg, "use_sliding_window", source)
        if window is not None:
            if use_window is not None and not use_window[1]:
                notes.append(f"{window[0]}={window[1]} is unused (use_sliding_window=false)")
            elif window[1] < n:
                name(
                    window[0],
                    f"shorter than n = {n}: each query attends only to the {window[1]} most recent keys "
                    "(in the layers that use the window), not to all n",
                )
            else:
                notes.append(f"{window[0]}={window[1]} >= n = {n}: the window covers the whole context")
        # the scale of the scores
        paper = "; beta = 1 unless --beta is given"
        cap = _number(cfg, "attn_logit_softcapping", source)
        if cap is not None:
            name(cap[0], f"every score s becomes {cap[1]:g} tanh(s / {cap[1]:g}) before the softmax")

        def beta(key: str, value: float) -> float:
            """The paper's beta of a score scale, which must be a positive finite number."""
            if not 0 < value < math.inf:
                raise ConfigError(f"{source}: field {key!r} gives beta = {value:g}, not a finite number > 0")
            return value

        scalar = _number(cfg, "query_pre_attn_scalar", source)
        if scalar is not None:
            if scalar[1] != d_k:
                name(
                    scalar[0],
                    f"the scores are scaled by 1/sqrt({scalar[1]:g}), not 1/sqrt(d_K) = 1/sqrt({d_k}) "
                    f"(beta = {beta(scalar[0], math.sqrt(d_k / scalar[1])):.4g} in the paper's form{paper})",
                )
            else:
                read.append(f"{scalar[0]}={scalar[1]:g}")
        for base in ("attention_multiplier", "softmax_scale"):
            multiplier = _number(cfg, base, source)
            if multiplier is not None:
                name(
                    multiplier[0],
                    f"the scores are scaled by {multiplier[1]:g}, not 1/sqrt(d_K) = {1 / math.sqrt(d_k):.4g} "
                    f"(beta = {beta(multiplier[0], multiplier[1] * math.sqrt(d_k)):.4g} in the paper's form{paper})",
                )
        found = _flag(cfg, "scale_attn_weights", source)
        if found is not None and not found[1]:
            name(
                found[0],
                f"the scores are Q K^T without 1/sqrt(d_K) (beta = sqrt({d_k}) = {math.sqrt(d_k):.4g} "
                f"in the paper's form{paper})",
            )
        found = _flag(cfg, "scale_attn_by_inverse_layer_idx", source)
        if found is not None and found[1]:
            name(found[0], "the scores of layer l are divided by l + 1")
        if model_type in _UNSCALED_TYPES:
            name(
                "model_type",
                f"the scores are Q K^T without 1/sqrt(d_K), which T5 folds into the initialisation of W^Q "
                f"(beta = sqrt({d_k}) = {math.sqrt(d_k):.4g} at the paper's weights, 1 at T5's; beta = 1 kept)",
            )
        # biases added to the scores
        found = _flag(cfg, "alibi", source)
        if found is not None and found[1]:
            what = "a fixed bias -m_head |i - j| (ALiBi) is added to every score"
            bias_max = _number(cfg, "alibi_bias_max", source)
            if bias_max is not None:
                what += f" (slopes m_k = 2^(-{bias_max[1]:g} k / h), k = 1..h, {bias_max[0]}={bias_max[1]:g})"
            name(found[0], what)
        if model_type == "bloom":
            name("model_type", "BLOOM adds a fixed bias -m_head |i - j| (ALiBi) to every score")
        if cfg.get("relative_attention_num_buckets") is not None:
            buckets = _positive_int(cfg, "relative_attention_num_buckets", source)
            name(
                "relative_attention_num_buckets",
                f"a learned bias of the offset j - i ({buckets} buckets) is added to every score",
            )
        kind = _string(cfg, "position_embedding_type", source)
        if kind is not None and kind[1] in ("relative_key", "relative_key_query"):
            name(kind[0], "a learned term of the offset j - i is added to every score")
        for base in ("use_relative_position_bias", "use_shared_relative_position_bias"):
            found = _flag(cfg, base, source)
            if found is not None and found[1]:
                name(found[0], "a learned bias of the offset j - i is added to every score")
        # queries and keys transformed before the scores; masks other than the decoder's
        for base, what in (
            ("qk_layernorm", "normalised"),
            ("use_qk_norm", "normalised"),
            ("qk_ln", "layer-normalised"),
            ("qk_gn", "group-normalised"),
        ):
            found = _flag(cfg, base, source)
            if found is not None and found[1]:
                name(found[0], f"queries and keys are {what} before the scores")
        if model_type in _QK_NORM_TYPES:
            name("model_type", "queries and keys are RMS-normalised per head (q_norm, k_norm) before the scores")
        clip = _number(cfg, "clip_qkv", source)
        if clip is not None:
            name(clip[0], f"queries, keys and values are clipped to [-{clip[1]:g}, {clip[1]:g}]")
        found = _flag(cfg, "prefix_lm", source)
        if found is not None and found[1]:
            name(
                found[0],
                "the prefix attends to itself in both directions and the rest causally (a mask, not the paper's)",
            )
        # layers that are not softmax attention
        layer_types = _lookup(cfg, "layer_types", source)
        if layer_types is not None:
            key, value = layer_types
            if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
                raise ConfigError(f"{source}: field {key!r} must be a list of strings, got {_brief(value)}")
            other = sorted(set(value) - _ATTENTION_LAYER_TYPES)
            if other:
                self.unmodelled.append(f"{key}: {', '.join(other)} layers are not softmax attention")

    def blocks(self) -> None:
        """Every field of an attention block that no note names yet: off, harmless, or not recognised."""
        said = "\n".join([*self.read, *self.notes, *self.unmodelled])
        for block in BLOCKS:
            items = []
            for key, (_, field) in self.nested.items():
                if not key.startswith(f"{block}.") or re.search(rf"(?<![\w.]){re.escape(key)}(?!\w)", said):
                    continue
                value = self.cfg[key]
                if value is None or value is False:
                    items.append(f"{key}={_text(value)} (off)")
                elif field in _BLOCK_REASONS:
                    items.append(f"{key}={_text(value)} ({_BLOCK_REASONS[field]})")
                elif field in _HARMLESS:
                    items.append(f"{key}={_text(value)} (leaves the layer as it is)")
                elif field in _JUDGED:
                    items.append(f"{key}={_text(value)} (no effect on this layer)")
                else:
                    self.name(key, "not recognised by gelib; it may change the attention (check it)")
            if items:
                self.notes.append(f"{block}: left as they are: {', '.join(items)}")

    def unrecognised(self) -> None:
        """Top-level fields that speak of attention and are neither read, judged nor harmless."""
        for field, value in self.cfg.items():
            if field in self.nested or field in _JUDGED or field in _HARMLESS or value is None or value is False:
                continue
            if _ATTENTION_WORDS.search(field.lower()):
                self.name(field, "not recognised by gelib; it may change the attention (check it)")
