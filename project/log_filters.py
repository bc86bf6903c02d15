"""Logging filters named in ``settings.LOGGING``."""

from __future__ import annotations

import logging


class OneLineWarning(logging.Filter):
    """A record worth one line, not a traceback at ERROR: Django logs each request for a
    foreign ``Host`` (``DisallowedHost``) with its whole traceback, so anyone could fill the
    log and page whoever watches ERROR with requests that OCC refuses as it should."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True
