from django.urls import path

from console.views._placeholder import placeholder

urlpatterns = [
    path("namespaces", placeholder, name="namespaces"),
]
