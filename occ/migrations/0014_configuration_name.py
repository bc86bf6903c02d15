"""Configurations get a name, unique in their Namespace. Existing rows are named after the
first Agent that uses them ("<agent name> configuration"), else "configuration <short id>";
a name already taken in the Namespace gets " (2)", " (3)", ..."""

from django.db import migrations, models


def name_existing(apps, schema_editor):
    Configuration = apps.get_model("occ", "Configuration")
    Agent = apps.get_model("occ", "Agent")
    taken: dict[str, set[str]] = {}
    for configuration in Configuration.objects.order_by("created_at", "id"):
        agent = Agent.objects.filter(configuration_id=configuration.id).order_by("created_at", "id").first()
        base = f"{agent.name[:180]} configuration" if agent is not None else f"configuration {configuration.id[4:12]}"
        names = taken.setdefault(configuration.namespace_id, set())
        name, copy = base, 1
        while name in names:
            copy += 1
            name = f"{base} ({copy})"
        names.add(name)
        Configuration.objects.filter(pk=configuration.pk).update(name=name)


class Migration(migrations.Migration):

    dependencies = [
        ("occ", "0013_presets"),
    ]

    operations = [
        migrations.AddField(
            model_name="configuration",
            name="name",
            field=models.CharField(default="", max_length=800),
            preserve_default=False,
        ),
        migrations.RunPython(name_existing, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="configuration",
            constraint=models.UniqueConstraint(fields=("namespace", "name"), name="configuration_name_unique_in_namespace"),
        ),
    ]
