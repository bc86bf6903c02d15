#!/usr/bin/env python
"""Every console list page ÷ the JSON list of the same rows, side by side in one run.

gunicorn (2 sync workers, ``bench.settings``: production settings plus a ``Server-Timing``
header timing the whole Django stack) serves OCC on PostgreSQL, seeded with N Agents (default
500) and rows of every other kind the console lists. For each list page a ``console`` arm (the
whole HTML page, signed-in session) and a ``json`` arm (the same rows as JSON) run; every arm
of every page is interleaved in each round at concurrency 1 (the order rotates every round),
over HTTP on loopback like bench/api_latency.py:

    agents          /console/namespaces/{ns}/agents        /namespaces/{ns}/agents (key)
    namespaces      /console/namespaces                    /namespaces (key)
    secrets         /console/namespaces/{ns}/secrets       /namespaces/{ns}/secrets (key)
    access          /console/namespaces/{ns}/access        roles + access-bindings + service-principals (key, summed)
    revisions       …/agents/{id}?tab=revisions            …/agents/{id}/revisions (key)
    configurations  /console/namespaces/{ns}/configurations  bench JSON of the same page (session)
    members         /console/members                       bench JSON of the same page (session)
    audit           /console/audit                         bench JSON of the same page (session)

The API has no list of Configurations, accounts or audit events: for those pages the JSON arm
is ``bench/urls.py``'s view of the same selector's same page of rows, serialized as JSON,
through the same session (so the ratio is exactly the page's rendering cost). Paged console
lists are seeded with one page of rows where the API list returns every row, so both answer
the same rows. The figure per page is the p50 of the server time (``Server-Timing``) of
``console`` ÷ that of ``json``; target <= 3 (issue 16). ``agents`` also has ``json-session``
(the Agents JSON through the session: how much of the difference is authentication), and
``revisions`` has ``tab-swap`` (the same URL as htmx asks for it when the tab is clicked: the
``#agent-tabs`` partial, without the Agent page around it). Also
prints each page's SQL queries with a few rows and with all of them (they must not grow).

Run: ``.venv/bin/python bench/console_list_render.py`` (``--help``; ``--pages agents,audit``
for some). ``DATABASE_URL`` (default ``postgres://postgres@127.0.0.1:5432/occ_bench_console``)
must name a PostgreSQL database containing ``bench``: it is dropped and recreated.

One module of ~520 lines: a benchmark script that runs on its own; the seeding, the arms of
every list page and the report are read together.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the project root first
    _root = str(Path(__file__).resolve().parent.parent)
    if _root not in sys.path:
        sys.path.insert(0, _root)

import argparse
import math
import os
import re
import secrets
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.api_latency import app_time_ms, configure_django, free_port, gunicorn_server, mark_namespace_ready
from bench.verdicts import Verdict, print_verdicts
from bench.worker_support import (
    BenchError,
    bench_database_url,
    bench_main,
    machine_facts,
    percentile,
    print_closing,
    print_facts,
    ratio,
    recreate_database,
)
from occ.commands.agents import HarnessAuth
from occ.commands.configurations import ConfigurationCreate

DEFAULT_DATABASE = "occ_bench_console"
TARGET = 3.0
REQUEST_TIMEOUT_SECONDS = 30
ADMIN = "admin"
ACCESS_NAMESPACE = "bench-access"
# Rows of each kind: (with a few rows, with all). Paged lists whose JSON list is the API's get
# one console page of rows (access 25 per list, revisions 20); those whose JSON is the bench
# view of the same page get more than a page.
FEW = {"namespaces": 3, "secrets": 3, "configurations": 3, "members": 3, "access": 3, "revisions": 3}
FULL = {"namespaces": 50, "secrets": 200, "configurations": 200, "members": 60, "access": 25, "revisions": 20}
PAGES = ("agents", "namespaces", "secrets", "configurations", "access", "members", "audit", "revisions")


@dataclass
class Seeded:
    namespace_id: str
    access_namespace_id: str
    revisions_agent_id: str
    key: str
    password: str
    counts: dict[str, int]  # kind -> rows seeded (agents: in the listed Namespace)
    queries: dict[str, dict[str, int]] = field(default_factory=dict)  # page -> {"few"/"full": SQL queries}


# --- the data ---------------------------------------------------------------------------------


def console_rows(html: str) -> int:
    """Agent rows in a rendered ``#agents-table`` (each row's name links to the Agent)."""
    table = re.search(r'<div id="agents-table".*?</table>', html, re.S)
    if table is None:
        raise BenchError("The console page has no #agents-table.")
    return len(re.findall(r"<tr>\s*<td[^>]*><a href=", table.group(0)))


