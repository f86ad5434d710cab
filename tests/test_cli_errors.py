"""The command line never prints a wrong number and answers every bad input with one
line, ``python -m gelib <command>: error: <message>``, and a nonzero exit status;
its JSON is strict (no NaN, no Infinity)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bookrun.cli import main
from gelib import AttentionConfig
from gelib.attention_law import output_law

SMALL = ["--n", "64", "--d", "64", "--h", "4", "--dk", "16"]
TINY = ["--n", "24", "--d", "40", "--h", "4", "--h-kv", "2", "--dk", "6", "--do", "20"]


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as strict JSON parsers do."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def error_line(err: str, command: str) -> str:
    """The error line, the last on stderr (an --hf-config's notes may stand above it); no traceback."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines, "no error message"
    assert lines[-1].startswith(f"python -m gelib {command}: error: "), lines[-1]
    return lines[-1]


def run(args):
    return subprocess.run([sys.executable, "-m", "gelib", *args], capture_output=True, text=True, timeout=600)


def exit_status(argv) -> int:
    """main's exit status, returned or raised (argparse's errors raise SystemExit)."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


# --- the law: a correct number or a refusal ------------------------------------------------


def test_law_moments_at_large_beta_are_finite(capsys):
    assert main(["law", *SMALL, "--beta", "18", "--moments", "2", "--json"]) == 0
    m = strict_json(capsys.readouterr().out)["moments"]
    cfg = AttentionConfig(n=64, d=64, h=4, d_k=16, beta=18.0)
    assert m[0] == pytest.approx(math.expm1(18.0**2) * cfg.d_o / cfg.n, rel=1e-13)  # about 5e140
    assert math.isfinite(m[1]) and m[1] > m[0] ** 2


def test_law_moments_that_overflow_are_refused(capsys):
    assert main(["law", *SMALL, "--beta", "18", "--moments", "4", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    line = error_line(captured.err, "law")
    assert "m_3 overflows float64" in line and "m_1 .. m_2 are finite" in line


@pytest.mark.parametrize("beta", ["15", "18"])
def test_law_density_at_large_beta_is_never_empty(beta, capsys):
    assert main(["law", *SMALL, "--beta", beta, "--density", "10", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert len(out["x"]) >= 10 and len(out["density"]) == len(out["x"]) and out["edges"]
    assert all(d > 0 for d in out["density"])
    lo, hi = out["edges"][0]
    assert all(lo < x < hi for x in out["x"])
    law = output_law(AttentionConfig(n=64, d=64, h=4, d_k=16, beta=float(beta)))
    assert out["edges"] == [list(e) for e in law.edges()]


def test_law_text_at_large_beta(capsys):
    assert main(["law", *SMALL, "--beta", "18", "--density", "4"]) == 0
    text = capsys.readouterr().out
    assert "support edges: [0, 3.875210666e+141]" in text and "nan" not in text.lower()


def test_law_refuses_a_truncated_support_at_an_extreme_ratio():
    res = run(["law", "--n", "3000000", "--d", "3000000", "--h", "1", "--dk", "1", "--density", "5"])
    assert res.returncode == 1 and res.stdout == ""
    line = error_line(res.stderr, "law")
    assert "numerical failure" in line and "edge" in line
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--moments", "0"], "argument --moments: must be a positive integer, got 0"),
        (["--moments", "x"], "argument --moments: invalid positive integer value: 'x'"),
        (["--moments", "201"], "argument --moments: at most 200"),
        (["--density", "1e3"], "argument --density: invalid positive integer value: '1e3'"),
        (["--density", "200000"], "argument --density: at most 100000"),
        (["--beta", "30"], "lower beta (float64 is the widest dtype gelib has)"),
        (["--beta", "12", "--dtype", "float32"], "lower beta or use dtype='float64'"),
        (["--densty", "4"], "unrecognized arguments: --densty 4"),
    ],
)
def test_law_bad_input_is_one_error_line(args, message, capsys):
    try:
        status = main(["law", *TINY, *args])
    except SystemExit as e:
        status = e.code
    assert status == 2
    assert message in error_line(capsys.readouterr().err, "law")


def test_the_float64_advice_is_never_given_to_float64(capsys):
    assert main(["law", *TINY, "--beta", "30"]) == 2
    line = error_line(capsys.readouterr().err, "law")
    assert "use dtype='float64'" not in line and "too large for float64" in line


# --- compare: strict JSON, an undefined interval, a memory check, readable numbers ---------


def test_compare_one_seed_has_a_null_interval_and_says_why(capsys):
    assert main(["compare", *TINY, "--seeds", "1", "--json", "--quiet"]) == 0
    out = strict_json(capsys.readouterr().out)
    for key in ("rel_w1", "ks"):
        assert out[key]["ci95"] is None and out[key]["std"] is None and out[key]["count"] == 1
        assert math.isfinite(out[key]["mean"])
    assert main(["compare", *TINY, "--seeds", "1", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "n/a (1 seed)" in text and "nan" not in text.lower() and "1 seed from seed 0" in text


def test_compare_two_seeds_keep_their_interval(capsys):
    assert main(["compare", *TINY, "--seeds", "2", "--json", "--quiet"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["rel_w1"]["ci95"] > 0 and out["ks"]["count"] == 2


def test_compare_prints_huge_means_in_exponent_form(capsys):
    assert main(["compare", "--n", "16", "--d", "16", "--h", "2", "--dk", "4", "--beta", "18", "--seeds", "2"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) < 140
    assert "limit = 5.1453e+140" in text


def test_compare_refuses_a_layer_too_large_for_the_memory():
    res = run(["compare", "--n", "1000000", "--d", "1000000", "--h", "1", "--dk", "1", "--seeds", "1"])
    assert res.returncode == 2 and res.stdout == ""
    line = error_line(res.stderr, "compare")
    assert "needs about 48 TB of memory" in line and "is available" in line
    assert len(res.stderr.strip().splitlines()) == 1


def test_compare_refuses_a_layer_over_max_memory(capsys):
    assert exit_status(["compare", *TINY, "--seeds", "2", "--max-memory", "50kB"]) == 2  # the estimate is 74 kB
    line = error_line(capsys.readouterr().err, "compare")
    assert "but 50 kB is the limit (--max-memory)" in line
    with pytest.raises(SystemExit):
        main(["compare", *TINY, "--max-memory", "lots"])
    assert "argument --max-memory: not a size: 'lots'" in error_line(capsys.readouterr().err, "compare")


def test_compare_refuses_spectra_that_overflow(capsys):
    cfg = AttentionConfig(n=64, d=64, h=4, d_k=16)
    assert (
        exit_status(
            ["compare", *SMALL, "--beta", repr(cfg.beta_max), "--models", "yf,yf_ring", "--seeds", "1", "--quiet"]
        )
        == 2
    )
    assert "overflow float64" in error_line(capsys.readouterr().err, "compare")


# --- presets and the error prefix of every command ----------------------------------------


def test_presets_json_is_strict(capsys):
    assert main(["presets", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["llama3-8b"]["paper_rel_w1_percent"] is None


@pytest.mark.parametrize("command", ["compare", "law", "presets"])
def test_unrecognized_arguments_name_the_command(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--no-such-flag"])
    assert e.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in error_line(capsys.readouterr().err, command)


# --- beta: refused below the floor where the numbers would be rounding error ------------------

TINY_LAYER = ["--n", "8", "--d", "16", "--h", "2", "--dk", "4"]


def one_error_line(capsys, command: str) -> str:
    """The one line on stderr (no usage, no traceback) of a refusal raised by a sub-command."""
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return error_line(err, command)


@pytest.mark.parametrize(
    "beta, message",
    [
        ("1e-300", "beta = 1e-300 is too small: the centred softmax weights of mha"),
        ("1e-13", "the smallest beta computed to four digits is 2.3e-12"),
        ("nan", "beta must be positive and finite, got nan"),
        ("inf", "beta must be positive and finite, got inf"),
        ("-1", "beta must be positive and finite, got -1.0"),
        ("0", "beta must be positive and finite, got 0.0"),
    ],
)
def test_compare_refuses_a_beta_outside_its_range(beta, message, capsys):
    assert exit_status(["compare", "--preset", "bert-base", "--beta", beta, "--json", "--quiet"]) == 2
    assert message in one_error_line(capsys, "compare")


def test_the_beta_floor_depends_on_the_models_and_the_dtype(capsys):
    # mha: 1e4 eps; yg_sigma_f: 100 sqrt(eps); the others: 100 sqrt(tiny)
    for args, floor in [
        ([], "2.3e-12"),
        (["--dtype", "float32"], "0.0012"),
        (["--models", "yg_sigma_f,yg"], "1.5e-06"),
        (["--models", "yf,yg"], "1.5e-152"),
    ]:
        assert exit_status(["compare", *TINY_LAYER, "--beta", "1e-300", *args, "--quiet"]) == 2
        assert f"the smallest beta computed to four digits is {floor}" in one_error_line(capsys, "compare")
    # just above the floor of yf, yg: the relative W1 of two models equal in law stays a small number
    assert main(["compare", *TINY_LAYER, "--beta", "2e-152", "--models", "yf,yg", "--seeds", "2", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert math.isfinite(out["rel_w1"]["mean"]) and out["mean_eigenvalue"]["yg"] > 0


def test_compare_just_above_the_mha_floor_is_the_small_beta_limit(capsys):
    """At beta = 1e-11 the distances are those of beta = 1e-6 to four digits (the linear regime)."""
    means = []
    for beta in ("1e-6", "1e-11"):
        assert main(["compare", *TINY, "--beta", beta, "--seeds", "2", "--json", "--quiet"]) == 0
        means.append(strict_json(capsys.readouterr().out)["rel_w1"]["mean"])
    assert means[1] == pytest.approx(means[0], rel=1e-4)


@pytest.mark.parametrize("command", ["law", "report"])
def test_law_and_report_refuse_a_vanishing_beta(command, tmp_path, capsys):
    out = tmp_path / "r"
    extra = ["--out", str(out), "--quiet"] if command == "report" else []
    try:
        status = main([command, *TINY, "--beta", "1e-300", *extra])
    except SystemExit as e:
        status = e.code
    assert status == 2
    assert "beta = 1e-300 is too small" in one_error_line(capsys, command)
    assert not out.exists()


# --- --max-memory and --seeds: sizes that are not sizes, seeds that do not fit ----------------


def test_an_infinite_memory_size_is_named_as_such(capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", *TINY_LAYER, "--max-memory", "1e400"])
    assert e.value.code == 2
    line = error_line(capsys.readouterr().err, "compare")
    assert "argument --max-memory: not a finite size: '1e400'" in line and "at least 1 byte" not in line


def test_a_billion_seeds_of_a_tiny_layer_are_refused_before_allocating(capsys):
    assert exit_status(["compare", *TINY_LAYER, "--seeds", "1000000000", "--quiet"]) == 2
    line = one_error_line(capsys, "compare")
    # (2 models + 3 copies for the distances) x 1e9 seeds x 8 eigenvalues x 8 bytes
    assert "needs about 320 GB of memory (spectra 320 GB" in line and "lower --seeds" in line


# --- output into a closed pipe: quiet, status 141 --------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["presets"],
        ["presets", "--json"],
        ["law", *TINY, "--density", "200"],
        ["compare", *TINY_LAYER, "--seeds", "2", "--quiet"],
    ],
)
def test_output_into_a_closed_pipe_ends_quietly(args):
    """As ``python -m gelib presets | head -1`` once head has gone: no traceback, status 141."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "gelib", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    proc.stdout.close()  # the reader goes away before anything is written
    err = proc.stderr.read()
    assert proc.wait(timeout=600) == 141, err
    assert err == ""


def test_presets_into_head_prints_one_line_and_no_traceback():
    res = subprocess.run(
        f"{sys.executable} -m gelib presets | head -1", shell=True, capture_output=True, text=True, timeout=600
    )
    assert res.stdout.startswith("name") and len(res.stdout.splitlines()) == 1
    assert res.stderr == ""


# --- help texts ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [None, "compare", "law", "report", "presets", "figure", "batch", "render"])
def test_no_help_text_prints_a_doubled_percent_sign(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"] if command else ["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "usage: python -m gelib" in text and "%%" not in text


def test_the_95_percent_intervals_are_described_once(capsys):
    for command in ("compare", "report"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert "95 %" in " ".join(capsys.readouterr().out.split())


# --- law --level attention: the README's command line ----------------------------------------

README_ATTENTION = ["law", "--level", "attention", "--n", "1024", "--dk", "256", "--density", "2000"]


def test_the_readme_attention_law_runs_as_written(capsys):
    assert main([*README_ATTENTION, "--moments", "4", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["moments"][0] == pytest.approx(math.expm1(1.0), rel=1e-12)  # e^(beta^2) - 1
    assert len(out["x"]) >= 2000 and all(d >= 0 for d in out["density"])


def test_the_attention_level_needs_no_head_count_and_says_so(capsys):
    assert main(["law", "--level", "attention", "--n", "64", "--dk", "16", "--density", "10", "--json"]) == 0
    assert strict_json(capsys.readouterr().out)["edges"]
    with pytest.raises(SystemExit):
        main(["law", "--help"])
    assert "--h to 1" in " ".join(capsys.readouterr().out.split())
    assert main(["law", "--level", "output", "--n", "64", "--dk", "16"]) == 2  # the output law needs them
    assert "all of --d, --h" in one_error_line(capsys, "law")


# --- --hf-config paths that are not a config.json ------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_config_is_refused_without_hanging(tmp_path):
    """Opening a FIFO for reading blocks until a writer comes: the command must refuse the
    path without opening it (in a subprocess, so that a regression times out instead of
    hanging the suite)."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    res = subprocess.run(
        [sys.executable, "-m", "gelib", "compare", "--hf-config", str(fifo), "--seeds", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "not a regular file" in error_line(res.stderr, "compare")


@pytest.mark.parametrize("command", ["compare", "law", "report"])
def test_a_config_that_is_not_utf8_is_one_error_line(command, tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_bytes(b'{"hidden_size": 64, "model_type": "caf\xe9"}')  # Latin-1, not UTF-8
    out = tmp_path / "out"
    extra = ["--out", str(out)] if command == "report" else []
    try:
        status = main([command, "--hf-config", str(config), *extra])
    except SystemExit as e:
        status = e.code
    assert status == 2
    assert "not UTF-8" in one_error_line(capsys, command)
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["compare", "--max-memory", "1e400"],
        ["compare", "--n", "2.5"],
        ["law", "--moments", "201"],
        ["report", "--seeds", "0"],
        ["presets", "--no-such-flag"],
        ["compare", "--path", "slow"],
    ],
)
def test_argparse_errors_are_one_line_too(args, capsys):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "usage:" not in err, err
    assert err.startswith(f"python -m gelib{' ' + args[0] if args else ''}: error: ") and "(see --help)" in err


# --- figure: its flags and its --csv destination, refused before anything is computed ---------

FAKE_PANEL = {  # the shape of gelib.figure_data.panel's result, two points: no computing
    "panel": "3a",
    "quantity": "arrival time",
    "x_label": "h_KV",
    "reading": {"epsilon": 0.1, "sigma": 0.1, "horizon": 10.0},
    "dimensions": {"n": 4096},
    "series": [{"label": "GE", "kind": "ge", "x": [1.0, 2.0], "y": [0.5, 0.25], "ci95": None}],
    "table_d1": [],
}
FAKE_CSV = (
    "panel,quantity,series,kind,x,y,ci95\r\n3a,arrival time,GE,ge,1.0,0.5,\r\n3a,arrival time,GE,ge,2.0,0.25,\r\n"
)


@pytest.fixture
def no_panel(monkeypatch):
    """figure's panel, which a refusal must never reach."""
    import bookrun.cli.figure

    monkeypatch.setattr(bookrun.cli.figure, "panel", lambda *a, **k: pytest.fail("computed after a refusal"))


@pytest.fixture
def fake_panel(monkeypatch):
    """figure's panel, at once (the real one computes for seconds)."""
    import copy

    import bookrun.cli.figure

    monkeypatch.setattr(bookrun.cli.figure, "panel", lambda name: copy.deepcopy(FAKE_PANEL))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seeds", "0"], "--seeds only applies with --markers"),
        (["--seed", "3"], "--seed only applies with --markers"),
        (["--scale", "ci"], "--scale only applies with --markers"),
        (["--seeds", "3", "--scale", "ci"], "--seeds and --scale only apply with --markers"),
        (["--force"], "--force only applies with --csv FILE"),
        (["--csv", "-", "--json"], "both write to standard output"),
    ],
)
def test_figure_refuses_flags_that_do_nothing(args, message, capsys, no_panel):
    assert exit_status(["figure", "3a", *args]) == 2
    assert message in one_error_line(capsys, "figure")


def test_figure_refuses_a_csv_destination_before_computing(tmp_path, capsys, monkeypatch, no_panel):
    import tempfile

    import bookrun

    book = Path(bookrun.__file__).resolve().parent.parent / "book"
    (tmp_path / "target.csv").write_text("mine")
    (tmp_path / "link.csv").symlink_to(tmp_path / "target.csv")
    for csv_path, message in [
        ("", "--csv needs a file name"),
        (str(tmp_path), "is a folder"),
        (str(tmp_path / "missing" / "x.csv"), "there is no folder"),
        (str(tmp_path / "link.csv"), "is a symbolic link"),
        (str(book / "x.csv"), "inside the repository's own book"),
    ]:
        assert exit_status(["figure", "3a", "--csv", csv_path]) == 2
        assert message in one_error_line(capsys, "figure")
    assert not (book / "x.csv").exists() and (tmp_path / "target.csv").read_text() == "mine"

    def denied(*args, **kwargs):  # a read-only folder, as root sees one only through the probe
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    assert exit_status(["figure", "3a", "--csv", str(tmp_path / "new.csv")]) == 2
    assert "Permission denied" in one_error_line(capsys, "figure")


def test_figure_csv_dash_is_stdout(tmp_path, capsys, monkeypatch, fake_panel):
    monkeypatch.chdir(tmp_path)
    assert main(["figure", "3a", "--csv", "-"]) == 0
    assert capsys.readouterr().out == FAKE_CSV
    assert list(tmp_path.iterdir()) == []  # no file named '-'


def test_figure_csv_has_the_umasks_mode_and_force_keeps_the_users(tmp_path, capsys, fake_panel):
    import stat

    old = os.umask(0o022)
    try:
        out = tmp_path / "3a.csv"
        assert main(["figure", "3a", "--csv", str(out)]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o644 and out.read_bytes() == FAKE_CSV.encode()
        out.write_text("a user's table\n")
        out.chmod(0o640)
        assert main(["figure", "3a", "--csv", str(out)]) == 2  # kept without --force
        assert "exists; pass --force" in one_error_line(capsys, "figure")
        assert main(["figure", "3a", "--csv", str(out), "--force"]) == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_bytes() == FAKE_CSV.encode()
        assert [p.name for p in tmp_path.iterdir()] == ["3a.csv"]  # no temporary file left
    finally:
        os.umask(old)


def test_a_time_that_rounds_to_zero_is_under_a_second(capsys, monkeypatch, fake_panel):
    import bookrun.cli.figure
    from gelib import learning_markers

    monkeypatch.setattr(bookrun.cli.figure, "marker_seconds", lambda *a: 0.3)
    monkeypatch.setattr(bookrun.cli.figure, "add_simulated_markers", lambda *a, **k: None)
    assert main(["figure", "3a", "--markers", "--scale", "ci", "--json"]) == 0
    err = capsys.readouterr().err
    assert "the sampling under 1 s on this CPU" in err and "at least 0 s" not in err
    monkeypatch.setattr(learning_markers, "simulation_seconds", lambda *a: 0.3)
    assert learning_markers.plan_note([], 3).endswith("; under 1 s on this CPU from their sizes")
    monkeypatch.setattr(learning_markers, "simulation_seconds", lambda *a: 12.4)
    assert learning_markers.plan_note([], 3).endswith("; at least 12 s on this CPU from their sizes")


def test_figure_refuses_markers_of_more_seeds_than_the_memory_holds(capsys, monkeypatch, fake_panel):
    import bookrun.cli.figure

    monkeypatch.setattr(bookrun.cli.figure, "add_simulated_markers", lambda *a, **k: pytest.fail("sampled"))
    assert exit_status(["figure", "3a", "--markers", "--scale", "ci", "--seeds", str(10**20)]) == 2
    line = one_error_line(capsys, "figure")
    assert "of memory" in line and "lower --seeds" in line


# --- --seed: what jax.random.key takes, or one line ----------------------------------------------


@pytest.mark.parametrize("seed", [str(2**63), str(2**64), str(10**30), "-1", "x", "1e3"])
@pytest.mark.parametrize(
    "command",
    [["compare", *TINY_LAYER], ["report", *TINY_LAYER, "--out", "never"], ["figure", "3a", "--markers"]],
    ids=["compare", "report", "figure"],
)
def test_a_seed_out_of_range_is_one_argparse_line(command, seed, capsys, tmp_path, monkeypatch, no_panel):
    monkeypatch.chdir(tmp_path)
    quiet = [] if command[0] == "figure" else ["--quiet"]
    assert exit_status([*command, "--seed", seed, *quiet]) == 2
    line = one_error_line(capsys, command[0])
    assert f"argument --seed: invalid seed value: '{seed}'" in line and "0 <= seed < 2**63" in line
    assert list(tmp_path.iterdir()) == []


def test_the_largest_seed_runs(capsys):
    assert main(["compare", *TINY_LAYER, "--seeds", "1", "--seed", str(2**63 - 1), "--json", "--quiet"]) == 0
    assert strict_json(capsys.readouterr().out)["seed"] == 2**63 - 1


@pytest.mark.parametrize("command", ["compare", "report"])
def test_a_huge_seed_count_is_refused_by_the_memory(command, capsys, tmp_path):
    extra = ["--out", str(tmp_path / "r")] if command == "report" else []
    assert exit_status([command, *TINY_LAYER, "--seeds", str(10**30), "--quiet", *extra]) == 2
    assert "lower --seeds" in one_error_line(capsys, command)
    assert not (tmp_path / "r").exists()


# --- a closed stderr: no progress bar, the result all the same -----------------------------------


def test_no_progress_bar_where_stderr_cannot_be_written(monkeypatch):
    from gelib.spectra import _progress

    monkeypatch.setattr(sys, "stderr", None)  # started with 2>&-
    assert _progress(2, True, "x") is None
    closed = open(os.devnull, "w")
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    assert _progress(2, True, "x") is None
    stale = open(os.devnull, "w")  # a file object whose descriptor was closed underneath it
    os.close(stale.fileno())
    monkeypatch.setattr(sys, "stderr", stale)
    try:
        assert _progress(2, True, "x") is None
    finally:
        monkeypatch.undo()
        try:
            stale.close()
        except OSError:
            pass
    bar = _progress(2, True, "x")  # a writable stderr (here the test's capture) still has one
    assert bar is not None
    bar.close()


def test_compare_with_stderr_closed_prints_its_result():
    res = subprocess.run(
        f"{sys.executable} -m gelib compare {' '.join(TINY_LAYER)} --seeds 2 --json 2>&-",
        shell=True,
        stdout=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0
    assert strict_json(res.stdout)["rel_w1"]["count"] == 2


# --- the memory refusal names the dimension that is too large --------------------------------------


def test_a_memory_refusal_names_the_dimension_at_fault(capsys):
    assert (
        exit_status(["compare", "--n", "8", "--d", "1000000000", "--h", "1", "--dk", "4", "--max-memory", "1GB"]) == 2
    )
    line = one_error_line(capsys, "compare")
    assert "lower d_O (d unless --do is given)" in line and "lower n" not in line
    args = ["--n", "8", "--d", "1000000000", "--h", "1", "--dk", "4", "--do", "8", "--path", "literal"]
    assert exit_status(["compare", *args, "--max-memory", "1GB"]) == 2
    line = one_error_line(capsys, "compare")
    assert "lower d (the n x d input X" in line and "lower n" not in line
