"""The Agents list on the wire, built by the database: one query, each Agent's JSON text.

The selector (``agent_list_scope``) authorizes the list and says which Agents the actor may
read; only the API renders them as camelCase JSON, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from django.db import connection

from occ.selectors.agents import AgentListScope

# The public Agent (``agent_wire``) as SQL over ``occ_agent a`` and ``occ_principal p``, in
# agent_wire's key order. ``{object}``, ``{json}`` and ``{time}`` are the vendor's JSON object
# constructor, how a stored JSON column is embedded, and RFC 3339 with milliseconds (``rfc3339``).
_HARNESS_AUTH_SQL = (
    "CASE WHEN a.harness_auth_method IS NULL OR a.harness_secret_id IS NULL THEN NULL ELSE {object}("
    "'method', a.harness_auth_method, 'source', {object}('kind', 'secret', 'namespaceId', a.namespace_id, "
    "'id', a.harness_secret_id)) END"
)
_WIRE_HEAD = (
    ("id", "a.id"), ("namespaceId", "a.namespace_id"), ("name", "a.name"),
    ("configurationId", "a.configuration_id"), ("executionMode", "a.execution_mode"),
    ("harnessAuth", _HARNESS_AUTH_SQL), ("backendId", "a.backend_id"), ("servicePrincipalId", "p.id"),
    ("status", "a.status"), ("desiredRuntimeState", "a.desired_runtime_state"),
)
_WIRE_ACTIVE = (("activeRevisionId", "a.active_revision_id"),)  # only when set
_WIRE_TAIL = (
    ("plugins", "{json}(a.plugins)"), ("pluginApprovers", "{json}(a.plugin_approvers)"),
    ("repositoryBindings", "{json}(a.repository_bindings)"),
    ("createdAt", "{time}(a.created_at)"), ("updatedAt", "{time}(a.updated_at)"),
)


@dataclass(frozen=True)
class _JsonDialect:
    object: str
    json: str
    time: str  # a template with {column}


_DIALECTS = {
    "postgresql": _JsonDialect(
        object="json_build_object", json="",
        # to_char's MS truncates like rfc3339's microsecond // 1000.
        time="""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')""",
    ),
    "sqlite": _JsonDialect(
        object="json_object", json="json",
        # Django stores UTC as 'YYYY-MM-DD HH:MM:SS[.ffffff]': keep the first three digits.
        # ('%%': the text is run with parameters, so a literal percent sign is doubled)
        time="strftime('%%Y-%%m-%%dT%%H:%%M:%%S', {column}) || '.' || "
             "CASE WHEN length({column}) > 19 THEN substr({column}, 21, 3) ELSE '000' END || 'Z'",
    ),
}


@cache
def _agent_json_sql(vendor: str) -> str:
    """Built from the constants above only; the Namespace id is the one parameter."""
    dialect = _DIALECTS[vendor]

    def expression(template: str) -> str:
        if "{time}(" in template:
            column = template.removeprefix("{time}(").removesuffix(")")
            return dialect.time.format(column=column)
        return template.format(object=dialect.object, json=dialect.json)

    def build(pairs: tuple[tuple[str, str], ...]) -> str:
        return f"{dialect.object}(" + ", ".join(f"'{key}', {expression(sql)}" for key, sql in pairs) + ")"

    # As text: psycopg would otherwise parse the JSON we pass through.
    document = (f"CAST(CASE WHEN a.active_revision_id IS NULL THEN {build(_WIRE_HEAD + _WIRE_TAIL)} "
                f"ELSE {build(_WIRE_HEAD + _WIRE_ACTIVE + _WIRE_TAIL)} END AS text)")
    return (
        f"SELECT a.id, {document}"  # noqa: S608 - no input reaches the text
        " FROM occ_agent a LEFT OUTER JOIN occ_principal p ON p.agent_id = a.id"
        " WHERE a.namespace_id = %s ORDER BY a.created_at, a.id"
    )


def agent_list_json(scope: AgentListScope) -> list[str]:
    """The scope's readable Agents, each as its public JSON text (exactly ``agent_wire``),
    oldest first: ``GET /namespaces/{ns}/agents``.

    The database builds each object, so the list neither converts column values nor
    serializes dicts in Python: that was most of the list's cost (docs/performance.md).
    ``tests/occ/api/test_agent_list_json.py`` proves the texts equal ``agent_wire``.
    """
    with connection.cursor() as cursor:
        cursor.execute(_agent_json_sql(connection.vendor), [scope.namespace_id])
        rows = cursor.fetchall()
    return [document for agent_id, document in rows if scope.readable(agent_id)]
