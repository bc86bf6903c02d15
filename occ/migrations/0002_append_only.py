"""Database-enforced immutability: audit events and agent revisions are never updated,
and audit events are never deleted (revisions go only with their Agent).

On SQLite only updates are refused in the database: Django's test flush empties tables with
DELETE there (PostgreSQL uses TRUNCATE, which row triggers do not see), and the model
already refuses deletes.
"""

from django.db import migrations

SQLITE = [
    """CREATE TRIGGER occ_auditevent_no_update BEFORE UPDATE ON occ_auditevent
       BEGIN SELECT RAISE(ABORT, 'audit events are append-only'); END""",
    """CREATE TRIGGER occ_agentrevision_no_update BEFORE UPDATE ON occ_agentrevision
       BEGIN SELECT RAISE(ABORT, 'agent revisions are immutable'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER occ_auditevent_no_update",
    "DROP TRIGGER occ_agentrevision_no_update",
]

POSTGRES = [
    """CREATE FUNCTION occ_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION '% on % is not allowed', TG_OP, TG_TABLE_NAME; END $$""",
    """CREATE TRIGGER occ_auditevent_append_only BEFORE UPDATE OR DELETE ON occ_auditevent
       FOR EACH ROW EXECUTE FUNCTION occ_refuse_change()""",
    """CREATE TRIGGER occ_agentrevision_immutable BEFORE UPDATE ON occ_agentrevision
       FOR EACH ROW EXECUTE FUNCTION occ_refuse_change()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER occ_auditevent_append_only ON occ_auditevent",
    "DROP TRIGGER occ_agentrevision_immutable ON occ_agentrevision",
    "DROP FUNCTION occ_refuse_change()",
]


def forwards(apps, schema_editor):
    statements = POSTGRES if schema_editor.connection.vendor == "postgresql" else SQLITE
    for statement in statements:
        schema_editor.execute(statement, params=None)


def backwards(apps, schema_editor):
    statements = POSTGRES_REVERSE if schema_editor.connection.vendor == "postgresql" else SQLITE_REVERSE
    for statement in statements:
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("occ", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
