"""``python -m gelib``: the command line (:mod:`bookrun.cli`), which sits on top of the
library and the book's runtime; nothing imports this module (the one import of the
library's that points up, allowed in the architecture contracts of ``pyproject.toml``)."""

from __future__ import annotations

import sys

from bookrun.cli import main

sys.exit(main())
