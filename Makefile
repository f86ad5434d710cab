# The two commands of the README:
#   make book   build the HTML book (chapters executed at the default scale, on the CPU)
#   make test   lint, unit tests, every chapter executed at "ci" scale under nbval, and the
#               book rendered from those same executions with -n -W
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
SCALE  ?= default
TEST_RUN = _build/runs/test-ci
# One BLAS thread: XLA runs the heavy matrix work on its own thread pool, and
# OpenBLAS threads competing with it made the eigensolver up to 100x slower.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: book test lint clean install

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt -e .
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/python -m gelib batch --scale $(SCALE)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	rm -rf $(TEST_RUN)
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env --executed-dir $(TEST_RUN) tests book
	$(BIN)/python -m gelib render $(TEST_RUN) --output _build/test-ci

clean:
	rm -rf _build
