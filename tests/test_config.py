"""Validation of AttentionConfig and the presets."""

import math

import pytest

from gelib import PRESETS, TABLE2, AttentionConfig, ConfigError, preset_config


def test_defaults_fill_in():
    cfg = AttentionConfig(n=5, d=7, h=6, d_k=3)
    assert (cfg.h_kv, cfg.d_v, cfg.d_o) == (6, 3, 7)
    assert cfg.sharing == "none" and cfg.group_size == 1
    assert AttentionConfig(n=5, d=7, h=6, d_k=3, h_kv=2).sharing == "GQA"
    assert AttentionConfig(n=5, d=7, h=6, d_k=3, h_kv=1).sharing == "MQA"


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(n=9, d=7, h=2, d_k=3), "n = 9 > d = 7"),
        (dict(n=5, d=7, h=6, d_k=3, h_kv=4), "not divisible by h_kv = 4"),
        (dict(n=5, d=7, h=2, d_k=3, h_kv=4), "not divisible"),
        (dict(n=5, d=7, h=2, d_k=3, d_v=4, tie_kv=True), "needs d_v == d_k"),
        (dict(n=0, d=7, h=2, d_k=3), "n must be positive"),
        (dict(n=5, d=7, h=-1, d_k=3), "h must be positive"),
        (dict(n=5, d=7, h=2, d_k=3, d_o=0), "d_o must be positive"),
        (dict(n=5.5, d=7, h=2, d_k=3), "n must be an integer"),
        (dict(n="5", d=7, h=2, d_k=3), "n must be an integer"),
        (dict(n=True, d=7, h=2, d_k=3), "n must be an integer"),
        (dict(n=5, d=7, h=2, d_k=3, beta=0.0), "beta must be positive"),
        (dict(n=5, d=7, h=2, d_k=3, beta=-1.0), "beta must be positive"),
        (dict(n=5, d=7, h=2, d_k=3, beta=math.nan), "beta must be positive"),
        (dict(n=5, d=7, h=2, d_k=3, beta="1"), "beta must be a real number"),
        (dict(n=5, d=7, h=2, d_k=3, beta=30.0), "too large for float64"),
        (dict(n=5, d=7, h=2, d_k=3, beta=10.0, dtype="float32"), "too large for float32"),
        (dict(n=5, d=7, h=2, d_k=3, dtype="float16"), "dtype must be one of"),
        (dict(n=5, d=7, h=2, d_k=3, tie_kv=1), "tie_kv must be True or False"),
    ],
)
def test_invalid_configurations_say_what_is_wrong(fields, message):
    with pytest.raises(ConfigError, match=message):
        AttentionConfig(**fields)


def test_integral_floats_are_accepted():
    assert AttentionConfig(n=5.0, d=7, h=2, d_k=3).n == 5


def test_beta_limit_follows_the_dtype():
    cfg64 = AttentionConfig(n=5, d=7, h=2, d_k=3)
    cfg32 = AttentionConfig(n=5, d=7, h=2, d_k=3, dtype="float32")
    # exp(beta^2) must be finite: beta^2 <= log(max float).
    assert cfg64.beta_max <= math.sqrt(math.log(1.7976931348623157e308)) + 1e-12
    assert cfg32.beta_max < cfg64.beta_max
    # just below the limit is accepted, just above is not
    AttentionConfig(n=5, d=7, h=2, d_k=3, dtype="float32", beta=0.99 * cfg32.beta_max)
    with pytest.raises(ConfigError):
        AttentionConfig(n=5, d=7, h=2, d_k=3, dtype="float32", beta=1.01 * cfg32.beta_max)


def test_first_moment_closed_form():
    cfg = AttentionConfig(n=5, d=7, h=2, d_k=3, beta=0.5)
    assert cfg.first_moment == pytest.approx(math.expm1(0.25) * 7 / 5)
    tied = cfg.replace(tie_kv=True)
    assert tied.first_moment == pytest.approx((math.expm1(0.25) + 0.25 * 5 / 3) * 7 / 5)


def test_presets_are_valid_and_table2_is_complete():
    assert set(TABLE2) == {"bert-base", "modernbert-large", "dinov3-l16", "llada-8b", "gpt3-175b", "falcon-7b"}
    for p in PRESETS.values():
        cfg = p.config()
        assert cfg.n <= cfg.d and cfg.d_o == cfg.d and cfg.beta == 1.0
        assert p.source
    assert preset_config("falcon-7b").sharing == "MQA"
    assert preset_config("llama3-8b").sharing == "GQA"
    with pytest.raises(ConfigError, match="unknown preset"):
        preset_config("gpt-5")


def test_at_length_keeps_the_ratios_and_everything_else():
    base = AttentionConfig(n=256, d=384, h=4, h_kv=2, d_k=32, d_v=48, d_o=384, beta=1.5)
    half = base.at_length(128)
    assert (half.n, half.d, half.d_k, half.d_v, half.d_o) == (128, 192, 16, 24, 192)
    assert (half.h, half.h_kv, half.beta, half.dtype) == (4, 2, 1.5, base.dtype)
    assert base.at_length(256) == base and half.at_length(256) == base
    tiny = base.at_length(3)  # widths never fall below 1, d never below n
    assert tiny.d_k >= 1 and tiny.d >= tiny.n == 3
    tied = AttentionConfig(n=64, d=64, h=2, d_k=16, tie_kv=True).at_length(32)
    assert tied.tie_kv and tied.d_v == tied.d_k == 8
    with pytest.raises(ConfigError):
        base.at_length(0)
