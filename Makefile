# make setup | setup-system | setup-cluster | setup-vm | bench | study | size | gpu-check | rehearse | report | bench-ml |
# bench-vm | bench-peer | bench-harness | bench-sampler | test | test-fast | lint | ui | clean
# Hydra overrides come from make variables, e.g.
#   make bench profile=m60-8q scenario=concurrent ARGS='data.root=../shared/data'
SHELL := /bin/bash
# A variable given on the command line or in the environment is text: raw gives it as written (a $(...) in it is
# never run by make) and q as one shell word in single quotes (a ; $(...) ` or quote in it never reaches the shell
# as code). ARGS, several words, goes as one word to suites/makeargs.py, which splits it as a shell would without
# running anything (shlex) and runs the command with them. Variables this file defines are expanded as usual.
raw = $(if $(filter command line environment%,$(origin $(1))),$(value $(1)),$($(1)))
qs = '$(subst ','\'',$(1))'
q = $(call qs,$(call raw,$(1)))
VENV ?= .venv
PY := $(call q,VENV)/bin/python
# TensorFlow: on a GPU host (nvidia-smi lists a GPU, or NVML counts one) the tf-gpu extra (TensorFlow with its CUDA
# libraries), else tf (tensorflow-cpu); said at setup. GPU_HOST=1 or GPU_HOST=0 decides instead of the look.
ifeq ($(origin GPU_HOST),undefined)
GPU_HOST := $(shell { nvidia-smi -L 2>/dev/null | grep -q '^GPU '; } || python3 -c 'import ctypes, sys; \
  nv = ctypes.CDLL("libnvidia-ml.so.1"); n = ctypes.c_uint(); \
  sys.exit(nv.nvmlInit_v2() or nv.nvmlDeviceGetCount_v2(ctypes.byref(n)) or n.value == 0)' >/dev/null 2>&1 \
  && echo 1 || echo 0)
endif
TF_EXTRA := $(if $(filter 1,$(call raw,GPU_HOST)),tf-gpu,tf)
EXTRAS ?= dev,$(TF_EXTRA),graphics,ray,slurm
# Debian packages: headless OpenGL without a GPU (Mesa llvmpipe through EGL), apitrace replay, and
# chromium for the MLflow UI test.
SYSTEM_PKGS := libegl1 libegl-mesa0 libgl1-mesa-dri apitrace chromium
# What the cluster tests start on this host: Slurm with munge and accounting (slurmdbd on MariaDB), see
# tests/support/slurmcluster.py; iproute2 for the network namespace the two-node Ray test runs in. Installed for
# `make test` only; no service is enabled or started by the install.
CLUSTER_PKGS := slurmctld slurmd slurm-client slurmdbd munge mariadb-server iproute2
# backend=vm: QEMU (Debian 12's qemu-system-common brings virtiofsd); the VM image (a Debian kernel and busybox,
# unpacked, no root needed) is built into .vm/ by suites/backends/vm/image.py; cpio lists what its initramfs holds
# (`zcat .vm-nvidia/initrd.gz | cpio -t`: the driver's modules, firmware, user-space).
VM_PKGS := qemu-system-x86 cpio
PORT ?= 5000
CONDA := $(shell command -v conda 2>/dev/null)
STAMP := $(call raw,VENV)/.installed-$(call raw,EXTRAS)
EXTRAS_Q := $(call qs,.[$(call raw,EXTRAS)])
# make setup installs with uv (on PATH, else this release from PyPI into .uv/), falling back to pip. Bytecode is
# compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (CI here), Python never writes it, and
# every guest and test process compiled torch and MLflow from source again (the test suite took 35 min, not 21).
UV_VERSION := 0.13.8
UV_BOOT := .uv
# uv reads no pip configuration: it gets the package sources pip is configured with on this machine (local indexes,
# wheel folders), and pip's rule of taking the best version from any of them, so both install the same files. Asked
# only when an install runs (`=`, not `:=`): pip's start is half a second of CPU, and every make command paid it.
PIP_INDEXES = $(shell python3 -m pip config get global.extra-index-url 2>/dev/null)
PIP_LINKS = $(or $(PIP_FIND_LINKS),$(shell python3 -m pip config get global.find-links 2>/dev/null))
UV_SOURCES = --index-strategy unsafe-best-match $(foreach u,$(PIP_INDEXES),--extra-index-url $(u)) \
              $(foreach d,$(PIP_LINKS),--find-links $(d))