def page_paths(seeded: Seeded) -> dict[str, str]:
    ns, access = seeded.namespace_id, seeded.access_namespace_id
    return {
        "agents": f"/console/namespaces/{ns}/agents",
        "namespaces": "/console/namespaces",
        "secrets": f"/console/namespaces/{ns}/secrets",
        "configurations": f"/console/namespaces/{ns}/configurations",
        "access": f"/console/namespaces/{access}/access",
        "members": "/console/members",
        "audit": "/console/audit",
        "revisions": f"/console/namespaces/{ns}/agents/{seeded.revisions_agent_id}?tab=revisions",
    }


def page_queries(path: str) -> int:
    """SQL queries of one console page, in-process through the whole middleware stack."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username=ADMIN))
    client.get(path)  # the session row is written once; count a steady-state request
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    if response.status_code != 200:
        raise BenchError(f"{path} answered {response.status_code} in-process.")
    return len(captured.captured_queries)


class Seeder:
    """Tops each kind up to a number of rows, through the services (accounts and access
    bindings through the models: hashing 60 passwords would dominate the setup)."""

    def __init__(self, agents: int) -> None:
        from django.core.management import call_command

        from occ.commands.agents import AgentCreate, AgentSecretAccess
        from occ.commands.namespaces import NamespaceCreate
        from occ.commands.secrets import SecretCreate
        from occ.iam.actor import Actor, Source
        from occ.models import Namespace
        from occ.services.agent_secret_access import agent_secret_access_grant
        from occ.services.agents import agent_create
        from occ.services.bootstrap import installation_bootstrap
        from occ.services.configurations import configuration_create
        from occ.services.namespaces import namespace_create
        from occ.services.secrets import secret_create

        call_command("migrate", verbosity=0, interactive=False)
        self.password = secrets.token_urlsafe(18)
        result = installation_bootstrap(name="OCC console bench", admin_username=ADMIN, admin_password=self.password,
                                        key_days=1)
        if not result.created or result.key is None or result.key_token is None:
            raise BenchError("Bootstrap did not create a fresh Installation.")
        self.key = result.key_token
        self.actor = Actor(principal=result.key.principal, source=Source.CLI)
        self.namespace = Namespace.objects.get(name="default")
        self.access = namespace_create(actor=self.actor, command=NamespaceCreate(name=ACCESS_NAMESPACE))
        for namespace in (self.namespace, self.access):
            mark_namespace_ready(namespace.id)
        self.configuration = configuration_create(actor=self.actor, namespace_id=self.namespace.id,
                                                  command=ConfigurationCreate(kind="agent", values=self.values()))
        # The revisions Agent is deployable: an api_key harness Secret it may use (one more Secret).
        harness = secret_create(actor=self.actor, namespace_id=self.namespace.id, command=SecretCreate(
            name="bench-model-key", value=secrets.token_urlsafe(24)))
        self.revisions_agent = agent_create(actor=self.actor, namespace_id=self.namespace.id, command=AgentCreate(
            name="bench-agent-0000", configuration_id=self.configuration.id, harness_auth=HarnessAuth.model_validate({
                "method": "api_key", "source": {"kind": "secret", "namespaceId": self.namespace.id,
                                                "id": harness.id}})))
        agent_secret_access_grant(actor=self.actor, namespace_id=self.namespace.id, agent_id=self.revisions_agent.id,
                                  command=AgentSecretAccess(secret_ids=[harness.id]))
        self.target_agents = agents
        self.counts = {"agents": 1, **dict.fromkeys(FULL, 0)}

    @staticmethod
    def values(model: str = "openai/gpt-5") -> dict[str, Any]:
        return {"agents": {"defaults": {"skipBootstrap": True, "model": {"primary": model}}}}

    def top_up(self, targets: dict[str, int], agents: int) -> None:
        from django.contrib.auth import get_user_model
        from django.contrib.auth.hashers import make_password

        from occ.commands.agents import AgentCreate
        from occ.commands.iam import Permission, RoleCreate, ServicePrincipalCreate
        from occ.commands.namespaces import NamespaceCreate
        from occ.commands.secrets import SecretCreate
        from occ.models import AccessBinding, Principal, PrincipalKind, Role
        from occ.services.agents import agent_create
        from occ.services.configurations import configuration_create
        from occ.services.deploy import agent_deploy
        from occ.services.iam_policy import role_create, service_principal_create
        from occ.services.namespaces import namespace_create
        from occ.services.secrets import secret_create

        ns, actor = self.namespace.id, self.actor
        for index in range(self.counts["agents"], agents):
            agent_create(actor=actor, namespace_id=ns, command=AgentCreate(
                name=f"bench-agent-{index:04d}", configuration_id=self.configuration.id))
        for index in range(self.counts["namespaces"], targets["namespaces"]):
            namespace_create(actor=actor, command=NamespaceCreate(name=f"bench-ns-{index:03d}"))
        for index in range(self.counts["secrets"], targets["secrets"]):
            secret_create(actor=actor, namespace_id=ns, command=SecretCreate(
                name=f"bench-secret-{index:04d}", value=secrets.token_urlsafe(24)))
        for index in range(self.counts["configurations"], targets["configurations"]):
            configuration_create(actor=actor, namespace_id=ns, command=ConfigurationCreate(
                kind="agent", values=self.values(f"openai/bench-model-{index:04d}")))
        password = make_password(secrets.token_urlsafe(18))  # one hash for every bench account
        for index in range(self.counts["members"], targets["members"]):
            user = get_user_model().objects.create(username=f"bench-user-{index:03d}", password=password)
            Principal.objects.create(kind=PrincipalKind.HUMAN, name=f"Bench Person {index:03d}", user=user)
        access = self.access.id
        # The access page's three lists, each up to one page (the Namespace's own Roles count).
        for index in range(Role.objects.filter(namespace_id=access).count(), targets["access"]):
            role_create(actor=actor, namespace_id=access, command=RoleCreate(
                name=f"bench-role-{index:03d}", permissions=[Permission(action="read", resource_kind="agent")]))
        for index in range(Principal.objects.filter(namespace_id=access, kind=PrincipalKind.SERVICE).count(),
                           targets["access"]):
            service_principal_create(actor=actor, namespace_id=access,
                                     command=ServicePrincipalCreate(name=f"bench-sp-{index:03d}"))
        principals = list(Principal.objects.filter(namespace_id=access, kind=PrincipalKind.SERVICE).order_by("name"))
        roles = list(Role.objects.filter(namespace_id=access).order_by("name"))
        for index in range(AccessBinding.objects.filter(namespace_id=access).count(), targets["access"]):
            AccessBinding.objects.create(principal=principals[index], role=roles[index], namespace_id=access)
        for _ in range(self.counts["revisions"], targets["revisions"]):
            agent_deploy(actor=actor, namespace_id=ns, agent_id=self.revisions_agent.id)
        self.counts = {"agents": agents, **targets}

    def seeded(self) -> Seeded:
        return Seeded(namespace_id=self.namespace.id, access_namespace_id=self.access.id,
                      revisions_agent_id=self.revisions_agent.id, key=self.key, password=self.password,
                      counts=dict(self.counts))


def seed(agents: int, pages: Sequence[str]) -> Seeded:
    """Migrate, bootstrap (with a password this run knows), seed a few rows of each kind and
    count each console page's queries, then all the rows and count again."""
    from django.db import connections

    seeder = Seeder(agents)
    seeder.top_up(FEW, 10)
    few = seeder.seeded()
    queries = {page: {"few": page_queries(page_paths(few)[page])} for page in pages}
    seeder.top_up(FULL, agents)
    seeded = seeder.seeded()
    for page in pages:
        queries[page]["full"] = page_queries(page_paths(seeded)[page])
    seeded.queries = queries
    connections.close_all()
    return seeded


