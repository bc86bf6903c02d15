"""The permission matrix: which actions exist for which resource kinds (spec §3.2).

No action implies another: ``administer`` does not imply ``read``.
"""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    CREATE = "create"
    READ = "read"
    UPDATE = "update"
    DELETE = "delete"
    DEPLOY = "deploy"
    OPERATE = "operate"
    ADMINISTER = "administer"
    READ_LOGS = "read_logs"
    USE = "use"
    INVOKE = "invoke"  # talk to the Agent's gateway through OCC (the console's Chat tab)
    READ_CONVERSATIONS = "read_conversations"  # read its sessions and transcripts (not chatting with it)
    DECIDE_APPROVALS = "decide_approvals"  # see and answer the exec and plugin approvals it asks for


class Kind(StrEnum):
    INSTALLATION = "installation"
    NAMESPACE = "namespace"
    CONFIGURATION = "configuration"
    PRESET = "preset"
    SERVICE_ACCOUNT = "service_account"
    SECRET = "secret"
    CREDENTIAL_SOURCE = "credential_source"
    AGENT = "agent"
    AGENT_REVISION = "agent_revision"


A = Action
_CRUD = frozenset({A.CREATE, A.READ, A.UPDATE, A.DELETE})

VALID_ACTIONS: dict[Kind, frozenset[Action]] = {
    Kind.INSTALLATION: frozenset({A.READ, A.ADMINISTER}),
    # administer: manage the Namespace's access (its Roles, bindings and service principals).
    Kind.NAMESPACE: frozenset({A.CREATE, A.READ, A.DELETE, A.ADMINISTER}),
    Kind.CONFIGURATION: _CRUD,
    Kind.PRESET: _CRUD,
    Kind.SERVICE_ACCOUNT: _CRUD,
    Kind.SECRET: _CRUD | {A.OPERATE},
    Kind.CREDENTIAL_SOURCE: _CRUD | {A.OPERATE},
    Kind.AGENT: _CRUD | {A.DEPLOY, A.OPERATE, A.ADMINISTER, A.READ_LOGS, A.USE, A.INVOKE,
                         A.READ_CONVERSATIONS, A.DECIDE_APPROVALS},
    Kind.AGENT_REVISION: frozenset({A.READ}),
}

# Kinds an exact-resource access binding may target (spec §2.13).
BINDABLE_KINDS = frozenset(VALID_ACTIONS) - {Kind.INSTALLATION}

# A resource that lives inside another: a binding on exactly the parent also covers it with the
# Role's permissions of its kind (an Agent's owner reads the Agent's revisions, issue 26).
PARENT_KINDS: dict[Kind, Kind] = {Kind.AGENT_REVISION: Kind.AGENT}


def permission(action: Action | str, kind: Kind | str) -> str:
    return f"{Action(action).value}:{Kind(kind).value}"


def _all(kind: Kind, *, without: frozenset[Action] = frozenset()) -> list[str]:
    return sorted(permission(a, kind) for a in VALID_ACTIONS[kind] - without)


# The bootstrap administrator Role (spec §3.3): everything except read_logs and use (it does get
# ``invoke:agent``: whoever creates an Agent may talk to it through the console, and
# ``read_conversations:agent`` and ``decide_approvals:agent``: the fleet's Sessions page and
# approvals inbox, issue 29).
ADMINISTRATOR_PERMISSIONS: tuple[str, ...] = tuple(
    p
    for kind in Kind
    for p in _all(kind, without=frozenset({A.READ_LOGS, A.USE}))
)

# The per-Namespace system Role that lets an Agent's service principal consume a Secret.
SECRET_OPERATE_PERMISSIONS: tuple[str, ...] = (permission(A.OPERATE, Kind.SECRET),)