comma := ,
# A comma in profile/workload/scenario is a Hydra sweep: `make bench -m profile=m60-1q,m60-8q` (make ignores -m);
# multirun=1 makes any command one (a single run submitted through launcher=slurm is a sweep of one point).
SWEEP := $(if $(or $(findstring $(comma),$(call raw,profile)$(call raw,workload)$(call raw,scenario)),\
           $(call raw,multirun)),--multirun)
# launcher=slurm (configs/hydra/launcher/slurm.yaml) or submitit_local runs the sweep's jobs through submitit.
override = $(if $(call raw,$(1)),$(call qs,$(2)=$(call raw,$(1))))
OVERRIDES := $(SWEEP) $(call override,profile,profile) $(call override,workload,workload) \
             $(call override,scenario,scenario) $(call override,launcher,hydra/launcher) \
             $(call override,backend,backend)
# A command with the user's ARGS after its own: python -m suites.makeargs '<ARGS>' suites <command> ...
SUITES = $(PY) -m suites.makeargs $(call q,ARGS) suites
# BARE=1: a GPU host without network or venv (../shared/device/prepare.sh's wheels on PYTHONPATH, the line it prints
# before make): the image's python3, nothing set up. Every command a user runs takes it (bench, report, compare,
# rehearse, ui, gpu-check, study, size, bench-ml, bench-peer: tests/e2e/test_makefile.py): unless_bare drops a
# target's set-up prerequisites, BARE_PY is the Python its recipe runs.
unless_bare = $(if $(call raw,BARE),,$(1))
BARE_PY = $(if $(call raw,BARE),python3,$(PY))
BARE_SUITES = $(BARE_PY) -m suites.makeargs $(call q,ARGS) suites

.PHONY: setup setup-system setup-cluster setup-vm report compare publish check-results catalog rerun bench study size gpu-check rehearse bench-ml bench-vm bench-peer bench-harness bench-sampler test test-fast lint \
        ui clean

setup: $(STAMP)

$(STAMP): pyproject.toml environment.yml
	@echo "setup: TensorFlow from the $(TF_EXTRA) extra ($(if $(filter 1,$(call raw,GPU_HOST)),a GPU answered (nvidia-smi or \
	NVML): TensorFlow with its CUDA libraries,no GPU answered (nvidia-smi nor NVML): tensorflow-cpu); GPU_HOST=0|1 \
	decides instead)"
ifneq ($(CONDA),)
	@echo "setup: conda env at "$(call q,VENV)" from environment.yml"
	conda env create --yes -p $(call q,VENV) -f environment.yml
	$(PY) -m pip install -e $(EXTRAS_Q)
else
	@uv=$$(command -v uv || { test -x $(UV_BOOT)/bin/uv || python3 -m pip install --quiet --target $(UV_BOOT) \
	  uv==$(UV_VERSION) >/dev/null 2>&1; test -x $(UV_BOOT)/bin/uv && echo $(UV_BOOT)/bin/uv; }); \
	if [ -n "$$uv" ]; then \
	  echo "setup: venv at "$(call q,VENV)" with $$uv ($$($$uv --version))"; \
	  { test -x $(PY) || $$uv venv --quiet --python python3 $(call q,VENV); } && \
	  $$uv pip install --quiet --compile-bytecode --python $(PY) $(UV_SOURCES) -e $(EXTRAS_Q); \
	else \
	  echo "setup: uv could not be had (not on PATH; pip install uv==$(UV_VERSION) failed): installing with pip"; \
	  { test -x $(PY) || python3 -m venv $(call q,VENV); } && \
	  { $(PY) -m pip --version >/dev/null 2>&1 || $(PY) -m ensurepip --quiet; } && \
	  $(PY) -m pip install --quiet -e $(EXTRAS_Q); \
	fi
endif
	touch $(call qs,$@)

# Installs only what is missing; as root directly, else through sudo, else says what to run.
define apt_install
	@missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | \
	  grep -q '^install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "$@: $(1) present"; \
	elif ! command -v apt-get >/dev/null; then echo "$@: no apt-get; install these (or their equivalents): $$missing"; \
	else sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); echo "$@: installing $$missing"; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; fi
endef

setup-system:
	$(call apt_install,$(SYSTEM_PKGS))

setup-cluster:
	$(call apt_install,$(CLUSTER_PKGS))

