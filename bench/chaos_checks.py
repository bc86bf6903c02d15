"""What the chaos soak (bench/chaos.py) checks once the fleet is quiet, read from its database,
the fake ComputeDriver's world and the workers' logs. Each check says what it expected and what
it found; the soak fails when one does not hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

SHOWN = 3  # mismatches named per check


class PlanLike(Protocol):
    index: int
    agent_id: str | None
    configuration_id: str | None
    revision_ids: list[str]
    deleted_at_end: bool
    active_before_stop: str | None
    failed: str | None
    step: int


@dataclass(frozen=True)
class Check:
    name: str
    expected: str
    found: str
    ok: bool


def _named(problems: Sequence[str]) -> str:
    shown = "; ".join(problems[:SHOWN])
    return shown + (f" (+{len(problems) - SHOWN} more)" if len(problems) > SHOWN else "")


def _count_check(name: str, expected: str, problems: Sequence[str], total: int) -> Check:
    found = f"{total - len(problems)} of {total}" + (f": {_named(problems)}" if problems else "")
    return Check(name, expected, found, not problems)


def work_checks() -> list[Check]:
    from occ.models import ControllerWork, WorkState
    from occ.models.work import TERMINAL_STATES

    states = Counter(ControllerWork.objects.values_list("state", flat=True))
    pending = sum(n for state, n in states.items() if state not in TERMINAL_STATES)
    failed = list(ControllerWork.objects.filter(state=WorkState.FAILED_PERMANENT)
                  .values_list("idempotency_key", "reason_code"))
    total = sum(states.values())
    return [
        Check("every job terminal", f"{total} of {total}", f"{total - pending} of {total}", pending == 0),
        Check("no job failed", "0", f"{len(failed)}" + (f": {_named([f'{k} {c}' for k, c in failed])}"
                                                        if failed else ""), not failed),
    ]


def plan_problems(plan: PlanLike, world: dict[str, Any]) -> list[str]:
    """What differs for one Agent that should still exist, stopped, on v3."""
    from occ.models import Agent, AgentRevision, Configuration, DesiredRuntimeState
    from occ.services.agent_lifecycle import last_active_revision

    label = f"chaos-{plan.index:05d}"
    if plan.failed is not None:
        return [f"{label}: {plan.failed}"]
    agent = Agent.objects.filter(id=plan.agent_id).first()
    if agent is None:
        return [f"{label}: the Agent is missing"]
    problems = []
    if agent.configuration_id != plan.configuration_id:
        problems.append(f"{label}: Configuration {agent.configuration_id}, not {plan.configuration_id}")
    generation = Configuration.objects.filter(id=plan.configuration_id).values_list("generation", flat=True).first()
    if generation != 2:
        problems.append(f"{label}: Configuration generation {generation}, not 2")
    revisions = list(AgentRevision.objects.filter(agent=agent).order_by("number")
                     .values_list("id", "number", "configuration_generation"))
    if [(number, gen) for _id, number, gen in revisions] != [(1, 1), (2, 1), (3, 2)]:
        problems.append(f"{label}: revisions {[(n, g) for _i, n, g in revisions]}, not v1-v3 of generations 1, 1, 2")
    elif [rid for rid, _n, _g in revisions[1:]] != plan.revision_ids:
        problems.append(f"{label}: v2 and v3 are not the revisions the deploys admitted")
    last = revisions[-1][0] if revisions else None
    if plan.active_before_stop != last:
        problems.append(f"{label}: active revision {plan.active_before_stop} before the stop, not the last admitted "
                        f"{last}")
    if agent.active_revision_id is not None:
        problems.append(f"{label}: active revision {agent.active_revision_id} after the stop, not none")
    activated = last_active_revision(agent)
    if activated is None or activated.id != last:
        problems.append(f"{label}: last activated {activated.id if activated else None}, not {last}")
    if agent.desired_runtime_state != DesiredRuntimeState.STOPPED:
        problems.append(f"{label}: desired {agent.desired_runtime_state}, not stopped")
    gateway = world["gateways"].get(agent.id) or {}
    if gateway.get("running") or gateway.get("serving") is not None or gateway.get("last_served") != last:
        problems.append(f"{label}: compute shows running={gateway.get('running')} serving={gateway.get('serving')} "
                        f"last served={gateway.get('last_served')}")
    return problems


def agent_checks(plans: Sequence[PlanLike], world: dict[str, Any]) -> list[Check]:
    from occ.models import Agent, Configuration

    kept = [plan for plan in plans if not plan.deleted_at_end]
    deleted = [plan for plan in plans if plan.deleted_at_end]
    kept_problems = [problem for plan in kept for problem in plan_problems(plan, world)]
    deleted_problems = []
    for plan in deleted:
        gateway = world["gateways"].get(plan.agent_id) or {}
        if plan.failed is not None:
            deleted_problems.append(f"chaos-{plan.index:05d}: {plan.failed}")
        elif Agent.objects.filter(id=plan.agent_id).exists() or gateway.get("running"):
            deleted_problems.append(f"chaos-{plan.index:05d}: still there (running={gateway.get('running')})")
    planned = {plan.configuration_id for plan in plans}
    extra = list(Configuration.objects.filter(namespace__name__startswith="chaos-").exclude(id__in=planned)
                 .values_list("id", flat=True))
    agents_wrong = {problem.split(":")[0] for problem in kept_problems}
    return [
        Check("Agents as expected (v3 active, stopped)", f"{len(kept)} of {len(kept)}",
              f"{len(kept) - len(agents_wrong)} of {len(kept)}"
              + (f": {_named(kept_problems)}" if kept_problems else ""), not kept_problems),
        _count_check("deleted Agents gone", f"{len(deleted)} of {len(deleted)}", deleted_problems, len(deleted)),
        Check("one Configuration per provisioning", "0 more", f"{len(extra)} more", not extra),
    ]


def effect_checks(plans: Sequence[PlanLike], world: dict[str, Any], worker_logs: Iterable[Path]) -> list[Check]:
    """Duplicate compute effects (a gateway started twice) and writes committed by a fenced
    worker (a completion's audit event twice for one resource); the fenced attempts refused."""
    from occ.models import AuditEvent

    starts = [(plan.index, (world["gateways"].get(plan.agent_id) or {}).get("starts", 0)) for plan in plans
              if plan.agent_id is not None and plan.failed is None]
    twice = [f"chaos-{index:05d} started {n} times" for index, n in starts if n != 1]
    events = Counter((action, resource, (details or {}).get("revisionId"))
                     for action, resource, details in AuditEvent.objects.filter(action__in=FENCED_AUDIT_ACTIONS)
                     .values_list("action", "resource_id", "details"))
    repeated = [f"{action} {resource} x{n}" for (action, resource, _rev), n in events.items() if n > 1]
    refused = sum(path.read_text(errors="replace").count("CLAIM_LOST") for path in worker_logs)
    return [
        Check("duplicate compute effects", "0", f"{len(twice)}" + (f": {_named(twice)}" if twice else ""), not twice),
        Check("writes committed by a fenced worker", "0",
              f"{len(repeated)}" + (f": {_named(repeated)}" if repeated else ""), not repeated),
        Check("fenced attempts refused (CLAIM_LOST)", "any", str(refused), True),
    ]


# What the workers write in their fenced transactions, once per resource (and revision).
FENCED_AUDIT_ACTIONS = ("openclaw.agents.revision.activate", "openclaw.agents.stopped", "openclaw.agents.deleted",
                        "openclaw.namespaces.ready")


def print_checks(checks: Sequence[Check]) -> None:
    width = max(len(check.name) for check in checks)
    print(f"\n{'check':<{width}}  {'expected':<14} {'verdict':<7} found")
    for check in checks:
        print(f"{check.name:<{width}}  {check.expected:<14} {'PASS' if check.ok else 'FAIL':<7} {check.found}")
