"""The provisioning status is derived from the work row (AgentProvisioningWork.status), not
stored next to it; a cancellation becomes its own fact (``cancelled_at``)."""

from datetime import datetime

from django.db import migrations, models

WORK_STATUS = {"queued": "queued", "claimed": "running", "succeeded": "succeeded", "failed_permanent": "failed"}


def _time(value):
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def record_cancellations(apps, schema_editor):
    provisioning = apps.get_model("occ", "AgentProvisioningWork")
    for row in provisioning.objects.using(schema_editor.connection.alias).filter(status="cancelled"):
        progress = row.progress if isinstance(row.progress, dict) else {}
        row.cancelled_at = _time(progress.get("cancelledAt")) or row.updated_at
        row.save(update_fields=["cancelled_at"])


def store_statuses(apps, schema_editor):
    provisioning = apps.get_model("occ", "AgentProvisioningWork")
    for row in provisioning.objects.using(schema_editor.connection.alias).select_related("work"):
        if row.cancelled_at is not None:
            row.status = "cancelled"
        elif row.completed_phase == "handoff":
            row.status = "succeeded"
        else:
            row.status = WORK_STATUS[row.work.state]
        row.save(update_fields=["status"])


class Migration(migrations.Migration):

    dependencies = [
        ("occ", "0005_work_effects"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentprovisioningwork", name="cancelled_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(record_cancellations, store_statuses, elidable=True),
        migrations.RemoveConstraint(model_name="agentprovisioningwork", name="provisioning_status_valid"),
        migrations.RemoveField(model_name="agentprovisioningwork", name="status"),
    ]
