"""The provisioning benchmark's pure helpers on fixed inputs (the benchmark never runs in the suite)."""

from __future__ import annotations

from datetime import datetime

import pytest

from bench.provisioning_rate import (
    BASELINE,
    E2E,
    ID_PATTERN,
    ArmRun,
    BenchError,
    Round,
    TaskSpan,
    arm_order,
    count_mismatches,
    fresh_id,
    pooled_ratio,
    proc_cpu_seconds,
    ratio_ceiling,
    remapper,
    scaled,
    table_delta,
    task_load,
    task_spans,
    unexplained_rows,
    uniform_counts,
)

AGENT = "agt_0b6c4e9a-1f2d-4c3b-9a8e-7d6f5e4c3b2a"
REVISION = "rev_1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d"


# --- row counts -----------------------------------------------------------------------------------


def test_uniform_counts_returns_the_shared_per_table_counts_without_empty_tables():
    per_agent = {"a1": {"Agent": 1, "AuditEvent": 5, "Secret": 0}, "a2": {"AuditEvent": 5, "Agent": 1}}
    assert uniform_counts(per_agent) == {"Agent": 1, "AuditEvent": 5}


def test_uniform_counts_refuses_agents_whose_rows_differ():
    per_agent = {"a1": {"Agent": 1, "AuditEvent": 5}, "a2": {"Agent": 1, "AuditEvent": 5},
                 "a3": {"Agent": 1, "AuditEvent": 6}}
    with pytest.raises(BenchError, match=r"2 Agents: Agent=1, AuditEvent=5; 1 Agents: Agent=1, AuditEvent=6"):
        uniform_counts(per_agent)


def test_uniform_counts_needs_an_agent():
    with pytest.raises(BenchError, match="no provisioned Agent"):
        uniform_counts({})


@pytest.mark.parametrize(("expected", "actual", "mismatches"), [
    pytest.param({"Agent": 30, "AuditEvent": 150}, {"AuditEvent": 150, "Agent": 30}, {}, id="equal"),
    pytest.param({"Agent": 30}, {"Agent": 29}, {"Agent": (30, 29)}, id="fewer"),
    pytest.param({"Agent": 30}, {"Agent": 30, "Role": 1}, {"Role": (0, 1)}, id="an-extra-table"),
    pytest.param({"Agent": 30, "Principal": 30}, {"Agent": 30}, {"Principal": (30, 0)}, id="a-missing-table"),
])
def test_count_mismatches_names_every_table_that_differs(expected, actual, mismatches):
    assert count_mismatches(expected, actual) == mismatches


def test_table_delta_and_scaled_compare_a_run_with_per_agent_counts():
    before = {"Agent": 4, "AuditEvent": 24, "Role": 1, "Namespace": 1}
    after = {"Agent": 34, "AuditEvent": 174, "Role": 1, "Namespace": 1}
    assert table_delta(before, after) == {"Agent": 30, "AuditEvent": 150}
    assert count_mismatches(scaled({"Agent": 1, "AuditEvent": 5}, 30), table_delta(before, after)) == {}


PER_AGENT = {"Agent": 1, "AuditEvent": 5, "ControllerWork": 2}


@pytest.mark.parametrize(("delta", "unexplained"), [
    pytest.param({"Agent": 30, "AuditEvent": 180, "ControllerWork": 60}, {}, id="exactly-explained"),
    pytest.param({"Agent": 30, "AuditEvent": 180, "ControllerWork": 60, "Role": 1}, {}, id="first-role"),
    pytest.param({"Agent": 30, "AuditEvent": 180, "ControllerWork": 60, "Role": 2}, {"Role": (0, 2)},
                 id="more-roles"),
    pytest.param({"Agent": 30, "AuditEvent": 181, "ControllerWork": 60}, {"AuditEvent": (180, 181)},
                 id="an-extra-audit-event"),
    pytest.param({"Agent": 30, "AuditEvent": 180, "ControllerWork": 60, "Secret": 30}, {"Secret": (0, 30)},
                 id="a-table-the-baseline-does-not-copy"),
])
def test_unexplained_rows_allows_only_the_revision_audits_and_the_first_role(delta, unexplained):
    assert unexplained_rows(delta, PER_AGENT, 30, later_audit_events=30) == unexplained


# --- copying the template rows ---------------------------------------------------------------------


def test_remapper_replaces_ids_inside_strings_json_and_keys_and_leaves_the_rest():
    new_agent, new_revision = fresh_id(AGENT), fresh_id(REVISION)
    remap = remapper({AGENT: new_agent, REVISION: new_revision, "e2e-0001-abc": "base-0001-def"})
    value = {"agentId": AGENT, "key": f"agent:{AGENT}:provisioned", AGENT: [REVISION, 3, None, True],
             "name": "agent e2e-0001-abc", "namespaceId": "ns_other"}
    assert remap(value) == {"agentId": new_agent, "key": f"agent:{new_agent}:provisioned",
                            new_agent: [new_revision, 3, None, True], "name": "agent base-0001-def",
                            "namespaceId": "ns_other"}
    assert remap(7) == 7
    assert remap(None) is None