# VM_DRIVER=open: also .vm-nvidia, with NVIDIA's open kernel modules built for the image kernel, their GSP firmware,
# user-space and EGL (Debian contrib/non-free; gcc and make; CUDA 12.x only); VM_DRIVER=<NVIDIA-Linux-x86_64-*.run>:
# NVIDIA's own driver (passthrough, CUDA 13 needs 580+), VM_DRIVER=<NVIDIA-Linux-x86_64-*-grid.run>: the GRID guest
# driver a vGPU needs, both from the user's file, read as data. A driver older than the guest's torch needs is
# refused before anything is built. See docs/vm.md.
setup-vm: setup
	$(call apt_install,$(VM_PKGS) $(if $(call raw,VM_DRIVER),gcc make xz-utils))
	$(PY) -m suites.backends.vm.image
	$(if $(call raw,VM_DRIVER),$(PY) -m suites.backends.vm.image --driver $(call q,VM_DRIVER))

bench: $(call unless_bare,setup setup-system $(if $(filter vm,$(call raw,backend)),setup-vm))
	$(BARE_SUITES) bench $(OVERRIDES)

# The reference study in one command: every part this host can run, sized by study.budget_s, one report in
# outputs/study/<time>/ (ARGS='study.budget_s=900 data.root=../shared/data'; --plan shows the plan only).
study: $(call unless_bare,setup setup-system)
	$(BARE_SUITES) study

# A sizing: which profile, CAD guests per GPU, GPUs, hosts and cost per user for a mix, each with its confidence
# range; one report in outputs/sizing/<time>/ (ARGS='sizing.mix={cad:40,ml:4} sizing.gpu=L40S'). docs/sizing.md
size: $(call unless_bare,setup setup-system)
	$(BARE_SUITES) size

# Every GPU path of the suite in one command: table, outputs/gpu-check/<time>/ and one tarball (ARGS='data.root=...
# strict=true only=a,b2'). BARE=1: the bare GPU image's python3 with PYTHONPATH set (../shared/device/prepare.sh), no
# venv or Debian packages installed.
gpu-check: $(call unless_bare,setup setup-system)
	$(BARE_SUITES) gpu-check

# The mixed / consolidation scenarios' report from the MLflow store (latest mixed and consolidation runs; the store and
# experiment defaults are suites/config/schema.py's, like every CLI's).
report: $(call unless_bare,setup)
	$(BARE_SUITES) report

# What changed between two runs of one kind (A=<run id or run directory> B=...; LATEST=1: this machine's two newest;
# HISTORY=<figure>: that figure over this machine's runs): B / A per figure with its interval and verdict, the set-ups'
# differences; ARGS='--fail-on slower:5' exits 1 where a figure is slower by more (a nightly job's gate).
compare: $(call unless_bare,setup)
	$(BARE_SUITES) compare $(if $(call raw,A),$(call qs,$(call raw,A))) $(if $(call raw,B),$(call qs,$(call raw,B))) \
	  $(if $(call raw,LATEST),--latest) $(if $(call raw,HISTORY),--history $(call qs,$(call raw,HISTORY)))

# Results a site publishes and anyone checks (docs/results.md, docs/run-rules.md): RUN=<run id or run directory> as one
# bundle in outputs/bundles/ (REFERENCE=1: the reference study's); BUNDLE=<file> judged by the run rules (not
# compliant: its command exits 1, make then 2); DIR=<folder of bundles> as a static site in outputs/catalog/;
# BUNDLE=<file> rerun on this host.
publish: $(call unless_bare,setup)
	$(BARE_SUITES) publish $(if $(call raw,RUN),$(call qs,$(call raw,RUN))) $(if $(call raw,REFERENCE),--reference)

check-results: $(call unless_bare,setup)
	$(BARE_SUITES) check-results $(call qs,$(call raw,BUNDLE))

catalog: $(call unless_bare,setup)
	$(BARE_SUITES) catalog $(call qs,$(call raw,DIR))

rerun: $(call unless_bare,setup)
	$(BARE_SUITES) rerun $(call qs,$(call raw,BUNDLE))

# make gpu-check's own campaign at a GPU's measured speed, on any host (GPU=h200 | a device file; ONLY=a,b1,j: a
# subset of its checks): stand-ins at the device file's step and frame times through the campaign executor, each
# check's judge, on the device's clock (a check the device would not start within its budget: "would overrun"), one
# table, exit 1 on a miss. Not a measurement: nothing is recorded. configs/device/<gpu>.json
rehearse: $(call unless_bare,setup)
	$(BARE_SUITES) rehearse --gpu $(call qs,$(or $(call raw,GPU),h200)) $(if $(call raw,ONLY),--only $(call qs,$(call raw,ONLY)))

# images/s per workload in a guest vs a bare loop in one process (the harness's cost).
bench-ml: $(call unless_bare,setup)
	$(BARE_SUITES) bench-ml

