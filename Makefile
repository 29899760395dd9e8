# privtext: `make demo` and `make test` set everything up on a fresh machine (Python 3.11, Java 17).
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.setup-done
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PYSPARK_PYTHON := $(CURDIR)/$(PY)
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(PY)

.PHONY: setup demo test test-fast bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	@java -version 2>&1 | grep -qE 'version "17\.' || { echo "Java 17 is required (java -version)"; exit 1; }
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $(STAMP)

demo: setup
	$(VENV)/bin/privtext demo

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests

bench: setup
	@for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf lakehouse benchmarks/out
