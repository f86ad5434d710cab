"""--hf-config: a model's config.json gives the layer of the matching preset; a bad one is a one-line error."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gelib.cli import build_parser, main
from gelib.cli.common import config_from_args
from gelib.config import ConfigError
from gelib.hfconfig import dims_from_hf_config, read_hf_config
from gelib.presets import PRESETS

DATA = Path(__file__).parent / "data" / "hf"


def layer(*argv):
    return config_from_args(build_parser().parse_args(["law", *argv]))


@pytest.mark.parametrize(
    "file, preset",
    [
        ("bert-base-uncased.json", "bert-base"),
        ("falcon-7b.json", "falcon-7b"),  # n_head and multi_query (MQA)
        ("llama-3-8b.json", "llama3-8b"),  # context 8192 capped at d = 4096
        ("mistral-7b.json", "mistral-7b"),
        ("qwen2.5-7b.json", "qwen2.5-7b"),  # 28 heads, 4 KV heads, head size 3584 / 28 = 128
    ],
)
def test_a_config_gives_the_presets_layer(file, preset, capsys):
    assert layer("--hf-config", str(DATA / file)) == PRESETS[preset].config()
    assert "read " in capsys.readouterr().err  # what was read is said


def test_every_shipped_config_names_its_source():
    for path in DATA.glob("*.json"):
        assert read_hf_config(path)["_source"].startswith("the attention fields of https://huggingface.co/")


def test_gpt2_field_names_and_overrides(capsys):
    cfg = layer("--hf-config", str(DATA / "gpt2.json"))  # n_embd, n_head, n_positions 1024 > d = 768
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (768, 768, 12, 12, 64)
    assert "capped at d = 768" in capsys.readouterr().err
    cfg = layer("--hf-config", str(DATA / "gpt2.json"), "--n", "128", "--h", "6")
    assert (cfg.n, cfg.h, cfg.h_kv, cfg.d_k) == (128, 6, 6, 64)  # a new head count without --h-kv: unshared
    assert "overridden on the command line: --n 128, --h 6" in capsys.readouterr().err


def test_head_dim_and_text_config():
    dims = dims_from_hf_config(
        {
            "text_config": {
                "hidden_size": 2048,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "head_dim": 256,
                "max_position_embeddings": 1024,
            }
        }
    )
    assert (dims.n, dims.d, dims.h, dims.h_kv, dims.d_k) == (1024, 2048, 8, 2, 256)
    assert any("text_config" in note for note in dims.notes)


@pytest.mark.parametrize(
    "cfg, message",
    [
        ({"num_attention_heads": 12, "max_position_embeddings": 512}, "no model width field (looked for hidden_size"),
        ({"hidden_size": 768, "max_position_embeddings": 512}, "no attention-head count field"),
        ({"hidden_size": 768, "num_attention_heads": 12}, "no context length field"),
        (
            {"hidden_size": 768, "num_attention_heads": 10, "max_position_embeddings": 512},
            "no 'head_dim' field and hidden_size=768 is not divisible by num_attention_heads=10",
        ),
        (
            {"hidden_size": 768, "num_attention_heads": 12, "num_key_value_heads": 5, "max_position_embeddings": 512},
            "12 attention heads are not divisible by 5 key/value heads",
        ),
        (
            {"hidden_size": "768", "num_attention_heads": 12, "max_position_embeddings": 512},
            "field 'hidden_size' must be a positive integer, got '768'",
        ),
    ],
)
def test_a_config_it_cannot_interpret_names_the_field(cfg, message, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(SystemExit) as e:
        main(["compare", "--hf-config", str(path), "--seeds", "1"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m gelib compare: error: ") and message in err[-1]


def test_bad_files(tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "broken.json").write_text("{")
    for name, message in (
        ("missing.json", "cannot read it"),
        ("list.json", "one JSON object, found list"),
        ("broken.json", "not JSON"),
    ):
        with pytest.raises(ConfigError, match=message):
            read_hf_config(tmp_path / name)
    with pytest.raises(ConfigError, match="not both"):
        layer("--hf-config", str(DATA / "gpt2.json"), "--preset", "bert-base")


def test_command_line_exit_status_and_json_stdout():
    cmd = [
        sys.executable,
        "-m",
        "gelib",
        "law",
        "--hf-config",
        str(DATA / "falcon-7b.json"),
        "--moments",
        "1",
        "--json",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0 and "multi-query attention: h_KV = 1" in res.stderr
    m1 = json.loads(res.stdout)["moments"][0]
    assert m1 == pytest.approx(PRESETS["falcon-7b"].config().first_moment, rel=1e-12)
    res = subprocess.run([*cmd[:5], str(DATA / "nope.json")], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "cannot read it" in res.stderr
