"""Effects and receipts of work become typed rows (WorkEffect), out of the provisioning row's
``progress`` JSON; existing ones move over, and back on rollback."""

from datetime import datetime

import django.db.models.deletion
from django.db import migrations, models
from django.utils import timezone


def _time(value):
    try:
        return datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def effects_to_rows(apps, schema_editor):
    provisioning = apps.get_model("occ", "AgentProvisioningWork")
    effect_model = apps.get_model("occ", "WorkEffect")
    alias = schema_editor.connection.alias
    for row in provisioning.objects.using(alias).all():
        progress = row.progress if isinstance(row.progress, dict) else {}
        for effect in progress.get("effects") or []:
            evidence = effect.get("evidence") or {}
            removal = effect.get("removal") or {}
            receipted = effect.get("state") == "receipted"
            begun_at = _time(evidence.get("begunAt")) or row.created_at or timezone.now()
            effect_model.objects.using(alias).create(
                work_id=row.work_id, kind=effect["kind"], owner=effect.get("owner") or row.work_id,
                target_id=effect.get("targetId") or "", state="receipted" if receipted else "begun",
                resend=bool(effect.get("resend")), attempt=evidence.get("attempt"),
                driver_id=evidence.get("computeDriverId"), begun_at=begun_at,
                receipted_at=(_time(evidence.get("receiptedAt")) or begun_at) if receipted else None,
                observed=bool(evidence.get("observed")), observation=evidence.get("observation"),
                observed_owner=evidence.get("observedOwner"),
                granted_secret_ids=evidence.get("grantedSecretIds") or [],
                removed_by=removal.get("workKey"), removed_at=_time(removal.get("removedAt")),
                removed_credential_ids=removal.get("credentialSecretIds") or [])
        if "effects" in progress:
            row.progress = {k: v for k, v in progress.items() if k != "effects"}
            row.save(update_fields=["progress"])


def rows_to_effects(apps, schema_editor):
    provisioning = apps.get_model("occ", "AgentProvisioningWork")
    effect_model = apps.get_model("occ", "WorkEffect")
    alias = schema_editor.connection.alias
    for row in provisioning.objects.using(alias).all():
        effects = []
        for effect in effect_model.objects.using(alias).filter(work_id=row.work_id).order_by("id"):
            evidence = {key: value for key, value in {
                "computeDriverId": effect.driver_id, "attempt": effect.attempt,
                "begunAt": effect.begun_at.isoformat() if effect.kind == "transport" else None,
                "receiptedAt": effect.receipted_at.isoformat() if effect.receipted_at and effect.kind == "transport"
                else None,
                "observed": effect.observed if effect.kind == "transport" and effect.state == "receipted" else None,
                "observation": effect.observation, "observedOwner": effect.observed_owner,
                "grantedSecretIds": effect.granted_secret_ids if effect.kind == "configuration" else None,
                "agentId": row.agent_id if effect.kind == "configuration" else None,
            }.items() if value is not None}
            item = {"kind": effect.kind, "owner": effect.owner, "targetId": effect.target_id,
                    "state": effect.state, "evidence": evidence}
            if effect.resend:
                item["resend"] = True
            if effect.removed_by:
                item["removal"] = {"workKey": effect.removed_by, "credentialSecretIds": effect.removed_credential_ids,
                                   "removedAt": effect.removed_at.isoformat() if effect.removed_at else None}
            effects.append(item)
        if effects:
            row.progress = {**(row.progress or {}), "effects": effects}
            row.save(update_fields=["progress"])


class Migration(migrations.Migration):

    dependencies = [
        ('occ', '0004_work_job'),
    ]

    operations = [
        migrations.CreateModel(
            name='WorkEffect',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('configuration', 'Configuration'), ('transport', 'Transport')], max_length=16)),
                ('owner', models.CharField(max_length=255)),
                ('target_id', models.CharField(max_length=64)),
                ('state', models.CharField(choices=[('begun', 'Begun'), ('receipted', 'Receipted')], max_length=16)),
                ('resend', models.BooleanField(default=False)),
                ('attempt', models.PositiveIntegerField(blank=True, null=True)),
                ('driver_id', models.CharField(blank=True, max_length=64, null=True)),
                ('begun_at', models.DateTimeField()),
                ('receipted_at', models.DateTimeField(blank=True, null=True)),
                ('observed', models.BooleanField(default=False)),
                ('observation', models.CharField(blank=True, max_length=16, null=True)),
                ('observed_owner', models.CharField(blank=True, max_length=64, null=True)),
                ('granted_secret_ids', models.JSONField(blank=True, default=list)),
                ('removed_by', models.CharField(blank=True, max_length=255, null=True)),
                ('removed_at', models.DateTimeField(blank=True, null=True)),
                ('removed_credential_ids', models.JSONField(blank=True, default=list)),
                ('work', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='effects', to='occ.controllerwork')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('work', 'kind'), name='work_effect_one_per_kind'), models.CheckConstraint(condition=models.Q(('kind__in', ['configuration', 'transport'])), name='work_effect_kind_valid'), models.CheckConstraint(condition=models.Q(('state__in', ['begun', 'receipted'])), name='work_effect_state_valid'), models.CheckConstraint(condition=models.Q(models.Q(('receipted_at__isnull', False), ('state', 'receipted')), models.Q(('receipted_at__isnull', True), ('state', 'begun')), _connector='OR'), name='work_effect_receipted_iff_receipt_time')],
            },
        ),
        migrations.RunPython(effects_to_rows, rows_to_effects, elidable=True),
    ]
