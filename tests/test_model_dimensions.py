"""gelib.model_dimensions against facts it does not compute: the published dimensions of a few models,
the closed-form mean of the limit law, the formula of b(n, d_K), the rank of Y Y^T / n, and the layout
of the table."""

import json
import math
import re
import shutil

import jax
import numpy as np
import pytest

from gelib.model_dimensions import (
    CONFIG_FOLDER,
    HEADER,
    cheap_rows,
    left_out_markdown,
    markdown_table,
    measure_row,
    measure_rows,
    measured_markdown,
    model_rows,
)


@pytest.fixture(scope="module")
def rows():
    return {r.name: r for r in model_rows()}


def _cells(line: str) -> list[str]:
    """The cells of one Markdown table line (an escaped ``\\|`` stays inside its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


# Published dimensions (model cards and papers), not read from the files: n is the context length
# capped at d. (name, n, context, d, h, h_kv, d_k)
PUBLISHED = [
    ("llama-3-8b", 4096, 8192, 4096, 32, 8, 128),  # Llama 3 8B: GQA with 8 KV heads, 8k context
    ("gpt2", 768, 1024, 768, 12, 12, 64),  # GPT-2 small: 1024 positions, width 768
    ("bert-base-uncased", 512, 512, 768, 12, 12, 64),  # BERT-base: 512 positions
    ("falcon-7b", 2048, 2048, 4544, 71, 1, 64),  # Falcon-7B: multi-query attention
]


@pytest.mark.parametrize("name, n, context, d, h, h_kv, d_k", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_dimensions_are_the_published_ones(rows, name, n, context, d, h, h_kv, d_k):
    r = rows[name]
    assert (r.cfg.n, r.context, r.cfg.d, r.cfg.h, r.cfg.h_kv, r.cfg.d_k, r.cfg.d_v, r.cfg.d_o) == (
        n,
        context,
        d,
        h,
        h_kv,
        d_k,
        d_k,
        d,
    )
    assert r.status == "the paper's layer" and not r.unmodelled


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_law_mean_is_the_closed_form(beta):
    """The first moment of the law is (e^{beta^2} - 1) d_O / n, for every layer of the folder."""
    ok = [r for r in model_rows(beta=beta) if r.cfg is not None]
    assert len(ok) >= 6
    for r in ok:
        assert r.cfg.beta == beta
        assert math.isclose(r.moments[0], math.expm1(beta**2) * r.cfg.d / r.cfg.n, rel_tol=1e-12), r.name


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_b_is_the_formula(beta):
    """b(n, d_K) = e^{beta^2} / e_1 (beta^4 / d_K + (3 e_1 - 2 e_2) / n), e_k = e^{k beta^2} - 1;
    at beta = 1 about 1.58 / d_K - 12.1 / n."""
    e1, e2 = math.exp(beta**2) - 1, math.exp(2 * beta**2) - 1
    for r in model_rows(beta=beta):
        if r.cfg is None:
            continue
        b = math.exp(beta**2) / e1 * (beta**4 / r.cfg.d_k + (3 * e1 - 2 * e2) / r.cfg.n)
        assert math.isclose(r.shift_pred, b, rel_tol=1e-12), r.name
        if beta == 1.0:
            assert abs(r.shift_pred - (1.582 / r.cfg.d_k - 12.06 / r.cfg.n)) < 0.01 / r.cfg.d_k + 0.01 / r.cfg.n
        # the exact shift is b up to O(d_K^-2 + n^-2 + (n d_K)^-1); at these sizes well under 1e-2
        assert abs(r.shift_exact - r.shift_pred) < 1e-2, r.name
        assert r.floor == abs(r.shift_exact)


def test_atom_at_zero_is_the_rank_deficit(rows):
    """Y Y^T / n has rank min(n, h d_V, d_O): Gemma 2 27B (h d_V = 4096 < n = d = 4608) has 1/9 of its
    eigenvalues at 0, a layer with h d_V = d_O = n none."""
    ((x, mass),) = rows["gemma-2-27b"].atoms
    assert x == 0 and mass == pytest.approx(1 - 4096 / 4608, abs=1e-12)
    assert rows["llama-3-8b"].atoms == ()
    assert rows["llama-3-8b"].edges[0][0] == pytest.approx(0, abs=1e-6)  # h d_V = d_O = n: a hard edge


def test_sharing_leaves_the_law_unchanged(rows):
    """LLaVA-1.5 (no sharing) has Llama 3 8B's n, d, h and d_K with h_KV = 32 instead of 8: one law."""
    a, b = rows["llama-3-8b"], rows["llava-1.5-7b-hf"]
    assert (a.cfg.h_kv, b.cfg.h_kv) == (8, 32)
    assert a.edges == b.edges and a.atoms == b.atoms and a.moments == b.moments


def _write(folder, name, cfg):
    (folder / f"{name}.json").write_text(json.dumps(cfg))


