"""``python -m gelib``: the command line (:mod:`bookrun.cli`), which sits on top of the
library and the book's runtime; nothing imports this module (the one import of the
library's that points up, allowed in the architecture contracts of ``pyproject.toml``).

After Ctrl-C (exit status 130) a second Ctrl-C while Python shuts down (JAX's exit
handlers can take a second) is ignored: the command has already said what it did."""

from __future__ import annotations

import signal
import sys

from bookrun.cli import INTERRUPTED_STATUS, main

status = main()
if status == INTERRUPTED_STATUS:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
sys.exit(status)
