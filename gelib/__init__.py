"""gelib: Gaussian equivalence for multi-head self-attention, in JAX.

A companion library to Hayase and Karakida, *Gaussian Equivalence for
Multi-Head Self-Attention* (2026). It samples random attention layers
(:mod:`gelib.sampling`), builds the six equivalent models of the paper's
Table 1 (:mod:`gelib.models`), computes spectra and spectral distances
(:mod:`gelib.spectra`) and evaluates the free-probability limit law
(:mod:`gelib.freeprob`, assembled for attention in :mod:`gelib.attention_law`).

Importing gelib turns on JAX's 64-bit mode: the default dtype of every
configuration is float64 (eigenvalues near zero and the kernel's
cancellations need it); pass ``dtype="float32"`` to a configuration for the
faster single-precision path on accelerators.
"""

from __future__ import annotations

import jax

jax.config.update("jax_enable_x64", True)

from .config import AttentionConfig, ConfigError  # noqa: E402
from .presets import PRESETS, TABLE2, get_preset, preset_config  # noqa: E402

__all__ = ["AttentionConfig", "ConfigError", "PRESETS", "TABLE2", "get_preset", "preset_config"]
__version__ = "0.1.0"
