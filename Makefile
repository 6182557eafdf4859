# Two commands on a fresh machine with Python 3.11+ and pip:
#   make demo   set up a virtual environment and run the demo on generated data
#   make test   lint, type-check, build the documentation in strict mode and run the tests on
#               two legs: the whole suite on $(PYTHON) (python3: 3.11 and ArviZ 0.23 here), then
#               lint, the demo, the ArviZ tutorials and every test module that touches ArviZ,
#               Pyro or BoTorch on the newest Python found (3.13 and ArviZ 1.x here;
#               tools/find-python --newest)
#   make docs   build the documentation site into docs/_build/html (strict: any warning fails)
# Another Python: make demo PYTHON=python3.13 (a name on the PATH, a pyenv version, or a path).
# Each Python gets its own environment: .venv for python3, .venv-3.N for another 3.N.
PYTHON ?= python3
PY := $(shell tools/find-python $(PYTHON))
PYVER := $(if $(PY),$(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])'))
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-$(PYVER))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_WORKERS ?= 2
EXTRAS := test,docs,minilm,mediqa,interactive,serve,pyterrier,ray
TEST_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 MPLBACKEND=Agg
# the second leg: the newest Python on the machine (empty when none: an error under CI=true)
NEWEST ?= $(shell tools/find-python --newest)
# test modules that import ArviZ, Pyro, BoTorch or GPyTorch, or probrank's parts built on them
# (the pooling strategy's module fits probrank.models.pooling, with Pyro's NUTS as an option;
# not tests/docs: the site is built, and its tests run, on the first leg)
STACK_TESTS = $(shell grep -lrE '^\s*(import|from) (pyro|botorch|arviz|gpytorch)\b|probrank(\.|/)(_arviz|diagnostics|inference|posteriors|acquisition|likelihoods|nn|models|interactive|demo|evaluation\.bayesian|pooling\.strategies\.bayesian)' tests --include='test_*.py' | grep -v '^tests/docs/' | sort)

.PHONY: demo test lint docs pytest second-leg leg-demo leg-pytest bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	@test -n "$(PY)" || { echo "make: no working $(PYTHON) found (tools/find-python $(PYTHON))"; exit 2; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[$(EXTRAS)]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/probrank demo

lint: $(STAMP)
	$(BIN)/ruff check probrank tests benchmarks docs/*.py
	$(BIN)/ruff format --check probrank tests benchmarks docs/*.py
	$(BIN)/mypy probrank

# the site: API pages from the docstrings, the tutorials executed (SMOKE_TEST=1); -W -n: a broken
# cross-reference, a missing page, a dead internal link or a docstring that does not render fails
docs: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m sphinx -j 2 -b html -n -W --keep-going -q docs docs/_build/html
	@echo "make: the site is in docs/_build/html (open docs/_build/html/index.html)"

# the tutorials were executed by `docs` (tests/docs check their rendered outputs)
pytest: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=15 \
	  -k "not test_tutorial_runs_in_smoke_mode"

# the second leg, in .venv-3.N of the newest Python: lint, the demo (no warning may reach its
# output), the tutorials that use ArviZ and the test modules of STACK_TESTS
second-leg:
	@if [ -z "$(NEWEST)" ]; then \
	  if [ "$$CI" = true ]; then echo "make: no Python 3.12+ found for the second leg (tools/find-python --newest)"; exit 1; fi; \
	  echo "make: no Python 3.12+ found: the second leg is skipped (an error under CI=true)"; exit 0; fi
	$(MAKE) --no-print-directory PYTHON=$(NEWEST) lint leg-demo leg-pytest

leg-demo: $(STAMP)
	out=$$(mktemp -d) && $(BIN)/probrank demo -o $$out --threads 2 2> $$out.stderr; \
	  status=$$?; cat $$out.stderr >&2; test $$status -eq 0 || exit $$status; \
	  if grep -nE "Warning|warnings\.warn" $$out.stderr; then echo "make: the demo printed warnings"; exit 1; fi

leg-pytest: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=10 \
	  $(STACK_TESTS) tests/test_tutorials.py -k "not test_tutorial_runs_in_smoke_mode or 06_ or 07_"

test: lint docs pytest second-leg

bench: $(STAMP)
	$(BIN)/python -m pip install --disable-pip-version-check -q -c constraints.txt -e ".[bench]"
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf .venv .venv-* probrank-demo .pytest_cache .mypy_cache .ruff_cache .hypothesis docs/_build docs/api docs/tutorials