# What a guest VM costs next to a guest process: boot, start skew of 2 and 4 VMs, in-VM / process throughput.
bench-vm: setup setup-vm
	$(SUITES) bench-vm

# cifar10-torch beside the published CIFAR-10 speed record (PyPI airbench's airbench94), interleaved in one process:
# images/s of both with their CI, the ratio and its verdict (goal >= 0.95); ARGS='--flops' for parameters and FLOPs.
bench-peer: $(call unless_bare,setup)
	$(BARE_SUITES) bench-peer

# The suite's own cost per repeat (one timed window's end to the next one's start) and measured share, over a
# fixed-step gpu-vs-cpu comparison at a GPU's step (2 phases x 3 repeats, 1 s windows), beside an empty Python
# process and an import of torch; ARGS='--rounds 5'. Goals: <= 0.5 s per repeat, <= 12 s a comparison.
bench-harness: $(call unless_bare,setup)
	$(BARE_SUITES) bench-harness

# What sampling costs at 1/10/50 Hz, next to MLflow's system-metrics monitor.
bench-sampler: setup
	$(PY) -m suites.makeargs $(call q,ARGS) gpu_probe.selfmeasure_sampler

# Bytecode for the suite's own modules first: where PYTHONDONTWRITEBYTECODE is set (CI here) every one of the
# hundreds of processes the tests start would compile them again.
# The VM image is built where it can be (Debian); elsewhere tests/e2e/test_vm.py skips its VMs, saying why.
# The tests that need the host to themselves (marked alone) run after the others, one by one: among them, each one
# held every other test process at the gate until the tests they were running ended (150 s of waiting in one CI run).
# They are e2e tests (tests/test_layout.py checks it): that step collects tests/e2e only, not all 2,400 tests again.
test: setup setup-system setup-cluster lint
	@# the unit tier imports on a checkout without .vm/ (a fresh clone's make test-fast), before setup-vm builds it
	$(PY) -m pytest --collect-only -q -p no:randomly tests/unit tests/test_layout.py >/dev/null
	@$(MAKE) --no-print-directory setup-vm || echo "test: setup-vm failed: the VM tests will be skipped"
	$(PY) -m compileall -q suites gpu_probe tests >/dev/null
	$(PY) -m pytest -m "not alone"
	$(PY) -m pytest -m alone -n 0 tests/e2e

# The edit loop: the unit tier (tests/unit: nothing that starts a CLI, guest, cluster or VM) and the layout test, less
# its tests marked heavy (a second or more each: a real store written, a whole sizing or study planned; make test
# runs them).
test-fast: setup lint
	$(PY) -m pytest tests/unit tests/test_layout.py -m "not heavy" -n 2 --dist load --durations=10

lint: setup
	$(call q,VENV)/bin/ruff check .

# MLflow's UI on the default store; URI=sqlite:///... opens another (a run that fell back names its store). Without
# MLflow 3's job execution unless you set MLFLOW_SERVER_ENABLE_JOB_EXECUTION: its GenAI job runners (8 more
# processes, 30 s of CPU at start on 2 cores) serve nothing a benchmark's runs need. Without MLflow's usage telemetry
# unless you set MLFLOW_DISABLE_TELEMETRY or DO_NOT_TRACK (as every `python -m suites` command: suites/commands).
NO_TELEMETRY = $(if $(and $(filter undefined,$(origin MLFLOW_DISABLE_TELEMETRY)),$(filter undefined,$(origin DO_NOT_TRACK))),MLFLOW_DISABLE_TELEMETRY=true)
ui: $(call unless_bare,setup)
	@mkdir -p outputs
	@$(BARE_PY) -c 'import sys; from suites.config.schema import EXPERIMENT; from suites.record.store import runs_url; print(runs_url(sys.argv[1], EXPERIMENT, sys.argv[2]), "  (it answers once the server below says Application startup complete: ~40 s on 2 cores)", sep="\n")' \
	  $(if $(call raw,URI),$(call q,URI),"$$($(BARE_PY) -c 'from suites.config.schema import TRACKING_URI; print(TRACKING_URI)')") $(call q,PORT)
	$(NO_TELEMETRY) MLFLOW_SERVER_ENABLE_JOB_EXECUTION=$${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false} $(if $(call raw,BARE),python3 -m mlflow,$(call q,VENV)/bin/mlflow) ui --backend-store-uri $(if $(call raw,URI),$(call q,URI),"$$($(BARE_PY) -c 'from suites.config.schema import TRACKING_URI; print(TRACKING_URI)')") \
	  --host 127.0.0.1 --port $(call q,PORT)

clean:
	rm -rf outputs multirun .pytest_cache .ruff_cache
