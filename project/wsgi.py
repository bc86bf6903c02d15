import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

if "gunicorn" in sys.modules:
    # gunicorn's own refusals (414, 431, 400 before Django) in the API's JSON envelope.
    from occ.api import server_errors

    server_errors.install()
