"""A decision on one approval an Agent's gateway waits on (the approvals inbox)."""

from __future__ import annotations

from typing import Literal

from occ.commands.base import Command


class ApprovalDecide(Command):
    decision: Literal["approve", "deny"]