# --- the arms ---------------------------------------------------------------------------------


@dataclass
class Arm:
    page: str
    name: str  # "console", "json", or an extra arm ("json-session", "tab-swap")
    label: str
    call: Callable[[], list[Any]]  # -> httpx.Responses (the access JSON arm makes three)
    check: Callable[[list[Any]], None]

    @property
    def key(self) -> str:
        return f"{self.page}/{self.name}"


@dataclass
class ArmResult:
    client_ms: list[float] = field(default_factory=list)
    app_ms: list[float] = field(default_factory=list)
    round_app_p50: list[float] = field(default_factory=list)


def signed_in_client(base_url: str, password: str) -> Any:
    """An httpx client holding a console session, signed in through the real sign-in form."""
    import httpx

    client = httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT_SECONDS, follow_redirects=False)
    client.get("/console/sign-in")
    response = client.post("/console/sign-in", data={
        "username": ADMIN, "password": password, "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    if response.status_code != 302 or "sessionid" not in client.cookies:
        client.close()
        raise BenchError(f"Console sign-in answered {response.status_code}.")
    return client


def _json_count(expected: int, label: str, *keys: str) -> Callable[[list[Any]], None]:
    """``expected`` items in the answers' data (``keys``: each answer's keyset page's items)."""
    def check(responses: list[Any]) -> None:
        got = sum(len(r.json()["data"] if not keys else r.json()["data"][key])
                  for r, key in zip(responses, keys or [""] * len(responses), strict=True) if r.status_code == 200)
        if any(r.status_code != 200 for r in responses) or got != expected:
            raise BenchError(f"{label} answered {[r.status_code for r in responses]} with {got} items, "
                             f"expected {expected}.")
    return check


def _html_has(markers: list[str], label: str) -> Callable[[list[Any]], None]:
    def check(responses: list[Any]) -> None:
        (response,) = responses
        missing = [m for m in markers if m not in response.text]
        if response.status_code != 200 or missing:
            raise BenchError(f"{label} answered {response.status_code}; missing {missing[:3]}.")
    return check


def make_arms(session: Any, keyed: Any, seeded: Seeded, pages: Sequence[str]) -> list[Arm]:
    ns, access, agents = seeded.namespace_id, seeded.access_namespace_id, seeded.counts["agents"]
    paths = page_paths(seeded)
    counts = seeded.counts
    revisions = f"/namespaces/{ns}/agents/{seeded.revisions_agent_id}/revisions"

    def get(client: Any, *urls: str) -> Callable[[], list[Any]]:
        return lambda: [client.get(url) for url in urls]

    console_page = 50  # console.views.agents.PAGE_SIZE: the console's Agents page, its first page too

    def agents_html(responses: list[Any]) -> None:
        (response,) = responses
        if response.status_code != 200 or console_rows(response.text) != min(agents, console_page):
            raise BenchError(f"GET {paths['agents']} answered {response.status_code} without "
                             f"{min(agents, console_page)} rows.")

    access_lists = [f"/namespaces/{access}/iam/{name}" for name in ("roles", "access-bindings", "service-principals")]
    audit_rows = 50  # occ.selectors.audit.PAGE_SIZE: both arms read its newest page
    api_page = 50  # the PAGE_SIZE of the API's keyset lists: the JSON arms read the first page
    arms = {
        "agents": [
            Arm("agents", "console", "GET /console/namespaces/{ns}/agents", get(session, paths["agents"]), agents_html),
            Arm("agents", "json", "GET /namespaces/{ns}/agents (key)", get(keyed, f"/namespaces/{ns}/agents"),
                _json_count(min(agents, api_page), "agents JSON", "agents")),
            Arm("agents", "json-session", "GET /namespaces/{ns}/agents (session)",
                get(session, f"/namespaces/{ns}/agents"),
                _json_count(min(agents, api_page), "agents JSON (session)", "agents")),
        ],
        "namespaces": [
            Arm("namespaces", "console", "GET /console/namespaces", get(session, paths["namespaces"]),
                # One keyset page (50, as the API's) of the bench's Namespaces and the two made before them.
                _html_has([f"bench-ns-{i:03d}" for i in range(min(counts["namespaces"], api_page - 2))],
                          "namespaces page")),
            Arm("namespaces", "json", "GET /namespaces (key)", get(keyed, "/namespaces"),
                _json_count(min(counts["namespaces"] + 2, api_page), "namespaces JSON", "namespaces")),
        ],
        "secrets": [
            Arm("secrets", "console", "GET /console/namespaces/{ns}/secrets", get(session, paths["secrets"]),
                # One keyset page of Secrets, oldest first (50, as the API's first page): the model key, then these.
                _html_has([f"bench-secret-{i:04d}" for i in range(min(counts["secrets"], api_page - 1))],
                          "secrets page")),
            Arm("secrets", "json", "GET /namespaces/{ns}/secrets (key)", get(keyed, f"/namespaces/{ns}/secrets"),
                _json_count(min(counts["secrets"] + 1, api_page), "secrets JSON", "secrets")),
        ],
        "configurations": [
            Arm("configurations", "console", "GET /console/namespaces/{ns}/configurations",
                get(session, paths["configurations"]), _html_has(["configurations-table"], "configurations page")),
            Arm("configurations", "json", "GET /bench/json/configurations (session)",
                get(session, f"/bench/json/namespaces/{ns}/configurations"), _json_count(20, "configurations JSON")),
        ],
        "access": [
            Arm("access", "console", "GET /console/namespaces/{ns}/access", get(session, paths["access"]),
                _html_has([f"bench-{kind}-{i:03d}" for kind in ("role", "sp") for i in range(counts["access"])],
                          "access page")),
            Arm("access", "json", "GET roles+bindings+principals (key)", get(keyed, *access_lists),
                _json_count(3 * min(counts["access"], api_page), "access JSON", "roles", "accessBindings",
                            "servicePrincipals")),
        ],
        "members": [
            Arm("members", "console", "GET /console/members", get(session, paths["members"]),
                _html_has(["Bench Person 000"], "members page")),
            Arm("members", "json", "GET /bench/json/members (session)", get(session, "/bench/json/members"),
                _json_count(25, "members JSON")),
        ],
        "audit": [
            Arm("audit", "console", "GET /console/audit", get(session, paths["audit"]),
                _html_has(["audit-results"], "audit page")),
            Arm("audit", "json", "GET /bench/json/audit (session)", get(session, "/bench/json/audit"),
                _json_count(audit_rows, "audit JSON")),
        ],
        "revisions": [
            Arm("revisions", "console", "GET …/agents/{id}?tab=revisions", get(session, paths["revisions"]),
                _html_has([f"View version v{n}\"" for n in range(1, counts["revisions"] + 1)], "revisions tab")),
            Arm("revisions", "json", "GET …/agents/{id}/revisions (key)", get(keyed, revisions),
                _json_count(min(counts["revisions"], api_page), "revisions JSON", "revisions")),
            Arm("revisions", "tab-swap", "GET …?tab=revisions (htmx: #agent-tabs)",
                lambda: [session.get(paths["revisions"], headers={"HX-Request": "true"})],
                _html_has(["id=\"agent-tabs\"", *(f"View version v{n}\"" for n in range(1, counts["revisions"] + 1))],
                          "revisions tab swap")),
        ],
    }
    return [arm for page in pages for arm in arms[page]]


def measure(arms: Sequence[Arm], *, rounds: int, requests: int) -> dict[str, ArmResult]:
    """Rounds of every arm in turn, one request at a time; the order rotates each round."""
    results = {arm.key: ArmResult() for arm in arms}
    for arm in arms:  # each checked once, untimed
        arm.check(arm.call())
    for round_number in range(rounds):
        shift = round_number % len(arms)
        for arm in [*arms[shift:], *arms[:shift]]:
            app_times = []
            for _ in range(requests):
                started = time.perf_counter()
                responses = arm.call()
                elapsed = (time.perf_counter() - started) * 1000
                if any(r.status_code != 200 for r in responses):
                    raise BenchError(f"{arm.label} answered {[r.status_code for r in responses]}.")
                results[arm.key].client_ms.append(elapsed)
                app_times.append(sum(app_time_ms(r) for r in responses))
            measured = [t for t in app_times if not math.isnan(t)]
            if not measured:
                raise BenchError(f"{arm.label} sent no Server-Timing header (bench.settings not in use?).")
            results[arm.key].app_ms.extend(measured)
            results[arm.key].round_app_p50.append(percentile(measured, 50))
    return results


def warm_up(arms: Sequence[Arm], requests: int) -> None:
    """Both gunicorn workers connect, import and fill their template caches before timing."""
    for _ in range(requests):
        for arm in arms:
            arm.call()


def report(arms: Sequence[Arm], results: dict[str, ArmResult], rounds: int, requests: int,
           pages: Sequence[str]) -> list[Verdict]:
    print(f"\n{rounds} interleaved rounds x {requests} requests per arm, concurrency 1, all pages in one run")
    print(f"  {'arm':<52}{'n':>6}{'server p50 ms':>15}{'server p99 ms':>15}{'client p50 ms':>15}")
    for arm in arms:
        result = results[arm.key]
        print(f"  {arm.page + ': ' + arm.label:<52}{len(result.app_ms):>6}{percentile(result.app_ms, 50):>15.2f}"
              f"{percentile(result.app_ms, 99):>15.2f}{percentile(result.client_ms, 50):>15.2f}")
    print("\nratios (console page ÷ JSON list of the same rows), server p50")
    verdicts = []
    for page in pages:
        console, keyed = results[f"{page}/console"], results[f"{page}/json"]
        per_round = [ratio(c, j) for c, j in zip(console.round_app_p50, keyed.round_app_p50, strict=True)]
        figure = ratio(percentile(console.app_ms, 50), percentile(keyed.app_ms, 50))
        print(f"  {page:<16}{figure:>6.2f}x   rounds median {percentile(per_round, 50):.2f}x "
              f"[{min(per_round):.2f}-{max(per_round):.2f}]")
        verdicts.append(Verdict(f"{page}: console ÷ JSON, server p50", figure, TARGET, at_most=True))
    if "revisions" in pages:
        swap, keyed = results["revisions/tab-swap"], results["revisions/json"]
        print(f"  revisions tab swap ÷ json:    "
              f"{ratio(percentile(swap.app_ms, 50), percentile(keyed.app_ms, 50)):.2f}x   (the same rows as a click "
              "on the tab fetches them: #agent-tabs, without the page around it)")
    if "agents" in pages:
        console, session = results["agents/console"], results["agents/json-session"]
        print(f"  agents ÷ json (session):      "
              f"{ratio(percentile(console.app_ms, 50), percentile(session.app_ms, 50)):.2f}x")
    return verdicts


# --- the run ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=12, help="interleaved rounds (default 12)")
    parser.add_argument("--requests", type=int, default=8, help="requests per arm per round (default 8)")
    parser.add_argument("--agents", type=int, default=500, help="Agents in the listed Namespace (default 500)")
    parser.add_argument("--pages", default=",".join(PAGES), help=f"which list pages (default {','.join(PAGES)})")
    args = parser.parse_args(argv)
    args.pages = [page.strip() for page in args.pages.split(",") if page.strip()]
    if not (1 <= args.rounds <= 1000 and 1 <= args.requests <= 1000 and 10 <= args.agents <= 5000):
        parser.error("rounds and requests must be 1-1000, agents 10-5000")
    if not args.pages or set(args.pages) - set(PAGES):
        parser.error(f"--pages takes some of {','.join(PAGES)}")
    return args


def run(args: argparse.Namespace) -> list[Verdict]:
    import httpx

    started = time.monotonic()
    database_url = bench_database_url(DEFAULT_DATABASE)
    recreate_database(database_url)
    # gunicorn serves plain http on loopback here: cookies that are not Secure, or the session
    # client never sends them back (OCC_HTTPS defaults on with a DATABASE_URL).
    os.environ["OCC_HTTPS"] = "false"
    with tempfile.TemporaryDirectory(prefix="occ-bench-console-") as data_dir:
        configure_django(database_url, Path(data_dir))
        print_facts("OCC console list benchmark (every list page ÷ the JSON list of its rows, same gunicorn)",
                    machine_facts(database_url))
        seeded = seed(args.agents, args.pages)
        print(f"\nrows: {', '.join(f'{kind} {n}' for kind, n in seeded.counts.items())}")
        print("SQL queries per console page, few rows -> all rows:")
        growing = []
        for page in args.pages:
            few, full = seeded.queries[page]["few"], seeded.queries[page]["full"]
            # Fewer is not an N+1: the audit page checks each resource kind on it once, and the
            # newest 50 events of the full seed hold fewer kinds than the few-rows seed's.
            print(f"  {page:<16}{few:>4} -> {full:<4}{'EQUAL' if few == full else 'FEWER' if full < few else 'GROWS'}")
            if full > few:
                growing.append(page)
        print(f"setup took {time.monotonic() - started:.1f} s")
        with gunicorn_server(free_port(), Path(data_dir) / "gunicorn.log") as base_url:
            session = signed_in_client(base_url, seeded.password)
            keyed = httpx.Client(base_url=base_url, headers={"x-api-key": seeded.key},
                                 timeout=REQUEST_TIMEOUT_SECONDS)
            try:
                arms = make_arms(session, keyed, seeded, args.pages)
                warm_up(arms, 5)
                results = measure(arms, rounds=args.rounds, requests=args.requests)
            finally:
                session.close()
                keyed.close()
    verdicts = report(arms, results, args.rounds, args.requests, args.pages)
    for page in growing:
        verdicts.append(Verdict(f"{page}: console queries few vs all rows (grows)", 1.0, 0.0, at_most=True))
    print_verdicts(verdicts)
    print_closing(started, suffix="The target applies to the server p50 ratios; absolute times are context.")
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(parse_args, run, argv)


if __name__ == "__main__":
    sys.exit(main())
