# nashzoo: the two commands in README.md are `make race` and `make test`.
# Both create .venv on first use (CPU torch first, so pip never pulls a multi-GB CUDA build).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0

MIN_VENV := .venv-min
# The oldest supported Python runs the lowest dependencies where the machine has one (python3.10
# on PATH, or a pyenv 3.10 even if not selected); elsewhere PYTHON does.
MIN_PYTHON ?= $(or $(shell for p in python3.10 $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.10*/bin/python3.10; do \
	$$p -c 'import sys; print(sys.executable)' 2>/dev/null && break; done),$(PYTHON))
# The torch-free tests: environments, games, exact evaluation, tabular learners, tournaments.
MIN_TESTS := tests/test_envs.py tests/test_env_parity.py tests/test_single_agent.py \
	tests/test_games.py tests/test_eval.py tests/test_cfr.py tests/test_mccfr.py tests/test_xfp.py \
	tests/test_regret_matching.py tests/test_policy.py tests/test_tournament.py tests/test_threads.py \
	tests/test_seat_worker.py tests/test_compile_paths.py tests/test_many_threads.py \
	tests/test_tree_pickles.py tests/test_policy_file_stream.py

RLLIB_VENV := .venv-rllib

# pytest-xdist workers for the suites (auto: one per CPU core); PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto

.PHONY: setup race test test-min test-rllib lint typecheck bench clean

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

# A test process that dies of a signal leaves tests/conftest.py's .pytest-running behind: name
# the test it died in, which the crash's own report (the last lines CI keeps) does not. With
# workers, pytest-xdist names the test a dead worker was running itself. Each suite removes a
# file left by an earlier run first: a run with workers never writes or removes it, and an
# ordinary failure was reported as a death in the earlier run's test.
DIED_IN = status=$$?; test ! -f .pytest-running || echo "the test process died (exit status \
	$$status) in $$(cat .pytest-running)"; rm -f .pytest-running; exit $$status

test: setup
	$(BIN)/ruff check nashzoo tests benchmarks
	@rm -f .pytest-running
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS) || { $(DIED_IN); }

# The core dependencies at exactly their declared lower bounds (pyproject.toml's `>=` read as
# `==`), in a venv of their own, running the tests that need nothing else.
test-min: $(MIN_VENV)/.installed
	$(MIN_VENV)/bin/python --version
	$(MIN_VENV)/bin/python -m pip list 2>/dev/null | grep -iE '^(numpy|scipy|gymnasium|pettingzoo|tqdm|threadpoolctl) '
	@rm -f .pytest-running
	$(MIN_VENV)/bin/python -m pytest -p no:cacheprovider -n $(PYTEST_WORKERS) $(MIN_TESTS) || { $(DIED_IN); }

$(MIN_VENV)/.installed: pyproject.toml Makefile
	$(MIN_PYTHON) -m venv $(MIN_VENV)
	sed -n '/^dependencies = \[/,/^\]/p' pyproject.toml | grep -o '"[^"]*"' | tr -d '"' \
		| sed 's/>=/==/' > $(MIN_VENV)/lowest.txt
	$(MIN_VENV)/bin/python -m pip install --quiet -c $(MIN_VENV)/lowest.txt -e . "pytest>=7" "pytest-xdist>=3" "hypothesis>=6"
	@touch $@

# RLlib pins its own Gymnasium, so its adapter is tested in a venv of its own (`rllib` extra).
test-rllib: $(RLLIB_VENV)/.installed
	@rm -f .pytest-running
	$(RLLIB_VENV)/bin/python -m pytest -p no:cacheprovider tests/test_rllib.py || { $(DIED_IN); }

$(RLLIB_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(RLLIB_VENV)
	$(RLLIB_VENV)/bin/python -m pip install --quiet $(TORCH)
	$(RLLIB_VENV)/bin/python -m pip install --quiet -e ".[rllib]" "pytest>=7" "hypothesis>=6"
	@touch $@

lint: setup
	$(BIN)/ruff check nashzoo tests benchmarks
	$(BIN)/ruff format --check nashzoo tests benchmarks

# mypy over the package, with the settings in pyproject.toml's [tool.mypy].
typecheck: setup
	$(BIN)/mypy nashzoo

bench: setup
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) $(MIN_VENV) $(RLLIB_VENV) build *.egg-info .pytest_cache .ruff_cache
