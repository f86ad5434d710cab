"""The API page of the book documents every public module of gelib and bookrun, and only those."""

import pkgutil
import re
from pathlib import Path

import bookrun
import gelib

API = Path(__file__).resolve().parents[1] / "book" / "api.md"


def public_modules() -> set[str]:
    found = {"gelib", "bookrun"}
    for package in (gelib, bookrun):
        for info in pkgutil.walk_packages(package.__path__, prefix=package.__name__ + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.add(info.name)
    return found


def test_every_public_module_has_a_section_and_no_section_is_stale():
    documented = re.findall(r"^\.\. automodule:: (\S+)", API.read_text(), flags=re.M)
    assert len(documented) == len(set(documented)), "a module is documented twice"
    assert set(documented) == public_modules()


def test_no_file_of_the_repository_cites_files_outside_it():
    root = API.parents[1]
    tracked = [
        p
        for p in root.rglob("*")
        if p.is_file()
        and p.suffix in {".py", ".md", ".yml", ".toml", ".cfg"}
        and not any(part in {".venv", "_build", ".git", "runs", "_notebooks"} for part in p.parts)
    ]
    offenders = [
        str(p.relative_to(root))
        for p in tracked
        if p != Path(__file__).resolve() and ("MATH" + ".md") in p.read_text(errors="ignore")
    ]
    assert not offenders, offenders
