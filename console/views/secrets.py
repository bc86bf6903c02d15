from django.urls import path

from console.views._placeholder import placeholder

urlpatterns = [
    path("namespaces/<str:namespace_id>/secrets", placeholder, name="secrets"),
]
