# make setup | setup-system | bench | study | report | bench-ml | bench-sampler | test | lint | ui | clean
# Hydra overrides come from make variables, e.g.
#   make bench profile=m60-8q scenario=concurrent ARGS='data.root=../shared/data'
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= dev,tf,graphics,ray,slurm
# Debian packages: headless OpenGL without a GPU (Mesa llvmpipe through EGL), apitrace replay, and
# chromium for the MLflow UI test.
SYSTEM_PKGS := libegl1 libegl-mesa0 libgl1-mesa-dri apitrace chromium
PORT ?= 5000
CONDA := $(shell command -v conda 2>/dev/null)
STAMP := $(VENV)/.installed-$(EXTRAS)
comma := ,
# A comma in profile/workload/scenario is a Hydra sweep: `make bench -m profile=m60-1q,m60-8q` (make ignores -m).
SWEEP := $(if $(findstring $(comma),$(profile)$(workload)$(scenario)),--multirun)
# launcher=slurm (configs/hydra/launcher/slurm.yaml) or submitit_local runs the sweep's jobs through submitit.
OVERRIDES := $(SWEEP) $(if $(profile),profile=$(profile)) $(if $(workload),workload=$(workload)) \
             $(if $(scenario),scenario=$(scenario)) $(if $(launcher),hydra/launcher=$(launcher)) $(ARGS)

.PHONY: setup setup-system report bench study bench-ml bench-sampler test lint ui clean

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

# Installs only what is missing; as root directly, else through sudo, else says what to run.
setup-system:
	@missing=$$(for p in $(SYSTEM_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	  grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "setup-system: $(SYSTEM_PKGS) present"; \
	elif ! command -v apt-get >/dev/null; then echo "setup-system: no apt-get; install Mesa EGL and apitrace for: $$missing"; \
	else sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); echo "setup-system: installing $$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; fi

bench: setup setup-system
	$(PY) -m suites.app.bench $(OVERRIDES)

# The reference study in one command: every part this host can run, sized by study.budget_s, one report in
# outputs/study/<time>/ (ARGS='study.budget_s=900 data.root=../shared/data'; --plan shows the plan only).
study: setup setup-system
	$(PY) -m suites.app.study $(ARGS)

# The mixed-workload study's report from the MLflow store (latest mixed and consolidation runs; the store and
# experiment defaults are suites/config/schema.py's, like every CLI's).
report: setup
	$(PY) -m suites.app.report $(ARGS)

# images/s per workload in a guest vs a bare loop in one process (the harness's cost).
bench-ml: setup
	$(PY) -m suites.app.bench_ml $(ARGS)

# What sampling costs at 1/10/50 Hz, next to MLflow's system-metrics monitor.
bench-sampler: setup
	$(PY) -m gpu_probe.bench_sampler $(ARGS)

test: setup setup-system lint
	$(PY) -m pytest

lint: setup
	$(VENV)/bin/ruff check .

ui: setup
	@mkdir -p outputs
	$(VENV)/bin/mlflow ui --backend-store-uri "$$($(PY) -c 'from suites.config.schema import TRACKING_URI; print(TRACKING_URI)')" \
	  --host 127.0.0.1 --port $(PORT)

clean:
	rm -rf outputs multirun .pytest_cache .ruff_cache
