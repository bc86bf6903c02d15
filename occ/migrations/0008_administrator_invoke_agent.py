"""The bootstrap administrator Role gains ``invoke:agent`` (the console's Chat tab), on
installations bootstrapped before the action existed. A data change only; reversible."""

from django.db import migrations

PERMISSION = "invoke:agent"


def grant(apps, schema_editor):
    Role = apps.get_model("occ", "Role")
    for role in Role.objects.filter(name="administrator", system=True):
        if PERMISSION not in role.permissions:
            role.permissions = sorted([*role.permissions, PERMISSION])
            role.save(update_fields=["permissions"])


def revoke(apps, schema_editor):
    Role = apps.get_model("occ", "Role")
    for role in Role.objects.filter(name="administrator", system=True):
        if PERMISSION in role.permissions:
            role.permissions = [p for p in role.permissions if p != PERMISSION]
            role.save(update_fields=["permissions"])


class Migration(migrations.Migration):

    dependencies = [
        ('occ', '0007_harness_auth_codex_pat'),
    ]

    operations = [migrations.RunPython(grant, revoke)]
