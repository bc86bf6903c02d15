"""The built-in Roles: the matrix in docs/access.md, the definitions in occ.iam.roles, the Roles
bootstrap seeds and those the data migration adds to an older Installation are one and the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

from occ.iam.permissions import VALID_ACTIONS, permission
from occ.iam.roles import ADMINISTRATOR, BUILTIN_ROLES, NAMESPACE_ADMINISTRATOR
from occ.models import Role

ADMINISTER_NS = "administer:namespace"
DOC = Path(__file__).resolve().parents[3] / "docs" / "access.md"


def _documented_matrix() -> dict[str, set[str]]:
    """The table whose first column is ``permission`` (the page has other tables)."""
    lines = DOC.read_text().splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("| permission |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        rows.append(line)
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert header[0] == "permission"
    roles: dict[str, set[str]] = {name: set() for name in header[1:]}
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        if cells[0].startswith("-"):
            continue
        for name, cell in zip(header[1:], cells[1:], strict=True):
            assert cell in ("", "✓"), row
            if cell:
                roles[name].add(cells[0].strip("`"))
    return roles


def test_the_documented_matrix_is_the_built_in_roles_and_lists_every_permission():
    documented = _documented_matrix()
    assert documented == {name: set(permissions) for name, (_, permissions) in BUILTIN_ROLES.items()}
    rows = [line.split("|")[1].strip().strip("`") for line in DOC.read_text().splitlines()
            if line.startswith("| `")]
    assert sorted(rows) == sorted(permission(a, k) for k, actions in VALID_ACTIONS.items() for a in actions)


def test_bootstrap_seeds_every_built_in_role(bootstrap):
    seeded = {r.name: set(r.permissions) for r in Role.objects.filter(namespace__isnull=True,
                                                                        name__in=list(BUILTIN_ROLES))}
    assert seeded == {name: set(permissions) for name, (_, permissions) in BUILTIN_ROLES.items()}
    assert Role.objects.get(name=ADMINISTRATOR).system
    assert not Role.objects.filter(name__in=[n for n in BUILTIN_ROLES if n != ADMINISTRATOR], system=True).exists()


@pytest.mark.django_db(transaction=True)
def test_the_migrations_seed_them_on_an_older_installation_and_roll_back(bootstrap):
    """0009 seeds the Roles as first shipped; 0021 adds ``administer:namespace`` to the untouched
    Namespace administrator and to the bootstrap administrator; at the head they are the
    definitions."""
    team = [name for name in BUILTIN_ROLES if name != ADMINISTRATOR]
    try:
        call_command("migrate", "occ", "0008_administrator_invoke_agent", verbosity=0)
        assert not Role.objects.filter(name__in=team).exists()  # as an Installation made before 0009
        call_command("migrate", "occ", "0009_builtin_roles", verbosity=0)
        first = {r.name: set(r.permissions) for r in Role.objects.filter(name__in=team)}
        assert ADMINISTER_NS not in first[NAMESPACE_ADMINISTRATOR]
        call_command("migrate", verbosity=0)  # and what later migrations give them (0020: sessions, approvals)
        migrated = {r.name: set(r.permissions) for r in Role.objects.filter(name__in=[*team, ADMINISTRATOR])}
        assert migrated == {name: set(BUILTIN_ROLES[name][1]) for name in [*team, ADMINISTRATOR]}
        assert ADMINISTER_NS in Role.objects.get(name=ADMINISTRATOR, system=True).permissions
    finally:
        call_command("migrate", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_0021_leaves_an_edited_namespace_administrator_alone_and_rolls_back(bootstrap):
    edited = Role.objects.get(name=NAMESPACE_ADMINISTRATOR, namespace__isnull=True)
    try:
        call_command("migrate", "occ", "0019_usage_and_budgets", verbosity=0)  # before 0021
        edited.refresh_from_db()
        assert ADMINISTER_NS not in edited.permissions
        edited.permissions = [p for p in edited.permissions if p != "delete:agent"]  # an operator's edit
        edited.save(update_fields=["permissions"])
        call_command("migrate", verbosity=0)
        edited.refresh_from_db()
        assert ADMINISTER_NS not in edited.permissions
    finally:
        call_command("migrate", verbosity=0)
