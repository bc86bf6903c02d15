"""The built-in Roles (Viewer, Agent user, Developer, Namespace administrator) on Installations
bootstrapped before they existed. Frozen here as they were first shipped (``occ.iam.roles`` may
move on); a Role of the same name that an operator already made is left alone. Reversible: the
rollback removes the ones nobody is bound to."""

from django.db import migrations

from occ.ids import IdPrefix, new_id

ROLES = {
    "Viewer": ["read:agent", "read:agent_revision", "read:configuration", "read:namespace", "read:secret"],
    "Agent user": ["invoke:agent", "read:agent", "read:namespace"],
    "Developer": ["create:agent", "create:configuration", "deploy:agent", "invoke:agent", "operate:agent",
                  "operate:secret", "read:agent", "read:agent_revision", "read:configuration", "read:namespace",
                  "read:secret", "read_logs:agent", "update:agent", "update:configuration"],
    "Namespace administrator": [
        "administer:agent", "create:agent", "create:configuration", "create:secret", "delete:agent",
        "delete:configuration", "delete:secret", "deploy:agent", "invoke:agent", "operate:agent", "operate:secret",
        "read:agent", "read:agent_revision", "read:configuration", "read:namespace", "read:secret",
        "read_logs:agent", "update:agent", "update:configuration", "update:secret"],
}


def seed(apps, schema_editor):
    Installation = apps.get_model("occ", "Installation")
    Role = apps.get_model("occ", "Role")
    if not Installation.objects.exists():
        return  # bootstrap creates them with the Installation
    for name, permissions in ROLES.items():
        if not Role.objects.filter(namespace__isnull=True, name=name).exists():
            Role.objects.create(id=new_id(IdPrefix.ROLE), name=name, permissions=permissions)


def unseed(apps, schema_editor):
    Role = apps.get_model("occ", "Role")
    Role.objects.filter(namespace__isnull=True, name__in=list(ROLES), bindings__isnull=True).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('occ', '0008_administrator_invoke_agent'),
    ]

    operations = [migrations.RunPython(seed, unseed)]
