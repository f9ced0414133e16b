# Two commands on a fresh machine: `make demo` and `make test`. Both set up what they need.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The fonts are the ones the FSM renderer's themes name, so pages look the same everywhere.
SYSTEM_PACKAGES := chromium chromium-driver xvfb openbox xdotool xterm python3-tk bubblewrap iproute2 nftables \
  fonts-dejavu-core fonts-dejavu-extra fonts-liberation fonts-urw-base35 fonts-inter fonts-roboto fonts-noto-core
# Debian's python3 has no `venv` (ensurepip) without python3-venv; a Python of its own
# (pyenv, a python image) has it. Also installs python3 where there is none.
ifeq ($(filter /usr/bin/%,$(realpath $(PYTHON))),)
ifeq ($(PYTHON),)
SYSTEM_PACKAGES += python3 python3-venv
PYTHON := /usr/bin/python3
endif
else
SYSTEM_PACKAGES += python3 python3-venv
endif
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system-packages containers verl-venv demo test bench lint clean

setup: system-packages $(STAMP)

system-packages:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# A venv whose pip does not run (e.g. `venv` failed in ensurepip, leaving bin/python) is
# made again; a working one is kept.
# torch==2.13.0 first: an unpinned torch (asked for by the `train` extra) would pull
# several GB of CUDA packages. It is the CPU build only because this host's pip config
# finds /opt/wheels/torch-2.13.0+cpu (find-links in ~/.config/pip/pip.conf and
# $PIP_FIND_LINKS; /etc/xdg/pip caps torch at the releases on disk); elsewhere pip gets
# PyPI's CUDA build unless given --index-url https://download.pytorch.org/whl/cpu.
$(STAMP): pyproject.toml
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[train,trl,dev,ray,skyrl,desktop,miniwob,export,openenv]'
	@rm -rf cua_harness.egg-info  # a stale one in the root shadows the installed entry points
	@touch $(STAMP)

# verl's agent-loop adapter is tested in a venv of its own: verl 0.9.1 pins transformers
# below what .venv's TRL needs. Exact pins (requirements/verl.txt) keep pip from backtracking;
# the harness goes in without its dependencies (the pins hold what its import path needs).
# Cached like setup: a second run only checks the stamp.
VERL_VENV := .venv-verl
VERL_PY := $(VERL_VENV)/bin/python
VERL_STAMP := $(VERL_VENV)/.installed-stamp

verl-venv: $(VERL_STAMP)

$(VERL_STAMP): requirements/verl.txt pyproject.toml
	@$(VERL_PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VERL_VENV) && $(PYTHON) -m venv $(VERL_VENV); }
	$(VERL_PY) -m pip install -q --upgrade pip
	$(VERL_PY) -m pip install -q torch==2.13.0
	$(VERL_PY) -m pip install -q -r requirements/verl.txt
	$(VERL_PY) -m pip install -q --no-deps -e .
	@rm -rf cua_harness.egg-info
	$(VERL_PY) -c "import trainers.adapters.verl_loop, trainers.adapters.verl_main_ppo"
	@touch $(VERL_STAMP)

demo: setup
	$(VENV)/bin/cua demo

# Podman as the Docker engine of the container tests (and of --provider docker): packages,
# the API socket, a base image without a registry, the harness image. Cached: a second run
# only checks (see scripts/podman_setup.sh).
containers: setup
	PY=$(abspath $(PY)) scripts/podman_setup.sh

# The container images and the verl venv are independent: built side by side. The tests run
# on two workers, a file at a time each (--dist loadfile: a file's module fixtures, its shared
# browser and site servers stay in one process); on 2 cores that is 13 minutes, not 21,
# because most of a browser test is waiting.
test: setup
	@$(MAKE) --no-print-directory -j2 containers verl-venv
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile

bench: setup
	$(PY) -m benchmarks.run_all

lint: setup
	$(VENV)/bin/ruff check harness sandboxes fsm_sites trainers tests benchmarks
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(VERL_VENV) .venv-core runs .pytest_cache .wheelhouse
