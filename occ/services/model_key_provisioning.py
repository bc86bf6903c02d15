"""Create the model Secret, then admit: provisioning with a model API key typed now.

The key must become a Secret before the request can refer to it, and the two writes cannot
share a transaction: the Secret's value goes to the SecretDriver (an outside write) and the
admission may check Slack for seconds. So each is its own audited service call, and what
makes a retry safe is the Secret's creation event: it names the requestId, so the next attempt
of the same request finds the Secret the same actor saved in this Namespace
(``model_key_secret_saved``) and reuses it instead of saving a second copy. The Secret itself
is named after the Agent ("helper model credential"), as people read it in the Secrets list.
A refused admission leaves that Secret listed, where its owner can see and delete it.
"""

from __future__ import annotations

from occ.commands.common import SecretRef
from occ.commands.provisioning import ProvisionWithModelKey
from occ.commands.secrets import SecretCreate
from occ.errors import Conflict, DetailCode, InvalidRequest
from occ.iam.actor import Actor
from occ.iam.permissions import Action, Kind
from occ.iam.policy import authorize
from occ.models import AgentProvisioningWork, Secret
from occ.selectors.namespaces import get_live_namespace
from occ.selectors.secrets import model_key_secret_free_name, model_key_secret_saved
from occ.services.provisioning import provision_admit
from occ.services.secrets import DUPLICATE_NAME, secret_create

KEY_REQUIRED = "Enter the model API key: no attempt of this request has saved it yet."
NAME_ATTEMPTS = 3  # another Secret took the free name meanwhile: the next free one


def model_key_secret_ensure(*, actor: Actor, namespace_id: str, request_id: str, agent_name: str,
                            value: str | None) -> Secret:
    """The Secret holding ``request_id``'s model key: the one an earlier attempt saved, else a
    new one saved now from ``value`` (``secret_create``: driver write, then one audited
    transaction naming the request) as "<agent name> model credential". A concurrent attempt
    that saved it first is found and reused."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)  # before any name is looked up
    existing = model_key_secret_saved(actor=actor, namespace_id=namespace.id, request_id=request_id)
    if existing is not None:
        return existing
    if value is None:
        raise InvalidRequest.at("/modelKey", DetailCode.REQUIRED, KEY_REQUIRED)
    attempts = NAME_ATTEMPTS
    while True:
        name = model_key_secret_free_name(namespace_id=namespace.id, agent_name=agent_name)
        try:
            return secret_create(actor=actor, namespace_id=namespace_id, command=SecretCreate(name=name, value=value),
                                 request_id=request_id)
        except Conflict as exc:
            raced = model_key_secret_saved(actor=actor, namespace_id=namespace.id, request_id=request_id)
            if raced is not None:
                return raced
            attempts -= 1
            if exc.message != DUPLICATE_NAME or not attempts:
                raise


def provision_admit_with_model_key(*, actor: Actor, namespace_id: str,
                                   command: ProvisionWithModelKey) -> tuple[AgentProvisioningWork, bool, Secret]:
    """Save the typed model key as the request's Secret (or find the one an earlier attempt
    saved), then ``provision_admit`` the request with it. Returns ``(work, created, secret)``.
    A refused admission leaves the Secret; the next attempt of the request reuses it."""
    secret = model_key_secret_ensure(actor=actor, namespace_id=namespace_id, request_id=command.request_id,
                                     agent_name=command.name, value=command.model_key)
    source = SecretRef(kind="secret", namespace_id=namespace_id, id=secret.id)
    work, created = provision_admit(actor=actor, namespace_id=namespace_id, command=command.admitted(source))
    return work, created, secret
