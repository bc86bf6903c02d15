"""OCC settings.

Embedded defaults need nothing but a data directory (``OCC_DATA_DIR``, default ``.occ/``;
SQLite in WAL mode, a filesystem Celery broker, generated keys), created by ``make init``
(project/data_dir.py): these settings refuse to load without it rather than create one.
Production sets ``DATABASE_URL`` (PostgreSQL), ``CELERY_BROKER_URL`` (Redis) and
``OCC_SECRET_KEYS``.

One module, as Django loads one: each section below holds one concern's settings with the reason
for its default; the README's settings table lists them (tests/test_readme_settings.py keeps the
two in step).
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ
from csp.constants import NONCE, NONE, SELF

from project import data_dir

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
if (BASE_DIR / ".env").is_file():
    env.read_env(str(BASE_DIR / ".env"))

_data_dir = data_dir.configured(env, project_dir=BASE_DIR)
if _data_dir_problem := _data_dir.problem():
    raise environ.ImproperlyConfigured(_data_dir_problem)
OCC_DATA_DIR = _data_dir.path

DEBUG = env.bool("OCC_DEBUG", default=False)
SECRET_KEY = env.str("OCC_DJANGO_SECRET_KEY", default="") or _data_dir.read(data_dir.DJANGO_KEY_FILE)
OCC_PORT = env.int("OCC_PORT", default=8000)
ALLOWED_HOSTS = env.list("OCC_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list(
    "OCC_CSRF_TRUSTED_ORIGINS",
    default=[f"http://127.0.0.1:{OCC_PORT}", f"http://localhost:{OCC_PORT}"],
)
# A refused CSRF check answers as the face asked would (JSON envelope, console component).
CSRF_FAILURE_VIEW = "project.csrf.csrf_failure"

# --- OCC behaviour -------------------------------------------------------------------------
OCC_COMPUTE_DRIVER = env.str("OCC_COMPUTE_DRIVER", default="local")
if OCC_COMPUTE_DRIVER not in {"local", "fake", "kubernetes"}:
    raise environ.ImproperlyConfigured(
        f"OCC_COMPUTE_DRIVER must be one of local, fake, kubernetes (got {OCC_COMPUTE_DRIVER!r})."
    )
# The fake driver (tests, benchmarks) keeps its world in this JSON file (relative to
# OCC_DATA_DIR), so a restarted worker and separate worker processes see what it made;
# "memory" keeps it in this process only (the in-process tests).
OCC_FAKE_COMPUTE_STATE = env.str("OCC_FAKE_COMPUTE_STATE", default="fake-compute.json")
OCC_SECRET_DRIVER = env.str("OCC_SECRET_DRIVER", default="database")
# The installation's PluginDriver (occ.drivers.plugins.registry): openclaw (curated, no credential), codex
# (hosted, needs a codex_pat), or empty for none (non-empty plugin selections answer 501).
OCC_PLUGIN_DRIVER = env.str("OCC_PLUGIN_DRIVER", default="openclaw")
if OCC_PLUGIN_DRIVER not in {"", "openclaw", "codex"}:
    raise environ.ImproperlyConfigured(
        f"OCC_PLUGIN_DRIVER must be openclaw, codex or empty (got {OCC_PLUGIN_DRIVER!r})."
    )
# The openclaw plugin driver's curated catalog; empty: the committed occ/drivers/plugins/data/openclaw-catalog.json.
OCC_OPENCLAW_PLUGIN_CATALOG = env.str("OCC_OPENCLAW_PLUGIN_CATALOG", default="")
# Comma-separated Fernet keys, newest first (MultiFernet rotation). Empty: the key file.
OCC_SECRET_KEYS = env.list("OCC_SECRET_KEYS", default=[]) or [_data_dir.read(data_dir.ENCRYPTION_KEY_FILE)]
OCC_ADMIN_USERNAME = env.str("OCC_ADMIN_USERNAME", default="admin")
OCC_ADMIN_PASSWORD = env.str("OCC_ADMIN_PASSWORD", default="")
OCC_INSTALLATION_NAME = env.str("OCC_INSTALLATION_NAME", default="OCC")
OCC_BOOTSTRAP_KEY_DAYS = 30
OCC_API_BODY_LIMIT = env.int("OCC_API_BODY_LIMIT", default=64 * 1024)
OCC_API_LARGE_BODY_LIMIT = env.int("OCC_API_LARGE_BODY_LIMIT", default=448 * 1024)
# Controller work defaults (the worker of the controller issue claims these rows).
OCC_WORK_MAX_ATTEMPTS = env.int("OCC_WORK_MAX_ATTEMPTS", default=5)
# The Slack Web API the Slack ChannelDriver calls (tests point it at a loopback fake).
OCC_SLACK_API_BASE_URL = env.str("OCC_SLACK_API_BASE_URL", default="https://slack.com/api/")

# --- Model discovery (occ/drivers/model_providers) -----------------------------------------
# provider=base URL pairs, comma-separated: the only addresses a model API key is ever sent
# to. A provider left out has discovery turned off (people enter the model ID by hand).
_MODEL_DISCOVERY_ERROR = (
    "OCC_MODEL_DISCOVERY_BASE_URLS must be openai=URL,anthropic=URL with http(s) URLs "
    "(no credentials, query or fragment), e.g. openai=https://api.openai.com."
)
try:
    OCC_MODEL_DISCOVERY_BASE_URLS: dict[str, str] = env.dict(
        "OCC_MODEL_DISCOVERY_BASE_URLS",
        default={"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"},
    )
except ValueError:
    raise environ.ImproperlyConfigured(_MODEL_DISCOVERY_ERROR) from None
OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS = env.float("OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS", default=10.0)
OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES = env.int("OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES", default=4 * 1024 * 1024)
for _provider, _base_url in OCC_MODEL_DISCOVERY_BASE_URLS.items():
    _parts = urlsplit(_base_url)
    if (_provider not in {"openai", "anthropic"} or _parts.scheme not in {"http", "https"} or not _parts.hostname
            or _parts.username or _parts.password or _parts.query or _parts.fragment):
        raise environ.ImproperlyConfigured(_MODEL_DISCOVERY_ERROR)
if OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS <= 0 or OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_MODEL_DISCOVERY_TIMEOUT_SECONDS and OCC_MODEL_DISCOVERY_MAX_RESPONSE_BYTES must be positive."
    )

# --- Repository bindings (occ/drivers/repositories) ------------------------------------------
# OCC_REPOSITORY_DRIVER: empty (none: repository bindings and options answer 503) or github_app.
# The GitHub App's private key is a PEM file (on Kubernetes a mounted Secret), read when a token
# is minted and never copied elsewhere; the App and installation ids are not secret.
OCC_REPOSITORY_DRIVER = env.str("OCC_REPOSITORY_DRIVER", default="")
OCC_GITHUB_API_BASE_URL = env.str("OCC_GITHUB_API_BASE_URL", default="https://api.github.com")
OCC_GITHUB_APP_ID = env.str("OCC_GITHUB_APP_ID", default="")
OCC_GITHUB_APP_INSTALLATION_ID = env.str("OCC_GITHUB_APP_INSTALLATION_ID", default="")
OCC_GITHUB_APP_PRIVATE_KEY_FILE = env.str("OCC_GITHUB_APP_PRIVATE_KEY_FILE", default="")
OCC_REPOSITORY_TIMEOUT_SECONDS = env.float("OCC_REPOSITORY_TIMEOUT_SECONDS", default=10.0)
OCC_REPOSITORY_MAX_RESPONSE_BYTES = env.int("OCC_REPOSITORY_MAX_RESPONSE_BYTES", default=4 * 1024 * 1024)
_parts = urlsplit(OCC_GITHUB_API_BASE_URL)
if (_parts.scheme not in {"http", "https"} or not _parts.hostname or _parts.username or _parts.password
        or _parts.query or _parts.fragment):
    raise environ.ImproperlyConfigured(
        "OCC_GITHUB_API_BASE_URL must be an http(s) URL without credentials, query or fragment.")
if OCC_REPOSITORY_TIMEOUT_SECONDS <= 0 or OCC_REPOSITORY_MAX_RESPONSE_BYTES <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_REPOSITORY_TIMEOUT_SECONDS and OCC_REPOSITORY_MAX_RESPONSE_BYTES must be positive.")

# --- Plugin discovery: the hosted Codex catalog (occ/drivers/plugins/codex_catalog.py) -------------
# The only addresses a Codex service account token is sent to: the identity host and the
# ChatGPT backend API (tests point both at a loopback fake).
OCC_CODEX_AUTH_BASE_URL = env.str("OCC_CODEX_AUTH_BASE_URL", default="https://auth.openai.com")
OCC_CODEX_CHATGPT_BASE_URL = env.str("OCC_CODEX_CHATGPT_BASE_URL", default="https://chatgpt.com/backend-api")
OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS = env.float("OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS", default=15.0)
OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES = env.int("OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES", default=4 * 1024 * 1024)
for _name in ("OCC_CODEX_AUTH_BASE_URL", "OCC_CODEX_CHATGPT_BASE_URL"):
    _parts = urlsplit(globals()[_name])
    if (_parts.scheme not in {"http", "https"} or not _parts.hostname or _parts.username or _parts.password
            or _parts.query or _parts.fragment):
        raise environ.ImproperlyConfigured(f"{_name} must be an http(s) URL without credentials, query or fragment.")
if OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS <= 0 or OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_PLUGIN_DISCOVERY_TIMEOUT_SECONDS and OCC_PLUGIN_DISCOVERY_MAX_RESPONSE_BYTES must be positive."
    )

# --- Chat with an Agent (occ/services/agent_chat.py) ------------------------------------------
# How long a chat turn may wait for the gateway's next bytes (the first token included).
OCC_CHAT_TIMEOUT_SECONDS = env.float("OCC_CHAT_TIMEOUT_SECONDS", default=120.0)
if OCC_CHAT_TIMEOUT_SECONDS <= 0:
    raise environ.ImproperlyConfigured("OCC_CHAT_TIMEOUT_SECONDS must be positive.")

# --- The gateways' RPC as a source (occ/services/agent_gateway.py, agent_sessions.py, approvals.py) ---
# The whole of one call to a gateway (open, handshake, answer); and how often the worker refreshes
# the session index from every running gateway.
OCC_GATEWAY_RPC_TIMEOUT_SECONDS = env.float("OCC_GATEWAY_RPC_TIMEOUT_SECONDS", default=5.0)
OCC_SESSION_INDEX_SECONDS = env.float("OCC_SESSION_INDEX_SECONDS", default=60.0)
if OCC_GATEWAY_RPC_TIMEOUT_SECONDS <= 0 or OCC_SESSION_INDEX_SECONDS <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_GATEWAY_RPC_TIMEOUT_SECONDS and OCC_SESSION_INDEX_SECONDS must be positive.")

# --- Controller worker (provisioning/queue.py) ---------------------------------------------
# Seconds; fractions are allowed (the fault tests use sub-second heartbeats).
OCC_WORKER_LEASE_SECONDS = env.float("OCC_WORKER_LEASE_SECONDS", default=15.0)
OCC_WORKER_HEARTBEAT_SECONDS = env.float("OCC_WORKER_HEARTBEAT_SECONDS", default=5.0)
OCC_WORKER_CONVERGENCE_SECONDS = env.float("OCC_WORKER_CONVERGENCE_SECONDS", default=900.0)
OCC_WORKER_RETRY_MAX_SECONDS = env.float("OCC_WORKER_RETRY_MAX_SECONDS", default=300.0)
OCC_WORKER_DEFER_SECONDS = env.float("OCC_WORKER_DEFER_SECONDS", default=2.0)
OCC_SWEEP_INTERVAL_SECONDS = env.float("OCC_SWEEP_INTERVAL_SECONDS", default=2.0)
# How often beat asks the compute driver to repair what it owns (restart a dead active gateway).
# Verify a replacing revision before cutover (issue 28); off only to measure what it costs.
OCC_VERIFY_BEFORE_CUTOVER = env.bool("OCC_VERIFY_BEFORE_CUTOVER", default=True)
OCC_COMPUTE_MAINTENANCE_SECONDS = env.float("OCC_COMPUTE_MAINTENANCE_SECONDS", default=15.0)
# Usage collection (issue 29): a pass over every running gateway each interval; each gateway's
# answer within the timeout (one down gateway costs at most that), this many asked at once.
# A budget overshoots by at most one interval of spend.
OCC_USAGE_COLLECTION_SECONDS = env.float("OCC_USAGE_COLLECTION_SECONDS", default=60.0)
OCC_USAGE_GATEWAY_TIMEOUT_SECONDS = env.float("OCC_USAGE_GATEWAY_TIMEOUT_SECONDS", default=10.0)
OCC_USAGE_CONCURRENCY = env.int("OCC_USAGE_CONCURRENCY", default=8)
OCC_BUDGET_WEBHOOK_TIMEOUT_SECONDS = env.float("OCC_BUDGET_WEBHOOK_TIMEOUT_SECONDS", default=5.0)
# A budget webhook is tried this many times in all, the waits doubling from the backoff (with jitter).
OCC_BUDGET_WEBHOOK_ATTEMPTS = env.int("OCC_BUDGET_WEBHOOK_ATTEMPTS", default=5)
OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS = env.int("OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS", default=10)
if OCC_BUDGET_WEBHOOK_ATTEMPTS < 1 or OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS < 1:
    raise environ.ImproperlyConfigured("OCC_BUDGET_WEBHOOK_ATTEMPTS and OCC_BUDGET_WEBHOOK_BACKOFF_SECONDS "
                                       "must be positive.")
# Networks an address a person typed (a budget's webhook) may be in although not public
# (occ/services/outgoing_urls.py): a receiver on the company network.
OCC_OUTGOING_ALLOWED_NETWORKS = env.list("OCC_OUTGOING_ALLOWED_NETWORKS", default=[])
for _cidr in OCC_OUTGOING_ALLOWED_NETWORKS:
    try:
        _network = ipaddress.ip_network(_cidr, strict=False)
    except ValueError:
        raise environ.ImproperlyConfigured(
            f"OCC_OUTGOING_ALLOWED_NETWORKS: {_cidr!r} is not a CIDR (network address/prefix).") from None
    if _network.prefixlen == 0:
        raise environ.ImproperlyConfigured("OCC_OUTGOING_ALLOWED_NETWORKS must not admit every address.")
OCC_SWEEP_BATCH = env.int("OCC_SWEEP_BATCH", default=100)
# The sweep nudges only work due for longer than this: a row that became due more recently
# had its own nudge sent at its due time and is still in line for a worker (a second message
# would only make a worker claim nothing). Five sweep intervals unless set.
OCC_SWEEP_NUDGE_AFTER_SECONDS = env.float("OCC_SWEEP_NUDGE_AFTER_SECONDS", default=5 * OCC_SWEEP_INTERVAL_SECONDS)
if not 0 < OCC_WORKER_HEARTBEAT_SECONDS < OCC_WORKER_LEASE_SECONDS:
    raise environ.ImproperlyConfigured(
        "OCC_WORKER_HEARTBEAT_SECONDS must be positive and shorter than OCC_WORKER_LEASE_SECONDS "
        "(a third of it is a good choice)."
    )
if not 1 <= OCC_SWEEP_BATCH <= 1000:
    raise environ.ImproperlyConfigured("OCC_SWEEP_BATCH must be between 1 and 1000.")
if min(OCC_WORKER_CONVERGENCE_SECONDS, OCC_WORKER_RETRY_MAX_SECONDS, OCC_SWEEP_INTERVAL_SECONDS) <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_WORKER_CONVERGENCE_SECONDS, OCC_WORKER_RETRY_MAX_SECONDS and OCC_SWEEP_INTERVAL_SECONDS must be positive."
    )
if OCC_WORKER_DEFER_SECONDS < 0:
    raise environ.ImproperlyConfigured("OCC_WORKER_DEFER_SECONDS must not be negative.")
if OCC_SWEEP_NUDGE_AFTER_SECONDS < 0:
    raise environ.ImproperlyConfigured("OCC_SWEEP_NUDGE_AFTER_SECONDS must not be negative.")

# --- The local ComputeDriver (occ/drivers/compute/local.py) and its runtime (occ/runtime.py) ---
# Holds node/ and openclaw/ (package.json + committed lock; node_modules after `make runtime`).
OCC_RUNTIME_DIR = Path(env.str("OCC_RUNTIME_DIR", default=str(BASE_DIR / "runtime"))).resolve()
# Gateway ports on 127.0.0.1, "FIRST-LAST". Each gateway also uses derived ports up to its
# base + 110 (browser control, CDP), so base ports are handed out 120 apart.
OCC_LOCAL_GATEWAY_PORT_RANGE = env.str("OCC_LOCAL_GATEWAY_PORT_RANGE", default="19000-28999")
OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS = env.float("OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS", default=120.0)
OCC_LOCAL_STOP_GRACE_SECONDS = env.float("OCC_LOCAL_STOP_GRACE_SECONDS", default=15.0)
# One `openclaw plugins install` before a gateway starts (77 s was seen on a loaded machine).
OCC_LOCAL_PLUGIN_INSTALL_TIMEOUT_SECONDS = env.float("OCC_LOCAL_PLUGIN_INSTALL_TIMEOUT_SECONDS", default=600.0)
# How long a confirmed install refusal of one exact spec is remembered (later revisions warn at once).
OCC_LOCAL_PLUGIN_REFUSAL_SECONDS = env.float("OCC_LOCAL_PLUGIN_REFUSAL_SECONDS", default=86400.0)
if OCC_LOCAL_PLUGIN_REFUSAL_SECONDS < 0:
    raise environ.ImproperlyConfigured("OCC_LOCAL_PLUGIN_REFUSAL_SECONDS must be 0 or more (0: never remembered).")
try:
    _first_port, _last_port = (int(part) for part in OCC_LOCAL_GATEWAY_PORT_RANGE.split("-"))
except ValueError:
    raise environ.ImproperlyConfigured("OCC_LOCAL_GATEWAY_PORT_RANGE must be FIRST-LAST, e.g. 19000-28999.") from None
if not 1024 <= _first_port <= _last_port <= 65535 - 110:
    raise environ.ImproperlyConfigured("OCC_LOCAL_GATEWAY_PORT_RANGE must lie within 1024-65425 (FIRST <= LAST).")
if OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS <= 0 or OCC_LOCAL_STOP_GRACE_SECONDS <= 0:
    raise environ.ImproperlyConfigured(
        "OCC_LOCAL_GATEWAY_READY_TIMEOUT_SECONDS and OCC_LOCAL_STOP_GRACE_SECONDS must be positive."
    )

# --- The Kubernetes compute and secret drivers (occ/drivers/kube/) ---------------------------
# How the worker reaches its cluster: "inCluster" (the Pod's ServiceAccount) or "kubeconfig"
# (OCC_KUBERNETES_KUBECONFIG, optionally OCC_KUBERNETES_CONTEXT; no ambient fallback).
OCC_KUBERNETES_AUTH = env.str("OCC_KUBERNETES_AUTH", default="kubeconfig")
OCC_KUBERNETES_KUBECONFIG = env.str("OCC_KUBERNETES_KUBECONFIG", default="")
OCC_KUBERNETES_CONTEXT = env.str("OCC_KUBERNETES_CONTEXT", default="")
OCC_KUBERNETES_REQUEST_TIMEOUT_SECONDS = env.float("OCC_KUBERNETES_REQUEST_TIMEOUT_SECONDS", default=30.0)
# How OCC (the console's Chat) reaches an Agent's gateway Service: "serviceProxy", through the
# API server's service proxy with the connection's own credentials (works from outside the
# cluster; the RBAC grants services/proxy), or "serviceDns", straight to
# gateway-<agentH>.<namespace>.svc (OCC running in the cluster, one of the gateway clients).
OCC_KUBERNETES_GATEWAY_ROUTE = env.str("OCC_KUBERNETES_GATEWAY_ROUTE", default="serviceProxy")
# The gateway image (a digest in production), its port, and the CIDRs of the trusted proxy
# (OCC's own gateway clients) the rendered openclaw.json trusts. No 0.0.0.0/0.
OCC_KUBERNETES_GATEWAY_IMAGE = env.str("OCC_KUBERNETES_GATEWAY_IMAGE", default="ghcr.io/openclaw/openclaw:2026.9.6")
OCC_KUBERNETES_GATEWAY_PORT = env.int("OCC_KUBERNETES_GATEWAY_PORT", default=8080)
OCC_KUBERNETES_TRUSTED_PROXY_CIDRS = env.list("OCC_KUBERNETES_TRUSTED_PROXY_CIDRS", default=["10.0.0.0/8"])
OCC_KUBERNETES_STORAGE_CLASS = env.str("OCC_KUBERNETES_STORAGE_CLASS", default="")
# The namespace and Pod labels of OCC's gateway clients (ingress to gateways is allowed from them):
# the web process's Pods as deploy/kubernetes labels them. "key=value,key=value".
OCC_KUBERNETES_CLIENT_NAMESPACE = env.str("OCC_KUBERNETES_CLIENT_NAMESPACE", default="occ")
OCC_KUBERNETES_CLIENT_POD_LABELS = env.dict("OCC_KUBERNETES_CLIENT_POD_LABELS",
                                            default={"app.kubernetes.io/name": "occ-api"})
# The address of this OCC process on the cluster's network (deploy/kubernetes sets the Pod's IP
# through the downward API). A gateway attributes each request of its trusted proxy to a client
# address, which OCC names in X-Real-IP: the person's address when OCC knows one that is not
# loopback, else this one (a person on OCC's own host or behind `kubectl port-forward`). Empty:
# none, and such a chat works only where OCC's own address reaches the gateway as a client.
OCC_KUBERNETES_CLIENT_ADDRESS = env.str("OCC_KUBERNETES_CLIENT_ADDRESS", default="")
# With the serviceProxy route the API server itself dials the gateway Pods: on a cluster that
# enforces NetworkPolicies its source address (the control plane's, e.g. "10.0.0.0/28") must be
# admitted too. These CIDRs join the allow-gateway-clients policy as ipBlock peers on the gateway
# port (only when the route is serviceProxy; empty: none). Not 0.0.0.0/0.
OCC_KUBERNETES_CONTROL_PLANE_CIDRS = env.list("OCC_KUBERNETES_CONTROL_PLANE_CIDRS", default=[])
# How long activation waits for the exact revision's Pod to be Ready before it fails.
OCC_KUBERNETES_READY_TIMEOUT_SECONDS = env.float("OCC_KUBERNETES_READY_TIMEOUT_SECONDS", default=180.0)
if OCC_KUBERNETES_GATEWAY_ROUTE not in {"serviceProxy", "serviceDns"}:
    raise environ.ImproperlyConfigured("OCC_KUBERNETES_GATEWAY_ROUTE must be serviceProxy or serviceDns.")
if OCC_KUBERNETES_AUTH not in {"kubeconfig", "inCluster"}:
    raise environ.ImproperlyConfigured("OCC_KUBERNETES_AUTH must be kubeconfig or inCluster.")
if "0.0.0.0/0" in OCC_KUBERNETES_TRUSTED_PROXY_CIDRS:
    raise environ.ImproperlyConfigured("OCC_KUBERNETES_TRUSTED_PROXY_CIDRS must not trust every address (0.0.0.0/0).")
if OCC_KUBERNETES_CLIENT_ADDRESS:
    try:
        ipaddress.ip_address(OCC_KUBERNETES_CLIENT_ADDRESS)
    except ValueError:
        raise environ.ImproperlyConfigured("OCC_KUBERNETES_CLIENT_ADDRESS must be an IP address.") from None
for _cidr in OCC_KUBERNETES_CONTROL_PLANE_CIDRS:
    try:
        _network = ipaddress.ip_network(_cidr)
    except ValueError:
        raise environ.ImproperlyConfigured(
            f"OCC_KUBERNETES_CONTROL_PLANE_CIDRS: {_cidr!r} is not a CIDR (network address/prefix).") from None
    if _network.prefixlen == 0:
        raise environ.ImproperlyConfigured("OCC_KUBERNETES_CONTROL_PLANE_CIDRS must not admit every address.")

# --- Django --------------------------------------------------------------------------------
INSTALLED_APPS = [
    "occ.admin_apps.OperatorAdminConfig",  # django.contrib.admin with the operators' site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "csp",
    # Partials without the app's loader rewrite: the loader and the builtin are set in TEMPLATES
    # below, so moving to Django 6's own partials is a settings change.
    "template_partials.apps.SimpleAppConfig",
    "axes",  # sign-in throttling (see AXES_* below)
    "ninja",  # its Swagger UI templates and static files serve /api/docs locally
    "occ",
    "console",
    "devtools",  # development commands only (occ_fake_model); nothing of OCC imports it
]

MIDDLEWARE = [
    # First: counts and times every answer for /metrics, refusals included.
    "project.metrics.MetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    # Serves the admin's and the console's static files from gunicorn (no separate server).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "occ.api.middleware.ApiBoundaryMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.middleware.HtmxMessagesMiddleware",
    "console.middleware.PrivatePagesMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: a sign-in refused because of a lockout goes out as 429 (occ.iam.sign_in).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # ``page.html#partial`` names a fragment of a page (django-template-partials).
            "loaders": [("template_partials.loader.Loader", [("django.template.loaders.cached.Loader", [
                "django.template.loaders.filesystem.Loader",
                "django.template.loaders.app_directories.Loader",
            ])])],
            "builtins": ["template_partials.templatetags.partials", "console.templatetags.ui"],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.console",
            ],
        },
    },
]

DATABASE_URL = env.str("DATABASE_URL", default="")
if DATABASE_URL:
    DATABASES = {"default": env.db_url_config(DATABASE_URL)}
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if env.str("OCC_TEST_DATABASE_NAME", default=""):
        DATABASES["default"]["TEST"] = {"NAME": env.str("OCC_TEST_DATABASE_NAME")}
    # Prepared statements: a statement run 5 times on a connection is parsed once, not on
    # every run. Django leaves them off so that transaction-mode poolers work; set the variable
    # false behind such a pooler. Both options are needed: Django's default client-side binding
    # cursor never prepares. Each run is still planned with its own values: Django sends every
    # value as a parameter, and a plan made for any value (PostgreSQL's generic plan) cannot
    # use a partial index whose predicate names a value (the work table's state = 'queued' and
    # state = 'claimed'): the queue's claim would scan the whole table, however many rows.
    if env.bool("OCC_DATABASE_PREPARED_STATEMENTS", default=True) and (
        DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
    ):
        _database_options = DATABASES["default"].setdefault("OPTIONS", {})
        _database_options.setdefault("server_side_binding", True)
        _database_options.setdefault("prepare_threshold", 5)
        _database_options.setdefault("options", "-c plan_cache_mode=force_custom_plan")
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": OCC_DATA_DIR / "occ.sqlite3",
            # Web, worker and beat share this file: IMMEDIATE transactions take the write
            # lock up front and the timeout waits for it instead of failing at once.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
_broker_dir = OCC_DATA_DIR / "broker"
if CELERY_BROKER_URL == "filesystem://":
    # kombu's filesystem transport, with message files renamed into place once written (celery/kombu#1551).
    CELERY_BROKER_TRANSPORT = "project.kombu_filesystem:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "out"),
        "data_folder_out": str(_broker_dir / "out"),
        "processed_folder": str(_broker_dir / "processed"),
        # kombu otherwise writes its broadcast exchanges to ./control in the working directory.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # Seconds between looks at the folder: the wake-up latency of a nudge in `make run`.
        "polling_interval": 0.2,
    }
CELERY_TASK_IGNORE_RESULT = True
# Celery beat keeps its schedule state here (the sweep's last run).
CELERY_BEAT_SCHEDULE_FILENAME = str(OCC_DATA_DIR / "celerybeat-schedule")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
     "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "/console/sign-in"
# Sign-in throttling (django-axes), for the console and the admin alike: after
# OCC_SIGN_IN_FAILURE_LIMIT wrong passwords for one account from one client address, that
# account is locked for that address for OCC_SIGN_IN_LOCKOUT_SECONDS from the last counted
# failure; the same account from another address, and other accounts, still sign in (so wrong
# passwords from anyone cannot lock everyone out). Refused attempts during a lockout do not
# extend it (so the time the sign-in page names stays true); a successful sign-in clears the
# count. The address is the connection's (REMOTE_ADDR), unless that is one of
# OCC_TRUSTED_PROXIES: then the nearest X-Forwarded-For hop that is not a trusted proxy.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    # Loads the sessions that single sign-on made; it never takes a password.
    "occ.iam.oidc.OidcBackend",
]
OCC_SIGN_IN_FAILURE_LIMIT = env.int("OCC_SIGN_IN_FAILURE_LIMIT", default=5)
OCC_SIGN_IN_LOCKOUT_SECONDS = env.int("OCC_SIGN_IN_LOCKOUT_SECONDS", default=900)
OCC_TRUSTED_PROXIES = env.list("OCC_TRUSTED_PROXIES", default=[])
try:
    for _proxy in OCC_TRUSTED_PROXIES:
        ipaddress.ip_network(_proxy, strict=False)
except ValueError as _bad:
    raise environ.ImproperlyConfigured(f"OCC_TRUSTED_PROXIES: {_bad}") from None
if OCC_SIGN_IN_FAILURE_LIMIT < 1 or OCC_SIGN_IN_LOCKOUT_SECONDS < 1:
    raise environ.ImproperlyConfigured("OCC_SIGN_IN_FAILURE_LIMIT and OCC_SIGN_IN_LOCKOUT_SECONDS must be positive.")
# Single sign-on with OpenID Connect (occ/iam/oidc.py, occ/services/single_sign_on.py,
# docs/access.md): on when OCC_OIDC_ISSUER is set, then the endpoints and the client are required.
# The authorization code flow with PKCE (S256), state and nonce; RS256-signed ID tokens checked
# against the provider's JWKS, its issuer and this client. Only existing accounts sign in: one
# linked to the subject, or (OCC_OIDC_LINK_BY_EMAIL) the one account whose email the provider says
# is verified. OCC_PASSWORD_SIGN_IN: "everyone", or "recovery" (only Installation administrators
# sign in with a password: the way back in when the provider is down).
OCC_OIDC_ISSUER = env.str("OCC_OIDC_ISSUER", default="")
OCC_OIDC_PROVIDER_NAME = env.str("OCC_OIDC_PROVIDER_NAME", default="single sign-on")
OCC_OIDC_LINK_BY_EMAIL = env.bool("OCC_OIDC_LINK_BY_EMAIL", default=True)
OCC_PASSWORD_SIGN_IN = env.str("OCC_PASSWORD_SIGN_IN", default="everyone")
if OCC_PASSWORD_SIGN_IN not in {"everyone", "recovery"}:
    raise environ.ImproperlyConfigured("OCC_PASSWORD_SIGN_IN must be everyone or recovery.")
# mozilla-django-oidc reads these names.
OIDC_OP_AUTHORIZATION_ENDPOINT = env.str("OCC_OIDC_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env.str("OCC_OIDC_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env.str("OCC_OIDC_USERINFO_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env.str("OCC_OIDC_JWKS_ENDPOINT", default="")
OIDC_RP_CLIENT_ID = env.str("OCC_OIDC_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env.str("OCC_OIDC_CLIENT_SECRET", default="")
OIDC_RP_SIGN_ALGO = "RS256"
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_PKCE = True
OIDC_PKCE_CODE_CHALLENGE_METHOD = "S256"
OIDC_USE_NONCE = True
OIDC_CREATE_USER = False
OIDC_TIMEOUT = env.float("OCC_OIDC_TIMEOUT_SECONDS", default=10.0)
OIDC_AUTHENTICATION_CALLBACK_URL = "console:sign-in-oidc-callback"
if OCC_OIDC_ISSUER:
    _oidc_endpoints = {
        "OCC_OIDC_AUTHORIZATION_ENDPOINT": OIDC_OP_AUTHORIZATION_ENDPOINT, "OCC_OIDC_TOKEN_ENDPOINT":
        OIDC_OP_TOKEN_ENDPOINT, "OCC_OIDC_USERINFO_ENDPOINT": OIDC_OP_USER_ENDPOINT,
        "OCC_OIDC_JWKS_ENDPOINT": OIDC_OP_JWKS_ENDPOINT}
    _oidc_missing = [name for name, value in {**_oidc_endpoints, "OCC_OIDC_CLIENT_ID": OIDC_RP_CLIENT_ID,
                                              "OCC_OIDC_CLIENT_SECRET": OIDC_RP_CLIENT_SECRET}.items() if not value]
    if _oidc_missing:
        raise environ.ImproperlyConfigured(f"OCC_OIDC_ISSUER is set, so {', '.join(_oidc_missing)} must be set too.")
    for _name, _url in {"OCC_OIDC_ISSUER": OCC_OIDC_ISSUER, **_oidc_endpoints}.items():
        _parts = urlsplit(_url)
        if _parts.scheme not in {"http", "https"} or not _parts.hostname or _parts.username or _parts.password:
            raise environ.ImproperlyConfigured(f"{_name} must be an http(s) URL without credentials.")
elif OCC_PASSWORD_SIGN_IN == "recovery":
    raise environ.ImproperlyConfigured(
        "OCC_PASSWORD_SIGN_IN=recovery needs single sign-on (OCC_OIDC_ISSUER): "
        "without it nobody but administrators could sign in.")
AXES_FAILURE_LIMIT = OCC_SIGN_IN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=OCC_SIGN_IN_LOCKOUT_SECONDS)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the pair locks: this account from this address
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no "AXES: BEGIN" line from each of make run's processes and commands

# /metrics (project/metrics.py) answers a scraper that sends "Authorization: Bearer
# <OCC_METRICS_TOKEN>"; unset, the route is 404. The figures hold no secret, but the fleet's size
# and activity are nobody else's business.
OCC_METRICS_TOKEN = env.str("OCC_METRICS_TOKEN", default="")
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_HANDLER = "occ.services.sign_in.AuditedAxesHandler"
AXES_LOCKOUT_CALLABLE = "occ.iam.sign_in.lockout_response"
AXES_CLIENT_IP_CALLABLE = "occ.iam.sign_in.client_address"
# Not in the admin: its delete would lift a lockout unaudited. Operators use
# `manage.py axes_reset_username NAME` / `axes_reset_ip ADDRESS`.
AXES_ENABLE_ADMIN = False
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = OCC_DATA_DIR / data_dir.STATIC_FOLDER
# collectstatic writes a gzip copy beside each file; WhiteNoise sends it to a client that accepts
# gzip, so what the console pages load is what `python -m devtools.assets --sizes` measures
# (docs/performance.md, "Console assets") without a compressing proxy in front.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# --- Hardening -----------------------------------------------------------------------------
# Whether OCC is served over HTTPS (TLS ending at gunicorn or at a proxy in front). Then the
# session and CSRF cookies are Secure and HTTPS responses carry HSTS. On by default, except in
# the embedded mode of `make run` (no DATABASE_URL), which serves plain http on loopback.
OCC_HTTPS = env.bool("OCC_HTTPS", default=bool(DATABASE_URL))
SESSION_COOKIE_SECURE = env.bool("OCC_SECURE_COOKIES", default=OCC_HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = env.int("OCC_HSTS_SECONDS", default=365 * 24 * 3600) if OCC_HTTPS else 0
# Behind a proxy that ends TLS, Django knows a request was HTTPS (for HSTS, secure redirects)
# only from the proxy's header; trust it only when the proxy always sets it.
if env.bool("OCC_TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
# The console's sessions end after this long without a request (sliding: every request of a
# signed-in person moves the expiry), not Django's two weeks.
SESSION_COOKIE_AGE = env.int("OCC_SESSION_IDLE_SECONDS", default=3600)
SESSION_SAVE_EVERY_REQUEST = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
# A Content-Security-Policy on every response (django-csp): scripts, styles and everything
# else from OCC's own origin only; no inline script or style, no eval (htmx's allowEval is off
# too, base.html), no plugins, no framing, forms post only to OCC. Images may also come over
# https: the plugin catalogue's logos live on their publishers' sites. The pages with the JSON
# editor (components/json_editor_assets.html) read the request's nonce, so theirs alone also
# allow a <style> carrying it (CodeMirror's own styles); django-csp leaves it out elsewhere.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:", "https:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # Celery's per-task INFO lines about the sweep and the compute maintenance become DEBUG.
    "filters": {"routine_tasks": {"()": "project.celery.RoutineTaskRecords"},
                "one_line_warning": {"()": "project.log_filters.OneLineWarning"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("OCC_LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        # httpx logs each request's whole URL at INFO, and a typed URL (a budget's webhook) can
        # hold a token in its path: OCC logs its outgoing requests itself, without the URL.
        "httpx": {"level": "WARNING"},
        "django.security.DisallowedHost": {"filters": ["one_line_warning"]},
        **{name: {"filters": ["routine_tasks"]} for name in (
            "celery.worker.strategy", "celery.worker.request", "celery.app.trace", "celery.beat")},
    },
}

# Tests in CI must not quietly skip what needs PostgreSQL or Redis.
OCC_REQUIRE_SERVICES = env.bool("OCC_REQUIRE_SERVICES", default=False)
