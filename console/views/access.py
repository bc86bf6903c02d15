"""Members and access: a Namespace's service principals, their API keys, Roles and role bindings;
the Installation's accounts."""

from __future__ import annotations

from django.urls import path

from console.views._placeholder import placeholder

urlpatterns = [
    path("members", placeholder, name="members"),
    path("namespaces/<str:namespace_id>/access", placeholder, name="access"),
]
