# The two commands: `make run` and `make test`. Both install what they need first.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
PY := .venv/bin/python
OCC_PORT ?= 8000

.PHONY: run test fuzz install init runtime assets chromium kubectl checkov kube wrk bench-kubernetes lint typecheck bench chaos bench-worker bench-provisioning bench-console clean-data

$(UV):
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --user --quiet uv

install: $(UV)
	$(UV) sync --frozen

# The data directory (OCC_DATA_DIR, default .occ/) with its folders and generated keys. Created
# here and nowhere else: every other command refuses to start without it. Keys are generated for
# a new installation only; what exists is kept.
init: install
	$(PY) -m project.data_dir

# The OpenClaw runtime of the local compute driver (runtime/: Node 24, then openclaw, each with
# `npm ci` from its committed lock): ~850 MB and about a minute the first time, skipped after.
runtime: init
	$(PY) manage.py occ_runtime install

# The console's front-end assets (frontend/: esbuild, Open Props, Lucide; docs/console.md): `npm ci`
# from frontend/package-lock.json with runtime/node's Node (skipped while the lock is unchanged),
# then frontend/build.mjs into static/console/build/ (gitignored), about a second.
assets: runtime
	$(PY) -m devtools.assets

run: init runtime assets
	$(PY) manage.py occ_preflight
	$(PY) manage.py migrate --noinput
	$(PY) manage.py occ_bootstrap
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "OCC console: http://127.0.0.1:$(OCC_PORT)/console/  (API key: $${OCC_DATA_DIR:-.occ}/bootstrap-admin-key.json)"
	PATH="$(CURDIR)/.venv/bin:$$PATH" OCC_PORT=$(OCC_PORT) PYTHONUNBUFFERED=1 $(PY) -m devtools.procs start -f Procfile

# Debian's Chromium for the browser tests (tests/browser, Playwright with executable_path; never
# `playwright install`). Installed when missing and this runs as root; otherwise a note only: the
# browser tests then skip with that reason (and fail in CI, which requires them).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's Chromium for the browser tests (apt-get install chromium, about a minute)..."; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; } \
	      && echo "make: Chromium installed: $$(/usr/bin/chromium --version 2>/dev/null)" \
	      || echo "make: could not install Chromium; the browser tests will skip (fail in CI)"; \
	  else \
	    echo "make: Chromium is not installed (/usr/bin/chromium) and this is not root; the browser tests will skip"; \
	  fi; \
	fi

# kubectl for the manifest tests (`kubectl kustomize deploy/kubernetes`) and docs/kubernetes.md:
# Debian's kubernetes-client when no kubectl is on PATH and this runs as root; otherwise a note
# only (those tests then skip with that reason, and fail in CI).
kubectl:
	@if ! command -v kubectl >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's kubernetes-client (kubectl)..."; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null 2>&1 \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null; }; } \
	      && echo "make: $$(kubectl version --client 2>/dev/null | head -n1)" \
	      || echo "make: could not install kubernetes-client; the manifest tests that need kubectl will skip"; \
	  else \
	    echo "make: kubectl is not installed and this is not root; the manifest tests that need it will skip"; \
	  fi; \
	fi

# The policy checkers tests/deploy/test_schemas.py runs as commands, in tools/checkov/.venv from
# tools/checkov/uv.lock (~250 MB, offline once installed): checkov's Kubernetes checks (the Pod
# Security "restricted" profile) and kubernetes-validate 1.28 (the Kubernetes 1.20 schemas).
# Locked on their own: checkov pins packaging<24, which would hold OCC's celery, kombu and redis back.
checkov: $(UV)
	$(UV) sync --frozen --project tools/checkov

# wrk, the load generator of the web tier's knee (bench/web_knee.py and its tiny run in the suite):
# Debian's wrk when it is not on PATH and this runs as root; otherwise a note only (that benchmark
# then skips with the reason, and its test fails in CI).
wrk:
	@if ! command -v wrk >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's wrk for the web tier's knee..."; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1 \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends wrk >/dev/null; }; } \
	      && echo "make: $$(wrk --version 2>&1 | head -n1)" \
	      || echo "make: could not install wrk; the knee benchmark will skip"; \
	  else \
	    echo "make: wrk is not installed and this is not root; the knee benchmark will skip"; \
	  fi; \
	fi

