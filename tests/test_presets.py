"""Preset names: the tables' spelling is accepted, an unknown name is answered with the nearest presets."""

import pytest

from gelib import PRESETS, get_preset
from gelib.config import ConfigError
from gelib.presets import near_presets, preset_key


def test_every_preset_answers_to_its_name_and_to_its_title_as_the_tables_spell_it():
    assert len({preset_key(p) for p in PRESETS}) == len(PRESETS)  # no two presets share a spelling
    for name, p in PRESETS.items():
        for spelling in (name, name.upper(), p.title, p.title.lower(), p.title.replace("-", " ")):
            assert get_preset(spelling) is p, spelling
    assert get_preset("llama-3-8b") is PRESETS["llama3-8b"]
    assert get_preset("Qwen 2.5 7B") is PRESETS["qwen2.5-7b"]
    assert get_preset("gpt-3-175b") is PRESETS["gpt3-175b"]


def test_punctuation_does_not_count_but_letters_and_digits_do():
    assert preset_key("Llama-3-8B") == preset_key("llama3_8b") == "llama38b"
    with pytest.raises(ConfigError):
        get_preset("llama-3-70b")  # another model, not a spelling of Llama-3-8B


def test_an_unknown_name_lists_the_near_matches_first():
    with pytest.raises(ConfigError, match=r"did you mean mistral-7b") as e:
        get_preset("mistral-8b")
    assert "choose one of: bert-base" in str(e.value)
    assert near_presets("llama3-7b")[0] == "llama3-8b"
    assert near_presets("bert")[0] == "bert-base"
    with pytest.raises(ConfigError, match="unknown preset 'zzzz'; choose one of"):
        get_preset("zzzz")  # nothing near: the list only
