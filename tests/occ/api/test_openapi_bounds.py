"""Every bound the OpenAPI document states is the one the server enforces.

Walks ``/api/openapi.json``: for each request body, every ``maxLength``, ``minLength``,
``maxItems``, ``minItems``, ``maxProperties``, ``maximum`` and ``minimum`` on the way from its root
(through ``$ref``, ``anyOf``, array items and map values). For each, it sends a valid body with
that place set exactly at the bound, which must not be refused at that place, and just beyond
it, which must be a 400 with a detail at that place's JSON pointer. The bounds come from the
pydantic commands (``occ/commands``), so a rule changed there and not in the schema (or the
other way round) fails here. A new request body needs its valid example in ``BASES``.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from tests.factories import marked_document

UNKNOWN = "00000000-0000-4000-8000-000000000000"
BOUNDS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maximum", "minimum")
# A strong password of any length (Django's validators refuse common, numeric or repeated ones).
PASSWORD_CHARS = "Vq7#Lm2$Xp9!Rt4%Kw8&Hz3*"


def secret_ref(ns: str) -> dict[str, str]:
    return {"kind": "secret", "namespaceId": ns, "id": f"sec_{UNKNOWN}"}


def bases(ns: str) -> dict[str, dict[str, Any]]:
    """A body each request schema accepts, by component name (``NS`` in a path is the Namespace)."""
    document = marked_document({})
    return {
        "NamespaceCreate": {"name": "n"},
        "ConfigurationDocument": {"kind": "agent", "values": document},
        "ConfigurationUpdate": {"values": document},
        "SecretCreate": {"name": "n", "value": "v"},
        "SecretValueUpdate": {"value": "v"},
        "PresetCreate": {"name": "n"},
        "PresetUpdate": {"name": "n"},
        "PresetRender": {},
        "PresetFromAgent": {"name": "n"},
        "ProvisionCommand": {"requestId": "req_bounds0001", "name": "n",
                             "configuration": {"kind": "agent", "values": document},
                             "harnessAuth": {"method": "api_key", "source": secret_ref(ns)}},
        "ModelDiscovery": {"provider": "openai", "apiKey": "k"},
        "AgentChat": {"messages": [{"role": "user", "content": "hi"}]},
        "PluginDiscovery": {"accessToken": "t"},
        "PluginDetailsDiscovery": {"accessToken": "t", "pluginId": "p"},
        "AgentPluginDiscovery": {},
        "AgentPluginDetailsDiscovery": {"pluginId": "p"},
        "DirectoryLookup": {"secretId": f"sec_{UNKNOWN}", "kind": "users"},
        "AgentCreate": {"name": "n", "configurationId": f"cfg_{UNKNOWN}"},
        "AgentUpdate": {"configurationId": f"cfg_{UNKNOWN}"},
        "AgentSecretAccess": {"secretIds": [f"sec_{UNKNOWN}"]},
        "AgentShare": {"subjectId": f"sp_{UNKNOWN}", "level": "chat"},
        "BudgetSet": {"period": "day", "limit": "5"},
        "RoleCreate": {"name": "n", "permissions": [{"action": "read", "resourceKind": "agent"}]},
        "AccessBindingCreate": {},
        "ServicePrincipalCreate": {"name": "n"},
        "ServiceKeyCreate": {"servicePrincipalId": f"sp_{UNKNOWN}", "name": "k"},
        "AccountCreate": {"username": "bounds", "password": PASSWORD_CHARS, "roleId": f"role_{UNKNOWN}"},
        "PasswordSet": {"password": PASSWORD_CHARS},
        "PasswordChange": {"currentPassword": PASSWORD_CHARS, "newPassword": PASSWORD_CHARS[::-1]},
    }


def text(field: str, length: int) -> str:
    if field in ("password", "newPassword", "currentPassword"):
        return (PASSWORD_CHARS * (length // len(PASSWORD_CHARS) + 1))[:length]
    if field in ("baseUrl", "webhookUrl"):
        return "https://api.openai.com/" + "a" * (length - len("https://api.openai.com/"))
    return "a" * length


def item(field: str, index: int, schema: dict[str, Any]) -> Any:
    """The ``index``-th distinct item of an array field."""
    if field in ("secretIds",):
        return f"sec_{uuid.UUID(int=index + 1, version=4)}"
    if field == "pluginApprovers" or field == "approvers":
        return {"channel": "slack", "id": f"U{index}"}
    if field == "permissions":
        return {"action": "read", "resourceKind": f"kind{index}"}
    if schema.get("type") == "string" or field == "ids":
        return f"item{index}"
    return {}


def entry(field: str, index: int) -> tuple[str, Any]:
    """The ``index``-th distinct entry of a map field."""
    if field == "plugins":
        return f"plugin{index}@catalog", {"enabled": False}
    if field == "tools":
        return f"tool{index}", {}
    if field == "driverPolicy":
        return f"key{index}", index
    if field == "credentials":
        return f"var{index}", {"kind": "secret", "namespaceId": "NS", "id": f"sec_{UNKNOWN}"}
    return f"VAR_{index}", {"source": {"kind": "secret", "namespaceId": "NS", "id": f"sec_{UNKNOWN}"}}


@dataclass(frozen=True)
class Bound:
    method: str
    path: str
    component: str
    place: tuple[str, ...]  # properties from the body's root
    keyword: str
    value: int
    schema: dict[str, Any]

    @property
    def field(self) -> str:
        return self.place[-1]

    def __str__(self) -> str:
        return f"{self.method} {self.path} /{'/'.join(self.place)} {self.keyword}={self.value}"


def resolve(document: dict[str, Any], node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``node`` and, through ``$ref`` and ``anyOf``, each schema it may be."""
    if "$ref" in node:
        yield from resolve(document, document["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]])
    elif "anyOf" in node:
        for option in node["anyOf"]:
            yield from resolve(document, option)
    else:
        yield node


def bounds_in(document: dict[str, Any]) -> Iterator[Bound]:
    for path, item_ in document["paths"].items():
        for method, operation in item_.items():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body is None:
                continue
            component = body["$ref"].rsplit("/", 1)[-1]
            stack: list[tuple[tuple[str, ...], dict[str, Any], int]] = [((), body, 0)]
            while stack:
                place, node, depth = stack.pop()
                for schema in resolve(document, node):
                    for keyword in BOUNDS:
                        if keyword in schema and place:
                            yield Bound(method.upper(), path, component, place, keyword, schema[keyword], schema)
                    if depth < 4:
                        for name, child in schema.get("properties", {}).items():
                            stack.append(((*place, name), child, depth + 1))


def documented() -> list[Bound]:
    return list(bounds_in(Client().get("/api/openapi.json").json()))


def place_value(bound: Bound, beyond: bool) -> Any:
    n = bound.value + (1 if beyond and bound.keyword.startswith("max") else 0)
    n = n - (1 if beyond and bound.keyword.startswith("min") else 0)
    if bound.keyword in ("maxLength", "minLength"):
        return text(bound.field, n)
    if bound.keyword in ("maxItems", "minItems"):
        items = bound.schema.get("items", {})
        return [item(bound.field, i, items) for i in range(n)]
    if bound.keyword in ("maxProperties", "minProperties"):
        return dict(entry(bound.field, i) for i in range(n))
    return n  # maximum, minimum


@pytest.fixture(scope="module")
def all_bounds(django_db_blocker) -> list[Bound]:
    with django_db_blocker.unblock():
        return documented()


def test_the_document_states_bounds(all_bounds):
    stated = {(b.component, b.place, b.keyword): b.value for b in all_bounds}
    assert stated[("NamespaceCreate", ("name",), "maxLength")] == 200
    assert stated[("ServiceKeyCreate", ("name",), "maxLength")] == 32
    assert len(all_bounds) >= 30


def send(api, ready_namespace, bound: Bound, value: Any):
    ns = ready_namespace.id
    body = copy.deepcopy(bases(ns)[bound.component])
    target = body
    for name in bound.place[:-1]:
        target = target.setdefault(name, {})
    target[bound.field] = value
    if bound.keyword.endswith("Properties"):
        for binding in value.values():
            if isinstance(binding, dict) and "source" in binding:
                binding["source"]["namespaceId"] = ns
    path = bound.path.replace("{namespace_id}", ns)
    for name, prefix in (("configuration_id", "cfg"), ("agent_id", "agt"), ("secret_id", "sec"), ("work_id", "req"),
                         ("principal_id", "usr")):
        path = path.replace("{" + name + "}", f"{prefix}_{UNKNOWN}")
    return api.request(bound.method, path, body)


def details_at(response, bound: Bound) -> list[str]:
    pointer = "/" + "/".join(bound.place)
    if response.status != 400:
        return []
    return [d["code"] for d in response.body["error"].get("details", []) if d["path"] == pointer]


def test_every_documented_bound_is_enforced_exactly(api, ready_namespace, all_bounds):
    wrong = []
    for bound in all_bounds:
        if bound.component not in bases(ready_namespace.id):
            wrong.append(f"{bound}: no valid example body in BASES")
            continue
        # Beyond the bound the place is refused, with some code (TOO_LONG, ...); at the bound that
        # rule must not fire there (another rule of the field may, for a made-up value).
        rule: set[str] = set()
        if not (bound.keyword.startswith("min") and bound.value == 0):
            beyond = send(api, ready_namespace, bound, place_value(bound, beyond=True))
            rule = set(details_at(beyond, bound))
            if not rule:
                wrong.append(f"{bound}: accepted beyond the bound ({beyond.status} {str(beyond.body)[:300]})")
        at = send(api, ready_namespace, bound, place_value(bound, beyond=False))
        if rule & set(details_at(at, bound)):
            wrong.append(f"{bound}: refused at the bound ({details_at(at, bound)})")
    assert not wrong, "\n".join(wrong)
