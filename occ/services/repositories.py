"""Repository bindings: the options an Agent may bind, and the check of a selection.

The RepositoryDriver is asked at every admission (Agent create and update, provisioning,
deploy) and again when the provisioning worker creates the Agent and deploys it: a repository
the installation no longer reaches, or a profile it no longer allows, is refused with the
binding's own pointer. A revision records the bindings and the driver that admitted them
(``RepositoryCredentials``), never a token.
"""

from __future__ import annotations

from collections.abc import Sequence

from occ.documents.repositories import RepositoryBinding, RepositoryCredentials, RepositoryDriverPin
from occ.drivers.repositories import RepositoryOption, require_repository_driver
from occ.errors import Conflict, Detail, DetailCode, InvalidRequest
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import NamespaceStatus
from occ.selectors.agents import get_agent
from occ.selectors.namespaces import get_live_namespace

BINDINGS_POINTER = "/repositoryBindings"
OPEN_FOR_AGENTS = frozenset({NamespaceStatus.PROVISIONING, NamespaceStatus.READY})


def repository_options(*, actor: Actor, namespace_id: str, agent_id: str | None = None) -> list[RepositoryOption]:
    """What an Agent of this Namespace may bind: ``agent:create`` on the Namespace, or
    ``agent:update`` on the Agent being edited. 503 when there is no driver or GitHub cannot
    be asked; 409 in a Namespace that is closing."""
    namespace = get_live_namespace(namespace_id)
    if agent_id is None:
        authorize(actor, Action.CREATE, Kind.AGENT, namespace_id=namespace.id)
    else:
        agent = get_agent(namespace, agent_id)
        authorize(actor, Action.UPDATE, Kind.AGENT, namespace_id=namespace.id, resource_id=agent.id)
    if namespace.status not in OPEN_FOR_AGENTS:
        raise Conflict(f"The Namespace is {namespace.status}; it takes no new repository bindings.",
                       code="NAMESPACE_NOT_READY")
    return require_repository_driver().list_options()


def check_repository_bindings(bindings: Sequence[RepositoryBinding], *,
                              pointer: str = BINDINGS_POINTER) -> RepositoryCredentials | None:
    """The admitted bindings with the driver that checked them (``None`` for none), or the
    400 naming each binding at fault and what to do; 503 when no driver can check them."""
    if not bindings:
        return None
    driver = require_repository_driver()
    problems = driver.check_bindings(bindings)
    if problems:
        first = problems[0]
        raise InvalidRequest(
            f"repositoryBindings[{first.index}]: {first.message}",
            details=[Detail(DetailCode.INVALID_VALUE,
                            f"{pointer}/{p.index}/{RepositoryBinding.wire_name(p.field)}") for p in problems])
    return RepositoryCredentials(driver=RepositoryDriverPin(id=driver.driver_id), bindings=list(bindings))


def stored_bindings(bindings: Sequence[RepositoryBinding]) -> list[dict[str, str]]:
    """What an Agent row stores of its bindings."""
    return [binding.document() for binding in bindings]


def bindings_audit(bindings: Sequence[RepositoryBinding]) -> list[str]:
    """The audit's view of bindings: ``owner/name:profile`` (no credential exists to leak)."""
    return [f"{binding.repository_ref}:{binding.profile}" for binding in bindings]
