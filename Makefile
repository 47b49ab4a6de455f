# Two entry points, each doing all set-up on a fresh machine:
#   make demo   install, then run torchtriage on the bundled examples
#   make test   install, then run the whole test suite
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install demo test bench

install:
	$(PIP) install --quiet torch==2.13.0          # local CPU wheel first, so nothing pulls CUDA builds
	$(PIP) install --quiet -e ".[dev]"

demo: install
	$(PYTHON) -m torchtriage check examples/ --statistics --exit-zero
	$(PYTHON) -m torchtriage check examples/ --exit-zero

test: install
	$(PYTHON) -m pytest -n 2 -q

bench: install
	$(PYTHON) bench/run_all.py
