"""Namespace commands."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from occ.commands.base import Command, problem
from occ.commands.common import Name
from occ.errors import DetailCode

KUBERNETES_NAME = re.compile(r"^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$")


def _check_existing_namespace(value: str) -> str:
    if len(value) > 63 or not KUBERNETES_NAME.fullmatch(value):
        raise problem(DetailCode.INVALID_FORMAT, "existingNamespace must be a Kubernetes namespace name.")
    return value


class NamespaceCreate(Command):
    name: Name
    # Kubernetes only: adopt an operator-owned namespace instead of creating one.
    existing_namespace: Annotated[str, AfterValidator(_check_existing_namespace)] | None = None
