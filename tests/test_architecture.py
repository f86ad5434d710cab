"""The architecture contracts of pyproject.toml hold, and have the power to fail: an import of
the book's runtime added anywhere in the library, inside a function too, breaks them."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(LINT), "--no-cache", "--config", str(tree / "pyproject.toml")],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_tree(tmp_path: Path) -> Path:
    for name in ("gelib", "bookrun"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_are_kept(tmp_path):
    res = lint(copy_tree(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def test_an_upward_import_inside_a_function_breaks_the_library_contract(tmp_path):
    tree = copy_tree(tmp_path)
    keys = tree / "gelib" / "keys.py"
    keys.write_text(keys.read_text() + "\n\ndef _upward():\n    from bookrun import scales\n\n    return scales\n")
    res = lint(tree)
    assert res.returncode != 0
    assert "the library never imports the book's runtime BROKEN" in res.stdout
    assert "gelib.keys -> bookrun.scales" in res.stdout
