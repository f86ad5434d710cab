# The two commands of the README:
#   make book   build the HTML book (chapters executed at the default scale, on the CPU)
#   make test   lint, unit tests, every chapter executed at "ci" scale under nbval, the
#               book rendered from those same executions with -n -W, and its pages checked
#               in a network-blocked headless browser (tools/check_pages.py)
#   make check-pages [HTML=_build/html]   that browser check alone, on any built book
#   make pdf    the whole book as one PDF, _build/pdf/book.pdf, from make book's executed chapters
#   make lab    teach live: JupyterLab on the book, chapters opened as notebooks
#   make serve  the built book over HTTP on localhost (search with snippets)
#   make lock   recompile the lock requirements.txt from the ranges in requirements.in
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

.PHONY: book test lint clean install check-pages lab lock serve pdf

install: $(STAMP)

# pip byte-compiles everything it installs (about 15 s on 2 cores): where PYTHONDONTWRITEBYTECODE
# is set, as on the CI machine, Python never writes .pyc files itself, and `--no-compile` made every
# process of `make test` compile jax, scipy and matplotlib again (pytest 797 s against 628 s).
# requirements.txt is the lock: the exact versions the tests passed with (`make lock` writes it).
# Installed with uv (the version the lock pins, itself installed by pip): 42 s against pip's
# 112 s from a fresh clone, caches cold, the same `pip freeze`. Where uv cannot be had, pip.
# --compile-bytecode: uv compiles only when asked, and pip's compiling matters (the lines above).
UV_PIN := $(shell grep -m1 -o '^uv==[^ ;]*' requirements.txt)
$(STAMP): requirements.txt pyproject.toml tools/book_offline/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	if $(BIN)/python -m pip install -q $(UV_PIN); then \
	  $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python -r requirements.txt -e .; \
	else \
	  echo "install: no uv here; pip installs the lock"; $(BIN)/python -m pip install -q -r requirements.txt -e .; \
	fi
	touch $(STAMP)

# Recompile the lock from the ranges in requirements.in (uv's resolver, one universal
# resolution for Python 3.11 to 3.13; the versions in the old lock are kept wherever the
# ranges allow). To try the newest versions: make lock LOCK_ARGS=--upgrade, then make test.
LOCK_ARGS ?=
lock: $(STAMP)
	$(BIN)/uv pip compile requirements.in --universal --python-version 3.11 \
	  --custom-compile-command "make lock" -o requirements.txt $(LOCK_ARGS)

book: $(STAMP)
	$(BIN)/python -m gelib batch --scale $(SCALE)

# `make lint` and `make test` print the clock time between their steps ([HH:MM:SS] ...): where a CI
# run's time went (pytest ends with its own table of the longest files: --time-table).
STEP = @echo "[$$(date +%T)]"
lint: $(STAMP)
	$(STEP) lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy
	@if [ -x $(BIN)/actionlint ]; then $(BIN)/actionlint; \
	else echo "lint: no actionlint on this platform (requirements.in): .github/workflows not checked"; fi

test: lint
	$(STEP) tests and chapters, pytest
	rm -rf $(TEST_RUN) _build/test-ci _build/test-ci-pdf _build/test-ci-pdf.log
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_JOBS) --dist loadfile \
	  --nbval-lax --nbval-current-env --executed-dir $(TEST_RUN) --time-table 40 tests book
	$(STEP) render, the whole-book PDF beside it, then the browser check
	@# Two processes at once (2 cores): the PDF's single-page Sphinx build runs beside the render's (each
	@# one core for about 45 s), its print (Chromium, about a minute) beside the browser
	@# check. Both write into the run folder: its manifest is changed under a lock (bookrun/runfolder.py).
	mkdir -p _build/test-ci-pdf
	$(BIN)/python -m gelib pdf $(TEST_RUN) --output _build/test-ci-pdf/book.pdf --check >_build/test-ci-pdf.log 2>&1 & pdf=$$!; \
	  $(BIN)/python -m gelib render $(TEST_RUN) --output _build/test-ci; rendered=$$?; pages=1; \
	  if [ $$rendered -eq 0 ]; then echo "[$$(date +%T)] browser check"; \
	    $(BIN)/python tools/check_pages.py _build/test-ci/_build/html; pages=$$?; fi; \
	  wait $$pdf; made=$$?; echo "[$$(date +%T)] whole-book PDF (exit $$made):"; cat _build/test-ci-pdf.log; \
	  [ $$rendered -eq 0 ] && [ $$pages -eq 0 ] && [ $$made -eq 0 ]
	$(STEP) core words
	$(BIN)/python tools/core_words.py
	$(STEP) make test done

# The whole book as one PDF, from the chapters `make book` executed (its latest complete run of
# SCALE; nothing is executed again): the single-page build printed by the system's headless Chromium
# (bookrun/pdf.py), read back and checked (every chapter's title, no raw TeX, the figures).
PDF ?= _build/pdf/book.pdf
pdf: $(STAMP)
	$(BIN)/python -m gelib pdf --scale $(SCALE) --output $(PDF) --check

# The book as a reader's browser shows it, with no network: every page in the system's
# headless Chromium (2 at a time), no raw TeX left after MathJax, images, links and
# anchors resolve, nothing loaded from the network, the search lists pages.
check-pages: $(STAMP)
	$(BIN)/python tools/check_pages.py $(HTML)

clean:
	rm -rf _build

# A built book over HTTP on this machine only (search shows snippets there; file:// refuses
# the page sources it reads). make serve [HTML=_build/html] [PORT=8000]
PORT ?= 8000
serve:
	@test -f $(HTML)/index.html || { echo "serve: no book at $(HTML) (make book first)"; exit 2; }
	$(PYTHON) -m http.server $(PORT) --bind 127.0.0.1 --directory $(HTML)

LAB_ARGS ?=
# Teaching live: JupyterLab on the book. A double click opens a chapter (book/*.md) as a
# notebook through Jupytext; saving writes the .md back, byte for byte when no cell was
# edited. Configuration: .jupyter/ (see its jupyter_server_config.py) and jupytext.toml.
# More options: make lab LAB_ARGS="--no-browser --port 8890" (as root add --allow-root).
lab: $(STAMP)
	JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	JUPYTER_PATH="$(CURDIR)/.jupyter$${JUPYTER_PATH:+:$$JUPYTER_PATH}" \
	  $(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/book $(LAB_ARGS)
