# Two commands on a fresh machine: `make run` and `make test`.
# Each creates .venv (Python >= 3.11) and installs the project when needed.

VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

# The first interpreter on PATH that is really Python >= 3.11 (pyenv shims may exist but not run).
PYTHON ?= $(shell for p in python3 python3.13 python3.12 python3.11; do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { echo $$p; break; }; \
	done)

.PHONY: run test bench screenshots clean

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "kode-tui needs Python >= 3.11 on PATH" >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/kode-tui $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto $(ARGS)

screenshots: $(STAMP)
	$(BIN)/python scripts/screenshots.py $(ARGS)

# Every benchmark, then one results table (bench/run_all.py --help for ARGS).
bench: $(STAMP)
	$(BIN)/python bench/run_all.py $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache
