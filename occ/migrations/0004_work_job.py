"""The work row names its job (``ControllerWork.job``) instead of a kind and a shape to guess from."""

from django.db import migrations, models
from django.db.models import Case, Q, Value, When

JOB_CHOICES = [("namespace", "Namespace"), ("revision", "Revision"), ("agent_stop", "Agent Stop"),
               ("agent_delete", "Agent Delete"), ("provision", "Provision")]


def name_jobs(apps, schema_editor):
    """The job each existing row's shape selected (provisioning/jobs ``job_for`` before)."""
    work = apps.get_model("occ", "ControllerWork")
    work.objects.using(schema_editor.connection.alias).update(job=Case(
        When(work_kind="provisioning", then=Value("provision")),
        When(namespace_target__isnull=False, then=Value("namespace")),
        When(revision_id__isnull=False, then=Value("revision")),
        When(agent_target="stopped", then=Value("agent_stop")),
        When(agent_target="deleted", then=Value("agent_delete")),
    ))


def name_kinds(apps, schema_editor):
    work = apps.get_model("occ", "ControllerWork")
    work.objects.using(schema_editor.connection.alias).update(work_kind=Case(
        When(job="provision", then=Value("provisioning")), default=Value("lifecycle")))


class Migration(migrations.Migration):

    dependencies = [
        ("occ", "0003_work_indexes"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="controllerwork", name="work_kind_valid"),
        migrations.RemoveConstraint(model_name="controllerwork", name="work_shape_valid"),
        migrations.AddField(
            model_name="controllerwork", name="job",
            field=models.CharField(choices=JOB_CHOICES, max_length=16, null=True),
        ),
        migrations.RunPython(name_jobs, name_kinds, elidable=True),
        migrations.AlterField(
            model_name="controllerwork", name="job",
            field=models.CharField(choices=JOB_CHOICES, max_length=16),
        ),
        migrations.RemoveField(model_name="controllerwork", name="work_kind"),
        migrations.AlterField(
            model_name="controllerwork", name="agent_target",
            field=models.CharField(blank=True, choices=[("stopped", "Stopped"), ("deleted", "Deleted"),
                                                        ("provisioned", "Provisioned")], max_length=32, null=True),
        ),
        migrations.AddConstraint(
            model_name="controllerwork",
            constraint=models.CheckConstraint(
                condition=Q(job__in=["namespace", "revision", "agent_stop", "agent_delete", "provision"]),
                name="work_job_valid"),
        ),
        migrations.AddConstraint(
            model_name="controllerwork",
            constraint=models.CheckConstraint(
                condition=(
                    Q(job="namespace", namespace_target__isnull=False, agent_id__isnull=True,
                      revision_id__isnull=True, agent_target__isnull=True)
                    | Q(job="revision", namespace_target__isnull=True, agent_id__isnull=False,
                        revision_id__isnull=False, agent_target__isnull=True)
                    | Q(job="agent_stop", namespace_target__isnull=True, agent_id__isnull=False,
                        agent_target="stopped", revision_id__isnull=True)
                    | Q(job="agent_delete", namespace_target__isnull=True, agent_id__isnull=False,
                        agent_target="deleted", revision_id__isnull=True)
                    | Q(job="provision", namespace_target__isnull=True, agent_id__isnull=False,
                        agent_target="provisioned", revision_id__isnull=True)
                ),
                name="work_job_target_valid"),
        ),
    ]
