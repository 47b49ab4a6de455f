# Two entry points, each doing all set-up on a fresh machine:
#   make demo   install, then run torchtriage on the bundled examples
#   make test   install (system packages too), then run the whole test suite
#
# Which Python: a project venv, .venv/, made with `$(BOOTSTRAP_PYTHON) -m venv`, so a system Python that
# refuses `pip install` (externally managed, PEP 668: Debian 12, Ubuntu 24.04) is never installed into.
# `make test PYTHON=/path/to/python` uses that interpreter as it is instead (no venv; pip runs every time).
BOOTSTRAP_PYTHON ?= python3
VENV ?= .venv
# What install puts in, in this order: the local CPU torch wheel first, so nothing pulls a CUDA build.
TORCH_REQ ?= torch==2.13.0
PROJECT_REQ ?= -e ".[dev]"
APT_GET ?= apt-get
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps demo test bench bench-all

define pip_install
$(PYTHON) -m pip install --quiet $(TORCH_REQ)
$(PYTHON) -m pip install --quiet $(PROJECT_REQ)
endef

# apt-get install with retries (mirrors flake): $(call apt_install,PACKAGES); its status says whether it worked.
apt_install = ok=; for attempt in 1 2 3; do \
		if $(SUDO) $(APT_GET) update -qq && \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends $(1) >/dev/null; \
		then ok=1; break; fi; \
		[ $$attempt = 3 ] || { echo "apt-get failed, retrying ($$attempt/3)"; sleep 10; }; \
	done; [ -n "$$ok" ]

ifeq ($(origin PYTHON),undefined)
PYTHON := $(VENV)/bin/python

install: $(VENV)/.installed

# pip runs again only when pyproject.toml or this Makefile changed, or the venv was made anew.
$(VENV)/.installed: pyproject.toml Makefile | $(VENV)/bin/python
	$(pip_install)
	@touch $@

# Debian/Ubuntu ship venv's pip bootstrap in a package of its own (python3.X-venv); without it
# `python3 -m venv` fails. Then install it (root or sudo) and try again, or say how to fix it.
$(VENV)/bin/python:
	@if ! $(BOOTSTRAP_PYTHON) -m venv --clear $(VENV); then \
		rm -rf $(VENV); \
		pkg=$$($(BOOTSTRAP_PYTHON) -c 'import sys; print("python%d.%d-venv" % sys.version_info[:2])' 2>/dev/null \
			|| echo python3-venv); \
		if command -v $(APT_GET) >/dev/null && { [ -z "$(SUDO)" ] || command -v $(SUDO) >/dev/null; } \
			&& echo "$(BOOTSTRAP_PYTHON) -m venv failed: installing $$pkg" && { $(call apt_install,$$pkg); } \
			&& $(BOOTSTRAP_PYTHON) -m venv --clear $(VENV); then :; else \
			rm -rf $(VENV); \
			echo >&2 "Could not make the project venv $(VENV)/ with '$(BOOTSTRAP_PYTHON) -m venv'."; \
			echo >&2 "  Fix: sudo apt-get install $$pkg   (Debian/Ubuntu), then run make again;"; \
			echo >&2 "  or use a Python you manage, as it is: make $(or $(MAKECMDGOALS),install) PYTHON=/path/to/python"; \
			exit 1; \
		fi; \
	fi
else
install:
	$(pip_install)
endif

# Real clients the tests drive: Neovim (second LSP client) and Chromium (report.html rendering).
system-deps:
	@if ! command -v nvim >/dev/null || ! command -v chromium >/dev/null; then \
		$(call apt_install,neovim chromium); \
	fi

# Console scripts (the `torchtriage` command the pre-commit test runs) come from the same environment.
SCRIPTS = $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))')

