"""``administer:namespace``: managing one Namespace's access (its Roles, bindings and service
principals; docs/access.md). The bootstrap administrator Role and the built-in Namespace
administrator gain it on Installations made before it existed. The Namespace administrator is
changed only while it is still exactly the Role migration 0009 seeded: a Role an operator made
or edited under that name is left alone. A data change only; reversible."""

from django.db import migrations

PERMISSION = "administer:namespace"
SEEDED_NAMESPACE_ADMINISTRATOR = {
    "administer:agent", "create:agent", "create:configuration", "create:secret", "delete:agent",
    "delete:configuration", "delete:secret", "deploy:agent", "invoke:agent", "operate:agent", "operate:secret",
    "read:agent", "read:agent_revision", "read:configuration", "read:namespace", "read:secret",
    "read_logs:agent", "update:agent", "update:configuration", "update:secret"}


def _roles(apps):
    Role = apps.get_model("occ", "Role")
    yield from Role.objects.filter(namespace__isnull=True, name="administrator", system=True)
    for role in Role.objects.filter(namespace__isnull=True, name="Namespace administrator", system=False):
        if set(role.permissions) - {PERMISSION} == SEEDED_NAMESPACE_ADMINISTRATOR:
            yield role


def grant(apps, schema_editor):
    for role in _roles(apps):
        if PERMISSION not in role.permissions:
            role.permissions = sorted([*role.permissions, PERMISSION])
            role.save(update_fields=["permissions"])


def revoke(apps, schema_editor):
    for role in _roles(apps):
        if PERMISSION in role.permissions:
            role.permissions = [p for p in role.permissions if p != PERMISSION]
            role.save(update_fields=["permissions"])


class Migration(migrations.Migration):

    dependencies = [
        ('occ', '0019_usage_and_budgets'),
    ]

    operations = [migrations.RunPython(grant, revoke)]
