from django.contrib import admin
from django.urls import include, path

from occ.api import api
from project.health import healthz, readyz
from project.metrics import metrics

urlpatterns = [
    path("healthz", healthz),
    path("readyz", readyz),
    path("metrics", metrics),
    path("admin/", admin.site.urls),
    path("console/", include("console.urls")),
    path("", api.urls),
]

handler500 = "console.views.shell.server_error"
