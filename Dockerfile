# syntax=docker/dockerfile:1
# OCC's images, from the project's own locks (docs/kubernetes.md):
#   docker build --target occ -t occ .          the control plane: API, worker, beat, init Job
#   docker build --target gateway -t gateway .  the OpenClaw runtime an Agent's gateway Pod runs
#                                               (`node /app/openclaw.mjs`, as the Kubernetes
#                                               ComputeDriver and `occ tui` expect)
# Both run as a non-root user with a numeric UID (runAsNonRoot can check it).

ARG PYTHON_IMAGE=python:3.12-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9

FROM ${UV_IMAGE} AS uv

# --- build: the Python environment (uv.lock), the OpenClaw runtime (runtime/*/package-lock.json)
# and the console's assets (frontend/package-lock.json, built into static/console/build/)
FROM ${PYTHON_IMAGE} AS build
# npm only runs `npm ci` on the committed locks: the Node that OCC and the gateways run is Node
# 24 from runtime/node's lock, never Debian's.
RUN apt-get update \
    && apt-get install -y --no-install-recommends npm ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=uv /uv /usr/local/bin/uv
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/app/.venv
WORKDIR /app
# Dependencies first (a layer that changes only with the lock), then the source.
COPY pyproject.toml uv.lock ./
COPY cli/pyproject.toml cli/pyproject.toml
RUN mkdir -p cli/occ_cli && touch cli/occ_cli/__init__.py \
    && uv sync --frozen --no-dev --no-install-workspace
COPY . .
RUN uv sync --frozen --no-dev
# `make runtime`'s own logic (manage.py occ_runtime install: Node, then openclaw with that Node
# first on PATH, each `npm ci` from its lock). Settings need a data directory: a throwaway one.
RUN OCC_DATA_DIR=/tmp/build-data .venv/bin/python -m project.data_dir \
    && OCC_DATA_DIR=/tmp/build-data .venv/bin/python manage.py occ_runtime install \
    && .venv/bin/python -m devtools.assets && rm -rf frontend/node_modules \
    && rm -rf /tmp/build-data /root/.npm

# --- gateway: Node 24 and openclaw at /app/openclaw.mjs, nothing of OCC
FROM debian:bookworm-slim AS gateway
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 1000 node && useradd --uid 1000 --gid 1000 --home-dir /home/node --create-home node
COPY --from=build /app/runtime/node/node_modules /opt/node/node_modules
COPY --from=build /app/runtime/openclaw/node_modules /app/node_modules
RUN ln -s "$(dirname "$(ls /opt/node/node_modules/node-linux-*/bin/node)")" /opt/node/bin \
    && ln -s /app/node_modules/openclaw/openclaw.mjs /app/openclaw.mjs
ENV PATH=/opt/node/bin:/usr/local/bin:/usr/bin:/bin HOME=/home/node NODE_ENV=production
USER 1000:1000
WORKDIR /home/node
CMD ["node", "/app/openclaw.mjs", "gateway"]

# --- occ: the control plane (the Kubernetes manifests choose the process: API, worker, beat, init)
FROM ${PYTHON_IMAGE} AS occ
RUN groupadd --gid 10001 occ && useradd --uid 10001 --gid 10001 --home-dir /home/occ --create-home occ
COPY --from=build --chown=root:root /app /app
WORKDIR /app
ENV PATH=/app/.venv/bin:/usr/local/bin:/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    OCC_RUNTIME_DIR=/app/runtime OCC_DATA_DIR=/var/lib/occ
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "project.wsgi:application", "-c", "python:project.gunicorn_conf", "--bind", "0.0.0.0:8000"]