# The tests' Kubernetes cluster (tests/kubecluster/): kube-apiserver, kube-controller-manager and
# the kubelet 1.20.2 built once from Debian's source package into ~/.cache/occ/kube/1.20.2/ (about
# 6 minutes of an idle 2-core machine for the API server, a few more for the kubelet; only what is
# missing is built), etcd from Debian's etcd-server. The real node of the `kubelet` tests runs its
# containers with Debian's containerd, runc and CNI plugins, and its images hold busybox-static:
# installed by package name when missing and this runs as root; otherwise a note only. The
# `kubernetes` and `kubelet` tests skip without them (and fail in CI).
OCC_KUBE_CACHE ?= $(HOME)/.cache/occ/kube/1.20.2
KUBE_NODE_PACKAGES := containerd runc containernetworking-plugins busybox-static
kube:
	@if [ -x "$(OCC_KUBE_CACHE)/bin/kube-apiserver" ] && [ -x "$(OCC_KUBE_CACHE)/bin/kube-controller-manager" ] \
	    && [ -x "$(OCC_KUBE_CACHE)/bin/kubelet" ] && command -v etcd >/dev/null; then \
	  :; \
	else \
	  OCC_KUBE_CACHE="$(OCC_KUBE_CACHE)" tests/kubecluster/build.sh; \
	fi
	@missing=$$(for p in $(KUBE_NODE_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "make: installing Debian's" $$missing "for the kubelet tests..."; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    { apt-get install -y -qq --no-install-recommends $$missing >/dev/null 2>&1 \
	      || { apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null; }; } \
	      && echo "make: $$(containerd --version 2>/dev/null)" \
	      || echo "make: could not install" $$missing"; the kubelet tests will skip (fail in CI)"; \
	  else \
	    echo "make:" $$missing "not installed and this is not root; the kubelet tests will skip"; \
	  fi; \
	fi

# The suite in two parts (tests/parallel.py): what can share the machine on TEST_WORKERS pytest-xdist
# workers, then the Kubernetes test cluster's tests and the benchmarks' tiny runs in one process.
# Either failing fails the run; 5 ("no tests ran") only when neither part ran a test.
TEST_WORKERS ?= 2
test: install runtime assets chromium kubectl checkov kube wrk
	@$(PY) -m pytest -n $(TEST_WORKERS) --occ-tests=parallel $(PYTEST_ARGS); first=$$?; \
	$(PY) -m pytest --occ-tests=serial $(PYTEST_ARGS); second=$$?; \
	if [ $$first -eq 5 ] && [ $$second -eq 5 ]; then exit 5; fi; \
	for status in $$first $$second; do if [ $$status -ne 0 ] && [ $$status -ne 5 ]; then exit $$status; fi; done

# schemathesis against /api/openapi.json of a real web process (SQLite, a data directory of its
# own, the bootstrap administrator's key) for FUZZ_SECONDS; fails on a 5xx (but a documented 501)
# or a response outside the documented statuses and schemas (docs/reliability.md).
FUZZ_SECONDS ?= 300
fuzz: install
	$(PY) -m tests.fuzz.run --seconds $(FUZZ_SECONDS) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) \
	  $(if $(FUZZ_DATABASE_URL),--database-url $(FUZZ_DATABASE_URL))

lint: init
	.venv/bin/ruff check .
	.venv/bin/mypy project devtools occ console provisioning cli/occ_cli bench
	.venv/bin/lint-imports

# Every benchmark, one after the other, then one table of every figure (target, measured, PASS or
# MISS): bench/run.py, docs/performance.md. Starts real OpenClaw gateways, Chromium and the test
# cluster, so it installs them first; about an hour on a 2-core machine. `BENCH=api,queue` runs a few.
bench: install runtime chromium kube wrk
	$(PY) -m bench.run $(if $(BENCH),--only $(BENCH))

# The chaos soak (bench/chaos.py, docs/reliability.md): 510 provisionings, deploys, stops and
# deletes on a PostgreSQL and a Redis it starts for itself, while workers, Redis and PostgreSQL are
# killed under them; prints every invariant and fails when one breaks. About 10 minutes.
chaos: install
	$(PY) bench/chaos.py $(CHAOS_ARGS)

# The groups docs/performance.md names, each a part of `make bench`.
bench-worker: init runtime
	$(PY) -m bench.run --only queue,wakeup,recovery,activation

bench-provisioning: install
	$(PY) -m bench.run --only provisioning

bench-console: install chromium
	$(PY) -m bench.run --only console-lists,console-load

bench-kubernetes: install kube
	flock /tmp/occ-heavy.lock $(PY) -m bench.run --only kubernetes

# Until the first release, the schema is one initial migration plus hand-written triggers.
regen-migrations: install
	mv occ/migrations/0002_append_only.py /tmp/occ-0002.py
	rm -f occ/migrations/0001_initial.py
	$(PY) manage.py makemigrations occ --name initial -v0 || true
	mv /tmp/occ-0002.py occ/migrations/0002_append_only.py
