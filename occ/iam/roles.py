"""The built-in Roles a team understands (issue 26): each one a named set of the existing
``action:kind`` permissions, so the engine in :mod:`occ.iam.policy` decides for them exactly as
for any other Role.

They are Installation Roles (no Namespace of their own), bound on a Namespace to mean "in that
Namespace" (a Namespace-wide binding), or Installation-wide to mean "everywhere". Bootstrap
creates them and migration 0009 creates them on older Installations; ``docs/access.md`` shows
the same matrix (``tests/occ/iam/test_roles.py`` compares the three).
"""

from __future__ import annotations

from occ.iam.permissions import ADMINISTRATOR_PERMISSIONS, Action, Kind, permission

A, K = Action, Kind

ADMINISTRATOR = "administrator"
VIEWER = "Viewer"
AGENT_USER = "Agent user"
DEVELOPER = "Developer"
NAMESPACE_ADMINISTRATOR = "Namespace administrator"


def _perms(*pairs: tuple[Action, Kind]) -> tuple[str, ...]:
    return tuple(sorted(permission(action, kind) for action, kind in pairs))


_READ = ((A.READ, K.NAMESPACE), (A.READ, K.CONFIGURATION), (A.READ, K.SECRET), (A.READ, K.AGENT),
         (A.READ, K.AGENT_REVISION))
_BUILD = ((A.CREATE, K.CONFIGURATION), (A.UPDATE, K.CONFIGURATION), (A.CREATE, K.AGENT), (A.UPDATE, K.AGENT),
          (A.DEPLOY, K.AGENT), (A.OPERATE, K.AGENT), (A.INVOKE, K.AGENT), (A.READ_LOGS, K.AGENT),
          (A.OPERATE, K.SECRET), (A.DECIDE_APPROVALS, K.AGENT))
_MANAGE = ((A.DELETE, K.CONFIGURATION), (A.CREATE, K.SECRET), (A.UPDATE, K.SECRET), (A.DELETE, K.SECRET),
           (A.DELETE, K.AGENT), (A.ADMINISTER, K.AGENT), (A.ADMINISTER, K.NAMESPACE),
           (A.READ_CONVERSATIONS, K.AGENT))

# Delegation: the Role bound on exactly the Agents a person creates (occ.services.agents). Bound on
# one Agent, only its Agent permissions apply: read, update, delete, deploy, stop and start, chat,
# read logs, administer, read its conversations, answer its approvals.
OWNER_ROLE = NAMESPACE_ADMINISTRATOR

# Name -> (what it is for, its permissions). The administrator is the bootstrap Role.
BUILTIN_ROLES: dict[str, tuple[str, tuple[str, ...]]] = {
    VIEWER: ("Read a Namespace's Agents, revisions, Configurations and Secret metadata.", _perms(*_READ)),
    AGENT_USER: ("Read and chat with the Agents it is bound on (one Agent, or all in a Namespace).",
                 _perms((A.READ, K.NAMESPACE), (A.READ, K.AGENT), (A.INVOKE, K.AGENT))),
    DEVELOPER: ("Create and update Configurations and Agents, deploy, stop and start them, answer their "
                "approvals; no access management.",
                _perms(*_READ, *_BUILD)),
    NAMESPACE_ADMINISTRATOR: ("Everything in one Namespace, its access included (never more than they hold).",
                              _perms(*_READ, *_BUILD, *_MANAGE)),
    ADMINISTRATOR: ("Everything in the Installation, its people and every Namespace.",
                    tuple(sorted(ADMINISTRATOR_PERMISSIONS))),
}