# make demo: the CLI and a profile on the examples, then every host made ready from this checkout (with
# Node: the JupyterLab extension built and installed into $(VENV), the VS Code .vsix built), and how to open each.
VSIX := extension/vscode/torchtriage.vsix
demo: install
	$(PYTHON) -m torchtriage check examples/ --statistics --exit-zero
	$(PYTHON) -m torchtriage check examples/ --exit-zero
	$(PYTHON) -m torchtriage profile --out .torchtriage/runs/demo-slow_loader examples/slow_loader.py
	@if command -v npm >/dev/null; then \
		$(MAKE) --no-print-directory labextension && \
		npm install --no-audit --no-fund --prefer-offline --loglevel=error && \
		npm run --silent package -w extension/vscode >/dev/null; \
	else \
		echo; echo "Node.js (npm) is not installed: the JupyterLab extension and the VS Code .vsix were not built."; \
		echo "  Install Node.js 20 or newer (Debian: sudo apt-get install nodejs npm), then run make demo again."; \
	fi
	@echo
	@echo "Ready:"
	@echo "  CLI          $(VENV)/bin/torchtriage check examples/   (profile report: .torchtriage/runs/demo-slow_loader/report.html)"
	@if [ -f server/torchtriage/jupyter/labextension/package.json ]; then \
		echo "  JupyterLab   $(VENV)/bin/jupyter lab examples/notebook_training.ipynb"; fi
	@if [ -f $(VSIX) ]; then \
		echo "  VS Code      code --install-extension $(abspath $(VSIX))   (setting: torchtriage.interpreter = $(abspath $(VENV))/bin/python)"; fi

# The labextension is built first so the Jupyter packaging and browser tests run (and fail if it is missing).
test: install system-deps labextension
	PATH="$(SCRIPTS):$$PATH" lint-imports --no-cache  # the layering contracts in pyproject.toml ([tool.importlinter])
	PATH="$(SCRIPTS):$$PATH" TORCHTRIAGE_REQUIRE_LABEXTENSION=1 $(PYTHON) -m pytest -n 2 -q -p no:cacheprovider
	$(MAKE) --no-print-directory test-vscode

# make bench: the anchor table of the performance issue, one run (bench/anchors.py; --markdown writes
# bench/RESULTS-anchors.md). HTA_PYTHON: an interpreter with traceinsight==0.6.1 for the analyze row.
# make bench-all: every bench/*_bench.py script, each with its own figures.
HTA_PYTHON ?=
bench: install
	$(PYTHON) bench/anchors.py --markdown bench/RESULTS-anchors.md $(if $(HTA_PYTHON),--hta-python $(HTA_PYTHON))

bench-all: install
	$(PYTHON) bench/run_all.py

# VS Code extension (extension/vscode): unit tests, the .vsix, then end-to-end tests of that .vsix in a
# real code-server driven by Chromium. First use installs Node 24 and code-server (npm, into
# extension/vscode/.e2e-tools), Chromium and libkrb5-dev (apt-get); later runs reuse them.
# The e2e run starts the language server with $(PYTHON), which needs torchtriage (make install).
.PHONY: vscode-deps vscode-package test-vscode
vscode-deps:
	@$(PYTHON) -m torchtriage --version >/dev/null 2>&1 || $(MAKE) install
	extension/vscode/test/e2e/setup.sh
	npm install --no-audit --no-fund --prefer-offline

vscode-package: vscode-deps
	npm run --silent package -w extension/vscode

test-vscode: vscode-package
	npm run --silent test:unit -w extension/vscode
	TORCHTRIAGE_PYTHON="$$($(PYTHON) -c 'import sys; print(sys.executable)')" npm run --silent test:e2e -w extension/vscode  # absolute: npm runs it from extension/vscode

# JupyterLab host (extension/jupyterlab): npm deps, the prebuilt labextension (built into
# server/torchtriage/jupyter/labextension, which the wheel ships; never committed), then its tests.
JLAB := extension/jupyterlab
.PHONY: labextension test-jupyter

# The labextension, built into server/torchtriage/jupyter/labextension (what the wheel ships; `pip install .`
# and `python -m build` build it themselves, pyproject.toml's jupyter-builder hook), then linked into the
# environment (a link: rebuilding updates it), so its `jupyter lab` runs this checkout's extension. The server
# extension's config is installed with the package (pyproject.toml, shared-data).
labextension: install
	cd $(JLAB) && npm install --no-workspaces --no-package-lock --no-audit --no-fund --loglevel=error
	cd $(JLAB) && PATH="$(abspath $(SCRIPTS)):$$PATH" npm run build
	PATH="$(SCRIPTS):$$PATH" jupyter builder develop --overwrite . >/dev/null 2>&1 || PATH="$(SCRIPTS):$$PATH" jupyter labextension develop --overwrite .

# TORCHTRIAGE_REQUIRE_LABEXTENSION: here a missing build fails the packaging and browser tests (elsewhere they skip).
test-jupyter: labextension system-deps
	PATH="$(SCRIPTS):$$PATH" TORCHTRIAGE_REQUIRE_LABEXTENSION=1 $(PYTHON) -m pytest -q -p no:cacheprovider tests/jupyter
