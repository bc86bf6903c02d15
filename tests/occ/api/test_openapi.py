from __future__ import annotations

import re

from django.test import Client
from ninja import Schema

from occ.api import api
from occ.errors import ERROR_CODES


def _routes() -> set[tuple[str, str]]:
    """Every (METHOD, /path/{param}) the API serves, read from the routers themselves."""
    routes = set()
    for prefix, router in api._routers:
        for path, path_view in router.path_operations.items():
            full = "/" + "/".join(p.strip("/") for p in (prefix, path) if p.strip("/"))
            full = re.sub(r"\{(\w+):?\w*\}", r"{\1}", full)
            for operation in path_view.operations:
                for method in operation.methods:
                    routes.add((method.upper(), full))
    return routes


def test_every_route_is_in_the_openapi_document(db):
    response = Client().get("/api/openapi.json")
    assert response.status_code == 200
    document = response.json()
    documented = {(method.upper(), path) for path, item in document["paths"].items() for method in item}
    served = _routes()
    assert len(served) >= 5
    assert served <= documented, served - documented


def test_error_codes_are_a_closed_set():
    assert len(ERROR_CODES) == len(set(ERROR_CODES))
    assert all(re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", code) for code in ERROR_CODES)


def _schema(document: dict, node: dict) -> dict:
    """``node`` with ``$ref`` and single-member ``anyOf`` (``X | None``) resolved."""
    while True:
        if "$ref" in node:
            node = document["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            node = next(option for option in node["anyOf"] if option.get("type") != "null")
        else:
            return node


def _request_body(document: dict, path: str, method: str) -> dict:
    body = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return _schema(document, body)


def test_request_bodies_show_the_nested_shapes_of_the_commands(db):
    document = Client().get("/api/openapi.json").json()
    agents = "/namespaces/{namespace_id}/agents"
    for path, method in ((agents, "post"), (agents + "/{agent_id}", "patch"), (agents + "/provision", "post")):
        body = _request_body(document, path, method)
        assert body.get("additionalProperties") is False, path
        harness = _schema(document, body["properties"]["harnessAuth"])
        assert harness["additionalProperties"] is False
        source = _schema(document, harness["properties"]["source"])
        assert set(source["properties"]) == {"kind", "namespaceId", "id"}, path
        assert set(source["required"]) == {"kind", "namespaceId", "id"}
        assert "value" not in source["properties"]  # refused, never part of the shape

    provision = _request_body(document, agents + "/provision", "post")
    configuration = _schema(document, provision["properties"]["configuration"])
    bindings = _schema(document, configuration["properties"]["secretBindings"])
    binding = _schema(document, next(iter(bindings["patternProperties"].values())))
    assert set(_schema(document, binding["properties"]["source"])["properties"]) == {"kind", "namespaceId", "id"}
    assert not {"secrets", "configurationId", "agentId"} & set(provision["properties"])

    approvers = _schema(document, _request_body(document, agents, "post")["properties"]["pluginApprovers"])
    assert set(_schema(document, approvers["items"])["properties"]) == {"channel", "id"}


def test_configuration_update_bindings_are_an_object_never_null(db):
    """Omitted keeps the bindings and null is refused (400), so the schema offers no null."""
    document = Client().get("/api/openapi.json").json()
    body = _request_body(document, "/namespaces/{namespace_id}/configurations/{configuration_id}", "patch")
    bindings = body["properties"]["secretBindings"]
    assert "anyOf" not in bindings, bindings
    assert bindings["type"] == "object"
    assert "default" not in bindings
    assert body["required"] == ["values"]


def test_every_operation_documents_the_web_servers_refusal_of_a_long_request_line(db):
    # gunicorn answers 414 (occ.api.server_errors) before Django for any path or query over its
    # limit; the fuzzer found it undocumented on the logs' follow query.
    document = Client().get("/api/openapi.json").json()
    operations = [(path, method, operation) for path, item in document["paths"].items()
                  for method, operation in item.items()]
    assert len(operations) >= 5
    missing = [(method, path) for path, method, operation in operations if "414" not in operation["responses"]]
    assert missing == []


def test_the_paged_lists_document_cursor_limit_and_next_cursor(db):
    document = Client().get("/api/openapi.json").json()
    for path, key in (("/namespaces/{namespace_id}/agents", "agents"),
                      ("/namespaces/{namespace_id}/configurations", "configurations"),
                      ("/namespaces/{namespace_id}/presets", "presets"),
                      ("/namespaces/{namespace_id}/secrets", "secrets"),
                      ("/namespaces", "namespaces"),
                      ("/namespaces/{namespace_id}/agents/{agent_id}/revisions", "revisions"),
                      ("/namespaces/{namespace_id}/iam/roles", "roles"),
                      ("/namespaces/{namespace_id}/iam/access-bindings", "accessBindings"),
                      ("/namespaces/{namespace_id}/iam/service-principals", "servicePrincipals"),
                      ("/namespaces/{namespace_id}/budgets", "budgets"),
                      ("/namespaces/{namespace_id}/agents/{agent_id}/shares", "shares"),
                      ("/namespaces/{namespace_id}/agents/{agent_id}/shares/subjects", "subjects"),
                      ("/namespaces/{namespace_id}/agents/repository-options", "repositories"),
                      ("/namespaces/{namespace_id}/agents/{agent_id}/repository-options", "repositories"),
                      ("/api/auth/accounts", "accounts"), ("/api/auth/roles", "roles"),
                      ("/api/auth/service-keys", "serviceKeys")):
        operation = document["paths"][path]["get"]
        query = {p["name"]: p for p in operation["parameters"] if p["in"] == "query"}
        filters = {"/api/auth/accounts": {"q"}, "/api/auth/service-keys": {"servicePrincipalId", "namespaceId"}}
        assert set(query) == {"cursor", "limit"} | filters.get(path, set()), path
        assert (query["limit"]["schema"]["minimum"], query["limit"]["schema"]["maximum"]) == (1, 100)
        envelope = _schema(document, operation["responses"]["200"]["content"]["application/json"]["schema"])
        page = _schema(document, envelope["properties"]["data"])
        assert set(page["properties"]) == {key, "nextCursor"}, path


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_no_two_schemas_share_a_component_name():
    """The document names a schema's component after its class: a second class of the same name
    (two routers' ``SessionOut``) silently replaces the first, and the first route's answers no
    longer match their declared schema."""
    by_name: dict[str, set[str]] = {}
    for cls in _subclasses(Schema):
        if cls.__module__.startswith(("occ.", "console.")):
            by_name.setdefault(cls.__name__, set()).add(f"{cls.__module__}.{cls.__qualname__}")
    assert {name: places for name, places in by_name.items() if len(places) > 1} == {}
