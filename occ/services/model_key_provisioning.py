"""Create the model Secret, then admit: provisioning with a model API key typed now.

The key must become a Secret before the request can refer to it, and the two writes cannot
share a transaction: the Secret's value goes to the SecretDriver (an outside write) and the
admission may check Slack for seconds. So each is its own audited service call, and what
makes a retry safe is the Secret's name: it is derived from the requestId alone
(``model_key_secret_name``), so the next attempt of the same request finds the Secret the
first one saved (after checking the same actor made it in this Namespace) and reuses it
instead of saving a second copy. A refused admission leaves that Secret listed, where its
owner can see and delete it; the console used to carry its id between requests in a hidden
field instead.
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
from occ.selectors.secrets import created_by, model_key_secret_name, model_key_secret_named
from occ.services.provisioning import provision_admit
from occ.services.secrets import DUPLICATE_NAME, secret_create

KEY_REQUIRED = "Enter the model API key: no attempt of this request has saved it yet."
NOT_YOURS = ("A Secret named for this requestId exists but was not saved by you. Start a new request "
             "(a new requestId).")


def _reused(actor: Actor, secret: Secret) -> Secret:
    if not created_by(secret, actor):
        raise Conflict(NOT_YOURS)
    return secret


def model_key_secret_ensure(*, actor: Actor, namespace_id: str, request_id: str, value: str | None) -> Secret:
    """The Secret holding ``request_id``'s model key: the one an earlier attempt saved, else a
    new one saved now from ``value`` (``secret_create``: driver write, then one audited
    transaction). A concurrent attempt that saved it first is found and reused."""
    namespace = get_live_namespace(namespace_id)
    authorize(actor, Action.READ, Kind.NAMESPACE, namespace_id=namespace.id)  # before any name is looked up
    existing = model_key_secret_named(namespace_id=namespace.id, request_id=request_id)
    if existing is not None:
        return _reused(actor, existing)
    if value is None:
        raise InvalidRequest.at("/modelKey", DetailCode.REQUIRED, KEY_REQUIRED)
    name = model_key_secret_name(request_id)
    try:
        return secret_create(actor=actor, namespace_id=namespace_id, command=SecretCreate(name=name, value=value))
    except Conflict as exc:
        raced = model_key_secret_named(namespace_id=namespace_id, request_id=request_id)
        if exc.message != DUPLICATE_NAME or raced is None:
            raise
        return _reused(actor, raced)


def provision_admit_with_model_key(*, actor: Actor, namespace_id: str,
                                   command: ProvisionWithModelKey) -> tuple[AgentProvisioningWork, bool, Secret]:
    """Save the typed model key as the request's Secret (or find the one an earlier attempt
    saved), then ``provision_admit`` the request with it. Returns ``(work, created, secret)``.
    A refused admission leaves the Secret; the next attempt of the request reuses it."""
    secret = model_key_secret_ensure(actor=actor, namespace_id=namespace_id, request_id=command.request_id,
                                     value=command.model_key)
    source = SecretRef(kind="secret", namespace_id=namespace_id, id=secret.id)
    work, created = provision_admit(actor=actor, namespace_id=namespace_id, command=command.admitted(source))
    return work, created, secret
