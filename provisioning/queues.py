"""The Celery queues, and which queue each task goes to.

Every task is routed here rather than with the ``queue=`` task attribute (deprecated in
Celery 5.7, ignored from 6.0). A test checks that every registered task has a route to a
queue of this enum.
"""

from __future__ import annotations

from enum import StrEnum


class Queue(StrEnum):
    # Nudges to claim one controller work row ("work key K is due").
    WORK = "work"
    # Periodic passes from beat: stale-lease recovery and due-work nudges.
    MAINTENANCE = "maintenance"


TASK_QUEUES: dict[str, Queue] = {
    "provisioning.run_work": Queue.WORK,
    "provisioning.sweep": Queue.MAINTENANCE,
    "provisioning.maintain_compute": Queue.MAINTENANCE,
    "provisioning.collect_usage": Queue.MAINTENANCE,
    "provisioning.send_budget_webhook": Queue.MAINTENANCE,
    "provisioning.refresh_session_index": Queue.MAINTENANCE,
    "provisioning.refresh_agent_sessions": Queue.MAINTENANCE,
}
