from django.apps import AppConfig


class OccConfig(AppConfig):
    name = "occ"
    verbose_name = "OCC"
    default_auto_field = "django.db.models.BigAutoField"
