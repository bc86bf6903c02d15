"""``GET .../permissions``: the caller's allowed actions on a Namespace, an Agent, a
Configuration or a Secret (``occ.selectors.permissions``), for clients that disable what they may not do."""

from __future__ import annotations

from django.http import JsonResponse
from ninja import Router

from occ.api.auth import ApiRequest
from occ.api.envelope import respond
from occ.api.schemas import ResponseSchema, envelope_of
from occ.selectors.permissions import agent_actions, configuration_actions, namespace_actions, secret_actions

router = Router(tags=["permissions"])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class PermissionsOut(ResponseSchema):
    actions: dict[str, bool]


def _respond(actions: dict[str, bool]) -> JsonResponse:
    return respond({"actions": {_camel(name): value for name, value in actions.items()}})


@router.get("/namespaces/{namespace_id}/permissions",
            response={200: envelope_of(PermissionsOut, "NamespacePermissionsEnvelope")})
def get_namespace_permissions(request: ApiRequest, namespace_id: str) -> JsonResponse:
    """``read``, ``delete``, ``createAgent``, ``createConfiguration``, ``createSecret``,
    ``createPreset``, ``manageAccess``: whether the caller may, decided by the engine that authorizes them."""
    return _respond(namespace_actions(actor=request.auth, namespace_id=namespace_id))


@router.get("/namespaces/{namespace_id}/agents/{agent_id}/permissions",
            response={200: envelope_of(PermissionsOut, "AgentPermissionsEnvelope")})
def get_agent_permissions(request: ApiRequest, namespace_id: str, agent_id: str) -> JsonResponse:
    """``read``, ``update``, ``delete``, ``deploy``, ``stopStart``, ``chat``, ``administer``,
    ``readConversations``, ``decideApprovals``, ``readLogs``: whether the caller may, decided by
    the engine that authorizes them."""
    return _respond(agent_actions(actor=request.auth, namespace_id=namespace_id, agent_id=agent_id))


@router.get("/namespaces/{namespace_id}/configurations/{configuration_id}/permissions",
            response={200: envelope_of(PermissionsOut, "ConfigurationPermissionsEnvelope")})
def get_configuration_permissions(request: ApiRequest, namespace_id: str, configuration_id: str) -> JsonResponse:
    """``read``, ``update`` (PATCH, Secret bindings included), ``delete``: whether the caller
    may, decided by the engine that authorizes them."""
    return _respond(configuration_actions(actor=request.auth, namespace_id=namespace_id,
                                          configuration_id=configuration_id))


@router.get("/namespaces/{namespace_id}/secrets/{secret_id}/permissions",
            response={200: envelope_of(PermissionsOut, "SecretPermissionsEnvelope")})
def get_secret_permissions(request: ApiRequest, namespace_id: str, secret_id: str) -> JsonResponse:
    """``read`` (its metadata; a value is never read back), ``update`` (replace the value),
    ``delete``, ``use`` (bind it to a Configuration or give an Agent access to it): whether the
    caller may, decided by the engine that authorizes them."""
    return _respond(secret_actions(actor=request.auth, namespace_id=namespace_id, secret_id=secret_id))
