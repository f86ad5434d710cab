"""--hf-config: a model's config.json gives the layer of the matching preset; a bad one is a one-line error."""

import json
import math
import os
import re
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

DATA = Path(__file__).parent / "data" / "hf"  # extra/: families the book's table (the top folder) leaves out


def layer(*argv):
    return config_from_args(build_parser().parse_args(["law", *argv]))


def status_of(argv):
    """The exit status of ``main(argv)``, whether it returns it or raises SystemExit."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


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
    for path in DATA.rglob("*.json"):
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
    assert status_of(["compare", "--hf-config", str(path), "--seeds", "1"]) == 2
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
    # MPT-7B: n_heads, d_model, max_seq_len; attn_config with ALiBi (MPT's positions)
    ("extra/mpt-7b.json", 2048, 4096, 32, 32, 128, ("attn_config.alibi",)),
    # DBRX: 48 heads, attn_config.kv_n_heads 8 (GQA), clip_qkv 8, context 32k capped at d
    ("extra/dbrx-base.json", min(32768, 6144), 6144, 48, 8, 128, ("attn_config.clip_qkv",)),
    # Whisper large-v3, the encoder (the default stack): 1500 audio positions capped at d = 1280
    ("extra/whisper-large-v3.json", min(1500, 1280), 1280, 20, 20, 64, ()),
    ("extra/bart-large.json", 1024, 1024, 16, 16, 64, ()),  # the encoder: 16 heads, 1024 positions
    # vision transformers: (224 / 16)^2 = 196 patches, plus the class token (DeiT: class and distillation)
    ("extra/vit-base-patch16-224.json", 196 + 1, 768, 12, 12, 64, ()),
    ("extra/deit-base-distilled-patch16-224.json", 196 + 2, 768, 12, 12, 64, ()),
    ("extra/dinov2-base.json", min((518 // 14) ** 2 + 1, 768), 768, 12, 12, 64, ()),  # 1370 tokens capped at d
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
    shipped = {path.relative_to(DATA).as_posix() for path in DATA.rglob("*.json")}
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


def test_a_text_config_beside_a_full_top_level_is_named_as_not_read():
    top = dims_from_hf_config({**BASE, "text_config": {"hidden_size": 64, "num_attention_heads": 2}})
    (note,) = [note for note in top.notes if "text_config" in note]
    assert note.startswith("read the top level") and "text_config is not read" in note
    assert "hidden_size=64, num_attention_heads=2" in note  # the values it did not use
    same = dims_from_hf_config({**BASE, "text_config": dict(BASE), "vision_config": {"hidden_size": 1024}})
    assert any("text_config is not read (its dimensions are the same)" in note for note in same.notes)
    assert any(note.startswith("not read: vision_config") for note in same.notes)
    # vice versa: a top level with a width but no head count is read from its text_config, saying so
    text = dims_from_hf_config({"hidden_size": 2048, "text_config": {**BASE, "hidden_size": 1536}})
    assert (text.d, text.h) == (1536, 12)
    assert "the top level has no head count (only hidden_size=2048): read from text_config" in text.notes


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


# --- attention blocks (MPT, DBRX) -------------------------------------------------------------------------


def test_mpt_and_dbrx_read_attn_config_field_by_field(capsys):
    cfg = layer("--hf-config", str(DATA / "extra/dbrx-base.json"))
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (6144, 6144, 48, 8, 128)
    err = capsys.readouterr().err
    assert "read d_model=6144, n_heads=48, attn_config.kv_n_heads=8, max_seq_len=32768" in err
    assert "not modelled: attn_config.clip_qkv=8: queries, keys and values are clipped to [-8, 8]" in err
    for file in ("extra/dbrx-base.json", "extra/mpt-7b.json"):
        raw = read_hf_config(DATA / file)
        dims = read_and_dims(file)
        text = "\n".join(dims.notes)
        for field in raw["attn_config"]:  # each field named in full, with its value or judgement
            assert re.search(rf"attn_config\.{field}=", text), (file, field)
        assert "attn_config={" not in text and "attn_config=" not in text.replace("attn_config.", "")
    mpt = read_and_dims("extra/mpt-7b.json")
    assert (mpt.n, mpt.d, mpt.h, mpt.h_kv) == (2048, 4096, 32, 32)
    line = mpt.unmodelled[0]
    assert line.startswith("attn_config.alibi=true: a fixed bias") and "attn_config.alibi_bias_max=8" in line
    left = next(note for note in mpt.notes if note.startswith("attn_config: left as they are"))
    assert "attn_config.qk_ln=false (off)" in left and "attn_config.clip_qkv=null (off)" in left
    assert "attn_config.attn_pdrop=0 (dropout)" in left
    rope = next(note for note in read_and_dims("extra/dbrx-base.json").notes if "rope_theta" in note)
    assert "attn_config.rope_theta=500000 (rotary positions" in rope


def test_a_known_head_count_beside_attn_config_kv_heads():
    # the head count under a top-level name, the key/value heads in attn_config: GQA, not h_KV = h
    dims = dims_from_hf_config(
        {"num_attention_heads": 48, "d_model": 6144, "max_seq_len": 32768, "attn_config": {"kv_n_heads": 8}}
    )
    assert (dims.h, dims.h_kv) == (48, 8)
    assert "attn_config.kv_n_heads=8" in dims.notes[0]
    block = dims_from_hf_config({**BASE, "attention_config": {"kv_n_heads": 4, "qk_ln": True, "mystery": 1}})
    assert block.h_kv == 4
    assert block.unmodelled_fields == ("attention_config.qk_ln", "attention_config.mystery")
    assert "attention_config.mystery=1: not recognised" in block.unmodelled[1]
    with pytest.raises(ConfigError, match="num_key_value_heads=4 and attn_config.kv_n_heads=8 disagree"):
        dims_from_hf_config({**BASE, "num_key_value_heads": 4, "attn_config": {"kv_n_heads": 8}})
    with pytest.raises(ConfigError, match="alibi=false and attn_config.alibi=true disagree"):
        dims_from_hf_config({**BASE, "alibi": False, "attn_config": {"alibi": True}})
    with pytest.raises(ConfigError, match="field 'attn_config' must be a JSON object, got 'alibi'"):
        dims_from_hf_config({**BASE, "attn_config": "alibi"})


@pytest.mark.parametrize(
    "block, h_kv, note",
    [
        ({"attn_type": "multihead_attention", "kv_n_heads": 1}, 12, "attn_config.kv_n_heads=1 is unused"),
        ({"attn_type": "multiquery_attention"}, 1, "h_KV = 1 (multi-query attention)"),
        ({"attn_type": "grouped_query_attention", "kv_n_heads": 4}, 4, "attn_config.kv_n_heads=4"),
    ],
)
def test_mpt_attn_type_decides_the_key_value_heads(block, h_kv, note):
    dims = dims_from_hf_config({**BASE, "attn_config": block})
    assert dims.h_kv == h_kv and any(note in line for line in dims.notes)


def test_mpt_attention_fields_that_change_the_layer():
    dims = dims_from_hf_config(
        {**BASE, "attn_config": {"softmax_scale": 0.25, "prefix_lm": True, "qk_gn": True, "sliding_window_size": -1}}
    )
    assert dims.unmodelled_fields == ("attn_config.softmax_scale", "attn_config.qk_gn", "attn_config.prefix_lm")
    assert "beta = 2 in the paper's form" in dims.unmodelled[0]  # 0.25 sqrt(64)
    assert "attn_config.sliding_window_size=-1: no sliding window" in dims.notes
    with pytest.raises(ConfigError, match="attn_config.attn_type='torch' is not one of multihead_attention"):
        dims_from_hf_config({**BASE, "attn_config": {"attn_type": "torch"}})
    with pytest.raises(ConfigError, match="grouped_query_attention and no key/value head count.*--h-kv"):
        dims_from_hf_config({**BASE, "attn_config": {"attn_type": "grouped_query_attention"}})


# --- encoder-decoders: --stack ------------------------------------------------------------------------------


def test_whisper_reads_the_encoder_by_default_and_the_decoder_with_stack(capsys):
    cfg = layer("--hf-config", str(DATA / "extra/whisper-large-v3.json"))
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (1280, 1280, 20, 20, 64)
    err = capsys.readouterr().err
    assert "read d_model=1280, encoder_attention_heads=20, max_source_positions=1500" in err
    assert "read the encoder stack" in err and "(the default; --stack decoder reads the decoder's)" in err
    assert "decoder_attention_heads=20, max_target_positions=448 not read" in err
    cfg = layer("--hf-config", str(DATA / "extra/whisper-large-v3.json"), "--stack", "decoder")
    assert (cfg.n, cfg.d, cfg.h, cfg.d_k) == (448, 1280, 20, 64)
    err = capsys.readouterr().err
    assert "read d_model=1280, decoder_attention_heads=20, max_target_positions=448" in err
    assert "read the decoder stack, its self-attention (causal; its cross-attention" in err
    bart = read_and_dims("extra/bart-large.json")
    assert any("read the encoder stack" in note for note in bart.notes)
    decoder = dims_from_hf_config(read_hf_config(DATA / "extra/bart-large.json"), stack="decoder")
    assert (decoder.n, decoder.h) == (1024, 16) and "decoder_attention_heads=16" in decoder.notes[0]


def test_t5_and_sub_configuration_stacks():
    t5 = read_hf_config(DATA / "t5-3b.json")
    notes = dims_from_hf_config(t5).notes
    assert any("whose stacks share these dimensions: read the encoder's self-attention" in n for n in notes)
    decoder = dims_from_hf_config(t5, stack="decoder")
    assert decoder.d_k == 128 and any("read the decoder's self-attention (causal" in n for n in decoder.notes)
    # EncoderDecoderModel: one sub-configuration per stack
    pair = {
        "model_type": "encoder-decoder",
        "is_encoder_decoder": True,
        "encoder": {**BASE, "model_type": "bert"},
        "decoder": {"n_embd": 1024, "n_head": 16, "n_positions": 1024, "model_type": "gpt2"},
    }
    assert dims_from_hf_config(pair).d == 768
    decoder = dims_from_hf_config(pair, stack="decoder")
    assert (decoder.d, decoder.h) == (1024, 16) and "read the 'decoder' sub-configuration" in decoder.notes[1]


def test_stack_is_refused_for_a_config_of_one_stack(capsys):
    with pytest.raises(ConfigError, match="--stack decoder: not an encoder-decoder .*leave --stack out"):
        layer("--hf-config", str(DATA / "gpt2.json"), "--stack", "decoder")
    trocr = {"d_model": 1024, "decoder_attention_heads": 16, "decoder_layers": 12, "max_position_embeddings": 512}
    dims = dims_from_hf_config(trocr)  # one stack, named
    assert dims.h == 16 and any(n.startswith("one stack, the decoder (decoder_attention_heads)") for n in dims.notes)
    with pytest.raises(ConfigError, match="--stack encoder: no encoder_attention_heads field; the config has only"):
        dims_from_hf_config(trocr, stack="encoder")
    with pytest.raises(ConfigError, match="--stack decoder needs --hf-config"):
        layer("--preset", "bert-base", "--stack", "decoder")
    assert status_of(["law", "--hf-config", str(DATA / "extra/vit-base-patch16-224.json"), "--stack", "encoder"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m gelib law: error: ") and "not an encoder-decoder" in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_stack_flag_in_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["law", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--stack {encoder,decoder}" in text and "encoder (the default)" in text


# --- the command line fills what the file lacks -------------------------------------------------------------


def test_flags_fill_fields_the_config_lacks(tmp_path, capsys):
    dbrx = read_hf_config(DATA / "extra/dbrx-base.json")
    del dbrx["n_heads"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dbrx))
    cfg = layer("--hf-config", str(path), "--h", "48")
    assert (cfg.n, cfg.d, cfg.h, cfg.h_kv, cfg.d_k) == (6144, 6144, 48, 8, 128)  # the file's 8 KV heads kept
    err = capsys.readouterr().err
    assert "h = 48 from --h: the config has no attention-head count field" in err
    assert "overridden on the command line" not in err
    with pytest.raises(ConfigError, match="no attention-head count field .*; give it with --h"):
        layer("--hf-config", str(path))
    # a width, a head width that d / h does not give, key/value heads, a context length
    dims = dims_from_hf_config({"num_attention_heads": 12, "max_position_embeddings": 512}, d=768)
    assert (dims.d, dims.d_k, dims.filled) == (768, 64, ("d",))
    odd = {"hidden_size": 768, "num_attention_heads": 10, "max_position_embeddings": 512}
    with pytest.raises(ConfigError, match="is not divisible by num_attention_heads=10; give the head width with --dk"):
        dims_from_hf_config(odd)
    assert dims_from_hf_config(odd, d_k=80).d_k == 80
    assert dims_from_hf_config(BASE, h_kv=4).h_kv == 4 and dims_from_hf_config(BASE, h_kv=4).filled == ("h_kv",)
    assert dims_from_hf_config({**BASE, "num_key_value_heads": 2}, h_kv=4).h_kv == 2  # read: the caller overrides
    cfg = layer("--hf-config", str(DATA / "falcon-40b.json"), "--n", "2048")
    err = capsys.readouterr().err
    assert cfg.n == 2048 and "n = 2048 from --n: the config has no context length field" in err
    assert "overridden" not in err
    with pytest.raises(ConfigError, match="--h must be a positive integer"):
        dims_from_hf_config(BASE, h=0)


# --- vision transformers: the token count -------------------------------------------------------------------


def test_vision_transformers_count_patches_and_class_tokens(capsys):
    cfg = layer("--hf-config", str(DATA / "extra/vit-base-patch16-224.json"))  # no --n needed
    assert (cfg.n, cfg.d, cfg.h, cfg.d_k) == (197, 768, 12, 64)
    err = capsys.readouterr().err
    assert "read hidden_size=768, num_attention_heads=12, image_size=224, patch_size=16" in err
    assert "197 tokens, (224 / 16)^2 = 196 patches and the class token" in err
    deit = read_and_dims("extra/deit-base-distilled-patch16-224.json")
    assert deit.context == 198 and any("the class and distillation tokens (DeiT)" in n for n in deit.notes)
    dinov2 = read_and_dims("extra/dinov2-base.json")
    assert (dinov2.context, dinov2.n) == (1370, 768)
    assert any("1370 tokens, (518 / 14)^2 = 1369 patches and the class token" in n for n in dinov2.notes)
    vit = {"model_type": "vit", "hidden_size": 1024, "num_attention_heads": 16, "patch_size": 16}
    registers = {**vit, "model_type": "dinov2_with_registers", "image_size": 224, "num_register_tokens": 4}
    assert dims_from_hf_config(registers).n == 196 + 1 + 4
    assert dims_from_hf_config({**vit, "image_size": [384, 224]}).n == 24 * 14 + 1
    assert dims_from_hf_config({**vit, "image_size": 230}).n == 14 * 14 + 1  # the grid rounded down
    beit = dims_from_hf_config({**vit, "model_type": "beit", "image_size": 224, "use_relative_position_bias": True})
    assert beit.n == 197 and beit.unmodelled_fields == ("use_relative_position_bias",)
    # a vision model of another family: --n, with a hint
    with pytest.raises(ConfigError, match="give the context length with --n .of a vision model: its token count"):
        dims_from_hf_config({**vit, "model_type": "clip_vision_model", "image_size": 224})
    with pytest.raises(ConfigError, match="patch_size=16 is larger than image_size=8"):
        dims_from_hf_config({**vit, "image_size": 8})


# --- absurd values: one-line errors naming the field ---------------------------------------------------------


def test_a_huge_integer_in_the_file_is_refused_naming_the_field(tmp_path, capsys):
    path = tmp_path / "config.json"
    huge = "9" * 5000  # past Python's limit of 4300 digits for int(str)
    path.write_text(f'{{"hidden_size": {huge}, "num_attention_heads": 12, "max_position_embeddings": 512}}')
    with pytest.raises(ConfigError, match="field 'hidden_size' is an integer of 5000 digits"):
        read_hf_config(path)
    path.write_text(json.dumps({**BASE, "attn_config": {"kv_n_heads": 8}}).replace("8}", f"-{huge}}}"))
    with pytest.raises(ConfigError, match="field 'attn_config.kv_n_heads' is an integer of 5000 digits"):
        read_hf_config(path)
    assert status_of(["law", "--hf-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "attn_config.kv_n_heads" in err and "Traceback" not in err


def value_id(value):
    """A test id (pytest's str() of a 5000-digit integer would fail)."""
    return f"int{len(bin(value))}bits" if isinstance(value, int) and abs(value) > 2**64 else repr(value)


@pytest.mark.parametrize(
    "value", [10**5000, 10**400, 2**31, -1, 0, 768.0, 1.5, math.inf, math.nan, True, "768", [768], None], ids=value_id
)
def test_an_absurd_width_is_a_config_error_naming_it(value):
    cfg = {**BASE, "hidden_size": value}
    if value is None:  # null is absent: the width is missing
        with pytest.raises(ConfigError, match="no model width field"):
            dims_from_hf_config(cfg)
        return
    with pytest.raises(ConfigError) as e:
        dims_from_hf_config(cfg)
    message = str(e.value)
    assert "field 'hidden_size' must be a positive integer" in message and len(message) < 300


VIT = {"model_type": "vit", "hidden_size": 768, "num_attention_heads": 12, "image_size": 224, "patch_size": 16}
WHISPER = {"d_model": 1280, "encoder_attention_heads": 20, "max_source_positions": 1500}
# (configuration, field, where it goes: None the top level, else the block); every field read that takes a size
SIZES = [
    (BASE, "num_attention_heads", None),
    (BASE, "num_key_value_heads", None),
    (BASE, "head_dim", None),
    (BASE, "v_head_dim", None),
    (BASE, "max_position_embeddings", None),
    (BASE, "sliding_window", None),
    (BASE, "relative_attention_num_buckets", None),
    (BASE, "kv_n_heads", "attn_config"),
    (BASE, "sliding_window_size", "attn_config"),
    ({"d_model": 768, "n_heads": 12, "max_seq_len": 512}, "n_heads", None),
    ({"d_model": 768, "n_heads": 12, "max_seq_len": 512}, "max_seq_len", None),
    (WHISPER, "encoder_attention_heads", None),
    (WHISPER, "max_source_positions", None),
    (VIT, "image_size", None),
    (VIT, "patch_size", None),
]


@pytest.mark.parametrize("cfg, field, block", SIZES)
@pytest.mark.parametrize("value", [10**5000, 2**31, -2, 0, 64.0, True, "64"], ids=value_id)
def test_every_size_read_refuses_absurd_values_naming_the_field(cfg, field, block, value):
    cfg = {**cfg, block: {field: value}} if block else {**cfg, field: value}
    with pytest.raises(ConfigError) as e:
        dims_from_hf_config(cfg)
    assert repr(f"{block}.{field}" if block else field) in str(e.value)


@pytest.mark.parametrize(
    "field, block, values",
    [
        ("attn_logit_softcapping", None, [-1.0, 0, math.inf, math.nan, True, "50"]),
        ("query_pre_attn_scalar", None, [-1.0, 0, math.inf, True, "64"]),
        ("attention_multiplier", None, [-1.0, 0, math.inf, 1e308, True]),
        ("softmax_scale", "attn_config", [-1.0, 0, math.inf, 1e308, "0.1"]),
        ("clip_qkv", "attn_config", [-8, 0, math.nan, True]),
        ("alibi_bias_max", "attn_config", [-8, 0, math.nan]),
        ("multi_query", None, [1, "true"]),
        ("alibi", "attn_config", [1, "true"]),
        ("qk_ln", "attn_config", [0, "false"]),
        ("is_encoder_decoder", None, [1, "yes"]),
        ("use_relative_position_bias", None, [1]),
        ("model_type", None, [1, ["t5"], {"t5": 1}]),
        ("position_embedding_type", None, [3, ["relative_key"]]),
        ("attn_type", "attn_config", [1, ["multihead_attention"], "torch"]),
        ("layer_types", None, ["full_attention", [1, 2]]),
        ("text_config", None, ["llama", [1]]),
    ],
)
def test_every_other_field_read_refuses_absurd_values_naming_the_field(field, block, values):
    for value in values:
        extra = {"alibi": True} if field == "alibi_bias_max" else {}
        cfg = {**BASE, block: {field: value, **extra}} if block else {**BASE, field: value}
        with pytest.raises(ConfigError) as e:
            dims_from_hf_config(cfg)
        assert (f"{block}.{field}" if block else field) in str(e.value), value
