# The two commands: `make run` and `make test`. Both install what they need first.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
PY := .venv/bin/python
OCC_PORT ?= 8000

.PHONY: run test install runtime lint typecheck bench bench-worker bench-provisioning clean-data

$(UV):
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --user --quiet uv

install: $(UV)
	$(UV) sync --frozen

# The OpenClaw runtime of the local compute driver (runtime/: Node 24, then openclaw, each with
# `npm ci` from its committed lock): ~850 MB and about a minute the first time, skipped after.
runtime: install
	$(PY) manage.py occ_runtime install

run: install runtime
	$(PY) manage.py occ_preflight
	$(PY) manage.py migrate --noinput
	$(PY) manage.py occ_bootstrap
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "OCC console: http://127.0.0.1:$(OCC_PORT)/console/  (API key: $${OCC_DATA_DIR:-.occ}/bootstrap-admin-key.json)"
	PATH="$(CURDIR)/.venv/bin:$$PATH" OCC_PORT=$(OCC_PORT) PYTHONUNBUFFERED=1 $(PY) -m honcho start -f Procfile

test: install runtime
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	.venv/bin/ruff check .
	.venv/bin/mypy occ

bench: install
	$(PY) bench/api_latency.py

# The controller worker's benchmarks (docs/performance.md, "Controller worker"): PostgreSQL and
# Redis on loopback; the last one starts real OpenClaw gateways (skipped without `make runtime`).
bench-worker: install
	$(PY) bench/queue_claim.py
	$(PY) bench/worker_wakeup.py
	$(PY) bench/worker_recovery.py
	$(PY) bench/activation_local.py

# Agent provisioning end to end (docs/performance.md, "Provisioning"): PostgreSQL and Redis on
# loopback, two real celery workers and beat with the fake compute driver; about a minute.
bench-provisioning: install
	$(PY) bench/provisioning_rate.py

# Until the first release, the schema is one initial migration plus hand-written triggers.
regen-migrations: install
	mv occ/migrations/0002_append_only.py /tmp/occ-0002.py
	rm -f occ/migrations/0001_initial.py
	$(PY) manage.py makemigrations occ --name initial -v0 || true
	mv /tmp/occ-0002.py occ/migrations/0002_append_only.py
