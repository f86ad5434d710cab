"""The command line never prints a wrong number and answers every bad input with one
line, ``python -m gelib <command>: error: <message>``, and a nonzero exit status;
its JSON is strict (no NaN, no Infinity)."""

import json
import math
import subprocess
import sys

import pytest

from gelib import AttentionConfig
from gelib.cli import main
from gelib.law import output_law

SMALL = ["--n", "64", "--d", "64", "--h", "4", "--dk", "16"]
TINY = ["--n", "24", "--d", "40", "--h", "4", "--h-kv", "2", "--dk", "6", "--do", "20"]


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as strict JSON parsers do."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def error_line(err: str, command: str) -> str:
    """The one error line (argparse prints its usage above it); no traceback."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert lines, "no error message"
    assert lines[-1].startswith(f"python -m gelib {command}: error: "), lines[-1]
    return lines[-1]


def run(args):
    return subprocess.run([sys.executable, "-m", "gelib", *args], capture_output=True, text=True, timeout=600)


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
    with pytest.raises(SystemExit) as e:
        main(["compare", *TINY, "--seeds", "2", "--max-memory", "50kB"])  # the estimate is 74 kB
    assert e.value.code == 2
    line = error_line(capsys.readouterr().err, "compare")
    assert "but 50 kB is the limit (--max-memory)" in line
    with pytest.raises(SystemExit):
        main(["compare", *TINY, "--max-memory", "lots"])
    assert "argument --max-memory: not a size: 'lots'" in error_line(capsys.readouterr().err, "compare")


def test_compare_refuses_spectra_that_overflow(capsys):
    cfg = AttentionConfig(n=64, d=64, h=4, d_k=16)
    with pytest.raises(SystemExit) as e:
        main(["compare", *SMALL, "--beta", repr(cfg.beta_max), "--models", "yf,yf_ring", "--seeds", "1", "--quiet"])
    assert e.value.code == 2
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