def test_refused_and_unmodelled_configs_are_rows_with_reasons(tmp_path):
    shutil.copy(CONFIG_FOLDER / "deepseek-v2-lite.json", tmp_path / "mla.json")
    _write(tmp_path, "broken", {"hidden_size": 64})  # no head count
    (tmp_path / "not-json.json").write_text("{")
    _write(tmp_path, "windowed", {"hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 64,
                                  "sliding_window": 16, "attn_logit_softcapping": 30.0})  # fmt: skip
    _write(tmp_path, "plain", {"hidden_size": 128, "num_attention_heads": 4, "max_position_embeddings": 64})
    (tmp_path / "notes.txt").write_text("not a config")
    rows = {r.name: r for r in model_rows(tmp_path)}
    assert sorted(rows) == ["broken", "mla", "not-json", "plain", "windowed"]
    assert rows["mla"].status == "refused" and rows["mla"].reason == "multi-head latent attention"
    assert rows["broken"].reason == "no attention-head count field"
    assert rows["not-json"].reason == "not JSON"
    assert rows["windowed"].status == "dimensions only"
    assert rows["windowed"].unmodelled_fields == ("sliding_window=16", "attn_logit_softcapping=30.0")
    assert rows["plain"].status == "the paper's layer" and rows["plain"].cfg.n == 64

    lines = markdown_table(rows.values()).splitlines()
    assert len(lines) == 2 + len(rows)  # the header, the rule, one line per config
    table = {_cells(line)[0]: dict(zip(HEADER, _cells(line))) for line in lines[2:]}
    assert table["mla"]["not in the paper's model"] == "multi-head latent attention"
    assert table["mla"]["what the result says at this size"] == "refused"
    assert table["windowed"]["not in the paper's model"] == "sliding_window=16, attn_logit_softcapping=30.0"
    assert table["windowed"]["what the result says at this size"].startswith("dims only")
    assert table["plain"]["not in the paper's model"] == "—"

    notes = left_out_markdown(rows.values()).splitlines()
    assert len(notes) == 3 + 2  # three refusals, two fields not modelled
    assert any(line.startswith("* **mla**, refused: multi-head latent attention") for line in notes)


def test_table_of_the_shipped_folder_has_one_row_per_config(rows):
    lines = markdown_table(rows.values()).splitlines()
    files = sorted(CONFIG_FOLDER.glob("*.json"))
    assert len(lines) == 2 + len(files)
    assert [_cells(line)[0] for line in lines[2:]] == [p.stem for p in files]
    assert all(len(_cells(line)) == len(HEADER) for line in lines)
    cells = {_cells(line)[0]: dict(zip(HEADER, _cells(line))) for line in lines[2:]}
    assert cells["llama-3-8b"]["n (context)"] == "4096 (8192)"
    assert cells["bert-base-uncased"]["n (context)"] == "512"
    assert cells["falcon-7b"]["h/h_KV"] == "71/1 (MQA)"
    assert cells["gemma-2-9b"]["not in the paper's model"] == "attn_logit_softcapping=50.0"
    assert "sliding_window=2047" in cells["phi-3-mini-4k-instruct"]["not in the paper's model"]
    assert cells["mistral-7b"]["not in the paper's model"] == "—"  # its window of 4096 covers n = 4096
    assert cells["deepseek-v2-lite"]["not in the paper's model"] == "multi-head latent attention"


def test_a_pipe_in_a_field_is_escaped(tmp_path):
    _write(tmp_path, "odd", {"hidden_size": 64, "num_attention_heads": 2, "n_positions": 32, "attn_kind": "a|b"})
    (row,) = model_rows(tmp_path)
    assert row.unmodelled_fields == ("attn_kind=a|b",)
    lines = markdown_table([row]).splitlines()
    assert len(_cells(lines[2])) == len(HEADER)
    assert _cells(lines[2])[-1] == "attn_kind=a\\|b"


def test_an_empty_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no \\*.json file"):
        model_rows(tmp_path)


def test_cheap_rows_by_flops(rows):
    """One seed of BERT-base costs about 3 GFLOP, GPT-2 7, Llama 3 8B about a TFLOP."""
    assert [r.name for r in cheap_rows(rows.values(), 5)] == ["bert-base-uncased"]
    names = [r.name for r in cheap_rows(rows.values(), 25)]
    assert {"bert-base-uncased", "gpt2"} <= set(names) and "llama-3-8b" not in names
    assert names == sorted(names)  # the table's order
    assert "deepseek-v2-lite" not in [r.name for r in cheap_rows(rows.values(), 1e9)]  # refused: never sampled


def test_measured_layer_sandwich_and_shift(tmp_path):
    """A small layer, sampled: |shift| <= rel. W1 <= |shift| + shape at every seed, and the mean shift
    within twice its 95 % interval of the exact expectation."""
    cfg = {"hidden_size": 96, "num_attention_heads": 3, "max_position_embeddings": 64}
    _write(tmp_path, "a", cfg)
    _write(tmp_path, "b", {**cfg, "num_key_value_heads": 3})  # the same layer, named differently
    rows = model_rows(tmp_path)
    measured = measure_rows(jax.random.key(3), rows, seeds=6)
    assert measured["a"] is measured["b"]  # one measurement for one layer
    m = measured["a"]
    assert m.seeds == 6 and m.rel_w1.shape == m.shift.shape == m.shape.shape == (6,)
    assert m.sandwich_holds
    assert np.all(m.rel_w1 >= np.abs(m.shift) - 1e-12) and m.above_floor >= 0
    assert m.shift_agrees, (m.shift_summary, m.shift_exact)
    assert abs(m.shift_z) <= 2
    again = measure_row(jax.random.key(3), rows[0].cfg, 6)
    np.testing.assert_array_equal(again.rel_w1, m.rel_w1)  # the same key, the same draws
    table = measured_markdown(measured).splitlines()
    assert len(table) == 4 and _cells(table[2])[:2] == ["a", "6"]
    with pytest.raises(ValueError, match="refused"):
        shutil.copy(CONFIG_FOLDER / "deepseek-v2-lite.json", tmp_path / "c.json")
        measure_rows(jax.random.key(0), model_rows(tmp_path), seeds=2)
