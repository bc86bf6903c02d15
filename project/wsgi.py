import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_application = get_wsgi_application()

from project.chunked_body import reading_chunked_bodies  # noqa: E402  (after Django's setup)

application = reading_chunked_bodies(django_application)

if "gunicorn" in sys.modules:
    # gunicorn's own refusals (414, 431, 400 before Django) in the API's JSON envelope.
    from occ.api import server_errors

    server_errors.install()
