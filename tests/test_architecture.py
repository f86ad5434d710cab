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


def add_import(tree: Path, path: str, statement: str) -> None:
    """Append to the module at ``path`` a function whose body is the import ``statement``."""
    module = tree / path
    module.write_text(module.read_text() + f"\n\ndef _added():\n    {statement}\n\n    return None\n")


def test_the_contracts_are_kept(tmp_path):
    res = lint(copy_tree(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 broken" in res.stdout


def test_an_upward_import_inside_a_function_breaks_the_library_contract(tmp_path):
    tree = copy_tree(tmp_path)
    add_import(tree, "gelib/keys.py", "from bookrun import scales")
    res = lint(tree)
    assert res.returncode != 0
    assert "the library never imports the book's runtime BROKEN" in res.stdout
    assert "gelib.keys -> bookrun.scales" in res.stdout


# (module that gains the import, the import, the line lint-imports names): one upward import
# per boundary of the library's layers, each inside a function.
UPWARD = [
    ("gelib/keys.py", "from gelib import sampling", "gelib.keys -> gelib.sampling"),
    ("gelib/numerics/fits.py", "from gelib.models import f", "gelib.numerics.fits -> gelib.models"),
    ("gelib/models/controls.py", "from gelib.spectra import ks", "gelib.models.controls -> gelib.spectra"),
    ("gelib/spectra.py", "from gelib.sweeps import run", "gelib.spectra -> gelib.sweeps"),
    ("gelib/sweeps.py", "from gelib.finite_size import shrink", "gelib.sweeps -> gelib.finite_size"),
    (
        "gelib/finite_size.py",
        "from gelib.moment_checks import chain_moments",
        "gelib.finite_size -> gelib.moment_checks",
    ),
    ("gelib/moment_checks.py", "from gelib import learning_markers", "gelib.moment_checks -> gelib.learning_markers"),
    ("gelib/learning_markers.py", "from gelib.plotting import COLORS", "gelib.learning_markers -> gelib.plotting"),
    (
        "gelib/plotting/style.py",
        "from gelib.report import attention_parameters",
        "gelib.plotting.style -> gelib.report",
    ),
]


def test_an_upward_import_inside_a_function_breaks_the_layers_of_the_library(tmp_path):
    """Each boundary is tried on its own copy of the tree, so each failure names one import."""
    for i, (path, statement, named) in enumerate(UPWARD):
        tree = copy_tree(tmp_path / str(i))
        add_import(tree, path, statement)
        res = lint(tree)
        assert res.returncode != 0, path
        assert "the library, bottom to top: each layer imports only the layers below it BROKEN" in res.stdout
        assert named in res.stdout, res.stdout


def test_two_modules_of_one_layer_stay_independent(tmp_path):
    tree = copy_tree(tmp_path)
    add_import(tree, "gelib/learning.py", "from gelib.models import f")
    res = lint(tree)
    assert res.returncode != 0
    assert "gelib.learning -> gelib.models" in res.stdout
