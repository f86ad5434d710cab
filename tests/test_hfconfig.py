"""--hf-config: a model's config.json gives the layer of the matching preset; a bad one is a one-line error."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bookrun.cli import build_parser, main
from bookrun.cli.common import config_from_args
from gelib.config import ConfigError
from gelib.hfconfig import MAX_BYTES, HFDims, dims_from_hf_config, read_hf_config
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


# --- every shipped config: the published dimensions ----------------------------------------------------------

# (file, n, d, h, h_kv, d_k, fields named as not modelled), from the model cards and papers, not from the parser:
# n is the published context length capped at d (n <= d).
PUBLISHED = [
    ("bert-base-uncased.json", 512, 768, 12, 12, 64, ()),
    ("falcon-7b.json", 2048, 4544, 71, 1, 64, ()),  # MQA
    ("gpt2.json", min(1024, 768), 768, 12, 12, 64, ()),
    ("llama-3-8b.json", min(8192, 4096), 4096, 32, 8, 128, ()),
    ("llama-3.1-8b.json", min(131072, 4096), 4096, 32, 8, 128, ()),  # rope_scaling is positional: not named
    ("mistral-7b.json", min(32768, 4096), 4096, 32, 8, 128, ()),  # window 4096 = n: no effect
    ("mixtral-8x7b.json", min(32768, 4096), 4096, 32, 8, 128, ()),  # sliding_window null
    ("qwen2.5-7b.json", min(131072, 3584), 3584, 28, 4, 128, ()),
    # T5-3B: 32 heads of d_kv = 128 (h d_K = 4096 != d_model = 1024); relative positions, unscaled scores
    ("t5-3b.json", 512, 1024, 32, 32, 128, ("model_type", "relative_attention_num_buckets")),
    ("gpt-neox-20b.json", 2048, 6144, 64, 64, 96, ()),
    ("phi-3-mini-4k-instruct.json", min(4096, 3072), 3072, 32, 32, 96, ("sliding_window",)),  # 2047 < 3072
    ("gemma-2b.json", 2048, 2048, 8, 1, 256, ()),
    # Gemma-2-9B: window 4096 >= n = 3584, query_pre_attn_scalar 256 = head_dim: only the soft-capping
    ("gemma-2-9b.json", min(8192, 3584), 3584, 16, 8, 256, ("attn_logit_softcapping",)),
    (
        "gemma-2-27b.json",
        min(8192, 4608),
        4608,
        32,
        16,
        128,
        ("sliding_window", "attn_logit_softcapping", "query_pre_attn_scalar"),  # window 4096 < 4608, 144 != 128
    ),
    ("gemma-3-1b-it.json", min(32768, 1152), 1152, 4, 1, 256, ("sliding_window", "model_type")),  # QK-norm
    ("gemma-3-4b-it.json", min(131072, 2560), 2560, 8, 4, 256, ("sliding_window", "model_type")),  # text_config
    ("llava-1.5-7b-hf.json", 4096, 4096, 32, 32, 128, ()),  # text_config: Vicuna-7B (Llama-2-7B)
    ("opt-1.3b.json", 2048, 2048, 32, 32, 64, ()),
    ("starcoder.json", min(8192, 6144), 6144, 48, 1, 128, ()),  # gpt_bigcode, multi_query
]
REFUSED = {"deepseek-v2-lite.json": "kv_lora_rank=512", "falcon-40b.json": "no context length field"}


@pytest.mark.parametrize("file, n, d, h, h_kv, d_k, unmodelled", PUBLISHED)
def test_every_shipped_config_reads_the_published_dimensions(file, n, d, h, h_kv, d_k, unmodelled):
    dims = dims_from_hf_config(read_hf_config(DATA / file), source=file)
    assert (dims.n, dims.d, dims.h, dims.h_kv, dims.d_k) == (n, d, h, h_kv, d_k)
    assert dims.unmodelled_fields == unmodelled
    assert [f"not modelled: {line}" for line in dims.unmodelled] == [
        note for note in dims.notes if note.startswith("not modelled: ")
    ]


def test_every_shipped_config_is_tested_and_listed_in_sources():
    shipped = {path.name for path in DATA.glob("*.json")}
    assert shipped == {row[0] for row in PUBLISHED} | set(REFUSED)
    sources = (DATA / "SOURCES.md").read_text()
    for name in shipped:
        assert f"`{name}`" in sources
        repo = read_hf_config(DATA / name)["_source"].split("https://huggingface.co/")[1].split("/blob/")[0]
        assert f"`{repo}`" in sources


def test_t5_reads_d_kv_as_the_head_width(capsys):
    cfg = layer("--hf-config", str(DATA / "t5-3b.json"))
    assert (cfg.n, cfg.d, cfg.h, cfg.d_k, cfg.d_v) == (512, 1024, 32, 128, 128)  # not 1024 / 32 = 32
    err = capsys.readouterr().err
    assert "read d_model=1024, num_heads=32, d_kv=128, n_positions=512" in err
    assert "not modelled: relative_attention_num_buckets=32" in err
    assert "not modelled: model_type=t5: the scores are Q K^T without 1/sqrt(d_K)" in err
    # T5 v1.1 has no context field: an error that says so, unless --n gives it
    t5 = read_hf_config(DATA / "t5-3b.json")
    del t5["n_positions"]
    with pytest.raises(ConfigError, match="no context length field .*give the context length with --n"):
        dims_from_hf_config(t5)
    assert dims_from_hf_config(t5, n=256).n == 256


def test_latent_attention_is_refused_naming_its_fields(capsys):
    with pytest.raises(ConfigError) as e:
        dims_from_hf_config(read_hf_config(DATA / "deepseek-v2-lite.json"), source="deepseek-v2-lite.json")
    message = str(e.value)
    assert "\n" not in message and "multi-head latent attention" in message
    for field in ("kv_lora_rank=512", "q_lora_rank=null", "qk_rope_head_dim=64", "v_head_dim=128"):
        assert field in message
    try:  # law reports its own errors; the other commands through SystemExit
        status = main(["law", "--hf-config", str(DATA / "deepseek-v2-lite.json")])
    except SystemExit as e:
        status = e.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kv_lora_rank=512" in err


def test_a_sliding_window_shorter_than_n_is_named(capsys):
    layer("--hf-config", str(DATA / "phi-3-mini-4k-instruct.json"))
    err = capsys.readouterr().err
    assert "not modelled: sliding_window=2047: shorter than n = 3072" in err
    # judged against the n of the layer: at --n 1024 the window covers the context
    layer("--hf-config", str(DATA / "phi-3-mini-4k-instruct.json"), "--n", "1024")
    err = capsys.readouterr().err
    assert "not modelled" not in err and "sliding_window=2047 >= n = 1024" in err
    qwen = {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 131072, "sliding_window": 1024}
    assert dims_from_hf_config({**qwen, "use_sliding_window": False}).unmodelled == ()
    assert dims_from_hf_config({**qwen, "use_sliding_window": True}).unmodelled_fields == ("sliding_window",)
    assert dims_from_hf_config(qwen).unmodelled_fields == ("sliding_window",)
    with pytest.raises(ConfigError, match="field 'use_sliding_window' must be true or false, got 'no'"):
        dims_from_hf_config({**qwen, "use_sliding_window": "no"})


BASE = {"hidden_size": 768, "num_attention_heads": 12, "max_position_embeddings": 512}


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"n_embd": 1024}, "hidden_size=768 and n_embd=1024 disagree"),
        ({"d_model": 512}, "hidden_size=768 and d_model=512 disagree"),
        ({"n_head": 16}, "num_attention_heads=12 and n_head=16 disagree"),
        ({"num_key_value_heads": 4, "num_kv_heads": 2}, "num_key_value_heads=4 and num_kv_heads=2 disagree"),
        ({"head_dim": 64, "d_kv": 128}, "head_dim=64 and d_kv=128 disagree"),
        ({"n_ctx": 1024}, "max_position_embeddings=512 and n_ctx=1024 disagree"),
        ({"sliding_window": 256, "sliding_window_size": 128}, "sliding_window=256 and sliding_window_size=128"),
        ({"multi_query": True, "num_key_value_heads": 4}, "multi_query=true and num_key_value_heads=4 disagree"),
        ({"multi_query": True, "num_kv_heads": 2}, "multi_query=true and num_kv_heads=2 disagree"),
        ({"multi_query": "true"}, "field 'multi_query' must be true or false, got 'true'"),
        ({"multi_query": 1}, "field 'multi_query' must be true or false, got 1"),
        ({"alibi": "yes"}, "field 'alibi' must be true or false"),
        ({"attn_logit_softcapping": "50"}, "field 'attn_logit_softcapping' must be a positive number or null"),
        ({"head_dim": 0}, "field 'head_dim' must be a positive integer, got 0"),
    ],
)
def test_conflicting_or_invalid_fields_are_one_line_errors_naming_them(extra, message):
    with pytest.raises(ConfigError) as e:
        dims_from_hf_config({**BASE, **extra})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_agreeing_synonyms_and_falcon_new_decoder_architecture(capsys):
    same = dims_from_hf_config({**BASE, "n_embd": 768, "n_head": 12, "n_ctx": 512, "n_positions": 512})
    assert (same.n, same.d, same.h) == (512, 768, 12)
    assert dims_from_hf_config({**BASE, "multi_query": True, "num_key_value_heads": 1}).h_kv == 1
    assert dims_from_hf_config({**BASE, "multi_query": False, "num_key_value_heads": 4}).h_kv == 4
    assert dims_from_hf_config({**BASE, "multi_query": False}).h_kv == 12
    # Falcon-40B: new_decoder_architecture, num_kv_heads 8 and multi_query true (transformers uses the 8),
    # and no context field (transformers' FalconConfig default is 2048): --n gives it
    with pytest.raises(ConfigError, match="no context length field"):
        read_and_dims("falcon-40b.json")
    cfg = layer("--hf-config", str(DATA / "falcon-40b.json"), "--n", "2048")
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (2048, 8192, 128, 8, 64)
    assert "multi_query is ignored" in capsys.readouterr().err
    no_kv = {**BASE, "new_decoder_architecture": True, "multi_query": True}
    assert dims_from_hf_config(no_kv).h_kv == 12  # as transformers' Falcon: multi_query only without it


def read_and_dims(file):
    return dims_from_hf_config(read_hf_config(DATA / file), source=file)


@pytest.mark.parametrize(
    "extra, field, text",
    [
        ({"attn_logit_softcapping": 30.0}, "attn_logit_softcapping", "30 tanh(s / 30)"),
        ({"query_pre_attn_scalar": 144}, "query_pre_attn_scalar", "beta = 0.6667"),  # sqrt(64 / 144)
        ({"attention_multiplier": 0.015625}, "attention_multiplier", "beta = 0.125"),  # 0.015625 sqrt(64)
        ({"scale_attn_weights": False}, "scale_attn_weights", "beta = sqrt(64) = 8"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx", "divided by l + 1"),
        ({"alibi": True}, "alibi", "ALiBi"),
        ({"model_type": "bloom"}, "model_type", "ALiBi"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type", "offset j - i"),
        ({"qk_layernorm": True}, "qk_layernorm", "normalised"),
        ({"use_qk_norm": True}, "use_qk_norm", "normalised"),
        ({"model_type": "qwen3"}, "model_type", "q_norm, k_norm"),
        ({"clip_qkv": 8.0}, "clip_qkv", "clipped to [-8, 8]"),
        ({"layer_types": ["linear_attention", "full_attention"]}, "layer_types", "linear_attention layers"),
        ({"multi_query_attention": True, "multi_query_group_num": 2}, "multi_query_attention", "not recognised"),
        ({"attention_window": [512] * 12}, "attention_window", "not recognised"),
    ],
)
def test_fields_that_change_attention_are_named(extra, field, text):
    dims = dims_from_hf_config({**BASE, **extra})
    assert field in dims.unmodelled_fields
    line = dims.unmodelled[dims.unmodelled_fields.index(field)]
    assert text in line and "\n" not in line
    assert f"not modelled: {line}" in dims.notes
    assert dims.as_dict()["unmodelled"] == list(dims.unmodelled)


def test_fields_that_leave_the_layer_as_it_is_are_not_named():
    harmless = {
        "attention_dropout": 0.1,
        "attention_bias": True,
        "attention_softmax_in_fp32": True,
        "final_logit_softcapping": 30.0,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "rope_theta": 500000.0,
        "position_embedding_type": "absolute",
        "attn_logit_softcapping": None,
        "sliding_window": None,
        "query_pre_attn_scalar": 64,  # = d_K
        "alibi": False,
        "scale_attn_weights": True,
        "layer_types": ["sliding_attention", "full_attention"],
        "use_bidirectional_attention": False,
    }
    assert dims_from_hf_config({**BASE, **harmless}).unmodelled == ()


def test_value_head_width_is_read():
    dims = dims_from_hf_config({**BASE, "head_dim": 64, "v_head_dim": 32})
    assert (dims.d_k, dims.d_v) == (64, 32) and dims.fields()["d_v"] == 32
    assert dims.unmodelled == ()
    assert "d_v" not in dims_from_hf_config(BASE).fields() and dims_from_hf_config(BASE).as_dict()["d_v"] == 64


def test_multimodal_text_config(capsys):
    # LLaVA-1.5: the text_config gives only the context; hidden 4096 and 32 heads are LlamaConfig's defaults
    cfg = layer("--hf-config", str(DATA / "llava-1.5-7b-hf.json"))
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (4096, 4096, 32, 32, 128)  # not the vision tower's 1024/16
    err = capsys.readouterr().err
    assert "read from text_config" in err and "LlamaConfig: hidden_size=4096, num_attention_heads=32" in err
    # Gemma 3 4B: 8 heads, 4 KV heads, head_dim 256 are Gemma3TextConfig's defaults; its own window 1024 is kept
    dims = read_and_dims("gemma-3-4b-it.json")
    assert any("Gemma3TextConfig" in note and "num_key_value_heads=4" in note for note in dims.notes)
    assert dims.unmodelled[0].startswith("sliding_window=1024: shorter than n = 2560")
    # a text_config of a family without known defaults: the missing field is named, in text_config
    with pytest.raises(ConfigError, match=r"\(text_config\): no attention-head count field"):
        dims_from_hf_config({"text_config": {"model_type": "mistral", "hidden_size": 4096}})
    # a top level with width and heads is read as it is, even beside a text_config
    top = dims_from_hf_config({**BASE, "text_config": {"hidden_size": 64, "num_attention_heads": 2}})
    assert top.d == 768


def test_hf_dims_on_the_namespace():
    args = build_parser().parse_args(["law", "--hf-config", str(DATA / "gemma-2-9b.json")])
    config_from_args(args)
    assert isinstance(args.hf_dims, HFDims) and args.hf_dims.unmodelled_fields == ("attn_logit_softcapping",)
    json.dumps(args.hf_dims.as_dict())  # JSON-ready
    args = build_parser().parse_args(["law", "--preset", "bert-base"])
    args.hf_dims = "stale"
    config_from_args(args)
    assert args.hf_dims is None


# --- files that are not a config.json ----------------------------------------------------------------------


def read_in_thread(path, timeout=10.0):
    """read_hf_config(path) in a thread, so that a read that blocks fails the test instead of hanging it."""
    out = {}

    def run():
        try:
            out["value"] = read_hf_config(path)
        except Exception as e:  # handed to the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"read_hf_config({path}) blocked"
    return out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer
    error = read_in_thread(fifo)["error"]
    assert isinstance(error, ConfigError) and "not a regular file (a FIFO)" in str(error)


def test_a_directory_a_device_a_huge_file_and_non_utf8_are_refused(tmp_path):
    error = read_in_thread(tmp_path)["error"]
    assert isinstance(error, ConfigError) and "not a regular file (a directory)" in str(error)
    if os.path.exists("/dev/zero"):  # endless: reading it would never finish
        error = read_in_thread("/dev/zero")["error"]
        assert isinstance(error, ConfigError) and "not a regular file (a character device)" in str(error)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ConfigError, match=f"{MAX_BYTES + 1} bytes, more than a config.json holds"):
        read_hf_config(huge)
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"model_type": "caf\u00e9"}'.encode("latin-1"))
    with pytest.raises(ConfigError) as e:
        read_hf_config(latin1)
    assert str(e.value).endswith("not UTF-8 text (byte 0xe9 at offset 19)") and "\n" not in str(e.value)
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(BASE).encode())
    assert read_hf_config(bom) == BASE


def test_a_key_repeated_with_different_values_is_refused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 768, "num_attention_heads": 12, "hidden_size": 1024}')
    with pytest.raises(ConfigError, match="the key 'hidden_size' appears twice, as 768 and 1024"):
        read_hf_config(path)
    path.write_text('{"hidden_size": 768, "hidden_size": 768}')
    assert read_hf_config(path) == {"hidden_size": 768}
    path.write_text("[" * 100_000)
    with pytest.raises(ConfigError, match="JSON nested too deeply"):
        read_hf_config(path)


def test_command_line_errors_for_bad_files_are_one_line(tmp_path):
    (tmp_path / "bad.json").write_bytes(b"\xff\xfe{}")
    cases = [(tmp_path, "a directory"), (tmp_path / "bad.json", "not UTF-8")]
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        cases.append((tmp_path / "fifo", "a FIFO"))
    for target, message in cases:
        res = subprocess.run(
            [sys.executable, "-m", "gelib", "law", "--hf-config", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and message in res.stderr
