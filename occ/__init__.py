# Load the Celery app with Django, so @shared_task binds to it and on-commit nudges use its broker.
from occ.celery import app as celery_app

__all__ = ("celery_app",)
