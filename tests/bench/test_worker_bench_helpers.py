"""The controller-worker benchmarks' helpers on fixed inputs (the benchmarks never run in the suite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bench.activation_local import Activation
from bench.queue_claim import ArmRates, one_line, pgbench_scripts, rotated
from bench.verdicts import Verdict
from bench.worker_recovery import recovery_of
from bench.worker_support import (
    BenchError,
    Transition,
    bench_database_url,
    duplicate_effects,
    first_claim_after,
    parse_pgbench,
    redis_db_number,
)
from bench.worker_wakeup import Sample, broker_hop_ms, received_times, wakeup_samples

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def epoch(seconds: float) -> float:
    return at(seconds).timestamp()


# --- pgbench output -------------------------------------------------------------------------------

PGBENCH_OK = """pgbench (15.20)
transaction type: claim.sql
number of transactions actually processed: 400/400
number of failed transactions: 0 (0.000%)
latency average = 2.1 ms
initial connection time = 3.456 ms
tps = 476.123456 (without initial connection time)
"""


def test_parse_pgbench_reads_the_rate_without_connection_time():
    assert parse_pgbench(PGBENCH_OK) == pytest.approx(476.123456)


@pytest.mark.parametrize("output", [
    pytest.param(PGBENCH_OK + "pgbench: error: client 0 script 0 aborted in command 1 query 0\n", id="aborted"),
    pytest.param(PGBENCH_OK.replace("failed transactions: 0 (0.000%)", "failed transactions: 3 (0.750%)"),
                 id="failed-transactions"),
    pytest.param("pgbench: error: connection to server failed\n", id="no-rate"),
])
def test_parse_pgbench_refuses_a_run_that_did_not_do_every_job(output):
    with pytest.raises(BenchError, match="pgbench"):
        parse_pgbench(output)


# --- verdicts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "target", "at_most", "passed"), [
    pytest.param(0.03, 0.05, True, True, id="under-a-ceiling"),
    pytest.param(0.05, 0.05, True, True, id="on-a-ceiling"),
    pytest.param(0.06, 0.05, True, False, id="over-a-ceiling"),
    pytest.param(0.7, 0.6, False, True, id="over-a-floor"),
    pytest.param(0.6, 0.6, False, True, id="on-a-floor"),
    pytest.param(0.59, 0.6, False, False, id="under-a-floor"),
])
def test_verdict(value, target, at_most, passed):
    verdict = Verdict("ratio", value, target, at_most=at_most)
    assert verdict.passed is passed
    assert verdict.line().rstrip().endswith("PASS" if passed else "MISS")


# --- fake compute effects -------------------------------------------------------------------------


def test_duplicate_effects_counts_effect_calls_per_target():
    calls = [("prepare_revision", "rev_a"), ("prepare_revision", "rev_a"), ("activate_revision", "rev_a"),
             ("activate_revision", "rev_a"), ("retire_revision", "rev_b"), ("get_gateway_endpoint", "rev_a"),
             ("get_gateway_endpoint", "rev_a"), ("runtime_credentials_status", "agt_a"),
             ("runtime_credentials_status", "agt_a")]

    found = duplicate_effects(calls, allowed={("prepare_revision", "rev_a"): 2})

    assert found == {("activate_revision", "rev_a"): 2}


def test_duplicate_effects_allows_nothing_extra_by_default():
    assert duplicate_effects([("prepare_revision", "rev_a")] * 2) == {("prepare_revision", "rev_a"): 2}
    assert duplicate_effects([("prepare_revision", "rev_a"), ("prepare_revision", "rev_b")]) == {}


# --- transitions ----------------------------------------------------------------------------------


def claim(key: str, seconds: float, attempt: int = 1) -> Transition:
    return Transition(key, "queued", "claimed", at(seconds), attempt)


def test_first_claim_after_skips_other_keys_other_changes_and_earlier_claims():
    transitions = [
        Transition("k1", None, "queued", at(0.0), 0),
        claim("k2", 0.1),
        claim("k1", 0.2),
        Transition("k1", "claimed", "succeeded", at(0.3), 1),
        claim("k1", 5.0, attempt=2),
    ]

    assert first_claim_after(transitions, "k1", epoch(0.0)).at == at(0.2)
    assert first_claim_after(transitions, "k1", epoch(1.0)).at == at(5.0)
    assert first_claim_after(transitions, "k3", epoch(0.0)) is None


def test_wakeup_samples_measure_commit_to_claim():
    samples = wakeup_samples({"k1": epoch(1.0), "k2": epoch(2.0)}, [claim("k1", 1.025), claim("k2", 2.5)])

    assert [round(s.delay_ms, 3) for s in samples] == [25.0, 500.0]


def test_wakeup_samples_refuse_work_that_was_never_claimed():
    with pytest.raises(BenchError, match="never claimed"):
        wakeup_samples({"k1": epoch(1.0)}, [claim("k2", 1.1)])


WORKER_LOG = "\n".join([
    "[2026-11-30 12:00:00,990: INFO/MainProcess] Task provisioning.sweep[5c1e2f3a-0b7d-4d2e] received",
    "[2026-11-30 12:00:01,004: INFO/MainProcess] Task provisioning.run_work[0a1b2c3d-4e5f-6a7b] received",
    "[2026-11-30 12:00:01,150: INFO/ForkPoolWorker-1] Task provisioning.run_work[0a1b2c3d-4e5f-6a7b] succeeded "
    "in 0.14s: None",
    "[2026-11-30 12:00:02,512: INFO/MainProcess] Task provisioning.run_work[9f8e7d6c-5b4a-3c2d] received",
]) + "\n"


def test_received_times_reads_only_run_work_receipts():
    assert received_times(WORKER_LOG) == [pytest.approx(epoch(1.004)), pytest.approx(epoch(2.512))]


@pytest.mark.parametrize(("committed", "claimed", "expected"), [
    pytest.param(1.000, 1.020, 4.0, id="first-receipt-inside"),
    pytest.param(2.500, 2.530, 12.0, id="second-receipt"),
    pytest.param(3.000, 3.020, None, id="no-receipt-in-window"),
])
def test_broker_hop_is_commit_to_the_receipt_before_the_claim(committed, claimed, expected):
    sample = Sample("k", epoch(committed), epoch(claimed), 1)
    hop = broker_hop_ms(sample, received_times(WORKER_LOG))
    assert hop == (None if expected is None else pytest.approx(expected, abs=0.01))


def test_recovery_splits_the_time_after_the_kill():
    transitions = [
        claim("k", 0.0),
        Transition("k", "claimed", "queued", at(13.5), 1, available_at=at(14.0), old_lease_expires_at=at(12.5),
                   code="LEASE_EXPIRED"),
        claim("k", 15.0, attempt=2),
        Transition("k", "claimed", "succeeded", at(15.2), 2),
    ]

    recovery = recovery_of("k", epoch(10.0), transitions)

    assert recovery.seconds == pytest.approx(5.0)
    assert recovery.parts() == pytest.approx((2.5, 1.0, 0.5, 1.0))
    assert recovery.reclaim_attempt == 2


def test_recovery_needs_a_requeue_after_the_kill():
    with pytest.raises(BenchError, match="not requeued"):
        recovery_of("k", epoch(10.0), [claim("k", 0.0), Transition("k", "claimed", "succeeded", at(11.0), 1)])


def test_activation_parts_add_up():
    activation = Activation(accepted=100.0, spawned=100.4, ready=121.0, active=123.5)

    assert activation.seconds == pytest.approx(23.5)
    assert activation.parts() == pytest.approx((0.4, 20.6, 2.5))


# --- configuration guards -------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "number"), [
    pytest.param("redis://127.0.0.1:6379/14", 14, id="own-db"),
    pytest.param("redis://127.0.0.1:56379/1", 1, id="other-port"),
])
def test_redis_db_number(url, number):
    assert redis_db_number(url) == number


@pytest.mark.parametrize("url", [
    pytest.param("redis://127.0.0.1:6379/0", id="db-0-is-shared"),
    pytest.param("redis://127.0.0.1:6379", id="no-db"),
    pytest.param("redis://10.0.0.5:6379/14", id="not-loopback"),
    pytest.param("redis://127.0.0.1:6379/16", id="no-such-db"),
])
def test_redis_db_number_refuses(url):
    with pytest.raises(BenchError, match="own db"):
        redis_db_number(url)


def test_bench_database_url_defaults_to_a_bench_database(monkeypatch):
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert bench_database_url("occ_queue_bench") == "postgres://postgres@127.0.0.1:5432/occ_queue_bench"


@pytest.mark.parametrize("url", [
    pytest.param("postgres://postgres@127.0.0.1:5432/occ", id="not-a-bench-name"),
    pytest.param("sqlite:///tmp/bench.sqlite3", id="not-postgres"),
])
def test_bench_database_url_refuses_a_database_it_must_not_drop(monkeypatch, url):
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(BenchError):
        bench_database_url("occ_queue_bench")


# --- queue_claim rounds and scripts ---------------------------------------------------------------


def test_rotated_moves_the_first_arm_each_round():
    arms = ("a", "b", "c")
    assert [rotated(arms, n) for n in range(4)] == [
        ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_arm_rates_pool_jobs_over_time():
    rates = ArmRates()
    rates.add(100, 1.0)
    rates.add(100, 3.0)
    assert rates.rounds == [100.0, pytest.approx(33.333, rel=1e-3)]
    assert rates.pooled == pytest.approx(50.0)


def test_one_line_joins_a_statement_for_pgbench():
    assert one_line("UPDATE t\n   SET a = 1\n WHERE b = ':key';\n") == "UPDATE t SET a = 1 WHERE b = ':key';"


def test_pgbench_scripts_claim_then_complete_with_the_claims_key_and_token(tmp_path):
    scripts = pgbench_scripts(tmp_path)

    claim_line, complete_line = scripts["pgbench"].read_text().splitlines()
    assert "FOR UPDATE SKIP LOCKED" in claim_line
    assert claim_line.endswith("RETURNING idempotency_key AS key, claim_token AS token \\gset")
    assert "%(" not in claim_line
    assert "idempotency_key = ':key' AND claim_token = ':token'" in complete_line
    assert "lease_expires_at > statement_timestamp()" in complete_line
    # The ceiling has no resource exclusion.
    assert "NOT EXISTS" not in scripts["pgbench"].read_text()
