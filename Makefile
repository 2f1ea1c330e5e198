# make setup | bench | bench-ml | bench-sampler | test | lint | ui | clean
# Hydra overrides come from make variables, e.g.
#   make bench profile=m60-8q scenario=concurrent ARGS='data.root=../shared/data'
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= dev,tf
PORT ?= 5000
CONDA := $(shell command -v conda 2>/dev/null)
STAMP := $(VENV)/.installed-$(EXTRAS)
OVERRIDES := $(if $(profile),profile=$(profile)) $(if $(workload),workload=$(workload)) \
             $(if $(scenario),scenario=$(scenario)) $(ARGS)

.PHONY: setup bench bench-ml bench-sampler test lint ui clean

setup: $(STAMP)

$(STAMP): pyproject.toml environment.yml
ifneq ($(CONDA),)
	@echo "setup: conda env at $(VENV) from environment.yml"
	conda env create --yes -p $(VENV) -f environment.yml
	$(PY) -m pip install -e '.[$(EXTRAS)]'
else
	@echo "setup: venv at $(VENV) (no conda found)"
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
endif
	touch $@

bench: setup
	$(PY) -m suites.bench $(OVERRIDES)

# images/s per workload in a guest vs a bare loop in one process (the harness's cost).
bench-ml: setup
	$(PY) -m suites.bench_ml $(ARGS)

# What sampling costs at 1/10/50 Hz, next to MLflow's system-metrics monitor.
bench-sampler: setup
	$(PY) -m gpu_probe.bench_sampler $(ARGS)

test: setup lint
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check .

ui: setup
	@mkdir -p outputs
	$(VENV)/bin/mlflow ui --backend-store-uri sqlite:///outputs/mlflow.db --host 127.0.0.1 --port $(PORT)

clean:
	rm -rf outputs multirun .pytest_cache .ruff_cache
