"""Console views, one module per area; each module's ``urlpatterns`` is joined in console/urls.py."""
