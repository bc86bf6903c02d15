"""``django.contrib.admin`` with the operators' site as the default ``admin.site``.

Named in ``INSTALLED_APPS``, so it is imported while the app registry loads: it must not
import models (the site itself lives in ``occ.admin_site`` and is loaded lazily).
"""

from django.contrib.admin.apps import AdminConfig


class OperatorAdminConfig(AdminConfig):
    default_site = "occ.admin_site.OperatorAdminSite"
