"""``/metrics``: the Prometheus text format (``prometheus_client``), for a scraper holding the
bearer token ``OCC_METRICS_TOKEN`` (unset: the route answers 404; docs/reliability.md, "Metrics").

Two kinds of figure:
- What this web tier did (requests by face, method and status class, their latency, sign-in
  failures), counted by the processes that serve them. gunicorn runs several worker processes,
  so under gunicorn these live in ``prometheus_client``'s multiprocess files
  (``PROMETHEUS_MULTIPROC_DIR``, set up by project/gunicorn_conf.py) and a scrape sums every
  process; elsewhere (tests, runserver) in this process.
- What the fleet looks like (work by job and state, the oldest pending work's age, lease
  expiries, Agents by state, deploy durations), read from the database at scrape time
  (``occ.selectors.metrics``), so every replica answers the same.
- Usage and cost per Namespace (tokens and USD as the gateways report them, collected by the
  worker), read from the database at scrape time.
Every label set is bounded: no per-Agent or per-person label; the usage series carry the
Namespace's name (as many as there are Namespaces) and a fixed period or token kind.
"""

from __future__ import annotations

import hmac
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from occ.selectors.metrics import DEPLOY_BUCKETS, fleet_figures, usage_figures

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Created outside any registry: a scrape puts them in a registry of its own (below).
HTTP_REQUESTS = Counter("occ_http_requests", "HTTP requests answered, by face, method and status class.",
                        ["face", "method", "status"], registry=None)
HTTP_SECONDS = Histogram("occ_http_request_duration_seconds", "Time to answer a request (to its headers), by face.",
                         ["face"], registry=None,
                         buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0))
SIGN_IN_FAILURES = Counter("occ_sign_in_failures", "Refused console and admin sign-ins (wrong password, "
                           "unknown or disabled account, locked out).", registry=None)
OWN = (HTTP_REQUESTS, HTTP_SECONDS, SIGN_IN_FAILURES)
# Decided once, as prometheus_client decided it when this module imported it: a variable set
# later (by anything in this process) does not change where the counts above are kept.
MULTIPROCESS = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def face(path: str) -> str:
    for prefix, name in (("/console/", "console"), ("/admin/", "admin"), ("/healthz", "health"),
                         ("/readyz", "health"), ("/metrics", "metrics")):
        if path.startswith(prefix):
            return name
    return "api"


class MetricsMiddleware:
    """First in MIDDLEWARE: counts and times every answer, refusals included."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        where = face(request.path)
        HTTP_SECONDS.labels(where).observe(time.perf_counter() - started)
        method = request.method if request.method in METHODS else "other"
        HTTP_REQUESTS.labels(where, method, f"{response.status_code // 100}xx").inc()
        return response


@receiver(user_login_failed)
def _sign_in_failed(sender: Any, **kwargs: Any) -> None:
    SIGN_IN_FAILURES.inc()


class FleetCollector(Collector):
    def collect(self) -> Iterator[Metric]:
        figures = fleet_figures()
        work = GaugeMetricFamily("occ_work", "Controller work rows by job and state.", labels=["job", "state"])
        for (job, state), rows in sorted(figures.work.items()):
            work.add_metric([job, state], rows)
        oldest = GaugeMetricFamily("occ_work_oldest_pending_seconds",
                                   "Age of the oldest queued or claimed work row, by job.", labels=["job"])
        for job, seconds in sorted(figures.oldest_pending_seconds.items()):
            oldest.add_metric([job], seconds)
        expired = GaugeMetricFamily("occ_work_lease_expired", "Work rows whose last attempt lost its lease "
                                    "(its worker died or stalled; another took it over), by job.", labels=["job"])
        for job, rows in sorted(figures.lease_expired.items()):
            expired.add_metric([job], rows)
        agents = GaugeMetricFamily("occ_agents", "Agents by status and desired runtime state.",
                                   labels=["status", "desired"])
        for (status, desired), rows in sorted(figures.agents.items()):
            agents.add_metric([status, desired], rows)
        deploys = HistogramMetricFamily("occ_deploy_duration_seconds",
                                        "From a revision's work accepted to its revision active.")
        buckets = [(str(bound), count) for bound, count in zip(DEPLOY_BUCKETS, figures.deploy_buckets, strict=True)]
        deploys.add_metric([], [*buckets, ("+Inf", figures.deploys)], sum_value=figures.deploy_seconds)
        yield from (work, oldest, expired, agents, deploys, *_usage())


def _usage() -> tuple[Metric, Metric]:
    cost = GaugeMetricFamily("occ_usage_cost_usd", "What a Namespace's Agents cost as their gateways price it, "
                             "this UTC day and month.", labels=["namespace", "period"])
    tokens = GaugeMetricFamily("occ_usage_tokens", "A Namespace's model tokens this UTC month, by kind.",
                               labels=["namespace", "kind"])
    for usage in usage_figures():
        cost.add_metric([usage.namespace, "day"], usage.cost_today)
        cost.add_metric([usage.namespace, "month"], usage.cost_month)
        for kind, count in (("input", usage.input_month), ("output", usage.output_month),
                            ("cached", usage.cached_month)):
            tokens.add_metric([usage.namespace, kind], count)
    return cost, tokens


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    if MULTIPROCESS:
        multiprocess.MultiProcessCollector(registry)
    else:
        for metric in OWN:
            registry.register(metric)
    registry.register(FleetCollector())
    return registry


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.OCC_METRICS_TOKEN
    if not token:
        raise Http404("metrics are off")
    supplied = request.headers.get("Authorization", "")
    if not hmac.compare_digest(supplied.encode(), f"Bearer {token}".encode()):
        return HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain",
                            headers={"WWW-Authenticate": 'Bearer realm="metrics"', "Cache-Control": "no-store"})
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST,
                        headers={"Cache-Control": "no-store"})
