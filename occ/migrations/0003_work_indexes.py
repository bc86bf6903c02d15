"""Fewer indexes on controller_work, the table every job updates twice.

A claim and a completion each write a new version of the row, and a new version gets an entry
in every index whose predicate it meets. PostgreSQL had eight: the three ``varchar_pattern_ops``
copies that Django adds next to a character column's own index (for LIKE, which no query here
runs) are gone, and the due-work index now holds queued rows only, so a claim and a completion
add no entry to it. Claimed rows are found through ``work_one_claim_per_resource``.
"""

from django.db import migrations, models


def _primary_key_like_index(schema_editor) -> str:
    """The name Django gave the primary key's LIKE index (its rule for the table and column)."""
    return schema_editor._create_index_name("occ_controllerwork", ["idempotency_key"], suffix="_like")


def drop_primary_key_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(_primary_key_like_index(schema_editor))}")


def create_primary_key_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {schema_editor.quote_name(_primary_key_like_index(schema_editor))}"
            ' ON "occ_controllerwork" ("idempotency_key" varchar_pattern_ops)')


class Migration(migrations.Migration):

    dependencies = [
        ("occ", "0002_append_only"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="controllerwork",
            name="work_due_idx",
        ),
        migrations.AlterField(
            model_name="controllerwork",
            name="agent_id",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AlterField(
            model_name="controllerwork",
            name="namespace",
            field=models.ForeignKey(db_index=False, on_delete=models.deletion.PROTECT, related_name="work",
                                    to="occ.namespace"),
        ),
        migrations.AddIndex(
            model_name="controllerwork",
            index=models.Index(condition=models.Q(("state", "queued")), fields=["available_at"],
                               name="work_queued_due_idx"),
        ),
        migrations.AddIndex(
            model_name="controllerwork",
            index=models.Index(fields=["namespace"], name="work_namespace_idx"),
        ),
        migrations.AddIndex(
            model_name="controllerwork",
            index=models.Index(fields=["agent_id"], name="work_agent_idx"),
        ),
        # Not elidable: a squashed CreateModel would bring the LIKE index back, and this drops it.
        migrations.RunPython(drop_primary_key_like_index, create_primary_key_like_index),
    ]