def test_remapper_prefers_the_longest_match():
    remap = remapper({"ab": "X", "abc": "Y"})
    assert remap("abc ab") == "Y X"
    assert remapper({})("unchanged") == "unchanged"


def test_fresh_id_keeps_the_prefix_and_changes_the_uuid():
    new = fresh_id(AGENT)
    assert new.startswith("agt_")
    assert new != AGENT
    assert ID_PATTERN.fullmatch(new)


# --- rates and ratios ------------------------------------------------------------------------------


def round_of(number: int, e2e: tuple[int, float], base: tuple[int, float]) -> Round:
    r = Round(number, arm_order(number))
    r.runs[E2E] = ArmRun(E2E, *e2e)
    r.runs[BASELINE] = ArmRun(BASELINE, *base)
    return r


def test_pooled_ratio_divides_all_agents_by_all_seconds_per_arm():
    rounds = [round_of(1, (30, 3.0), (30, 0.3)), round_of(2, (30, 5.0), (30, 0.2))]
    assert [r.ratio for r in rounds] == pytest.approx([0.1, 0.04])
    # end to end 60 / 8 s = 7.5 per s; baseline 60 / 0.5 s = 120 per s
    assert pooled_ratio(rounds) == pytest.approx(7.5 / 120)


def test_arm_order_alternates_which_arm_goes_first():
    assert [arm_order(n) for n in (1, 2, 3)] == [(E2E, BASELINE), (BASELINE, E2E), (E2E, BASELINE)]


# --- the workers' task lines ------------------------------------------------------------------------

WORKER_LOG = """\
[2026-11-30 06:50:27,355: INFO/MainProcess] bench-prov-1@localhost ready.
[2026-11-30 06:50:27,360: INFO/MainProcess] Task provisioning.run_work[4b11d2e8-03c5-4d28-a9cc-3beb87bf8e4c] received
[2026-11-30 06:50:27,468: INFO/ForkPoolWorker-1] worker.completed key=agent:agt_1:provisioned namespaceId=ns_1 \
attempt=1 outcome=complete code=PROVISIONING_SUCCEEDED durationMs=100
[2026-11-30 06:50:27,469: INFO/ForkPoolWorker-1] Task provisioning.run_work[4b11d2e8-03c5-4d28-a9cc-3beb87bf8e4c] \
succeeded in 0.1s: None
[2026-11-30 06:50:27,520: INFO/ForkPoolWorker-1] Task provisioning.sweep[f696c939-04f0-437d-badc-331cbd3b0309] \
succeeded in 0.04s: None
[2026-11-30 06:50:28,000: INFO/ForkPoolWorker-1] Task provisioning.run_work[edd6c905-a3af-4ee5-8988-b9687a8e8982] \
succeeded in 2.5e-02s: None
"""


def local(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_task_spans_read_each_finished_task_with_its_start_and_end():
    spans = task_spans(WORKER_LOG)
    assert [span.task for span in spans] == ["run_work", "sweep", "run_work"]
    first = spans[0]
    assert first.end == pytest.approx(local("2026-11-30 06:50:27,469"))
    assert first.end - first.start == pytest.approx(0.1, abs=1e-6)
    assert spans[2].end - spans[2].start == pytest.approx(0.025, abs=1e-6)


def test_a_run_work_task_without_a_completed_claim_claimed_nothing():
    spans = task_spans(WORKER_LOG)
    assert [span.claimed for span in spans] == [True, True, False]
    assert task_load(spans, 0.0, spans[-1].end + 1).claimed_nothing == 1


def test_task_load_counts_only_the_time_inside_the_window():
    spans = [TaskSpan("run_work", 0.0, 1.0), TaskSpan("run_work", 1.5, 2.5), TaskSpan("sweep", 2.0, 2.2),
             TaskSpan("run_work", 5.0, 6.0)]
    load = task_load(spans, 0.5, 2.0)
    assert load.run_work == 1  # only the first one ended inside the window
    assert load.run_work_seconds == pytest.approx(0.5 + 0.5)
    assert load.other_seconds == 0
    assert load.busy(1.5, 2) == pytest.approx(1.0 / 3.0)
    assert task_load(spans, 2.0, 3.0).other_seconds == pytest.approx(0.2)


# --- the ceiling (``--bound``) --------------------------------------------------------------------


def test_proc_cpu_seconds_adds_user_and_system_time_after_the_command_name():
    # A command name with a space and a ")" of its own; utime 250 and stime 50 ticks.
    stat = ("4242 (postgres: a) b) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 1 0 "
            "123 45678 90 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0")
    assert proc_cpu_seconds(stat, 100) == pytest.approx(3.0)


def test_ratio_ceiling_is_the_cpus_times_the_baseline_over_the_services_cpu():
    assert ratio_ceiling(2, 6.0, 40.0) == pytest.approx(0.3)
    assert ratio_ceiling(4, 6.0, 40.0) == pytest.approx(0.6)
