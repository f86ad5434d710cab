# The two commands of the README:
#   make book   build the HTML book (chapters executed at the default scale, on the CPU)
#   make test   lint, unit tests, every chapter executed at "ci" scale under nbval, the
#               book rendered from those same executions with -n -W, and its pages checked
#               in a network-blocked headless browser (tools/check_pages.py)
#   make check-pages [HTML=_build/html]   that browser check alone, on any built book
#   make lab    teach live: JupyterLab on the book, chapters opened as notebooks
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
SCALE  ?= default
TEST_RUN = _build/runs/test-ci
HTML   ?= _build/html
# Test workers: one per core, at most 4 (a chapter, and most test files, stay on one worker: conftest.py).
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
# One BLAS thread: XLA runs the heavy matrix work on its own thread pool, and
# OpenBLAS threads competing with it made the eigensolver up to 100x slower.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: book test lint clean install check-pages lab

install: $(STAMP)

# pip byte-compiles everything it installs (about 15 s on 2 cores): where PYTHONDONTWRITEBYTECODE
# is set, as on the CI machine, Python never writes .pyc files itself, and `--no-compile` made every
# process of `make test` compile jax, scipy and matplotlib again (pytest 797 s against 628 s).
$(STAMP): requirements.txt pyproject.toml tools/book_offline/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt -e .
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/python -m gelib batch --scale $(SCALE)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy

test: lint
	rm -rf $(TEST_RUN) _build/test-ci
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadfile \
	  --nbval-lax --nbval-current-env --executed-dir $(TEST_RUN) tests book
	$(BIN)/python -m gelib render $(TEST_RUN) --output _build/test-ci
	$(BIN)/python tools/check_pages.py _build/test-ci/_build/html
	$(BIN)/python tools/core_words.py

# The book as a reader's browser shows it, with no network: every page in the system's
# headless Chromium (2 at a time), no raw TeX left after MathJax, images, links and
# anchors resolve, nothing loaded from the network, the search lists pages.
check-pages: $(STAMP)
	$(BIN)/python tools/check_pages.py $(HTML)

clean:
	rm -rf _build

LAB_ARGS ?=
# Teaching live: JupyterLab on the book. A double click opens a chapter (book/*.md) as a
# notebook through Jupytext; saving writes the .md back, byte for byte when no cell was
# edited. Configuration: .jupyter/ (see its jupyter_server_config.py) and jupytext.toml.
# More options: make lab LAB_ARGS="--no-browser --port 8890" (as root add --allow-root).
lab: $(STAMP)
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	JUPYTER_PATH="$(CURDIR)/.jupyter$${JUPYTER_PATH:+:$$JUPYTER_PATH}" \
	  $(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/book $(LAB_ARGS)
