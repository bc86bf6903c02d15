"""The Django project: settings, URLs and how each process (gunicorn, Celery worker and beat) is wired."""
# Load the Celery app with Django, so @shared_task binds to it and on-commit nudges use its broker.
from project.celery import app as celery_app

__all__ = ("celery_app",)
