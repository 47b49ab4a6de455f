# Two entry points, each doing all set-up on a fresh machine:
#   make demo   install, then run torchtriage on the bundled examples
#   make test   install (system packages too), then run the whole test suite
PYTHON ?= python3
PIP := $(PYTHON) -m pip
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps demo test bench

install:
	$(PIP) install --quiet torch==2.13.0          # the local CPU wheel first, so nothing pulls a CUDA build
	$(PIP) install --quiet -e ".[dev]"

# Real clients the tests drive: Neovim (second LSP client) and Chromium (report.html rendering).
system-deps:
	@if ! command -v nvim >/dev/null || ! command -v chromium >/dev/null; then \
		for attempt in 1 2 3; do \
			$(SUDO) apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends neovim chromium >/dev/null \
			&& break; \
			[ $$attempt = 3 ] && exit 1; echo "apt-get failed, retrying ($$attempt/3)"; sleep 10; \
		done; \
	fi

demo: install
	$(PYTHON) -m torchtriage check examples/ --statistics --exit-zero
	$(PYTHON) -m torchtriage check examples/ --exit-zero
	$(PYTHON) -m torchtriage profile --out .torchtriage/runs/demo-slow_loader examples/slow_loader.py
	@echo "Open .torchtriage/runs/demo-slow_loader/report.html to see the profile report."

test: install system-deps
	$(PYTHON) -c "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())" --no-cache  # the layering contracts in pyproject.toml
	$(PYTHON) -m pytest -n 2 -q -p no:cacheprovider

bench: install
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
	TORCHTRIAGE_PYTHON=$(PYTHON) npm run --silent test:e2e -w extension/vscode
