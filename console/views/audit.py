"""The audit log: events the viewer may read, filtered and paged."""

from __future__ import annotations

from django.urls import path

from console.views._placeholder import placeholder

urlpatterns = [
    path("audit", placeholder, name="audit"),
]
