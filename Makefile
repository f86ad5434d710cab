# The two commands of the README:
#   make book   build the HTML book (chapters executed at the default scale, on the CPU)
#   make test   unit tests, plus every chapter executed at "ci" scale under nbval
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
SCALE  ?= default
# One BLAS thread: XLA runs the heavy matrix work on its own thread pool, and
# OpenBLAS threads competing with it made the eigensolver up to 100x slower.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: book test clean install

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -r requirements.txt -e .
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/python -m gelib batch --scale $(SCALE)

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env tests book

clean:
	rm -rf _build
