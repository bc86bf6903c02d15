"""Secrets: metadata and audit in OCC's tables, values only in the SecretDriver.

Values are validated, handed to the driver and forgotten: they never reach a Secret row,
an audit event, a work row, an error message or a log line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from occ.commands.secrets import SecretCreate, SecretValueUpdate, secret_value_problem
from occ.drivers.secrets import SecretDriver, SecretValueMissing, get_secret_driver
from occ.errors import Conflict, UnknownOutcome, fit_message
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.ids import IdPrefix, new_id
from occ.models import (
    AccessBinding,
    Agent,
    AgentRevision,
    ControllerWork,
    Namespace,
    NamespaceStatus,
    Secret,
    SecretBinding,
    WorkState,
)
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.secrets import SECRET_CREATE_ACTION, get_user_secret, user_secrets
from occ.services.audit import audit_record

logger = logging.getLogger(__name__)

T = TypeVar("T")

RUNTIME_PURPOSE = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
DUPLICATE_NAME = "A Secret with this name already exists in the Namespace."


def _runtime_value(value: str) -> str:
    """A generated runtime credential obeys the same rules as any Secret value."""
    if secret_value_problem(value) is not None:
        raise ValueError("a runtime credential must be a valid Secret value")
    return value


@contextmanager
def _write_transaction(on_failure: Callable[[], None] | None = None) -> Iterator[None]:
    """One transaction. If it fails, run ``on_failure`` (the compensation); if only its
    commit failed, the outcome is unknown: compensate nothing and say so."""
    body_done = False
    try:
        with transaction.atomic():
            yield
            body_done = True
    except Exception as exc:
        if body_done:
            raise UnknownOutcome() from exc
        if on_failure is not None:
            on_failure()
        raise


def _discard_value(driver_id: str, backend_name: str) -> None:
    """Remove a value nothing refers to any more. Never raises: a leftover is logged for the operator."""
    try:
        get_secret_driver(driver_id).delete(backend_name)
    except Exception:
        logger.warning("could not remove secret backend object %s (driver %s); remove it by hand",
                       backend_name, driver_id, exc_info=True)


def _discard_value_on_commit(secret: Secret) -> None:
    driver_id, backend_name = secret.driver_id, secret.backend_name
    transaction.on_commit(lambda: _discard_value(driver_id, backend_name))


def _require_ready(namespace: Namespace) -> None:
    if namespace.status != NamespaceStatus.READY:
        raise Conflict(f"The Namespace is {namespace.status}; Secret values can be stored only once it is ready.",
                       code="NAMESPACE_NOT_READY")


def _admit_create(*, actor: Actor, namespace_id: str, name: str, lock: bool) -> Namespace:
    namespace = get_live_namespace(namespace_id, for_update=lock)
    authorize(actor, Action.CREATE, Kind.SECRET, namespace_id=namespace.id)
    _require_ready(namespace)
    if user_secrets().filter(namespace=namespace, name=name).exists():
        raise Conflict(DUPLICATE_NAME)
    return namespace


def secret_create(*, actor: Actor, namespace_id: str, command: SecretCreate, request_id: str | None = None) -> Secret:
    """Store the value through the driver, then record the metadata and audit (naming
    ``request_id``, the provisioning request a typed model key was saved for).

    Nothing denied or invalid reaches the driver: admission runs first. If the metadata
    transaction fails, the exact backend object just written is deleted again.
    """
    name = command.name
    admitted = _admit_create(actor=actor, namespace_id=namespace_id, name=name, lock=False)
    driver = get_secret_driver()
    secret_id = new_id(IdPrefix.SECRET)
    backend_name = driver.backend_name(secret_id, namespace_id=admitted.id,
                                       existing_namespace=admitted.existing_namespace)
    driver.put(backend_name, command.value)
    with _write_transaction(on_failure=lambda: _discard_value(driver.driver_id, backend_name)):
        namespace = _admit_create(actor=actor, namespace_id=namespace_id, name=name, lock=True)
        try:
            with transaction.atomic():
                secret = Secret.objects.create(id=secret_id, namespace=namespace, name=name,
                                               driver_id=driver.driver_id, backend_name=backend_name)
        except IntegrityError:
            raise Conflict(DUPLICATE_NAME) from None
        audit_record(actor=actor, action=SECRET_CREATE_ACTION, namespace_id=namespace.id,
                     resource_kind=Kind.SECRET, resource_id=secret.id,
                     details={"name": name, "driverId": driver.driver_id,
                              **({"requestId": request_id} if request_id is not None else {})})
    return secret


def secret_update_value(*, actor: Actor, namespace_id: str, secret_id: str, command: SecretValueUpdate) -> Secret:
    """Replace the value in place: same id, same ref, same backend object.

    The driver write is the last step of the transaction, so a failed audit leaves the old
    value untouched.
    """
    with _write_transaction():
        namespace = get_live_namespace(namespace_id)
        secret = get_user_secret(namespace, secret_id, for_update=True)
        authorize(actor, Action.UPDATE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
        _require_ready(namespace)
        secret.save(update_fields=["updated_at"])
        audit_record(actor=actor, action="openclaw.secrets.update", namespace_id=namespace.id,
                     resource_kind=Kind.SECRET, resource_id=secret.id, details={"name": secret.name})
        get_secret_driver(secret.driver_id).put(secret.backend_name, command.value)
    return secret


def _references(secret: Secret) -> dict[str, list[str]]:
    configurations = (SecretBinding.objects.filter(secret=secret).order_by("configuration_id")
                      .values_list("configuration_id", flat=True).distinct())
    agents = Agent.objects.filter(harness_secret=secret).order_by("id").values_list("id", flat=True)
    found = {"configurations": list(configurations[:3]), "agents": list(agents[:3])}
    return {kind: ids for kind, ids in found.items() if ids}


def _referenced_message(references: dict[str, list[str]]) -> str:
    parts = [f"{kind} ({', '.join(ids)})" for kind, ids in references.items()]
    message = "The Secret is still used by " + " and ".join(parts) + ". Remove those references first."
    return fit_message(message)


def _agents_delivering(secret: Secret) -> list[Agent]:
    """Agents whose active revision delivers ``secret`` (its harnessAuth or a secret binding
    of its snapshot), even after their current configuration stopped referencing it: the
    serving gateway reads the value again whenever it restarts."""
    active = (Agent.objects.filter(namespace_id=secret.namespace_id, active_revision__isnull=False)
              .select_related("active_revision").only("id", "name", "active_revision__snapshot").order_by("id"))
    return [agent for agent in active
            if agent.active_revision is not None and secret.id in agent.active_revision.spec.delivered_secret_ids]


def _agents_about_to_deliver(secret: Secret) -> list[Agent]:
    """Agents with a revision still being deployed (its work queued or claimed) that delivers
    ``secret``: deleting it now would fail that deployment with SECRET_UNAVAILABLE."""
    pending = ControllerWork.objects.filter(namespace_id=secret.namespace_id, revision_id__isnull=False,
                                            state__in=[WorkState.QUEUED, WorkState.CLAIMED])
    revisions = (AgentRevision.objects.filter(id__in=pending.values("revision_id"))
                 .select_related("agent").only("snapshot", "agent__id", "agent__name").order_by("agent_id"))
    agents = {revision.agent_id: revision.agent for revision in revisions
              if secret.id in revision.spec.delivered_secret_ids}
    return list(agents.values())


def _delivered_message(agents: list[Agent]) -> str:
    named = ", ".join(f"{agent.name} ({agent.id})" for agent in agents[:3])
    if len(agents) == 1:
        message = (f"The Secret is delivered by the active revision of Agent {named}. Stop the Agent or "
                   "deploy a revision that no longer uses the Secret, then delete it.")
    else:
        message = (f"The Secret is delivered by the active revisions of Agents {named}. Stop those Agents "
                   "or deploy revisions that no longer use the Secret, then delete it.")
    return fit_message(message)


def _deploying_message(agents: list[Agent]) -> str:
    named = ", ".join(f"{agent.name} ({agent.id})" for agent in agents[:3])
    subject = f"a revision of Agent {named} that is" if len(agents) == 1 else f"revisions of Agents {named} that are"
    message = f"The Secret is delivered by {subject} being deployed. Delete it once the deployment has finished."
    return fit_message(message)


def _remove_bindings_to(secret_ids: list[str]) -> list[str]:
    bindings = AccessBinding.objects.filter(resource_kind=Kind.SECRET, resource_id__in=secret_ids)
    removed = sorted(bindings.values_list("id", flat=True))
    AccessBinding.objects.filter(id__in=removed).delete()
    return removed


def secret_delete(*, actor: Actor, namespace_id: str, secret_id: str) -> None:
    """Refused while a Configuration or an Agent uses the Secret, or an Agent's active
    revision delivers it. Bindings targeting it go in the same transaction; the value is
    removed from the driver once that commits."""
    with _write_transaction():
        namespace = get_live_namespace(namespace_id)
        secret = get_user_secret(namespace, secret_id, for_update=True)
        authorize(actor, Action.DELETE, Kind.SECRET, namespace_id=namespace.id, resource_id=secret.id)
        references = _references(secret)
        if references:
            raise Conflict(_referenced_message(references))
        if delivering := _agents_delivering(secret):
            raise Conflict(_delivered_message(delivering))
        if deploying := _agents_about_to_deliver(secret):
            raise Conflict(_deploying_message(deploying))
        removed = _remove_bindings_to([secret.id])
        try:
            with transaction.atomic():
                secret.delete()
        except ProtectedError:  # a reference appeared after the check above
            raise Conflict("The Secret is still in use. Remove its references first.") from None
        audit_record(actor=actor, action="openclaw.secrets.delete", namespace_id=namespace.id,
                     resource_kind=Kind.SECRET, resource_id=secret_id,
                     details={"name": secret.name, "removedAccessBindings": removed})
        _discard_value_on_commit(secret)


def secret_value_use(*, secret: Secret, consumer: Callable[[str], T]) -> T:
    """Hand the value to ``consumer`` for the duration of the call (delivery to a runtime).

    Callers authorize first: the worker re-checks ``secret:operate`` for the actor and the
    Agent's service principal before it delivers anything.
    """
    return get_secret_driver(secret.driver_id).with_value(secret.backend_name, consumer)


# --- driver-owned runtime credentials --------------------------------------------------------


def _value_exists(driver: SecretDriver, backend_name: str) -> bool:
    try:
        return driver.with_value(backend_name, lambda _value: True)
    except SecretValueMissing:
        return False


def runtime_credential_ensure(*, agent: Agent, purpose: str, value_factory: Callable[[], str],
                              actor: Actor | None = None) -> Secret:
    """The Agent's credential for ``purpose`` (e.g. its gateway password), created once.

    Idempotent: an existing credential is returned as it is (its value is stored again only
    if the driver lost it). ``value_factory`` is called only when a value is needed.
    """
    if not RUNTIME_PURPOSE.fullmatch(purpose):
        raise ValueError("purpose must be a short lowercase slug")
    existing = Secret.objects.filter(owner_agent=agent, purpose=purpose).first()
    if existing is not None:
        driver = get_secret_driver(existing.driver_id)
        if not _value_exists(driver, existing.backend_name):
            driver.put(existing.backend_name, _runtime_value(value_factory()))
        return existing
    value = _runtime_value(value_factory())
    driver = get_secret_driver()
    secret_id = new_id(IdPrefix.SECRET)
    namespace = Namespace.objects.only("id", "existing_namespace").get(id=agent.namespace_id)
    backend_name = driver.backend_name(secret_id, namespace_id=namespace.id,
                                       existing_namespace=namespace.existing_namespace)
    driver.put(backend_name, value)
    try:
        with _write_transaction(on_failure=lambda: _discard_value(driver.driver_id, backend_name)):
            secret = Secret.objects.create(
                id=secret_id, namespace_id=agent.namespace_id, name=f"runtime:{purpose}",
                driver_id=driver.driver_id, backend_name=backend_name, owner_agent=agent, purpose=purpose,
            )
            audit_record(actor=actor, source="system", action="openclaw.agents.runtime_credentials.create",
                         namespace_id=agent.namespace_id, resource_kind=Kind.AGENT, resource_id=agent.id,
                         details={"purpose": purpose, "secretId": secret.id})
    except IntegrityError:
        # A concurrent ensure stored the credential first; ours was discarded above.
        winner = Secret.objects.filter(owner_agent=agent, purpose=purpose).first()
        if winner is None:
            raise
        return winner
    return secret


def runtime_credentials_delete(*, agent: Agent, actor: Actor | None = None) -> list[str]:
    """Remove every runtime credential of the Agent (with its Agent's teardown). Returns
    the removed Secret ids; values leave the driver once the transaction commits."""
    with _write_transaction():
        secrets = list(Secret.objects.select_for_update().filter(owner_agent=agent).order_by("id"))
        if not secrets:
            return []
        secret_ids = [secret.id for secret in secrets]
        removed = _remove_bindings_to(secret_ids)
        Secret.objects.filter(id__in=secret_ids).delete()
        audit_record(actor=actor, source="system", action="openclaw.agents.runtime_credentials.delete",
                     namespace_id=agent.namespace_id, resource_kind=Kind.AGENT, resource_id=agent.id,
                     details={"secretIds": secret_ids, "removedAccessBindings": removed})
        for secret in secrets:
            _discard_value_on_commit(secret)
    return secret_ids
