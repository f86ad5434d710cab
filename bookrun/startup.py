"""Faster starts for the processes the batch, the render and the PDF spawn.

Every process that imports ``nbformat`` (Papermill's workers, Jupyter Book's builds) imports
``jsonschema``, whose format checkers import ``rfc3987_syntax`` where it is installed (Jupyter's
``jsonschema[format-nongpl]`` brings it): it compiles some 35 Earley parsers at import, 1.0 s of
each such start on the CI machine's kind (``python -X importtime -c "import papermill"``: 1.38 s,
0.40 s without it), for the ``iri`` formats that no notebook or book schema uses. Marked absent
(:func:`skip_slow_imports`), ``jsonschema`` leaves out those two checkers, as it does wherever the
package is not installed (its import is guarded); nothing else changes.
"""

from __future__ import annotations

import sys

__all__ = ["SKIPPED_MODULES", "skip_slow_imports", "jupyter_book_command"]

#: The modules marked absent in the processes started through this module.
SKIPPED_MODULES = ("rfc3987_syntax",)

_PRELUDE = f"import sys\nfor _m in {SKIPPED_MODULES!r}:\n    sys.modules.setdefault(_m, None)\n"


def skip_slow_imports() -> None:
    """Mark :data:`SKIPPED_MODULES` absent in this process (before anything imports ``nbformat``)."""
    for name in SKIPPED_MODULES:
        sys.modules.setdefault(name, None)


def jupyter_book_command(*args: str) -> list[str]:
    """The command line of ``jupyter-book ARGS`` with this Python, :data:`SKIPPED_MODULES` marked absent."""
    code = _PRELUDE + "from jupyter_book.cli.main import main\nsys.argv[0] = 'jupyter-book'\nsys.exit(main())\n"
    return [sys.executable, "-c", code, *args]
