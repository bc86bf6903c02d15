from django.urls import path

from console.views._placeholder import placeholder

urlpatterns = [
    path("namespaces/<str:namespace_id>/agents/<str:agent_id>", placeholder, name="agent"),
]
