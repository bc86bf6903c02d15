"""A collection pass against loopback stand-ins of the gateways' RPC (real WebSockets)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg
import pytest
from django.db import connection

from occ.models import Agent, AgentRevision, Principal, UsageDay
from occ.services.usage_collection import usage_collect
from tests.factories import NamespaceFactory
from tests.fakes.usage_gateway import StandInDriver, UsageGateways
from tests.occ.services.usage_support import day_key, figures, running_agent

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
TODAY, YESTERDAY = NOW.date(), NOW.date() - timedelta(days=1)


def rows(agent_id: str) -> dict[tuple[str, str], tuple[int, int, int, Decimal]]:
    return {(row.day.isoformat(), row.model): (row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cost)
            for row in UsageDay.objects.filter(agent_id=agent_id)}


@pytest.mark.django_db
def test_a_pass_stores_each_agent_model_and_day_and_a_second_pass_counts_nothing_twice(usage_gateways, usage_driver):
    namespace = NamespaceFactory()
    first, second = running_agent(namespace), running_agent(namespace)
    usage_gateways.add(first.id, days={
        day_key(YESTERDAY): [figures("gpt-5", 1000, 200, 0.0125, cached=300)],
        day_key(TODAY): [figures("gpt-5", 50, 10, 0.001), figures("gpt-5-mini", 7, 3, 0.00002)]})
    usage_gateways.add(second.id, days={day_key(TODAY): [figures("claude", 11, 22, 0.5, provider="anthropic")]})

    report = usage_collect(driver=usage_driver, now=NOW)
    again = usage_collect(driver=usage_driver, now=NOW)

    assert (report.gateways, report.collected, report.missed) == (2, 2, 0)
    assert again.collected == 2
    assert rows(first.id) == {
        (day_key(YESTERDAY), "gpt-5"): (1000, 200, 300, Decimal("0.01250000")),
        (day_key(TODAY), "gpt-5"): (50, 10, 0, Decimal("0.00100000")),
        (day_key(TODAY), "gpt-5-mini"): (7, 3, 0, Decimal("0.00002000")),
    }
    assert rows(second.id) == {(day_key(TODAY), "claude"): (11, 22, 0, Decimal("0.50000000"))}
    assert UsageDay.objects.get(agent_id=second.id).provider == "anthropic"
    asked = [r["params"] for r in usage_gateways.gateways[first.id].requests]
    assert asked[:2] == [{"startDate": day_key(YESTERDAY), "endDate": day_key(YESTERDAY), "mode": "utc",
                          "agentScope": "all", "limit": 1},
                         {"startDate": day_key(TODAY), "endDate": day_key(TODAY), "mode": "utc",
                          "agentScope": "all", "limit": 1}]


@pytest.mark.django_db
def test_the_day_grows_to_what_the_gateway_says_and_a_restart_never_lowers_it(usage_gateways, usage_driver):
    agent = running_agent(NamespaceFactory())
    gateway = usage_gateways.add(agent.id, days={day_key(TODAY): [figures("gpt-5", 100, 10, 0.01)]})
    usage_collect(driver=usage_driver, now=NOW)
    gateway.days[day_key(TODAY)] = [figures("gpt-5", 180, 30, 0.02)]  # more turns today: the day's total
    usage_collect(driver=usage_driver, now=NOW)
    assert rows(agent.id) == {(day_key(TODAY), "gpt-5"): (180, 30, 0, Decimal("0.02000000"))}

    gateway.days = {day_key(TODAY): [figures("gpt-5", 5, 1, 0.001)]}  # restarted with less history
    usage_collect(driver=usage_driver, now=NOW)
    assert rows(agent.id) == {(day_key(TODAY), "gpt-5"): (180, 30, 0, Decimal("0.02000000"))}


@pytest.mark.django_db
def test_a_finished_day_stays_once_it_leaves_the_window(usage_gateways, usage_driver):
    agent = running_agent(NamespaceFactory())
    usage_gateways.add(agent.id, days={day_key(YESTERDAY): [figures("gpt-5", 100, 10, 0.01)]})
    usage_collect(driver=usage_driver, now=NOW)
    usage_gateways.gateways[agent.id].days = {}
    usage_collect(driver=usage_driver, now=NOW + timedelta(days=2))
    assert rows(agent.id) == {(day_key(YESTERDAY), "gpt-5"): (100, 10, 0, Decimal("0.01000000"))}


@pytest.mark.django_db
def test_a_deleted_agent_keeps_its_history(usage_gateways, usage_driver):
    agent = running_agent(NamespaceFactory(), name="gone-soon")
    usage_gateways.add(agent.id, days={day_key(TODAY): [figures("gpt-5", 100, 10, 0.01)]})
    usage_collect(driver=usage_driver, now=NOW)
    Agent.objects.filter(id=agent.id).update(active_revision=None)
    AgentRevision.objects.filter(agent=agent).delete()
    Principal.objects.filter(agent=agent).delete()
    agent.configuration.agents.all().delete()
    assert not Agent.objects.filter(id=agent.id).exists()
    kept = UsageDay.objects.get(agent_id=agent.id)
    assert (kept.agent_name, kept.input_tokens) == ("gone-soon", 100)


@pytest.mark.django_db
def test_a_down_or_silent_gateway_costs_its_timeout_and_never_stalls_the_pass(usage_gateways, usage_driver, settings):
    settings.OCC_USAGE_GATEWAY_TIMEOUT_SECONDS = 1.0
    settings.OCC_USAGE_CONCURRENCY = 1  # one at a time: the bound is per gateway, not hidden by parallelism
    namespace = NamespaceFactory()
    down, silent, fine = running_agent(namespace), running_agent(namespace), running_agent(namespace)
    usage_gateways.add(down.id, down=True)
    usage_gateways.add(silent.id, silent=True)
    usage_gateways.add(fine.id, days={day_key(TODAY): [figures("gpt-5", 1, 1, 0.001)]})

    started = time.monotonic()
    report = usage_collect(driver=usage_driver, now=NOW)
    elapsed = time.monotonic() - started

    assert (report.collected, report.missed) == (1, 2)
    assert elapsed < 4, f"the pass took {elapsed:.1f} s"
    assert list(rows(fine.id)) == [(day_key(TODAY), "gpt-5")]
    assert not rows(silent.id)
    assert not rows(down.id)


class WatchingDriver(StandInDriver):
    """Counts, for each gateway call, the transactions of this database that were open before the
    call began and are still open when it ended: a transaction held across the call."""

    def __init__(self, gateways: UsageGateways, dsn: str) -> None:
        super().__init__(gateways)
        self.dsn, self.spanning = dsn, []

    def operator_call(self, revision, **kwargs):  # type: ignore[no-untyped-def,override]
        with psycopg.connect(self.dsn, autocommit=True) as watcher:
            began = watcher.execute("SELECT clock_timestamp()").fetchone()[0]
            answer = super().operator_call(revision, **kwargs)
            self.spanning.append(watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND xact_start < %s AND pid <> pg_backend_pid()", [began]).fetchone()[0])
        return answer


@pytest.mark.django_db(transaction=True)
def test_no_database_transaction_is_open_while_a_gateway_is_asked(usage_gateways):
    if connection.vendor != "postgresql":
        pytest.skip("pg_stat_activity is PostgreSQL's")
    params = connection.get_connection_params()
    dsn = psycopg.conninfo.make_conninfo(**{k: v for k, v in params.items() if k in {
        "dbname", "user", "host", "port", "password"}})
    namespace = NamespaceFactory()
    agents = [running_agent(namespace) for _ in range(3)]
    for agent in agents:  # each answer takes longer than any of the pass's own short write transactions
        usage_gateways.add(agent.id, delay=0.3, days={day_key(TODAY): [figures("gpt-5", 1, 1, 0.001)]})
    watching = WatchingDriver(usage_gateways, dsn)
    assert usage_collect(driver=watching, now=NOW).collected == 3
    assert len(watching.spanning) == 6
    assert set(watching.spanning) == {0}
