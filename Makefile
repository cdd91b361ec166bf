# nashzoo: the two commands in README.md are `make race` and `make test`.
# Both create .venv on first use (CPU torch first, so pip never pulls a multi-GB CUDA build).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0

.PHONY: setup race test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "nashzoo needs Python 3.10+, found " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e ".[all]"
	@touch $@

race: setup
	$(BIN)/nashzoo race --force

test: setup
	$(BIN)/ruff check nashzoo tests benchmarks
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check nashzoo tests benchmarks
	$(BIN)/ruff format --check nashzoo tests benchmarks

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
