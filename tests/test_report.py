"""python -m gelib report: the files it writes, and its numbers against independent computations."""

import json
import math
import os
from pathlib import Path

import jax
import numpy as np
import pytest

from bookrun.cli import main
from gelib import PRESETS, AttentionConfig
from gelib.models import mha_shift_exact
from gelib.report import RANDOM_WEIGHTS, attention_parameters, resolution, seeds_to_resolve
from gelib.spectra import Summary, compare


def test_report_files_and_numbers(tmp_path, capsys):
    out = tmp_path / "r"
    args = ["--n", "64", "--d", "128", "--h", "4", "--dk", "16", "--seeds", "2", "--seed", "3"]
    assert main(["report", *args, "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "wrote" in printed and "not the trained checkpoint" in printed
    data = json.loads((out / "report.json").read_text())
    assert data["weights"] == RANDOM_WEIGHTS
    assert data["floor"]["rel_w1"] == pytest.approx(100 * abs(mha_shift_exact(64, 16, 1.0)), rel=1e-12)
    assert "floor             rel. W1 (%) >= " in printed
    for key in ("rel_w1", "ks"):  # the verdict is the one of the printed interval, in the JSON and in words
        s = data["mha_vs_ge"][key]
        verdict = resolution(Summary(s["mean"], s["ci95"], s["resolution"]["std"], s["seeds"]))
        assert {**verdict, "std": s["resolution"]["std"]} == s["resolution"]
        assert (verdict["words"] in printed) is (not verdict["resolved"])
    png = (out / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    cfg = AttentionConfig(n=64, d=128, h=4, d_k=16)
    assert data["config"] == cfg.as_dict()
    # the distances are those of compare with the same key (a second path to the same draws)
    res = compare(jax.random.key(3), cfg, ("mha", "yg"), 2, progress=False)
    assert data["mha_vs_ge"]["rel_w1"]["mean"] == pytest.approx(res.rel_w1.mean(), rel=1e-9)
    assert data["mha_vs_ge"]["ks"]["mean"] == pytest.approx(res.ks.mean(), rel=1e-9)
    # the law's first moment is the closed form (e^{beta^2} - 1) d_O / n
    assert data["law"]["moments"][0] == pytest.approx(math.expm1(1.0) * 128 / 64, rel=1e-12)
    measured = res.spectra["mha"].mean(axis=1) / res.spectra["yg"].mean(axis=1) - 1
    assert data["mean_shift"]["measured"]["mean"] == pytest.approx(measured.mean(), rel=1e-9)
    lo, hi = data["law"]["edges"][0][0], data["law"]["edges"][-1][1]
    assert 0 <= lo < hi and np.all(np.diff(np.ravel(data["law"]["edges"])) >= 0)


def test_parameter_count_by_hand():
    # Falcon-7B: fused query_key_value 4544 x (71 + 2) * 64 and dense 4544 x 4544 per layer
    assert attention_parameters(PRESETS["falcon-7b"].config()) == 4544 * 73 * 64 + 4544 * 4544
    # BERT-base: four 768 x 768 matrices
    assert attention_parameters(PRESETS["bert-base"].config()) == 4 * 768 * 768
    # tied (W^V = W^K): no value matrix of its own
    tied = AttentionConfig(n=8, d=16, h=2, d_k=4, tie_kv=True)
    assert attention_parameters(tied) == 16 * 2 * 4 + 16 * 2 * 4 + 2 * 4 * 16


def exit_status(argv) -> int:
    """main's exit status, returned or raised (argparse's errors raise SystemExit)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def test_unwritable_folder_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert exit_status(["report", "--preset", "bert-base", "--out", str(blocker / "sub"), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("python -m gelib report: error: cannot write the folder")


# --- the folder: refusals before anything is computed, user files never touched -------------

LAYER = ["--n", "16", "--d", "16", "--h", "2", "--dk", "4", "--seeds", "2", "--quiet"]


def user_folder(root):
    """A folder that already holds the user's own files (and a sub-folder)."""
    folder = root / "thesis"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.tex").write_bytes(b"\\documentclass{article}\n% not ours\n")
    (folder / "sub" / "data.csv").write_bytes(b"x,y\n1,2\n")
    (folder / "report.txt").write_bytes(b"a file named like ours but not ours\n")
    return folder


def snapshot(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(args, capsys, message, status=2):
    assert exit_status(["report", *args]) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("python -m gelib report: error: ") and message in err, err


REFUSALS = [
    (["--n", "40", "--d", "16", "--h", "2", "--dk", "4"], "n = 40 > d = 16"),
    (["--n", "16", "--d", "16", "--h", "2", "--dk", "4", "--max-memory", "1kB"], "but 1 kB is the limit"),
    (["--n", "16", "--d", "16", "--h", "2", "--dk", "4", "--beta", "1e-300"], "is too small"),
]


@pytest.mark.parametrize("args, message", REFUSALS)
def test_a_refused_report_creates_no_folder(args, message, tmp_path, capsys, monkeypatch):
    import bookrun.cli.report

    monkeypatch.setattr(bookrun.cli.report, "make_report", lambda *a, **k: pytest.fail("computed after a refusal"))
    out = tmp_path / "new" / "deeper"
    refused([*args, "--out", str(out)], capsys, message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, message", REFUSALS)
def test_a_refused_report_leaves_the_users_files_intact(args, message, tmp_path, capsys):
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    refused([*args, "--out", str(folder)], capsys, message)
    assert snapshot(folder) == before


def test_a_report_only_adds_its_two_files_and_never_overwrites_without_force(tmp_path, capsys):
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    assert main(["report", *LAYER, "--out", str(folder)]) == 0
    capsys.readouterr()
    after = snapshot(folder)
    assert set(after) == set(before) | {"report.png", "report.json"}
    assert {k: after[k] for k in before} == before
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no temporary or probe file left
    # a second report into the same folder: refused, naming the file, and nothing changes
    refused([*LAYER, "--seed", "1", "--out", str(folder)], capsys, f"{folder / 'report.png'} already exists")
    assert snapshot(folder) == after
    (folder / "report.png").unlink()  # report.json alone is an earlier report too
    refused([*LAYER, "--seed", "1", "--out", str(folder)], capsys, f"{folder / 'report.json'} already exists")
    # --force: the report is rewritten, the user's files are not
    assert main(["report", *LAYER, "--seed", "1", "--out", str(folder), "--force"]) == 0
    assert "wrote" in capsys.readouterr().out
    final = snapshot(folder)
    assert {k: final[k] for k in before} == before and final["report.json"] != after["report.json"]
    assert set(final) == set(after)


def test_an_unwritable_folder_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    """The probe file cannot be created (as in a read-only folder, which root could write):
    one line, nothing computed, the user's files intact, no folder left that report created."""
    import tempfile

    import bookrun.cli.report

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(bookrun.cli.report, "make_report", lambda *a, **k: pytest.fail("computed in vain"))
    monkeypatch.setattr(tempfile, "mkstemp", denied)
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    refused([*LAYER, "--out", str(folder)], capsys, f"cannot write the folder {folder}: Permission denied")
    assert snapshot(folder) == before
    refused([*LAYER, "--out", str(tmp_path / "a" / "b")], capsys, "Permission denied")
    assert not (tmp_path / "a").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused_before_computing(tmp_path, capsys):
    folder = user_folder(tmp_path)
    before = snapshot(folder)
    folder.chmod(0o555)
    try:
        refused([*LAYER, "--out", str(folder)], capsys, "Permission denied")
    finally:
        folder.chmod(0o755)
    assert snapshot(folder) == before


def test_a_file_in_place_of_the_folder_is_refused(tmp_path, capsys):
    blocker = tmp_path / "report-out"
    blocker.write_bytes(b"mine")
    refused([*LAYER, "--out", str(blocker)], capsys, "exists and is not a folder")
    assert blocker.read_bytes() == b"mine"


@pytest.fixture
def no_report(monkeypatch):
    """report's sampling, which a refusal must never reach."""
    import bookrun.cli.report

    monkeypatch.setattr(bookrun.cli.report, "make_report", lambda *a, **k: pytest.fail("computed after a refusal"))


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("where", [".git/gelib-report", "book/gelib-report", "gelib/gelib-report", "tests", "tools"])
def test_a_folder_in_the_repositorys_sources_is_refused(where, capsys, no_report):
    out = REPO / where
    existed = out.exists()
    refused([*LAYER, "--out", str(out)], capsys, "inside the repository's own")
    assert out.exists() == existed


def test_a_symbolic_link_and_an_empty_name_are_refused(tmp_path, capsys, monkeypatch, no_report):
    real = user_folder(tmp_path)
    before = snapshot(real)
    (tmp_path / "link").symlink_to(real)
    refused([*LAYER, "--out", str(tmp_path / "link")], capsys, "is a symbolic link")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    refused([*LAYER, "--out", str(tmp_path / "dangling")], capsys, "is a symbolic link")
    monkeypatch.chdir(tmp_path)
    refused([*LAYER, "--out", ""], capsys, "--out needs a folder name")
    assert snapshot(real) == before and not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling", "link", "thesis"]  # no report-layer


def test_a_law_the_solver_cannot_resolve_is_refused_before_sampling(tmp_path, capsys, no_report):
    """As law refuses it: at n = 16, beta = 3.5 the density next to the right edge is not integrable."""
    out = tmp_path / "r"
    layer = ["--n", "16", "--d", "16", "--h", "1", "--dk", "1", "--beta", "3.5", "--seeds", "2", "--quiet"]
    refused([*layer, "--out", str(out)], capsys, "numerical failure for the limit law", status=1)
    assert not out.exists()
    assert main(["law", *layer[:10], "--density", "5"]) == 1  # law refuses the same layer
    assert "numerical failure" in capsys.readouterr().err


# --- --hf-config: the report's name, and what the model leaves out --------------------------


def test_report_name_of_a_config_json_is_its_folder():
    import argparse

    from bookrun.cli.report import report_name

    def name(preset=None, hf_config=None):
        return report_name(argparse.Namespace(preset=preset, hf_config=hf_config))

    assert name(hf_config="models/Mistral-7B-v0.1/config.json") == "Mistral-7B-v0.1"
    assert name(hf_config="tests/data/hf/mistral-7b.json") == "mistral-7b"
    assert name(preset="bert-base") == "bert-base" and name() == "layer"


def test_report_from_a_config_json_records_it(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "Mistral-7B-v0.1"
    folder.mkdir()
    config = folder / "config.json"
    config.write_bytes((Path(__file__).parent / "data" / "hf" / "mistral-7b.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    small = ["--n", "16", "--d", "16", "--h", "2", "--h-kv", "2", "--dk", "4", "--seeds", "2", "--quiet"]
    assert main(["report", "--hf-config", str(config), *small]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Mistral-7B-v0.1: ") and "not modelled (set in" in text
    data = json.loads((tmp_path / "report-Mistral-7B-v0.1" / "report.json").read_text())
    assert data["name"] == "Mistral-7B-v0.1"
    assert data["hf_config"]["path"] == str(config)
    assert isinstance(data["hf_config"]["notes"], list) and isinstance(data["hf_config"]["not_modelled"], list)


# --- the printed numbers and the figure -----------------------------------------------------


def test_an_interval_of_rounding_error_prints_as_zero():
    from bookrun.cli.common import fmt

    assert fmt(3.5267e-16, 4, ref=0.03125) == "0.0000"
    assert fmt(3.5267e-16, 4) == "3.5267e-16"  # without a reference, a small number is a number
    assert fmt(2e-4, 4, ref=0.03125) == "2.0000e-04"  # a real interval keeps its digits


def test_an_atom_at_zero_on_a_log_axis_is_labelled():
    from gelib.report import ATOM_AT_ZERO_LABEL, make_report, report_figure

    # h d_v = 16 < n = 32: an atom of mass 1/2 at 0; the support spans three decades: a log axis
    rep = make_report(jax.random.key(0), AttentionConfig(n=32, d=32, h=2, d_k=8, d_o=24), seeds=1, progress=False)
    assert rep.law.atoms() and rep.law.atoms()[0][0] == 0
    ax = report_figure(rep).axes[0]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert ATOM_AT_ZERO_LABEL.format(mass=0.5) in labels, labels
    # no atom at 0: no such label
    plain = make_report(jax.random.key(0), AttentionConfig(n=16, d=16, h=2, d_k=8), seeds=1, progress=False)
    assert not [x for x, _ in plain.law.atoms() if x == 0]
    texts = [t.get_text() for t in report_figure(plain).axes[0].get_legend().get_texts()]
    assert not [t for t in texts if "atom" in t]


def half_width(std: float, m: int) -> float:
    import scipy.stats

    return float(scipy.stats.t.ppf(0.975, m - 1) * std / math.sqrt(m))


@pytest.mark.parametrize("mean, std", [(1.709, 0.281), (0.05, 0.3), (2.0, 1.0), (-0.4, 0.9)])
def test_seeds_to_resolve_is_the_smallest_count_whose_half_width_is_below_the_value(mean, std):
    m = seeds_to_resolve(Summary(mean, half_width(std, 2), std, 2))
    assert half_width(std, m) < abs(mean)
    assert m == 2 or half_width(std, m - 1) >= abs(mean)  # one seed fewer would not do


def test_seeds_to_resolve_without_an_answer():
    assert seeds_to_resolve(Summary(0.0, 1.0, 0.5, 3)) is None  # a zero value is never resolved
    assert seeds_to_resolve(Summary(1.0, math.nan, math.nan, 1)) is None  # one seed: no spread
    assert seeds_to_resolve(Summary(1e-9, 1.0, 1.0, 3), max_seeds=1000) is None
    assert seeds_to_resolve(Summary(1.0, 0.0, 0.0, 3)) == 2


def test_resolution_in_words():
    bert = resolution(Summary(1.709, 2.524, 0.281, 2))  # report --seeds 2 on BERT-base
    assert not bert["resolved"] and bert["seeds_needed"] == 3 and "about 3 seeds" in bert["words"]
    assert bert["words"].startswith("not resolved")
    fine = resolution(Summary(1.709, 0.2, 0.281, 10))
    assert fine == {"resolved": True, "seeds_needed": None, "words": "resolved at 10 seeds"}
    assert not resolution(Summary(1.0, 1.0, 0.5, 3))["resolved"]  # a half-width equal to the value: not below it
    one = resolution(Summary(1.0, math.nan, math.nan, 1))
    assert not one["resolved"] and "2 seeds" in one["words"]
