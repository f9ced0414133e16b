# Two commands on a fresh machine: `make demo` and `make test`. Both set up what they need.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The fonts are the ones the FSM renderer's themes name, so pages look the same everywhere.
SYSTEM_PACKAGES := chromium chromium-driver xvfb openbox xdotool bubblewrap iproute2 \
  fonts-dejavu-core fonts-dejavu-extra fonts-liberation fonts-urw-base35
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup system-packages demo test bench lint clean

setup: system-packages $(STAMP)

system-packages:
	@missing=""; for p in $(SYSTEM_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# torch==2.13.0 first: on this CPU machine that wheel is on disk, while an unpinned
# torch (asked for by the `train` extra) would pull several GB of CUDA packages.
$(STAMP): pyproject.toml
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[train,dev]'
	@touch $(STAMP)

demo: setup
	$(VENV)/bin/cua demo

test: setup
	$(PY) -m pytest -q -p no:cacheprovider

bench: setup
	$(PY) -m benchmarks.run_all

lint: setup
	$(VENV)/bin/ruff check harness sandboxes fsm_sites trainers tests benchmarks

clean:
	rm -rf $(VENV) runs .pytest_cache
