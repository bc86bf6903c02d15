"""``provision_admit_with_model_key``: create the model Secret, then admit, without a saga in
hidden fields. The Secret is named after the Agent; its creation event names the requestId, so
a retry by the same actor finds and reuses it."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from occ.commands.base import parse
from occ.commands.provisioning import ProvisionWithModelKey
from occ.commands.secrets import SecretCreate
from occ.errors import InvalidRequest, NotFound, OccError
from occ.iam.actor import Actor, Source
from occ.models import AgentProvisioningWork, AuditEvent, Principal, Secret
from occ.selectors.secrets import model_key_secret_find, secret_list
from occ.services import model_key_provisioning
from occ.services.model_key_provisioning import model_key_secret_ensure, provision_admit_with_model_key
from occ.services.secrets import secret_create

KEY = "sk-canary-model-key-5f2c9e"
REQUEST_ID = "req_model-key-1"
MISSING = "sec_00000000-0000-4000-8000-000000000009"


@pytest.fixture
def person(bootstrap) -> Actor:
    """Another principal than ``admin_actor`` (the installation key's): the admin person."""
    return Actor(principal=Principal.objects.get(user__username="admin"), source=Source.CONSOLE)


def body(namespace_id: str, *, key: str | None = KEY, bound: str | None = None, **changes: Any) -> dict[str, Any]:
    bindings = {} if bound is None else {"TEAM_TOKEN": {
        "source": {"kind": "secret", "namespaceId": namespace_id, "id": bound}, "delivery": {"type": "env"}}}
    return {"requestId": REQUEST_ID, "name": "helper",
            "configuration": {"kind": "agent", "values": {
                "agents": {"defaults": {"model": {"primary": "openai/gpt-6-astra"}}}}, "secretBindings": bindings},
            "initialWorkspaceFiles": {"SOUL.md": "Be kind.\n"},
            **({"modelKey": key} if key is not None else {}), **changes}


def admit(actor: Actor, namespace_id: str, **kwargs: Any):
    return provision_admit_with_model_key(actor=actor, namespace_id=namespace_id,
                                          command=parse(ProvisionWithModelKey, body(namespace_id, **kwargs)))


def test_the_key_is_saved_as_the_requests_secret_then_admitted(admin_actor, ready_namespace):
    work, created, secret = admit(admin_actor, ready_namespace.id)
    assert created
    assert secret.name == "helper model credential", "named after the Agent, not the request"
    assert work.plan["harnessAuth"] == {"method": "api_key", "source": {
        "kind": "secret", "namespaceId": ready_namespace.id, "id": secret.id}}
    assert work.plan["initialWorkspaceFiles"] == {"SOUL.md": "Be kind.\n"}
    created = AuditEvent.objects.get(action="openclaw.secrets.create", resource_id=secret.id)
    assert created.details["requestId"] == REQUEST_ID
    assert AuditEvent.objects.filter(action="openclaw.agents.provision").count() == 1


def test_a_retry_after_a_refused_admission_reuses_the_secret(admin_actor, ready_namespace, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(OccError):  # the bound Secret does not exist: admission refuses
        admit(admin_actor, ready_namespace.id, bound=MISSING)
    saved = Secret.objects.get()
    assert AgentProvisioningWork.objects.count() == 0
    # The refusal leaves the Secret listed, where its owner sees it (and may delete it).
    assert saved in secret_list(actor=admin_actor, namespace_id=ready_namespace.id)
    assert model_key_secret_find(actor=admin_actor, namespace_id=ready_namespace.id, request_id=REQUEST_ID) == saved

    work, created, reused = admit(admin_actor, ready_namespace.id, key=None)  # the retry: no key typed again
    assert (reused, created) == (saved, True)
    assert Secret.objects.count() == 1
    assert AuditEvent.objects.filter(action="openclaw.secrets.create").count() == 1
    assert work.plan["harnessAuth"]["source"]["id"] == saved.id

    # The same request again (the answer was lost): the same work, still one Secret.
    again, created, _ = admit(admin_actor, ready_namespace.id, key=None)
    assert (again.pk, created, Secret.objects.count()) == (work.pk, False, 1)

    rows = json.dumps(list(AuditEvent.objects.values("details", "resource_id", "action")))
    assert KEY not in rows
    assert KEY not in caplog.text
    assert KEY not in json.dumps(work.plan)


def test_without_a_key_and_nothing_saved_the_key_is_asked_for(admin_actor, ready_namespace):
    with pytest.raises(InvalidRequest) as refused:
        admit(admin_actor, ready_namespace.id, key=None)
    assert [d.path for d in refused.value.details] == ["/modelKey"]
    assert Secret.objects.count() == 0


def test_another_actors_secret_for_that_request_is_never_used(admin_actor, person, ready_namespace):
    theirs = model_key_secret_ensure(actor=admin_actor, namespace_id=ready_namespace.id, request_id=REQUEST_ID,
                                     agent_name="helper", value="their-key")
    assert model_key_secret_find(actor=person, namespace_id=ready_namespace.id, request_id=REQUEST_ID) is None
    mine = model_key_secret_ensure(actor=person, namespace_id=ready_namespace.id, request_id=REQUEST_ID,
                                   agent_name="helper", value=KEY)
    assert mine != theirs
    assert (theirs.name, mine.name) == ("helper model credential", "helper model credential (2)")


def test_a_name_taken_by_another_secret_gets_the_next_copy_number(admin_actor, ready_namespace):
    secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                  command=SecretCreate(name="helper model credential", value="kept"))
    secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                  command=SecretCreate(name="helper model credential (2)", value="kept"))
    _, _, secret = admit(admin_actor, ready_namespace.id)
    assert secret.name == "helper model credential (3)"


def test_an_unknown_namespace_is_refused_before_any_write(admin_actor, bootstrap):
    with pytest.raises(NotFound):
        model_key_secret_ensure(actor=admin_actor, namespace_id="ns_00000000-0000-4000-8000-000000000001",
                                request_id=REQUEST_ID, agent_name="helper", value=KEY)
    assert Secret.objects.count() == 0


def test_a_concurrent_attempt_that_saved_first_is_reused(admin_actor, ready_namespace, monkeypatch):
    """Both attempts missed the lookup and chose the same free name; the second's create hits the
    unique name and finds the first's Secret by its request."""
    first = secret_create(actor=admin_actor, namespace_id=ready_namespace.id,
                          command=SecretCreate(name="helper model credential", value=KEY), request_id=REQUEST_ID)
    real = model_key_provisioning.model_key_secret_saved
    calls: list[int] = []

    def blind_once(**kwargs: Any) -> Secret | None:
        calls.append(1)
        return None if len(calls) == 1 else real(**kwargs)

    monkeypatch.setattr(model_key_provisioning, "model_key_secret_saved", blind_once)
    monkeypatch.setattr(model_key_provisioning, "model_key_secret_free_name",
                        lambda **kwargs: "helper model credential")
    found = model_key_secret_ensure(actor=admin_actor, namespace_id=ready_namespace.id,
                                    request_id=REQUEST_ID, agent_name="helper", value=KEY)
    assert found == first
    assert Secret.objects.count() == 1


def test_a_harness_auth_is_refused_next_to_the_typed_key(ready_namespace):
    sent = {**body(ready_namespace.id), "harnessAuth": {"method": "api_key", "source": {
        "kind": "secret", "namespaceId": ready_namespace.id, "id": MISSING}}}
    with pytest.raises(InvalidRequest) as refused:
        parse(ProvisionWithModelKey, sent)
    assert [d.path for d in refused.value.details] == ["/harnessAuth"]
    assert KEY not in refused.value.message
