"""Attention dimensions from a model's ``config.json`` (the Hugging Face ``transformers`` format), read offline.

:func:`read_hf_config` reads the file and :func:`dims_from_hf_config` maps the
field names of the common model families to the dimensions of one attention
layer:

* width ``d``: ``hidden_size``, ``n_embd`` or ``d_model``;
* query heads ``h``: ``num_attention_heads``, ``n_head`` or ``num_heads``;
* key/value groups ``h_KV``: ``num_key_value_heads`` or ``num_kv_heads``, one
  for ``multi_query: true`` (multi-query attention), else ``h``;
* head width ``d_K = d_V``: ``head_dim`` where present, else ``d / h``
  (which must be an integer);
* context length: ``max_position_embeddings``, ``n_positions``, ``n_ctx``,
  ``max_sequence_length`` or ``seq_length``; ``n`` is the context length capped
  at ``d`` (the input needs ``X X^T / d = I_n``, so ``n <= d``, as in the
  paper's Table 2).

A multimodal configuration whose top level lacks the fields is read from its
``text_config``. Nothing is downloaded; a field that is missing or invalid is
a :class:`~gelib.config.ConfigError` naming it. ``beta = 1`` and ``d_O = d``,
as in the paper's table.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .config import ConfigError

__all__ = ["HFDims", "read_hf_config", "dims_from_hf_config", "WIDTH", "HEADS", "KV_HEADS", "CONTEXT"]

#: Field names of the model width, in the order they are looked for.
WIDTH = ("hidden_size", "n_embd", "d_model")
#: Field names of the number of query heads.
HEADS = ("num_attention_heads", "n_head", "num_heads")
#: Field names of the number of key/value heads.
KV_HEADS = ("num_key_value_heads", "num_kv_heads")
#: Field names of the context length.
CONTEXT = ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length", "seq_length")


@dataclasses.dataclass(frozen=True)
class HFDims:
    """The dimensions read from a configuration: ``n, d, h, h_kv, d_k``, and
    ``notes``, one line per field read or assumed (for the user)."""

    n: int
    d: int
    h: int
    h_kv: int
    d_k: int
    notes: tuple[str, ...]

    def fields(self) -> dict[str, int]:
        """The :class:`~gelib.config.AttentionConfig` fields (``d_V = d_K`` and ``d_O = d`` by default)."""
        return dict(n=self.n, d=self.d, h=self.h, h_kv=self.h_kv, d_k=self.d_k)


def read_hf_config(path: str | Path) -> dict[str, Any]:
    """The JSON object of a ``config.json``; a missing file, invalid JSON or a
    value that is not an object is a one-line :class:`~gelib.config.ConfigError`."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"--hf-config {path}: cannot read it ({e.strerror or e})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--hf-config {path}: not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"--hf-config {path}: a config.json holds one JSON object, found {type(obj).__name__}")
    return obj


def _positive_int(cfg: dict, name: str, where: str) -> int:
    value = cfg[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}: field {name!r} must be a positive integer, got {value!r}")
    return value


def _first(cfg: dict, names: tuple[str, ...], where: str, what: str, required: bool = True) -> tuple[str, int] | None:
    for name in names:
        if cfg.get(name) is not None:
            return name, _positive_int(cfg, name, where)
    if required:
        raise ConfigError(f"{where}: no {what} field (looked for {', '.join(names)})")
    return None


def dims_from_hf_config(cfg: dict[str, Any], source: str = "config.json") -> HFDims:
    """The attention dimensions of a ``transformers`` configuration (see the module docstring).

    ``source`` names the file in messages. Raises :class:`~gelib.config.ConfigError`
    naming the field that is missing or invalid.
    """
    notes = []
    if not any(cfg.get(k) is not None for k in WIDTH) and isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]
        source = f"{source} (text_config)"
        notes.append("the top level has no width field: read from text_config")
    width_name, d = _first(cfg, WIDTH, source, "model width")
    heads_name, h = _first(cfg, HEADS, source, "attention-head count")
    read = [f"{width_name}={d}", f"{heads_name}={h}"]
    kv = _first(cfg, KV_HEADS, source, "key/value head count", required=False)
    if kv is not None:
        h_kv = kv[1]
        read.append(f"{kv[0]}={h_kv}")
    elif cfg.get("multi_query") is True:
        h_kv = 1
        read.append("multi_query=true")
        notes.append("multi-query attention: h_KV = 1")
    else:
        h_kv = h
        notes.append("no key/value head count: h_KV = h (no sharing)")
    if h % h_kv:
        raise ConfigError(f"{source}: {h} attention heads are not divisible by {h_kv} key/value heads")
    if cfg.get("head_dim") is not None:
        d_k = _positive_int(cfg, "head_dim", source)
        read.append(f"head_dim={d_k}")
    else:
        if d % h:
            raise ConfigError(
                f"{source}: no 'head_dim' field and {width_name}={d} is not divisible by {heads_name}={h}"
            )
        d_k = d // h
        notes.append(f"no head_dim: d_K = d_V = {width_name} / {heads_name} = {d_k}")
    context_name, context = _first(cfg, CONTEXT, source, "context length")
    read.append(f"{context_name}={context}")
    n = min(context, d)
    if n < context:
        notes.append(f"n = {n}: the context length {context} capped at d = {d} (the input needs n <= d)")
    notes.insert(0, "read " + ", ".join(read))
    return HFDims(n=n, d=d, h=h, h_kv=h_kv, d_k=d_k, notes=tuple(notes))
