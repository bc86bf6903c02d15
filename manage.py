#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # The settings' messages say what is wrong and what to do; a traceback adds nothing
        # (pass --traceback to see it anyway).
        if "--traceback" in sys.argv:
            raise
        sys.exit(f"OCC is not configured: {exc}")
