"""Attention dimensions of public models, and the paper's published numbers.

The first six rows are the paper's Table 2 / D.2 (beta = 1, d_o = d, n <= d).
The others are modern grouped-query (GQA) and vision models, with n capped at
d as in the paper (the input needs ``X X^T / d = I_n``). Each preset names its
source: the model's published configuration or paper. The paper's Table D.1
(the largest error bars of the learning figures) is :data:`TABLE_D1`.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from typing import Any

from .config import AttentionConfig, ConfigError

__all__ = [
    "Preset",
    "PRESETS",
    "TABLE2",
    "get_preset",
    "near_presets",
    "preset_config",
    "preset_key",
    "ErrorBar",
    "TABLE_D1",
]


@dataclasses.dataclass(frozen=True)
class Preset:
    name: str
    title: str
    n: int
    d: int
    h: int
    h_kv: int
    d_k: int
    source: str
    paper_rel_w1: tuple[float, float] | None = None  # Table 2 (%): mean, 95 % CI
    paper_ks: tuple[float, float] | None = None  # Table D.2's KS column: mean, 95 % CI
    note: str = ""

    def config(self, **overrides) -> AttentionConfig:
        """The layer at these dimensions (beta = 1, d_v = d_k, d_o = d)."""
        fields: dict[str, Any] = dict(n=self.n, d=self.d, h=self.h, h_kv=self.h_kv, d_k=self.d_k)
        fields.update(overrides)
        return AttentionConfig(**fields)

    @property
    def sharing(self) -> str:
        return self.config().sharing


_ROWS = [
    # --- the paper's Table 2 / D.2 ------------------------------------------
    Preset(
        "bert-base",
        "BERT-base",
        512,
        768,
        12,
        12,
        64,
        "Devlin et al. 2019, BERT-base: 12 heads of 64, hidden 768, 512 positions",
        (1.66, 0.23),
        (0.0109, 0.0010),
    ),
    Preset(
        "modernbert-large",
        "ModernBERT-large",
        1024,
        1024,
        16,
        16,
        64,
        "Warner et al. 2024, ModernBERT-large: hidden 1024, 16 heads of 64; n capped at d = 1024 as in the paper",
        (1.37, 0.21),
        (0.0052, 0.0005),
    ),
    Preset(
        "dinov3-l16",
        "DINOv3-L/16",
        261,
        1024,
        16,
        16,
        64,
        "Simeoni et al. 2025, DINOv3 ViT-L/16: hidden 1024, 16 heads; n = 256 patches + 1 class + 4 register tokens",
        (2.82, 0.40),
        (0.0280, 0.0018),
    ),
    Preset(
        "llada-8b",
        "LLaDA-8B",
        4096,
        4096,
        32,
        32,
        128,
        "Nie et al. 2025, LLaDA-8B: hidden 4096, 32 heads of 128 (no GQA)",
        (0.92, 0.06),
        (0.0022, 0.0001),
    ),
    Preset(
        "gpt3-175b",
        "GPT-3 175B",
        2048,
        12288,
        96,
        96,
        128,
        "Brown et al. 2020, GPT-3 175B: d_model 12288, 96 heads of 128, context 2048",
        (0.62, 0.07),
        (0.0040, 0.0004),
    ),
    Preset(
        "falcon-7b",
        "Falcon-7B",
        2048,
        4544,
        71,
        1,
        64,
        "Almazrouei et al. 2023, Falcon-7B: hidden 4544, 71 query heads of 64, "
        "multi-query attention (one KV head), context 2048",
        (1.92, 0.46),
        (0.0061, 0.0012),
    ),
    # --- modern GQA and vision models (n capped at d) -------------------------
    Preset(
        "llama3-8b",
        "Llama-3-8B",
        4096,
        4096,
        32,
        8,
        128,
        "Meta 2024, Llama-3-8B config.json: hidden 4096, 32 heads, 8 KV heads; context 8192 capped at d",
    ),
    Preset(
        "mistral-7b",
        "Mistral-7B",
        4096,
        4096,
        32,
        8,
        128,
        "Jiang et al. 2023, Mistral-7B: hidden 4096, 32 heads, 8 KV heads; n capped at d",
    ),
    Preset(
        "qwen2.5-7b",
        "Qwen2.5-7B",
        3584,
        3584,
        28,
        4,
        128,
        "Qwen team 2024, Qwen2.5-7B config.json: hidden 3584, 28 heads, 4 KV heads, head size 128; n capped at d",
    ),
    Preset(
        "vit-b16",
        "ViT-B/16",
        197,
        768,
        12,
        12,
        64,
        "Dosovitskiy et al. 2021, ViT-B/16 at 224 px: 196 patches + class token, hidden 768, 12 heads of 64",
    ),
]

#: Every preset by name, the rows of the paper's Table 2 and further public models.
PRESETS: dict[str, Preset] = {p.name: p for p in _ROWS}
#: The names of the presets that are rows of the paper's Table 2, in its order.
TABLE2: tuple[str, ...] = tuple(p.name for p in _ROWS if p.paper_rel_w1 is not None)


def preset_key(name: str) -> str:
    """A preset name reduced to its letters and digits, lower case: the spellings of one model compare equal.

    >>> preset_key("Llama-3-8B") == preset_key("llama3-8b") == preset_key("LLAMA_3_8b")
    True
    """
    return re.sub(r"[^0-9a-z]", "", name.lower())


def near_presets(name: str, limit: int = 3) -> list[str]:
    """The preset names closest to ``name`` (spelling compared as by :func:`preset_key`), best first.

    >>> near_presets("mistral-8b")[0]
    'mistral-7b'
    """
    keys = {preset_key(p): p for p in PRESETS}
    return [keys[k] for k in difflib.get_close_matches(preset_key(name), list(keys), n=limit, cutoff=0.5)]


def get_preset(name: str) -> Preset:
    """The preset called ``name``, spelled as in the tables or as the preset is
    (case and punctuation do not count: ``Llama-3-8B``, ``llama-3-8b`` and ``llama3-8b`` are one model).

    An unknown name raises :class:`~gelib.config.ConfigError` naming the nearest presets, then all of them.
    """
    by_key = {preset_key(p): preset for p, preset in PRESETS.items()}
    if preset_key(name) in by_key:
        return by_key[preset_key(name)]
    near = near_presets(name)
    hint = f"did you mean {' or '.join(near)}? " if near else ""
    raise ConfigError(f"unknown preset {name!r}; {hint}choose one of: {', '.join(PRESETS)}") from None


def preset_config(name: str, **overrides: Any) -> AttentionConfig:
    """The :class:`AttentionConfig` of a named preset, with optional overrides."""
    return get_preset(name).config(**overrides)


@dataclasses.dataclass(frozen=True)
class ErrorBar:
    """One row of the paper's Table D.1: the largest 95 % half-width of a panel's MHA markers.

    ``absolute`` is that half-width, ``relative`` (per cent) the same over the value it
    belongs to, so the row also gives one plotted value (:attr:`value`), the only
    magnitudes the paper's learning figures have left us.
    """

    panel: str
    quantity: str
    absolute: float
    relative: float  # per cent

    @property
    def value(self) -> float:
        """The plotted value the error bar belongs to, ``absolute / (relative / 100)``."""
        return self.absolute / (self.relative / 100)


#: The paper's Table D.1, in its order (panel names as ``python -m gelib figure`` takes them).
TABLE_D1: tuple[ErrorBar, ...] = (
    ErrorBar("2a", "relative training loss", 0.00513, 13.314),
    ErrorBar("2c", "coefficient error", 0.02381, 0.562),
    ErrorBar("2d", "coefficient-error ratio", 0.00168, 0.108),
    ErrorBar("3a", "arrival time, fixed widths", 4.43476, 10.425),
    ErrorBar("3a", "arrival time, fixed parameter count", 2.75124, 6.486),
    ErrorBar("3b", "coefficient error", 0.03015, 1.182),
)
